"""Placeholder: this chapter package is being written (see its issue)."""

__all__: list[str] = []

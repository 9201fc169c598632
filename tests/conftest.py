"""Shared pytest configuration: GPU tests skip themselves when no GPU is usable."""

from __future__ import annotations

import pytest

from icml25.common import gpu_available


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA GPU: cupy.is_available() is False or ICML25_FORCE_CPU=1"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

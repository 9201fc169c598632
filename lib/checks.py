"""The book's shared validators: one place, one argument order, one style of error.

Every public function of every chapter checks its arguments once, at the public boundary, with
these functions, and then hands trusted values to private functions that hold the pure math.
Each validator takes the value, then the argument's name, then its constraints as keywords
(``check_choice`` takes the choices third; ``check_budget`` describes a request instead of taking
a value), returns the value converted to the type the caller works with, and raises

- ``TypeError`` when the value has the wrong kind (a string for a count, a list of objects for an
  array, a bool where an integer is wanted), and
- ``ValueError`` when the kind is right but the value is not (out of range, NaN, wrong shape),

with a message that names the argument and says what was expected::

    >>> check_int(0, "n_trials", low=1)
    Traceback (most recent call last):
    ValueError: n_trials must be an integer >= 1, got 0

Sizes that cannot fit are refused before any work starts: :func:`check_budget` compares an
estimate of memory (bytes) or work (elementary operations) with a limit and raises
:class:`TooLargeError` (a ``ValueError``) quoting the estimate.

This module never imports CuPy: a caller of a lib function never sees a device array, and the
kernels' dispatchers (``icml25.kernels``) convert at their own boundary.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from icml25.common import to_numpy

__all__ = [
    "TooLargeError",
    "check_int",
    "check_real",
    "check_positive",
    "check_probability",
    "check_bool",
    "check_choice",
    "check_array",
    "check_tensor",
    "check_rng",
    "check_torch_generator",
    "check_budget",
    "available_memory_bytes",
    "MAX_OPERATIONS",
]

#: The most elementary operations (flops, edge visits, draws) a single call may plan
#: before it is refused: about an hour of one CPU core, or minutes of an H200. Sizes
#: above it are mistakes far more often than intentions.
MAX_OPERATIONS: float = 1e13


class TooLargeError(ValueError):
    """A requested size cannot fit in memory or in a sensible time (the message has the estimate)."""


def _is_real_scalar(value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return isinstance(value, (Real, np.floating, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def _range_text(
    low: Any, high: Any, low_open: bool = False, high_open: bool = False
) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    return " and ".join(parts)


# --------------------------------------------------------------------------------------
# Scalars
# --------------------------------------------------------------------------------------


def check_int(
    value: Any, name: str, *, low: int | None = None, high: int | None = None
) -> int:
    """``value`` as a Python ``int`` in ``[low, high]`` (either bound optional, both inclusive).

    Accepts Python and NumPy integers (and 0-d integer arrays); rejects bools, floats (even
    ``3.0``) and strings.

    Raises:
        TypeError: not an integer.
        ValueError: outside ``[low, high]``.
    """
    if (
        isinstance(value, np.ndarray)
        and value.ndim == 0
        and np.issubdtype(value.dtype, np.integer)
    ):
        value = value.item()
    rng_text = _range_text(low, high)
    expected = f"an integer {rng_text}".rstrip()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (Integral, np.integer)
    ):
        raise TypeError(
            f"{name} must be {expected}, got {type(value).__name__} {value!r}"
        )
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}, got {value}")
    return value


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a finite Python ``float`` within the given bounds.

    Args:
        value: a real scalar (Python or NumPy number, or a 0-d array); not a bool or a string.
        name: the argument's name, for the error message.
        low, high: bounds (``None``: unbounded).
        low_open, high_open: exclude the bound itself.
        allow_inf: accept ``±inf`` (NaN is never accepted).

    Raises:
        TypeError: not a real scalar.
        ValueError: NaN, infinite (unless ``allow_inf``) or out of bounds.
    """
    rng_text = _range_text(low, high, low_open, high_open)
    expected = f"a {'' if allow_inf else 'finite '}real number {rng_text}".rstrip()
    if not _is_real_scalar(value):
        raise TypeError(
            f"{name} must be {expected}, got {type(value).__name__} {value!r}"
        )
    x = float(value.item() if isinstance(value, np.ndarray) else value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise ValueError(f"{name} must be {expected}, got {x!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {expected}, got {x!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must be {expected}, got {x!r}")
    return x


def check_positive(value: Any, name: str) -> float:
    """``value`` as a finite ``float > 0``. Raises as :func:`check_real`."""
    return check_real(value, name, low=0.0, low_open=True)


def check_probability(
    value: Any, name: str, *, open_low: bool = False, open_high: bool = False
) -> float:
    """``value`` as a ``float`` in ``[0, 1]`` (ends excluded on request, e.g. a confidence level
    ``delta`` in ``(0, 1)``). Raises as :func:`check_real`."""
    return check_real(
        value, name, low=0.0, high=1.0, low_open=open_low, high_open=open_high
    )


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a ``bool`` (Python or NumPy bool only: ``0``/``1`` are refused).

    Raises:
        TypeError: not a bool.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {type(value).__name__} {value!r}"
        )
    return bool(value)


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices`` (compared with ``==``).

    Raises:
        ValueError: not one of ``choices`` (the message lists them).
    """
    options = tuple(choices)
    try:
        ok = not isinstance(value, (np.ndarray, bool, np.bool_)) and value in options
    except Exception:  # unhashable or incomparable: never a valid choice
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {list(options)!r}, got {value!r}")
    return value


# --------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------

_KINDS = {
    "float": "real numbers",
    "int": "integers",
    "bool": "booleans",
    "number": "real numbers",
}


def _shape_text(shape: Sequence[int | None]) -> str:
    return (
        "("
        + ", ".join("?" if s is None else str(s) for s in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


def _check_shape(actual: tuple[int, ...], name: str, ndim: Any, shape: Any) -> None:
    """Raise ``ValueError`` unless ``actual`` matches ``shape`` (``None`` entries free) or ``ndim``."""
    if shape is not None:
        shape = tuple(shape)
        if len(actual) != len(shape) or any(
            s is not None and s != t for s, t in zip(shape, actual)
        ):
            raise ValueError(
                f"{name} must have shape {_shape_text(shape)}, got shape {actual}"
            )
    elif ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(actual) not in allowed:
            want = " or ".join(f"{k}-D" for k in allowed)
            raise ValueError(f"{name} must be {want}, got shape {actual}")


def check_array(
    a: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    kind: str = "float",
    dtype: Any = None,
    finite: bool = True,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    min_size: int = 0,
) -> np.ndarray:
    """``a`` as a NumPy array of the given kind, shape and range.

    Args:
        a: array-like (lists, NumPy arrays; torch tensors and CuPy arrays are copied to the host).
        name: the argument's name, for error messages.
        ndim: the number of dimensions allowed (an int or a tuple of ints).
        shape: the exact shape, ``None`` entries free (implies ``ndim``).
        kind: ``"float"`` (integers are converted to float64; floats keep their dtype unless
            ``dtype`` is given), ``"number"`` (any real dtype kept as is), ``"int"`` (integer
            dtypes only, returned as int64 unless ``dtype``) or ``"bool"``.
        dtype: the dtype of the returned array (a copy only when it differs).
        finite: refuse NaN and ±inf (float kinds).
        low, high: inclusive bounds every element must satisfy.
        low_open: make ``low`` exclusive (strictly positive attractions, weights, scales).
        min_size: the fewest elements allowed.

    Returns:
        the validated ``numpy.ndarray`` (a view of ``a`` when no conversion was needed).

    Raises:
        TypeError: not convertible to an array of that kind (strings, objects, bools for numbers).
        ValueError: wrong ``ndim`` or ``shape``, non-finite values, out-of-range values, too few
            elements.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
    try:
        arr = to_numpy(a)  # torch tensors and CuPy arrays are copied to the host
    except Exception as err:  # ragged lists and the like
        raise TypeError(
            f"{name} must be an array of {_KINDS[kind]}, got {type(a).__name__}: {err}"
        ) from err
    dt = arr.dtype
    if kind == "bool":
        if dt != np.bool_:
            raise TypeError(f"{name} must be an array of booleans, got dtype {dt}")
    elif kind == "int":
        if not np.issubdtype(dt, np.integer) or dt == np.bool_:
            if arr.size == 0 and dt == np.float64:  # [] is float64 in NumPy
                arr = arr.astype(np.int64)
            else:
                raise TypeError(f"{name} must be an array of integers, got dtype {dt}")
        arr = arr.astype(dtype or np.int64, copy=False)
    else:
        if dt == np.bool_ or not (
            np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.integer)
        ):
            raise TypeError(f"{name} must be an array of real numbers, got dtype {dt}")
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        elif kind == "float" and not np.issubdtype(dt, np.floating):
            arr = arr.astype(np.float64)
    _check_shape(tuple(arr.shape), name, ndim, shape)
    if arr.size < min_size:
        raise ValueError(
            f"{name} must have at least {min_size} element(s), got {arr.size}"
        )
    if (
        finite
        and np.issubdtype(arr.dtype, np.floating)
        and arr.size
        and not np.isfinite(arr).all()
    ):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    if arr.size and kind != "bool":
        if low is not None and (arr.min() < low or (low_open and arr.min() == low)):
            op = ">" if low_open else ">="
            raise ValueError(
                f"{name} must be {op} {low} everywhere, got a minimum of {arr.min()!r}"
            )
        if high is not None and arr.max() > high:
            raise ValueError(
                f"{name} must be <= {high} everywhere, got a maximum of {arr.max()!r}"
            )
    return arr


def check_tensor(
    x: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    finite: bool = True,
    floating: bool = True,
) -> Any:
    """``x`` as a ``torch.Tensor`` of the given shape, on the device it is on.

    Args:
        x: a ``torch.Tensor`` (NumPy arrays and lists are converted with ``torch.as_tensor``).
        name: the argument's name.
        ndim, shape: as :func:`check_array`.
        finite: refuse NaN and ±inf.
        floating: require a floating dtype.

    Raises:
        TypeError: not a tensor-like of numbers, or not floating when ``floating``.
        ValueError: wrong ``ndim``/``shape`` or non-finite values.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        try:
            arr = check_array(x, name, kind="number", finite=False)
        except TypeError as err:
            raise TypeError(
                f"{name} must be a torch.Tensor, got {type(x).__name__}"
            ) from err
        x = torch.as_tensor(arr, dtype=torch.get_default_dtype() if floating else None)
    if x.dtype == torch.bool or (x.is_complex()):
        raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    _check_shape(tuple(x.shape), name, ndim, shape)
    if (
        finite
        and x.is_floating_point()
        and x.numel()
        and not bool(torch.isfinite(x).all())
    ):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    return x


# --------------------------------------------------------------------------------------
# Random generators
# --------------------------------------------------------------------------------------


def check_rng(
    rng: Any, name: str = "rng", *, allow_none: bool = False
) -> np.random.Generator | None:
    """``rng`` if it is a ``numpy.random.Generator`` (``None`` too when ``allow_none``).

    The book threads one generator through every call (``rng = seed_everything(SEED)``); an
    integer seed or the legacy ``RandomState`` is refused so that no call silently restarts a
    stream.

    Raises:
        TypeError: anything else.
    """
    if rng is None and allow_none:
        return None
    if not isinstance(rng, np.random.Generator):
        extra = " or None" if allow_none else ""
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)){extra}, "
            f"got {type(rng).__name__}"
        )
    return rng


def check_torch_generator(
    rng: Any, name: str = "rng", *, allow_none: bool = True
) -> Any:
    """``rng`` if it is a ``torch.Generator`` (or ``None`` when ``allow_none``: torch's global one).

    Raises:
        TypeError: anything else.
    """
    import torch

    if rng is None and allow_none:
        return None
    if not isinstance(rng, torch.Generator):
        extra = " or None" if allow_none else ""
        raise TypeError(
            f"{name} must be a torch.Generator{extra}, got {type(rng).__name__}"
        )
    return rng


# --------------------------------------------------------------------------------------
# Sizes that cannot fit
# --------------------------------------------------------------------------------------


def available_memory_bytes() -> int:
    """Physical memory this process could still use, in bytes (``MemAvailable`` on Linux).

    Falls back to total physical memory, then to 8 GiB where neither can be read.
    """
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return 8 * 2**30


def check_budget(
    what: str,
    *,
    n_bytes: float | None = None,
    n_operations: float | None = None,
    max_bytes: float | None = None,
    max_operations: float | None = None,
) -> None:
    """Refuse, before any work, a call whose estimated memory or work cannot fit.

    Args:
        what: the request in words, with the argument that sets its size
            (``"min_cut(n_trials=10**12)"``).
        n_bytes: estimated peak memory in bytes.
        n_operations: estimated elementary operations.
        max_bytes: the memory limit (default: :func:`available_memory_bytes`).
        max_operations: the work limit (default: :data:`MAX_OPERATIONS`).

    Raises:
        TooLargeError: an estimate exceeds its limit; the message gives both numbers.
    """
    if n_bytes is not None:
        limit = available_memory_bytes() if max_bytes is None else max_bytes
        if n_bytes > limit:
            raise TooLargeError(
                f"{what} would need about {n_bytes / 2**30:.3g} GiB of memory, more than the "
                f"{limit / 2**30:.3g} GiB available; use a smaller size"
            )
    if n_operations is not None:
        limit = MAX_OPERATIONS if max_operations is None else max_operations
        if n_operations > limit:
            raise TooLargeError(
                f"{what} would take about {n_operations:.3g} elementary operations, more than the "
                f"limit of {limit:.3g} (hours of compute); use a smaller size"
            )

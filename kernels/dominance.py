"""Pareto dominance for maximised objectives (``dominance.cu``), shared by chapters 14 and 18.

Every objective is **maximised**: row ``j`` of ``F`` dominates row ``i`` when ``F[j] >= F[i]`` in every
coordinate and ``F[j] > F[i]`` in at least one, so exact duplicates do not dominate each other (both stay
on the front, as in pymoo, moocore and paretoset with ``distinct=False``).

Kernel functions, each with a NumPy reference (the contract), a CuPy launcher and a dispatcher:

- :func:`pareto_mask`: the non-dominated rows, ``(n,)`` bool.
- :func:`non_dominated_sort`: the front index of every row (0 = the Pareto front), ``(n,)`` int64,
  identical to ``pymoo.util.nds.non_dominated_sorting.NonDominatedSorting().do(-F, return_rank=True)[1]``.

The dispatchers take the GPU when :func:`icml25.common.gpu_available` says so *and* the input has at least
:data:`GPU_MIN_ROWS` rows (a launch and two transfers cost more than the NumPy reference on a few hundred
rows, the size of a tree node's children); ``ICML25_FORCE_CPU=1`` forces the reference.

:func:`hypervolume` is a host function (no kernel): pymoo's ``HV`` (moocore's exact algorithm) on ``-F``
and ``-ref``. NumPy in, NumPy out everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget
from icml25.common import gpu_available

__all__ = [
    "GPU_MIN_ROWS",
    "pareto_mask",
    "pareto_mask_reference",
    "pareto_mask_gpu",
    "non_dominated_sort",
    "non_dominated_sort_reference",
    "non_dominated_sort_gpu",
    "hypervolume",
]

#: the fewest rows for which the dispatchers launch the kernels
GPU_MIN_ROWS = 4096
_BLOCK = 128
_CHUNK = 256  # rows of F tested per step of the reference
# booleans in one (rows, candidates, D) comparison of the reference
_PAIR_BUDGET = 8 * 2**20


def _check_F(F: Any) -> np.ndarray:
    # finite: NaN and inf are refused, naming F
    F = check_array(F, "F", ndim=2, dtype=np.float64)
    if F.shape[1] == 0:
        raise ValueError(
            f"F must have at least one objective column, got shape {F.shape}"
        )
    n, D = F.shape
    check_budget(
        f"dominance(n={n}, D={D})",
        n_bytes=64.0 * n * D + 2.0 * _PAIR_BUDGET,
        n_operations=float(n) * n * D,
    )
    return np.ascontiguousarray(F)


def _any_dominated_by(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """For each row q of ``Q``: does some row of ``P`` dominate it? ``(len(Q),)`` bool (maximisation)."""
    out = np.zeros(len(Q), dtype=bool)
    if len(P) == 0 or len(Q) == 0:
        return out
    step = max(1, _PAIR_BUDGET // max(1, len(Q) * Q.shape[1]))
    for s in range(0, len(P), step):
        p = P[s : s + step][None, :, :]
        q = Q[:, None, :]
        out |= ((p >= q).all(axis=2) & (p > q).any(axis=2)).any(axis=1)
    return out


def _mask_math(F: np.ndarray) -> np.ndarray:
    """Non-dominated rows of ``F`` by a sort-and-filter pass.

    A dominator of row ``i`` is lexicographically larger than ``i`` (its first differing coordinate is
    larger), so after a descending lexicographic sort every dominator comes first. Rows are tested in
    chunks against the front found so far and against their own chunk; a dominated dominator is itself
    dominated by an earlier front row, which then dominates ``i`` too (transitivity), so testing against
    the front is enough. Work ``O(n |front| D)`` instead of ``O(n^2 D)``.
    """
    n = F.shape[0]
    keep_sorted = np.zeros(n, dtype=bool)
    if n == 0:
        return keep_sorted
    order = np.lexsort(F.T[::-1])[::-1]  # column 0 primary key, descending
    G = F[order]
    front = G[:0]
    for s in range(0, n, _CHUNK):
        C = G[s : s + _CHUNK]
        dominated = _any_dominated_by(front, C) | _any_dominated_by(C, C)
        keep_sorted[s : s + _CHUNK] = ~dominated
        front = np.concatenate([front, C[~dominated]])
    mask = np.empty(n, dtype=bool)
    mask[order] = keep_sorted
    return mask


def _sort_math(F: np.ndarray) -> np.ndarray:
    """Front index of every row: peel the Pareto front off the rows not yet ranked, again and again."""
    rank = np.full(F.shape[0], -1, dtype=np.int64)
    left = np.arange(F.shape[0])
    r = 0
    while left.size:
        m = _mask_math(F[left])
        rank[left[m]] = r
        left = left[~m]
        r += 1
    return rank


# -------------------------------------------------------------------------- Pareto mask


def pareto_mask_reference(F: Any) -> np.ndarray:
    """Non-dominated rows of ``F`` (all objectives maximised; NumPy reference).

    Args:
        F: (n, D) objective values, finite (converted to float64); n may be 0.

    Returns:
        (n,) bool, True where no row dominates the row. Exact duplicates do not dominate each other, so
        a duplicated front point is kept twice.

    Raises:
        TypeError: non-numeric ``F``. ValueError: ``F`` not 2-D, no columns, or NaN / inf (naming ``F``).
        TooLargeError: n too large for the work limit.
    """
    return _mask_math(_check_F(F))


def pareto_mask_gpu(F: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`pareto_mask` (a CuPy float64 (n, D) in, a CuPy bool (n,) out; trusts it)."""
    import cupy as cp

    from icml25.kernels import load_module

    F = cp.ascontiguousarray(cp.asarray(F, dtype=cp.float64))
    n, D = int(F.shape[0]), int(F.shape[1])
    mask = cp.empty(n, dtype=cp.uint8)
    if n:
        grid = max(1, min((n + _BLOCK - 1) // _BLOCK, 65535))
        load_module("dominance").get_function("pareto_mask")(
            (grid,), (_BLOCK,), (F, mask, np.int64(n), np.int32(D))
        )
    return mask.astype(cp.bool_)


def pareto_mask(F: Any) -> np.ndarray:
    """Non-dominated rows (contract of :func:`pareto_mask_reference`); the kernel on a GPU for n >= GPU_MIN_ROWS."""
    F = _check_F(F)
    if F.shape[0] >= GPU_MIN_ROWS and gpu_available():  # pragma: no cover - GPU
        return pareto_mask_gpu(F).get()
    return _mask_math(F)


# ---------------------------------------------------------------- non-dominated sorting


def non_dominated_sort_reference(F: Any) -> np.ndarray:
    """Front index of every row of ``F`` (maximisation; NumPy reference).

    Front 0 is the Pareto front of all rows, front ``r + 1`` the Pareto front of the rows left after
    removing fronts ``0 .. r``; duplicates share a front. The same ranks as pymoo's
    ``NonDominatedSorting().do(-F, return_rank=True)[1]``.

    Args:
        F: (n, D) finite objective values.

    Returns:
        (n,) int64 front indices in ``[0, n)``.

    Raises:
        as :func:`pareto_mask_reference`.
    """
    return _sort_math(_check_F(F))


def non_dominated_sort_gpu(F: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`non_dominated_sort` (Deb's counting sort; a CuPy int64 (n,) out; trusts ``F``)."""
    import cupy as cp

    from icml25.kernels import load_module

    F = cp.ascontiguousarray(cp.asarray(F, dtype=cp.float64))
    n, D = int(F.shape[0]), int(F.shape[1])
    rank = cp.full(n, -1, dtype=cp.int64)
    if n == 0:
        return rank
    mod = load_module("dominance")
    grid = max(1, min((n + _BLOCK - 1) // _BLOCK, 65535))
    count = cp.empty(n, dtype=cp.int32)
    mod.get_function("dominator_count")(
        (grid,), (_BLOCK,), (F, count, np.int64(n), np.int32(D))
    )
    release = mod.get_function("release_front")
    ranked, r = 0, 0
    while ranked < n:
        front = cp.nonzero((count == 0) & (rank < 0))[0].astype(cp.int64)
        k = int(front.size)
        # cannot happen for a strict partial order; guard against a silent infinite loop
        if k == 0:
            raise RuntimeError(
                "non_dominated_sort_gpu: no row left with zero dominators"
            )
        rank[front] = r
        ranked += k
        release(
            (grid,),
            (_BLOCK,),
            (F, front, np.int64(k), rank, count, np.int64(n), np.int32(D)),
        )
        r += 1
    return rank


def non_dominated_sort(F: Any) -> np.ndarray:
    """Front indices (contract of :func:`non_dominated_sort_reference`); the kernels on a GPU for n >= GPU_MIN_ROWS."""
    F = _check_F(F)
    if F.shape[0] >= GPU_MIN_ROWS and gpu_available():  # pragma: no cover - GPU
        return non_dominated_sort_gpu(F).get()
    return _sort_math(F)


# -------------------------------------------------------------------------- hypervolume


def hypervolume(F: Any, ref: Any) -> float:
    """Hypervolume dominated by the rows of ``F`` above the reference point ``ref`` (maximisation).

    The Lebesgue measure of ``{x : ref <= x <= F_i for some i}``, computed exactly by pymoo's ``HV``
    (moocore) on ``-F`` with reference ``-ref``. Rows that are not strictly better than ``ref`` in every
    objective add nothing and are dropped first (pymoo / moocore ignore them the same way), so a
    reference point that no row beats gives 0.0 rather than an error. Dominated and duplicate rows
    change nothing.

    Args:
        F: (n, D) finite objective values (n may be 0).
        ref: (D,) finite reference point (the worst acceptable value of each objective).

    Returns:
        The hypervolume, a float >= 0 (units: the product of the objectives' units).

    Raises:
        TypeError: non-numeric input. ValueError (naming ``F`` or ``ref``): ``F`` not 2-D or without
        columns, ``ref`` not of shape (D,), NaN or inf in either.
    """
    F = check_array(F, "F", ndim=2, dtype=np.float64)
    if F.shape[1] == 0:
        raise ValueError(
            f"F must have at least one objective column, got shape {F.shape}"
        )
    ref = check_array(ref, "ref", shape=(F.shape[1],), dtype=np.float64)
    better = F[(F > ref[None, :]).all(axis=1)]
    if better.shape[0] == 0:
        return 0.0
    # only the front matters; keeps moocore's input small
    better = better[_mask_math(better)]
    from pymoo.indicators.hv import HV

    value = float(HV(ref_point=-ref).do(-better))
    if not np.isfinite(value) or value < 0:
        raise RuntimeError(f"pymoo's HV returned {value!r} for a {better.shape} front")
    return value

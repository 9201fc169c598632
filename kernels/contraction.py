"""Batched Karger contraction trials: exponential clocks + minimum spanning forest.

One contraction trial on a graph with contraction weights ``wc`` gives each edge the clock
``key_e = -log(u_e) / wc_e`` and contracts edges in increasing key order (skipping edges inside a
super-vertex) until ``stop_at`` super-vertices remain. By memorylessness of exponential clocks the
next accepted edge is always drawn with probability proportional to ``wc`` among the edges that
still cross super-vertices, which is Karger's contraction rule; and Kruskal's accepted edges are
the minimum spanning forest (MSF) of the keys, so a trial is "MSF minus its largest edges".

Kernels (``contraction.cu``), each with a NumPy/SciPy reference, a CuPy launcher and a dispatcher:

- :func:`exp_clock_keys`: ``(R, m)`` float32 keys from counter-based uniforms (splitmix64 of the
  seed and the (trial, edge) counter), bit-identical uniforms on CPU and GPU.
- :func:`contract_by_keys`: ``(R, n)`` int32 labels (smallest vertex id of each component) after
  contracting down to ``stop_at`` components. Order of edges: the pair ``(key, edge id)``.
- :func:`cut_values`: ``(R,)`` float64 weight of edges whose ends carry different labels.
- :func:`contraction_trials`: the three chained, with optional later phases (boosted Karger's
  switch to plain weights at the threshold).

Every dispatcher takes and returns NumPy arrays: on a GPU it copies its inputs to the device and
its result back, so a caller never sees a CuPy array. :func:`max_batch` says how many trials one
call should draw at once on the path this process takes (the caller needs no device check).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from icml25.common import gpu_available

# shared with triplets.py (the .cu files repeat it)
from icml25.kernels import _splitmix64

__all__ = [
    "MAX_BATCH_CPU",
    "MAX_BATCH_GPU",
    "max_batch",
    "exp_clock_keys",
    "exp_clock_keys_reference",
    "exp_clock_keys_gpu",
    "contract_by_keys",
    "contract_by_keys_reference",
    "contract_by_keys_gpu",
    "cut_values",
    "cut_values_reference",
    "cut_values_gpu",
    "contraction_trials",
    "contraction_trials_reference",
    "contraction_trials_gpu",
    "uniforms_reference",
]

_BLOCK = 256

#: most trials one call draws at once on the CPU reference (the (R, m) keys stay small)
MAX_BATCH_CPU: int = 64
#: most trials one call draws at once on the GPU (one kernel launch)
MAX_BATCH_GPU: int = 4096


def max_batch() -> int:
    """The most trials a caller should draw in one dispatcher call on the path this process takes:
    :data:`MAX_BATCH_GPU` when the CUDA kernels run, :data:`MAX_BATCH_CPU` on the CPU reference."""
    return MAX_BATCH_GPU if gpu_available() else MAX_BATCH_CPU


# --------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------


def uniforms_reference(
    n_trials: int, m: int, seed: int, trial_offset: int = 0
) -> np.ndarray:
    """The ``(R, m)`` float64 uniforms in (0, 1) behind :func:`exp_clock_keys` (same bits as CUDA).

    ``u[r, e] = ((h >> 11) + 0.5) 2^-53`` with ``h = splitmix64(splitmix64(seed) ^ ((offset + r) m + e))``.
    """
    mixed = _splitmix64(np.array([seed % 2**64], dtype=np.uint64))[0]
    counter = (
        np.arange(trial_offset, trial_offset + n_trials, dtype=np.uint64)[:, None]
        * np.uint64(m)
        + np.arange(m, dtype=np.uint64)[None, :]
    )
    h = _splitmix64(mixed ^ counter)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def exp_clock_keys_reference(
    wc: np.ndarray, n_trials: int, seed: int, trial_offset: int = 0
) -> np.ndarray:
    """Exponential clocks ``key[r, e] = float32(-log(u[r, e]) / wc[e])`` (NumPy reference).

    Args:
        wc: (m,) float64 positive contraction weights.
        n_trials: R, number of trials (rows).
        seed: 64-bit seed of the counter-based generator.
        trial_offset: index of the first trial (so batches continue one stream).

    Returns:
        (R, m) float32 keys, >= 0.
    """
    u = uniforms_reference(n_trials, wc.shape[0], seed, trial_offset)
    return (-np.log(u) / np.asarray(wc, dtype=np.float64)[None, :]).astype(np.float32)


def exp_clock_keys_gpu(
    wc: Any, n_trials: int, seed: int, trial_offset: int = 0
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of ``exp_clock_keys``: ``wc`` (m,) NumPy or CuPy in, CuPy (R, m) float32 out."""
    import cupy as cp

    from icml25.kernels import load_module

    wc = cp.asarray(wc, dtype=cp.float64)
    m = int(wc.shape[0])
    key = cp.empty((n_trials, m), dtype=cp.float32)
    total = n_trials * m
    grid = min(max(1, (total + _BLOCK - 1) // _BLOCK), 65535 * 4)
    fn = load_module("contraction").get_function("exp_clock_keys")
    fn(
        (grid,),
        (_BLOCK,),
        (
            wc,
            key,
            np.int64(n_trials),
            np.int64(m),
            np.uint64(seed % 2**64),
            np.int64(trial_offset),
        ),
    )
    return key


def exp_clock_keys(
    wc: np.ndarray, n_trials: int, seed: int, trial_offset: int = 0
) -> np.ndarray:
    """Exponential clocks (contract of :func:`exp_clock_keys_reference`): CUDA when a GPU is usable.

    Args:
        wc: (m,) float64 positive contraction weights (NumPy).
        n_trials, seed, trial_offset: as the reference.

    Returns:
        (R, m) float32 NumPy keys, the same bits on both paths up to ``log`` rounding.
    """
    if gpu_available():  # pragma: no cover - GPU
        return exp_clock_keys_gpu(
            np.asarray(wc, dtype=np.float64), n_trials, seed, trial_offset
        ).get()
    return exp_clock_keys_reference(
        np.asarray(wc, dtype=np.float64), n_trials, seed, trial_offset
    )


# --------------------------------------------------------------------------------------
# Contraction
# --------------------------------------------------------------------------------------


def _canonical(labels: np.ndarray, n: int) -> np.ndarray:
    """Relabel components by their smallest vertex id."""
    smallest = np.empty(labels.max() + 1, dtype=np.int32)
    # last write wins: the smallest
    smallest[labels[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int32)
    return smallest[labels]


def contract_by_keys_reference(
    edges: np.ndarray, keys: np.ndarray, n: int, stop_at: int = 2
) -> np.ndarray:
    """Contract each trial down to ``stop_at`` components in ``(key, edge id)`` order (CPU reference).

    Kruskal's accepted edges are the minimum spanning forest of the order, so the partition is
    the forest minus its ``#forest - (n - stop_at)`` largest edges. SciPy's Kruskal runs on the
    edge *ranks* (1..m, ties in key broken by edge id), which makes the order strict.

    Args:
        edges: (m, 2) integer endpoints in [0, n), no self loops, no repeated pair.
        keys: (R, m) float32/float64 keys (one row per trial).
        n: number of vertices.
        stop_at: number of super-vertices to stop at (>= 1); fewer edges are dropped if the graph
            has more components than that.

    Returns:
        (R, n) int32 labels: the smallest vertex id of each vertex's final super-vertex.
    """
    keys = np.atleast_2d(keys)
    R, m = keys.shape
    u = np.asarray(edges[:, 0], dtype=np.int64)
    v = np.asarray(edges[:, 1], dtype=np.int64)
    # tiny graphs, many trials: Kruskal vectorised over trials
    if R >= 32 and m * n <= 4096:
        return _kruskal_batched(u, v, keys, n, stop_at)
    out = np.empty((R, n), dtype=np.int32)
    # sparsity structure once; per trial only the data (the edge ranks) changes
    base = csr_matrix((np.arange(1, m + 1, dtype=np.float64), (u, v)), shape=(n, n))
    slot_edge = base.data.astype(np.int64) - 1  # edge id stored in each CSR slot
    rank = np.empty(m, dtype=np.float64)
    ranks = np.arange(1, m + 1, dtype=np.float64)
    for r in range(R):
        rank[np.argsort(keys[r], kind="stable")] = ranks  # stable sort: ties by edge id
        graph = csr_matrix((rank[slot_edge], base.indices, base.indptr), shape=(n, n))
        forest = minimum_spanning_tree(graph)
        n_drop = forest.nnz - (n - stop_at)
        if n_drop > 0:
            cutoff = np.partition(forest.data, forest.nnz - n_drop)[forest.nnz - n_drop]
            forest.data[forest.data >= cutoff] = 0.0
            forest.eliminate_zeros()
        _, lab = connected_components(forest, directed=False)
        out[r] = _canonical(lab, n)
    return out


def _kruskal_batched(u, v, keys, n, stop_at):
    """Kruskal in (key, edge id) order for all trials at once: O(m R n), for tiny graphs."""
    R, m = keys.shape
    order = np.argsort(keys, axis=1, kind="stable")
    lab = np.tile(np.arange(n, dtype=np.int32), (R, 1))
    components = np.full(R, n)
    rows = np.arange(R)
    for j in range(m):
        e = order[:, j]
        a, b = lab[rows, u[e]], lab[rows, v[e]]
        merge = (a != b) & (components > stop_at)
        if not merge.any():
            continue
        # the merged component keeps the smaller label
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        relabel = merge[:, None] & (lab == hi[:, None])
        lab = np.where(relabel, lo[:, None], lab)
        components -= merge
    return lab  # labels are the smallest vertex of each component by construction


def contract_by_keys_gpu(
    edges: Any, keys: Any, n: int, stop_at: int = 2
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of ``contract_by_keys``: one thread block per trial (CuPy (R, n) int32 out)."""
    import cupy as cp

    from icml25.kernels import load_module

    edges = cp.asarray(edges)
    keys = cp.ascontiguousarray(cp.asarray(keys, dtype=cp.float32))
    if keys.ndim == 1:
        keys = keys[None, :]
    R, m = keys.shape
    eu = cp.ascontiguousarray(edges[:, 0].astype(cp.int32))
    ev = cp.ascontiguousarray(edges[:, 1].astype(cp.int32))
    comp = cp.empty((R, n), dtype=cp.int32)
    nxt = cp.empty((R, n), dtype=cp.int32)
    best = cp.empty((R, n), dtype=cp.uint64)
    tree = cp.empty((R, m), dtype=cp.uint8)
    labels = cp.empty((R, n), dtype=cp.int32)
    fn = load_module("contraction").get_function("contract_by_keys")
    fn(
        (R,),
        (_BLOCK,),
        (
            eu,
            ev,
            keys,
            np.int32(n),
            np.int32(m),
            np.int32(R),
            np.int32(stop_at),
            comp,
            nxt,
            best,
            tree,
            labels,
        ),
    )
    return labels


def contract_by_keys(
    edges: np.ndarray, keys: np.ndarray, n: int, stop_at: int = 2
) -> np.ndarray:
    """Contraction by keys (contract of :func:`contract_by_keys_reference`): CUDA when a GPU is usable.

    Args:
        edges: (m, 2) integer endpoints; keys: (R, m) or (m,) float32 keys; n: vertices;
        stop_at: super-vertices to stop at.

    Returns:
        (R, n) int32 NumPy labels, identical on both paths.
    """
    if gpu_available():  # pragma: no cover - GPU
        return contract_by_keys_gpu(
            np.asarray(edges), np.asarray(keys), n, stop_at
        ).get()
    return contract_by_keys_reference(np.asarray(edges), np.asarray(keys), n, stop_at)


# --------------------------------------------------------------------------------------
# Cut values
# --------------------------------------------------------------------------------------


def cut_values_reference(
    edges: np.ndarray, weights: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """``cut[r] = sum_e weights[e] [labels[r, u_e] != labels[r, v_e]]`` (NumPy reference), (R,) float64."""
    labels = np.atleast_2d(labels)
    crossing = labels[:, edges[:, 0]] != labels[:, edges[:, 1]]
    return crossing.astype(np.float64) @ np.asarray(weights, dtype=np.float64)


def cut_values_gpu(
    edges: Any, weights: Any, labels: Any
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of ``cut_values`` (CuPy (R,) float64 out)."""
    import cupy as cp

    from icml25.kernels import load_module

    edges = cp.asarray(edges)
    labels = cp.ascontiguousarray(cp.asarray(labels, dtype=cp.int32))
    if labels.ndim == 1:
        labels = labels[None, :]
    R, n = labels.shape
    m = int(edges.shape[0])
    eu = cp.ascontiguousarray(edges[:, 0].astype(cp.int32))
    ev = cp.ascontiguousarray(edges[:, 1].astype(cp.int32))
    cut = cp.zeros(R, dtype=cp.float64)
    total = R * m
    grid = min(max(1, (total + _BLOCK - 1) // _BLOCK), 65535 * 4)
    fn = load_module("contraction").get_function("cut_values")
    fn(
        (grid,),
        (_BLOCK,),
        (
            eu,
            ev,
            cp.asarray(weights, dtype=cp.float64),
            labels,
            np.int64(R),
            np.int64(n),
            np.int64(m),
            cut,
        ),
    )
    return cut


def cut_values(
    edges: np.ndarray, weights: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """Cut values (contract of :func:`cut_values_reference`): CUDA when a GPU is usable.

    Args:
        edges: (m, 2) integer endpoints; weights: (m,) float64; labels: (R, n) or (n,) int labels.

    Returns:
        (R,) float64 NumPy cut values.
    """
    if gpu_available():  # pragma: no cover - GPU
        return cut_values_gpu(
            np.asarray(edges), np.asarray(weights), np.asarray(labels)
        ).get()
    return cut_values_reference(
        np.asarray(edges), np.asarray(weights), np.asarray(labels)
    )


# --------------------------------------------------------------------------------------
# Whole trials (one or more contraction phases)
# --------------------------------------------------------------------------------------


def _phase_seed(seed: int, phase: int) -> int:
    return int(
        _splitmix64(
            np.array([(seed + 0x632BE59BD9B4E019 * phase) % 2**64], dtype=np.uint64)
        )[0]
    )


def _trials(
    xp,
    keys_fn,
    contract_fn,
    cut_fn,
    edges,
    weights,
    n,
    n_trials,
    seed,
    phases,
    trial_offset,
):
    labels = None
    for i, (wc, stop_at) in enumerate(phases):
        keys = keys_fn(wc, n_trials, _phase_seed(seed, i), trial_offset)
        if labels is not None:
            # edges inside a super-vertex of the previous phase come first (key 0):
            # Kruskal rebuilds those super-vertices, then goes on
            # with this phase's clocks
            inside = labels[:, edges[:, 0]] == labels[:, edges[:, 1]]
            keys = xp.where(inside, xp.float32(0.0), keys)
        labels = contract_fn(edges, keys, n, stop_at)
    return cut_fn(edges, weights, labels), labels


def contraction_trials_reference(
    edges: np.ndarray,
    weights: np.ndarray,
    n: int,
    n_trials: int,
    seed: int,
    phases: Sequence[tuple[np.ndarray, int]],
    trial_offset: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_trials`` independent contraction trials, phase by phase (CPU reference).

    Phase ``i`` contracts with weights ``phases[i][0]`` until ``phases[i][1]`` super-vertices
    remain, starting from the super-vertices of phase ``i - 1`` (fresh clocks per phase).

    Args:
        edges: (m, 2) integer endpoints; weights: (m,) float64 weights the cuts are valued with;
        n: vertices; n_trials: R; seed: 64-bit seed; phases: ``[(wc (m,) float64, stop_at), ...]``;
        trial_offset: index of the first trial (so batches continue one stream).

    Returns:
        ``(cut, labels)``: (R,) float64 cut values under ``weights``, (R, n) int32 labels.
    """
    edges = np.asarray(edges)
    return _trials(
        np,
        exp_clock_keys_reference,
        contract_by_keys_reference,
        cut_values_reference,
        edges,
        weights,
        n,
        n_trials,
        seed,
        phases,
        trial_offset,
    )


def contraction_trials_gpu(
    edges: Any,
    weights: Any,
    n: int,
    n_trials: int,
    seed: int,
    phases: Sequence[tuple[Any, int]],
    trial_offset: int = 0,
) -> tuple[Any, Any]:  # pragma: no cover
    """CuPy launcher of :func:`contraction_trials` (CuPy arrays out)."""
    import cupy as cp

    edges = cp.asarray(edges)
    return _trials(
        cp,
        exp_clock_keys_gpu,
        contract_by_keys_gpu,
        cut_values_gpu,
        edges,
        weights,
        n,
        n_trials,
        seed,
        phases,
        trial_offset,
    )


def contraction_trials(
    edges: np.ndarray,
    weights: np.ndarray,
    n: int,
    n_trials: int,
    seed: int,
    phases: Sequence[tuple[np.ndarray, int]],
    trial_offset: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Whole contraction trials (contract of :func:`contraction_trials_reference`): CUDA when a
    GPU is usable. NumPy in, NumPy ``(cut (R,) float64, labels (R, n) int32)`` out."""
    if gpu_available():  # pragma: no cover - GPU
        cut, labels = contraction_trials_gpu(
            edges, weights, n, n_trials, seed, phases, trial_offset
        )
        return cut.get(), labels.get()
    return contraction_trials_reference(
        edges, weights, n, n_trials, seed, phases, trial_offset
    )

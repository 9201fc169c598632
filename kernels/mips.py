"""Maximum-inner-product search kernels of chapter 02 (vMF exploration), with their CPU references.

Three operations over an action table ``actions``/``X`` of shape ``(n, d)`` and a batch of
queries ``queries``/``V`` of shape ``(B, d)``, all float32 row-major:

- :func:`mips_argmax`: ``argmax_i <q_b, x_i>`` per query (vMF-exp step 3: play the nearest
  neighbour of the sampled direction), ties to the lowest index, plus the maximal score.
- :func:`gumbel_max_sample`: one draw per query from the Boltzmann policy
  ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)`` by the Gumbel-max trick,
  ``argmax_i kappa <v_b, x_i> + G_{b,i}`` with ``G = -log(-log U)`` (the B-exp baseline).
- :func:`first_beater`: the smallest ``j`` with ``<q_b, x_j> > threshold_b`` (``n`` when none):
  the prefix-survival counter of the Monte Carlo probability curve (note, step 8: with
  ``threshold_b = <q_b, A>``, action ``A`` wins against the prefix ``X[:m]`` iff
  ``first_beater_b >= m``).

Each comes in three forms (see :mod:`icml25.kernels`): ``f_reference`` (NumPy, chunked over the
actions so memory stays bounded for ``n = 10^6``; the readable definition), ``f_gpu`` (the CuPy
launcher of the CUDA kernels in ``mips.cu``) and ``f`` (the dispatcher).

Random numbers. The Gumbel noise comes from the counter-based generator Philox-4x32-10
(Salmon et al., SC'11, "Parallel random numbers: as easy as 1, 2, 3"), implemented identically in
CUDA (``mips.cu``) and in vectorised NumPy (:func:`philox4x32_10`), so the GPU and the CPU draw the
*same* noise ``G_{b,i}`` for the same ``(seed, offset)``. With

    key     = (seed mod 2^32, seed >> 32)
    counter = (i, b, offset mod 2^32, offset >> 32)

the first output word ``w`` gives ``U = (2 (w >> 9) + 1) / 2^24`` (exact in float32, inside (0, 1))
and ``G = -log(-log U)`` in float32. The two implementations then agree draw for draw except where
two perturbed scores are within float32 rounding of each other (the dot products are summed in a
different order by BLAS and by the kernel), which for continuous data happens with probability of
order 1e-6 per draw. Draws with distinct ``offset`` (or ``seed``) are independent; use a fresh
``offset`` per call to get fresh samples from one seed.

Dispatchers return the kind of array they are given: NumPy in → NumPy out (computed on the GPU
when one is usable, with the transfers done here: pass CuPy arrays to keep a large action table
on the device across calls), CuPy in (any array argument) → CuPy out.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from icml25.common import gpu_available

__all__ = [
    "mips_argmax",
    "mips_argmax_reference",
    "mips_argmax_gpu",
    "gumbel_max_sample",
    "gumbel_max_sample_reference",
    "gumbel_max_sample_gpu",
    "first_beater",
    "first_beater_reference",
    "first_beater_gpu",
    "philox4x32_10",
    "gumbel_noise_reference",
]

# Elements of one (B, chunk) score block in the references: 2^22 float32 = 16 MiB.
_CHUNK_ELEMENTS = 1 << 22
# The Gumbel reference also evaluates Philox on each block; smaller blocks stay in cache.
_GUMBEL_CHUNK_ELEMENTS = 1 << 13

# Launch geometry; must match the #defines in mips.cu.
_TILE_N = 256  # actions per tile == threads per block
_TQ = 8  # queries per block
_MAX_GRID_Y = 65535

# Philox-4x32 constants (Random123: PHILOX_M4x32_0/1, PHILOX_W32_0/1).
_PHILOX_M0 = np.uint64(0xD2511F53)
_PHILOX_M1 = np.uint64(0xCD9E8D57)
_PHILOX_W0 = 0x9E3779B9
_PHILOX_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF


# --------------------------------------------------------------------------------------------
# Validation (public boundary)
# --------------------------------------------------------------------------------------------


def _is_cupy(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "cupy"


def _as_matrix(name: str, a: Any, xp) -> Any:
    """``a`` as a C-contiguous float32 2-D array of module ``xp``, after checks."""
    if not hasattr(a, "ndim"):
        a = xp.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, d); got shape {tuple(a.shape)}")
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a real numeric array castable to float32; got dtype {a.dtype}")
    with np.errstate(over="ignore"):  # overflow to inf is reported just below
        a = xp.ascontiguousarray(xp.asarray(a, dtype=xp.float32))
    if a.size and not bool(xp.isfinite(a).all()):
        raise ValueError(f"{name} must be finite (after casting to float32)")
    return a


def _check_pair(qname: str, queries: Any, aname: str, actions: Any, xp) -> tuple[Any, Any]:
    q = _as_matrix(qname, queries, xp)
    x = _as_matrix(aname, actions, xp)
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"{qname} and {aname} must have the same d; got {q.shape[1]} and {x.shape[1]}")
    if q.shape[1] < 1:
        raise ValueError(f"{qname} and {aname} must have d >= 1")
    if x.shape[0] < 1:
        raise ValueError(f"{aname} must hold at least one action (n >= 1)")
    if x.shape[0] >= _MASK32:
        raise ValueError(f"{aname} has n = {x.shape[0]} rows; at most 2^32 - 2 are supported")
    return q, x


def _check_threshold(threshold: Any, B: int, xp) -> Any:
    t = threshold if hasattr(threshold, "ndim") else xp.asarray(threshold)
    if t.ndim != 1 or t.shape[0] != B:
        raise ValueError(f"threshold must have shape ({B},) (one per query); got {tuple(t.shape)}")
    if t.dtype.kind not in "fiu":
        raise TypeError(f"threshold must be real numeric; got dtype {t.dtype}")
    with np.errstate(over="ignore"):
        t = xp.ascontiguousarray(xp.asarray(t, dtype=xp.float32))
    if t.size and not bool(xp.isfinite(t).all()):
        raise ValueError("threshold must be finite (after casting to float32)")
    return t


def _check_kappa(kappa: Any) -> float:
    if isinstance(kappa, bool) or not isinstance(kappa, numbers.Real):
        raise TypeError(f"kappa must be a real number; got {type(kappa).__name__}")
    kappa = float(kappa)
    if not math.isfinite(kappa) or kappa < 0:
        raise ValueError(f"kappa must be finite and >= 0; got {kappa}")
    if abs(kappa) > float(np.finfo(np.float32).max):
        raise ValueError(f"kappa = {kappa} overflows float32")
    return kappa


def _check_counter_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    value = int(value)
    if not 0 <= value < 2**64:
        raise ValueError(f"{name} must lie in [0, 2^64); got {value}")
    return value


# --------------------------------------------------------------------------------------------
# Philox-4x32-10 (NumPy), the generator of mips.cu
# --------------------------------------------------------------------------------------------


def philox4x32_10(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox-4x32 with 10 rounds (Random123's ``philox4x32``), vectorised over counters.

    One round maps counter words ``(c0, c1, c2, c3)`` with key ``(k0, k1)`` to
    ``(hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))`` where hi/lo are the
    halves of the 64-bit product; the key is bumped by the Weyl constants ``(W0, W1)`` between
    rounds. This is the same function as ``philox4x32_10`` in ``mips.cu``.

    Args:
        counter: (4, ...) uint32, the counter words c0..c3 along axis 0.
        key: two ints in [0, 2^32), the key words k0, k1.

    Returns:
        (4, ...) uint32, the output words.
    """
    # Words are held in uint64 so that the 32x32 -> 64-bit products need no conversions.
    c0, c1, c2, c3 = (np.asarray(counter[j], dtype=np.uint64) for j in range(4))
    k0, k1 = int(key[0]) & _MASK32, int(key[1]) & _MASK32
    shift, mask = np.uint64(32), np.uint64(_MASK32)
    for r in range(10):
        if r:
            k0 = (k0 + _PHILOX_W0) & _MASK32
            k1 = (k1 + _PHILOX_W1) & _MASK32
        p0 = c0 * _PHILOX_M0  # M0 c0 < 2^64: exact
        p1 = c2 * _PHILOX_M1
        new0 = p1 >> shift  # hi(M1 c2)
        new0 ^= c1
        new0 ^= np.uint64(k0)
        new2 = p0 >> shift  # hi(M0 c0)
        new2 ^= c3
        new2 ^= np.uint64(k1)
        p1 &= mask  # lo(M1 c2)
        p0 &= mask  # lo(M0 c0)
        c0, c1, c2, c3 = new0, p1, new2, p0
    return np.stack(np.broadcast_arrays(c0, c1, c2, c3)).astype(np.uint32)


def gumbel_noise_reference(seed: int, offset: int, b: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Standard Gumbel noise ``G_{b,i}`` exactly as ``mips.cu`` draws it (see the module docstring).

    Args:
        seed, offset: non-negative ints below 2^64 (key and high counter words).
        b: integer array of query indices, broadcastable with ``i``; values < 2^32.
        i: integer array of action indices; values < 2^32.

    Returns:
        float32 array of the broadcast shape of ``b`` and ``i``.
    """
    bb, ii = np.broadcast_arrays(np.asarray(b, dtype=np.uint32), np.asarray(i, dtype=np.uint32))
    counter = (ii, bb, np.uint32(offset & _MASK32), np.uint32(offset >> 32))
    w = philox4x32_10(counter, (seed & _MASK32, seed >> 32))[0]
    # U = (2 (w >> 9) + 1) 2^-24: 23 random bits, exact in float32, in [2^-24, 1 - 2^-24].
    u = ((w >> np.uint32(9)) * np.uint32(2) + np.uint32(1)).astype(np.float32) * np.float32(2.0**-24)
    return -np.log(-np.log(u))


# --------------------------------------------------------------------------------------------
# References (NumPy)
# --------------------------------------------------------------------------------------------


def _chunk_size(B: int, budget: int) -> int:
    return max(1, budget // max(B, 1))


def mips_argmax_reference(queries: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximum inner product per query, ties to the lowest index (NumPy reference).

    ``index_b = min argmax_i <q_b, x_i>``, ``score_b = <q_b, x_{index_b}>`` computed in float32,
    one BLAS matmul per chunk of actions (memory O(B * chunk), not O(B * n)).

    Args:
        queries: (B, d) real array (cast to float32), finite.
        actions: (n, d) real array (cast to float32), finite, n >= 1.

    Returns:
        index: (B,) int64 in [0, n); score: (B,) float32.

    Raises:
        ValueError: not 2-D, d differs, n == 0 or n >= 2^32 - 1, non-finite entries.
        TypeError: non-numeric dtype.
    """
    q, x = _check_pair("queries", queries, "actions", actions, np)
    B, n = q.shape[0], x.shape[0]
    best_idx = np.zeros(B, dtype=np.int64)
    best = np.full(B, -np.inf, dtype=np.float32)
    chunk = _chunk_size(B, _CHUNK_ELEMENTS)
    rows = np.arange(B)
    for start in range(0, n, chunk):
        scores = q @ x[start : start + chunk].T  # (B, c) float32
        j = scores.argmax(axis=1)  # first maximum within the chunk
        s = scores[rows, j]
        # Strict '>': an equal score in a later chunk never displaces an earlier index.
        better = (s > best) | (start == 0)
        best = np.where(better, s, best)
        best_idx = np.where(better, j + start, best_idx)
    return best_idx, best


def gumbel_max_sample_reference(
    V: np.ndarray, X: np.ndarray, kappa: float, seed: int, offset: int = 0
) -> np.ndarray:
    """One Boltzmann draw per query by Gumbel-max, with the kernel's Philox noise (NumPy reference).

    ``a_b = argmax_i fl(fl(kappa * <v_b, x_i>) + G_{b,i})`` in float32, ties to the lowest index;
    ``G`` from :func:`gumbel_noise_reference`. Then ``P(a_b = i) = softmax(kappa X v_b)_i``
    (Gumbel-max trick), the B-exp policy of the paper (Sec. 2; the note's step 5).

    Cost: the NumPy Philox takes about 0.1-0.5 us per (b, i) draw on one core (B * n draws), so
    this reference suits B * n up to ~10^7; the GPU kernel is the fast path.

    Args:
        V: (B, d) real array (cast to float32), finite; states/queries.
        X: (n, d) real array (cast to float32), finite, n >= 1; actions.
        kappa: finite >= 0 inverse temperature (0 gives the uniform distribution).
        seed: int in [0, 2^64), the Philox key.
        offset: int in [0, 2^64), the high counter words; vary it to get fresh draws.

    Returns:
        (B,) int64 sampled action indices in [0, n).

    Raises:
        ValueError: shapes as in :func:`mips_argmax_reference`, negative or non-finite kappa,
            seed/offset outside [0, 2^64).
        TypeError: non-numeric arrays, non-real kappa, non-int seed/offset.
    """
    q, x = _check_pair("V", V, "X", X, np)
    kappa32 = np.float32(_check_kappa(kappa))
    seed = _check_counter_int("seed", seed)
    offset = _check_counter_int("offset", offset)
    B, n = q.shape[0], x.shape[0]
    best_idx = np.zeros(B, dtype=np.int64)
    best = np.full(B, -np.inf, dtype=np.float32)
    chunk = _chunk_size(B, _GUMBEL_CHUNK_ELEMENTS)
    rows = np.arange(B)
    b_col = rows[:, None]
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        logits = kappa32 * (q @ x[start:stop].T)  # (B, c) float32, rounded once
        scores = logits + gumbel_noise_reference(seed, offset, b_col, np.arange(start, stop)[None, :])
        j = scores.argmax(axis=1)
        s = scores[rows, j]
        better = (s > best) | (start == 0)
        best = np.where(better, s, best)
        best_idx = np.where(better, j + start, best_idx)
    return best_idx


def first_beater_reference(queries: np.ndarray, actions: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Smallest ``j`` with ``<q_b, x_j> > threshold_b`` (float32), else ``n`` (NumPy reference).

    The prefix-survival counter of the Monte Carlo curve (note, step 8): with
    ``threshold_b = <v_b, A>`` the fixed action ``A`` beats every prefix ``X_1..X_m`` with
    ``m <= first_beater_b`` (0-based: the prefix ``X[:m]``). Stops early once every query has a hit.

    Args:
        queries: (B, d) real array (cast to float32), finite.
        actions: (n, d) real array (cast to float32), finite, n >= 1.
        threshold: (B,) real array (cast to float32), finite.

    Returns:
        (B,) int64 in [0, n].

    Raises:
        ValueError: shapes/finiteness as in :func:`mips_argmax_reference`; threshold not (B,).
        TypeError: non-numeric dtype.
    """
    q, x = _check_pair("queries", queries, "actions", actions, np)
    thr = _check_threshold(threshold, q.shape[0], np)
    B, n = q.shape[0], x.shape[0]
    out = np.full(B, n, dtype=np.int64)
    todo = np.arange(B)
    chunk = _chunk_size(B, _CHUNK_ELEMENTS)
    for start in range(0, n, chunk):
        if todo.size == 0:
            break
        beats = (q[todo] @ x[start : start + chunk].T) > thr[todo, None]  # (|todo|, c)
        hit = beats.any(axis=1)
        out[todo[hit]] = start + beats[hit].argmax(axis=1)  # argmax of bool = first True
        todo = todo[~hit]
    return out


# --------------------------------------------------------------------------------------------
# GPU launchers (CuPy + mips.cu)
# --------------------------------------------------------------------------------------------


def _module():
    from icml25.kernels import load_module

    return load_module("mips")


def _sm_count() -> int:
    import cupy

    device = cupy.cuda.Device()
    if device.id not in _SM_COUNT:
        _SM_COUNT[device.id] = int(cupy.cuda.runtime.getDeviceProperties(device.id)["multiProcessorCount"])
    return _SM_COUNT[device.id]


_SM_COUNT: dict[int, int] = {}


def _grid(B: int, n: int) -> tuple[int, int]:
    """Grid (x, y): y covers the queries in groups of ``_TQ``; x splits the action tiles.

    A block of 256 threads owns 8 queries and walks the action tiles ``x, x + gridDim.x, ...``.
    We aim for about 8 blocks per streaming multiprocessor in total (enough to hide memory
    latency), never more x-blocks than tiles; every extra x-block costs only one 64-bit atomic
    per query at the end.
    """
    sms = _sm_count()
    grid_y = min(-(-B // _TQ), _MAX_GRID_Y)
    tiles = -(-n // _TILE_N)
    grid_x = max(1, min(tiles, -(-8 * sms // grid_y)))
    return grid_x, grid_y


def _query_slices(B: int):
    """Query ranges small enough for gridDim.y <= 65535."""
    step = _TQ * _MAX_GRID_Y
    for b0 in range(0, B, step):
        yield b0, min(B, b0 + step)


def _launch_keys(kernel_name: str, q, x, extra=lambda b0: ()):
    """Run an argmax-type kernel of ``mips.cu`` and decode its packed (score, index) keys.

    ``extra(b0)`` gives the kernel arguments after ``d`` for the query slice starting at ``b0``.
    """
    import cupy

    mod = _module()
    kernel = mod.get_function(kernel_name)
    decode = mod.get_function("mips_decode_keys")
    B, d = q.shape
    n = x.shape[0]
    keys = cupy.zeros(B, dtype=cupy.uint64)  # 0 is below every packed key
    for b0, b1 in _query_slices(B):
        args = (q[b0:b1], x, np.int64(b1 - b0), np.int64(n), np.int32(d), *extra(b0), keys[b0:b1])
        kernel(_grid(b1 - b0, n), (_TILE_N,), args)
    index = cupy.empty(B, dtype=cupy.int64)
    score = cupy.empty(B, dtype=cupy.float32)
    if B:
        decode((-(-B // 256),), (256,), (keys, np.int64(B), index, score))
    return index, score


def mips_argmax_gpu(queries, actions):
    """:func:`mips_argmax_reference` on the GPU (kernel ``mips_argmax_keys`` of ``mips.cu``).

    CuPy arrays in and out (NumPy inputs are copied to the device). Same contract, arguments,
    returns and errors as the reference; indices agree exactly and scores to float32 rounding
    (the kernel sums ``<q, x>`` sequentially over d with FMAs, BLAS in another order).
    """
    import cupy

    q, x = _check_pair("queries", queries, "actions", actions, cupy)
    return _launch_keys("mips_argmax_keys", q, x)


def gumbel_max_sample_gpu(V, X, kappa: float, seed: int, offset: int = 0):
    """:func:`gumbel_max_sample_reference` on the GPU (kernel ``gumbel_max_keys`` of ``mips.cu``).

    CuPy arrays in and out. Same arguments, returns and errors as the reference, and the same
    Philox noise, so both return the same draws except at float32 near-ties.
    """
    import cupy

    q, x = _check_pair("V", V, "X", X, cupy)
    kappa32 = np.float32(_check_kappa(kappa))
    seed = _check_counter_int("seed", seed)
    offset = _check_counter_int("offset", offset)
    index, _ = _launch_keys(
        "gumbel_max_keys", q, x, lambda b0: (kappa32, np.uint64(seed), np.uint64(offset), np.int64(b0))
    )
    return index


def first_beater_gpu(queries, actions, threshold):
    """:func:`first_beater_reference` on the GPU (kernel ``first_beater`` of ``mips.cu``).

    CuPy arrays in and out. Same arguments, returns and errors as the reference. Blocks walk
    the action tiles in increasing order and stop once every query of the block already has a
    hit before their next tile, so the cost is about proportional to the answer.
    """
    import cupy

    q, x = _check_pair("queries", queries, "actions", actions, cupy)
    thr = _check_threshold(threshold, q.shape[0], cupy)
    B, d = q.shape
    n = x.shape[0]
    out = cupy.full(B, n, dtype=cupy.int64)
    kernel = _module().get_function("first_beater")
    for b0, b1 in _query_slices(B):
        grid = _grid(b1 - b0, n)
        kernel(grid, (_TILE_N,), (q[b0:b1], x, thr[b0:b1], np.int64(b1 - b0), np.int64(n), np.int32(d), out[b0:b1]))
    return out


# --------------------------------------------------------------------------------------------
# Dispatchers
# --------------------------------------------------------------------------------------------


def _on_gpu(*arrays: Any) -> tuple[bool, bool]:
    """(use the GPU, return CuPy arrays)."""
    want_cupy = any(_is_cupy(a) for a in arrays)
    return gpu_available(), want_cupy


def _to_numpy_like(a: Any) -> Any:
    if _is_cupy(a):
        return a.get()
    return a


def mips_argmax(queries, actions):
    """Maximum inner product per query, ties to the lowest index; GPU when available.

    See :func:`mips_argmax_reference` for the contract (shapes, dtypes, errors). Runs
    :func:`mips_argmax_gpu` when :func:`icml25.common.gpu_available`, else the reference.
    Returns ``(index (B,) int64, score (B,) float32)`` as CuPy arrays if any input is a CuPy array,
    else as NumPy arrays.
    """
    use_gpu, want_cupy = _on_gpu(queries, actions)
    if use_gpu:  # pragma: no cover - needs a GPU
        index, score = mips_argmax_gpu(queries, actions)
        return (index, score) if want_cupy else (index.get(), score.get())
    return mips_argmax_reference(_to_numpy_like(queries), _to_numpy_like(actions))


def gumbel_max_sample(V, X, kappa: float, seed: int, offset: int = 0):
    """One Boltzmann draw ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)`` per query; GPU when available.

    See :func:`gumbel_max_sample_reference` for the contract. GPU and CPU use the same Philox
    stream, so a given ``(seed, offset)`` gives the same draws on both up to float32 near-ties.
    Returns (B,) int64, a CuPy array if ``V`` or ``X`` is one, else NumPy.
    """
    use_gpu, want_cupy = _on_gpu(V, X)
    if use_gpu:  # pragma: no cover - needs a GPU
        index = gumbel_max_sample_gpu(V, X, kappa, seed, offset)
        return index if want_cupy else index.get()
    return gumbel_max_sample_reference(_to_numpy_like(V), _to_numpy_like(X), kappa, seed, offset)


def first_beater(queries, actions, threshold):
    """Smallest ``j`` with ``<q_b, x_j> > threshold_b``, else ``n``; GPU when available.

    See :func:`first_beater_reference` for the contract. Returns (B,) int64, a CuPy array if any
    input is one, else NumPy.
    """
    use_gpu, want_cupy = _on_gpu(queries, actions, threshold)
    if use_gpu:  # pragma: no cover - needs a GPU
        out = first_beater_gpu(queries, actions, threshold)
        return out if want_cupy else out.get()
    return first_beater_reference(
        _to_numpy_like(queries), _to_numpy_like(actions), _to_numpy_like(threshold)
    )

"""Maximum-inner-product search kernels of chapter 02 (vMF exploration), with their CPU references.

Operations over an action table ``actions``/``X`` of shape ``(n, d)`` and a batch of queries
``queries``/``V`` of shape ``(B, d)``, row-major:

- :func:`mips_argmax`: ``argmax_i <q_b, x_i>`` per query (vMF-exp step 3: play the nearest
  neighbour of the sampled direction), ties to the lowest index, plus the maximal score.
- :func:`gumbel_max_sample`: one draw per query from the Boltzmann policy
  ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)`` by the Gumbel-max trick,
  ``argmax_i kappa <v_b, x_i> + G_{b,i}`` with ``G = -log(-log U)`` (the B-exp baseline).
- :func:`boltzmann_sample`: the same policy drawn from a NumPy ``rng``: exact inverse-CDF sampling
  on the CPU, :func:`gumbel_max_sample` seeded from ``rng`` on the GPU (same distribution, not the
  same draws).
- :func:`first_beater`: the smallest ``j`` with ``<q_b, x_j> > threshold_b`` (``n`` when none):
  the prefix-survival counter of the Monte Carlo probability curve (note, step 8: with
  ``threshold_b = <q_b, A>``, action ``A`` wins against the prefix ``X[:m]`` iff
  ``first_beater_b >= m``).
- :func:`uniform_action_sets` and :func:`prefix_boltzmann`: the random action sets of that curve,
  drawn on the device when there is one (an :class:`ActionSets`), and the exact Boltzmann
  probability of the fixed action in every prefix (CuPy array code, no CUDA kernel).

Each comes in three forms (see :mod:`icml25.kernels`): ``f_reference`` (NumPy, chunked over the
actions so memory stays bounded for ``n = 10^6``; the readable definition and the CPU path),
``f_gpu`` (the CuPy launcher of the CUDA kernels in ``mips.cu``) and ``f`` (the dispatcher). The
dispatchers take NumPy arrays and return NumPy arrays: they run the CUDA kernel when
:func:`icml25.common.gpu_available`, with the transfers done here, and the reference otherwise.
A caller that queries one large table many times wraps it once in an :class:`ActionTable`
(validated once; on a GPU its device copy is made on first use and kept).

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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_budget, check_int, check_real, check_rng
from icml25.common import gpu_available

__all__ = [
    "ActionTable",
    "mips_argmax",
    "mips_argmax_reference",
    "mips_argmax_gpu",
    "gumbel_max_sample",
    "gumbel_max_sample_reference",
    "gumbel_max_sample_gpu",
    "boltzmann_sample",
    "boltzmann_sample_reference",
    "first_beater",
    "first_beater_reference",
    "first_beater_gpu",
    "ActionSets",
    "uniform_action_sets",
    "uniform_action_sets_reference",
    "prefix_boltzmann",
    "philox4x32_10",
    "gumbel_noise_reference",
]

# Elements of one (B, chunk) score block in the references: 2^22 float32 = 16 MiB.
_CHUNK_ELEMENTS = 1 << 22
# The Gumbel reference also evaluates Philox on each block;
# smaller blocks stay in cache.
_GUMBEL_CHUNK_ELEMENTS = 1 << 13
# first_beater_reference scans blocks of doubling width starting here.
_FIRST_BEATER_MIN_WIDTH = 32

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
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# n <= 2^32 - 2: the packed keys of mips.cu hold a 32-bit index
_MAX_ACTIONS = _MASK32 - 1


# --------------------------------------------------------------------------------------
# Validation (public boundary), from icml25.checks
# --------------------------------------------------------------------------------------


def _float_rows(a: Any, name: str) -> np.ndarray:
    """``a`` as a C-contiguous 2-D float array within float32 range (the kernels' precision).

    float64 stays float64 (the references then compute in float64 where they say so); any
    other real dtype becomes float32.
    """
    arr = check_array(a, name, ndim=2, low=-_FLOAT32_MAX, high=_FLOAT32_MAX)
    if arr.dtype != np.float64:
        arr = arr.astype(np.float32, copy=False)
    return np.ascontiguousarray(arr)


class ActionTable:
    """An ``(n, d)`` action table validated once, for many kernel calls on the same actions.

    ``values`` is the validated host array: C-contiguous, finite, within float32 range, float64
    if given float64 and float32 otherwise; it is made read-only (do not modify the array it
    views). On a GPU the dispatchers copy it to the device (float32) on first use and keep that
    copy, so a table of ``10^7`` actions crosses the bus once, not once per call. Every
    dispatcher accepts an ``ActionTable`` wherever it accepts ``actions``/``X``.

    Args:
        actions: (n, d) real array, finite, ``1 <= n <= 2^32 - 2``, ``d >= 1``.
        name: the argument's name in error messages.

    Raises:
        TypeError: not an array of real numbers.
        ValueError: not 2-D, empty, non-finite or outside float32 range.
    """

    __slots__ = ("values", "_device", "_shape")

    def __init__(self, actions: ArrayLike, name: str = "actions") -> None:
        if isinstance(actions, ActionTable):
            self.values, self._device, self._shape = (
                actions.values,
                actions._device,
                actions._shape,
            )
            return
        x = _float_rows(actions, name)
        n, d = x.shape
        check_int(n, f"the number of rows n of {name}", low=1, high=_MAX_ACTIONS)
        check_int(d, f"the dimension d of {name}", low=1)
        x = x.view()
        x.flags.writeable = False
        self.values = x
        self._device = None
        self._shape = x.shape

    @classmethod
    def _device_only(cls, rows: Any) -> ActionTable:  # pragma: no cover - needs a GPU
        """A table of trusted float32 CuPy rows drawn on the device (``values`` is None: no host copy)."""
        table = cls.__new__(cls)
        table.values, table._device, table._shape = None, rows, tuple(rows.shape)
        return table

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, d)``."""
        return self._shape

    def __repr__(self) -> str:
        n, d = self.shape
        dtype = "float32, on the GPU only" if self.values is None else self.values.dtype
        return f"ActionTable(n={n}, d={d}, dtype={dtype})"

    def _on_device(self) -> Any:  # pragma: no cover - needs a GPU
        """The float32 CuPy copy of ``values`` (made once)."""
        if self._device is None:
            import cupy

            self._device = cupy.ascontiguousarray(
                cupy.asarray(self.values, dtype=cupy.float32)
            )
        return self._device


def _check_queries_actions(
    qname: str, queries: Any, aname: str, actions: Any
) -> tuple[np.ndarray, ActionTable]:
    """(queries (B, d) float rows, the actions as an :class:`ActionTable`), with a common ``d``."""
    q = _float_rows(queries, qname)
    x = actions if isinstance(actions, ActionTable) else ActionTable(actions, aname)
    if q.shape[1] != x.shape[1]:
        raise ValueError(
            f"{qname} and {aname} must have the same d; got {q.shape[1]} and {x.shape[1]}"
        )
    return q, x


def _check_threshold(threshold: Any, B: int, dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(
        check_array(
            threshold, "threshold", shape=(B,), low=-_FLOAT32_MAX, high=_FLOAT32_MAX
        ).astype(dtype, copy=False)
    )


def _gumbel_scalars(kappa: Any, seed: Any, offset: Any) -> tuple[np.float32, int, int]:
    """(kappa as float32 >= 0, seed, offset as Philox words in [0, 2^64))."""
    k = check_real(kappa, "kappa", low=0.0, high=_FLOAT32_MAX)
    return (
        np.float32(k),
        check_int(seed, "seed", low=0, high=2**64 - 1),
        check_int(offset, "offset", low=0, high=2**64 - 1),
    )


# --------------------------------------------------------------------------------------
# Philox-4x32-10 (NumPy), the generator of mips.cu
# --------------------------------------------------------------------------------------


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


def gumbel_noise_reference(
    seed: int, offset: int, b: np.ndarray, i: np.ndarray
) -> np.ndarray:
    """Standard Gumbel noise ``G_{b,i}`` exactly as ``mips.cu`` draws it (see the module docstring).

    Args:
        seed, offset: non-negative ints below 2^64 (key and high counter words).
        b: integer array of query indices, broadcastable with ``i``; values < 2^32.
        i: integer array of action indices; values < 2^32.

    Returns:
        float32 array of the broadcast shape of ``b`` and ``i``.
    """
    bb, ii = np.broadcast_arrays(
        np.asarray(b, dtype=np.uint32), np.asarray(i, dtype=np.uint32)
    )
    counter = (ii, bb, np.uint32(offset & _MASK32), np.uint32(offset >> 32))
    w = philox4x32_10(counter, (seed & _MASK32, seed >> 32))[0]
    # U = (2 (w >> 9) + 1) 2^-24: 23 random bits, exact in
    # float32, in [2^-24, 1 - 2^-24].
    u = ((w >> np.uint32(9)) * np.uint32(2) + np.uint32(1)).astype(
        np.float32
    ) * np.float32(2.0**-24)
    return -np.log(-np.log(u))


# --------------------------------------------------------------------------------------
# References (NumPy): the CPU path of every dispatcher
# --------------------------------------------------------------------------------------


def _chunk_size(B: int, budget: int) -> int:
    return max(1, budget // max(B, 1))


def mips_argmax_reference(
    queries: ArrayLike, actions: ArrayLike | ActionTable
) -> tuple[np.ndarray, np.ndarray]:
    """Maximum inner product per query, ties to the lowest index (NumPy reference).

    ``index_b = min argmax_i <q_b, x_i>``, ``score_b = <q_b, x_{index_b}>`` computed in float32,
    one BLAS matmul per chunk of actions (memory O(B * chunk), not O(B * n)).

    Args:
        queries: (B, d) real array (cast to float32), finite.
        actions: (n, d) real array (cast to float32), finite, n >= 1, or an :class:`ActionTable`.

    Returns:
        index: (B,) int64 in [0, n); score: (B,) float32.

    Raises:
        ValueError: not 2-D, d differs, n == 0 or n >= 2^32 - 1, non-finite entries or entries
            outside float32 range.
        TypeError: non-numeric dtype.
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    return _mips_argmax(
        q.astype(np.float32, copy=False), x.values.astype(np.float32, copy=False)
    )


def _mips_argmax(q: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """index_b = min argmax_i <q_b, x_i>, chunked over the actions (vMF-exp step 3)."""
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
    V: ArrayLike, X: ArrayLike | ActionTable, kappa: float, seed: int, offset: int = 0
) -> np.ndarray:
    """One Boltzmann draw per query by Gumbel-max, with the kernel's Philox noise (NumPy reference).

    ``a_b = argmax_i fl(fl(kappa * <v_b, x_i>) + G_{b,i})`` in float32, ties to the lowest index;
    ``G`` from :func:`gumbel_noise_reference`. Then ``P(a_b = i) = softmax(kappa X v_b)_i``
    (Gumbel-max trick), the B-exp policy of the paper (Sec. 2; the note's step 5).

    Cost: the NumPy Philox takes about 0.1-0.5 us per (b, i) draw on one core (B * n draws), so
    this reference suits B * n up to ~10^7; the GPU kernel is the fast path.

    Args:
        V: (B, d) real array (cast to float32), finite; states/queries.
        X: (n, d) real array (cast to float32), finite, n >= 1, or an :class:`ActionTable`.
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
    q, x = _check_queries_actions("V", V, "X", X)
    kappa32, seed, offset = _gumbel_scalars(kappa, seed, offset)
    return _gumbel_max(
        q.astype(np.float32, copy=False),
        x.values.astype(np.float32, copy=False),
        kappa32,
        seed,
        offset,
    )


def _gumbel_max(
    q: np.ndarray, x: np.ndarray, kappa32: np.float32, seed: int, offset: int
) -> np.ndarray:
    """a_b = argmax_i kappa <v_b, x_i> + G_{b,i}, G Philox-Gumbel noise (Gumbel-max trick)."""
    B, n = q.shape[0], x.shape[0]
    best_idx = np.zeros(B, dtype=np.int64)
    best = np.full(B, -np.inf, dtype=np.float32)
    chunk = _chunk_size(B, _GUMBEL_CHUNK_ELEMENTS)
    rows = np.arange(B)
    b_col = rows[:, None]
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        logits = kappa32 * (q @ x[start:stop].T)  # (B, c) float32, rounded once
        scores = logits + gumbel_noise_reference(
            seed, offset, b_col, np.arange(start, stop)[None, :]
        )
        j = scores.argmax(axis=1)
        s = scores[rows, j]
        better = (s > best) | (start == 0)
        best = np.where(better, s, best)
        best_idx = np.where(better, j + start, best_idx)
    return best_idx


def boltzmann_sample_reference(
    V: ArrayLike, X: ArrayLike | ActionTable, kappa: float, rng: np.random.Generator
) -> np.ndarray:
    """One exact Boltzmann draw per query, ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)``, from ``rng``.

    Inverse-CDF sampling of the stable softmax (the B-exp policy of the paper, Sec. 3), in
    blocks of queries so memory stays O(chunk). The scores are computed in X's precision
    (float32 X: single-precision BLAS, as a production system would; float64 X: float64), the
    CDF is accumulated in float64. ``V`` and the rows of ``X`` are used as given.

    Args:
        V: (B, d) real array, finite.
        X: (n, d) real array, finite, n >= 1, or an :class:`ActionTable`.
        kappa: finite inverse temperature >= 0.
        rng: numpy Generator; one ``rng.random`` draw per query.

    Returns:
        (B,) int64 action indices in [0, n).

    Raises:
        ValueError: shapes as in :func:`mips_argmax_reference`, negative or non-finite kappa.
        TypeError: non-numeric arrays, non-real kappa, rng not a numpy Generator.
    """
    q, x = _check_queries_actions("V", V, "X", X)
    kappa = check_real(kappa, "kappa", low=0.0, high=_FLOAT32_MAX)
    return _inverse_cdf_sample(q, x.values, kappa, check_rng(rng))


def _inverse_cdf_sample(
    V: np.ndarray, X: np.ndarray, kappa: float, rng: np.random.Generator
) -> np.ndarray:
    """a_b = min{i : sum_{j<=i} e^{kappa (<v_b, x_j> - max_j <v_b, x_j>)} >= u_b Z_b}, u_b ~ U(0, 1)."""
    B, n = V.shape[0], X.shape[0]
    dt = np.float32 if X.dtype == np.float32 else np.float64
    out = np.empty(B, dtype=np.int64)
    rows = max(1, _CHUNK_ELEMENTS // max(n, 1))
    Xt = X.astype(dt, copy=False).T
    Vq = V.astype(dt)
    for s in range(0, B, rows):
        logits = Vq[s : s + rows] @ Xt
        logits -= logits.max(axis=1, keepdims=True)
        logits *= dt(kappa)
        np.exp(logits, out=logits)
        cdf = np.cumsum(logits, axis=1, dtype=np.float64)
        u = rng.random(cdf.shape[0]) * cdf[:, -1]
        for r in range(cdf.shape[0]):  # first index with cdf >= u
            out[s + r] = min(int(np.searchsorted(cdf[r], u[r], side="left")), n - 1)
    return out


def first_beater_reference(
    queries: ArrayLike, actions: ArrayLike | ActionTable, threshold: ArrayLike
) -> np.ndarray:
    """Smallest ``j`` with ``<q_b, x_j> > threshold_b``, else ``n`` (NumPy reference).

    The prefix-survival counter of the Monte Carlo curve (note, step 8): with
    ``threshold_b = <v_b, A>`` the fixed action ``A`` beats every prefix ``X_1..X_m`` with
    ``m <= first_beater_b`` (0-based: the prefix ``X[:m]``). Computed in float64 when queries and
    actions are both float64, in float32 otherwise (the GPU kernel is float32 only).

    Args:
        queries: (B, d) real array, finite.
        actions: (n, d) real array, finite, n >= 1, or an :class:`ActionTable`.
        threshold: (B,) real array, finite.

    Returns:
        (B,) int64 in [0, n].

    Raises:
        ValueError: shapes/finiteness as in :func:`mips_argmax_reference`; threshold not (B,).
        TypeError: non-numeric dtype.
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    dt = np.float64 if q.dtype == x.values.dtype == np.float64 else np.float32
    thr = _check_threshold(threshold, q.shape[0], dt)
    return _first_beater(q.astype(dt, copy=False), x.values.astype(dt, copy=False), thr)


def _first_beater(Q: np.ndarray, X: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """j_s = min{j : <Q_s, X_j> > thr_s} (len(X) if none): the prefix-survival counter.

    Scans X in blocks of doubling width and keeps only the queries no action has beaten yet.
    Under vMF-exp a query survives j actions with probability ~ c / j, so the total work is
    O(S c log n) inner products instead of the S n of a full scan; exact all the same.
    """
    S, n = Q.shape[0], X.shape[0]
    out = np.full(S, n, dtype=np.int64)
    alive = np.arange(S)
    start, width = 0, _FIRST_BEATER_MIN_WIDTH
    while alive.size and start < n:
        width = min(width, max(_FIRST_BEATER_MIN_WIDTH, _CHUNK_ELEMENTS // alive.size))
        stop = min(n, start + width)
        hit = (Q[alive] @ X[start:stop].T) > thr[alive, None]
        beaten = hit.any(axis=1)
        # argmax of bool = first True
        out[alive[beaten]] = start + np.argmax(hit[beaten], axis=1)
        alive = alive[~beaten]
        start, width = stop, 2 * width
    return out


# --------------------------------------------------------------------------------------
# Random action sets of the Monte Carlo curve, drawn where the kernels run
# --------------------------------------------------------------------------------------


class ActionSets:
    """``n_sets`` independent tables of ``n`` unit rows in R^d, held where the kernels run.

    Made by :func:`uniform_action_sets`. :meth:`table` gives set ``t`` as an :class:`ActionTable`
    (for :func:`first_beater`), :func:`prefix_boltzmann` reduces all of them. The array is private:
    float64 NumPy on the CPU, float32 CuPy on a GPU (so ``10^6`` actions per set never cross the bus).
    """

    __slots__ = ("_x", "_on_gpu")

    def __init__(self, x: Any, on_gpu: bool) -> None:
        self._x = x
        self._on_gpu = on_gpu

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(n_sets, n, d)``."""
        return tuple(self._x.shape)

    def table(self, t: int) -> ActionTable:
        """Set ``t`` (``0 <= t < n_sets``) as an :class:`ActionTable`; ValueError if it has no rows."""
        t = check_int(t, "t", low=0, high=self.shape[0] - 1)
        if self._on_gpu:  # pragma: no cover - needs a GPU
            check_int(self.shape[1], "the number of actions n of the set", low=1)
            return ActionTable._device_only(self._x[t])
        return ActionTable(self._x[t])


def _check_sets_size(n_sets: Any, n: Any, d: Any, rng: Any) -> tuple[int, int, int]:
    n_sets, n, d = (
        check_int(n_sets, "n_sets", low=0),
        check_int(n, "n", low=0),
        check_int(d, "d", low=1),
    )
    check_rng(rng)
    check_budget(
        f"uniform_action_sets(n_sets={n_sets}, n={n}, d={d})",
        n_bytes=16.0 * n_sets * n * d,
    )
    return n_sets, n, d


def _unit_normalise(xp: Any, z: Any) -> Any:
    """X = z / |z| row by row (axis 2): for z ~ N(0, I_d), X is uniform on S^{d-1}."""
    z /= xp.linalg.norm(z, axis=2, keepdims=True)
    return z


def uniform_action_sets_reference(
    n_sets: int, n: int, d: int, rng: np.random.Generator
) -> ActionSets:
    """``n_sets`` sets of ``n`` actions uniform on S^{d-1}: normalised ``rng.standard_normal`` draws.

    The draws are ``rng.standard_normal((n_sets, n, d))`` in float64, each row divided by its norm.

    Raises:
        ValueError: a negative size, d < 1. TypeError: rng not a numpy Generator.
        TooLargeError: the sets cannot fit in memory.
    """
    return _uniform_sets_host(*_check_sets_size(n_sets, n, d, rng), rng)


def _uniform_sets_host(
    n_sets: int, n: int, d: int, rng: np.random.Generator
) -> ActionSets:
    return ActionSets(
        _unit_normalise(np, rng.standard_normal((n_sets, n, d))), on_gpu=False
    )


def uniform_action_sets(
    n_sets: int, n: int, d: int, rng: np.random.Generator
) -> ActionSets:
    """``n_sets`` sets of ``n`` actions uniform on S^{d-1}, drawn where the kernels run.

    CPU: :func:`uniform_action_sets_reference` (float64, from ``rng``). GPU: the same law in
    float32 on the device, from a CuPy generator keyed by one ``rng.integers`` draw (other
    numbers than the CPU's).

    Raises:
        As :func:`uniform_action_sets_reference`.
    """
    n_sets, n, d = _check_sets_size(n_sets, n, d, rng)
    if gpu_available():  # pragma: no cover - needs a GPU
        import cupy

        g = cupy.random.default_rng(int(rng.integers(0, 2**63 - 1)))
        return ActionSets(
            _unit_normalise(
                cupy, g.standard_normal((n_sets, n, d), dtype=cupy.float32)
            ),
            on_gpu=True,
        )
    return _uniform_sets_host(n_sets, n, d, rng)


def prefix_boltzmann(
    sets: ActionSets, V: ArrayLike, kappa: float, alpha: float
) -> np.ndarray:
    """The exact B-exp probability of a fixed action A in every prefix of every set (prefix trick).

    For set ``t`` with state ``V_t`` and ``<V_t, A> = alpha``: ``P[t, 0] = 1`` and
    ``P[t, m] = 1 / (1 + sum_{j < m} exp(kappa (<X_{t,j}, V_t> - alpha)))``, the softmax weight
    of A in ``{A, X_{t,1}, ..., X_{t,m}}`` (Sec. 5 of the paper; computed where the sets are).

    Args:
        sets: from :func:`uniform_action_sets`, shape ``(n_sets, n, d)``.
        V: (n_sets, d) states, finite (used as given).
        kappa: inverse temperature >= 0.
        alpha: the cosine ``<V_t, A>``, in [-1, 1].

    Returns:
        (n_sets, n + 1) float64 NumPy array.

    Raises:
        TypeError: sets not an ActionSets. ValueError: V of the wrong shape, kappa or alpha out of range.
    """
    if not isinstance(sets, ActionSets):
        raise TypeError(
            f"sets must be an ActionSets (from uniform_action_sets), got {type(sets).__name__}"
        )
    n_sets, _, d = sets.shape
    V = check_array(V, "V", shape=(n_sets, d))
    kappa = check_real(kappa, "kappa", low=0.0)
    alpha = check_real(alpha, "alpha", low=-1.0, high=1.0)
    if sets._on_gpu:  # pragma: no cover - needs a GPU
        import cupy

        return cupy.asnumpy(
            _prefix_boltzmann(
                cupy, sets._x, cupy.asarray(V, dtype=sets._x.dtype), kappa, alpha
            )
        )
    return _prefix_boltzmann(
        np, sets._x, np.asarray(V, dtype=sets._x.dtype), kappa, alpha
    )


def _prefix_boltzmann(xp: Any, X: Any, V: Any, kappa: float, alpha: float) -> Any:
    """P[t, m] = 1 / (1 + sum_{j < m} exp(kappa (<X_{t,j}, V_t> - alpha))), P[t, 0] = 1."""
    dots = xp.einsum("tnd,td->tn", X, V).astype(xp.float64)
    with np.errstate(over="ignore"):
        w = xp.exp(kappa * (dots - alpha))
    cur = xp.ones((X.shape[0], X.shape[1] + 1))
    cur[:, 1:] = 1.0 / (1.0 + xp.cumsum(w, axis=1))
    return cur


# --------------------------------------------------------------------------------------
# GPU launchers (CuPy + mips.cu)
# --------------------------------------------------------------------------------------


def _module() -> Any:  # pragma: no cover - needs a GPU
    from icml25.kernels import load_module

    return load_module("mips")


def _sm_count() -> int:  # pragma: no cover - needs a GPU
    import cupy

    device = cupy.cuda.Device()
    if device.id not in _SM_COUNT:
        _SM_COUNT[device.id] = int(
            cupy.cuda.runtime.getDeviceProperties(device.id)["multiProcessorCount"]
        )
    return _SM_COUNT[device.id]


_SM_COUNT: dict[int, int] = {}


def _grid(B: int, n: int) -> tuple[int, int]:  # pragma: no cover - needs a GPU
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


def _device_pair(
    q: np.ndarray, x: ActionTable
) -> tuple[Any, Any]:  # pragma: no cover - needs a GPU
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(q, dtype=cupy.float32)), x._on_device()


def _launch_keys(
    kernel_name: str, q: Any, x: Any, extra=lambda b0: ()
) -> tuple[Any, Any]:  # pragma: no cover
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
        args = (
            q[b0:b1],
            x,
            np.int64(b1 - b0),
            np.int64(n),
            np.int32(d),
            *extra(b0),
            keys[b0:b1],
        )
        kernel(_grid(b1 - b0, n), (_TILE_N,), args)
    index = cupy.empty(B, dtype=cupy.int64)
    score = cupy.empty(B, dtype=cupy.float32)
    if B:
        decode((-(-B // 256),), (256,), (keys, np.int64(B), index, score))
    return index, score


def _mips_argmax_device(
    q: np.ndarray, x: ActionTable
) -> tuple[Any, Any]:  # pragma: no cover - needs a GPU
    return _launch_keys("mips_argmax_keys", *_device_pair(q, x))


def _gumbel_max_device(
    q: np.ndarray, x: ActionTable, kappa32: np.float32, seed: int, offset: int
) -> Any:  # pragma: no cover
    qd, xd = _device_pair(q, x)
    index, _ = _launch_keys(
        "gumbel_max_keys",
        qd,
        xd,
        lambda b0: (kappa32, np.uint64(seed), np.uint64(offset), np.int64(b0)),
    )
    return index


def _first_beater_device(
    q: np.ndarray, x: ActionTable, thr: np.ndarray
) -> Any:  # pragma: no cover - needs a GPU
    import cupy

    qd, xd = _device_pair(q, x)
    thr_d = cupy.ascontiguousarray(cupy.asarray(thr, dtype=cupy.float32))
    B, d = qd.shape
    n = xd.shape[0]
    out = cupy.full(B, n, dtype=cupy.int64)
    kernel = _module().get_function("first_beater")
    for b0, b1 in _query_slices(B):
        grid = _grid(b1 - b0, n)
        kernel(
            grid,
            (_TILE_N,),
            (
                qd[b0:b1],
                xd,
                thr_d[b0:b1],
                np.int64(b1 - b0),
                np.int64(n),
                np.int32(d),
                out[b0:b1],
            ),
        )
    return out


def mips_argmax_gpu(
    queries: ArrayLike, actions: ArrayLike | ActionTable
) -> tuple[Any, Any]:  # pragma: no cover
    """:func:`mips_argmax_reference` on the GPU (kernel ``mips_argmax_keys`` of ``mips.cu``).

    Returns CuPy arrays (for the kernel tests; :func:`mips_argmax` returns NumPy). Inputs are
    validated on the host and copied to the device. Same contract, arguments and errors as the
    reference; indices agree exactly and scores to float32 rounding (the kernel sums ``<q, x>``
    sequentially over d with FMAs, BLAS in another order).
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    return _mips_argmax_device(q, x)


def gumbel_max_sample_gpu(
    V: ArrayLike, X: ArrayLike | ActionTable, kappa: float, seed: int, offset: int = 0
) -> Any:  # pragma: no cover - needs a GPU
    """:func:`gumbel_max_sample_reference` on the GPU (kernel ``gumbel_max_keys`` of ``mips.cu``).

    Returns a CuPy array. Same arguments, returns and errors as the reference, and the same
    Philox noise, so both return the same draws except at float32 near-ties.
    """
    q, x = _check_queries_actions("V", V, "X", X)
    return _gumbel_max_device(q, x, *_gumbel_scalars(kappa, seed, offset))


def first_beater_gpu(
    queries: ArrayLike, actions: ArrayLike | ActionTable, threshold: ArrayLike
) -> Any:  # pragma: no cover - needs a GPU
    """:func:`first_beater_reference` on the GPU (kernel ``first_beater`` of ``mips.cu``), in float32.

    Returns a CuPy array. Same arguments and errors as the reference. Blocks walk the action
    tiles in increasing order and stop once every query of the block already has a hit before
    their next tile, so the cost is about proportional to the answer.
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    return _first_beater_device(
        q, x, _check_threshold(threshold, q.shape[0], np.float32)
    )


# --------------------------------------------------------------------------------------
# Dispatchers: NumPy in, NumPy out; the CUDA kernel when a GPU is
# usable, else the reference
# --------------------------------------------------------------------------------------


def mips_argmax(
    queries: ArrayLike, actions: ArrayLike | ActionTable
) -> tuple[np.ndarray, np.ndarray]:
    """Maximum inner product per query, ties to the lowest index; GPU when available.

    See :func:`mips_argmax_reference` for the contract (shapes, dtypes, errors). Runs the CUDA
    kernel when :func:`icml25.common.gpu_available`, else the reference.

    Returns:
        ``(index (B,) int64, score (B,) float32)``, NumPy arrays.
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    if gpu_available():  # pragma: no cover - needs a GPU
        index, score = _mips_argmax_device(q, x)
        return index.get(), score.get()
    return _mips_argmax(
        q.astype(np.float32, copy=False), x.values.astype(np.float32, copy=False)
    )


def gumbel_max_sample(
    V: ArrayLike, X: ArrayLike | ActionTable, kappa: float, seed: int, offset: int = 0
) -> np.ndarray:
    """One Boltzmann draw ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)`` per query; GPU when available.

    See :func:`gumbel_max_sample_reference` for the contract. GPU and CPU use the same Philox
    stream, so a given ``(seed, offset)`` gives the same draws on both up to float32 near-ties.

    Returns:
        (B,) int64 NumPy array.
    """
    q, x = _check_queries_actions("V", V, "X", X)
    kappa32, seed, offset = _gumbel_scalars(kappa, seed, offset)
    if gpu_available():  # pragma: no cover - needs a GPU
        return _gumbel_max_device(q, x, kappa32, seed, offset).get()
    return _gumbel_max(
        q.astype(np.float32, copy=False),
        x.values.astype(np.float32, copy=False),
        kappa32,
        seed,
        offset,
    )


def boltzmann_sample(
    V: ArrayLike, X: ArrayLike | ActionTable, kappa: float, rng: np.random.Generator
) -> np.ndarray:
    """One Boltzmann draw ``P(i | v_b) ∝ exp(kappa <v_b, x_i>)`` per query from ``rng``; GPU when available.

    CPU: :func:`boltzmann_sample_reference` (exact inverse CDF, one ``rng.random`` per query).
    GPU: the fused Gumbel-max kernel (:func:`gumbel_max_sample`, float32) keyed by one
    ``rng.integers`` draw. Both sample the same distribution; they do not give the same draws
    (use :func:`gumbel_max_sample` for draws that agree across devices).

    Returns:
        (B,) int64 NumPy array of action indices in [0, n).

    Raises:
        As :func:`boltzmann_sample_reference`.
    """
    q, x = _check_queries_actions("V", V, "X", X)
    kappa = check_real(kappa, "kappa", low=0.0, high=_FLOAT32_MAX)
    rng = check_rng(rng)
    if gpu_available():  # pragma: no cover - needs a GPU
        seed = int(rng.integers(0, 2**63 - 1))
        return (
            _gumbel_max_device(q, x, np.float32(kappa), seed, 0).get().astype(np.int64)
        )
    return _inverse_cdf_sample(q, x.values, kappa, rng)


def first_beater(
    queries: ArrayLike, actions: ArrayLike | ActionTable, threshold: ArrayLike
) -> np.ndarray:
    """Smallest ``j`` with ``<q_b, x_j> > threshold_b``, else ``n``; GPU when available.

    See :func:`first_beater_reference` for the contract. The GPU kernel computes in float32; the
    reference in float64 when queries and actions are float64 (results then differ only where
    a score is within float32 rounding of its threshold).

    Returns:
        (B,) int64 NumPy array in [0, n].
    """
    q, x = _check_queries_actions("queries", queries, "actions", actions)
    if gpu_available():  # pragma: no cover - needs a GPU
        return _first_beater_device(
            q, x, _check_threshold(threshold, q.shape[0], np.float32)
        ).get()
    dt = np.float64 if q.dtype == x.values.dtype == np.float64 else np.float32
    thr = _check_threshold(threshold, q.shape[0], dt)
    return _first_beater(q.astype(dt, copy=False), x.values.astype(dt, copy=False), thr)

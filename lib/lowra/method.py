"""LowRA's method: the mapping & threshold learner and the precision assigner (Sec. 4.1-4.2).

LowRA (Zhou et al., ICML 2025, arXiv 2502.08141) quantizes every linear weight ``W (m, n)`` of a
frozen base model post-training and data-free, then fine-tunes LoRA adapters on top of it. This
module holds the two learned parts:

- (L2) one fixed NormalFloat codebook for every channel -> a *mapping and threshold learner*:
  per output channel ``c`` and precision ``b in {1, 2, 4}``, a weighted Lloyd-Max quantizer in the
  block-normalised space (:func:`learn_channel_codebooks`);
- (L1) one precision per tensor -> a *precision assigner*: a two-level integer program that gives
  each output channel its own ``b_c`` under a global budget of ``target_bits`` bits per parameter
  (:func:`assign_precision`, exact version :func:`assign_precision_exact`).

The packed storage (L3) and LoftQ live in :mod:`icml25.lowra.packed`. Details the paper does not
pin down are reconstructions and are marked *(reconstruction)* in the docstrings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_budget, check_choice, check_int, check_real
from icml25.kernels import lowbit
from icml25.lowra.defaults import DEFAULTS

__all__ = [
    "nf_levels",
    "lloyd_max_weighted",
    "ChannelCodebooks",
    "learn_channel_codebooks",
    "assign_precision",
    "assign_precision_exact",
    "assignment_bits",
]


# --------------------------------------------------------------------------------------
# the paper's own argument rules, built on icml25.checks
# --------------------------------------------------------------------------------------
def _check_bits(bits: Any, name: str = "bits") -> int:
    """One precision ``b``: an integer in :data:`icml25.kernels.lowbit.ALLOWED_BITS` (1, 2, 4)."""
    return check_choice(check_int(bits, name), name, lowbit.ALLOWED_BITS)


def _check_bits_tuple(bits: Any) -> tuple[int, ...]:
    """Candidate precisions: distinct values of (1, 2, 4), returned sorted ascending."""
    if isinstance(bits, (int, np.integer)):
        bits = (bits,)
    out = tuple(_check_bits(b) for b in bits)
    if len(out) == 0 or len(set(out)) != len(out):
        raise ValueError(
            f"bits must be a non-empty tuple of distinct values from {lowbit.ALLOWED_BITS}, got {bits!r}"
        )
    return tuple(sorted(out))


# --------------------------------------------------------------------------------------
# NormalFloat codebooks (QLoRA) -- the fixed-codebook baseline and the
# learner's starting point
# --------------------------------------------------------------------------------------
def nf_levels(bits: int) -> np.ndarray:
    """NormalFloat-``bits`` codebook in [-1, 1], built like QLoRA's NF4.

    For ``b >= 2``: ``2^(b-1)`` positive and ``2^(b-1) - 1`` negative standard-normal quantiles
    ``Phi^{-1}(p)`` at ``p`` evenly spaced between 1/2 and an outer probability ``delta_b``, each
    half divided by its largest magnitude, plus an exact 0 (asymmetric halves, QLoRA App. E).
    QLoRA uses ``delta_4 = (1 - 1/30 + 1 - 1/32) / 2 = 0.9677``; we use the same formula
    ``delta_b = (1 - 1/(2(2^b - 1)) + 1 - 1/(2^(b+1))) / 2`` for every ``b`` *(reconstruction:
    QLoRA defines NF4 only; for b = 4 this reproduces bitsandbytes' NF4 table)*.
    For ``b = 1`` there is no standard NF1: we use ``+-E|Z| / Phi^{-1}(delta_4) = +-0.432``, the
    1-bit Lloyd-Max quantizer of a normal (``E|Z| = sqrt(2/pi)``) in NF4's normalisation
    *(reconstruction)*.

    Args:
        bits: 1, 2 or 4.

    Returns:
        (2**bits,) float64, strictly increasing, in [-1, 1], containing 0 exactly for b >= 2.

    Raises:
        ValueError: bits not in {1, 2, 4}.
    """
    from scipy.stats import norm

    b = _check_bits(bits)
    delta = 0.5 * ((1 - 1 / (2 * (2**b - 1))) + (1 - 1 / 2 ** (b + 1)))
    if b == 1:
        delta4 = 0.5 * ((1 - 1 / 30) + (1 - 1 / 32))
        c = math.sqrt(2 / math.pi) / norm.ppf(delta4)
        return np.array([-c, c])
    half = 2 ** (b - 1)
    pos = norm.ppf(np.linspace(delta, 0.5, half + 1)[:-1])
    neg = -norm.ppf(np.linspace(delta, 0.5, half)[:-1])
    levels = np.concatenate([pos / pos.max(), [0.0], neg / np.abs(neg).max()])
    return np.sort(levels)


# --------------------------------------------------------------------------------------
# Weighted Lloyd-Max, batched over rows (the mapping & threshold learner, Sec. 4.1)
# --------------------------------------------------------------------------------------
def _ordered_u32(x32: np.ndarray) -> np.ndarray:
    """Order-preserving map float32 -> uint64 in [0, 2^32) (IEEE bits, negatives flipped)."""
    # + 0 turns -0.0 into +0.0
    i = (np.asarray(x32, dtype=np.float32) + np.float32(0)).view(np.int32)
    i = i ^ ((i >> 31) & np.int32(0x7FFFFFFF))  # negative floats: reverse their order
    return (i.astype(np.int64) + 2**31).astype(np.uint64)


class _RowLocator:
    """Exact ``#{i : xs[r, i] <= t[r, k]}`` for float32 rows sorted ascending, for all rows at once.

    Each element becomes the integer key ``r * 2^32 + order(x)``, so the flattened keys are globally
    sorted and one ``np.searchsorted`` answers every row's queries; a float64 threshold ``t`` is
    replaced by the largest float32 ``<= t``, which leaves ``x <= t`` unchanged for float32 ``x``.
    """

    def __init__(self, xs32: np.ndarray):
        self.R, self.N = xs32.shape
        self.row_key = (np.arange(self.R, dtype=np.uint64) << np.uint64(32))[:, None]
        self.keys = (self.row_key + _ordered_u32(xs32)).ravel()
        self.base = (np.arange(self.R, dtype=np.int64) * self.N)[:, None]

    def __call__(self, t: np.ndarray) -> np.ndarray:
        tf = t.astype(np.float32)
        tf = np.where(
            tf.astype(np.float64) > t, np.nextafter(tf, np.float32(-np.inf)), tf
        )
        q = self.row_key + _ordered_u32(tf)
        return (
            np.searchsorted(self.keys, q.ravel(), side="right").reshape(t.shape)
            - self.base
        )


def _bin_sums(C: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Segment sums from a prefix-sum table ``C (R, N+1)`` and bin edges ``bounds (R, L+1)``."""
    R, N1 = C.shape
    Cb = C.ravel().take(bounds + (np.arange(R, dtype=np.int64) * N1)[:, None])
    return Cb[:, 1:] - Cb[:, :-1]


def _lloyd_rows(
    locate: Callable[[np.ndarray], np.ndarray],
    prefix: tuple[np.ndarray, np.ndarray, np.ndarray],
    levels0: np.ndarray,
    n_steps: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Weighted Lloyd-Max on every row at once.

    ``locate(t)`` counts the elements <= t in each sorted row (R, N); ``prefix = (Cw, Cwx, Cwxx)`` prefix sums of ``w``, ``w x``,
    ``w x^2`` along the sorted rows (each (R, N+1)); ``levels0 (R, L)`` sorted initial levels.

    Each iteration: thresholds t_k = (q_k + q_{k+1}) / 2 (nearest-level assignment, a value on a
    threshold goes to the lower bin), weighted SSE of the current levels, then the centroid
    update q_k = sum_{i in k} w_i x_i / sum_{i in k} w_i (an empty bin keeps its level).

    Returns ``(levels (R, L), bounds (R, L+1), sse (R,), history)``: the last levels evaluated,
    their bin edges in the sorted rows, their weighted SSE, and the SSE of every iteration.
    """
    Cw, Cwx, Cwxx = prefix
    R, N = Cw.shape[0], Cw.shape[1] - 1
    levels = levels0.astype(np.float64).copy()
    zeros = np.zeros((R, 1), dtype=np.int64)
    full = np.full((R, 1), N, dtype=np.int64)
    history: list[np.ndarray] = []
    prev = np.full(R, np.inf)
    for it in range(n_steps + 1):
        t = 0.5 * (levels[:, 1:] + levels[:, :-1])
        bounds = np.concatenate([zeros, locate(t), full], axis=1)
        Sw, Swx, Swxx = (_bin_sums(C, bounds) for C in (Cw, Cwx, Cwxx))
        # sum_{i in k} w_i (x_i - q_k)^2, expanded; clipped at 0 against round-off
        sse = np.maximum(Swxx - 2 * levels * Swx + levels**2 * Sw, 0.0).sum(axis=1)
        history.append(sse)
        if it == n_steps:
            break
        if it > 0 and ((prev - sse) <= tol * np.maximum(prev, 1e-300)).all():
            break
        prev = sse
        safe = np.where(Sw > 0, Sw, 1.0)
        levels = np.sort(np.where(Sw > 0, Swx / safe, levels), axis=1)
    return levels, bounds, history[-1], history


def _prefix(
    xs: np.ndarray, ws: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    R = xs.shape[0]
    out = []
    for v in (ws, ws * xs, ws * xs * xs):
        C = np.zeros((R, xs.shape[1] + 1))
        np.cumsum(v, axis=1, out=C[:, 1:])
        out.append(C)
    return tuple(out)  # type: ignore[return-value]


def lloyd_max_weighted(
    x: ArrayLike,
    w: ArrayLike,
    init_levels: ArrayLike,
    n_steps: int = DEFAULTS.lloyd_n_steps,
    tol: float = DEFAULTS.lloyd_tol,
    return_history: bool = False,
) -> (
    tuple[np.ndarray, np.ndarray, float]
    | tuple[np.ndarray, np.ndarray, float, np.ndarray]
):
    """Weighted Lloyd-Max quantizer of one sample (the LowRA mapping/threshold learner, Sec. 4.1).

    Minimises ``sum_i w_i (x_i - q_{k(i)})^2`` over levels ``q_0 < ... < q_{L-1}`` by alternating
    the assignment ``k(i) = #{k : t_k < x_i}`` with ``t_k = (q_k + q_{k+1}) / 2`` (Max 1960) and the
    weighted-centroid ("mapping") update ``q_k = sum_{i in k} w_i x_i / sum_{i in k} w_i``
    (Lloyd 1982). Both steps never increase the weighted SSE, so the SSE sequence is
    non-increasing. An empty bin keeps its previous level. Stops after ``n_steps`` updates or when
    the relative SSE decrease falls below ``tol`` *(reconstruction: the paper states no rule)*.

    Args:
        x: (N,) real values (LowRA: block-normalised weights in [-1, 1]).
        w: (N,) non-negative weights (LowRA: group absmax to the power ``weight_power``).
        init_levels: (L,) initial levels, L >= 2 (LowRA: NormalFloat levels).
        n_steps: maximum number of updates, >= 0.
        tol: relative-decrease stopping tolerance, >= 0.
        return_history: also return the SSE of every iteration.

    Returns:
        ``(levels (L,), thresholds (L-1,), sse)`` float64 (plus the (iterations,) SSE history when
        ``return_history``); ``sse`` is the weighted SSE of the returned levels.

    Raises:
        TypeError: x, w or init_levels not real arrays, n_steps not an integer, tol not a number.
        ValueError: shapes differ, non-finite values, negative weights, fewer than 2 levels,
            n_steps < 0, tol not finite and >= 0.
    """
    x = check_array(x, "x", dtype=np.float64, min_size=1).ravel()
    w = check_array(w, "w", dtype=np.float64, low=0.0).ravel()
    q0 = check_array(init_levels, "init_levels", dtype=np.float64, min_size=2).ravel()
    if x.shape != w.shape:
        raise ValueError(
            f"x and w must have the same shape, got {x.shape} and {w.shape}"
        )
    n_steps, tol = check_int(n_steps, "n_steps", low=0), check_real(tol, "tol", low=0.0)
    order = np.argsort(x, kind="stable")
    xs, ws = x[order][None], w[order][None]
    xs1 = xs[0]
    levels, _, sse, hist = _lloyd_rows(
        lambda t: np.searchsorted(xs1, t[0], side="right")[None],
        _prefix(xs, ws),
        np.sort(q0)[None],
        int(n_steps),
        float(tol),
    )
    out = (levels[0], 0.5 * (levels[0, 1:] + levels[0, :-1]), float(sse[0]))
    if return_history:
        return (*out, np.array([h[0] for h in hist]))
    return out


@dataclass
class ChannelCodebooks:
    """Per-output-channel codebooks of one weight matrix for each candidate precision.

    Attributes:
        bits: the candidate precisions, e.g. (1, 2, 4).
        levels: b -> (m, 2^b) float64 levels ("mapping") in [-1, 1], sorted per row.
        thresholds: b -> (m, 2^b - 1) float64 decision thresholds (midpoints of the levels).
        errors: (m, len(bits)) float64 e_c(b): the real-space SSE sum_j (W_cj - W_hat_cj)^2 of row c
            quantized with its own b-bit codebook (exact float64 codebook and scales).
        n_params: (m,) int64 parameters per channel (n).
        group: block size g.
        shape: (m, n).
    """

    bits: tuple[int, ...]
    levels: dict[int, np.ndarray]
    thresholds: dict[int, np.ndarray]
    errors: np.ndarray
    n_params: np.ndarray
    group: int
    shape: tuple[int, int]

    def tables(self, row_bits: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(lut (m, 16), thresholds (m, 15))`` float32 for a precision map, in the packed layout.

        Raises:
            ValueError: ``row_bits`` not of shape (m,) or using a precision not in ``self.bits``.
        """
        m = self.shape[0]
        row_bits = check_array(
            row_bits, "row_bits", kind="number", shape=(m,), finite=False
        )
        lut = np.zeros((m, 16), dtype=np.float32)
        thr = np.full((m, 15), np.inf, dtype=np.float32)
        for b in np.unique(row_bits):
            b = int(b)
            if b not in self.levels:
                raise ValueError(
                    f"row_bits uses b={b}, which these codebooks were not learned for ({self.bits})"
                )
            rows = row_bits == b
            lut[rows, : 2**b] = self.levels[b][rows]
            thr[rows, : 2**b - 1] = self.thresholds[b][rows]
        return lut, thr

    def sse(self, row_bits: ArrayLike) -> float:
        """Total e-table SSE of a precision map (sum_c e_c(b_c)).

        Raises:
            ValueError: ``row_bits`` not of shape (m,) or using a precision not in ``self.bits``.
        """
        row_bits = check_array(
            row_bits, "row_bits", kind="number", shape=(self.shape[0],), finite=False
        )
        bad = ~np.isin(row_bits, self.bits)
        if bad.any():
            raise ValueError(
                f"row_bits uses {np.unique(row_bits[bad])[:5].tolist()}, which these codebooks "
                f"were not learned for ({self.bits})"
            )
        idx = np.searchsorted(np.array(self.bits), row_bits)
        return float(self.errors[np.arange(self.shape[0]), idx].sum())


def _codebooks_core(
    W_norm: np.ndarray,
    absmax: np.ndarray,
    g: int,
    bits: tuple[int, ...],
    weight_power: int,
    n_steps: int,
    tol: float,
    init: str,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], np.ndarray]:
    """Levels, thresholds and the real-space error table for rows of block-normalised weights."""
    m = W_norm.shape[0]
    s = np.repeat(absmax.astype(np.float64), g, axis=1)
    order = np.argsort(W_norm, axis=1, kind="stable")
    xs32 = np.take_along_axis(W_norm.astype(np.float32), order, axis=1)
    locate = _RowLocator(xs32)
    xs = xs32.astype(np.float64)
    s_sorted = np.take_along_axis(s, order, axis=1)
    del s, order, xs32
    pre_err = _prefix(xs, s_sorted**2)  # real-space error weights s^2
    pre_fit = pre_err if weight_power == 2 else _prefix(xs, s_sorted**weight_power)
    levels, thresholds = {}, {}
    errors = np.zeros((m, len(bits)))
    for j, b in enumerate(bits):
        if b == 1 and init == "learned":
            # 1 bit: start at +- the weighted mean |w~| of the channel (reconstruction)
            tot_w = pre_fit[0][:, -1]
            wabs = (s_sorted**weight_power * np.abs(xs)).sum(1) / np.maximum(
                tot_w, 1e-300
            )
            q0 = np.stack([-wabs, wabs], axis=1)
            q0[wabs == 0] = nf_levels(1)
        else:
            q0 = np.broadcast_to(nf_levels(b), (m, 2**b))
        q, bounds, _, _ = _lloyd_rows(
            locate, pre_fit, q0, int(n_steps) if init == "learned" else 0, tol
        )
        Sw, Swx, Swxx = (_bin_sums(C, bounds) for C in pre_err)
        errors[:, j] = np.maximum(Swxx - 2 * q * Swx + q**2 * Sw, 0.0).sum(1)
        levels[b] = q
        thresholds[b] = 0.5 * (q[:, 1:] + q[:, :-1])
    return levels, thresholds, errors


#: peak bytes per element of a row-length batch in :func:`_codebooks_core` (sort keys,
#: sorted values and scales, two sets of three float64 prefix sums, temporaries), and
#: per element kept for every matrix (its float32 normalised copy and scales)
_CODEBOOK_BYTES_PER_ELEMENT, _NORMED_BYTES_PER_ELEMENT = 112, 8


def _weight_shape(W: Any) -> tuple[int, ...]:
    """The shape of an array, tensor or nested list, read without converting it."""
    shape = getattr(W, "shape", None)
    return tuple(int(d) for d in (np.shape(W) if shape is None else shape))


def _check_codebooks_budget(
    what: str, shapes: Sequence[tuple[int, ...]], bits: tuple[int, ...], n_steps: int
) -> None:
    """Refuse codebooks whose memory or Lloyd work cannot fit, from the shapes alone.

    Memory: :data:`_NORMED_BYTES_PER_ELEMENT` per element of every matrix plus
    :data:`_CODEBOOK_BYTES_PER_ELEMENT` per element of the largest batch of equal row length.
    Work: the ``m n log2 n`` sort plus ``(n_steps + 1) m 2^b log2 n`` per precision b.
    """
    batches: dict[int, int] = {}
    total, ops = 0, 0.0
    for shape in shapes:
        if len(shape) != 2:
            continue  # not a matrix: _check_weight refuses it with its own message
        m, n = shape
        batches[n] = batches.get(n, 0) + m * n
        total += m * n
        log_n = math.log2(max(n, 2))
        ops += m * n * log_n + sum((n_steps + 1) * m * 2**b * log_n for b in bits)
    peak = _NORMED_BYTES_PER_ELEMENT * total + _CODEBOOK_BYTES_PER_ELEMENT * max(
        batches.values(), default=0
    )
    check_budget(what, n_bytes=peak, n_operations=ops)


def _codebooks_many(
    weights: Sequence[Any],
    bits: Any,
    group: int,
    weight_power: int,
    n_steps: int,
    tol: float,
    init: str,
    what: str = "learn_channel_codebooks(W=...)",
) -> list[ChannelCodebooks]:
    """Codebooks of several matrices; rows of all matrices with the same n are iterated together.

    The arguments are checked and the budget estimated (:func:`_check_codebooks_budget`) before any
    matrix is converted.
    """
    bits = _check_bits_tuple(bits)
    weight_power = check_choice(weight_power, "weight_power", (0, 1, 2))
    n_steps, tol = check_int(n_steps, "n_steps", low=0), check_real(tol, "tol", low=0.0)
    check_int(group, "group", low=1)
    _check_codebooks_budget(what, [_weight_shape(W) for W in weights], bits, n_steps)
    normed = []
    for i, W in enumerate(weights):
        W32 = lowbit._check_weight(W, "W" if len(weights) == 1 else f"weights[{i}]")
        normed.append(
            lowbit._blockwise_absmax(W32, lowbit._check_group(group, W32.shape[1]))
        )
    out: list[ChannelCodebooks | None] = [None] * len(normed)
    for n in sorted({Wn.shape[1] for Wn, _ in normed}):
        idx = [i for i, (Wn, _) in enumerate(normed) if Wn.shape[1] == n]
        Wn = np.concatenate([normed[i][0] for i in idx])
        sc = np.concatenate([normed[i][1] for i in idx])
        lv, th, err = _codebooks_core(
            Wn, sc, int(group), bits, weight_power, n_steps, tol, init
        )
        start = 0
        for i in idx:
            m = normed[i][0].shape[0]
            sl = slice(start, start + m)
            out[i] = ChannelCodebooks(
                bits,
                {b: v[sl] for b, v in lv.items()},
                {b: v[sl] for b, v in th.items()},
                err[sl],
                np.full(m, n, dtype=np.int64),
                int(group),
                (m, n),
            )
            start += m
    return out  # type: ignore[return-value]


def learn_channel_codebooks(
    W: Any,
    bits: Sequence[int] = DEFAULTS.bits,
    group: int = DEFAULTS.group,
    weight_power: int = DEFAULTS.weight_power,
    n_steps: int = DEFAULTS.lloyd_n_steps,
    tol: float = DEFAULTS.lloyd_tol,
) -> ChannelCodebooks | list[ChannelCodebooks]:
    """Learn a codebook and thresholds for every output channel and precision (Sec. 4.1).

    Rows of ``W`` are normalised group-wise by their absmax (g = ``group``); each row ``c`` then
    gets, for each ``b`` in ``bits``, the weighted Lloyd-Max codebook of its normalised values
    (:func:`lloyd_max_weighted`) with weights ``omega = s_g ** weight_power`` (``s_g`` the absmax
    of the element's group), started from NormalFloat-b (b = 1: +- the channel's weighted mean
    ``|w~|``). ``weight_power = 2`` minimises the exact real-space SSE
    ``sum_g s_g^2 sum_i (w~_i - q(w~_i))^2``; the paper weights by "the absmax" (power 1, the
    default; *reconstruction*). All rows are iterated together: each row is sorted once, bins are
    found by a vectorised binary search and bin sums come from prefix sums, so one iteration costs
    O(m 2^b log n) after an O(m n log n) sort.

    A list of matrices returns a list of codebooks; rows of all matrices with the same n are
    iterated together (one batch per row length), which is what makes a whole model take seconds.

    Args:
        W: (m, n) real array or tensor (m output channels of length n), or a list of them.
        bits: candidate precisions, a subset of (1, 2, 4).
        group: absmax block size g, dividing n.
        weight_power: 0 (unweighted), 1 (paper) or 2 (exact real-space MSE).
        n_steps, tol: Lloyd iteration cap and relative-SSE tolerance.

    Returns:
        :class:`ChannelCodebooks` with the e_c(b) error table (real-space SSE, float64), or a list.

    Raises:
        TypeError: W not real, bits/group/n_steps not integers.
        ValueError: bits outside {1, 2, 4}, group not dividing n, NaN/inf in W, bad weight_power.
        TooLargeError: the sort, prefix sums (about 120 bytes per weight of the largest batch of
            equal row length) or ``n_steps`` Lloyd iterations cannot fit; checked from the shapes
            before any matrix is converted.
    """
    if isinstance(W, (list, tuple)):
        return _codebooks_many(W, bits, group, weight_power, n_steps, tol, "learned")
    return _codebooks_many([W], bits, group, weight_power, n_steps, tol, "learned")[0]


# --------------------------------------------------------------------------------------
# Precision assignment (Sec. 4.2, Algorithm 1)
# --------------------------------------------------------------------------------------
def _check_assign_inputs(
    errors: Any, n_params: Any, target_bits: Any, bits: Any
) -> tuple[np.ndarray, np.ndarray, float, tuple[int, ...], int]:
    """An error table, channel sizes and a budget, validated: ``(E, n_c, target_bits, bits, budget)``.

    ``E`` (C, len(bits)) float64 has its columns reordered to ascending precision; ``budget`` is
    ``floor(target_bits * sum_c n_c)`` code bits.
    """
    given = (bits,) if isinstance(bits, (int, np.integer)) else tuple(bits)
    bits = _check_bits_tuple(bits)  # sorted ascending
    E = check_array(
        errors, "errors", shape=(None, len(bits)), dtype=np.float64, low=0.0, min_size=1
    )
    # column j of ``errors`` belongs to given[j]: reorder the
    # columns to ascending precision
    E = E[:, np.argsort([int(b) for b in given], kind="stable")]
    nc = check_array(n_params, "n_params", kind="int", shape=(E.shape[0],), low=1)
    target = check_real(target_bits, "target_bits")
    if target < bits[0]:
        raise ValueError(
            f"target_bits={target_bits} is infeasible: below the smallest precision {bits[0]} bit"
        )
    # budget in bits; the 1e-9 absorbs decimal round-off like 1.15 * N
    # Python ints: no int64 overflow
    budget = int(math.floor(target * sum(nc.tolist()) + 1e-9))
    return E, nc, target, bits, budget


def assignment_bits(row_bits: ArrayLike, n_params: ArrayLike) -> int:
    """Total code bits ``sum_c n_c b_c`` of a precision map.

    Args:
        row_bits: (C,) integer precisions, each in {1, 2, 4} (floats such as 2.0 are refused).
        n_params: (C,) integer parameter counts ``n_c >= 0``.

    Returns:
        the total as a Python int, exact for any size (no int64 overflow).

    Raises:
        TypeError: n_params or row_bits not integers.
        ValueError: a precision outside {1, 2, 4}, a negative count, or shapes that differ.
    """
    rb = lowbit._check_row_bits(row_bits)
    nc = check_array(n_params, "n_params", kind="int", shape=rb.shape, low=0)
    return _exact_dot(rb, nc)


def _exact_dot(rb: np.ndarray, nc: np.ndarray) -> int:
    """``sum_c b_c n_c`` exactly: in int64 when ``max(b) * sum(n)`` fits, else in Python integers."""
    if nc.size == 0:
        return 0
    # each partial sum fits: int64 is exact
    if int(rb.max()) * (int(nc.max()) * nc.size) < 2**63:
        return int((rb * nc).sum())
    return sum(int(b) * int(n) for b, n in zip(rb.tolist(), nc.tolist()))


def _repair_budget(
    choice: np.ndarray,
    E: np.ndarray,
    nc: np.ndarray,
    bits: tuple[int, ...],
    budget: int,
) -> np.ndarray:
    """Lower precisions greedily (least extra error per saved bit) until the budget holds.

    Only a guard against solver round-off; with exact solutions it does nothing.
    """
    b = np.array(bits)
    while _exact_dot(b[choice], nc) > budget:
        can = choice > 0
        extra = np.where(
            can,
            (
                E[np.arange(len(choice)), np.maximum(choice - 1, 0)]
                - E[np.arange(len(choice)), choice]
            )
            / np.maximum(nc * (b[choice] - b[np.maximum(choice - 1, 0)]), 1),
            np.inf,
        )
        choice[int(np.argmin(extra))] -= 1
    return choice


#: HiGHS's default primal feasibility tolerance (absolute, per constraint row and bound)
_MILP_TOL = 1e-6


def _milp(
    c: np.ndarray,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    A_ub: np.ndarray,
    b_ub: float,
    upper: Any,
    time_limit: float,
) -> np.ndarray:
    """Integer ``x = argmin c^T x`` s.t. ``A_eq x = b_eq``, ``A_ub x <= b_ub``, ``0 <= x <= upper``
    (HiGHS through ``scipy.optimize.milp``, zero gap), checked by :func:`_check_milp_result`."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    cons = [LinearConstraint(A_eq, b_eq, b_eq), LinearConstraint(A_ub, -np.inf, b_ub)]
    res = milp(
        c,
        constraints=cons,
        integrality=np.ones_like(c),
        bounds=Bounds(0, upper),
        options={"mip_rel_gap": 0.0, "time_limit": time_limit, "presolve": True},
    )
    return _check_milp_result(res, A_eq, b_eq, A_ub, b_ub, upper)


def _check_milp_result(
    res: Any,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    A_ub: np.ndarray,
    b_ub: float,
    upper: Any,
) -> np.ndarray:
    """The solver's answer as an int64 vector, once it is known to be a feasible point.

    Accepted: status 0 (optimal) or 1 (time/iteration limit with an incumbent). The point must be
    integral, within its bounds, satisfy every equality row exactly (one precision per channel,
    or the fixed counts of the transportation problem) and the budget row (within HiGHS's
    feasibility tolerance; :func:`_repair_budget` removes such round-off afterwards).

    Raises:
        RuntimeError: no solution, or one that is not feasible; the message says which test failed.
    """
    status, message = getattr(res, "status", None), getattr(res, "message", "")
    x = getattr(res, "x", None)
    if status not in (0, 1) or x is None:
        raise RuntimeError(
            f"the MILP solver returned no usable solution (status {status}): {message}"
        )
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (A_eq.shape[1],) or not np.isfinite(x).all():
        raise RuntimeError(
            f"the MILP solver returned a solution of shape {x.shape} with non-finite entries or the "
            f"wrong size (expected {A_eq.shape[1]}): {message}"
        )
    xi = np.rint(x)
    if np.abs(x - xi).max(initial=0.0) > _MILP_TOL:
        raise RuntimeError(
            f"the MILP solver returned a non-integral solution (largest fractional part "
            f"{np.abs(x - xi).max():.3g}): {message}"
        )
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), xi.shape)
    if (xi < 0).any() or (xi > hi).any():
        raise RuntimeError(
            f"the MILP solver returned a solution outside its bounds [0, upper]: {message}"
        )
    if not np.array_equal(A_eq @ xi, np.asarray(b_eq, dtype=np.float64)):
        raise RuntimeError(
            "the MILP solver returned an infeasible solution: an equality row (one precision per "
            f"channel, or a precision's count) does not hold: {message}"
        )
    over = float((A_ub @ xi).max(initial=-np.inf) - b_ub)
    if over > _MILP_TOL * max(1.0, abs(float(b_ub))):
        raise RuntimeError(
            f"the MILP solver returned an infeasible solution: it exceeds the bit budget {b_ub:g} "
            f"by {over:g}: {message}"
        )
    return xi.astype(np.int64)


def assign_precision_exact(
    errors: ArrayLike,
    n_params: ArrayLike,
    target_bits: float,
    bits: Sequence[int] = DEFAULTS.bits,
    time_limit: float = DEFAULTS.time_limit,
) -> np.ndarray:
    """Optimal per-channel precisions by one MILP (the ground truth for small models and tests).

    ``min_y sum_{c,b} y_{c,b} e_c(b)`` s.t. ``sum_b y_{c,b} = 1``, ``sum_{c,b} y_{c,b} n_c b <=
    floor(target_bits * sum_c n_c)``, ``y`` binary (the problem of Sec. 4.2 without the
    clustering), solved by HiGHS through ``scipy.optimize.milp`` with zero optimality gap; the
    solver's answer is checked for feasibility before it is used.

    Args:
        errors: (C, len(bits)) non-negative e_c(b).
        n_params: (C,) positive int n_c.
        target_bits: bits per parameter B-bar >= min(bits).
        bits: the precisions, one per column of ``errors`` (in the columns' order, any order).
        time_limit: solver limit in seconds.

    Returns:
        (C,) int64 precisions b_c; ``sum_c n_c b_c <= target_bits * sum_c n_c`` always.

    Raises:
        TypeError: n_params not integers, target_bits/time_limit not numbers, bits not integers.
        ValueError: bad shapes, negative/non-finite errors, target_bits below min(bits), bits not
            distinct values of {1, 2, 4}, time_limit <= 0.
        TooLargeError: the dense (C, C len(bits)) constraint matrix cannot fit in memory.
        RuntimeError: the solver returned no solution or an infeasible one.
    """
    E, nc, _, bits, budget = _check_assign_inputs(errors, n_params, target_bits, bits)
    # inf: no limit
    time_limit = check_real(
        time_limit, "time_limit", low=0.0, low_open=True, allow_inf=True
    )
    C, nb = E.shape  # the dense (C, C nb) equality matrix, and the solver's copy of it
    check_budget(
        f"assign_precision_exact(errors of {C} channels)", n_bytes=2 * 8.0 * C * C * nb
    )
    return _assign_exact(E, nc, bits, budget, time_limit)


def _assign_exact(
    E: np.ndarray, nc: np.ndarray, bits: tuple[int, ...], budget: int, time_limit: float
) -> np.ndarray:
    """``min_y sum y_{c,b} e_c(b)`` s.t. ``sum_b y_{c,b} = 1``, ``sum y_{c,b} n_c b <= budget``, y binary."""
    C, nb = E.shape
    b = np.array(bits)
    if budget >= sum(nc.tolist()) * int(b[-1]):  # Python ints: exact
        return np.full(C, b[-1], dtype=np.int64)
    A_eq = np.kron(np.eye(C), np.ones(nb))
    A_ub = (nc[:, None] * b[None, :]).reshape(1, -1).astype(np.float64)
    y = _milp(E.ravel(), A_eq, np.ones(C), A_ub, budget, 1, time_limit).reshape(C, nb)
    choice = _repair_budget(y.argmax(1), E, nc, bits, budget)
    return b[choice].astype(np.int64)


def _intra_cluster(Ek: np.ndarray, counts: np.ndarray, time_limit: float) -> np.ndarray:
    """Exact assignment of a cluster's channels to precisions with fixed counts per precision.

    ``min sum_{c,b} y_{c,b} e_c(b)`` s.t. every channel gets one precision and precision b gets
    ``counts[b]`` channels: a transportation problem (totally unimodular), solved as a MILP that
    HiGHS closes at the root. Returns the (|k|,) column index of each channel.
    """
    used = np.flatnonzero(counts)
    if used.size == 1:
        return np.full(Ek.shape[0], used[0], dtype=np.int64)
    K, nb = Ek.shape
    A_eq = np.vstack([np.kron(np.eye(K), np.ones(nb)), np.kron(np.ones(K), np.eye(nb))])
    b_eq = np.concatenate([np.ones(K), counts])
    y = _milp(
        Ek.ravel(), A_eq, b_eq, np.zeros((1, K * nb)), 0.0, 1, time_limit
    ).reshape(K, nb)
    return y.argmax(1)


_CLUSTER_CACHE: dict[tuple, np.ndarray] = {}


def _cluster_channels(
    E: np.ndarray, nc: np.ndarray, n_clusters: int, seed: int
) -> np.ndarray:
    """K-means labels (C,) of the channels' log-error profiles, within groups of equal n_c."""
    import hashlib

    from sklearn.cluster import KMeans

    key = (
        hashlib.sha1(E.tobytes() + nc.tobytes()).hexdigest(),
        E.shape,
        n_clusters,
        seed,
    )
    if key in _CLUSTER_CACHE:
        return _CLUSTER_CACHE[key]
    C = E.shape[0]
    labels = np.empty(C, dtype=np.int64)
    feats = np.log(E + 1e-12 * max(E.max(), 1e-300))
    next_label = 0
    for size in np.unique(nc):
        rows = np.flatnonzero(nc == size)
        k = int(min(rows.size, max(1, round(n_clusters * rows.size / C))))
        if k >= rows.size:
            lab = np.arange(rows.size)
        else:
            lab = (
                KMeans(n_clusters=k, n_init=1, random_state=seed)
                .fit(feats[rows])
                .labels_
            )
        _, lab = np.unique(lab, return_inverse=True)
        labels[rows] = lab + next_label
        next_label += int(lab.max()) + 1
    if len(_CLUSTER_CACHE) >= 16:
        _CLUSTER_CACHE.pop(next(iter(_CLUSTER_CACHE)))
    _CLUSTER_CACHE[key] = labels
    return labels


def assign_precision(
    errors: ArrayLike,
    n_params: ArrayLike,
    target_bits: float,
    bits: Sequence[int] = DEFAULTS.bits,
    n_clusters: int = DEFAULTS.n_clusters,
    seed: int = 0,
    time_limit: float = DEFAULTS.time_limit,
    return_info: bool = False,
) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """LowRA's two-level channel-wise precision assigner (Sec. 4.2, Algorithm 1).

    1. Channels are grouped by parameter count ``n_c``; inside each group K-means (scikit-learn)
       clusters the error profiles ``log e_c(b)`` (features are *our reconstruction*: raw SSE is
       dominated by scale); ``n_clusters`` is split across the groups in proportion to their size.
    2. Cluster-level ILP on integer counts ``x_{k,b}``:
       ``min sum_{k,b} x_{k,b} mean_{c in k} e_c(b)`` s.t. ``sum_b x_{k,b} = |k|`` and
       ``sum_{k,b} x_{k,b} n_k b <= floor(target_bits * sum_c n_c)`` (``scipy.optimize.milp``).
    3. Intra-cluster: with the counts fixed, which channels get which precision is a
       transportation problem, solved exactly.

    Every solver answer is checked for feasibility before it is used. With every channel in its
    own cluster this is :func:`assign_precision_exact`. At an integer ``target_bits`` in ``bits``
    the result's total error is <= the uniform assignment's (uniform is feasible for step 2 with
    the same objective, and step 3 only improves on the mean).

    Args:
        errors: (C, len(bits)) non-negative e_c(b).
        n_params: (C,) positive int n_c.
        target_bits: bits per parameter B-bar >= min(bits).
        bits: precisions, one per column of ``errors`` (in the columns' order, any order);
            ``info["counts"]`` has its columns in ascending precision.
        n_clusters: total number of K-means clusters (paper: 128).
        seed: scikit-learn K-means' ``random_state`` (an integer >= 0) and part of the clustering's
            cache key; an integer handed to scikit-learn, not a stream of draws, so it keeps the
            name ``seed`` (book/authoring.md).
        time_limit: per-MILP limit in seconds.
        return_info: also return a dict with cluster labels and counts.

    Returns:
        (C,) int64 precisions b_c, never exceeding the budget (plus the info dict).

    Raises:
        TypeError: n_params, n_clusters or seed not integers, target_bits/time_limit not numbers.
        ValueError: bad shapes, negative/non-finite errors, target_bits below min(bits),
            n_clusters < 1, seed < 0, time_limit <= 0.
        TooLargeError: the cluster-level ILP (about ``min(n_clusters, C)^2`` dense entries) or
            the K-means cannot fit.
        RuntimeError: a solver returned no solution or an infeasible one.
    """
    E, nc, _, bits, budget = _check_assign_inputs(errors, n_params, target_bits, bits)
    n_clusters = check_int(n_clusters, "n_clusters", low=1)
    seed = check_int(seed, "seed", low=0)
    # inf: no limit
    time_limit = check_real(
        time_limit, "time_limit", low=0.0, low_open=True, allow_inf=True
    )
    # clusters: the dense (K, K nb) cluster-level ILP
    K = min(n_clusters + np.unique(nc).size, E.shape[0])
    # K-means: <= 300 Lloyd steps
    check_budget(
        f"assign_precision(n_clusters={n_clusters})",
        n_bytes=2 * 8.0 * K * K * E.shape[1],
        n_operations=float(E.shape[0]) * K * E.shape[1] * 300,
    )
    out, info = _assign_two_level(E, nc, bits, budget, n_clusters, seed, time_limit)
    return (out, info) if return_info else out


def _assign_two_level(
    E: np.ndarray,
    nc: np.ndarray,
    bits: tuple[int, ...],
    budget: int,
    n_clusters: int,
    seed: int,
    time_limit: float,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Algorithm 1 of the paper: cluster, solve the cluster ILP, then the per-cluster transports.

    ``x_{k,b}`` = how many channels of cluster k get b bits, ``ebar_k(b)`` = the cluster's mean
    error, ``n_k`` its channels' size:
    ``min sum x_{k,b} ebar_k(b)`` s.t. ``sum_b x_{k,b} = |k|``, ``sum x_{k,b} n_k b <= budget``.
    """
    C, nb = E.shape
    b = np.array(bits)
    if budget >= sum(nc.tolist()) * int(b[-1]):  # Python ints: exact
        return np.full(C, b[-1], dtype=np.int64), {
            "labels": np.zeros(C, dtype=np.int64)
        }
    # 1. clusters inside groups of equal n_c (cached: the clustering does
    # not depend on the budget)
    labels = _cluster_channels(E, nc, n_clusters, seed)
    K = int(labels.max()) + 1
    size_k = np.bincount(labels, minlength=K)
    n_k = np.zeros(K, dtype=np.int64)
    n_k[labels] = nc
    mean_e = np.zeros((K, nb))
    np.add.at(mean_e, labels, E)
    mean_e /= size_k[:, None]
    # 2. cluster-level ILP: min sum_{k,b} x_kb ebar_k(b), counts per
    # cluster, one global bit budget
    A_eq = np.kron(np.eye(K), np.ones(nb))
    A_ub = (n_k[:, None] * b[None, :]).reshape(1, -1).astype(np.float64)
    upper = np.repeat(size_k, nb).astype(np.float64)
    x = _milp(
        mean_e.ravel(), A_eq, size_k.astype(np.float64), A_ub, budget, upper, time_limit
    ).reshape(K, nb)
    # incumbent guard: a feasible uniform assignment never loses to the solver's answer
    proxy = float((x * mean_e).sum())
    for j in range(nb):
        if (
            sum(nc.tolist()) * int(b[j]) <= budget
            and (size_k * mean_e[:, j]).sum() < proxy
        ):
            x = np.zeros((K, nb), dtype=np.int64)
            x[:, j] = size_k
            proxy = float((size_k * mean_e[:, j]).sum())
    # 3. intra-cluster transportation problems
    choice = np.empty(C, dtype=np.int64)
    for k in range(K):
        rows = np.flatnonzero(labels == k)
        choice[rows] = _intra_cluster(E[rows], x[k], time_limit)
    choice = _repair_budget(choice, E, nc, bits, budget)
    return b[choice].astype(np.int64), {
        "labels": labels,
        "counts": x,
        "cluster_objective": proxy,
        "n_clusters": K,
    }

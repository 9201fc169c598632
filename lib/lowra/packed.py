"""LowRA's packed mixed-precision weight, LoftQ initialisation and the LoRA layer (Sec. 4.3).

The storage format and its kernels live in :mod:`icml25.kernels.lowbit`;
:class:`MixedPrecisionWeight` holds one quantized matrix in it, :func:`loftq_init` starts the
adapters at the best low-rank correction of the quantization error (Li et al., 2024), and
:class:`LowRALinear` is the frozen packed base plus the trainable adapters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_int,
    check_positive,
    check_tensor,
)
from icml25.kernels import lowbit
from icml25.lowra.defaults import DEFAULTS

__all__ = ["MixedPrecisionWeight", "loftq_init", "LowRALinear"]


# --------------------------------------------------------------------------------------
# The packed weight (Sec. 4.3) -- storage format and kernels live
# in icml25.kernels.lowbit
# --------------------------------------------------------------------------------------
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
    def quantize(
        cls,
        W: ArrayLike,
        row_bits: ArrayLike,
        lut: ArrayLike,
        thresholds: ArrayLike,
        group: int = DEFAULTS.group,
    ) -> "MixedPrecisionWeight":
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
            TypeError: W, lut or thresholds not real arrays, group not an integer.
        """
        W32 = lowbit._check_weight(W)
        m, n = W32.shape
        g = lowbit._check_group(group, n)
        rb = lowbit._check_row_bits(row_bits, m)
        lut = check_array(lut, "lut", shape=(m, lowbit.LUT_WIDTH), dtype=np.float32)
        thr = check_array(
            thresholds,
            "thresholds",
            shape=(m, lowbit.LUT_WIDTH - 1),
            dtype=np.float32,
            finite=False,
        )
        lut16 = _fp16(lut)
        if not np.isfinite(lut16).all():
            raise ValueError(
                "lut has levels beyond the fp16 range (|q| > 65504) the format stores"
            )
        thr16 = _fp16(thr)
        packed, offsets, absmax = lowbit.quantize_mixed(W32, rb, thr16, g)
        absmax16 = _fp16(np.asarray(absmax))
        if not np.isfinite(absmax16).all():
            raise ValueError(
                "W has a group absmax beyond the fp16 range (|w| > 65504) the format stores"
            )
        return cls(
            np.asarray(packed),
            np.asarray(offsets, dtype=np.int64),
            rb.astype(np.uint8),
            lut16,
            thr16,
            absmax16,
            (m, n),
            g,
        )

    def codes(self) -> np.ndarray:
        """(m, n) uint8 unpacked codes."""
        return lowbit.unpack_codes(
            self.packed, self.row_offsets, self.row_bits, self.shape[1]
        )

    def dequantize(self, out_dtype: Any = np.float32) -> np.ndarray:
        """(m, n) dense weight ``lut[c, code] * absmax`` (via the kernels' dispatcher)."""
        return np.asarray(
            lowbit.dequantize_mixed(
                self.packed,
                self.row_offsets,
                self.row_bits,
                self.lut,
                self.absmax,
                self.shape[1],
                self.group,
                out_dtype,
            )
        )

    def storage(self) -> dict[str, int]:
        """Bytes of each stored component (the accounting; fp16 for levels, thresholds, absmax)."""
        rb = self.row_bits.astype(np.int64)
        m, n = self.shape
        h = DEFAULTS.half_bytes
        return {
            "codes": int(((n * rb + 7) // 8).sum()),
            "lut": int(h * (2**rb).sum()),
            "thresholds": int(h * (2**rb - 1).sum()),
            "absmax": int(h * m * (n // self.group)),
            "row_bits": int(m),
        }

    def to_compact(self) -> dict[str, np.ndarray]:
        """The arrays one would write to disk: codes, ragged fp16 LUT/thresholds, fp16 absmax, bits."""
        rb = self.row_bits.astype(np.int64)
        keep_l = np.arange(16)[None, :] < (2**rb)[:, None]
        keep_t = np.arange(15)[None, :] < (2**rb - 1)[:, None]
        return {
            "codes": self.packed.copy(),
            "lut": self.lut[keep_l].astype(np.float16),
            "thresholds": self.thresholds[keep_t].astype(np.float16),
            "absmax": self.absmax.astype(np.float16).ravel(),
            "row_bits": self.row_bits.astype(np.uint8),
        }

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
        return (
            float(self.shape[1] * self.row_bits.astype(np.int64).sum()) / self.n_params
        )


# --------------------------------------------------------------------------------------
# LoftQ initialisation and the LoRA layer
# --------------------------------------------------------------------------------------
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


def loftq_init(
    W: ArrayLike,
    quantizer: Callable[[np.ndarray], Any],
    rank: int,
    n_steps: int = DEFAULTS.loftq_n_steps,
) -> tuple[Any, np.ndarray, np.ndarray]:
    """LoftQ: alternate quantization and a rank-r SVD of the residual (Li et al., 2024).

    ``A_0 B_0^T = 0``; for t = 1..T: ``Q_t = quantizer(W - A_{t-1} B_{t-1}^T)`` and
    ``A_t B_t^T = SVD_r(W - Q_t)`` with ``A = U_r sqrt(S_r)``, ``B = V_r sqrt(S_r)``. LowRA keeps
    its precision map and codebooks fixed during the loop *(reconstruction)*. The objective
    ``||W - dequant(Q_t) - A_t B_t^T||_F^2`` need not decrease (with the NF2 codebook it rises
    after a few iterations), so the iterate with the smallest objective is returned.

    Args:
        W: (m, n) real array/tensor.
        quantizer: maps an (m, n) float32 array to either a dense (m, n) approximation or an
            object with ``.dequantize()`` (e.g. a :class:`MixedPrecisionWeight`).
        rank: r, 1 <= r <= min(m, n).
        n_steps: T >= 1.

    Returns:
        ``(Q, A, B)`` of the best iterate: the quantizer output (as returned), A (m, r) and
        B (n, r) float32 with ``W ~ dequant(Q) + A @ B.T``.

    Raises:
        TypeError: W not real, rank/n_steps not integers, quantizer not callable.
        ValueError: rank outside [1, min(m, n)], n_steps < 1, NaN/inf in W, a quantizer output of
            the wrong shape or not finite.
        TooLargeError: ``n_steps`` Gram eigen-decompositions (O(m n min(m, n)) each) cannot fit.
    """
    W32 = lowbit._check_weight(W)
    rank = check_int(rank, "rank", low=1, high=min(W32.shape))
    n_steps = check_int(n_steps, "n_steps", low=1)
    if not callable(quantizer):
        raise TypeError(f"quantizer must be callable, got {type(quantizer).__name__}")
    m, n = W32.shape
    k = min(m, n)
    check_budget(
        f"loftq_init(n_steps={n_steps})",
        n_bytes=48.0 * m * n + 16.0 * k * k,
        n_operations=n_steps * (2.0 * m * n * k + float(k) ** 3 + 4.0 * m * n * rank),
    )
    return _loftq(W32, quantizer, rank, n_steps)


def _dense_approximation(Q: Any, shape: tuple[int, int]) -> np.ndarray:
    """The quantizer's output as a dense float32 array; it must be finite and of ``shape``."""
    Qd = np.asarray(Q.dequantize() if hasattr(Q, "dequantize") else Q, dtype=np.float32)
    if Qd.shape != shape or not np.isfinite(Qd).all():
        raise ValueError(
            f"quantizer must return a finite {shape} approximation, got shape {Qd.shape}"
            + ("" if Qd.shape != shape else " with NaN or inf")
        )
    return Qd


def _loftq(
    W: np.ndarray, quantizer: Callable[[np.ndarray], Any], rank: int, n_steps: int
) -> tuple[Any, np.ndarray, np.ndarray]:
    """LoftQ (Li et al., 2024, Alg. 1) returning its best iterate ``t* = argmin_t J_t``.

    ``A_0 B_0^T = 0``; ``Q_t = Quant(W - A_{t-1} B_{t-1}^T)``, ``A_t B_t^T = SVD_r(W - Q_t)``;
    ``J_t = ||W - Q_t - A_t B_t^T||_F^2`` (``Q_t`` is ``quantizer``'s output, dequantized).
    """
    AB = np.zeros_like(W)
    best_J, best = math.inf, None
    for _ in range(n_steps):
        Q = quantizer(W - AB)
        Qd = _dense_approximation(Q, W.shape)
        U, S, V = _top_svd(W - Qd, rank)
        A = (U * np.sqrt(S)).astype(np.float32)
        B = (V * np.sqrt(S)).astype(np.float32)
        AB = A @ B.T
        J = float(np.square((W - Qd - AB).astype(np.float64)).sum())
        if J < best_J:  # J_t is not monotone in t: keep the best iterate, not the last
            best_J, best = J, (Q, A, B)
    return best


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
        TypeError: qweight not a :class:`MixedPrecisionWeight`, bias not a tensor, rank not an
            integer, cache_dequantized not a bool.
        ValueError: rank outside [1, min(m, n)], alpha not finite and > 0, bias not (m,), or
            adapter shapes wrong.
    """

    def __init__(
        self,
        qweight: MixedPrecisionWeight,
        bias: torch.Tensor | None = None,
        rank: int = 8,
        alpha: float = DEFAULTS.alpha,
        lora_A: ArrayLike | None = None,
        lora_B: ArrayLike | None = None,
        cache_dequantized: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(qweight, MixedPrecisionWeight):
            raise TypeError(
                f"qweight must be a MixedPrecisionWeight, got {type(qweight).__name__}"
            )
        m, n = qweight.shape
        rank = check_int(rank, "rank", low=1, high=min(m, n))
        alpha = check_positive(alpha, "alpha")
        cache_dequantized = check_bool(cache_dequantized, "cache_dequantized")
        if bias is not None:
            if not isinstance(bias, torch.Tensor):
                raise TypeError(
                    f"bias must be a torch tensor or None, got {type(bias).__name__}"
                )
            if tuple(bias.shape) != (m,):
                raise ValueError(
                    f"bias must have shape ({m},), got {tuple(bias.shape)}"
                )
        self.in_features, self.out_features, self.rank = n, m, int(rank)
        self.group = qweight.group
        self.scaling = float(alpha) / self.rank
        self.register_buffer("packed", torch.from_numpy(qweight.packed.copy()))
        self.register_buffer(
            "row_offsets", torch.from_numpy(qweight.row_offsets.copy())
        )
        self.register_buffer(
            "row_bits", torch.from_numpy(qweight.row_bits.astype(np.int64))
        )
        self.register_buffer("lut", torch.from_numpy(qweight.lut.copy()))
        self.register_buffer("absmax", torch.from_numpy(qweight.absmax.copy()))
        self.bias = (
            nn.Parameter(bias.detach().clone().float(), requires_grad=False)
            if bias is not None
            else None
        )
        A = torch.empty(self.rank, n)
        nn.init.kaiming_uniform_(A, a=math.sqrt(5))
        B = torch.zeros(m, self.rank)
        if lora_A is not None:
            A = torch.as_tensor(
                np.asarray(lora_A) if not isinstance(lora_A, torch.Tensor) else lora_A
            ).float()
        if lora_B is not None:
            B = torch.as_tensor(
                np.asarray(lora_B) if not isinstance(lora_B, torch.Tensor) else lora_B
            ).float()
        if A.shape != (self.rank, n) or B.shape != (m, self.rank):
            raise ValueError(
                f"lora_A must be ({self.rank}, {n}) and lora_B ({m}, {self.rank}), got "
                f"{tuple(A.shape)}, {tuple(B.shape)}"
            )
        self.lora_A = nn.Parameter(A.clone())
        self.lora_B = nn.Parameter(B.clone())
        self.cache_dequantized = cache_dequantized
        self._cache: torch.Tensor | None = None

    def dequantized_weight(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(m, n) dense W_hat on the buffers' device."""
        if (
            self._cache is not None
            and self._cache.dtype == dtype
            and self._cache.device == self.packed.device
        ):
            return self._cache
        W = lowbit.dequantize_mixed(
            self.packed,
            self.row_offsets,
            self.row_bits,
            self.lut,
            self.absmax,
            self.in_features,
            self.group,
            dtype,
        )
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
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"x must be a floating-point torch tensor, got {type(x).__name__}"
            )
        x = check_tensor(x, "x", finite=False)
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(
                f"x must have last dimension in_features={self.in_features}, got shape {tuple(x.shape)}"
            )
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        """``y = x W_hat^T + bias + (alpha / r) (x A^T) B^T`` (LoRA on the dequantized base; ``A`` is
        ``lora_A`` (r, n), ``B`` is ``lora_B`` (m, r), ``alpha / r`` is ``self.scaling``)."""
        W = self.dequantized_weight(
            torch.float16 if x.dtype == torch.float16 else torch.float32
        )
        dt = x.dtype
        bias = None if self.bias is None else self.bias.to(dt)
        y = nn.functional.linear(x, W.to(dt), bias)
        return y + self.scaling * nn.functional.linear(
            nn.functional.linear(x, self.lora_A.to(dt)), self.lora_B.to(dt)
        )

    def extra_repr(self) -> str:
        """One line for ``print(model)``: sizes, rank and mean bits per weight."""
        bpp = float((self.row_bits.float().mean()).item())
        return f"in={self.in_features}, out={self.out_features}, rank={self.rank}, mean bits={bpp:.3f}"

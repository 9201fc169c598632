"""What LowRA is compared against: QLoRA-style fixed NormalFloat codebooks (Dettmers et al., 2023).

:func:`nf_channel_codebooks` gives every channel the fixed NF-b codebook (the "assigner only"
ablation runs the precision assigner on its error table); :func:`nf_quantize_tensor` quantizes a
whole matrix at one precision with it (the NF baseline). :func:`icml25.lowra.nf_levels`, the
codebook itself, lives with the learner it initialises.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from icml25.kernels import lowbit
from icml25.lowra.defaults import DEFAULTS
from icml25.lowra.method import (
    ChannelCodebooks,
    _check_bits,
    _codebooks_many,
    nf_levels,
)
from icml25.lowra.packed import MixedPrecisionWeight

__all__ = ["nf_channel_codebooks", "nf_quantize_tensor"]


def nf_channel_codebooks(
    W: Any, bits: Sequence[int] = DEFAULTS.bits, group: int = DEFAULTS.group
) -> ChannelCodebooks | list[ChannelCodebooks]:
    """The QLoRA-style baseline: every channel uses the fixed NormalFloat-b codebook (no learning).

    Same layout and error table as :func:`icml25.lowra.learn_channel_codebooks`, so the precision
    assigner can also run on it (the "assigner only" ablation).

    Args:
        W: (m, n) real array or tensor, or a list of them.
        bits: candidate precisions, a subset of (1, 2, 4).
        group: absmax block size g, dividing n.

    Returns:
        :class:`ChannelCodebooks` (a list for a list of matrices).

    Raises:
        TypeError, ValueError: as :func:`icml25.lowra.learn_channel_codebooks`.
    """
    if isinstance(W, (list, tuple)):
        return _codebooks_many(W, bits, group, 1, 0, 0.0, "nf")
    return _codebooks_many([W], bits, group, 1, 0, 0.0, "nf")[0]


def nf_quantize_tensor(
    W: Any, bits: int, group: int = DEFAULTS.group
) -> MixedPrecisionWeight:
    """QLoRA-style baseline: every row at ``bits`` with the fixed NormalFloat codebook.

    Block absmax scaling (g = ``group``) and nearest-level rounding to :func:`nf_levels`; written
    here because no library ships NF1/NF2 (bitsandbytes has NF4/FP4 only, CUDA only).

    Args:
        W: (m, n) real array or tensor.
        bits: b in {1, 2, 4}.
        group: g, dividing n.

    Returns:
        the packed :class:`MixedPrecisionWeight`.

    Raises:
        TypeError: W not real, bits or group not integers.
        ValueError: bits not in {1, 2, 4}, group not dividing n, NaN/inf in W.
    """
    b = _check_bits(bits)
    W32 = lowbit._check_weight(W)
    return MixedPrecisionWeight.quantize(W32, *_nf_tables(W32.shape[0], b), group)


def _nf_tables(m: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row_bits, lut, thresholds)`` with every row at b bits on NF-b, thresholds at the midpoints."""
    q = nf_levels(b)
    lut = np.zeros((m, lowbit.LUT_WIDTH), np.float32)
    thr = np.full((m, lowbit.LUT_WIDTH - 1), np.inf, np.float32)
    lut[:, : 2**b] = q
    thr[:, : 2**b - 1] = 0.5 * (q[1:] + q[:-1])
    return np.full(m, b), lut, thr

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

The package: ``defaults`` (:data:`DEFAULTS`, the paper's settings), ``method`` (learner and
assigner), ``packed`` (the packed weight, LoftQ, the LoRA layer), ``baselines`` (NormalFloat),
``data`` (MiniLM and the sentences), ``experiments`` (the chapter's loops) and ``claims``
(:data:`CLAIMS`, the paper's claims as the book judges them, :mod:`icml25.claims`).
"""

from __future__ import annotations

from icml25.kernels import lowbit
from icml25.lowra.baselines import nf_channel_codebooks, nf_quantize_tensor
from icml25.lowra.claims import CLAIMS
from icml25.lowra.data import load_minilm, make_sentences
from icml25.lowra.defaults import DEFAULTS, LowRADefaults
from icml25.lowra.experiments import (
    apply_lowra,
    distill_finetune,
    embedding_cosine,
    mean_pool_embed,
    sse_vs_budget,
)

# the private functions among these are the pure math the
# chapter shows with ``show_source``
from icml25.lowra.method import (  # noqa: F401
    ChannelCodebooks,
    _assign_two_level,
    _intra_cluster,
    _lloyd_rows,
    _RowLocator,
    assign_precision,
    assign_precision_exact,
    assignment_bits,
    learn_channel_codebooks,
    lloyd_max_weighted,
    nf_levels,
)
from icml25.lowra.packed import LowRALinear, MixedPrecisionWeight, _loftq, loftq_init  # noqa: F401

#: the packed format's candidate precisions and its packing functions, from
#: ``icml25.kernels.lowbit``
ALLOWED_BITS = lowbit.ALLOWED_BITS
blockwise_absmax = lowbit.blockwise_absmax
pack_codes = lowbit.pack_codes
unpack_codes = lowbit.unpack_codes

__all__ = [
    "CLAIMS",
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

"""Text encoder and span positive maps (UniVLG Sec. 3.4; MDETR-style span grounding).

The paper uses the Jina-CLIP text tower; this book uses chapter 01's frozen all-MiniLM-L6-v2
(:func:`icml25.common.load_minilm`, a pretrained sentence encoder shipped in a PyPI wheel) plus a
trainable projection. Token features of the frozen model are cached per sentence.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from icml25.checks import check_int

__all__ = ["TextEncoder", "positive_map", "MINILM_DIM"]

MINILM_DIM = 384


def positive_map(
    offsets: Any, spans: Sequence[tuple[int, int]], n_tokens: int
) -> np.ndarray:
    """Which tokens of a sentence fall inside each character span.

    A token belongs to a span when their character ranges overlap; special tokens (offset
    ``(0, 0)``) belong to none. Rows are normalised to sum to 1 (the paper's soft positive map).

    Args:
        offsets: (L, 2) int character ``(start, end)`` of each token (the fast tokenizer's
            ``offset_mapping``).
        spans: character ``(start, end)`` ranges, end exclusive.
        n_tokens: padded length ``S >= L``.

    Returns:
        (len(spans), n_tokens) float32, rows summing to 1.

    Raises:
        ValueError: a span covers no token or is not ``0 <= start < end``, ``n_tokens`` < L, bad offsets shape.
    """
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 2 or off.shape[1] != 2:
        raise ValueError(f"offsets must have shape (L, 2), got {off.shape}")
    S = check_int(n_tokens, "n_tokens", low=len(off))
    out = np.zeros((len(spans), S), dtype=np.float32)
    real = off[:, 1] > off[:, 0]
    for r, (a, b) in enumerate(spans):
        if not (0 <= a < b):
            raise ValueError(
                f"spans: span {r} = ({a}, {b}) must satisfy 0 <= start < end"
            )
        hit = real & (off[:, 0] < b) & (off[:, 1] > a)
        if not hit.any():
            raise ValueError(f"spans: span {r} = ({a}, {b}) covers no token")
        out[r, : len(off)] = hit / hit.sum()
    return out


class TextEncoder(nn.Module):
    """Frozen MiniLM token features (cached per sentence) and a trainable projection to ``dim``.

    Args:
        dim: output width D.
        minilm: ``(model, tokenizer)`` from :func:`icml25.common.load_minilm` (loaded if None).
    """

    def __init__(self, dim: int, minilm: tuple[Any, Any] | None = None) -> None:
        super().__init__()
        D = check_int(dim, "dim", low=1)
        if minilm is None:
            from icml25.common import load_minilm

            minilm = load_minilm()
        self._bert, self.tokenizer = minilm
        for p in self._bert.parameters():
            p.requires_grad_(False)
        self._bert.eval()
        self.proj = nn.Sequential(nn.Linear(MINILM_DIM, D), nn.LayerNorm(D))
        self._cache: dict[str, tuple[torch.Tensor, np.ndarray]] = {}

    @torch.no_grad()
    def tokens(self, sentences: Sequence[str]) -> list[tuple[torch.Tensor, np.ndarray]]:
        """Cached frozen features ``(L, 384)`` and offsets ``(L, 2)`` of each sentence."""
        todo = [s for s in dict.fromkeys(sentences) if s not in self._cache]
        for i in range(0, len(todo), 64):
            chunk = todo[i : i + 64]
            enc = self.tokenizer(
                chunk, padding=True, return_offsets_mapping=True, return_tensors="pt"
            )
            off = enc.pop("offset_mapping").numpy()
            dev = next(self._bert.parameters()).device
            h = self._bert(
                **{k: v.to(dev) for k, v in enc.items()}
            ).last_hidden_state.cpu()
            for j, s in enumerate(chunk):
                L = int(enc["attention_mask"][j].sum())
                self._cache[s] = (h[j, :L].float().clone(), off[j, :L].copy())
        return [self._cache[s] for s in sentences]

    def encode(
        self,
        sentences: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, list[np.ndarray] | None]:
        """Projected token features, padding mask and (optionally) positive maps.

        Args:
            sentences: B strings.
            spans: per sentence, its character spans (target first), or None.

        Returns:
            ``(T (B, S, D) float32, pad (B, S) bool True = padding, maps)``, ``maps[b]`` being
            ``(n_spans_b, S)`` float32 from :func:`positive_map`.

        Raises:
            ValueError: an empty sentence list, a span covering no token.
        """
        if len(sentences) == 0:
            raise ValueError("sentences must not be empty")
        toks = self.tokens(list(sentences))
        S = max(len(t[0]) for t in toks)
        B = len(toks)
        feats = torch.zeros(B, S, MINILM_DIM)
        pad = torch.ones(B, S, dtype=torch.bool)
        for b, (h, _) in enumerate(toks):
            feats[b, : len(h)] = h
            pad[b, : len(h)] = False
        maps = None
        if spans is not None:
            maps = [positive_map(off, sp, S) for (_, off), sp in zip(toks, spans)]
        dev = self.proj[0].weight.device
        return self.proj(feats.to(dev)), pad.to(dev), maps

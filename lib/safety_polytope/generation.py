"""Hidden states of a language model, and generation with SaP's detector and corrector in the loop.

``extract_hidden_states`` reads the states the polytope is trained on (HF models: the chapter's
MiniLM). :class:`SteeredGenerator` runs greedy decoding with a forward hook on block ``layer``
that looks at the *newest* position's state for the first ``first_n`` new tokens: ``mode="steer"``
replaces a flagged state by :func:`steer_hidden`'s edit (SafeFlow, Algorithm 1);
``mode="backup"`` emits the fixed refusal string instead (the code's ``use_backup_response``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml25.checks import check_choice, check_int, check_real

from .method import steer_hidden

__all__ = ["extract_hidden_states", "SteeredGenerator"]


def extract_hidden_states(
    model: Any,
    tokenizer: Any,
    texts: list[str],
    layer: int,
    pool: str = "last",
    batch: int = 32,
    max_length: int = 64,
) -> np.ndarray:
    """Layer-``layer`` states of a Hugging Face model for each text, pooled to one vector.

    ``hidden_states[layer]`` of ``model(..., output_hidden_states=True)`` (0 = embeddings), pooled
    over the real (non-padding) tokens: ``"last"`` takes the last real token (the paper's choice
    for a causal LM), ``"mean"`` averages them (the natural read-out of a BERT encoder).

    Args:
        model: a ``transformers`` model. tokenizer: its tokenizer. texts: the inputs (>= 1).
        layer: 0..num_hidden_layers. pool: ``"last"`` or ``"mean"``. batch: texts per forward.
        max_length: tokens kept per text.

    Returns:
        (N, d) float32.

    Raises:
        ValueError: empty texts, a non-string text, bad layer, pool or batch.
    """
    if (
        not isinstance(texts, (list, tuple))
        or not texts
        or not all(isinstance(t, str) for t in texts)
    ):
        raise ValueError("texts must be a non-empty list of strings")
    n_layers = int(getattr(model.config, "num_hidden_layers", 0))
    layer = check_int(layer, "layer", low=0, high=n_layers)
    pool = check_choice(pool, "pool", ("last", "mean"))
    batch = check_int(batch, "batch", low=1)
    out = []
    with torch.no_grad():
        for s in range(0, len(texts), batch):
            enc = tokenizer(
                list(texts[s : s + batch]),
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hs = model(**enc, output_hidden_states=True).hidden_states[layer].float()
            mask = enc["attention_mask"].float()
            if pool == "mean":
                out.append((hs * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))
            else:
                last = mask.sum(1).long() - 1
                out.append(hs[torch.arange(hs.shape[0]), last])
    return torch.cat(out).numpy().astype(np.float32)


def _blocks(model: Any) -> Any:
    for path in (
        "blocks",
        "transformer.h",
        "model.layers",
        "gpt_neox.layers",
        "encoder.layer",
    ):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError:
            continue
    raise TypeError(f"cannot find the transformer blocks of {type(model).__name__}")


class SteeredGenerator:
    """Greedy decoding with SaP in the loop: a hook on block ``layer`` edits the newest state.

    For each of the first ``first_n`` generated tokens the state of the newest position at the
    output of block ``layer`` is checked by ``polytope.is_safe``. ``"steer"``: a flagged state is
    replaced by :func:`steer_hidden` (its edit is remembered and re-applied when later steps
    recompute that position, which is what a KV cache would keep). ``"backup"``: once a state is
    flagged, the refusal string is emitted and generation stops (flagged mid-answer, the output is
    the partial answer followed by the refusal). Earlier positions are never edited anew.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        polytope: Any,
        layer: int,
        first_n: int = 20,
        mode: str = "steer",
        lam: float = 2.0,
        mu: float = 1e-4,
        lr: float = 1e-2,
        n_steps: int = 1,
        dist: str = "l1",
        inner_margin: float = 0.0,
        refusal: str = "sorry , i can not help with that .",
        scale: Any = None,
    ) -> None:
        """Args: model (``forward(ids) -> logits``, blocks found by name); tokenizer (``encode``,
        ``decode``, ``eos_id``); polytope (``is_safe``, ``steer_terms``, ``d``); layer (block index);
        first_n (new tokens checked, >= 0); mode ``"steer"``/``"backup"``/``"off"``; lam, mu, lr,
        n_steps, dist, inner_margin: :func:`steer_hidden`'s; refusal (backup text); scale: optional
        ``(mean, std)`` tensors, the standardisation the polytope was trained under.

        Raises: ValueError: bad layer, mode or sizes. TypeError: no blocks found.
        """
        self.model, self.tokenizer, self.polytope = model, tokenizer, polytope
        self.blocks = _blocks(model)
        self.layer = check_int(layer, "layer", low=0, high=len(self.blocks) - 1)
        self.first_n = check_int(first_n, "first_n", low=0)
        self.mode = check_choice(mode, "mode", ("steer", "backup", "off"))
        self.steer_kw = dict(
            lam=check_real(lam, "lam", low=0.0),
            mu=check_real(mu, "mu", low=0.0),
            lr=check_real(lr, "lr", low=0.0, low_open=True),
            n_steps=check_int(n_steps, "n_steps", low=1),
            dist=check_choice(dist, "dist", ("l1", "l2")),
            inner_margin=check_real(inner_margin, "inner_margin", low=0.0),
        )
        self.refusal = refusal
        self.scale = scale

    def _to_poly(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.scale is None else (h - self.scale[0]) / self.scale[1]

    def _from_poly(self, z: torch.Tensor) -> torch.Tensor:
        return z if self.scale is None else z * self.scale[1] + self.scale[0]

    def _edit(self, h: torch.Tensor) -> tuple[torch.Tensor, bool]:
        """(1, d) newest state -> (possibly edited state, flagged)."""
        z = self._to_poly(h)
        flagged = not bool(self.polytope.is_safe(z)[0])
        if flagged and self.mode == "steer":
            z2, _ = steer_hidden(z, self.polytope, **self.steer_kw)
            return self._from_poly(z2), True
        return h, flagged

    def generate(self, prompt: str, max_new_tokens: int = 20) -> tuple[str, dict]:
        """Greedy continuation of ``prompt`` with the detector/corrector in the loop.

        Returns:
            ``(text, info)``: the generated words, and ``flags`` (one bool per checked step; the
            first is the prompt's last token), ``n_edits``, ``backup`` (whether the refusal was
            emitted).

        Raises:
            ValueError: max_new_tokens < 1 or a prompt word outside the vocabulary.
            RuntimeError: under ``torch.inference_mode`` with ``mode="steer"`` (from steer_hidden).
        """
        max_new_tokens = check_int(max_new_tokens, "max_new_tokens", low=1)
        ids = list(self.tokenizer.encode(prompt))
        n_prompt = len(ids)
        edits: dict[int, torch.Tensor] = {}
        state = {"check": False, "flag": False}
        flags: list[bool] = []

        def hook(_module: Any, _inp: Any, out: Any) -> Any:
            hs = out[0] if isinstance(out, tuple) else out
            hs = hs.clone()
            # edits of earlier steps, as a KV cache keeps them
            for (
                pos,
                st,
            ) in edits.items():
                hs[0, pos] = st
            if state["check"]:
                new, flagged = self._edit(hs[0, -1:].detach())
                state["flag"] = flagged
                if self.mode == "steer" and flagged:
                    hs[0, -1] = new[0]
                    edits[hs.shape[1] - 1] = new[0].detach()
            return (hs, *out[1:]) if isinstance(out, tuple) else hs

        handle = self.blocks[self.layer].register_forward_hook(hook)
        backup = False
        try:
            for step in range(max_new_tokens):
                state["check"] = self.mode != "off" and step < self.first_n
                with torch.no_grad():
                    logits = self.model(torch.tensor([ids]))
                logits = logits.logits if hasattr(logits, "logits") else logits
                if state["check"]:
                    flags.append(state["flag"])
                    if self.mode == "backup" and state["flag"]:
                        ids += self.tokenizer.encode(self.refusal)
                        backup = True
                        break
                nxt = int(logits[0, -1].argmax())
                if nxt == self.tokenizer.eos_id:
                    break
                ids.append(nxt)
                if len(ids) >= getattr(self.model, "max_len", 10**9):
                    break
        finally:
            handle.remove()
        return self.tokenizer.decode(ids[n_prompt:]), {
            "flags": flags,
            "n_edits": len(edits),
            "backup": backup,
        }

"""PepTune's masked discrete diffusion language model (PepMDLM): denoiser, NELBO, sampler.

- :class:`MaskedDiffusionTransformer`: the denoiser ``x_theta(z_t)`` with the SUBS
  parameterisation (Sahoo et al. 2024; PepTune Sec. 3.3): the ``[MASK]`` logit is ``-inf`` and a
  visible token is copied, so only masked positions carry a prediction. No time conditioning (as
  in the paper).
- :func:`mdlm_loss`: the continuous-time NELBO, per token
  ``sigma'_l(t) / (exp(sigma_l(t)) - 1) * (-log <x_theta(z_t)_l, x_l>)`` with each token's own
  schedule (bond-dependent masking), plus PepTune's invalid loss: decode the arg-max of the
  denoiser; if that string is not a valid peptide, add each position's probability of its arg-max
  token (the official code's per-token term, averaged with the NLL over tokens).
- :func:`reverse_step` and :func:`sample`: DDPM steps ``q(z_s | z_t) ∝ x_theta (t − s)`` on real
  tokens and ``s`` on ``[MASK]``, arg-max on the last step (noise removal); the step itself is
  the fused kernel ``kernels/mdlm_sampler``.

Reconstructions (labelled): the paper's RoFormer (768 wide, 8 layers, rotary positions) becomes
a small pre-LN transformer with learned absolute positions; ``[PAD]`` is a real token diffused
like any other, so the model chooses the length (the official code masks pads out with an
attention mask and length buckets); fp32, not fp64.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from icml25.checks import check_int, check_real
from icml25.kernels import mdlm_sampler

from .chem import SmilesTokenizer, is_valid_peptide
from .schedules import BondDependentSchedule, loss_weight

__all__ = [
    "LossParts",
    "MaskedDiffusionTransformer",
    "invalid_penalty",
    "denoise_argmax",
    "load_checkpoint",
    "rollout",
    "save_checkpoint",
    "time_grid",
    "mdlm_loss",
    "q_xt",
    "reverse_step",
    "sample",
    "sample_smiles",
    "sample_times",
    "subs_log_probs",
]

_NEG = -1e6


class MaskedDiffusionTransformer(nn.Module):
    """Denoiser ``x_theta(z_t)``: token + position embeddings, pre-LN transformer, SUBS output.

    Args:
        vocab: the :class:`SmilesTokenizer` (its size and ``[MASK]`` id; kept as ``.tokenizer``).
        d: width (divisible by ``heads``).
        layers: transformer blocks.
        heads: attention heads.
        max_len: the longest sequence (positions).
        ff_mult: feed-forward width ``ff_mult * d``.

    Raises:
        ValueError: ``vocab`` not a tokenizer, sizes < 1, ``d`` not divisible by ``heads``.
    """

    def __init__(
        self,
        vocab: SmilesTokenizer,
        d: int = 128,
        layers: int = 3,
        heads: int = 4,
        max_len: int = 96,
        ff_mult: int = 4,
    ):
        super().__init__()
        if not isinstance(vocab, SmilesTokenizer):
            raise ValueError(
                f"vocab must be a SmilesTokenizer, got {type(vocab).__name__}"
            )
        d = check_int(d, "d", low=1)
        layers = check_int(layers, "layers", low=1)
        heads = check_int(heads, "heads", low=1)
        max_len = check_int(max_len, "max_len", low=1)
        ff_mult = check_int(ff_mult, "ff_mult", low=1)
        if d % heads:
            raise ValueError(f"d={d} must be divisible by heads={heads}")
        self.tokenizer = vocab
        self.config = {
            "d": d,
            "layers": layers,
            "heads": heads,
            "max_len": max_len,
            "ff_mult": ff_mult,
        }
        self.mask_id = vocab.mask_id
        self.vocab_size = vocab.vocab_size
        self.tok = nn.Embedding(self.vocab_size, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        block = nn.TransformerEncoderLayer(
            d,
            heads,
            ff_mult * d,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, self.vocab_size)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Raw logits ``(B, L, V)`` for token ids ``z (B, L)``."""
        L = z.shape[1]
        if L > self.pos.shape[0]:
            raise ValueError(f"sequence length {L} > max_len {self.pos.shape[0]}")
        if z.numel() and (int(z.min()) < 0 or int(z.max()) >= self.vocab_size):
            raise ValueError(f"z holds token ids outside [0, {self.vocab_size})")
        h = self.tok(z) + self.pos[:L]
        return self.out(self.norm(self.blocks(h)))


def subs_log_probs(
    logits: torch.Tensor, z_t: torch.Tensor, mask_id: int
) -> torch.Tensor:
    """SUBS parameterisation: ``log x_theta`` with the mask logit ``-inf`` and visible tokens copied.

    Args:
        logits: (B, L, V) raw logits; z_t: (B, L) ids; mask_id: the ``[MASK]`` id.

    Returns:
        (B, L, V) log-probabilities; at a visible position 0 on ``z_t`` and ``-1e6`` elsewhere.
    """
    logits = logits.clone()
    logits[..., mask_id] = _NEG
    logp = torch.log_softmax(logits, dim=-1)
    visible = z_t != mask_id
    copy = torch.full_like(logp, _NEG).scatter(-1, z_t[..., None], 0.0)
    return torch.where(visible[..., None], copy, logp)


def q_xt(
    x0: torch.Tensor,
    mask_prob: torch.Tensor,
    mask_id: int,
    rng: torch.Generator | None = None,
    max_mask_frac: float | None = None,
) -> torch.Tensor:
    """Forward process: mask each token of ``x0 (B, L)`` independently with ``mask_prob`` (broadcast).

    ``max_mask_frac`` is the official code's variant (labelled option): at most that fraction
    (0.75 there) of the non-pad length is masked, keeping the *first* masked positions.

    Raises:
        ValueError: ``mask_prob`` outside [0, 1] or NaN, ``max_mask_frac`` outside [0, 1].
    """
    mask_prob = torch.as_tensor(mask_prob)
    if torch.isnan(mask_prob).any() or (mask_prob < 0).any() or (mask_prob > 1).any():
        raise ValueError("mask_prob must lie in [0, 1] (no NaN)")
    if max_mask_frac is not None:
        max_mask_frac = check_real(max_mask_frac, "max_mask_frac", low=0.0, high=1.0)
    u = torch.rand(x0.shape, generator=rng).to(x0.device)
    m = u < mask_prob
    if max_mask_frac is not None:
        cap = ((x0 != 0).sum(-1, keepdim=True).float() * max_mask_frac).long()
        m = m & (torch.cumsum(m.long(), dim=-1) <= cap)
    return torch.where(m, torch.full_like(x0, mask_id), x0)


def sample_times(
    n: int, rng: torch.Generator | None = None, eps_t: float = 1e-3
) -> torch.Tensor:
    """Antithetic training times in ``[eps_t, 1]``: ``((u/n + i/n) mod 1)(1 − eps_t) + eps_t``.

    Raises:
        ValueError: ``n < 1``, ``eps_t`` outside [0, 1).
    """
    n = check_int(n, "n", low=1)
    eps_t = check_real(eps_t, "eps_t", low=0.0, high=1.0, high_open=True)
    u = torch.rand(n, generator=rng)
    t = (u / n + torch.arange(n) / n) % 1
    return (1 - eps_t) * t + eps_t


def invalid_penalty(
    log_probs: torch.Tensor, tokenizer: SmilesTokenizer, strict: bool = True
) -> tuple[torch.Tensor, np.ndarray]:
    """PepTune's invalid loss (Sec. 3.3): per-token penalty of arg-max decodes that are not peptides.

    Args:
        log_probs: (B, L, V) SUBS log-probabilities.
        tokenizer: to decode the arg-max ids.
        strict: validity rule (:func:`is_valid_peptide`).

    Returns:
        ``(penalty (B, L), valid (B,) bool)``: ``penalty[b, l] = 1[decode_b invalid] * p_theta(argmax_l)``
        (differentiable through the probability; validity is not).
    """
    ids = log_probs.argmax(-1)
    smiles = tokenizer.decode_batch(ids.detach().cpu().numpy())
    valid = np.array([is_valid_peptide(s, strict=strict) for s in smiles], dtype=bool)
    prob = log_probs.gather(-1, ids[..., None]).squeeze(-1).exp()
    bad = torch.as_tensor(~valid, dtype=prob.dtype, device=prob.device)
    return bad[:, None] * prob, valid


@dataclass
class LossParts:
    """One training loss: ``loss`` (scalar, differentiable), its ``nll`` and ``invalid`` parts
    (floats, per token), and ``argmax_valid`` (fraction of valid arg-max decodes)."""

    loss: torch.Tensor
    nll: float
    invalid: float
    argmax_valid: float


def mdlm_loss(
    model: MaskedDiffusionTransformer,
    x0: torch.Tensor,
    bond_mask: torch.Tensor,
    schedule: BondDependentSchedule | None = None,
    invalid_loss: bool = True,
    rng: torch.Generator | None = None,
    t: torch.Tensor | None = None,
    strict: bool = True,
    max_mask_frac: float | None = None,
    invalid_weight: float = 1.0,
) -> LossParts:
    """PepTune's training loss on a batch (Sec. 3.3, continuous-time NELBO + invalid loss).

    Per token ``l``: ``w_l(t) (-log <x_theta(z_t)_l, x0_l>) + L_inv,l`` with
    ``w_l = sigma_l'(t)/(exp(sigma_l(t)) − 1)`` (``1/t`` for log-linear tokens), averaged over all
    ``B L`` tokens; only masked tokens contribute NLL (SUBS).

    Args:
        model: the denoiser.
        x0: (B, L) clean ids. bond_mask: (B, L) bool, peptide-bond tokens.
        schedule: default ``BondDependentSchedule()``; ``uniform=True`` for the ablation.
        invalid_loss: add the invalid loss (ablation: False).
        rng: torch generator for times and masks (None: torch's global one). t: (B,) times (default antithetic).
        strict: validity rule of the invalid loss. max_mask_frac: the code's 75 % cap (option).
        invalid_weight: multiplier of the invalid term (1 in the paper).

    Raises:
        ValueError: shapes, ids outside the vocabulary, ``t`` outside [0, 1].
    """
    if not (isinstance(x0, torch.Tensor) and x0.dim() == 2):
        raise ValueError(
            f"x0 must be a (B, L) tensor, got {getattr(x0, 'shape', type(x0))}"
        )
    if not (isinstance(bond_mask, torch.Tensor) and bond_mask.shape == x0.shape):
        raise ValueError(f"bond_mask must be a tensor of shape {tuple(x0.shape)}")
    if x0.min() < 0 or x0.max() >= model.vocab_size:
        raise ValueError("x0 holds ids outside the vocabulary")
    schedule = schedule or BondDependentSchedule()
    B = x0.shape[0]
    if t is None:
        t = sample_times(B, rng)
    t = torch.as_tensor(t, dtype=torch.float32)
    if t.shape != (B,) or (t < 0).any() or (t > 1).any():
        raise ValueError("t must be a (B,) tensor in [0, 1]")
    t = t.to(x0.device)
    tt = t[:, None].expand_as(x0)
    bond = bond_mask.bool()
    p_mask = schedule.mask_prob(tt, bond)
    w = loss_weight(schedule.sigma(tt, bond), schedule.dsigma(tt, bond))
    z = q_xt(x0, p_mask, model.mask_id, rng, max_mask_frac)
    logp = subs_log_probs(model(z), z, model.mask_id)
    nll_tok = -logp.gather(-1, x0[..., None]).squeeze(-1) * (z == model.mask_id)
    nll = (w * nll_tok).mean()
    if invalid_loss:
        pen, valid = invalid_penalty(logp, model.tokenizer, strict=strict)
        inv = pen.mean() * invalid_weight
    else:
        with torch.no_grad():
            _, valid = invalid_penalty(logp, model.tokenizer, strict=strict)
        inv = torch.zeros((), dtype=nll.dtype, device=nll.device)
    return LossParts(
        loss=nll + inv,
        nll=float(nll.detach()),
        invalid=float(inv.detach()),
        argmax_valid=float(valid.mean()),
    )


def _gumbel(shape, rng: torch.Generator | None, device) -> torch.Tensor:
    u = torch.rand(shape, generator=rng).clamp_(1e-10, 1.0 - 1e-7).to(device)
    return -torch.log(-torch.log(u))


@torch.no_grad()
def reverse_step(
    model: MaskedDiffusionTransformer,
    z_t: torch.Tensor,
    t: float,
    s: float,
    gumbel: torch.Tensor | None = None,
    rng: torch.Generator | None = None,
    p_x0: torch.Tensor | None = None,
) -> torch.Tensor:
    """One reverse step ``z_t -> z_s`` (Sec. 3.4) through the fused kernel.

    Args:
        model: the denoiser. z_t: (B, L) ids. t, s: times with ``0 <= s < t <= 1``.
        gumbel: (B, L, V) standard Gumbel noise (default: drawn with the torch generator ``rng``).
        p_x0: (B, L, V) denoiser probabilities, if already computed for ``z_t``.

    Returns:
        (B, L) ids ``z_s``.

    Raises:
        ValueError: ``t`` or ``s`` outside [0, 1], ``s >= t``, ids outside the vocabulary.
    """
    t = check_real(t, "t", low=0.0, high=1.0)
    s = check_real(s, "s", low=0.0, high=1.0)
    if not s < t:
        raise ValueError(f"s must be < t, got t={t}, s={s}")
    if z_t.min() < 0 or z_t.max() >= model.vocab_size:
        raise ValueError("z_t holds ids outside the vocabulary")
    if p_x0 is None:
        p_x0 = subs_log_probs(model(z_t), z_t, model.mask_id).exp()
    if gumbel is None:
        gumbel = _gumbel(p_x0.shape, rng, p_x0.device)
    return mdlm_sampler.reverse_step_kernel(p_x0, z_t, t, s, gumbel, model.mask_id)


@torch.no_grad()
def denoise_argmax(model: MaskedDiffusionTransformer, z: torch.Tensor) -> torch.Tensor:
    """Noise removal: every remaining ``[MASK]`` becomes the denoiser's arg-max."""
    if not (z == model.mask_id).any():
        return z
    logp = subs_log_probs(model(z), z, model.mask_id)
    return torch.where(z == model.mask_id, logp.argmax(-1), z)


def time_grid(n_steps: int, eps: float = 1e-5, t_start: float = 1.0) -> np.ndarray:
    """``n_steps + 1`` times from ``t_start`` down to ``eps`` (MDLM's ``linspace``).

    Raises:
        ValueError: ``n_steps < 1``, ``t_start`` outside (0, 1], ``eps`` outside [0, t_start).
    """
    n_steps = check_int(n_steps, "n_steps", low=1)
    t_start = check_real(t_start, "t_start", low=0.0, high=1.0, low_open=True)
    eps = check_real(eps, "eps", low=0.0, high=t_start, high_open=True)
    return np.linspace(t_start, eps, n_steps + 1)


@torch.no_grad()
def rollout(
    model: MaskedDiffusionTransformer,
    z: torch.Tensor,
    times: np.ndarray,
    rng: torch.Generator | None = None,
) -> torch.Tensor:
    """Run the reverse steps ``times[0] -> times[1] -> ...`` then arg-max noise removal."""
    for a, b in zip(times[:-1], times[1:]):
        z = reverse_step(model, z, float(a), float(b), rng=rng)
    return denoise_argmax(model, z)


@torch.no_grad()
def sample(
    model: MaskedDiffusionTransformer,
    n: int,
    L: int,
    n_steps: int,
    rng: torch.Generator | None = None,
    eps: float = 1e-5,
    batch: int = 256,
) -> torch.Tensor:
    """Unguided samples: ``n`` all-mask sequences of length ``L`` through ``n_steps`` reverse steps (``rng``: torch generator).

    Returns:
        (n, L) int64 ids (no ``[MASK]`` left).

    Raises:
        ValueError: ``n, L, n_steps < 1``, ``L`` > the model's ``max_len``.
    """
    n = check_int(n, "n", low=1)
    L = check_int(L, "L", low=1, high=model.config["max_len"])
    n_steps = check_int(n_steps, "n_steps", low=1)
    check_real(eps, "eps", low=0.0, high=1.0, low_open=True, high_open=True)
    was = model.training
    model.eval()
    out = []
    times = time_grid(n_steps, eps)
    for i in range(0, n, batch):
        z = torch.full(
            (min(batch, n - i), L),
            model.mask_id,
            dtype=torch.long,
            device=model.pos.device,
        )
        out.append(rollout(model, z, times, rng).cpu())
    model.train(was)
    return torch.cat(out)


def sample_smiles(
    model: MaskedDiffusionTransformer,
    n: int,
    L: int,
    n_steps: int,
    rng: torch.Generator | None = None,
) -> list[str]:
    """:func:`sample` decoded to SMILES strings."""
    return model.tokenizer.decode_batch(sample(model, n, L, n_steps, rng).numpy())


def save_checkpoint(
    model: MaskedDiffusionTransformer, path: str | Path, extra: dict | None = None
) -> None:
    """Save weights (fp32), config and vocabulary to ``path``."""
    torch.save(
        {
            "state_dict": {
                k: v.detach().float() for k, v in model.state_dict().items()
            },
            "config": model.config,
            "vocab": model.tokenizer.itos[2:],
            "extra": extra or {},
        },
        path,
    )


def load_checkpoint(path: str | Path) -> tuple[MaskedDiffusionTransformer, dict]:
    """Load a :func:`save_checkpoint` file -> ``(model in eval mode, extra)``.

    Raises:
        FileNotFoundError: no such file. ValueError: not a PepTune checkpoint.
    """
    ck = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ck, dict) or not {"state_dict", "config", "vocab"} <= set(ck):
        raise ValueError(f"{path} is not a PepTune checkpoint")
    model = MaskedDiffusionTransformer(SmilesTokenizer(ck["vocab"]), **ck["config"])
    model.load_state_dict(ck["state_dict"])
    model.eval()
    return model, ck.get("extra", {})

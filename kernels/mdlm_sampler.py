"""PepTune kernels (chapter 18, Tang et al., ICML 2025): fused MDLM reverse step, Pareto reward.

Two kernels (``mdlm_sampler.cu``), each with a reference (the contract), a CuPy launcher and a
dispatcher:

- :func:`reverse_step`: one DDPM-with-caching step of absorbing diffusion. For every position of
  ``z_t`` that is ``[MASK]``, draw ``z_s`` from ``q(z_s | z_t) ∝ p_x0 · (t − s)`` on the real tokens
  and ``s`` on ``[MASK]`` by Gumbel-max with the given noise; visible tokens are copied. The
  reference is PyTorch on the same noise tensor; the two agree token for token (up to ties of
  float32 rounding in ``log``, measure zero).
- :func:`pareto_reward`: MCTG's reward of candidates ``S (n, K)`` against the front ``F (f, K)``,
  ``r[i, k] = mean_j 1[S[i, k] >= F[j, k]]`` (``1`` for an empty front), and whether each
  candidate is dominated by a front member. Reference: NumPy.

The dispatchers use the kernel when :func:`icml25.common.gpu_available` says so (and the inputs
can be moved there), else the reference; ``ICML25_FORCE_CPU=1`` forces the reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.checks import check_array, check_int, check_real
from icml25.common import gpu_available

__all__ = [
    "reverse_step_kernel",
    "reverse_step_reference",
    "reverse_step_gpu",
    "pareto_reward",
    "pareto_reward_reference",
    "pareto_reward_gpu",
]

_BLOCK = 256


def _check_step(p_x0: Any, z_t: Any, t: Any, s: Any, gumbel: Any, mask_id: Any):
    import torch

    if not isinstance(p_x0, torch.Tensor) or p_x0.dim() != 3:
        raise ValueError(
            f"p_x0 must be a (B, L, V) torch tensor, got {getattr(p_x0, 'shape', type(p_x0))}"
        )
    B, L, V = (int(v) for v in p_x0.shape)
    if not isinstance(z_t, torch.Tensor) or tuple(z_t.shape) != (B, L):
        raise ValueError(
            f"z_t must be a ({B}, {L}) integer tensor, got {getattr(z_t, 'shape', type(z_t))}"
        )
    if torch.is_floating_point(z_t):
        raise ValueError("z_t must hold integer token ids")
    if not isinstance(gumbel, torch.Tensor) or tuple(gumbel.shape) != (B, L, V):
        raise ValueError(
            f"gumbel must be a ({B}, {L}, {V}) tensor, got {getattr(gumbel, 'shape', type(gumbel))}"
        )
    t = check_real(t, "t", low=0.0, high=1.0)
    s = check_real(s, "s", low=0.0, high=1.0)
    if not s < t:
        raise ValueError(f"s must be < t, got t={t}, s={s}")
    mask_id = check_int(mask_id, "mask_id", low=0, high=V - 1)
    if torch.isnan(p_x0).any() or (p_x0 < 0).any():
        raise ValueError("p_x0 must be non-negative probabilities (no NaN)")
    if torch.isnan(gumbel).any():
        raise ValueError("gumbel must not hold NaN")
    if z_t.numel() and (int(z_t.min()) < 0 or int(z_t.max()) >= V):
        raise ValueError(f"z_t must hold token ids in [0, {V})")
    return t, s, mask_id


def reverse_step_reference(
    p_x0: Any, z_t: Any, t: float, s: float, gumbel: Any, mask_id: int
) -> Any:
    """One reverse step ``z_t -> z_s`` (reference, PyTorch).

    Args:
        p_x0: (B, L, V) float tensor, the denoiser's probabilities of the clean token (SUBS).
        z_t: (B, L) integer tensor of token ids at time ``t``.
        t, s: times, ``0 <= s < t <= 1``.
        gumbel: (B, L, V) float tensor of standard Gumbel noise.
        mask_id: the ``[MASK]`` id.

    Returns:
        (B, L) tensor of ``z_t``'s dtype: visible tokens copied; a masked position takes
        ``argmax(log p_v + log(t − s) + g_v  for v != mask;  log s + g_mask)``.

    Raises:
        ValueError: shapes, ``t``/``s`` outside [0, 1] or ``s >= t``, NaN or negative ``p_x0``,
            NaN ``gumbel``, ``z_t`` ids outside ``[0, V)``.
    """
    import torch

    t, s, mask_id = _check_step(p_x0, z_t, t, s, gumbel, mask_id)
    g = gumbel.to(torch.float32)
    score = torch.log(p_x0.to(torch.float32)) + np.float32(math.log(t - s)) + g
    score[..., mask_id] = (
        np.float32(math.log(s) if s > 0 else -math.inf) + g[..., mask_id]
    )
    new = score.argmax(dim=-1).to(z_t.dtype)
    return torch.where(z_t == mask_id, new, z_t)


def reverse_step_gpu(
    p_x0: Any, z_t: Any, t: float, s: float, gumbel: Any, mask_id: int
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`reverse_step_kernel` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    p = cp.ascontiguousarray(p_x0, dtype=cp.float32)
    z = cp.ascontiguousarray(z_t, dtype=cp.int32)
    g = cp.ascontiguousarray(gumbel, dtype=cp.float32)
    B, L, V = (int(v) for v in p.shape)
    out = cp.empty((B, L), dtype=cp.int32)
    fn = load_module("mdlm_sampler").get_function("reverse_step")
    n = B * L
    log_s = math.log(s) if s > 0 else -math.inf
    fn(
        ((n + _BLOCK - 1) // _BLOCK,),
        (_BLOCK,),
        (
            p,
            z,
            g,
            out,
            np.int64(n),
            np.int32(V),
            np.int32(mask_id),
            np.float32(math.log(t - s)),
            np.float32(log_s),
        ),
    )
    return out


def reverse_step_kernel(
    p_x0: Any, z_t: Any, t: float, s: float, gumbel: Any, mask_id: int
) -> Any:
    """The fused reverse step (contract of :func:`reverse_step_reference`), torch in, torch out.

    CUDA tensors go through the kernel (via DLPack) when a GPU is usable, else the reference.
    """
    import torch

    if p_x0.is_cuda and gpu_available():  # pragma: no cover - GPU
        import cupy as cp

        t, s, mask_id = _check_step(p_x0, z_t, t, s, gumbel, mask_id)
        out = reverse_step_gpu(
            cp.from_dlpack(p_x0.detach().float().contiguous()),
            cp.from_dlpack(z_t.to(torch.int32).contiguous()),
            t,
            s,
            cp.from_dlpack(gumbel.float().contiguous()),
            mask_id,
        )
        return torch.from_dlpack(out).to(z_t.dtype)
    return reverse_step_reference(p_x0, z_t, t, s, gumbel, mask_id)


# ------------------------------------------------------------------------ Pareto reward


def _check_reward(S: Any, F: Any) -> tuple[np.ndarray, np.ndarray]:
    S = check_array(S, "S", ndim=2, dtype=np.float32)
    K = S.shape[1]
    F = np.asarray(F, dtype=np.float32)
    if F.size == 0:
        F = F.reshape(0, K)
    F = check_array(F, "F", ndim=2, dtype=np.float32)
    if F.shape[1] != K:
        raise ValueError(
            f"F must have shape (f, {K}) to match S {S.shape}, got {F.shape}"
        )
    return S, F


def pareto_reward_reference(S: Any, F: Any) -> tuple[np.ndarray, np.ndarray]:
    """MCTG's Pareto reward (reference, NumPy loop over the front).

    Args:
        S: (n, K) scores of the candidates (larger is better in every objective).
        F: (f, K) scores of the current front (``f`` may be 0).

    Returns:
        ``(R, dominated)``: R (n, K) float32, ``R[i, k] = (1/f) sum_j 1[S[i, k] >= F[j, k]]``
        (all ones when ``f = 0``); ``dominated`` (n,) bool, True when a front member is ``>=``
        in every objective and ``>`` in one.

    Raises:
        ValueError: not 2-D, mismatched K, NaN or inf.
    """
    S, F = _check_reward(S, F)
    n, K = S.shape
    if F.shape[0] == 0:
        return np.ones((n, K), dtype=np.float32), np.zeros(n, dtype=bool)
    R = np.zeros((n, K), dtype=np.float32)
    dom = np.zeros(n, dtype=bool)
    for f in F:
        R += (S >= f).astype(np.float32)
        dom |= np.all(f >= S, axis=1) & np.any(f > S, axis=1)
    return (R / np.float32(F.shape[0])).astype(np.float32), dom


def pareto_reward_gpu(S: Any, F: Any) -> tuple[Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`pareto_reward` (arrays in, CuPy arrays out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    S = cp.ascontiguousarray(cp.asarray(S, dtype=cp.float32))
    F = cp.ascontiguousarray(cp.asarray(F, dtype=cp.float32))
    n, K = (int(v) for v in S.shape)
    f = int(F.shape[0])
    R = cp.empty((n, K), dtype=cp.float32)
    dom = cp.empty(n, dtype=cp.int32)
    fn = load_module("mdlm_sampler").get_function("pareto_reward")
    fn(
        ((n + _BLOCK - 1) // _BLOCK,),
        (_BLOCK,),
        (
            S,
            F if f else cp.zeros((1, K), cp.float32),
            R,
            dom,
            np.int32(n),
            np.int32(f),
            np.int32(K),
        ),
    )
    return R, dom.astype(cp.bool_)


def pareto_reward(S: Any, F: Any) -> tuple[np.ndarray, np.ndarray]:
    """MCTG's Pareto reward (contract of :func:`pareto_reward_reference`); NumPy out.

    The kernel runs when a GPU is usable, else the reference.
    """
    S, F = _check_reward(S, F)
    if gpu_available():  # pragma: no cover - GPU
        import cupy as cp

        R, dom = pareto_reward_gpu(S, F)
        return cp.asnumpy(R), cp.asnumpy(dom)
    return pareto_reward_reference(S, F)

"""PARS kernels (chapter 15, Kim et al., ICML 2025): ensemble layer, TD target, infeasible sampler.

Three kernels (``pars_kernels.cu``), each with a reference (the contract), a CuPy launcher and a
dispatcher:

- :func:`ensemble_layer`: ``relu(LN(W[e] x[e] + b[e]))`` for all ``E`` members at once, the hidden
  layer of the PARS critic ensemble. Torch in, torch out (the critic path); the reference is
  ``torch.einsum`` + ``F.layer_norm`` and is differentiable. The CUDA kernel has no backward, so
  the dispatcher uses it only for CUDA tensors that need no gradient (probes, evaluation).
- :func:`td_target`: ``c r + gamma (1 - d) min_{e in K} q[e]`` in one pass (the target needs no
  gradient, so the kernel serves training too). Torch in, torch out, or NumPy in, NumPy out.
- :func:`infeasible_actions`: actions with every coordinate ``+-U (1 + u)``, ``u`` uniform in
  ``[0, 1)`` from the counter-based hash :func:`icml25.kernels._splitmix64` (no curand), so every
  ``|a_i|`` lies in ``[U, 2U]``. NumPy out; the same integers on both paths.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_real, check_tensor
from icml25.common import gpu_available
from icml25.kernels import _splitmix64

__all__ = [
    "LN_EPS",
    "ensemble_layer",
    "ensemble_layer_reference",
    "ensemble_layer_gpu",
    "td_target",
    "td_target_reference",
    "td_target_gpu",
    "infeasible_actions",
    "infeasible_actions_reference",
    "infeasible_actions_gpu",
]

#: LayerNorm epsilon (torch's default, as flax's LayerNorm uses 1e-6: the
#: difference is below 1e-4)
LN_EPS = 1e-5
_BLOCK = 128
_MAX_H = 8 * _BLOCK  # the kernel keeps at most 8 features per thread in registers


def _is_torch(a: Any) -> bool:
    import torch

    return isinstance(a, torch.Tensor)


# ----------------------------------------------------------------------- ensemble layer


def _check_layer(x: Any, W: Any, b: Any, g: Any, beta: Any) -> tuple[Any, ...]:
    x = check_tensor(x, "x", ndim=3)
    W = check_tensor(W, "W", ndim=3)
    E, B, I = (int(v) for v in x.shape)
    if tuple(W.shape[:2]) != (E, I):
        raise ValueError(
            f"W must have shape (E, I, H) = ({E}, {I}, H) to match x {tuple(x.shape)}, got {tuple(W.shape)}"
        )
    H = int(W.shape[2])
    out = [x, W]
    for name, t in (("b", b), ("g", g), ("beta", beta)):
        t = check_tensor(t, name, ndim=2)
        if tuple(t.shape) != (E, H):
            raise ValueError(
                f"{name} must have shape (E, H) = ({E}, {H}), got {tuple(t.shape)}"
            )
        out.append(t)
    for name, t in zip(("W", "b", "g", "beta"), out[1:]):
        if t.dtype != x.dtype:
            raise TypeError(
                f"{name} must have the dtype of x ({x.dtype}), got {t.dtype}"
            )
    return tuple(out)


def _layer_torch(x: Any, W: Any, b: Any, g: Any, beta: Any, layer_norm: bool) -> Any:
    """``relu(LN(x[e] W[e] + b[e]))`` for every member ``e``; LN over the hidden axis with gain ``g`` and
    shift ``beta`` per member (the LN sits before the ReLU, on hidden layers only)."""
    import torch
    import torch.nn.functional as F

    # b + x W for every member in one batched GEMM
    z = torch.baddbmm(b[:, None, :], x, W)
    if layer_norm:
        z = (
            F.layer_norm(z, (z.shape[-1],), eps=LN_EPS) * g[:, None, :]
            + beta[:, None, :]
        )
    return torch.relu(z)


def ensemble_layer_reference(
    x: Any, W: Any, b: Any, g: Any, beta: Any, layer_norm: bool = True
) -> Any:
    """One hidden layer of the critic ensemble, all members at once (reference, differentiable).

    Args:
        x: (E, B, I) float tensor, the inputs of each member.
        W: (E, I, H) weights; b, g, beta: (E, H) bias, LayerNorm gain and shift.
        layer_norm: apply LN before the ReLU (PARS, TD3+BC+LN) or not (plain TD3+BC).

    Returns:
        (E, B, H) tensor on the input's device.

    Raises:
        TypeError: not tensors. ValueError: wrong ranks or shapes (naming the argument), non-finite values.
    """
    x, W, b, g, beta = _check_layer(x, W, b, g, beta)
    return _layer_torch(x, W, b, g, beta, bool(layer_norm))


def ensemble_layer_gpu(
    x: Any, W: Any, b: Any, g: Any, beta: Any, layer_norm: bool = True
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`ensemble_layer` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    x, W, b, g, beta = (
        cp.ascontiguousarray(cp.asarray(a, dtype=cp.float32))
        for a in (x, W, b, g, beta)
    )
    E, B, I = (int(v) for v in x.shape)
    H = int(W.shape[2])
    y = cp.empty((E, B, H), dtype=cp.float32)
    fn = load_module("pars_kernels").get_function("ensemble_layer")
    fn(
        (E * B,),
        (_BLOCK,),
        (
            x,
            W,
            b,
            g,
            beta,
            y,
            np.int64(E),
            np.int64(B),
            np.int64(I),
            np.int64(H),
            np.int32(1 if layer_norm else 0),
            np.float32(LN_EPS),
        ),
        shared_mem=2 * _BLOCK * 4,
    )
    return y


def ensemble_layer(
    x: Any,
    W: Any,
    b: Any,
    g: Any,
    beta: Any,
    layer_norm: bool = True,
    validate: bool = True,
) -> Any:
    """The fused ensemble layer (contract of :func:`ensemble_layer_reference`).

    CUDA tensors that need no gradient go through the kernel (via DLPack) when a GPU is usable;
    everything else takes the differentiable torch reference. Torch in, torch out.

    ``validate=False`` skips the shape and finiteness checks (a third of a CPU forward at E = 10,
    H = 256): for callers whose weights were shaped at construction, such as
    :class:`icml25.pars.EnsembleCritic`, which checks its inputs once per forward.
    """
    if validate:
        x, W, b, g, beta = _check_layer(x, W, b, g, beta)
    needs_grad = any(t.requires_grad for t in (x, W, b, g, beta))
    if (
        x.is_cuda and not needs_grad and int(W.shape[2]) <= _MAX_H and gpu_available()
    ):  # pragma: no cover - GPU
        import cupy as cp
        import torch

        y = ensemble_layer_gpu(
            *(
                cp.from_dlpack(t.detach().float().contiguous())
                for t in (x, W, b, g, beta)
            ),
            layer_norm=bool(layer_norm),
        )
        return torch.from_dlpack(y)
    return _layer_torch(x, W, b, g, beta, bool(layer_norm))


# ---------------------------------------------------------------------------- TD target


def _check_target(
    q: Any, members: Any, r: Any, d: Any, c: Any, gamma: Any
) -> tuple[Any, ...]:
    torch_in = _is_torch(q)
    if torch_in:
        q = check_tensor(q, "q", ndim=2)
        r = check_tensor(r, "r", ndim=1)
        d = check_tensor(d, "d", ndim=1)
    else:
        q = check_array(q, "q", ndim=2, dtype=np.float32)
        r = check_array(r, "r", ndim=1, dtype=np.float32)
        d = check_array(d, "d", ndim=1, dtype=np.float32)
    E, B = (int(v) for v in q.shape)
    for name, t in (("r", r), ("d", d)):
        if int(t.shape[0]) != B:
            raise ValueError(
                f"{name} must have length B = {B} (q is {tuple(q.shape)}), got {int(t.shape[0])}"
            )
    mem = np.asarray(members.detach().cpu().numpy() if _is_torch(members) else members)
    if mem.ndim != 1 or mem.size == 0 or not np.issubdtype(mem.dtype, np.integer):
        raise ValueError(
            f"members must be a non-empty 1-d integer array of member indices, got {mem!r}"
        )
    if mem.min() < 0 or mem.max() >= E or np.unique(mem).size != mem.size:
        raise ValueError(
            f"members must be distinct indices in [0, E = {E}), got {mem.tolist()}"
        )
    return (
        q,
        mem.astype(np.int64),
        r,
        d,
        check_real(c, "c", low=0.0, low_open=True),
        check_real(gamma, "gamma", low=0.0, high=1.0),
    )


def _target_math(q: Any, members: Any, r: Any, d: Any, c: float, gamma: float) -> Any:
    """``y = c r + gamma (1 - d) min_{e in K} q_e`` (Sec. 4 of the paper, TD target of PARS; ``K`` =
    ``members``, a random k-subset of the E target critics; ``d`` marks true terminals only)."""
    qk = q[members]
    m = qk.min(dim=0).values if _is_torch(qk) else qk.min(axis=0)
    return c * r + gamma * (1.0 - d) * m


def td_target_reference(
    q: Any, members: Any, r: Any, d: Any, c: float, gamma: float
) -> Any:
    """The PARS TD target (reference).

    Args:
        q: (E, B) target-critic values at ``(s', pi'(s') + eps)``, torch or NumPy (float32).
        members: (k,) distinct member indices in ``[0, E)``, the random subset.
        r: (B,) rewards (unscaled); d: (B,) 1 for true terminals, 0 otherwise (time-outs are 0).
        c: reward scale ``c_reward > 0``; gamma: discount in [0, 1].

    Returns:
        (B,) targets, torch for torch input (on its device), NumPy float32 otherwise.

    Raises:
        TypeError / ValueError naming the argument: wrong ranks, lengths, indices, c <= 0, gamma outside [0, 1].
    """
    q, mem, r, d, c, gamma = _check_target(q, members, r, d, c, gamma)
    if _is_torch(q):
        import torch

        return _target_math(q, torch.as_tensor(mem, device=q.device), r, d, c, gamma)
    return _target_math(q, mem, r, d, c, gamma).astype(np.float32)


def td_target_gpu(
    q: Any, members: Any, r: Any, d: Any, c: float, gamma: float
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`td_target` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    q, r, d = (cp.ascontiguousarray(cp.asarray(a, dtype=cp.float32)) for a in (q, r, d))
    mem = cp.asarray(np.asarray(members, dtype=np.int32))
    B = int(q.shape[1])
    out = cp.empty(B, dtype=cp.float32)
    fn = load_module("pars_kernels").get_function("td_target")
    grid = max(1, min((B + _BLOCK - 1) // _BLOCK, 1024))
    fn(
        (grid,),
        (_BLOCK,),
        (
            q,
            mem,
            r,
            d,
            out,
            np.int64(B),
            np.int32(mem.size),
            np.float32(c),
            np.float32(gamma),
        ),
    )
    return out


def td_target(q: Any, members: Any, r: Any, d: Any, c: float, gamma: float) -> Any:
    """The PARS TD target (contract of :func:`td_target_reference`); the kernel on a GPU.

    CUDA tensors go through the kernel via DLPack (the result carries no gradient: a target
    never does); NumPy input takes the kernel on a GPU machine.
    """
    q, mem, r, d, c, gamma = _check_target(q, members, r, d, c, gamma)
    if _is_torch(q):
        import torch

        if q.is_cuda and gpu_available():  # pragma: no cover - GPU
            import cupy as cp

            y = td_target_gpu(
                *(cp.from_dlpack(t.detach().float().contiguous()) for t in (q,)),
                mem,
                cp.from_dlpack(r.detach().float().contiguous()),
                cp.from_dlpack(d.detach().float().contiguous()),
                c,
                gamma,
            )
            return torch.from_dlpack(y)
        return _target_math(q, torch.as_tensor(mem, device=q.device), r, d, c, gamma)
    if gpu_available():  # pragma: no cover - GPU
        return td_target_gpu(q, mem, r, d, c, gamma).get()
    return _target_math(q, mem, r, d, c, gamma).astype(np.float32)


# ------------------------------------------------------------------- infeasible sampler


#: the largest guard U whose samples (up to 2U) are finite in float32
_U_MAX = 1e37


def _check_sampler(
    B: Any, act_dim: Any, U: Any, seed: Any
) -> tuple[int, int, float, int]:
    B = check_int(B, "B", low=1)
    act_dim = check_int(act_dim, "act_dim", low=1)
    # 2U must be a finite float32
    U = check_real(U, "U", low=1.0, low_open=True, high=_U_MAX)
    seed = check_int(seed, "seed", low=0, high=2**64 - 1)
    # the reference holds ~4 uint64/float64 work arrays of B * act_dim entries
    check_budget(
        f"infeasible_actions(B={B}, act_dim={act_dim})", n_bytes=40.0 * B * act_dim
    )
    return B, act_dim, U, seed


def infeasible_actions_reference(
    B: int, act_dim: int, U: float, seed: int
) -> np.ndarray:
    """Infeasible actions, every coordinate ``+-U (1 + u)`` with ``u`` in ``[0, 1)`` (reference).

    For flat index ``i`` of the row-major (B, act_dim) output: ``h = splitmix64(splitmix64(seed) ^ i)``,
    sign from bit 0 of ``h``, ``u = (h >> 11) 2^-53``. The sampler of the paper draws each coordinate
    uniformly from ``[-2U, -U] u [U, 2U]`` (reconstruction from a third-party transcription of the
    official sampler; the official code was not readable here).

    Args:
        B: number of actions; act_dim: their dimension; U: guard > 1 (the box is [-1, 1]^act_dim);
        seed: the counter's key, an integer in [0, 2^64).

    Returns:
        (B, act_dim) float32, every |a_i| in [U, 2U].

    Raises:
        TypeError / ValueError naming the argument: B or act_dim < 1, U <= 1 or U > 1e37 (2U must fit
        float32), seed outside [0, 2^64); TooLargeError: B * act_dim too large for memory.
    """
    B, act_dim, U, seed = _check_sampler(B, act_dim, U, seed)
    mixed = _splitmix64(np.array([seed], dtype=np.uint64))[0]
    h = _splitmix64(mixed ^ np.arange(B * act_dim, dtype=np.uint64))
    u = (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    mag = (U * (1.0 + u)).astype(np.float32)
    return np.where((h & np.uint64(1)) == 1, -mag, mag).reshape(B, act_dim)


def infeasible_actions_gpu(
    B: int, act_dim: int, U: float, seed: int
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`infeasible_actions` (a CuPy array out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    n = B * act_dim
    out = cp.empty(n, dtype=cp.float32)
    fn = load_module("pars_kernels").get_function("infeasible_actions")
    grid = max(1, min((n + _BLOCK - 1) // _BLOCK, 1024))
    fn((grid,), (_BLOCK,), (out, np.int64(n), np.uint64(seed), np.float32(U)))
    return out.reshape(B, act_dim)


def infeasible_actions(B: int, act_dim: int, U: float, seed: int) -> np.ndarray:
    """Infeasible actions (contract of :func:`infeasible_actions_reference`); NumPy out on both paths."""
    B, act_dim, U, seed = _check_sampler(B, act_dim, U, seed)
    if gpu_available():  # pragma: no cover - GPU
        return infeasible_actions_gpu(B, act_dim, U, seed).get()
    return infeasible_actions_reference(B, act_dim, U, seed)

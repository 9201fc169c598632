r"""Chapter 07 kernels: a velocity MLP with its exact divergence in one forward-mode pass, and the
Euler integrator of the likelihood ODE built on it (Flow and Divergence Matching, Huang et al.,
ICML 2025).

**Why this kernel.** Evaluating a flow model's negative log-likelihood with the *exact*
divergence is the cost that dominates evaluation: the instantaneous change of variables
:math:`\log p_1(x_1) = \log p_0(x_0) - \int_0^1 \nabla\!\cdot v(x_t, t)\,dt` needs
:math:`\mathrm{tr}\,\partial_x v` at each of the ``n_steps`` points of every trajectory, which
reverse-mode autograd pays for with :math:`d` backward passes per step (or a ``vmap(jacrev)``
that materialises the ``(B, d, d)`` Jacobian through a tape): a :math:`d`-fold cost over
sampling, with all activations written to and read back from memory for every pass. Forward
mode gets :math:`v` and the whole Jacobian in *one* sweep that carries the :math:`d` unit
tangents beside the activations: a Linear maps the tangent matrix
:math:`T\in\mathbb R^{\text{in}\times d}` to :math:`WT`, SiLU scales row :math:`j` by
:math:`\mathrm{silu}'(a_j)`, and at the output :math:`T = \partial_x v`, whose trace is the
divergence. The arithmetic is still :math:`(d+1)` forward passes; what changes is where the
data lives. For one sample the whole state is a ``(width, d+1)`` matrix, at most
:math:`512\times 33` floats (66 KiB) for hidden :math:`\le 512` and :math:`d \le 32`, so it
fits in one thread block's shared memory and the whole Euler trajectory of a sample (every
layer of every step) runs in one block with no tape, no autograd bookkeeping and no global
memory traffic beyond reading the weights. On the CPU, where that advantage is absent, the
PyTorch forward-mode reference runs at the speed of the :math:`d`-VJP loop and 1.4-1.9x faster
than ``vmap(jacrev)`` (``benchmarks/results/flow_divergence.json``); the single-step routine
is also the exact divergence an FDM training loss needs for small :math:`d`.

Functions (for each ``f``: ``f_reference`` in PyTorch, ``f_gpu`` the CuPy launcher of
``flow_divergence.cu``, ``f`` the dispatcher: GPU when :func:`icml25.common.gpu_available`, else
the reference; ``ICML25_FORCE_CPU=1`` forces the reference):

- ``mlp_velocity_divergence(params, x (B,d), t (B,)) -> (v (B,d), div (B,))``.
- ``euler_log_likelihood(params, x1 (B,d), n_steps) -> logp (B,)``: reverse-time explicit Euler
  from :math:`t=1` to :math:`t=0` with :math:`h = 1/n`, :math:`t_k = 1 - kh`,
  :math:`x \leftarrow x - h\,v(x, t_k)`, :math:`I \leftarrow I + h\,\nabla\!\cdot v(x, t_k)`,
  and :math:`\log p = \log\mathcal N(x_0; 0, I_d) - I`.

``params`` is the list of ``(W (out, in), b (out,))`` of the network
``z = [x, t] -> Linear -> SiLU -> ... -> Linear -> v`` (``VelocityMLP.linear_params()``).

**Design choices.** One CUDA block per group of ``S`` samples (``S`` in {1, 2, 4, 8}, chosen by
the launcher), threads over (hidden unit, tile of 4 columns), where the columns are the value
and ``d`` tangent columns of each sample of the group: the weights are shared, so a layer is a
single product of ``W`` with all ``S (d+1)`` columns and every weight read feeds several FMAs.
Weights are packed transposed into one float32 buffer (:func:`pack_params`) so that threads over
output units read consecutive floats. All Euler steps run inside *one* launch: the samples are
independent, so no grid-wide barrier is needed between steps, and a launch per step would only
add launch latency and a round trip of ``x`` through global memory. Dynamic shared memory per
block, in bytes (:func:`shared_memory_bytes`)::

    4 * (2 * S * NCOLS * LD + S * (d + 2)),
    NCOLS = 4 * ceil((d + 1) / 4),   LD = max(d + 1, max hidden width)

which at the limits ``d = 32``, hidden ``= 512`` and ``S = 1`` is 147,592 B: within the opt-in
per-block limit of the A100 (166,912 B) and H100/H200 (232,448 B). Larger ``d`` or hidden widths
raise ``ValueError`` (in the dispatcher too, so code that runs on the CPU runs on the GPU).

**Tolerance.** The kernel is float32 (fused multiply-adds, a different summation order than
PyTorch); it must match the float32 reference within ``1e-4 * max(1, |ref|)`` elementwise
(:data:`GPU_RTOL`), for single steps and for whole Euler trajectories.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from icml25.checks import (
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_tensor,
)
from icml25.common import gpu_available

__all__ = [
    "MAX_DIM",
    "MAX_HIDDEN",
    "GPU_RTOL",
    "SUPPORTED_ACTIVATIONS",
    "shared_memory_bytes",
    "pack_params",
    "mlp_velocity_divergence_reference",
    "mlp_velocity_divergence_gpu",
    "mlp_velocity_divergence",
    "euler_log_likelihood_reference",
    "euler_log_likelihood_gpu",
    "euler_log_likelihood",
]

MAX_DIM = 32
MAX_HIDDEN = 512
GPU_RTOL = 1e-4
SUPPORTED_ACTIVATIONS = ("swish", "silu")
TILE = 4  # tangent columns per thread, as in flow_divergence.cu
_MAX_GRID = 1 << 20  # the kernels grid-stride over samples beyond this many blocks
_LOG_2PI = math.log(2.0 * math.pi)

Params = Sequence[tuple[Any, Any]]
Points = torch.Tensor | np.ndarray
Times = torch.Tensor | np.ndarray | float


# --------------------------------------------------------------------------------------
# Validation (public boundary), built from icml25.checks; the network layout and the
# kernel's size limits are this chapter's own rules
# --------------------------------------------------------------------------------------


def _float_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _check_points(x: Any, name: str) -> torch.Tensor:
    """(B, d) finite real points, d >= 1, as a torch tensor on their device (NumPy/CuPy converted)."""
    x = check_tensor(x, name, ndim=2, floating=False)
    if x.shape[1] < 1:
        raise ValueError(
            f"{name} must have shape (B, d) with d >= 1, got {tuple(x.shape)}"
        )
    return x


def _check_params(params: Params, d: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The MLP's layer list for input dimension d: [(W (out, in), b (out,)), ...], first in = d + 1
    (the input is [x, t]), each in = the previous out, last out = d."""
    if (
        isinstance(params, (str, bytes))
        or not isinstance(params, Sequence)
        or len(params) == 0
    ):
        raise ValueError(
            "params must be a non-empty list of (W (out, in), b (out,)) pairs"
        )
    out: list[tuple[torch.Tensor, torch.Tensor]] = []
    n_in = d + 1
    for l, pair in enumerate(params):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"params[{l}] must be a pair (W, b)")
        W = check_tensor(pair[0], f"params[{l}][0]", floating=False)
        b = check_tensor(pair[1], f"params[{l}][1]", floating=False)
        if W.ndim != 2:
            raise ValueError(
                f"params[{l}]: W must be 2-D (out, in), got shape {tuple(W.shape)}"
            )
        if W.shape[1] != n_in:
            what = (
                "d + 1 = x.shape[1] + 1 (the input is [x, t])"
                if l == 0
                else "the previous layer's out"
            )
            raise ValueError(
                f"params[{l}]: W has in = {W.shape[1]}, expected {n_in} ({what})"
            )
        if b.shape != (W.shape[0],):
            raise ValueError(
                f"params[{l}]: b must have shape ({W.shape[0]},), got {tuple(b.shape)}"
            )
        out.append((W, b))
        n_in = W.shape[0]
    if n_in != d:
        raise ValueError(
            f"params[-1]: the last layer must output d = {d} values, got {n_in}"
        )
    return out


def _check_times(t: Any, B: int) -> torch.Tensor:
    """(B,) times in [0, 1], a scalar broadcast to (B,)."""
    if t is None:
        raise TypeError("t must be a (B,) tensor/array of times or a scalar, got None")
    t = check_tensor(t, "t", finite=False, floating=False)
    if t.ndim == 0:
        t = t.expand(B)
    if t.shape != (B,):
        raise ValueError(
            f"t must have shape (B,) = ({B},) or be a scalar, got {tuple(t.shape)}"
        )
    if B > 0 and not bool((torch.isfinite(t) & (t >= 0) & (t <= 1)).all()):
        raise ValueError(
            f"t must be finite and lie in [0, 1], got min {float(t.min()):.4g}, max {float(t.max()):.4g}"
        )
    return t


def _check_euler_budget(
    what: str, layers: list[tuple[torch.Tensor, torch.Tensor]], B: int, n_steps: int
) -> None:
    """Refuse an Euler likelihood whose work cannot fit: ``n_steps`` x ``B`` x (d + 1) forward
    passes of 2 x parameters operations, plus 1e3 per step for dispatching its torch calls."""
    d = layers[-1][0].shape[0]
    flops = 2.0 * sum(W.numel() + b.numel() for W, b in layers)
    check_budget(
        f"{what}(n_steps={n_steps})", n_operations=n_steps * (B * flops * (d + 1) + 1e3)
    )


def _check_kernel_limits(
    params: list[tuple[torch.Tensor, torch.Tensor]], d: int
) -> None:
    if d > MAX_DIM:
        raise ValueError(
            f"d = {d} > {MAX_DIM}: the fused kernel keeps a (width, d+1) tangent matrix per sample in "
            f"shared memory (4 * (2 * NCOLS * LD + d + 2) bytes, NCOLS = 4 ceil((d+1)/4)); use the "
            f"torch path for larger d"
        )
    widest = max(W.shape[0] for W, _ in params[:-1]) if len(params) > 1 else 0
    if widest > MAX_HIDDEN:
        raise ValueError(
            f"hidden width {widest} > {MAX_HIDDEN}: too large for the fused kernel's shared memory "
            f"(4 * (2 * NCOLS * LD + d + 2) bytes, LD = max hidden width)"
        )


def shared_memory_bytes(
    d: int, widths: Sequence[int], samples_per_block: int = 1
) -> int:
    """Dynamic shared memory (bytes) of one block of the kernels for input dimension ``d``.

    ``4 * (2 * S * NCOLS * LD + S * (d + 2))`` with ``S = samples_per_block``,
    ``NCOLS = 4 * ceil((d + 1) / 4)`` (value column plus ``d`` tangent columns, padded to the
    thread tile) and ``LD = max(widths)``: two column buffers, then x (S, d), t (S,) and the
    divergence integrals (S,).

    Args:
        d: data dimension (>= 1).
        widths: all layer widths including the input ``d + 1`` and the output ``d``.
        samples_per_block: samples sharing one block (and its weight reads).

    Raises:
        ValueError: ``d < 1``, empty or non-positive ``widths``, ``samples_per_block < 1``.
    """
    d = check_int(d, "d", low=1)
    widths = [check_int(w, f"widths[{i}]", low=1) for i, w in enumerate(widths)]
    if not widths:
        raise ValueError("widths must be a non-empty sequence of positive ints, got []")
    S = check_int(samples_per_block, "samples_per_block", low=1)
    ncols = TILE * ((d + 1 + TILE - 1) // TILE)
    ld = max(max(widths), d + 1)
    return 4 * (2 * S * ncols * ld + S * (d + 2))


# --------------------------------------------------------------------------------------
# PyTorch reference
# --------------------------------------------------------------------------------------


def _forward_tangent(
    params: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor, t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """v (B,d) and div (B,) by forward-mode tangents; params already on x's device and dtype.

    The tangents of sample b are Ta[b] (d, width): row k = d(pre-activations)/dx_k (the
    transpose of the kernel's column layout), so a Linear's tangent map is one GEMM ``Ta @ W^T``
    over all B d rows.
    """
    B, d = x.shape
    W0, b0 = params[0]
    # z = [x, t] -> pre-activation (B, out)
    a = torch.cat([x, t[:, None]], dim=1) @ W0.T + b0
    # the input's tangents are e_1..e_d (0 for t): dz/dx W0^T
    Ta = W0[:, :d].T.expand(B, -1, -1)
    for W, b in params[1:]:
        s = torch.sigmoid(a)
        ds = s * (1.0 + a * (1.0 - s))  # silu'(a)
        a = (a * s) @ W.T + b  # Linear(silu(a))
        # its tangent: (silu'(a) * T) W^T, as one GEMM over the B d rows
        Ta = ((ds[:, None, :] * Ta).reshape(B * d, -1) @ W.T).reshape(B, d, -1)
    # a = v (B, d); Ta[b, k, j] = dv_j / dx_k, so the divergence is its trace
    return a, Ta.diagonal(dim1=1, dim2=2).sum(-1)


def _prepare(params: Params, x: Any, t: Any | None = None):
    x = _check_points(x, "x" if t is not None else "x1")
    B, d = x.shape
    layers = _check_params(params, d)
    dtype = _float_dtype(x)
    x = x.to(dtype)
    layers = [
        (W.to(device=x.device, dtype=dtype), b.to(device=x.device, dtype=dtype))
        for W, b in layers
    ]
    if t is not None:
        t = _check_times(t, B).to(device=x.device, dtype=dtype)
    return layers, x, t


def mlp_velocity_divergence_reference(
    params: Params, x: Points, t: Times, act: str = "swish"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Velocity and exact divergence of the SiLU MLP by forward-mode tangents (PyTorch).

    Propagates the ``d`` unit tangents e_1..e_d with the activations: a Linear maps the tangent
    matrix T to W T, SiLU scales row j by silu'(a_j) = s_j (1 + a_j (1 - s_j)); at the output
    T = dv/dx and div v = trace(T) (the divergence in the FDM loss and the likelihood ODE, Sec. 3
    of Huang et al., ICML 2025). Differentiable with respect to ``params`` and ``x`` when those
    require grad.

    Args:
        params: list of L >= 1 pairs ``(W (out, in), b (out,))`` of ``z = [x, t] -> Linear ->
            SiLU -> ... -> Linear``; torch tensors or arrays. First ``in = d + 1``, last ``out = d``.
        x: (B, d) finite points (torch tensor on any device, or NumPy).
        t: (B,) times in [0, 1] (or a scalar, broadcast).
        act: activation, ``"swish"``/``"silu"`` only.

    Returns:
        ``(v (B, d), div (B,))`` torch tensors on x's device, float64 if x is float64 else float32.

    Raises:
        ValueError: shapes of params/x/t inconsistent, NaN/inf in x or t, t outside [0, 1], or
            unsupported ``act``.
        TypeError: x or t is not real-valued (or t is None).
    """
    check_choice(act, "act", SUPPORTED_ACTIVATIONS)
    if t is None:
        raise TypeError("t must be a (B,) tensor/array of times or a scalar, got None")
    layers, x, t = _prepare(params, x, t)
    return _forward_tangent(layers, x, t)


def euler_log_likelihood_reference(
    params: Params,
    x1: Points,
    n_steps: int,
    act: str = "swish",
    return_all: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log p_1(x1) of the flow by the reverse-time Euler scheme with exact divergence (PyTorch).

    Along dx/dt = v(x, t), d/dt log p_t(x_t) = -div v(x_t, t), so log p_1(x_1) = log p_0(x_0) -
    int_0^1 div v(x_t, t) dt with p_0 = N(0, I_d) (instantaneous change of variables, the
    likelihood of Sec. 5 of Huang et al.). Integrates backward from t = 1 with ``n_steps``
    explicit Euler steps, h = 1/n_steps, t_k = 1 - k h (k = 0..n_steps-1), evaluating v and div
    at the current point (the scheme of the CUDA kernel, step for step):
    ``I += h * div v(x, t_k); x -= h * v(x, t_k)``.

    Args:
        params: the MLP's ``(W, b)`` list (see :func:`mlp_velocity_divergence_reference`).
        x1: (B, d) data points.
        n_steps: number of Euler steps (>= 1).
        act: ``"swish"``/``"silu"`` only.
        return_all: also return the end point ``x0 (B, d)`` and the integral ``I (B,)``.

    Returns:
        ``logp (B,)`` in nats (or ``(logp, x0, I)``), torch, x1's device, float64 if x1 is
        float64 else float32.

    Raises:
        ValueError: inconsistent shapes, NaN/inf in x1, ``n_steps < 1`` or unsupported ``act``.
        TypeError: ``n_steps`` not an int, or x1 not real-valued.
        TooLargeError: ``n_steps`` so large that the work cannot fit.
    """
    check_choice(act, "act", SUPPORTED_ACTIVATIONS)
    n_steps = check_int(n_steps, "n_steps", low=1)
    layers, x, _ = _prepare(params, x1)
    _check_euler_budget("euler_log_likelihood_reference", layers, x.shape[0], n_steps)
    logp, x0, integral = _euler_log_likelihood(layers, x, n_steps)
    return (logp, x0, integral) if check_bool(return_all, "return_all") else logp


def _euler_log_likelihood(
    layers: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor, n_steps: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``log p_1(x_1) = log N(x_0; 0, I_d) - I`` by reverse Euler with ``h = 1/n``, ``t_k = 1 - k h``:
    ``I <- I + h div v(x, t_k)``, ``x <- x - h v(x, t_k)``; returns ``(logp, x_0, I)``."""
    B, d = x.shape
    h = 1.0 / n_steps
    integral = torch.zeros(B, dtype=x.dtype, device=x.device)
    for k in range(n_steps):
        t = torch.full((B,), 1.0 - k / n_steps, dtype=x.dtype, device=x.device)
        # velocity and exact divergence, one forward-mode pass
        v, div = _forward_tangent(layers, x, t)
        integral = integral + h * div
        x = x - h * v
    logp = -0.5 * (x * x).sum(1) - 0.5 * d * _LOG_2PI - integral
    return logp, x, integral


# --------------------------------------------------------------------------------------
# CUDA launchers
# --------------------------------------------------------------------------------------


def pack_params(params: Params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pack the layers into the kernels' float32 layout (NumPy; the launcher copies it to the GPU).

    Layer l occupies ``buf[offsets[l] : offsets[l] + in*out + out]``: ``W_l^T`` row-major
    (``in x out``, so ``buf[offsets[l] + i*out + j] = W_l[j, i]``) then ``b_l``.

    Returns:
        ``(buf (P,) float32, offsets (L,) int32, widths (L+1,) int32)`` with
        ``widths = [in_0, out_0, out_1, ..., out_{L-1}]``.

    Raises:
        ValueError: ``params`` is not a non-empty list of consistent ``(W, b)`` pairs of an MLP
            from ``d + 1`` inputs to ``d`` outputs.
    """
    if (
        isinstance(params, (str, bytes))
        or not isinstance(params, Sequence)
        or len(params) == 0
    ):
        raise ValueError(
            "params must be a non-empty list of (W (out, in), b (out,)) pairs"
        )
    first = params[0]
    W0 = (
        check_tensor(first[0], "params[0][0]", floating=False)
        if isinstance(first, (tuple, list)) and len(first) == 2
        else None
    )
    if W0 is None or W0.ndim != 2:
        raise ValueError("params[0] must be a pair (W (out, in), b (out,))")
    layers = _check_params(params, int(W0.shape[1]) - 1)
    chunks, offsets, widths = [], [], []
    pos = 0
    for W, b in layers:
        W = np.asarray(W.detach().cpu().numpy(), dtype=np.float32)
        b = np.asarray(b.detach().cpu().numpy(), dtype=np.float32)
        if not widths:
            widths.append(W.shape[1])
        widths.append(W.shape[0])
        offsets.append(pos)
        chunks += [np.ascontiguousarray(W.T).ravel(), b.ravel()]
        pos += W.size + b.size
    return (
        np.concatenate(chunks),
        np.asarray(offsets, np.int32),
        np.asarray(widths, np.int32),
    )


def _launch_config(
    d: int, widths: np.ndarray, B: int, samples_per_block: int | None
):  # pragma: no cover - needs a GPU
    """(NCOLS, LD, S, shared bytes, threads, grid) for B samples."""
    import cupy as cp

    rt = cp.cuda.runtime
    dev = cp.cuda.Device().id
    ncols = TILE * ((d + 1 + TILE - 1) // TILE)
    ld = int(max(widths.max(), d + 1))
    if samples_per_block is None:
        # as many samples per block as fit in 64 KiB (they share the weight reads), but
        # keep at least 4 blocks per SM
        n_sm = rt.deviceGetAttribute(rt.cudaDevAttrMultiProcessorCount, dev)
        S = 8
        while S > 1 and (
            shared_memory_bytes(d, widths.tolist(), S) > 64 * 1024
            or -(-B // S) < 4 * n_sm
        ):
            S //= 2
    else:
        S = check_int(samples_per_block, "samples_per_block", low=1)
    smem = shared_memory_bytes(d, widths.tolist(), S)
    limit = rt.deviceGetAttribute(rt.cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)
    if smem > limit:
        raise ValueError(
            f"the kernel needs {smem} B of shared memory per block; this GPU allows {limit} B"
        )
    work = int(widths[1:].max()) * (S * ncols // TILE)
    threads = int(min(512, max(32, 32 * ((work + 31) // 32))))
    grid = int(min(max(-(-B // S), 1), _MAX_GRID))
    return ncols, ld, S, smem, threads, grid


def _get_kernel(name: str, smem: int):  # pragma: no cover - needs a GPU
    from icml25.kernels import load_module

    kernel = load_module("flow_divergence").get_function(name)
    if smem > 48 * 1024 and kernel.max_dynamic_shared_size_bytes < smem:
        kernel.max_dynamic_shared_size_bytes = smem  # opt in beyond the 48 KiB default
    return kernel


def _to_cupy_f32(a: Any):  # pragma: no cover - needs a GPU
    import cupy as cp

    if isinstance(a, torch.Tensor):
        a = a.detach()
        if a.is_cuda:
            return cp.ascontiguousarray(
                cp.from_dlpack(a.contiguous()), dtype=cp.float32
            )
        a = a.cpu().numpy()
    return cp.ascontiguousarray(cp.asarray(a, dtype=cp.float32))


def _gpu_setup(
    params: Params, x: Any, act: str, name: str, samples_per_block: int | None
):  # pragma: no cover - needs a GPU
    import cupy as cp

    check_choice(act, "act", SUPPORTED_ACTIVATIONS)
    # check the shape without a copy to the host
    if type(x).__module__.startswith("cupy"):
        if x.ndim != 2 or x.shape[1] < 1:
            raise ValueError(
                f"{name} must have shape (B, d) with d >= 1, got {tuple(x.shape)}"
            )
        B, d = x.shape
    else:
        B, d = _check_points(x, name).shape
    layers = _check_params(params, d)
    _check_kernel_limits(layers, d)
    buf, offsets, widths = pack_params(layers)
    config = _launch_config(d, widths, B, samples_per_block)
    dev = (cp.asarray(buf), cp.asarray(offsets), cp.asarray(widths))
    return _to_cupy_f32(x), B, d, len(layers), dev, config


def mlp_velocity_divergence_gpu(
    params: Params,
    x: Any,
    t: Any,
    act: str = "swish",
    samples_per_block: int | None = None,
) -> tuple[Any, Any]:  # pragma: no cover - needs a GPU
    """CuPy launcher of ``mlp_velocity_divergence_kernel`` (float32; one block per S samples).

    Same arguments as :func:`mlp_velocity_divergence_reference` (torch CPU/CUDA, NumPy or CuPy);
    ``samples_per_block`` (S) overrides the automatic choice (the largest of 8, 4, 2, 1 whose
    shared memory fits in 64 KiB while leaving >= 4 blocks per SM).

    Returns:
        ``(v (B, d), div (B,))`` float32 CuPy arrays.

    Raises:
        ValueError: as the reference, and ``d > 32`` or a hidden width > 512.
    """
    import cupy as cp

    xc, B, d, L, (buf, offsets, widths), (ncols, ld, S, smem, threads, grid) = (
        _gpu_setup(params, x, act, "x", samples_per_block)
    )
    tc = _to_cupy_f32(_check_times(t, B))
    v = cp.empty((B, d), dtype=cp.float32)
    div = cp.empty((B,), dtype=cp.float32)
    if B == 0:
        return v, div
    kernel = _get_kernel("mlp_velocity_divergence_kernel", smem)
    kernel(
        (grid,),
        (threads,),
        (
            buf,
            offsets,
            widths,
            np.int32(L),
            xc,
            tc,
            v,
            div,
            np.int32(B),
            np.int32(d),
            np.int32(ncols),
            np.int32(ld),
            np.int32(S),
        ),
        shared_mem=smem,
    )
    return v, div


def euler_log_likelihood_gpu(
    params: Params,
    x1: Any,
    n_steps: int,
    act: str = "swish",
    return_all: bool = False,
    samples_per_block: int | None = None,
) -> Any:  # pragma: no cover - needs a GPU
    """CuPy launcher of ``euler_log_likelihood_kernel``: all ``n_steps`` in one launch, float32.

    Same arguments and scheme as :func:`euler_log_likelihood_reference`; ``samples_per_block``
    as in :func:`mlp_velocity_divergence_gpu`.

    Returns:
        ``logp (B,)`` float32 CuPy array, or ``(logp, x0 (B, d), I (B,))``.

    Raises:
        ValueError: as the reference, and ``d > 32`` or a hidden width > 512.
        TooLargeError: ``n_steps`` so large that the work cannot fit.
    """
    import cupy as cp

    n_steps = check_int(n_steps, "n_steps", low=1)
    xc, B, d, L, (buf, offsets, widths), (ncols, ld, S, smem, threads, grid) = (
        _gpu_setup(params, x1, act, "x1", samples_per_block)
    )
    _check_euler_budget(
        "euler_log_likelihood_gpu", _check_params(params, d), B, n_steps
    )
    x0 = cp.empty((B, d), dtype=cp.float32)
    integral = cp.empty((B,), dtype=cp.float32)
    logp = cp.empty((B,), dtype=cp.float32)
    if B > 0:
        kernel = _get_kernel("euler_log_likelihood_kernel", smem)
        kernel(
            (grid,),
            (threads,),
            (
                buf,
                offsets,
                widths,
                np.int32(L),
                xc,
                np.int32(n_steps),
                x0,
                integral,
                logp,
                np.int32(B),
                np.int32(d),
                np.int32(ncols),
                np.int32(ld),
                np.int32(S),
            ),
            shared_mem=smem,
        )
    return (logp, x0, integral) if return_all else logp


# --------------------------------------------------------------------------------------
# Dispatchers
# --------------------------------------------------------------------------------------


def _like(a, ref: Any) -> torch.Tensor:  # pragma: no cover - needs a GPU
    """A CuPy result as a torch tensor on the device of the input ``ref``."""
    if isinstance(ref, torch.Tensor) and ref.is_cuda:
        return torch.from_dlpack(a).to(ref.device)
    return torch.from_numpy(a.get())


def mlp_velocity_divergence(
    params: Params, x: Points, t: Times, act: str = "swish"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatcher: the CUDA kernel when a GPU is usable, else :func:`mlp_velocity_divergence_reference`.

    Same arguments; returns torch tensors ``(v (B, d), div (B,))`` on x's device (float32 from the
    GPU; the reference keeps float64 inputs in float64). The kernel limits (``d <= 32``, hidden
    width ``<= 512``) are enforced on every device.

    Raises:
        ValueError: as the reference, ``d > 32`` or a hidden width > 512.
    """
    check_choice(act, "act", SUPPORTED_ACTIVATIONS)
    xt = _check_points(x, "x")
    layers = _check_params(params, xt.shape[1])
    _check_kernel_limits(layers, xt.shape[1])
    if gpu_available():  # pragma: no cover - needs a GPU
        v, div = mlp_velocity_divergence_gpu(layers, x, t, act)
        return _like(v, x), _like(div, x)
    return mlp_velocity_divergence_reference(layers, xt, t, act)


def euler_log_likelihood(
    params: Params,
    x1: Points,
    n_steps: int,
    act: str = "swish",
    return_all: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dispatcher: the CUDA kernel when a GPU is usable, else :func:`euler_log_likelihood_reference`.

    Same arguments; returns torch tensors on x1's device (``logp (B,)``, or ``(logp, x0, I)``).
    This is what ``icml25.flow_divergence.log_likelihood(model, x1, n_steps, exact=True)`` calls.

    Raises:
        ValueError: as the reference, ``d > 32`` or a hidden width > 512.
        TypeError: ``n_steps`` not an int.
        TooLargeError: ``n_steps`` so large that the work cannot fit.
    """
    check_choice(act, "act", SUPPORTED_ACTIVATIONS)
    n_steps = check_int(n_steps, "n_steps", low=1)
    xt = _check_points(x1, "x1")
    layers = _check_params(params, xt.shape[1])
    _check_kernel_limits(layers, xt.shape[1])
    _check_euler_budget("euler_log_likelihood", layers, xt.shape[0], n_steps)
    if gpu_available():  # pragma: no cover - needs a GPU
        out = euler_log_likelihood_gpu(layers, x1, n_steps, act, return_all)
        return tuple(_like(o, x1) for o in out) if return_all else _like(out, x1)
    return euler_log_likelihood_reference(layers, xt, n_steps, act, return_all)

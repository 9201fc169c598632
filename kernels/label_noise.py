"""Label corruption and the three-term consistency sums of predictive consistency learning (chapter 19).

PCL (Li et al., ICML 2025) feeds the model a noise-corrupted copy of the label. The corruption is
the hot elementwise loop of training (two corruptions per step) and of multistep inference (one
re-corruption per step). Kernels (``label_noise.cu``), each with a PyTorch reference (the
contract), a CuPy launcher and a dispatcher:

- :func:`categorical_corrupt`: labels ``(B, H, W)`` int or probabilities ``(B, K, H, W)``,
  per-sample ``alpha_bar_t (B,)`` and uniforms ``(B, 2, H, W)`` -> one-hot ``(B, K, H, W)``.
  A position keeps its class with probability ``alpha_bar_t`` (``u[:, 0] < alpha_bar_t``), else
  takes the class ``floor(u[:, 1] K)``; for probabilities the kept class is drawn from the row by
  the inverse CDF at ``u[:, 1]``. This is the uniform-transition kernel
  ``q(y_t | y) = Cat(alpha_bar_t e_y + (1 - alpha_bar_t) 1/K)`` (a reconstruction: the paper's
  exact categorical kernel could not be read).
- :func:`gaussian_corrupt`: ``sqrt(alpha_bar_t) y + sqrt(1 - alpha_bar_t) eps`` (DDPM forward).
- :func:`pcl_terms`: the sums behind the three PCL terms for MSE,
  ``(mean (a - y)^2, mean (b - y)^2, mean (a - b)^2)``, float64.

Dispatchers take NumPy arrays (returning NumPy) or torch tensors (returning torch, on the input's
device): the CUDA kernel runs for CUDA tensors, or for NumPy input when a GPU is usable; the
reference runs otherwise. Random draws are the caller's: pass ``uniforms``/``eps``, or ``rng`` (a
``torch.Generator``, or ``None`` for torch's global generator).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_torch_generator
from icml25.common import gpu_available

__all__ = [
    "categorical_corrupt",
    "categorical_corrupt_reference",
    "categorical_corrupt_gpu",
    "gaussian_corrupt",
    "gaussian_corrupt_reference",
    "gaussian_corrupt_gpu",
    "pcl_terms",
    "pcl_terms_reference",
    "pcl_terms_gpu",
]

_THREADS = 256


def _torch():
    import torch

    return torch


def _to_torch(a: Any, name: str, floating: bool) -> tuple[Any, bool]:
    """``(tensor, was_numpy)``: NumPy/list input becomes a CPU tensor (float32 or int64)."""
    torch = _torch()
    if isinstance(a, torch.Tensor):
        return a, False
    arr = check_array(a, name, kind="float" if floating else "int")
    return torch.as_tensor(arr.astype(np.float32) if floating else arr), True


def _check_categorical(
    y: Any, alpha_bar_t: Any, K: Any, uniforms: Any
) -> tuple[Any, Any, int, Any, bool]:
    """Validate the categorical contract; returns ``(y, alpha_bar_t, K, uniforms, numpy_in)``."""
    torch = _torch()
    K = check_int(K, "K", low=2)
    numpy_in = not isinstance(y, torch.Tensor)
    if numpy_in:
        y_arr = np.asarray(y)
        y, _ = _to_torch(
            y_arr, "y", floating=bool(np.issubdtype(y_arr.dtype, np.floating))
        )
    if y.dtype == torch.bool:
        raise TypeError(
            f"y must hold integer labels or float probabilities, got dtype {y.dtype}"
        )
    if y.is_floating_point():
        if y.ndim < 2 or y.shape[1] != K:
            raise ValueError(
                f"y (probabilities) must have shape (B, K={K}, ...), got {tuple(y.shape)}"
            )
        if y.numel():
            yd = y.detach()
            if (
                not bool(torch.isfinite(yd).all())
                or float(yd.min()) < 0.0
                or float(yd.max()) > 1.0
            ):
                raise ValueError("y (probabilities) must be finite and lie in [0, 1]")
            if float((yd.sum(1) - 1.0).abs().max()) > 1e-3:
                raise ValueError(
                    "y (probabilities) must sum to 1 over the class axis 1 (within 1e-3)"
                )
        spatial = (y.shape[0], *y.shape[2:])
    else:
        if y.ndim < 1:
            raise ValueError(
                f"y (labels) must have shape (B, ...), got {tuple(y.shape)}"
            )
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= K):
            raise ValueError(
                f"y must hold labels in [0, K={K}), got range [{int(y.min())}, {int(y.max())}]"
            )
        spatial = tuple(y.shape)
    a, _ = _to_torch(alpha_bar_t, "alpha_bar_t", floating=True)
    if a.ndim != 1 or a.shape[0] != spatial[0]:
        raise ValueError(
            f"alpha_bar_t must have shape (B={spatial[0]},), got {tuple(a.shape)}"
        )
    if a.numel() and (
        not bool(torch.isfinite(a).all())
        or float(a.min()) < 0.0
        or float(a.max()) > 1.0
    ):
        raise ValueError("alpha_bar_t must be finite and lie in [0, 1]")
    u, _ = _to_torch(uniforms, "uniforms", floating=True)
    want = (spatial[0], 2, *spatial[1:])
    if tuple(u.shape) != want:
        raise ValueError(f"uniforms must have shape {want}, got {tuple(u.shape)}")
    if u.numel() and (
        not bool(torch.isfinite(u).all())
        or float(u.min()) < 0.0
        or float(u.max()) >= 1.0
    ):
        raise ValueError("uniforms must be finite and lie in [0, 1)")
    check_budget(
        f"categorical corruption of {spatial} positions into K={K} classes",
        n_bytes=4.0 * (K + 3) * float(np.prod(spatial)),
    )
    return y, a.to(y.device, torch.float32), K, u.to(y.device, torch.float32), numpy_in


def _draw_uniforms(y: Any, K: int, rng: Any) -> Any:
    torch = _torch()
    gen = check_torch_generator(rng, "rng")
    if isinstance(y, torch.Tensor):
        shape, floating, device = tuple(y.shape), y.is_floating_point(), y.device
    else:
        arr = np.asarray(y)
        shape, floating, device = (
            arr.shape,
            bool(np.issubdtype(arr.dtype, np.floating)),
            "cpu",
        )
    if len(shape) < (2 if floating else 1):
        raise ValueError(
            f"y must have shape (B, ...) (labels) or (B, K, ...) (probabilities), got {shape}"
        )
    spatial = (shape[0], *shape[2:]) if floating else shape
    check_budget(
        f"categorical corruption of {tuple(spatial)} positions into K={K} classes",
        n_bytes=4.0 * (K + 3) * float(np.prod(spatial)),
    )
    # draw on the generator's device (a CPU generator may feed CUDA tensors), then move
    return torch.rand(
        (spatial[0], 2, *spatial[1:]),
        generator=gen,
        device=gen.device if gen is not None else device,
    ).to(device)


def categorical_corrupt_reference(
    y: Any, alpha_bar_t: Any, K: int, uniforms: Any
) -> Any:
    """One-hot uniform-transition corruption of labels or probabilities (PyTorch reference).

    ``c = y`` (labels) or ``c = #{k : u1 >= cumsum(p)_k}`` (probabilities, inverse CDF) where
    ``u0 < alpha_bar_t``, else ``c = min(floor(u1 K), K - 1)``; the output is ``one_hot(c)``.
    Marginally ``P(y_t = k) = alpha_bar_t p_k + (1 - alpha_bar_t) / K``.

    Args:
        y: ``(B, ...)`` integer labels in [0, K), or ``(B, K, ...)`` float probabilities.
        alpha_bar_t: ``(B,)`` float in [0, 1], the keep probability of each sample.
        K: number of classes, >= 2.
        uniforms: ``(B, 2, ...)`` float in [0, 1): ``[:, 0]`` decides keep, ``[:, 1]`` the class.

    Returns:
        ``(B, K, ...)`` float32 one-hot, a torch tensor (NumPy if ``y`` was NumPy).

    Raises:
        TypeError: non-numeric inputs. ValueError: shapes, label range, ``alpha_bar_t`` or
        ``uniforms`` outside their ranges.
    """
    y, a, K, u, numpy_in = _check_categorical(y, alpha_bar_t, K, uniforms)
    out = _categorical_torch(y, a, K, u)
    return out.numpy() if numpy_in else out


def _categorical_torch(y: Any, a: Any, K: int, u: Any) -> Any:
    torch = _torch()
    shape = (-1,) + (1,) * (u.ndim - 2)
    keep = u[:, 0] < a.view(shape)
    random_class = torch.clamp((u[:, 1] * K).long(), max=K - 1)
    if y.is_floating_point():
        cdf = torch.cumsum(y.float(), dim=1)
        src = torch.clamp((u[:, 1:2] >= cdf).sum(dim=1), max=K - 1)
    else:
        src = y.long()
    c = torch.where(keep, src, random_class)
    return torch.nn.functional.one_hot(c, K).movedim(-1, 1).to(torch.float32)


def _launch(fn_name: str, n: int, args: tuple) -> None:  # pragma: no cover - GPU
    import cupy

    from icml25.kernels import load_module

    fn = load_module("label_noise").get_function(fn_name)
    fn(((n + _THREADS - 1) // _THREADS,), (_THREADS,), args)
    cupy.cuda.get_current_stream().synchronize()


def categorical_corrupt_gpu(
    y: Any, alpha_bar_t: Any, K: int, uniforms: Any
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`categorical_corrupt` (CuPy arrays in and out, validated inputs)."""
    import cupy

    B = int(y.shape[0])
    P = int(np.prod(uniforms.shape[2:])) if uniforms.ndim > 2 else 1
    out = cupy.empty((B, K, *uniforms.shape[2:]), dtype=cupy.float32)
    u = cupy.ascontiguousarray(uniforms, dtype=cupy.float32)
    a = cupy.ascontiguousarray(alpha_bar_t, dtype=cupy.float32)
    if cupy.issubdtype(y.dtype, cupy.floating):
        _launch(
            "categorical_corrupt_probs",
            B * P,
            (
                cupy.ascontiguousarray(y, dtype=cupy.float32),
                a,
                u,
                out,
                np.int32(B),
                np.int32(K),
                np.int64(P),
            ),
        )
    else:
        _launch(
            "categorical_corrupt_labels",
            B * P,
            (
                cupy.ascontiguousarray(y, dtype=cupy.int32),
                a,
                u,
                out,
                np.int32(B),
                np.int32(K),
                np.int64(P),
            ),
        )
    return out


def _use_gpu(t: Any, numpy_in: bool) -> bool:
    return gpu_available() and (numpy_in or (t.is_cuda))


def _to_cupy(t: Any) -> Any:  # pragma: no cover - GPU
    import cupy

    return cupy.from_dlpack(t.contiguous() if not t.is_cuda else t.contiguous())


def categorical_corrupt(
    y: Any, alpha_bar_t: Any, K: int, uniforms: Any = None, rng: Any = None
) -> Any:
    """Dispatcher of :func:`categorical_corrupt_reference` (CUDA kernel on a GPU).

    Args:
        y, alpha_bar_t, K: as :func:`categorical_corrupt_reference`.
        uniforms: ``(B, 2, ...)`` uniforms, or ``None`` to draw them from ``rng``.
        rng: ``torch.Generator`` for the uniforms (``None``: torch's global generator).

    Returns:
        ``(B, K, ...)`` float32 one-hot (torch in, torch out on the input's device; NumPy in,
        NumPy out).

    Raises:
        TypeError, ValueError: as :func:`categorical_corrupt_reference`; ``rng`` not a generator.
    """
    if uniforms is None:
        uniforms = _draw_uniforms(y, check_int(K, "K", low=2), rng)
    y, a, K, u, numpy_in = _check_categorical(y, alpha_bar_t, K, uniforms)
    if _use_gpu(y, numpy_in):  # pragma: no cover - GPU
        import cupy
        import torch

        dev = y.device if y.is_cuda else torch.device("cuda")
        out = categorical_corrupt_gpu(
            _to_cupy(y.to(dev)), _to_cupy(a.to(dev)), K, _to_cupy(u.to(dev))
        )
        return cupy.asnumpy(out) if numpy_in else torch.from_dlpack(out)
    out = _categorical_torch(y, a, K, u)
    return out.numpy() if numpy_in else out


def _check_gaussian(y: Any, alpha_bar_t: Any, eps: Any) -> tuple[Any, Any, Any, bool]:
    torch = _torch()
    numpy_in = not isinstance(y, torch.Tensor)
    y, _ = _to_torch(y, "y", floating=True)
    if not y.is_floating_point():
        raise TypeError(f"y must be a floating-point array, got dtype {y.dtype}")
    if y.ndim < 1:
        raise ValueError(f"y must have shape (B, ...), got {tuple(y.shape)}")
    a, _ = _to_torch(alpha_bar_t, "alpha_bar_t", floating=True)
    if a.ndim != 1 or a.shape[0] != y.shape[0]:
        raise ValueError(
            f"alpha_bar_t must have shape (B={y.shape[0]},), got {tuple(a.shape)}"
        )
    if a.numel() and (
        not bool(torch.isfinite(a).all())
        or float(a.min()) < 0.0
        or float(a.max()) > 1.0
    ):
        raise ValueError("alpha_bar_t must be finite and lie in [0, 1]")
    e, _ = _to_torch(eps, "eps", floating=True)
    if tuple(e.shape) != tuple(y.shape):
        raise ValueError(
            f"eps must have the shape of y {tuple(y.shape)}, got {tuple(e.shape)}"
        )
    return y, a.to(y.device, y.dtype), e.to(y.device, y.dtype), numpy_in


def gaussian_corrupt_reference(y: Any, alpha_bar_t: Any, eps: Any) -> Any:
    """``y_t = sqrt(alpha_bar_t) y + sqrt(1 - alpha_bar_t) eps`` per sample (PyTorch reference).

    Args:
        y: ``(B, ...)`` float labels. alpha_bar_t: ``(B,)`` in [0, 1]. eps: like ``y``.

    Returns:
        ``(B, ...)`` like ``y`` (NumPy if ``y`` was NumPy).

    Raises:
        TypeError: non-floating ``y``. ValueError: shapes, ``alpha_bar_t`` outside [0, 1].
    """
    y, a, e, numpy_in = _check_gaussian(y, alpha_bar_t, eps)
    out = _gaussian_torch(y, a, e)
    return out.numpy() if numpy_in else out


def _gaussian_torch(y: Any, a: Any, e: Any) -> Any:
    torch = _torch()
    a = a.view((-1,) + (1,) * (y.ndim - 1))
    return torch.sqrt(a) * y + torch.sqrt(1.0 - a) * e


def gaussian_corrupt_gpu(
    y: Any, alpha_bar_t: Any, eps: Any
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`gaussian_corrupt` (float32 CuPy arrays in and out)."""
    import cupy

    y = cupy.ascontiguousarray(y, dtype=cupy.float32)
    out = cupy.empty_like(y)
    B = int(y.shape[0])
    P = int(y.size // max(B, 1))
    _launch(
        "gaussian_corrupt",
        int(y.size),
        (
            y,
            cupy.ascontiguousarray(eps, dtype=cupy.float32),
            cupy.ascontiguousarray(alpha_bar_t, dtype=cupy.float32),
            out,
            np.int32(B),
            np.int64(P),
        ),
    )
    return out


def gaussian_corrupt(y: Any, alpha_bar_t: Any, eps: Any = None, rng: Any = None) -> Any:
    """Dispatcher of :func:`gaussian_corrupt_reference` (CUDA kernel for float32 on a GPU).

    Args:
        y, alpha_bar_t: as the reference. eps: like ``y``, or ``None`` to draw ``N(0, I)`` from
            ``rng`` (a ``torch.Generator``; ``None``: torch's global generator).

    Returns:
        ``(B, ...)`` like ``y``.

    Raises:
        TypeError, ValueError: as the reference; ``rng`` not a generator.
    """
    torch = _torch()
    if eps is None:
        yt, _ = _to_torch(y, "y", floating=True)
        gen = check_torch_generator(rng, "rng")
        eps = torch.randn(
            yt.shape,
            generator=gen,
            device=gen.device if gen is not None else yt.device,
            dtype=yt.dtype,
        ).to(yt.device)
        if not isinstance(y, torch.Tensor):
            eps = eps.numpy()
    y, a, e, numpy_in = _check_gaussian(y, alpha_bar_t, eps)
    if _use_gpu(y, numpy_in) and y.dtype == torch.float32:  # pragma: no cover - GPU
        import cupy

        dev = y.device if y.is_cuda else torch.device("cuda")
        out = gaussian_corrupt_gpu(
            _to_cupy(y.to(dev)), _to_cupy(a.to(dev)), _to_cupy(e.to(dev))
        )
        return cupy.asnumpy(out) if numpy_in else torch.from_dlpack(out)
    out = _gaussian_torch(y, a, e)
    return out.numpy() if numpy_in else out


def _check_terms(a: Any, b: Any, y: Any) -> tuple[Any, Any, Any, bool]:
    torch = _torch()
    numpy_in = not isinstance(a, torch.Tensor)
    a, _ = _to_torch(a, "a", floating=True)
    b, _ = _to_torch(b, "b", floating=True)
    y, _ = _to_torch(y, "y", floating=True)
    for name, t in (("b", b), ("y", y)):
        if tuple(t.shape) != tuple(a.shape):
            raise ValueError(
                f"{name} must have the shape of a {tuple(a.shape)}, got {tuple(t.shape)}"
            )
    if a.numel() == 0:
        raise ValueError("a must not be empty")
    for name, t in (("a", a), ("b", b), ("y", y)):
        if not bool(torch.isfinite(t.detach()).all()):
            raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    return a.detach(), b.detach().to(a.device), y.detach().to(a.device), numpy_in


def pcl_terms_reference(a: Any, b: Any, y: Any) -> np.ndarray:
    """The three MSE terms of the PCL loss, ``[mean (a-y)^2, mean (b-y)^2, mean (a-b)^2]``.

    ``a = f(x, y_t, t)``, ``b = f(x, y_t', t')`` and ``y`` the clean label (Eq. of Alg. 1 with
    ``d`` = MSE; the loss is ``lam1 (T0 + T1) + lam2 T2``). Accumulated in float64.

    Args:
        a, b, y: arrays or tensors of one shape (any), float.

    Returns:
        ``(3,)`` float64 NumPy array.

    Raises:
        ValueError: shapes differ or are empty. TypeError: non-numeric input.
    """
    a, b, y, _ = _check_terms(a, b, y)
    return _terms_torch(a, b, y)


def _terms_torch(a: Any, b: Any, y: Any) -> np.ndarray:
    a64, b64, y64 = (
        a.double().reshape(-1),
        b.double().reshape(-1),
        y.double().reshape(-1),
    )
    n = a64.numel()
    return np.array(
        [
            float(((a64 - y64) ** 2).sum()) / n,
            float(((b64 - y64) ** 2).sum()) / n,
            float(((a64 - b64) ** 2).sum()) / n,
        ]
    )


def pcl_terms_gpu(a: Any, b: Any, y: Any) -> np.ndarray:  # pragma: no cover - GPU
    """CuPy launcher of :func:`pcl_terms` (per-block partial sums, added on the host)."""
    import cupy

    from icml25.kernels import load_module

    a = cupy.ascontiguousarray(a, dtype=cupy.float32).ravel()
    n = int(a.size)
    blocks = int(min(1024, (n + _THREADS - 1) // _THREADS))
    partial = cupy.zeros((blocks, 3), dtype=cupy.float64)
    fn = load_module("label_noise").get_function("pcl_terms")
    fn(
        (blocks,),
        (_THREADS,),
        (
            a,
            cupy.ascontiguousarray(b, dtype=cupy.float32).ravel(),
            cupy.ascontiguousarray(y, dtype=cupy.float32).ravel(),
            np.int64(n),
            partial,
        ),
    )
    return cupy.asnumpy(partial).sum(axis=0) / n


def pcl_terms(a: Any, b: Any, y: Any) -> np.ndarray:
    """Dispatcher of :func:`pcl_terms_reference` (CUDA reduction on a GPU; float32 kernel inputs).

    Args:
        a, b, y: as the reference.

    Returns:
        ``(3,)`` float64 NumPy array.

    Raises:
        ValueError, TypeError: as the reference.
    """
    a, b, y, numpy_in = _check_terms(a, b, y)
    if _use_gpu(a, numpy_in):  # pragma: no cover - GPU
        return pcl_terms_gpu(
            _to_cupy(a.float().cuda()),
            _to_cupy(b.float().cuda()),
            _to_cupy(y.float().cuda()),
        )
    return _terms_torch(a, b, y)

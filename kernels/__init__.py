"""CUDA kernels for the chapters' hot loops, each beside the CPU reference it must match.

Pattern (one pair of files per kernel family ``NAME``):

- ``NAME.cu``: ``extern "C"`` CUDA C, compiled at run time by NVRTC through CuPy. It includes no
  CUDA headers beyond NVRTC's built-ins (no ``curand_kernel.h``: random numbers come from a
  counter-based generator written in the source), so it compiles on a machine without a GPU or a
  CUDA toolkit, from the ``nvidia-cuda-nvrtc-cu12`` wheel alone.
- ``NAME.py``: for each kernel function ``f``: ``f_reference`` (NumPy/PyTorch, the readable
  definition), ``f_gpu`` (the launcher, CuPy arrays in and out) and ``f`` (the dispatcher: the
  GPU when :func:`icml25.common.gpu_available` says so, else the reference;
  ``ICML25_FORCE_CPU=1`` forces the reference).

This module holds the shared plumbing: finding sources, compiling them with NVRTC (with or
without a GPU) and caching the loaded ``cupy.RawModule``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

KERNEL_DIR = Path(__file__).resolve().parent
DEFAULT_NVRTC_OPTIONS: tuple[str, ...] = ("-std=c++17",)

__all__ = ["KERNEL_DIR", "list_kernels", "kernel_source", "compile_ptx", "load_module"]


def list_kernels() -> list[str]:
    """Names of every ``NAME.cu`` in ``kernels/``."""
    return sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))


def kernel_source(name: str) -> str:
    """The CUDA source of kernel family ``name``.

    Raises:
        ValueError: no ``kernels/<name>.cu`` exists.
    """
    path = KERNEL_DIR / f"{name}.cu"
    if not path.exists():
        raise ValueError(f"no kernel source {path.name!r}; known: {list_kernels()}")
    return path.read_text()


def compile_ptx(
    name: str,
    arch: str = "compute_90",
    options: tuple[str, ...] = DEFAULT_NVRTC_OPTIONS,
) -> str:
    """Compile ``kernels/<name>.cu`` to PTX with NVRTC; works without a GPU or CUDA driver.

    Uses CuPy's low-level NVRTC binding (``cupy.cuda.nvrtc``), which only needs the NVRTC shared
    library (``nvidia-cuda-nvrtc-cu12``), not the CUDA runtime or a device.

    Args:
        name: kernel family name (file stem in ``kernels/``).
        arch: virtual architecture, e.g. ``"compute_90"`` (H100/H200).
        options: extra NVRTC options.

    Returns:
        The PTX text.

    Raises:
        ValueError: unknown kernel name.
        RuntimeError: NVRTC reported a compilation error (the log is in the message).
    """
    from cupy.cuda import nvrtc

    source = kernel_source(name)
    prog = nvrtc.createProgram(source, f"{name}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, (f"-arch={arch}", *options))
        except nvrtc.NVRTCError as err:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(
                f"NVRTC failed to compile {name}.cu ({err}):\n{log}"
            ) from err
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 of each uint64 of ``x`` (wrapping arithmetic), the counter-based hash every
    kernel family shares (``contraction``, ``triplets``); each ``.cu`` repeats it as a device
    function, since NVRTC sources include nothing. uint64 array in, uint64 array out."""
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@functools.lru_cache(maxsize=None)
def load_module(name: str, options: tuple[str, ...] = DEFAULT_NVRTC_OPTIONS) -> Any:
    """The compiled ``cupy.RawModule`` of ``kernels/<name>.cu`` (needs a GPU; cached)."""
    import cupy

    return cupy.RawModule(code=kernel_source(name), options=options, backend="nvrtc")

"""The machine's limits, measured once per benchmark run, and each hot loop's share of them.

Every benchmark script imports this module (``import _limits``: the scripts run from
``benchmarks/``), calls :func:`measure` once, in its own process and after it has set its thread
policy (one thread for NumPy's BLAS and torch in every benchmark of the book), and turns each hot
loop's count of bytes moved or floating-point operations and its seconds into an achieved rate
and a fraction of the matching limit with :func:`memory_bound` / :func:`compute_bound`.
:func:`attach` writes the limits, the provenance and the loops into the benchmark's JSON record,
where ``benchmarks/_summary.py`` finds them (key ``hot_loops``).

The limits (all measured here, none typed in):

- ``copy_Bps``: memory copy bandwidth of a large NumPy copy (``np.copyto`` of a 64 MiB float64
  array into a reused buffer, both far beyond the last-level cache), bytes read + bytes written
  per second. A memory-bound loop's fraction is its (bytes read + bytes written) / s over this.
- ``fp64_flops`` / ``fp32_flops``: NumPy BLAS matrix multiply (``A @ B``, square n = 768;
  2 n^3 floating-point operations) per second. A compute-bound loop's fraction is its
  floating-point operations / s over the rate of its precision.
- on a GPU (``cupy.is_available()``): ``gpu.copy_Bps``, a device-to-device copy of 512 MiB timed
  with CUDA events (read + write), ``gpu.nominal_hbm_Bps`` = 2 x memory clock x bus width from
  the device attributes, and their ratio ``gpu.copy_share_of_nominal``.

Times are CPU seconds of this process (``time.process_time``; median of the repeats), the clock
most benchmarks of the book use, so that other processes on a shared machine change the limits
and the loops alike, and a fraction compares two numbers measured side by side in one run.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

import numpy as np

# per array; two of them, 4x the 32 MiB last-level cache of this machine
COPY_BYTES = 64 << 20
MATMUL_N = 768
REPEATS = 5


def _median_cpu_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: page faults, BLAS buffers
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def _threads() -> dict[str, Any]:
    out: dict[str, Any] = {
        var: os.environ.get(var)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    try:
        from threadpoolctl import threadpool_info

        out["blas"] = [
            {"api": p.get("internal_api"), "num_threads": p.get("num_threads")}
            for p in threadpool_info()
        ]
    except ImportError:  # pragma: no cover
        pass
    if "torch" in sys.modules:
        out["torch"] = sys.modules["torch"].get_num_threads()
    return out


def _gpu_limits() -> dict[str, Any] | None:  # pragma: no cover - needs a GPU
    try:
        import cupy as cp

        if not cp.is_available():
            return None
    except Exception:  # noqa: BLE001 - no CuPy, or a CuPy without a usable driver
        return None
    out: dict[str, Any] = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    }
    src = cp.ones(512 << 20, dtype=cp.uint8)
    dst = cp.empty_like(src)
    for _ in range(3):
        cp.copyto(dst, src)
    times = []
    for _ in range(20):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cp.copyto(dst, src)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    out["copy_Bps"] = 2.0 * src.nbytes / float(np.median(times))
    try:
        attrs = cp.cuda.Device().attributes
        clock_khz, bus_bits = attrs["MemoryClockRate"], attrs["GlobalMemoryBusWidth"]
        # double data rate
        out["nominal_hbm_Bps"] = 2.0 * clock_khz * 1e3 * bus_bits / 8
        out["copy_share_of_nominal"] = out["copy_Bps"] / out["nominal_hbm_Bps"]
    except Exception as err:  # noqa: BLE001 - an attribute missing on some driver/toolkit pairs
        out["nominal_error"] = repr(err)
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()
    return out


def measure(
    copy_bytes: int = COPY_BYTES, matmul_n: int = MATMUL_N, repeats: int = REPEATS
) -> dict[str, Any]:
    """The machine's limits under this process's current thread policy (see the module docstring).

    Returns a JSON-ready dict: ``copy_Bps``, ``fp64_flops``, ``fp32_flops``, the sizes and clock
    used, the thread policy in force, and ``gpu`` (a dict, or ``None`` without a usable GPU).
    """
    t_start = time.perf_counter()
    src = np.ones(copy_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    # the lambda runs inside _median_cpu_seconds, before the del
    t_copy = _median_cpu_seconds(lambda: np.copyto(dst, src), repeats)  # noqa: F821
    del src, dst
    rng = np.random.default_rng(0)
    rates = {}
    for dt in (np.float64, np.float32):
        A = rng.standard_normal((matmul_n, matmul_n)).astype(dt)
        B = rng.standard_normal((matmul_n, matmul_n)).astype(dt)
        rates[np.dtype(dt).name] = (
            2.0 * matmul_n**3 / _median_cpu_seconds(lambda: A @ B, max(3, repeats - 2))
        )
    return {
        "copy_Bps": 2.0 * copy_bytes / t_copy,
        "fp64_flops": rates["float64"],
        "fp32_flops": rates["float32"],
        "how": (
            f"copy: np.copyto of {copy_bytes >> 20} MiB float64 into a reused buffer, read + write bytes; "
            f"matmul: NumPy BLAS {matmul_n}x{matmul_n} A @ B, 2 n^3 FLOPs; median CPU seconds "
            f"(time.process_time) of {repeats} runs"
        ),
        "threads": _threads(),
        "gpu": _gpu_limits(),
        "measure_seconds": time.perf_counter() - t_start,
    }


def _loop(
    loop: str,
    size: str,
    kind: str,
    amount: float,
    seconds: float,
    limit: float,
    limit_name: str,
    unit: str,
    baseline: str | None,
    ratio: float | None,
    counted: str,
) -> dict[str, Any]:
    achieved = amount / seconds if seconds > 0 else float("nan")
    return {
        "loop": loop,
        "size": size,
        "kind": kind,
        "amount": float(amount),
        "seconds": float(seconds),
        "achieved_per_s": achieved,
        "unit": unit,
        "limit_per_s": float(limit),
        "limit": limit_name,
        "fraction_of_limit": achieved / limit if limit > 0 else float("nan"),
        "baseline": baseline,
        "ratio_to_baseline": None if ratio is None else float(ratio),
        "counted": counted,
    }


def memory_bound(
    loop: str,
    size: str,
    n_bytes: float,
    seconds: float,
    limits: dict[str, Any],
    *,
    baseline: str | None = None,
    ratio: float | None = None,
    counted: str = "",
    on_gpu: bool = False,
) -> dict[str, Any]:
    """A memory-bound loop's entry: ``n_bytes`` (read + written) in ``seconds``, as bytes/s and as a
    fraction of the measured copy bandwidth (the device's with ``on_gpu``).

    ``ratio``: the loop's speed against its benchmark's baseline (baseline seconds / loop seconds,
    > 1 = faster than the baseline), named by ``baseline``; ``counted`` says how bytes were counted.
    """
    limit = limits["gpu"]["copy_Bps"] if on_gpu else limits["copy_Bps"]
    return _loop(
        loop,
        size,
        "memory",
        n_bytes,
        seconds,
        limit,
        "GPU copy bandwidth" if on_gpu else "copy bandwidth",
        "B/s",
        baseline,
        ratio,
        counted,
    )


def compute_bound(
    loop: str,
    size: str,
    flops: float,
    seconds: float,
    limits: dict[str, Any],
    *,
    precision: str = "fp64",
    baseline: str | None = None,
    ratio: float | None = None,
    counted: str = "",
) -> dict[str, Any]:
    """A compute-bound loop's entry: ``flops`` floating-point operations in ``seconds``, as FLOP/s
    and as a fraction of the measured BLAS matmul rate of ``precision`` (``"fp64"``/``"fp32"``)."""
    if precision not in ("fp64", "fp32"):
        raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
    return _loop(
        loop,
        size,
        "compute",
        flops,
        seconds,
        limits[f"{precision}_flops"],
        f"{precision} BLAS matmul",
        "FLOP/s",
        baseline,
        ratio,
        counted,
    )


def torch_flops(fn: Callable[[], object]) -> float:
    """Floating-point operations of one call of ``fn`` as torch's FLOP counter formulas count them
    (``torch.utils.flop_counter.flop_registry``: matrix products and convolutions, forward and
    backward, double backward included; elementwise work is not counted, so a fraction built on it
    is a lower bound). A dispatch mode without ``FlopCounterMode``'s module hooks, which refuse the
    ``autograd.grad`` calls of a divergence loss."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class _Count(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            formula = flop_registry.get(func._overloadpacket)
            if formula is not None:
                self.total += formula(*args, **kwargs, out_val=out)
            return out

    counter = _Count()
    with counter:
        fn()
    return float(counter.total)


def provenance(argv: list[str] | None = None) -> dict[str, Any]:
    """Where and when: UTC time, host, CPU model, load average, versions, command line."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover
        pass
    versions = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "torch", "cupy-cuda12x"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {
        "utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions,
        "command": " ".join(
            [os.path.basename(sys.argv[0])]
            + list(sys.argv[1:] if argv is None else argv)
        ),
    }


def attach(
    record: dict[str, Any], limits: dict[str, Any], loops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Put the measured ``limits``, the run's provenance and the ``hot_loops`` entries into ``record``."""
    record["machine_limits"] = limits
    record["limits_provenance"] = provenance()
    record["hot_loops"] = loops
    return record


def describe(limits: dict[str, Any]) -> str:
    """One line for a benchmark's log."""
    text = (
        f"limits: copy {limits['copy_Bps'] / 1e9:.1f} GB/s, fp64 BLAS {limits['fp64_flops'] / 1e9:.1f} GFLOP/s, "
        f"fp32 BLAS {limits['fp32_flops'] / 1e9:.1f} GFLOP/s"
    )
    if limits.get("gpu"):  # pragma: no cover - needs a GPU
        g = limits["gpu"]
        text += f"; GPU copy {g['copy_Bps'] / 1e9:.0f} GB/s"
        if "copy_share_of_nominal" in g:
            text += f" ({g['copy_share_of_nominal']:.0%} of nominal HBM)"
    return text

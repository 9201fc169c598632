"""Dequantization throughput of LowRA's packed mixed-precision format (chapter 01).

For each weight shape (MiniLM-sized layers of the chapter and LLaMA-7B-shaped layers:
4096x4096, 4096x11008, 11008x4096, rows of 1/2/4 bits mixed to 1.5 bits on average, Student-t
weights, group 64) it times, single-threaded, median of ``--repeats`` runs:

- ``dequantize_mixed_reference`` (NumPy) to float32 and to float16;
- a torch version of the same table look-up (to decide which CPU path the dispatcher uses);
- a plain dense float16 copy of the same shape (``np.copyto`` into a reused buffer,
  ``torch.Tensor.clone``): the floor that any dequantization writing the same output pays.

CPU times are process CPU seconds (``time.process_time``), robust to other processes on a
shared machine; everything timed is single-threaded.

Throughput is reported as GB/s of output written and GB/s of packed input read (codes, and codes
+ absmax + LUT). Against the machine's limit (``_limits``: a large NumPy copy, read + write bytes,
measured in the same process and thread policy): the dequantization is memory-bound, its bytes
are the packed codes read plus the dense output written (``packed.nbytes + m n itemsize``; the
absmax, LUT and offsets, 2 % of the codes' size at group 64, are left out, as the issue counts
them), timed into a reused output buffer like the copy, and the fraction is those bytes per second
over the measured copy bandwidth; its baseline ratio is the dense fp16 copy of the same shape
(copy seconds / dequantization seconds). The fresh-allocation times are kept beside them.

The hot loop of the table is ``dequantize_mixed_cpu``, the fused numba loop that the
dispatcher's CPU path runs (bit-identical to the reference, checked here on every shape), timed
into the same reused buffers; its baseline ratio is the NumPy reference's time over its own.
The reference's own fractions stay in each shape's record (``fraction_of_copy_f32/f16_into_
buffer``). Fresh-allocation and torch timings are taken on the MiniLM shapes only (they cost
most of the script's minutes on the LLaMA shapes). On a machine with a usable GPU (CuPy) it
also times the CUDA kernels
(``dequantize_mixed_gpu`` f32/f16, ``quantize_mixed_gpu``, the fused ``dequant_matmul_gpu`` at
B = 1) with CUDA events, checks them against the reference, and gives the dequant kernel's
bandwidth (bytes read + written) as a fraction of (a) the theoretical peak 2 x memory clock x bus
width from the device attributes and (b) a measured device-to-device copy.

    .venv/bin/python benchmarks/lowra.py [--quick] [--repeats 5]

writes ``benchmarks/results/lowra.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from icml25.common import device_name, gpu_available
from icml25.kernels import lowbit as lb

import _limits

GROUP = 64
# fractions of rows: 0.6 + 0.7 + 0.2 = 1.5 bits per weight
MIX = {1: 0.6, 2: 0.35, 4: 0.05}
SHAPES = {
    "minilm_attn_384x384": (384, 384),
    "minilm_ffn_in_1536x384": (1536, 384),
    "minilm_ffn_out_384x1536": (384, 1536),
    "llama7b_attn_4096x4096": (4096, 4096),
    "llama7b_down_4096x11008": (4096, 11008),
    "llama7b_up_11008x4096": (11008, 4096),
}
QUICK = ("minilm_attn_384x384", "minilm_ffn_in_1536x384", "llama7b_attn_4096x4096")
LIMITS: dict = {}  # the machine's limits, measured once in main()
SMALL_ELEMENTS = 1 << 20  # shapes up to this many weights also get the slower timings


def make_layer(m: int, n: int, rng: np.random.Generator):
    """Student-t (df=5) weights, rows of 1/2/4 bits in the 1.5-bit mix (shuffled), per-row
    normal-quantile levels on [-1, 1] with midpoint thresholds, quantized with the reference."""
    from scipy.stats import norm

    counts = {b: int(round(f * m)) for b, f in MIX.items()}
    counts[1] = m - counts[2] - counts[4]
    row_bits = rng.permutation(
        np.concatenate([np.full(k, b) for b, k in counts.items()])
    )
    lut = np.zeros((m, 16), np.float32)
    thresholds = np.full((m, 15), np.inf, np.float32)
    for b in (1, 2, 4):
        k = 1 << b
        levels = norm.ppf((np.arange(k) + 0.5) / k)
        levels = (levels / np.abs(levels).max()).astype(np.float32)
        rows = row_bits == b
        lut[rows, :k] = levels
        thresholds[rows, : k - 1] = (levels[:-1] + levels[1:]) / 2
    W = (0.02 * rng.standard_t(5.0, size=(m, n))).astype(np.float32)
    return W, row_bits, lut, thresholds


def median_seconds(fn, repeats: int, warmup: int = 1) -> float:
    """Median CPU seconds of this process (``time.process_time``: user + system, so page faults
    count) over ``repeats`` calls. Everything timed runs on one thread, where CPU time equals
    wall time on a quiet machine and is much less noisy on a shared one."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def torch_dequantize(packed, offsets, row_bits, lut, absmax, n: int, g: int):
    """The reference's nibble-table look-up written in torch (float32 out), for the comparison."""
    import torch

    m = row_bits.shape[0]
    out = torch.empty((m, n), dtype=torch.float32)
    for b in (1, 2, 4):
        rows = torch.nonzero(row_bits == b).flatten()
        if rows.numel() == 0:
            continue
        per, nbytes, k = 4 // b, (n * b + 7) // 8, rows.numel()
        # (k, nbytes)
        data = packed[offsets[rows][:, None] + torch.arange(nbytes)].long()
        nib = torch.arange(16)
        codes = (nib[:, None] >> (torch.arange(per) * b)) & ((1 << b) - 1)  # (16, per)
        table = lut[rows][:, codes].reshape(k * 16, per)
        idx = (
            torch.stack([data & 15, data >> 4], dim=2)
            + (torch.arange(k) * 16)[:, None, None]
        )
        vals = torch.nn.functional.embedding(idx.reshape(-1), table).reshape(k, -1)[
            :, :n
        ]
        out[rows] = (vals.reshape(k, n // g, g) * absmax[rows][:, :, None]).reshape(
            k, n
        )
    return out


def cpu_rows(name: str, m: int, n: int, rng: np.random.Generator, repeats: int) -> dict:
    import torch

    W, row_bits, lut, thresholds = make_layer(m, n, rng)
    t0 = time.perf_counter()
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=GROUP
    )
    quantize_s = time.perf_counter() - t0
    elements = m * n
    codes_bytes = packed.nbytes
    input_bytes = (
        packed.nbytes + absmax.nbytes + lut.nbytes + offsets.nbytes + row_bits.size * 4
    )

    args = (packed, offsets, row_bits, lut, absmax, n, GROUP)
    # the fresh-allocation and torch timings only on the MiniLM shapes: on the LLaMA
    # shapes they took most of this script's minutes and decide nothing any more (the
    # dispatcher's CPU path is the fused loop; page faults are the allocator's cost)
    small = elements <= SMALL_ELEMENTS
    t_f32 = (
        median_seconds(lambda: lb.dequantize_mixed_reference(*args), repeats)
        if small
        else float("nan")
    )
    t_f16 = (
        median_seconds(
            lambda: lb.dequantize_mixed_reference(*args, out_dtype=np.float16),
            repeats,
        )
        if small
        else float("nan")
    )
    # a reused output buffer: no fresh pages to fault in
    buf32 = np.empty((m, n), np.float32)
    t_f32_buf = median_seconds(
        lambda: lb.dequantize_mixed_reference(*args, out=buf32), repeats
    )
    buf16 = np.empty((m, n), np.float16)
    t_f16_buf = median_seconds(
        lambda: lb.dequantize_mixed_reference(*args, out_dtype=np.float16, out=buf16),
        repeats,
    )
    # the fused numba loop (the dispatcher's CPU path), into the same reused buffers;
    # its first call compiles (or loads the cached machine code), outside the timing
    fused_ok = all(
        np.array_equal(
            lb.dequantize_mixed_cpu(*args, out_dtype=dt).view(np.uint8),
            lb.dequantize_mixed_reference(*args, out_dtype=dt).view(np.uint8),
        )
        for dt in (np.float32, np.float16)
    )
    t_fused32 = median_seconds(
        lambda: lb.dequantize_mixed_cpu(*args, out=buf32), repeats
    )
    t_fused16 = median_seconds(
        lambda: lb.dequantize_mixed_cpu(*args, out_dtype=np.float16, out=buf16),
        repeats,
    )
    tp, to, tb, tl, ta = (
        torch.from_numpy(a) for a in (packed, offsets, row_bits, lut, absmax)
    )
    ref = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, GROUP
    )
    torch_matches = (
        bool(
            np.array_equal(torch_dequantize(tp, to, tb, tl, ta, n, GROUP).numpy(), ref)
        )
        if small
        else None
    )
    t_torch = (
        median_seconds(lambda: torch_dequantize(tp, to, tb, tl, ta, n, GROUP), repeats)
        if small
        else float("nan")
    )
    src16 = W.astype(np.float16)
    dst16 = np.empty_like(src16)
    t_copy = median_seconds(lambda: np.copyto(dst16, src16), repeats)
    src16_t = torch.from_numpy(src16)
    t_clone = median_seconds(lambda: src16_t.clone(), repeats)

    def gbs(nbytes: float, seconds: float) -> float:
        return nbytes / seconds / 1e9

    row = {
        "shape": [m, n],
        "mean_bits_codes": float(8 * codes_bytes / elements),
        "mean_bits_total": float(8 * input_bytes / elements),
        "packed_bytes": int(codes_bytes),
        "input_bytes": int(input_bytes),
        "quantize_reference_s": quantize_s,
        "dequant_reference_f32_s": t_f32,
        "dequant_reference_f16_s": t_f16,
        "dequant_reference_f32_into_buffer_s": t_f32_buf,
        "dequant_reference_f16_into_buffer_s": t_f16_buf,
        "dequant_fused_f32_into_buffer_s": t_fused32,
        "dequant_fused_f16_into_buffer_s": t_fused16,
        "fused_bit_identical_to_reference": fused_ok,
        "dequant_torch_f32_s": t_torch,
        "torch_matches_reference": torch_matches,
        "dense_f16_copyto_s": t_copy,
        "dense_f16_torch_clone_s": t_clone,
        "ns_per_element_reference_f32": 1e9 * t_f32 / elements,
        "gbs_out_reference_f32": gbs(4 * elements, t_f32),
        "gbs_out_reference_f16": gbs(2 * elements, t_f16),
        "gbs_packed_in_reference_f32": gbs(codes_bytes, t_f32),
        "gbs_input_total_reference_f32": gbs(input_bytes, t_f32),
        "gbs_out_dense_f16_copy": gbs(2 * elements, t_copy),
        "gbs_out_dense_f16_clone": gbs(2 * elements, t_clone),
        "ratio_reference_f16_over_dense_f16_copy": t_f16_buf / t_copy,
        "ratio_torch_over_reference_f32": t_torch / t_f32,
    }
    counted = (
        "packed codes read + dense output written (m n itemsize); into a reused buffer"
    )
    # timings not taken on this shape: null in the JSON, not NaN
    row = {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
    bytes32, bytes16 = codes_bytes + 4 * elements, codes_bytes + 2 * elements
    row["hot_loops"] = [
        _limits.memory_bound(
            f"LowRA dequantize (fused numba loop, {label} out) {name}",
            f"{m}x{n}",
            nbytes,
            t_fused,
            LIMITS,
            baseline="NumPy reference",
            ratio=t_ref / t_fused,
            counted=counted,
        )
        for label, nbytes, t_fused, t_ref in (
            ("fp32", bytes32, t_fused32, t_f32_buf),
            ("fp16", bytes16, t_fused16, t_f16_buf),
        )
    ]
    copy_Bps = LIMITS["copy_Bps"]
    row["fraction_of_copy_fused_f32"] = row["hot_loops"][0]["fraction_of_limit"]
    row["fraction_of_copy_fused_f16"] = row["hot_loops"][1]["fraction_of_limit"]
    row["fraction_of_copy_f32_into_buffer"] = bytes32 / t_f32_buf / copy_Bps
    row["fraction_of_copy_f16_into_buffer"] = bytes16 / t_f16_buf / copy_Bps
    row["ratio_fused_f16_over_dense_f16_copy"] = t_fused16 / t_copy
    row["fraction_of_copy_f32_fresh"] = bytes32 / t_f32 / copy_Bps if small else None
    print(
        f"{name:24s} quantize {quantize_s:6.3f}s  reference into a buffer f32 "
        f"{1e3 * t_f32_buf:7.2f} ms, f16 {1e3 * t_f16_buf:7.2f} ms (fresh {1e3 * t_f32:7.2f}"
        f" / {1e3 * t_f16:7.2f} ms), torch {1e3 * t_torch:7.2f} ms, fp16 copy "
        f"{1e3 * t_copy:6.2f} ms "
        f"-> f16 dequant / copy {row['ratio_reference_f16_over_dense_f16_copy']:.1f}x; "
        f"reference {row['fraction_of_copy_f32_into_buffer']:.1%} (f32) / "
        f"{row['fraction_of_copy_f16_into_buffer']:.1%} (f16) of the copy bandwidth; "
        f"fused {1e3 * t_fused32:.2f} / {1e3 * t_fused16:.2f} ms = "
        f"{row['fraction_of_copy_fused_f32']:.1%} / {row['fraction_of_copy_fused_f16']:.1%}"
        f" (bit-identical: {fused_ok})",
        flush=True,
    )
    return row


def gpu_peak_bandwidth() -> dict:  # pragma: no cover - needs a GPU
    """Theoretical peak from the device attributes and a measured device-to-device copy (B/s)."""
    import cupy as cp

    out: dict = {"theoretical_Bps": None, "measured_copy_Bps": None}
    try:
        attrs = cp.cuda.Device().attributes
        clock_khz, bus_bits = attrs["MemoryClockRate"], attrs["GlobalMemoryBusWidth"]
        # double data rate
        out["theoretical_Bps"] = 2.0 * clock_khz * 1e3 * bus_bits / 8
        out["memory_clock_khz"], out["bus_width_bits"] = int(clock_khz), int(bus_bits)
    except Exception as err:  # attribute missing on some driver/toolkit combinations
        out["theoretical_error"] = repr(err)
    src = cp.ones(1 << 28, dtype=cp.uint8)  # 256 MiB, far beyond L2
    dst = cp.empty_like(src)
    seconds = gpu_median_seconds(lambda: cp.copyto(dst, src), 20)
    out["measured_copy_Bps"] = 2.0 * src.nbytes / seconds  # read + write
    return out


def gpu_median_seconds(fn, repeats: int) -> float:  # pragma: no cover - needs a GPU
    import cupy as cp

    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def gpu_rows(
    name: str, m: int, n: int, rng: np.random.Generator, peak: dict
) -> dict:  # pragma: no cover
    import cupy as cp

    W, row_bits, lut, thresholds = make_layer(m, n, rng)
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=GROUP
    )
    d = {
        k: cp.ascontiguousarray(cp.asarray(v))
        for k, v in dict(
            packed=packed,
            offsets=offsets.astype(np.int64),
            bits=row_bits.astype(np.int32),
            lut=lut,
            absmax=absmax,
        ).items()
    }
    d_W = cp.asarray(W)
    row: dict = {"shape": [m, n]}
    # parity first, recorded beside the timings
    q = lb.quantize_mixed_gpu(d_W, row_bits, thresholds, group=GROUP)
    row["quantize_bit_exact"] = bool(
        np.array_equal(cp.asnumpy(q[0]), packed)
        and np.array_equal(cp.asnumpy(q[2]), absmax)
    )
    for dt, label in ((np.float32, "f32"), (np.float16, "f16")):
        ref = lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, n, GROUP, out_dtype=dt
        )
        out = cp.asnumpy(
            lb.dequantize_mixed_gpu(
                d["packed"], offsets, row_bits, d["lut"], d["absmax"], n, GROUP, dt
            )
        )
        ulp = np.abs(
            out.view(np.int32 if dt == np.float32 else np.int16).astype(np.int64)
            - ref.view(np.int32 if dt == np.float32 else np.int16).astype(np.int64)
        )
        row[f"dequant_{label}_max_ulp"] = int(ulp.max())
        # time the kernel alone: no host-side checks, no allocation
        buf = cp.empty((m, n), dtype=dt)
        seconds = gpu_median_seconds(
            lambda: lb.launch_dequantize_mixed(
                d["packed"], d["offsets"], d["bits"], d["lut"], d["absmax"], buf, GROUP
            ),
            20,
        )
        out_bytes = m * n * np.dtype(dt).itemsize
        moved = (
            out_bytes
            + packed.nbytes
            + absmax.nbytes
            + lut.nbytes
            + offsets.nbytes
            + 4 * m
        )
        row[f"dequant_{label}_s"] = seconds
        row[f"dequant_{label}_gbs_out"] = out_bytes / seconds / 1e9
        row[f"dequant_{label}_gbs_moved"] = moved / seconds / 1e9
        if peak.get("theoretical_Bps"):
            row[f"dequant_{label}_fraction_of_theoretical_peak"] = (
                moved / seconds / peak["theoretical_Bps"]
            )
        row[f"dequant_{label}_fraction_of_measured_copy"] = (
            moved / seconds / peak["measured_copy_Bps"]
        )
        if LIMITS.get("gpu"):
            row.setdefault("hot_loops", []).append(
                _limits.memory_bound(
                    f"LowRA dequantize (CUDA kernel, {label} out) {name}",
                    f"{m}x{n}",
                    moved,
                    seconds,
                    LIMITS,
                    on_gpu=True,
                    counted="packed codes + absmax + LUT + offsets read + dense output written",
                )
            )
    dense16 = cp.asarray(W.astype(np.float16))
    row["dense_f16_clone_s"] = gpu_median_seconds(lambda: dense16.copy(), 20)
    row["ratio_dequant_f16_over_dense_f16_clone"] = (
        row["dequant_f16_s"] / row["dense_f16_clone_s"]
    )
    # quantize includes its host-side validation (a device -> host
    # copy of W): an upper bound
    row["quantize_s"] = gpu_median_seconds(
        lambda: lb.quantize_mixed_gpu(d_W, row_bits, thresholds, GROUP), 5
    )
    x = cp.asarray(rng.normal(size=(1, n)).astype(np.float32))
    # includes the launcher's host checks and small copies: an upper bound
    if 4 * n <= lb.MAX_SHARED_BYTES:
        row["fused_matvec_s"] = gpu_median_seconds(
            lambda: lb.dequant_matmul_gpu(
                x, d["packed"], offsets, row_bits, d["lut"], d["absmax"], n, GROUP
            ),
            20,
        )
        dense32 = cp.asarray(W)
        row["dense_f32_matvec_s"] = gpu_median_seconds(lambda: x @ dense32.T, 20)
    print(
        f"{name:26s} GPU dequant f16 {1e6 * row['dequant_f16_s']:8.1f} us, "
        f"{row['dequant_f16_fraction_of_measured_copy']:.2f} of copy bandwidth, max ulp "
        f"{row['dequant_f32_max_ulp']}/{row['dequant_f16_max_ulp']}, quantize exact {row['quantize_bit_exact']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="one MiniLM and one LLaMA shape only"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "lowra.json")
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass
    names = QUICK if args.quick else tuple(SHAPES)
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    cpu = {name: cpu_rows(name, *SHAPES[name], rng, args.repeats) for name in names}
    record: dict = {
        "benchmark": "lowra",
        "what": (
            "median CPU seconds (process_time, one thread) of dequantizing LowRA's packed mixed-precision "
            "format (rows of 1/2/4 bits, 1.5 bits/weight on average, group 64, Student-t weights) "
            "with the NumPy reference, a torch version of it, and a dense fp16 copy of the same shape; "
            "GB/s of output written and of packed input read"
        ),
        "mix": {str(b): f for b, f in MIX.items()},
        "group": GROUP,
        "repeats": args.repeats,
        "cpu": cpu,
        "cpu_seconds_total": time.perf_counter() - started,
    }
    if gpu_available():  # pragma: no cover - needs a GPU
        peak = gpu_peak_bandwidth()
        record["gpu_peak"] = peak
        record["gpu"] = {
            name: gpu_rows(name, *SHAPES[name], np.random.default_rng(1), peak)
            for name in names
        }
    record.update(
        {
            "device": device_name(),
            "gpu_available": gpu_available(),
            "threads": {
                "torch": torch.get_num_threads(),
                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            },
            "python": platform.python_version(),
            "numpy": np.__version__,
            "torch": torch.__version__,
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    loops = [
        loop
        for part in ("cpu", "gpu")
        for row in record.get(part, {}).values()
        for loop in row.pop("hot_loops", [])
    ]
    _limits.attach(record, LIMITS, loops)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out} ({record['cpu_seconds_total']:.0f} s on the CPU)")


if __name__ == "__main__":
    main()

"""The loops the chapter's cells call (chapter 13): plan comparisons, memory, UNet, virtual D."""

from __future__ import annotations

import time
import warnings
from typing import Any, Sequence

import numpy as np
import torch

from icml25.checks import check_choice, check_int, check_rng

from .cost import CommModel, replay_makespan, stage_costs
from .graph import OpGraph
from .planner import (
    Plan,
    balanced_time_splits,
    fixed_plan,
    optimal_splits_dp,
    plan,
    uniform_count_splits,
)
from .runtime import PipelineRunner, grads_single_process
from .schedule import in_flight

__all__ = [
    "fit_comm_model",
    "baseline_plans",
    "run_plan",
    "compare_plans",
    "memory_experiment",
    "virtual_device_plans",
    "max_grad_error",
    "comm_bench_sizes",
    "min_busy_ms",
    "min_event_ms",
    "core_pipeline_stage_inputs",
]


def comm_bench_sizes(scale: float = 1.0) -> np.ndarray:
    """Transfer sizes ``4 b w h`` bytes, b in {1, 2, 4}, w = h in {100, 400, 800, 3200} (Sec. 4,
    ``device_bench.py``), multiplied by ``scale`` (the cpu profile uses smaller ones).

    Returns: (k,) int64 sorted unique sizes (at least 4 bytes).
    """
    from .defaults import DEFAULTS

    s = sorted(
        {
            max(4, int(4 * b * w * w * scale))
            for b in DEFAULTS.comm_bench_b
            for w in DEFAULTS.comm_bench_wh
        }
    )
    return np.asarray(s, np.int64)


def fit_comm_model(
    runner: PipelineRunner, sizes: Sequence[int], n_reps: int = 5
) -> tuple[CommModel, np.ndarray, np.ndarray]:
    """Benchmark gloo transfers between ranks 0 and 1 and fit the biased ReLU.

    Returns:
        ``(model, bytes, ms)``. Raises: as :meth:`PipelineRunner.benchmark_p2p`.
    """
    x, y = runner.benchmark_p2p(sizes, n_reps)
    return CommModel.fit(x, y), x, y


def baseline_plans(g: OpGraph, D: int, M: int, comm: CommModel) -> dict[str, Plan]:
    """Uniform-count, balanced-time and min-max DP splits (S = D, Pfeife's 1F1B schedule).

    Returns: ``{"uniform": Plan, "balanced": Plan, "dp": Plan}``.
    """
    order = np.arange(g.n)
    cost = g.f_ms + g.b_ms
    return {
        name: fixed_plan(g, order, s, D, M, comm)
        for name, s in [
            ("uniform", uniform_count_splits(g.n, D)),
            ("balanced", balanced_time_splits(cost, D)),
            ("dp", optimal_splits_dp(cost, D)),
        ]
    }


def max_grad_error(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest absolute difference between two gradient dicts (inf when their keys differ)."""
    if set(a) != set(b):
        return float("inf")
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def min_busy_ms(step_reports: Sequence[dict]) -> np.ndarray:
    """Per-rank busy CPU time that machine load cannot inflate: for every compute event (and the
    optimizer update) of a rank, the minimum over ``step_reports`` of its thread CPU time, summed.

    Thread CPU time already excludes waits; what load still adds (cache and SMT contention,
    preemption accounting) only ever adds, so the minimum over repeated steps estimates the
    unloaded cost. Each step runs the same schedule, so event i of rank r is the same (stage,
    micro-batch, kind) in every step.

    Returns: (D,) float64 ms. Raises: ValueError if ``step_reports`` is empty or the steps' event lists differ.
    """
    if len(step_reports) == 0:
        raise ValueError("step_reports must hold at least one step report")
    D = len(step_reports[0]["events"])
    out = np.zeros(D)
    for r in range(D):
        keys = [(e[0], e[1], e[2]) for e in step_reports[0]["events"][r]]
        if any(
            [(e[0], e[1], e[2]) for e in s["events"][r]] != keys for s in step_reports
        ):
            raise ValueError(
                f"step_reports: rank {r}'s event list differs between steps (different plans?)"
            )
        cpu = np.array([[e[6] for e in s["events"][r]] for s in step_reports]).reshape(
            len(step_reports), len(keys)
        )
        out[r] = cpu.min(0).sum() + min(float(s["opt_ms"][r]) for s in step_reports)
    return out


def min_event_ms(step_reports: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Each event's minimum measured time over ``step_reports``: ``(dur_ms (2, S, M), opt_ms (D,))``.

    The same argument as :func:`min_busy_ms`: every step runs the same schedule and machine load
    only adds time, so the element-wise minimum estimates the unloaded event times that the cost
    model's prediction is about. Raises: ValueError if ``step_reports`` is empty.
    """
    if len(step_reports) == 0:
        raise ValueError("step_reports must hold at least one step report")
    dur = np.min(
        np.stack([np.asarray(s["dur_ms"], dtype=np.float64) for s in step_reports]),
        axis=0,
    )
    opt = np.min(
        np.stack([np.asarray(s["opt_ms"], dtype=np.float64) for s in step_reports]),
        axis=0,
    )
    return dur, opt


def run_plan(
    runner: PipelineRunner,
    gm: Any,
    g: OpGraph,
    p: Plan,
    inputs: Sequence[torch.Tensor],
    target: torch.Tensor,
    comm: CommModel,
    n_steps: int,
    ref_grads: dict | None = None,
    keep_steps: bool = False,
) -> dict:
    """Load ``p``, run one warm-up and ``n_steps`` measured steps on our runtime.

    Returns:
        dict: predicted_ms, replay_ms (cost model replayed on each event's minimum measured time
        over the steps, :func:`min_event_ms`), busy_cpu_ms (D,) from :func:`min_busy_ms` (each compute event's minimum thread CPU
        time over the steps, summed per rank), bottleneck_ms (its max over ranks),
        busy_median_ms / bottleneck_median_ms (plain medians over steps, reported), wall_ms
        (median over steps), grad_err (first
        step vs ``ref_grads``), peak_live_mb, peak_act_bytes, events of the median step; with
        ``keep_steps`` also ``steps`` (the measured step reports, for pooling over rounds).
    """
    M = p.M
    mb = tuple(t[: t.shape[0] // M] for t in inputs)
    runner.load_plan(gm, p, mb)
    first = runner.step(inputs, target, return_grads=ref_grads is not None)
    steps = [
        runner.step(inputs, target) for _ in range(check_int(n_steps, "n_steps", low=1))
    ]
    busy = np.array([s["busy_cpu_ms"] for s in steps])
    busy_min = min_busy_ms(steps)
    i_med = int(np.argsort(busy.max(1))[len(steps) // 2])
    med = steps[i_med]
    C = stage_costs(g, p.order, p.splits, p.D).C
    dur_min, opt_min = min_event_ms(steps)
    replay = replay_makespan(p.schedule, dur_min, C, comm, opt_min)[0]
    return dict(
        predicted_ms=p.predicted_ms,
        replay_ms=float(replay),
        busy_cpu_ms=busy_min,
        busy_median_ms=np.median(busy, 0),
        bottleneck_ms=float(busy_min.max()),
        bottleneck_median_ms=float(np.median(busy.max(1))),
        wall_ms=float(np.median([s["wall_ms"] for s in steps])),
        grad_err=max_grad_error(first["grads"], ref_grads)
        if ref_grads is not None
        else float("nan"),
        loss=first["loss"],
        peak_live_mb=med["peak_live_mb"],
        peak_act_bytes=med["peak_act_bytes"],
        events=med["events"],
        dur_ms=med["dur_ms"],
        **({"steps": steps} if keep_steps else {}),
    )


def compare_plans(
    runner: PipelineRunner,
    gm: Any,
    g: OpGraph,
    inputs: Sequence[torch.Tensor],
    target: torch.Tensor,
    M: int,
    comm: CommModel,
    capacity_bytes: float,
    rng: np.random.Generator,
    n_steps: int,
    torch_steps: int = 1,
    loop_cnts: Sequence[int] = (1, 2, 3),
    n_rounds: int = 1,
) -> tuple[dict[str, Plan], dict[str, dict]]:
    """Experiment (2): uniform, balanced, DP and Pfeife plans, predicted vs measured, both runtimes.

    The runs are interleaved (uniform, balanced, dp, pfeife) ``n_rounds`` times, each a fresh
    ``load_plan``, a warm-up and ``n_steps`` steps, so that a change in the machine's load hits
    every plan; busy_cpu_ms / bottleneck_ms pool all rounds' steps in :func:`min_busy_ms`. Core
    PyTorch runs ``Schedule1F1B`` on the same splits for each L = 1 plan (first round only).
    ``loop_cnts`` limits the planner's loop counts.

    Returns:
        ``(plans, results)``: results[name] from :func:`run_plan` plus ``torch`` (wall_ms,
        busy_cpu_ms, grad_err) when core PyTorch ran.
    """
    rng = check_rng(rng)
    D = runner.D
    plans = baseline_plans(g, D, M, comm)
    plans["pfeife"] = plan(g, D, M, capacity_bytes, comm, rng, loop_cnts=loop_cnts)
    _, ref = grads_single_process(gm, inputs, target)
    res: dict[str, dict] = {}
    pooled: dict[str, list] = {name: [] for name in plans}
    for rd in range(check_int(n_rounds, "n_rounds", low=1)):
        for name, p in plans.items():
            r = run_plan(
                runner,
                gm,
                g,
                p,
                inputs,
                target,
                comm,
                n_steps,
                ref if rd == 0 else None,
                keep_steps=True,
            )
            pooled[name] += r.pop("steps")
            res.setdefault(name, r)
    for name, st in pooled.items():
        busy = np.array([s["busy_cpu_ms"] for s in st])
        res[name].update(
            busy_cpu_ms=min_busy_ms(st),
            busy_median_ms=np.median(busy, 0),
            bottleneck_median_ms=float(np.median(busy.max(1))),
            n_measured_steps=len(st),
        )
        res[name]["bottleneck_ms"] = float(res[name]["busy_cpu_ms"].max())
        p = plans[name]
        dur_min, opt_min = min_event_ms(st)
        C = stage_costs(g, p.order, p.splits, p.D).C
        res[name]["replay_ms"] = float(
            replay_makespan(p.schedule, dur_min, C, comm, opt_min)[0]
        )
    for name, p in plans.items():
        if p.S == D:
            out = runner.run_torch_pipelining(
                gm,
                p.order,
                p.splits,
                inputs,
                target,
                M,
                "1f1b",
                n_steps=torch_steps + 1,
            )
            st = out["steps"][1:]
            # lr = 0: every step's gradients
            res[name]["torch"] = dict(
                wall_ms=float(np.median([s["wall_ms"] for s in st])),
                busy_cpu_ms=np.median([s["busy_cpu_ms"] for s in st], 0),
                grad_err=max_grad_error(out["grads"], ref),
            )
    return plans, res


def memory_experiment(
    runner: PipelineRunner,
    gm: Any,
    g: OpGraph,
    splits: Any,
    inputs: Sequence[torch.Tensor],
    target: torch.Tensor,
    M: int,
    comm: CommModel,
) -> dict[str, dict]:
    """Experiment (3): GPipe vs 1F1B on the same splits: memory model, counted saved bytes and
    live micro-batches per rank (from the runner's ``saved_tensors_hooks`` count).

    Returns:
        ``{"gpipe": {...}, "1f1b": {...}}`` with model_peak_bytes (D,), in_flight (D,),
        peak_live_mb (D,), peak_act_bytes (D,), predicted_ms.
    """
    out = {}
    for kind in ("gpipe", "1f1b"):
        p = fixed_plan(g, np.arange(g.n), splits, runner.D, M, comm, schedule=kind)
        mb = tuple(t[: t.shape[0] // M] for t in inputs)
        runner.load_plan(gm, p, mb)
        r = runner.step(inputs, target)
        out[kind] = dict(
            model_peak_bytes=p.peak_bytes,
            in_flight=np.array(in_flight(p.schedule)),
            peak_live_mb=r["peak_live_mb"],
            peak_act_bytes=r["peak_act_bytes"],
            predicted_ms=p.predicted_ms,
            schedule=p.schedule,
        )
    return out


def virtual_device_plans(
    g: OpGraph,
    Ds: Sequence[int],
    M: int,
    comm: CommModel,
    capacity_bytes: float,
    rng: np.random.Generator,
    loop_cnts: Sequence[int] = (1, 2),
) -> list[dict]:
    """Experiment (5): plans for virtual D (profiled costs, a given comm model), search time.

    Returns:
        one row per D: D, S, L, predicted_ms, uniform_ms, dp_ms, search_s, n_evaluated.
    """
    rng = check_rng(rng)
    rows = []
    for D in Ds:
        D = check_int(D, "Ds", low=1)
        t0 = time.perf_counter()
        p = plan(g, D, M, capacity_bytes, comm, rng, loop_cnts=loop_cnts)
        dt = time.perf_counter() - t0
        base = baseline_plans(g, D, M, comm)
        rows.append(
            dict(
                D=D,
                S=p.S,
                L=p.L,
                loop_batch=p.loop_batch,
                prefetch_fwd=p.prefetch_fwd,
                predicted_ms=p.predicted_ms,
                uniform_ms=base["uniform"].predicted_ms,
                dp_ms=base["dp"].predicted_ms,
                search_s=dt,
                n_evaluated=p.n_evaluated,
            )
        )
    return rows


def core_pipeline_stage_inputs(
    model: torch.nn.Module,
    mb_args: tuple[torch.Tensor, ...],
    split_before: Sequence[str],
) -> dict[str, list[str]]:
    """Trace ``model`` with core PyTorch's ``torch.distributed.pipelining.pipeline``, a new
    stage starting at each submodule named in ``split_before``, and list each stage's inputs.

    The chapter's experiment (4) shows with it which values core PyTorch's tracer hands each
    stage of a model with skips and a conditioning input; the traced pipe is not run. The
    ``FutureWarning`` torch's pytree raises while tracing (``LeafSpec`` is deprecated, torch
    2.9+) comes from PyTorch's own code, not from the caller's: it is silenced here.

    Args:
        model: the module to trace.
        mb_args: one micro-batch of the model's positional inputs (tensors).
        split_before: names (as in ``model.named_modules()``) of the submodules at whose
            beginning a new stage starts, in model order.

    Returns:
        ``{stage submodule name: [names of its graph inputs]}``, in stage order.

    Raises:
        TypeError: ``model`` is not a module or ``mb_args`` not a tuple of tensors.
        ValueError: ``split_before`` is empty or names no submodule of ``model``.
        Exception: whatever core PyTorch's tracer raises on the model (shown by the chapter).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(mb_args, tuple) or not all(
        isinstance(a, torch.Tensor) for a in mb_args
    ):
        raise TypeError("mb_args must be a tuple of tensors")
    names = [name for name, _ in model.named_modules() if name]
    split_before = [check_choice(s, "split_before", names) for s in split_before]
    if not split_before:
        raise ValueError("split_before must name at least one submodule")
    from torch.distributed.pipelining import SplitPoint, pipeline

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*LeafSpec.*", category=FutureWarning
        )
        pipe = pipeline(
            model,
            mb_args=mb_args,
            split_spec={s: SplitPoint.BEGINNING for s in split_before},
        )
    return {
        name: [n.name for n in sm.graph.nodes if n.op == "placeholder"]
        for name, sm in pipe.split_gm.named_children()
    }

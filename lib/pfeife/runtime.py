"""The pipeline runtime: D spawned worker processes, gloo on 127.0.0.1 (Sec. 5 of the paper).

:class:`PipelineRunner` starts D ranks once (``torch.multiprocessing`` spawn; one thread each)
and executes a :class:`~icml25.pfeife.Plan`: each rank runs its step list (receives, forwards,
sends, backwards, direct sends on non-adjacent edges, an SGD update), and reports per-event
wall and CPU times. The same workers run core PyTorch's ``torch.distributed.pipelining``
(``ScheduleGPipe``, ``Schedule1F1B``, ``ScheduleInterleaved1F1B``) on stage modules cut at the
same split points. Worker code lives in :mod:`icml25.pfeife._worker` (spawned processes cannot
import notebook cells). Loss: each micro-batch's MSE times 1/M (so gradients equal the
full-batch mean's); core PyTorch instead divides the accumulated gradients by M (``scale_grads``).
Our runtime uses blocking receives with a timeout and asynchronous sends, not the official
communication threads and NCCL (reconstruction at CPU scale).

API names differ from the chapter's issue (26), which sketched ``PipelineRunner(gm, plan)`` and
``.load_plan(p)``: here ``PipelineRunner(D)`` takes only the number of ranks (the workers outlive
plans: one runner serves every plan and core PyTorch's schedules, started once), and
``load_plan(gm, plan, example_inputs)`` ships a plan's stage programs (one example micro-batch
records the shapes of the receive buffers). ``.step(inputs, target)`` and ``.shutdown()`` are as
the issue wrote them.
"""

from __future__ import annotations

import os
import queue
import socket
import time
import weakref
from typing import Any, Sequence

import numpy as np
import torch
from torch import fx
from torch.fx.passes.shape_prop import ShapeProp

from icml25.checks import check_array, check_int, check_real, check_tensor

from .graph import _output_node, stage_of
from .planner import Plan

__all__ = [
    "PipelineRunner",
    "benchmark_p2p",
    "stage_program",
    "stage_modules",
    "grads_single_process",
    "StepResult",
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ops(gm: fx.GraphModule) -> list[fx.Node]:
    return [
        n
        for n in gm.graph.nodes
        if n.op in ("call_function", "call_method", "call_module")
    ]


def stage_program(
    gm: fx.GraphModule, plan: Plan, example_inputs: Sequence[torch.Tensor]
) -> dict:
    """What each stage runs and exchanges, from ``gm`` and ``plan`` (the runner's payload).

    Args:
        gm: the captured module. plan: a plan for its ops (``plan.op_names`` in graph order).
        example_inputs: one micro-batch (shapes of every value are recorded from it).

    Returns:
        a dict: ``stages[j]`` with ``nodes`` (names in linear order), ``inputs`` [(value, source
        stage)], ``outputs`` [(value, [destination stages])] and ``params``; ``meta`` (value ->
        (shape, dtype)); ``tags``; ``S``, ``M``, ``schedule``, ``output``, ``ph_index``.

    Raises:
        ValueError: the plan's ops are not ``gm``'s, or the output is not in the last stage.
    """
    ops = _ops(gm)
    names = [n.name for n in ops]
    if tuple(names) != tuple(plan.op_names):
        raise ValueError(
            "plan was made for another graph (its op names differ from gm's)"
        )
    st = stage_of(len(ops), plan.order, plan.splits)
    stage_by_name = {n: int(s) for n, s in zip(names, st)}
    pos = np.empty(len(ops), np.int64)
    pos[plan.order] = np.arange(len(ops))
    ShapeProp(gm).propagate(*example_inputs)
    meta = {
        n.name: (tuple(n.meta["tensor_meta"].shape), n.meta["tensor_meta"].dtype)
        for n in ops
    }
    by_name = {n.name: n for n in gm.graph.nodes}
    stages = []
    for j in range(plan.S):
        nodes = [names[i] for i in plan.order if st[i] == j]
        ins, params = {}, set()
        for name in nodes:
            node = by_name[name]
            for a in node.all_input_nodes:
                if a.op == "get_attr":
                    params.add(a.target)
                elif a.name in stage_by_name and stage_by_name[a.name] != j:
                    ins[a.name] = stage_by_name[a.name]
            if node.op == "call_module":
                params |= {
                    f"{node.target}.{k}"
                    for k, _ in gm.get_submodule(node.target).named_parameters()
                }
        stages.append(
            dict(
                nodes=nodes,
                inputs=sorted(ins.items()),
                outputs=[],
                params=sorted(params),
            )
        )
    for j, s in enumerate(stages):
        for v, src in s["inputs"]:
            outs = dict(stages[src]["outputs"])
            outs.setdefault(v, []).append(j)
            stages[src]["outputs"] = sorted(outs.items())
    out_name = _output_node(gm).name
    if stage_by_name[out_name] != plan.S - 1:
        raise ValueError("the model's output must be computed by the last stage")
    tags, t = {}, 0
    for j, s in enumerate(stages):
        for v, dests in s["outputs"]:
            for d in dests:
                for k in range(plan.M):
                    for kd in (0, 1):
                        tags[(v, d, k, kd)] = t
                        t += 1
    phs = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    from ._worker import Ref

    specs, attrs, modules = {}, {}, {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            obj: Any = gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            attrs[node.target] = (
                obj.detach().clone() if isinstance(obj, torch.Tensor) else obj
            )
        elif node.op in ("call_function", "call_method", "call_module"):
            to_ref = lambda a: Ref(  # noqa: E731
                a.name, a.op, a.target if a.op == "get_attr" else None
            )
            specs[node.name] = (
                node.op,
                node.target,
                fx.node.map_arg(node.args, to_ref),
                fx.node.map_arg(node.kwargs, to_ref),
            )
            if node.op == "call_module":
                modules[node.target] = gm.get_submodule(node.target)
    return dict(
        specs=specs,
        attrs=attrs,
        modules=modules,
        stages=stages,
        meta=meta,
        tags=tags,
        S=plan.S,
        M=plan.M,
        schedule=plan.schedule,
        output=out_name,
        ph_index={p: i for i, p in enumerate(phs)},
        param_set=set().union(*[s["params"] for s in stages]) if stages else set(),
    )


def stage_modules(
    gm: fx.GraphModule, order: Any, splits: Any
) -> dict[int, fx.GraphModule]:
    """Stage ``GraphModule``s for core PyTorch's pipelining: stage j takes the values live across
    cut j-1 (model inputs count as produced by stage 0) and returns those live across cut j, so
    skips are forwarded through intermediate stages (adjacent transfers only).

    Args:
        gm: captured module. order: (n,) linearisation of its ops. splits: (S-1,) split points.

    Returns:
        ``{stage: GraphModule}``; the last stage returns the model output tensor.

    Raises:
        ValueError: splits out of range.
    """
    ops = _ops(gm)
    n = len(ops)
    order = check_array(order, "order", shape=(n,), kind="int")
    s = check_array(splits, "splits", ndim=1, kind="int")
    if len(s) and (s.min() < 1 or s.max() > n - 1 or np.any(np.diff(s) <= 0)):
        raise ValueError(f"splits must be strictly increasing in 1..{n - 1}")
    S = len(s) + 1
    st = stage_of(n, order, s)
    where = {op.name: int(x) for op, x in zip(ops, st)}
    phs = [p for p in gm.graph.nodes if p.op == "placeholder"]
    for p in phs:
        where[p.name] = 0
    out_node = _output_node(gm)
    last_use: dict[str, int] = {}
    for op in ops:
        for a in op.all_input_nodes:
            if a.name in where:
                last_use[a.name] = max(last_use.get(a.name, 0), where[op.name])
    mods = {}
    for j in range(S):
        live_in = [
            v
            for v in [p.name for p in phs] + [o.name for o in ops]
            if (where[v] < j <= last_use.get(v, -1))
            or (j == 0 and v in {p.name for p in phs})
        ]
        live_out = [
            v
            for v in [p.name for p in phs] + [o.name for o in ops]
            if where[v] <= j < last_use.get(v, -1)
        ]
        g = fx.Graph()
        env: dict[str, fx.Node] = {v: g.placeholder(v) for v in live_in}
        for i in order:
            op = ops[int(i)]
            if st[int(i)] != j:
                continue

            def remap(a: fx.Node) -> fx.Node:
                if a.op == "get_attr":
                    if a.name not in env:
                        env[a.name] = g.get_attr(a.target)
                    return env[a.name]
                return env[a.name]

            env[op.name] = g.node_copy(op, remap)
        contig = lambda v: g.call_method("contiguous", (env[v],))  # noqa: E731 - gloo receives need contiguous buffers
        if j == S - 1:
            g.output(contig(out_node.name))
        else:
            g.output(tuple(contig(v) for v in live_out))
        mods[j] = fx.GraphModule(gm, g)
    return mods


def grads_single_process(
    gm: fx.GraphModule, inputs: Sequence[torch.Tensor], target: torch.Tensor
) -> tuple[float, dict[str, torch.Tensor]]:
    """Loss and parameter gradients of one full-batch step in this process (the reference).

    Returns:
        ``(mse loss, {parameter name: grad})``.

    Raises:
        TypeError: non-tensors.
    """
    target = check_tensor(target, "target")
    gm.zero_grad(set_to_none=True)
    out = gm(*inputs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    loss = torch.nn.functional.mse_loss(out, target)
    loss.backward()
    grads = {
        n: p.grad.detach().clone()
        for n, p in gm.named_parameters()
        if p.grad is not None
    }
    gm.zero_grad(set_to_none=True)
    return float(loss.detach()), grads


class StepResult(dict):
    """One step's report: ``loss``, ``wall_ms``, ``busy_cpu_ms`` (D,), ``dur_ms`` (2, S, M) measured
    compute CPU per event, ``events`` per rank, ``grads``, ``peak_act_bytes`` (D,), ``peak_live_mb`` (D,)."""


def _shutdown(procs: list, cmd_qs: list) -> None:
    for q in cmd_qs:
        try:
            q.put(("stop", None))
        except Exception:  # noqa: BLE001
            pass
    deadline = time.monotonic() + 10
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(5)
        if p.is_alive():
            p.kill()
            p.join(5)


class PipelineRunner:
    """D spawned ranks on gloo/127.0.0.1 that execute pipeline plans (Sec. 5, runtime).

    Issue 26 sketched ``PipelineRunner(gm, plan)``; the runner takes only ``D`` and each plan is
    sent with :meth:`load_plan` (see the module docstring).

    Args:
        D: number of ranks (>= 2). timeout_s: startup, receive and step timeout in seconds.

    Raises:
        RuntimeError: a worker failed to start or join the process group (its traceback is quoted).
    """

    def __init__(self, D: int, timeout_s: float = 120.0) -> None:
        import torch.multiprocessing as mp

        self.D = check_int(D, "D", low=2)
        self.timeout_s = check_real(timeout_s, "timeout_s", low=1.0)
        ctx = mp.get_context("spawn")
        self._res = ctx.Queue()
        self._cmd = [ctx.Queue() for _ in range(self.D)]
        port = _free_port()
        env_old = {
            k: os.environ.get(k)
            for k in ("MASTER_ADDR", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS")
        }
        os.environ.update(
            MASTER_ADDR="127.0.0.1", GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1"
        )
        from ._worker import worker_main

        self._procs = []
        try:
            for r in range(self.D):
                p = ctx.Process(
                    target=worker_main,
                    args=(r, self.D, port, self.timeout_s, self._cmd[r], self._res),
                    daemon=True,
                )
                p.start()
                self._procs.append(p)
        finally:
            for k, v in env_old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.pids = [p.pid for p in self._procs]
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._cmd)
        self.program: dict | None = None
        try:
            self._collect("start")
        except Exception:
            self.shutdown()
            raise

    def _collect(self, what: str) -> list:
        out: list = [None] * self.D
        got = 0
        deadline = time.monotonic() + self.timeout_s
        while got < self.D:
            try:
                r, status, val = self._res.get(timeout=1.0)
            except queue.Empty:
                dead = [p.pid for p in self._procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(
                        f"{what}: worker process(es) {dead} died"
                    ) from None
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{what}: no answer from the workers within {self.timeout_s} s"
                    ) from None
                continue
            if status != "ok":
                raise RuntimeError(f"{what} failed on rank {r}:\n{val}")
            out[r] = val
            got += 1
        return out

    def _all(self, cmd: str, payloads: list) -> list:
        if not self.alive:
            raise RuntimeError("the runner has been shut down")
        for q, pl in zip(self._cmd, payloads):
            q.put((cmd, pl))
        return self._collect(cmd)

    @property
    def alive(self) -> bool:
        """True while every worker process runs."""
        return bool(self._procs) and all(p.is_alive() for p in self._procs)

    def load_plan(
        self, gm: fx.GraphModule, plan: Plan, example_inputs: Sequence[torch.Tensor]
    ) -> None:
        """Send ``gm`` and ``plan`` to the workers (reusing them; parameters are copied to each rank).

        Args:
            gm: the captured module. plan: a plan with ``plan.D == self.D``.
            example_inputs: one micro-batch (records the shapes of every transferred value).

        Raises:
            TypeError: ``plan`` is not a Plan. ValueError: D differs or the plan is not for ``gm``.
        """
        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be a Plan, got {type(plan).__name__}")
        if plan.D != self.D:
            raise ValueError(f"plan is for D = {plan.D} ranks, the runner has {self.D}")
        prog = stage_program(gm, plan, example_inputs)
        self.program = prog
        self._all("load", [prog] * self.D)

    def step(
        self,
        inputs: Sequence[torch.Tensor],
        target: torch.Tensor,
        lr: float = 0.0,
        return_grads: bool = False,
    ) -> StepResult:
        """One pipelined training step of the loaded plan on the batch ``inputs`` (split into M).

        Args:
            inputs: the model's input tensors (batch first, divisible by M). target: (B, ...) MSE target.
            lr: SGD step size applied after the step (0: none). return_grads: also return gradients.

        Returns:
            a :class:`StepResult`.

        Raises:
            RuntimeError: no plan loaded, or a worker failed (its traceback). ValueError: batch not
                divisible by M.
        """
        if self.program is None:
            raise RuntimeError("load_plan first")
        target = check_tensor(target, "target")
        M, S = self.program["M"], self.program["S"]
        ins = [check_tensor(x, f"inputs[{i}]") for i, x in enumerate(inputs)]
        if any(x.shape[0] % M for x in ins) or target.shape[0] % M:
            raise ValueError(f"the batch size must be divisible by M = {M}")
        res = self._all(
            "step",
            [
                dict(
                    inputs=ins,
                    target=target,
                    lr=float(lr),
                    return_grads=bool(return_grads),
                )
            ]
            * self.D,
        )
        dur = np.zeros((2, S, M))
        for r in res:
            for j, k, kd, _w0, _w1, _w2, cpu in r["events"]:
                dur[kd, j, k] = cpu
        grads: dict = {}
        for r in res:
            grads.update(r["grads"])
        return StepResult(
            loss=sum(r["loss"] for r in res),
            wall_ms=max(r["wall_ms"] for r in res),
            busy_cpu_ms=np.array(
                [sum(e[6] for e in r["events"]) + r["opt_ms"] for r in res]
            ),
            opt_ms=np.array([r["opt_ms"] for r in res]),
            dur_ms=dur,
            events=[r["events"] for r in res],
            grads=grads,
            peak_act_bytes=np.array([r["peak_act_bytes"] for r in res], np.int64),
            peak_live_mb=np.array([r["peak_live_mb"] for r in res], np.int64),
        )

    def benchmark_p2p(
        self, sizes: Sequence[int], n_reps: int = 5
    ) -> tuple[np.ndarray, np.ndarray]:
        """One-way transfer time between ranks 0 and 1 (half a ping-pong, median of ``n_reps``).

        Returns:
            ``(bytes (k,) int64, ms (k,) float64)``.

        Raises:
            ValueError: empty or negative sizes, ``n_reps < 1``.
        """
        s = check_array(sizes, "sizes", ndim=1, kind="int", low=1, min_size=1)
        n_reps = check_int(n_reps, "n_reps", low=1)
        res = self._all("p2p", [dict(sizes=s.tolist(), n_reps=n_reps)] * self.D)
        return s, np.asarray(res[0]["ms"], np.float64)

    def run_torch_pipelining(
        self,
        gm: fx.GraphModule,
        order: Any,
        splits: Any,
        inputs: Sequence[torch.Tensor],
        target: torch.Tensor,
        M: int,
        schedule: str = "1f1b",
        n_steps: int = 1,
    ) -> dict:
        """Run core PyTorch's ``torch.distributed.pipelining`` on these workers, same splits.

        Stage j (from :func:`stage_modules`) runs on rank ``j mod D``; ``schedule`` is ``"gpipe"``
        (``ScheduleGPipe``), ``"1f1b"`` (``Schedule1F1B``) or ``"interleaved"``
        (``ScheduleInterleaved1F1B``, for S = L D stages).

        Returns:
            ``{"steps": [per-step {wall_ms, busy_cpu_ms (D,), loss}], "grads": {name: grad}}``.

        Raises:
            ValueError: bad schedule name or stage count. RuntimeError: a worker failed.
        """
        M = check_int(M, "M", low=1)
        n_steps = check_int(n_steps, "n_steps", low=1)
        if schedule not in ("gpipe", "1f1b", "interleaved"):
            raise ValueError(
                f"schedule must be 'gpipe', '1f1b' or 'interleaved', got {schedule!r}"
            )
        mods = stage_modules(gm, order, splits)
        S = len(mods)
        if S % self.D or (schedule != "interleaved" and S != self.D):
            raise ValueError(
                f"{schedule!r} needs S = D = {self.D} stages (interleaved: a multiple), got {S}"
            )
        target = check_tensor(target, "target")
        payloads = [
            dict(
                S=S,
                M=M,
                schedule=schedule,
                n_steps=n_steps,
                inputs=list(inputs),
                target=target,
                modules={j: m for j, m in mods.items() if j % self.D == r},
            )
            for r in range(self.D)
        ]
        res = self._all("torch_pp", payloads)
        steps = []
        for i in range(n_steps):
            rows = [r["steps"][i] for r in res]
            steps.append(
                dict(
                    wall_ms=max(x["wall_ms"] for x in rows),
                    busy_cpu_ms=np.array([x["cpu_ms"] for x in rows]),
                    loss=next((x["loss"] for x in rows if x["loss"] is not None), None),
                )
            )
        grads: dict = {}
        for r in res:
            grads.update(r["grads"])
        return dict(steps=steps, grads=grads)

    def shutdown(self) -> None:
        """Stop and join every worker this runner started (terminate/kill after 10 s). Idempotent."""
        self._finalizer()
        self.program = None

    def __enter__(self) -> "PipelineRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def benchmark_p2p(
    sizes: Sequence[int], n_reps: int = 5, timeout_s: float = 120.0
) -> tuple[np.ndarray, np.ndarray]:
    """Start two ranks, time one-way gloo transfers over loopback, shut them down.

    Args:
        sizes: transfer sizes in bytes. n_reps: repetitions per size. timeout_s: runner timeout.

    Returns:
        ``(bytes, ms)`` as :meth:`PipelineRunner.benchmark_p2p`; fit them with :meth:`CommModel.fit`.

    Raises:
        ValueError: bad sizes. RuntimeError: workers failed.
    """
    with PipelineRunner(2, timeout_s) as runner:
        return runner.benchmark_p2p(sizes, n_reps)

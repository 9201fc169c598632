"""Worker processes of :class:`icml25.pfeife.PipelineRunner` (spawned; module-level code only).

Each worker is one rank of a gloo process group on 127.0.0.1, runs one thread, and executes
commands from its queue: ``load`` (a stage program for its rank), ``step`` (one training step
of its schedule: receives, forwards, sends, backwards, the SGD update), ``p2p`` (a transfer
benchmark) and ``torch_pp`` (core PyTorch's ``torch.distributed.pipelining`` on the same ranks).
"""

from __future__ import annotations

import os
import time
import traceback
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist


class Ref:
    """A reference to another node's value inside a pickled op spec (node name, op, attr target)."""

    def __init__(self, name: str, op: str, target: str | None) -> None:
        self.name, self.op, self.target = name, op, target


def _map(a: Any, fn: Any) -> Any:
    if isinstance(a, Ref):
        return fn(a)
    if isinstance(a, tuple):
        return tuple(_map(x, fn) for x in a)
    if isinstance(a, list):
        return [_map(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: _map(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_map(a.start, fn), _map(a.stop, fn), _map(a.step, fn))
    return a


def _run_spec(spec: tuple, modules: dict, args: Any, kwargs: Any) -> Any:
    op, target = spec[0], spec[1]
    if op == "call_function":
        return target(*args, **kwargs)
    if op == "call_method":
        return getattr(args[0], target)(*args[1:], **kwargs)
    return modules[target](*args, **kwargs)


class _Rank:
    """State of one rank: the module, its stages, the schedule, mailboxes."""

    def __init__(self, rank: int, D: int, timeout_s: float) -> None:
        self.rank, self.D, self.timeout = rank, D, timedelta(seconds=timeout_s)
        self.prog: dict | None = None

    # ----------------------------------------------------------------- Pfeife's runtime
    def load(self, prog: dict) -> str:
        self.prog = prog
        mine = [j for j in range(prog["S"]) if j % self.D == self.rank]
        self.params = sorted({p for j in mine for p in prog["stages"][j]["params"]})
        self.attrs = dict(prog["attrs"])
        for name in list(self.attrs):
            t = self.attrs[name]
            if isinstance(t, torch.Tensor):
                self.attrs[name] = t.detach().requires_grad_(
                    name in self.params and t.is_floating_point()
                )
        self.modules = prog["modules"]
        self.param_ptrs = {
            t.data_ptr() for t in self.attrs.values() if isinstance(t, torch.Tensor)
        }
        self.param_ptrs |= {
            p.data_ptr() for m in self.modules.values() for p in m.parameters()
        }
        return "loaded"

    def _param(self, name: str) -> torch.Tensor:
        if name in self.attrs:
            return self.attrs[name]
        mod, _, leaf = name.rpartition(".")
        return getattr(self.modules[mod], leaf)

    def _recv(
        self, shape: tuple, dtype: torch.dtype, src_rank: int, tag: int
    ) -> torch.Tensor:
        t = torch.empty(shape, dtype=dtype)
        work = dist.irecv(t, src=src_rank, tag=tag)
        if not work.wait(self.timeout):
            raise TimeoutError(
                f"rank {self.rank}: receive from rank {src_rank} (tag {tag}) timed out"
            )
        return t

    def step(self, payload: dict) -> dict:
        prog = self.prog
        if prog is None:
            raise RuntimeError("no plan loaded")
        M, D = prog["M"], self.D
        xs = [torch.chunk(x, M) for x in payload["inputs"]]
        ys = torch.chunk(payload["target"], M)
        stages, meta = prog["stages"], prog["meta"]
        out_name = prog["output"]
        local_act: dict = {}
        local_grad: dict = {}
        saved: dict = {}
        sends: list = []
        events = []
        loss_total = 0.0
        live_bytes = peak_bytes = live_mb = peak_mb = 0
        dist.barrier()
        t_start = time.perf_counter()
        cpu_start = time.thread_time()
        for j, k, kind in prog["schedule"][self.rank]:
            st = stages[j]
            w0 = time.perf_counter()
            if kind == "F":
                inputs = {}
                for v, src in st["inputs"]:
                    if src % D == self.rank:
                        t = local_act.pop((v, j, k))
                    else:
                        shape, dtype = meta[v]
                        t = self._recv(
                            shape, dtype, src % D, prog["tags"][(v, j, k, 0)]
                        )
                    inputs[v] = t.requires_grad_(t.is_floating_point())
                w1, c1 = time.perf_counter(), time.thread_time()
                env: dict = {}
                counted: dict = {}

                def pack(t: torch.Tensor) -> torch.Tensor:
                    if t.data_ptr() not in self.param_ptrs:
                        counted[t.data_ptr()] = t.numel() * t.element_size()
                    return t

                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                    for name in st["nodes"]:
                        spec = prog["specs"][name]

                        def look(a: Ref) -> Any:
                            if a.op == "placeholder":
                                return xs[prog["ph_index"][a.name]][k]
                            if a.op == "get_attr":
                                return self.attrs[a.target]
                            return env[a.name] if a.name in env else inputs[a.name]

                        env[name] = _run_spec(
                            spec, self.modules, _map(spec[2], look), _map(spec[3], look)
                        )
                    loss = None
                    if out_name in env:
                        # 1/M: full-batch mean
                        loss = torch.nn.functional.mse_loss(env[out_name], ys[k]) / M
                        loss_total += float(loss.detach())
                for v, dests in st["outputs"]:
                    val = env[v].detach().contiguous()
                    for d in dests:
                        if d % D == self.rank:
                            local_act[(v, d, k)] = val.clone()
                        else:
                            sends.append(
                                dist.isend(
                                    val, dst=d % D, tag=prog["tags"][(v, d, k, 0)]
                                )
                            )
                nb = sum(counted.values())
                saved[(j, k)] = (inputs, env, loss, nb)
                live_bytes += nb
                live_mb += 1
                peak_bytes, peak_mb = max(peak_bytes, live_bytes), max(peak_mb, live_mb)
            else:
                inputs, env, loss, nb = saved.pop((j, k))
                tensors, grads = [], []
                if loss is not None:
                    tensors.append(loss)
                    grads.append(None)
                recvd = []
                for v, dests in st["outputs"]:
                    gsum = None
                    for d in dests:
                        if d % D == self.rank:
                            gv = local_grad.pop((v, d, k))
                        else:
                            shape, dtype = meta[v]
                            gv = self._recv(
                                shape, dtype, d % D, prog["tags"][(v, d, k, 1)]
                            )
                        gsum = gv if gsum is None else gsum + gv
                    recvd.append((v, gsum))
                w1, c1 = time.perf_counter(), time.thread_time()
                for v, gsum in recvd:
                    if env[v].requires_grad:
                        tensors.append(env[v])
                        grads.append(gsum)
                if tensors:
                    torch.autograd.backward(tensors, grads)
                for v, src in st["inputs"]:
                    t = inputs[v]
                    gv = t.grad if t.grad is not None else torch.zeros_like(t)
                    if src % D == self.rank:
                        local_grad[(v, j, k)] = gv
                    else:
                        sends.append(
                            dist.isend(
                                gv.contiguous(),
                                dst=src % D,
                                tag=prog["tags"][(v, j, k, 1)],
                            )
                        )
                live_bytes -= nb
                live_mb -= 1
                del inputs, env, loss
            w2, c2 = time.perf_counter(), time.thread_time()
            events.append(
                (
                    j,
                    k,
                    0 if kind == "F" else 1,
                    w0 - t_start,
                    w1 - t_start,
                    w2 - t_start,
                    (c2 - c1) * 1e3,
                )
            )
        for w in sends:
            w.wait(self.timeout)
        c3 = time.thread_time()
        grads_out = {}
        lr = float(payload.get("lr", 0.0))
        with torch.no_grad():
            for name in self.params:
                p = self._param(name)
                if p.grad is None:
                    continue
                if payload.get("return_grads"):
                    grads_out[name] = p.grad.clone()
                if lr:
                    p.add_(p.grad, alpha=-lr)
                p.grad = None
        w4, c4 = time.perf_counter(), time.thread_time()
        dist.barrier()
        return dict(
            rank=self.rank,
            events=events,
            loss=loss_total,
            grads=grads_out,
            opt_ms=(c4 - c3) * 1e3,
            wall_ms=(w4 - 0.0 - t_start) * 1e3,
            cpu_ms=(c4 - cpu_start) * 1e3,
            peak_act_bytes=peak_bytes,
            peak_live_mb=peak_mb,
            t_start=t_start,
        )

    # --------------------------------------------------------------- transfer benchmark
    def p2p(self, payload: dict) -> dict:
        out = []
        for nbytes in payload["sizes"]:
            t = torch.zeros(max(int(nbytes) // 4, 1))
            ts = []
            for _ in range(payload["n_reps"] + 1):
                dist.barrier()
                t0 = time.perf_counter()
                if self.rank == 0:
                    dist.send(t, dst=1)
                    dist.recv(t, src=1)
                elif self.rank == 1:
                    dist.recv(t, src=0)
                    dist.send(t, dst=0)
                # one way = half the round trip
                ts.append((time.perf_counter() - t0) * 1e3 / 2)
            out.append(sorted(ts[1:])[len(ts[1:]) // 2])
        return dict(rank=self.rank, ms=out)

    # ------------------------------------------------------------------ core PyTorch
    def torch_pp(self, payload: dict) -> dict:
        from torch.distributed.pipelining import (
            PipelineStage,
            Schedule1F1B,
            ScheduleGPipe,
            ScheduleInterleaved1F1B,
        )

        S, M = payload["S"], payload["M"]
        mods = payload["modules"]
        stages = [
            PipelineStage(mods[j], j, S, torch.device("cpu")) for j in sorted(mods)
        ]
        loss_fn = lambda out, y: torch.nn.functional.mse_loss(out, y)  # noqa: E731
        kind = payload["schedule"]
        if kind == "interleaved":
            sched = ScheduleInterleaved1F1B(stages, n_microbatches=M, loss_fn=loss_fn)
        elif kind == "gpipe":
            sched = ScheduleGPipe(stages[0], n_microbatches=M, loss_fn=loss_fn)
        else:
            sched = Schedule1F1B(stages[0], n_microbatches=M, loss_fn=loss_fn)
        first, last = 0 in mods, (S - 1) in mods
        res = []
        for it in range(payload["n_steps"]):
            for m in mods.values():
                m.zero_grad(set_to_none=True)
            dist.barrier()
            w0, c0 = time.perf_counter(), time.process_time()
            losses: list = []
            if first and last:
                sched.step(*payload["inputs"], target=payload["target"], losses=losses)
            elif first:
                sched.step(*payload["inputs"])
            elif last:
                sched.step(target=payload["target"], losses=losses)
            else:
                sched.step()
            w1, c1 = time.perf_counter(), time.process_time()
            res.append(
                dict(
                    wall_ms=(w1 - w0) * 1e3,
                    cpu_ms=(c1 - c0) * 1e3,
                    loss=float(sum(float(l.detach()) for l in losses) / M)
                    if losses
                    else None,
                )
            )
        grads = {}
        for m in mods.values():
            for name, p in m.named_parameters():
                if p.grad is not None:
                    grads[name] = p.grad.clone()
        dist.barrier()
        return dict(rank=self.rank, steps=res, grads=grads)


def worker_main(
    rank: int, D: int, port: int, timeout_s: float, cmd_q: Any, res_q: Any
) -> None:
    """Entry point of a spawned rank: join the gloo group on 127.0.0.1:``port``, serve commands."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=D,
            timeout=timedelta(seconds=timeout_s),
        )
    except Exception:  # noqa: BLE001 - reported to the parent
        res_q.put((rank, "error", traceback.format_exc()))
        return
    res_q.put((rank, "ok", "ready"))
    state = _Rank(rank, D, timeout_s)
    while True:
        cmd, payload = cmd_q.get()
        if cmd == "stop":
            break
        try:
            res_q.put((rank, "ok", getattr(state, cmd)(payload)))
        except Exception:  # noqa: BLE001 - reported to the parent
            res_q.put((rank, "error", traceback.format_exc()))
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass

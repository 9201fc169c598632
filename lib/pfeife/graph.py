"""Capture, profiling and linearisation: from an ``nn.Module`` to Pfeife's computation graph.

Sec. 2-3 of the paper (as the chapter's note reads them): the model is captured through a custom
``torch.compile`` backend, each operation is profiled (forward and backward time, parameter,
saved-activation and temporary bytes, output bytes on each edge) and the DAG is linearised into
a topological order whose prefixes define the split points.

Reconstruction notes (ours, not the official code): ``tmp_bytes`` is the op's output size; ``w_bytes`` counts weights and gradients (plain SGD keeps
no optimizer state); the linearisation heuristics are our reading of their names.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import fx

from icml25.checks import check_array, check_choice, check_int

__all__ = [
    "OpGraph",
    "capture_graph",
    "profile_graph",
    "linearize",
    "LINEARIZE_MODES",
    "stage_of",
    "cut_matrix",
]

LINEARIZE_MODES = ("none", "save_mem", "short_first", "long_first")


def _is_param_placeholder(ex: Any, params: dict[int, str]) -> bool:
    return isinstance(ex, torch.Tensor) and id(ex) in params


def capture_graph(
    model: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    method: str = "dynamo",
) -> tuple[fx.GraphModule, list[str]]:
    """Capture ``model`` as one FX graph (Sec. 2: Pfeife hooks into ``torch.compile``).

    With ``method="dynamo"`` a custom ``torch.compile`` backend receives the graph. Dynamo lifts
    parameters to placeholders (PyTorch >= 2.4); they are mapped back to the model's parameters
    by identity and turned into ``get_attr`` nodes, so the returned module's only inputs are the
    model's data inputs. ``method="symbolic_trace"`` is the ``fx.symbolic_trace`` fallback.

    Args:
        model: the module (its parameters are shared, not copied).
        example_inputs: the forward's positional tensors (any batch size).
        method: ``"dynamo"`` or ``"symbolic_trace"``.

    Returns:
        ``(gm, param_names)``: a ``GraphModule`` rooted at ``model`` with one tensor output, and
        the qualified names of the parameters its ``get_attr`` nodes read, in graph order.

    Raises:
        TypeError: ``model`` is not a module or an input is not a tensor.
        ValueError: dynamo breaks the graph (the message gives dynamo's reason; use
            ``method="symbolic_trace"``), or the model does not return one tensor.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_choice(method, "method", ("dynamo", "symbolic_trace"))
    inputs = tuple(example_inputs)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError("example_inputs must be a non-empty sequence of torch.Tensor")
    if method == "symbolic_trace":
        gm = fx.symbolic_trace(model)
        gm = _inline_modules(gm)
    else:
        gm = _capture_dynamo(model, inputs)
    _single_output(gm)
    names = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    return gm, names


def _capture_dynamo(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]
) -> fx.GraphModule:
    import torch._dynamo as dynamo

    captured: list[tuple[fx.GraphModule, list[Any]]] = []

    def backend(gm: fx.GraphModule, ex: list[Any]) -> Any:
        captured.append((gm, list(ex)))
        return gm.forward

    dynamo.reset()
    try:
        torch.compile(model, backend=backend, fullgraph=True, dynamic=False)(*inputs)
    # dynamo's Unsupported/graph-break errors have many classes
    except Exception as err:
        raise ValueError(
            f"torch.compile could not capture {type(model).__name__} as one graph "
            f"(graph break: {str(err).splitlines()[0][:300]}); use method='symbolic_trace'"
        ) from err
    finally:
        dynamo.reset()
    gm, ex = captured[-1]
    params = {id(p): n for n, p in model.named_parameters()}
    buffers = {id(b): n for n, b in model.named_buffers()}
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node, val in zip([n for n in gm.graph.nodes if n.op == "placeholder"], ex):
        if isinstance(val, torch.Tensor) and (id(val) in params or id(val) in buffers):
            env[node] = graph.get_attr(params.get(id(val)) or buffers[id(val)])
        else:
            env[node] = graph.placeholder(node.name)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.lint()
    return fx.GraphModule(model, graph)


def _inline_modules(gm: fx.GraphModule) -> fx.GraphModule:
    """``call_module`` leaves of a symbolic trace as functional calls on ``get_attr`` parameters
    (Linear and Conv2d; other leaves stay modules and carry their parameters)."""
    import torch.nn.functional as F

    g = gm.graph
    for node in list(g.nodes):
        if node.op != "call_module":
            continue
        mod = gm.get_submodule(node.target)
        if isinstance(mod, torch.nn.Linear) or (
            isinstance(mod, torch.nn.Conv2d)
            and mod.groups == 1
            and mod.padding_mode == "zeros"
        ):
            with g.inserting_before(node):
                w = g.get_attr(f"{node.target}.weight")
                b = g.get_attr(f"{node.target}.bias") if mod.bias is not None else None
                if isinstance(mod, torch.nn.Linear):
                    new = g.call_function(F.linear, (node.args[0], w, b))
                else:
                    new = g.call_function(
                        F.conv2d,
                        (node.args[0], w, b, mod.stride, mod.padding, mod.dilation, 1),
                    )
            node.replace_all_uses_with(new)
            g.erase_node(node)
    g.lint()
    return fx.GraphModule(gm, g)


def _single_output(gm: fx.GraphModule) -> None:
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    val = out.args[0]
    if isinstance(val, (tuple, list)):
        if len(val) != 1:
            raise ValueError(
                f"the model must return one tensor, its graph returns {len(val)} values"
            )
        val = val[0]
    if not isinstance(val, fx.Node):
        raise ValueError("the model must return one tensor")


def _output_node(gm: fx.GraphModule) -> fx.Node:
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    val = out.args[0]
    return val[0] if isinstance(val, (tuple, list)) else val


@dataclass(frozen=True)
class OpGraph:
    """Pfeife's computation graph: one entry per operation, in graph (topological) order.

    Attributes:
        names: (n,) node names of the ops in ``gm`` (placeholders and ``get_attr`` excluded).
        f_ms, b_ms: (n,) float64 forward and backward time per micro-batch, ms.
        w_bytes: (n,) int64 weights + gradients of the parameters the op reads.
        act_bytes: (n,) int64 tensors autograd saves for the op's backward (parameters excluded).
        tmp_bytes: (n,) int64 transient bytes while the op runs (its output size).
        out_bytes: (n,) int64 size of the op's output tensor.
        edges: (m, 2) int64 producer -> consumer op indices; edge_bytes: (m,) int64 bytes carried.
        inputs_used: per op, the indices of the model inputs (placeholders) it reads.
        params_used: per op, the parameter names it reads.
        opt_ms: (n,) float64 optimizer time for the op's parameters, ms.
        fb_ratio: total backward / total forward time (the paper's global rho).
        micro_batch: the batch size profiled.
    """

    names: tuple[str, ...]
    f_ms: np.ndarray
    b_ms: np.ndarray
    w_bytes: np.ndarray
    act_bytes: np.ndarray
    tmp_bytes: np.ndarray
    out_bytes: np.ndarray
    edges: np.ndarray
    edge_bytes: np.ndarray
    inputs_used: tuple[tuple[int, ...], ...]
    params_used: tuple[tuple[str, ...], ...]
    opt_ms: np.ndarray
    fb_ratio: float
    micro_batch: int

    @property
    def n(self) -> int:
        """Number of ops."""
        return len(self.names)

    @property
    def is_chain(self) -> bool:
        """True when every edge joins consecutive ops (a sequential model)."""
        return (
            bool(np.all(self.edges[:, 1] - self.edges[:, 0] == 1))
            if len(self.edges)
            else True
        )


def _tensor_bytes(v: Any) -> int:
    if isinstance(v, torch.Tensor):
        return v.numel() * v.element_size()
    if isinstance(v, (tuple, list)):
        return sum(_tensor_bytes(t) for t in v)
    return 0


def _median_ms(fn: Any, n_reps: int, sync: bool = False) -> float:
    """Median time of ``fn()`` in ms: CUDA wall time (synchronised) on a GPU, else the thread's CPU
    time (``time.thread_time``), which other processes on a shared machine do not inflate."""
    clock = time.perf_counter if sync else time.thread_time
    ts = []
    for _ in range(n_reps):
        if sync:
            torch.cuda.synchronize()
        t0 = clock()
        fn()
        if sync:
            torch.cuda.synchronize()
        ts.append((clock() - t0) * 1e3)
    return float(np.median(ts))


def profile_graph(
    gm: fx.GraphModule, inputs: Sequence[torch.Tensor], n_reps: int = 5
) -> OpGraph:
    """Profile every op of ``gm`` on one micro-batch ``inputs`` (Sec. 2, "profiling").

    Each op is run ``n_reps`` times on its recorded inputs, as the runtime runs it (gradients
    recorded, inputs from other ops requiring grad; median thread CPU time in ms, or synchronised
    wall time for CUDA inputs). Saved
    activations are counted with ``torch.autograd.graph.saved_tensors_hooks`` (parameters and
    tensors seen twice excluded). Run it on an idle core with one thread.

    Args:
        gm: a module from :func:`capture_graph`.
        inputs: the micro-batch, one tensor per placeholder of ``gm``.
        n_reps: timing repetitions per op (>= 1).

    The backward time is ``b_i = rho f_i`` with one global ratio ``rho`` measured on the whole
    graph, as the paper does: timing each op's backward alone is dominated by the autograd
    engine's fixed cost per call at this scale (we tried; it inflated ``rho`` about threefold).

    Returns:
        the :class:`OpGraph` of ``gm``'s ops.

    Raises:
        TypeError: an input is not a tensor.
        ValueError: wrong number of inputs, or an op returns something other than a tensor.
    """
    n_reps = check_int(n_reps, "n_reps", low=1)
    inputs = tuple(inputs)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(inputs) != len(phs):
        raise ValueError(
            f"inputs must hold {len(phs)} tensors (one per placeholder of gm), got {len(inputs)}"
        )
    if not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError("inputs must be torch.Tensor")
    env: dict[str, Any] = {}
    ph_index = {p.name: i for i, p in enumerate(phs)}
    for p, t in zip(phs, inputs):
        env[p.name] = t.detach()
    param_of: dict[str, str] = {}
    ops = [
        n
        for n in gm.graph.nodes
        if n.op in ("call_function", "call_method", "call_module")
    ]
    index = {n.name: i for i, n in enumerate(ops)}
    interp = fx.Interpreter(gm)
    f_ms, w_b, a_b, t_b, o_b, opt_ms = ([] for _ in range(6))
    in_used, p_used, edges, e_bytes = [], [], [], []
    opt_rate = _optimizer_ms_per_byte()
    sync = bool(inputs[0].is_cuda)  # time CUDA ops to completion
    all_param_ptrs = {p.data_ptr() for p in gm.parameters()} | {
        b.data_ptr() for b in gm.buffers()
    }
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            env[node.name] = interp.fetch_attr(node.target)
            param_of[node.name] = node.target
            continue
        if node.op in ("placeholder", "output"):
            continue
        i = index[node.name]
        args = fx.node.map_arg(node.args, lambda a: env[a.name])
        kwargs = fx.node.map_arg(node.kwargs, lambda a: env[a.name])
        deps = [a for a in node.all_input_nodes]
        params = tuple(sorted({param_of[a.name] for a in deps if a.name in param_of}))
        if node.op == "call_module":
            params = params + tuple(
                f"{node.target}.{k}"
                for k, _ in gm.get_submodule(node.target).named_parameters()
            )

        def run(args: Any = args, kwargs: Any = kwargs, node: fx.Node = node) -> Any:
            return getattr(interp, node.op)(node.target, args, kwargs)

        with torch.no_grad():
            out = run()
        if not isinstance(out, torch.Tensor):
            raise ValueError(
                f"op {node.name} returns {type(out).__name__}; Pfeife's graph needs one tensor per op"
            )
        saved: dict[int, int] = {}
        leaf = {
            a.name: env[a.name].detach().requires_grad_(True)
            for a in deps
            if a.name in index
            and isinstance(env[a.name], torch.Tensor)
            and env[a.name].is_floating_point()
        }
        g_args = fx.node.map_arg(node.args, lambda a: leaf.get(a.name, env[a.name]))
        g_kwargs = fx.node.map_arg(node.kwargs, lambda a: leaf.get(a.name, env[a.name]))
        param_ptrs = all_param_ptrs

        def pack(t: torch.Tensor) -> torch.Tensor:
            if t.data_ptr() not in param_ptrs:
                saved[t.data_ptr()] = t.numel() * t.element_size()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            run(g_args, g_kwargs)
        a_b.append(sum(saved.values()))
        # forward time as the pipeline runs it: autograd recording
        # on, saved tensors hooked
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            f_ms.append(_median_ms(lambda: run(g_args, g_kwargs), n_reps, sync))
        env[node.name] = out
        pbytes = sum(
            interp.fetch_attr(p).numel() * interp.fetch_attr(p).element_size()
            for p in params
        )
        w_b.append(2 * pbytes)
        opt_ms.append(pbytes * opt_rate)
        t_b.append(_tensor_bytes(out))
        o_b.append(max(1, _tensor_bytes(out)))
        in_used.append(
            tuple(sorted({ph_index[a.name] for a in deps if a.name in ph_index}))
        )
        p_used.append(params)
        for a in deps:
            if a.name in index:
                edges.append((index[a.name], i))
                e_bytes.append(max(1, _tensor_bytes(env[a.name])))
    f = np.asarray(f_ms, dtype=np.float64)
    rho = _fb_ratio(gm, inputs, n_reps, sync)
    b = rho * f  # b_i = rho f_i (the paper's global ratio)
    return OpGraph(
        names=tuple(n.name for n in ops),
        f_ms=f,
        b_ms=b,
        w_bytes=np.asarray(w_b, np.int64),
        act_bytes=np.asarray(a_b, np.int64),
        tmp_bytes=np.asarray(t_b, np.int64),
        out_bytes=np.asarray(o_b, np.int64),
        edges=np.asarray(edges, np.int64).reshape(-1, 2),
        edge_bytes=np.asarray(e_bytes, np.int64),
        inputs_used=tuple(in_used),
        params_used=tuple(p_used),
        opt_ms=np.asarray(opt_ms, np.float64),
        fb_ratio=rho,
        micro_batch=int(inputs[0].shape[0]),
    )


def _fb_ratio(
    gm: fx.GraphModule, inputs: tuple, n_reps: int, sync: bool = False
) -> float:
    """``rho = (t(forward + backward) - t(forward)) / t(forward)`` of the whole graph, with gradients
    on (Sec. 2: Pfeife measures one global backward/forward ratio)."""

    def fwd() -> Any:
        out = gm(*inputs)
        return out[0] if isinstance(out, (tuple, list)) else out

    def fwd_bwd() -> None:
        fwd().float().pow(2).mean().backward()

    fwd_bwd()  # warm-up
    # forward with autograd recording, as in the runtime
    t_f = _median_ms(fwd, n_reps, sync)
    t_fb = _median_ms(fwd_bwd, n_reps, sync)
    gm.zero_grad(set_to_none=True)
    return float(max(t_fb - t_f, 0.0) / max(t_f, 1e-9))


_OPT_RATE: list[float] = []


def _optimizer_ms_per_byte() -> float:
    """Measured time of an in-place SGD update per parameter byte (ms/byte; cached)."""
    if not _OPT_RATE:
        p = torch.zeros(1 << 18)
        g = torch.ones(1 << 18)
        ms = _median_ms(lambda: p.add_(g, alpha=-1e-3), 5)
        _OPT_RATE.append(ms / (p.numel() * 4))
    return _OPT_RATE[0]


def synthetic_graph(
    f_ms: Any,
    b_ms: Any = None,
    w_bytes: Any = None,
    act_bytes: Any = None,
    edges: Any = None,
    edge_bytes: Any = None,
) -> OpGraph:
    """An :class:`OpGraph` from arrays (for tests, exercises and virtual devices).

    Args:
        f_ms: (n,) forward ms (>= 0). b_ms: (n,) backward ms (default ``2 f``).
        w_bytes, act_bytes: (n,) int64 (default 0). edges: (m, 2) producer < consumer (default the
            chain ``i -> i+1``). edge_bytes: (m,) int64 >= 1 (default 1: a dependency always
            carries a tensor, and the cost model sees a dependency where bytes > 0).

    Returns:
        the graph (``tmp_bytes = out_bytes = 0``, ``opt_ms = 0``).

    Raises:
        ValueError: wrong shapes, negative values, or an edge that does not go forward.
    """
    f = check_array(f_ms, "f_ms", ndim=1, low=0.0, min_size=1).astype(np.float64)
    n = len(f)
    b = (
        2.0 * f
        if b_ms is None
        else check_array(b_ms, "b_ms", shape=(n,), low=0.0).astype(np.float64)
    )
    w = (
        np.zeros(n, np.int64)
        if w_bytes is None
        else check_array(w_bytes, "w_bytes", shape=(n,), kind="int", low=0)
    )
    a = (
        np.zeros(n, np.int64)
        if act_bytes is None
        else check_array(act_bytes, "act_bytes", shape=(n,), kind="int", low=0)
    )
    if edges is None:
        e = np.stack([np.arange(n - 1), np.arange(1, n)], 1).astype(np.int64)
    else:
        e = check_array(edges, "edges", ndim=2, kind="int").reshape(-1, 2)
        if len(e) and (np.any(e[:, 0] >= e[:, 1]) or e.min() < 0 or e.max() >= n):
            raise ValueError(
                "edges must go forward (producer < consumer) between ops 0..n-1"
            )
    eb = (
        np.ones(len(e), np.int64)
        if edge_bytes is None
        else check_array(edge_bytes, "edge_bytes", shape=(len(e),), kind="int", low=1)
    )
    out = np.zeros(n, np.int64)
    for (u, _v), nb in zip(e, eb):
        out[u] = max(out[u], nb)
    return OpGraph(
        names=tuple(f"op{i}" for i in range(n)),
        f_ms=f,
        b_ms=b,
        w_bytes=w,
        act_bytes=a,
        tmp_bytes=np.zeros(n, np.int64),
        out_bytes=out,
        edges=e,
        edge_bytes=eb,
        inputs_used=tuple(() for _ in range(n)),
        params_used=tuple(() for _ in range(n)),
        opt_ms=np.zeros(n),
        fb_ratio=float(b.sum() / f.sum()) if f.sum() > 0 else 1.0,
        micro_batch=1,
    )


__all__.append("synthetic_graph")


def linearize(g: OpGraph, mode: str = "none") -> np.ndarray:
    """A topological order of ``g``'s ops; split points index into it (Sec. 2, "linearisation").

    Modes (our reading of the official heuristics' names): ``"none"`` keeps graph order;
    ``"save_mem"`` picks, among ready ops, the one that frees the most live output bytes;
    ``"short_first"`` / ``"long_first"`` pick the ready op with the shortest / longest remaining
    path (in ops) to the sink, so short side branches are finished first or last.

    Args:
        g: the graph. mode: one of :data:`LINEARIZE_MODES`.

    Returns:
        (n,) int64 permutation of ``0..n-1``, a topological order of ``g.edges``.

    Raises:
        TypeError: ``g`` is not an :class:`OpGraph`. ValueError: unknown mode.
    """
    if not isinstance(g, OpGraph):
        raise TypeError(f"g must be an OpGraph, got {type(g).__name__}")
    mode = check_choice(mode, "mode", LINEARIZE_MODES)
    return _linearize(g, mode)


def _linearize(g: OpGraph, mode: str) -> np.ndarray:
    n = g.n
    if mode == "none":
        return np.arange(n, dtype=np.int64)
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = np.zeros(n, np.int64)
    for u, v in g.edges:
        succ[u].append(int(v))
        indeg[v] += 1
    depth = np.zeros(n, np.int64)  # longest remaining path to a sink, in ops
    for u in range(n - 1, -1, -1):
        depth[u] = 1 + max((depth[v] for v in succ[u]), default=0)
    remaining_users = np.array([len(s) for s in succ])
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in g.edges:
        preds[v].append(int(u))

    def key(v: int) -> tuple:
        if mode == "short_first":
            return (depth[v], v)
        if mode == "long_first":
            return (-depth[v], v)
        freed = sum(
            int(g.out_bytes[u]) for u in set(preds[v]) if remaining_users[u] == 1
        )
        return (-(freed - int(g.out_bytes[v])), v)

    ready = [(key(v), v) for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for u in set(preds[v]):
            remaining_users[u] -= 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(ready, (key(w), w))
        if mode == "save_mem":  # keys depend on live users: re-key the heap
            ready = [(key(x), x) for _, x in ready]
            heapq.heapify(ready)
    return np.asarray(order, dtype=np.int64)


def stage_of(n: int, order: np.ndarray, splits: np.ndarray) -> np.ndarray:
    """Stage index of every op: op ``order[p]`` is in stage ``searchsorted(splits, p, 'right')``.

    Args:
        n: number of ops. order: (n,) a linearisation. splits: (S-1,) increasing in ``1..n-1``.

    Returns:
        (n,) int64 stage per op (trusted inputs: the public callers check them).
    """
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    return np.searchsorted(np.asarray(splits, np.int64), pos, side="right").astype(
        np.int64
    )


def cut_matrix(g: OpGraph, order: np.ndarray, splits: np.ndarray) -> np.ndarray:
    """``C[i, j]``: bytes stage ``i`` sends stage ``j`` per micro-batch (each output once per stage).

    Returns:
        (S, S) int64, upper-triangular for a topological ``order``.
    """
    S = len(splits) + 1
    st = stage_of(g.n, order, splits)
    C = np.zeros((S, S), np.int64)
    seen = set()
    for u, v in g.edges:
        su, sv = int(st[u]), int(st[v])
        if su != sv and (int(u), sv) not in seen:
            seen.add((int(u), sv))
            C[su, sv] += int(g.out_bytes[u])
    return C

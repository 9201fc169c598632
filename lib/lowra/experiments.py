"""The loops the chapter's cells call: quantize a model LowRA-style, sweep the bit budget, and
fine-tune the adapters by distillation (the chapter's Exp. 1-3)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from icml25.checks import (
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_real,
    check_torch_generator,
)
from icml25.kernels import lowbit
from icml25.lowra.baselines import nf_channel_codebooks
from icml25.lowra.defaults import DEFAULTS
from icml25.lowra.method import (
    ChannelCodebooks,
    _check_codebooks_budget,
    assign_precision,
    assign_precision_exact,
    assignment_bits,
    learn_channel_codebooks,
)
from icml25.lowra.packed import LowRALinear, MixedPrecisionWeight, loftq_init

__all__ = [
    "apply_lowra",
    "sse_vs_budget",
    "mean_pool_embed",
    "embedding_cosine",
    "distill_finetune",
]


def _target_linears(
    model: nn.Module, target_modules: Iterable[str] | str | None
) -> list[tuple[str, nn.Linear]]:
    out = []
    if isinstance(target_modules, str):  # one name, not its characters
        target_modules = (target_modules,)
    targets = None if target_modules is None else tuple(target_modules)
    if targets is not None and not all(isinstance(t, str) for t in targets):
        raise TypeError(
            f"target_modules must be a string or an iterable of strings, got {target_modules!r}"
        )
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear) and (
            targets is None
            or any(
                name == t or name.endswith("." + t) or name.split(".")[-1] == t
                for t in targets
            )
        ):
            out.append((name, mod))
    return out


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def apply_lowra(
    model: nn.Module,
    target_bits: float,
    rank: int = DEFAULTS.rank,
    target_modules: Iterable[str] | str | None = None,
    alpha: float = DEFAULTS.alpha,
    method: str = "lowra",
    loftq_n_steps: int = DEFAULTS.loftq_n_steps,
    group: int = DEFAULTS.group,
    weight_power: int = DEFAULTS.weight_power,
    n_clusters: int = DEFAULTS.n_clusters,
    assigner: str = "two_level",
    kmeans_seed: int = 0,
    codebooks: dict[str, ChannelCodebooks] | None = None,
    cache_dequantized: bool = False,
    rng: torch.Generator | None = None,
) -> tuple[nn.Module, dict[str, dict[str, Any]]]:
    """Quantize a model's linear layers LowRA-style and attach LoftQ-initialised LoRA adapters.

    The precision map is assigned *globally* across all target layers (one budget, as the paper),
    then each layer is packed with its per-channel codebooks, LoftQ-initialised with the
    precision map and codebooks fixed, and replaced in place by a :class:`LowRALinear`.

    Args:
        model: a torch module; its ``nn.Linear`` layers matching ``target_modules`` are replaced.
        target_bits: bits per parameter (code bits) B-bar >= 1.
        rank, alpha: LoRA rank r and alpha.
        target_modules: a name or names (or name suffixes) of the layers; None: every nn.Linear.
        method: ``"lowra"`` (learned codebooks + assigner), ``"mapping_only"`` (learned codebooks,
            uniform b = target_bits), ``"assigner_only"`` (NF codebooks + assigner) or ``"nf"``
            (QLoRA-style fixed NF codebook, uniform b).
        loftq_n_steps: LoftQ T (0: no LoftQ, adapters start at B = 0).
        group, weight_power, n_clusters: see :func:`learn_channel_codebooks`, :func:`assign_precision`.
        assigner: ``"two_level"`` or ``"exact"``.
        kmeans_seed: the ``seed`` of :func:`assign_precision`, scikit-learn K-means'
            ``random_state`` (an integer >= 0, also its cache key; not a stream of draws).
        codebooks: precomputed layer name -> :class:`ChannelCodebooks` (skips learning); they must
            match ``method`` (learned ones for "lowra"/"mapping_only", :func:`nf_channel_codebooks`
            for "nf"/"assigner_only").
        cache_dequantized: passed to :class:`LowRALinear`.
        rng: the ``torch.Generator`` of the adapters' Kaiming-uniform init (only drawn from when
            ``loftq_n_steps == 0``); None: torch's global generator.

    All arguments are checked, and the memory and work of the codebooks and of LoftQ
    (``loftq_n_steps`` Gram eigen-decompositions of O(m n min(m, n)) per layer) estimated, before
    any layer is touched.

    Returns:
        ``(model, report)``; ``report`` maps layer name -> dict with ``row_bits`` (m,), ``sse_table``
        (e-table SSE of the map), ``sse`` (measured ||W - dequant(Q)||^2), ``code_bits``, ``nbytes``
        (accounting), ``compact_bytes`` (serialised), ``packed_bytes`` (code buffer) and ``n_params``.

    Raises:
        TypeError: model not an nn.Module, target_modules not strings, codebooks not
            :class:`ChannelCodebooks`, rank/loftq_n_steps/group/weight_power/n_clusters/kmeans_seed not
            integers, target_bits/alpha not numbers, cache_dequantized not a bool, rng not a
            ``torch.Generator`` or None.
        ValueError: unknown method/assigner, no matching layers, target_bits not finite or < 1,
            uniform methods with target_bits not in {1, 2, 4}, rank < 1 or too large for a layer,
            alpha not finite and > 0, loftq_n_steps < 0, group < 1 or not dividing a layer's n,
            weight_power not 0/1/2, n_clusters < 1, kmeans_seed < 0, codebooks of another shape/group or
            with differing candidate bits.
        TooLargeError: the codebooks or LoftQ of the layers cannot fit in memory or time.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    method = check_choice(
        method, "method", ("lowra", "mapping_only", "assigner_only", "nf")
    )
    alpha = check_positive(alpha, "alpha")
    loftq_n_steps = check_int(loftq_n_steps, "loftq_n_steps", low=0)
    rank = check_int(rank, "rank", low=1)
    assigner = check_choice(assigner, "assigner", ("two_level", "exact"))
    group = check_int(group, "group", low=1)
    weight_power = check_choice(
        check_int(weight_power, "weight_power"), "weight_power", (0, 1, 2)
    )
    n_clusters = check_int(n_clusters, "n_clusters", low=1)
    kmeans_seed = check_int(kmeans_seed, "kmeans_seed", low=0)
    cache_dequantized = check_bool(cache_dequantized, "cache_dequantized")
    rng = check_torch_generator(rng, "rng")
    if codebooks is not None and not isinstance(codebooks, dict):
        raise TypeError(
            f"codebooks must be a dict of layer name -> ChannelCodebooks, got {type(codebooks).__name__}"
        )
    layers = _target_linears(model, target_modules)
    if not layers:
        raise ValueError(
            f"no nn.Linear layer matches target_modules={target_modules!r}"
        )
    check_real(target_bits, "target_bits")
    if float(target_bits) < 1:
        raise ValueError(
            f"target_bits={target_bits} is infeasible: below 1 bit per parameter"
        )
    for name, lin in layers:
        if not 1 <= rank <= min(lin.weight.shape):
            raise ValueError(
                f"rank={rank} is too large for layer {name!r} of shape {tuple(lin.weight.shape)}"
            )
        if lin.weight.shape[1] % group:
            raise ValueError(
                f"group={group} must divide the row length n={lin.weight.shape[1]} of layer {name!r}"
            )
    uniform = method in ("mapping_only", "nf")
    if uniform and target_bits not in lowbit.ALLOWED_BITS:
        raise ValueError(
            f"method {method!r} needs target_bits in {lowbit.ALLOWED_BITS}, got {target_bits!r}"
        )
    learned = method in ("lowra", "mapping_only")
    cbs = dict(codebooks or {})
    for name, lin in layers:
        cb = cbs.get(name)
        if cb is None:
            continue
        if not isinstance(cb, ChannelCodebooks):
            raise TypeError(
                f"codebooks[{name!r}] must be a ChannelCodebooks, got {type(cb).__name__}"
            )
        if tuple(cb.shape) != tuple(lin.weight.shape) or cb.group != group:
            raise ValueError(
                f"codebooks[{name!r}] were learned for shape {tuple(cb.shape)} and group {cb.group}, "
                f"but the layer is {tuple(lin.weight.shape)} with group={group}"
            )
    names = {name for name, _ in layers}
    cand = {tuple(cb.bits) for name, cb in cbs.items() if name in names}
    if any(name not in cbs for name in names):
        # the layers without codebooks get them learned for DEFAULTS.bits
        cand.add(tuple(DEFAULTS.bits))
    if len(cand) > 1:
        raise ValueError(
            f"codebooks must all have the same candidate bits (those learned here: {DEFAULTS.bits}), "
            f"got {sorted(cand)}"
        )
    if uniform and int(target_bits) not in next(iter(cand)):
        raise ValueError(
            f"method {method!r} at target_bits={target_bits} needs codebooks for {int(target_bits)} bits, "
            f"got bits {next(iter(cand))}"
        )
    todo = [(name, lin) for name, lin in layers if name not in cbs]
    _check_apply_budget(
        [tuple(lin.weight.shape) for _, lin in layers],
        [tuple(lin.weight.shape) for _, lin in todo],
        loftq_n_steps,
        rank,
        learned,
    )
    if todo:
        ws = [lin.weight for _, lin in todo]
        learnt = (
            learn_channel_codebooks(ws, group=group, weight_power=weight_power)
            if learned
            else nf_channel_codebooks(ws, group=group)
        )
        cbs.update({name: cb for (name, _), cb in zip(todo, learnt)})
    cbs = {name: cbs[name] for name, _ in layers}
    if uniform:
        maps = {
            name: np.full(cb.shape[0], int(target_bits)) for name, cb in cbs.items()
        }
    else:
        E = np.concatenate([cb.errors for cb in cbs.values()])
        nc = np.concatenate([cb.n_params for cb in cbs.values()])
        fn = assign_precision if assigner == "two_level" else assign_precision_exact
        kw = (
            {"n_clusters": n_clusters, "seed": kmeans_seed}
            if assigner == "two_level"
            else {}
        )
        allb = fn(E, nc, target_bits, bits=cbs[layers[0][0]].bits, **kw)
        maps, start = {}, 0
        for name, cb in cbs.items():
            maps[name] = allb[start : start + cb.shape[0]]
            start += cb.shape[0]
    report = {}
    for name, lin in layers:
        cb, rb = cbs[name], maps[name]
        lut, thr = cb.tables(rb)

        def quantizer(X, rb=rb, lut=lut, thr=thr):
            return MixedPrecisionWeight.quantize(X, rb, lut, thr, group)

        W = lin.weight.detach().float().cpu().numpy()
        if loftq_n_steps > 0:
            qw, A, B = loftq_init(W, quantizer, rank, loftq_n_steps)
            # W ~ Q + A B^T = Q + (alpha / r) lora_B lora_A: split
            # sqrt(r / alpha) on each side
            c = math.sqrt(rank / alpha)
            lora_B, lora_A = A * c, (B * c).T
        else:
            qw = quantizer(W)
            lora_A = torch.empty(rank, W.shape[1])
            bound = 1 / math.sqrt(W.shape[1])
            lora_A.uniform_(-bound, bound, generator=rng)
            lora_B = np.zeros((W.shape[0], rank), np.float32)
        new = LowRALinear(qw, lin.bias, rank, alpha, lora_A, lora_B, cache_dequantized)
        new.to(lin.weight.device)
        _set_module(model, name, new)
        report[name] = {
            "row_bits": np.asarray(rb),
            "sse_table": cb.sse(rb),
            "sse": float(((W - qw.dequantize()) ** 2).sum()),
            "code_bits": assignment_bits(rb, cb.n_params),
            "nbytes": qw.nbytes,
            "compact_bytes": sum(a.nbytes for a in qw.to_compact().values()),
            "packed_bytes": int(new.packed.numel() * new.packed.element_size()),
            "n_params": qw.n_params,
        }
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in model.modules():
        if isinstance(mod, LowRALinear):
            mod.lora_A.requires_grad_(True)
            mod.lora_B.requires_grad_(True)
    return model, report


def _check_apply_budget(
    shapes: Sequence[tuple[int, int]],
    to_learn: Sequence[tuple[int, int]],
    loftq_n_steps: int,
    rank: int,
    learned: bool,
) -> None:
    """Refuse an :func:`apply_lowra` whose codebooks or LoftQ cannot fit (estimates from the shapes).

    Codebooks: :func:`icml25.lowra.method._check_codebooks_budget` for the layers still to learn.
    Per layer: about ten float32/float64 (m, n) copies (the weight, its quantization, residuals,
    the dense cache) and, per LoftQ step, a Gram matrix ``min(m, n)^2`` float64 and
    ``2 m n min(m, n) + min(m, n)^3 + 4 m n rank`` operations.
    """
    if to_learn:
        _check_codebooks_budget(
            "apply_lowra(model=...) learning codebooks",
            to_learn,
            tuple(DEFAULTS.bits),
            DEFAULTS.lloyd_n_steps if learned else 0,
        )
    n_bytes, ops = 0.0, 0.0
    for m, n in shapes:
        k = min(m, n)
        n_bytes = max(n_bytes, 64.0 * m * n + 8.0 * k * k)
        ops += max(loftq_n_steps, 1) * (
            2.0 * m * n * k + float(k) ** 3 + 4.0 * m * n * rank
        )
    check_budget(
        f"apply_lowra(loftq_n_steps={loftq_n_steps}) on {len(shapes)} layer(s)",
        n_bytes=n_bytes,
        n_operations=ops,
    )


def sse_vs_budget(
    learned: Sequence[ChannelCodebooks],
    nf: Sequence[ChannelCodebooks],
    budgets: Sequence[float],
    n_clusters: int = DEFAULTS.n_clusters,
    seed: int = 0,
) -> dict[str, Any]:
    """Total weight-space SSE of a model's layers against the bit budget (the chapter's Exp. 1).

    For every budget: full LowRA (learned codebooks + two-level assigner) and the "assigner only"
    ablation (NF codebooks + assigner); for each uniform precision b: "mapping only" (learned
    codebooks, every channel at b) and the QLoRA-style NF baseline. SSEs come from the e-tables.

    Args:
        learned, nf: per-layer :class:`ChannelCodebooks` of the same layers (learned and NF).
        budgets: target bits per parameter, each >= 1.
        n_clusters, seed: of :func:`assign_precision`.

    Returns:
        dict with ``budgets``, ``lowra``/``assigner_only`` (lists of SSE), ``lowra_maps`` (the
        precision maps), ``mapping_only``/``nf`` (b -> SSE) and ``n_params``.

    Raises:
        ValueError: layers (shapes or candidate bits) differ between ``learned`` and ``nf`` or within
            them, or a budget below the smallest precision.
    """
    if (
        len(learned) == 0
        or len(learned) != len(nf)
        or any(
            a.shape != b.shape or tuple(a.bits) != tuple(b.bits)
            for a, b in zip(learned, nf)
        )
    ):
        raise ValueError(
            "learned and nf must describe the same (non-empty list of) layers with the same bits"
        )
    if len({tuple(cb.bits) for cb in learned}) != 1:
        raise ValueError(
            "all codebooks in learned and nf must have the same candidate bits"
        )
    E = np.concatenate([cb.errors for cb in learned])
    EN = np.concatenate([cb.errors for cb in nf])
    nc = np.concatenate([cb.n_params for cb in learned])
    bits = learned[0].bits
    rows = np.arange(E.shape[0])
    out: dict[str, Any] = {
        "budgets": [float(b) for b in budgets],
        "lowra": [],
        "assigner_only": [],
        "lowra_maps": [],
        "mapping_only": {b: float(E[:, j].sum()) for j, b in enumerate(bits)},
        "nf": {b: float(EN[:, j].sum()) for j, b in enumerate(bits)},
        "n_params": int(nc.sum()),
    }
    for B in budgets:
        for key, table in (("lowra", E), ("assigner_only", EN)):
            bmap = assign_precision(
                table, nc, B, bits=bits, n_clusters=n_clusters, seed=seed
            )
            out[key].append(
                float(table[rows, np.searchsorted(np.array(bits), bmap)].sum())
            )
            if key == "lowra":
                out["lowra_maps"].append(bmap)
    return out


def mean_pool_embed(
    model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """Sentence embeddings: mask-weighted mean of the last hidden states (sentence-transformers).

    Args:
        model: a transformers encoder returning ``last_hidden_state`` (B, L, d).
        input_ids, attention_mask: (B, L) integer tensors.

    Returns:
        (B, d) float tensor (not normalised).
    """
    h = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    m = attention_mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp_min(1e-9)


@torch.no_grad()
def embedding_cosine(
    model: nn.Module,
    batch: dict[str, torch.Tensor],
    teacher: torch.Tensor,
    chunk: int = 256,
) -> float:
    """Mean cosine similarity between ``model``'s embeddings and the teacher's (B, d) embeddings.

    Args:
        model: the sentence encoder (its parameters' device is used).
        batch: tokenised sentences, ``input_ids`` and ``attention_mask`` (B, L) tensors.
        teacher: (B, d) reference embeddings.
        chunk: sentences per forward pass, >= 1.

    Returns:
        the mean of the B cosines, a float in [-1, 1].

    Raises:
        TypeError: chunk not an integer.  ValueError: chunk < 1.
    """
    chunk = check_int(chunk, "chunk", low=1)
    model.eval()
    device = next(model.parameters()).device
    cos = []
    for i in range(0, teacher.shape[0], chunk):
        e = mean_pool_embed(
            model,
            batch["input_ids"][i : i + chunk].to(device),
            batch["attention_mask"][i : i + chunk].to(device),
        )
        cos.append(
            nn.functional.cosine_similarity(
                e, teacher[i : i + chunk].to(e.device), dim=-1
            )
        )
    return float(torch.cat(cos).mean())


def distill_finetune(
    model: nn.Module,
    batch: dict[str, torch.Tensor],
    teacher: torch.Tensor,
    n_steps: int,
    batch_size: int = 16,
    lr: float = 1e-3,
    rng: torch.Generator | None = None,
) -> list[float]:
    """Train the LoRA adapters so the quantized model's embeddings match the teacher's.

    Loss ``1 - cos(emb_q, emb_fp32)`` averaged over a minibatch (function-space distillation),
    AdamW on the parameters that require gradients (the adapters after :func:`apply_lowra`).

    Args:
        model: the quantized model with trainable adapters.
        batch: tokenised training set (``input_ids``, ``attention_mask``: (N, L) tensors).
        teacher: (N, d) full-precision embeddings of the same sentences.
        n_steps, batch_size, lr: optimisation steps, minibatch size, AdamW learning rate.
        rng: the ``torch.Generator`` of the minibatch order (``torch.randint`` draws; the
            notebook passes ``torch.Generator().manual_seed(SEED)``); None: torch's global
            generator.

    Returns:
        the loss of every step.

    Raises:
        TypeError: model not an nn.Module, n_steps/batch_size not integers, lr not a number, rng
            not a ``torch.Generator`` or None.
        ValueError: no trainable parameters, n_steps/batch_size < 1, lr not finite and > 0, or
            teacher not (N, d) with N the number of tokenised sentences.
        TooLargeError: ``n_steps * batch_size`` forward and backward passes (about
            ``6 L sum(parameters)`` operations per sentence of L tokens) or one minibatch's
            activations cannot fit.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters (apply_lowra first)")
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    lr = check_positive(lr, "lr")
    gen = check_torch_generator(rng, "rng")
    if teacher.ndim != 2 or teacher.shape[0] != batch["input_ids"].shape[0]:
        raise ValueError(
            f"teacher must be (N, d) with N = {batch['input_ids'].shape[0]} sentences, "
            f"got {tuple(teacher.shape)}"
        )
    L = int(batch["input_ids"].shape[1])
    n_weights = sum(p.numel() for p in model.parameters())
    n_features = sum(
        mod.out_features for mod in model.modules() if isinstance(mod, nn.Linear)
    )
    check_budget(
        f"distill_finetune(n_steps={n_steps}, batch_size={batch_size})",
        n_bytes=8.0
        * batch_size
        * L
        * max(n_features, 1),  # linear outputs kept for backward
        n_operations=6.0 * n_steps * batch_size * L * n_weights,
    )
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    N = teacher.shape[0]
    device = params[0].device
    losses = []
    model.train()
    for _ in range(n_steps):
        idx = torch.randint(0, N, (batch_size,), generator=gen)
        ids, mask = (
            batch["input_ids"][idx].to(device),
            batch["attention_mask"][idx].to(device),
        )
        e = mean_pool_embed(model, ids, mask)
        loss = (
            1 - nn.functional.cosine_similarity(e, teacher[idx].to(device), dim=-1)
        ).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses

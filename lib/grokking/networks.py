"""Networks of chapter 16: the official modular-arithmetic MLP, the norm penalties and its
full-batch training loop (Sec. 6, Figs 1-2). PyTorch is imported on first use."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from icml25.checks import (
    check_array,
    check_budget,
    check_int,
    check_real,
    check_torch_generator,
)
from icml25.common import torch_device

if TYPE_CHECKING:  # pragma: no cover - for annotations only
    import torch

__all__ = ["EncoderDecoderMLP", "regularisation", "train_grokking"]

_DATA_KEYS = ("x_train", "y_train", "x_test", "y_test")


def EncoderDecoderMLP(
    p: int, d: int = 64, rng: torch.Generator | None = None
) -> torch.nn.Module:
    """The official modular-arithmetic MLP: two embeddings combined by a matrix product.

    ``x = (i, j)``: one-hot e_i, e_j -> two bias-free linear embeddings ``E1, E2 : R^p -> R^d``;
    their (sqrt d x sqrt d) reshapes are multiplied, ``h = vec(mat(E1 e_i) @ mat(E2 e_j))``; then
    ``Linear(d, d, bias=False) -> ReLU -> Linear(d, p, bias=False)``. Embeddings keep PyTorch's
    default init; the decoder layers are ``N(0, 1/fan_out)``, as in the official
    ``Encoder_Decoder(aggregation_mode="matrix_product")``.

    Args:
        p: modulus / number of classes (>= 2); d: width, a perfect square;
        rng: ``torch.Generator`` (CPU) for the initial weights, drawn in the order of PyTorch's
            own initialisation (``torch.Generator().manual_seed(s)`` gives the weights that
            ``torch.manual_seed(s)`` would); None: torch's global generator.

    Returns:
        a ``torch.nn.Module`` (attribute ``p``) mapping (M, 2) int64 to (M, p) logits (float32).

    Raises:
        ValueError: d not a perfect square, p < 2. TypeError: non-integer p or d, rng not a
        ``torch.Generator``. TooLargeError: the ``3 p d + d^2`` float32 weights cannot fit.
    """
    import torch

    nn = torch.nn
    p = check_int(p, "p", low=2)
    d = check_int(d, "d", low=1)
    rng = check_torch_generator(rng)
    k = math.isqrt(d)
    if k * k != d:
        raise ValueError(
            f"d must be a perfect square (it is reshaped to sqrt(d) x sqrt(d)), got {d}"
        )
    check_budget(
        f"EncoderDecoderMLP(p={p}, d={d})",
        n_bytes=3 * 4.0 * (3.0 * p * d + float(d) * d),
    )

    class _Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p, self.d, self.k = p, d, k
            self.embed = nn.ModuleList([nn.Linear(p, d, bias=False) for _ in range(2)])
            self.hidden = nn.Linear(d, d, bias=False)
            self.out = nn.Linear(d, p, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # (M, 2, p)
            oh = torch.nn.functional.one_hot(x, self.p).to(self.hidden.weight.dtype)
            h1 = self.embed[0](oh[:, 0]).reshape(-1, self.k, self.k)
            h2 = self.embed[1](oh[:, 1]).reshape(-1, self.k, self.k)
            h = torch.bmm(h1, h2).flatten(1)
            return self.out(torch.relu(self.hidden(h)))

    if rng is None:
        model = _Model()
    else:
        # construction must not move torch's global stream
        with torch.random.fork_rng(devices=[]):
            model = _Model()
        # redo PyTorch's default init (Linear.reset_parameters) from rng
        with torch.no_grad():
            for layer in (*model.embed, model.hidden, model.out):
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=rng)
    with torch.no_grad():
        for layer in (model.hidden, model.out):
            layer.weight.normal_(
                0.0, 1.0 / math.sqrt(layer.weight.shape[0]), generator=rng
            )
    return model


def regularisation(
    model: torch.nn.Module, l1: float = 0.0, l2: float = 0.0, nuclear: float = 0.0
) -> torch.Tensor:
    """``sum_W l1 ||W||_1 + l2 ||W||_F + nuclear ||W||_*`` over the model's weight matrices.

    As in the official code (``torch.norm(W, p)``), the norms are **not squared**: the l2 term is
    the Frobenius norm itself, whose gradient ``W / ||W||_F`` has unit scale (unlike weight decay).

    Args:
        model: a torch module; l1, l2, nuclear: penalty weights >= 0.

    Returns:
        a scalar torch tensor (0 when all weights are 0), on the model's device.

    Raises:
        ValueError: a negative or non-finite weight. TypeError: model not a torch module, a
        non-numeric weight.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    l1, l2, nuclear = (
        check_real(v, name, low=0.0)
        for name, v in (("l1", l1), ("l2", l2), ("nuclear", nuclear))
    )
    return _regularisation(model, l1, l2, nuclear)


def _regularisation(
    model: torch.nn.Module, l1: float, l2: float, nuclear: float
) -> torch.Tensor:
    """``h(theta) = sum_W (l1 ||W||_1 + l2 ||W||_F + nuclear ||W||_*)`` over the 2-D parameters (unsquared norms)."""
    import torch

    total = None
    for W in model.parameters():
        if W.ndim != 2:
            continue
        terms = []
        if l1:
            terms.append(l1 * W.abs().sum())
        if l2:
            terms.append(l2 * torch.linalg.matrix_norm(W, "fro"))
        if nuclear:
            terms.append(nuclear * torch.linalg.matrix_norm(W, "nuc"))
        for term in terms:
            total = term if total is None else total + term
    if total is None:
        device = (
            next(iter(model.parameters())).device
            if any(True for _ in model.parameters())
            else "cpu"
        )
        return torch.zeros((), device=device)
    return total


def _check_modular_data(
    data: Any, p: int | None
) -> tuple[dict[str, np.ndarray], int | None]:
    """The :func:`icml25.grokking.modular_dataset` dict: (M, 2) pairs and (M,) labels, all in
    ``[0, p)`` when the modulus ``p`` is known (from the model, else from ``data["p"]``)."""
    import torch

    if not isinstance(data, Mapping):
        raise TypeError(
            f"data must be a dict from modular_dataset (keys x_train, y_train, x_test, y_test), "
            f"got {type(data).__name__}"
        )
    missing = [k for k in _DATA_KEYS if k not in data]
    if missing:
        raise ValueError(
            f"data is missing key(s) {missing}; expected the modular_dataset dict with keys "
            f"{list(_DATA_KEYS)}"
        )
    if "p" in data:
        p_data = check_int(data["p"], "data['p']", low=2)
        if p is not None and p_data != p:
            raise ValueError(
                f"data is for p = {p_data} but the model has p = {p} classes; build the model with "
                f"EncoderDecoderMLP({p_data}) or the data with modular_dataset({p}, ...)"
            )
        p = p_data
    arrs = {}
    for k in _DATA_KEYS:
        v = data[k].detach().cpu() if isinstance(data[k], torch.Tensor) else data[k]
        arrs[k] = check_array(
            v, f"data[{k!r}]", kind="int", low=0, high=None if p is None else p - 1
        )
    for split in ("train", "test"):
        xs, ys = arrs[f"x_{split}"], arrs[f"y_{split}"]
        if xs.ndim != 2 or xs.shape[1] != 2 or ys.shape != (xs.shape[0],):
            raise ValueError(
                f"data['x_{split}'] must be (M, 2) and data['y_{split}'] (M,), "
                f"got {xs.shape} and {ys.shape}"
            )
    if arrs["x_train"].shape[0] == 0:
        raise ValueError("data['x_train'] must not be empty")
    return arrs, p


def train_grokking(
    model: torch.nn.Module,
    data: Mapping[str, Any],
    lr: float = 1e-2,
    epochs: int = 3000,
    eval_every: int = 10,
    l1: float = 0.0,
    l2: float = 0.0,
    nuclear: float = 0.0,
    weight_decay: float = 0.0,
    device: str | None = None,
) -> dict[str, np.ndarray]:
    """Full-batch Adam on cross-entropy + :func:`regularisation`, logging accuracies and norms.

    Args:
        model: e.g. :func:`EncoderDecoderMLP` (its attribute ``p``, when present, is the number of
            classes the data must fit); data: :func:`modular_dataset` output;
        lr: Adam step size > 0; epochs: full-batch steps; eval_every: logging period;
        l1, l2, nuclear: penalty weights; weight_decay: AdamW decoupled decay (the "classic"
            baseline; 0 = plain Adam, the paper's setting).
        device: torch device; default :func:`icml25.common.torch_device` (``"cuda"`` when torch
            sees a GPU and ``ICML25_FORCE_CPU`` is unset, else ``"cpu"``).

    Returns:
        dict of (T,) arrays: ``epoch``, ``train_acc``, ``test_acc``, ``train_loss``, ``test_loss``,
        ``l1_norm``, ``l2_norm`` (Frobenius norm of all parameters), ``nuclear_norm`` (sum over
        weight matrices).

    Raises:
        TypeError: model not a ``torch.nn.Module``; data not a mapping, or its arrays not integer;
        non-numeric lr/penalties, non-integer epochs/eval_every, device not a str.
        ValueError: data missing one of ``x_train, y_train, x_test, y_test``, with the wrong
        shapes ((M, 2) pairs, (M,) labels, non-empty train split), made for another modulus than
        the model's ``p`` (``data["p"]`` differs, or an entry outside ``[0, p)``); non-positive
        or non-finite lr, non-positive epochs/eval_every, negative penalties.
        TooLargeError: the ``epochs`` full-batch steps (about ``6 n_params M_train`` operations
        each, plus the SVDs of the nuclear penalty) or the logs cannot fit, refused before any step.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module (e.g. EncoderDecoderMLP), got {type(model).__name__}"
        )
    p_model = getattr(model, "p", None)
    arrs, _ = _check_modular_data(data, p_model if isinstance(p_model, int) else None)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", low=0.0)
    epochs = check_int(epochs, "epochs", low=1)
    eval_every = check_int(eval_every, "eval_every", low=1)
    l1, l2, nuclear = (
        check_real(v, name, low=0.0)
        for name, v in (("l1", l1), ("l2", l2), ("nuclear", nuclear))
    )
    if device is not None and not isinstance(device, str):
        raise TypeError(
            f"device must be a str such as 'cpu' or 'cuda', or None, got {type(device).__name__}"
        )
    if device is None:
        device = torch_device()
    check_budget(
        f"train_grokking(epochs={epochs}, eval_every={eval_every})",
        **_training_cost(model, arrs, epochs, eval_every, nuclear),
    )
    return _train_grokking(
        model, arrs, lr, epochs, eval_every, l1, l2, nuclear, weight_decay, device
    )


def _training_cost(
    model: torch.nn.Module,
    arrs: dict[str, np.ndarray],
    epochs: int,
    eval_every: int,
    nuclear: float,
) -> dict[str, float]:
    """Estimated work and log memory of :func:`train_grokking`: forward + backward is about ``6 n_params``
    operations per training example and step, a logged forward ``2 n_params`` per example, an SVD
    ``10 m n min(m, n)`` per (m, n) weight (the nuclear penalty each step, the nuclear norm each log)."""
    n_params = float(sum(W.numel() for W in model.parameters()))
    svd = sum(
        10.0 * W.shape[0] * W.shape[1] * min(W.shape)
        for W in model.parameters()
        if W.ndim == 2
    )
    m_train, m_all = (
        float(len(arrs["y_train"])),
        float(len(arrs["y_train"]) + len(arrs["y_test"])),
    )
    n_logs = epochs // eval_every + 1.0
    # 8 logged Python floats (about 40 bytes each) per record
    return {
        "n_operations": float(epochs)
        * (6.0 * n_params * m_train + (svd if nuclear else 0.0))
        + n_logs * (2.0 * n_params * m_all + svd),
        "n_bytes": n_logs * 8 * 40.0,
    }


def _train_grokking(
    model: torch.nn.Module,
    arrs: dict[str, np.ndarray],
    lr: float,
    epochs: int,
    eval_every: int,
    l1: float,
    l2: float,
    nuclear: float,
    weight_decay: float,
    device: str,
) -> dict[str, np.ndarray]:
    """``theta <- Adam(theta, grad[CE(f_theta(x_train), y_train) + h(theta)])`` for ``epochs`` full-batch steps."""
    import torch

    model.to(device)
    xtr, ytr, xte, yte = (
        torch.as_tensor(arrs[k], dtype=torch.int64).to(device) for k in _DATA_KEYS
    )
    opt = (
        torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        if weight_decay
        else torch.optim.Adam(model.parameters(), lr=lr)
    )
    ce = torch.nn.functional.cross_entropy
    logs: dict[str, list[float]] = {
        k: []
        for k in (
            "epoch",
            "train_acc",
            "test_acc",
            "train_loss",
            "test_loss",
            "l1_norm",
            "l2_norm",
            "nuclear_norm",
        )
    }

    def log(epoch: int) -> None:
        with torch.no_grad():
            out_tr, out_te = model(xtr), model(xte)
            logs["epoch"].append(epoch)
            logs["train_acc"].append((out_tr.argmax(1) == ytr).float().mean().item())
            logs["test_acc"].append((out_te.argmax(1) == yte).float().mean().item())
            logs["train_loss"].append(ce(out_tr, ytr).item())
            logs["test_loss"].append(ce(out_te, yte).item())
            Ws = [W for W in model.parameters() if W.ndim == 2]
            logs["l1_norm"].append(sum(W.abs().sum().item() for W in Ws))
            logs["l2_norm"].append(
                math.sqrt(sum((W**2).sum().item() for W in model.parameters()))
            )
            logs["nuclear_norm"].append(
                sum(torch.linalg.matrix_norm(W, "nuc").item() for W in Ws)
            )

    log(0)
    for epoch in range(1, epochs + 1):
        opt.zero_grad(set_to_none=True)
        loss = ce(model(xtr), ytr) + _regularisation(model, l1, l2, nuclear)
        loss.backward()
        opt.step()
        if epoch % eval_every == 0:
            log(epoch)
    return {k: np.asarray(v) for k, v in logs.items()}

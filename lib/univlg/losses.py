"""UniVLG's set-prediction losses (Sec. 3.5): Hungarian matching, mask BCE + dice, token
grounding (sigmoid focal vs the positive map), 3D box L1 + GIoU, deep supervision.

Weights are the paper note's (``DEFAULTS.cost_weights``, ``DEFAULTS.loss_weights``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

from icml25.checks import check_array, check_real, check_tensor

from .defaults import DEFAULTS

__all__ = [
    "hungarian_match",
    "dice_loss",
    "sigmoid_focal_loss",
    "token_grounding_loss",
    "box_iou_3d_torch",
    "box_l1_giou_3d",
    "match_costs",
    "set_loss",
]


def hungarian_match(cost: Any) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost one-to-one assignment of predictions (rows) to targets (columns).

    Args:
        cost: (Q, G) finite cost matrix, Q >= G.

    Returns:
        ``(rows, cols)`` int64 arrays of length G (``scipy.optimize.linear_sum_assignment``), sorted by column.

    Raises:
        ValueError: not 2D, non-finite, fewer rows than columns.
    """
    C = check_array(cost, "cost", ndim=2, dtype=np.float64)
    if C.shape[0] < C.shape[1]:
        raise ValueError(
            f"cost must have at least as many rows (queries) as columns (targets), got {C.shape}"
        )
    r, c = linear_sum_assignment(C)
    order = np.argsort(c)
    return r[order].astype(np.int64), c[order].astype(np.int64)


def dice_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``1 - (2 sum p t + 1) / (sum p + sum t + 1)`` per row, ``p = sigmoid(logits)``.

    Args:
        logits: (n, M); targets: (n, M) in [0, 1].

    Returns:
        (n,) losses.

    Raises:
        ValueError: shapes differ.
    """
    x = check_tensor(logits, "logits", ndim=2)
    t = check_tensor(targets, "targets", shape=tuple(x.shape))
    return _dice(x, t)


def _dice(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    p = x.sigmoid()
    return 1 - (2 * (p * t).sum(-1) + 1) / (p.sum(-1) + t.sum(-1) + 1)


def sigmoid_focal_loss(
    logits: torch.Tensor, targets: torch.Tensor, alpha: float = 0.25, gamma: float = 2.0
) -> torch.Tensor:
    """Elementwise focal loss ``-a_t (1 - p_t)^gamma log p_t`` (Lin et al.), ``p = sigmoid(logits)``.

    Args:
        logits, targets: tensors of one shape, targets in [0, 1]; alpha in [0, 1] (negative: no
        class weighting); gamma >= 0.

    Returns:
        the elementwise losses, the input's shape.

    Raises:
        ValueError: shapes differ, gamma < 0, alpha > 1.
    """
    x = check_tensor(logits, "logits")
    t = check_tensor(targets, "targets", shape=tuple(x.shape))
    a = check_real(alpha, "alpha", high=1.0)
    g = check_real(gamma, "gamma", low=0.0)
    return _focal(x, t, a, g)


def _focal(
    x: torch.Tensor, t: torch.Tensor, alpha: float, gamma: float
) -> torch.Tensor:
    p = x.sigmoid()
    ce = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * t + (1 - alpha) * (1 - t)) * loss
    return loss


def token_grounding_loss(
    ground: torch.Tensor,
    positive_map: torch.Tensor,
    valid: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Span grounding: sigmoid focal loss of each query's token logits vs its positive map.

    Matched queries target the tokens of their object's span (``positive_map > 0``); unmatched
    queries target no token (their rows are zero), weighted by ``weights`` (the no-object weight).

    Args:
        ground: (Q, S) logits; positive_map: (Q, S) in [0, 1]; valid: (S,) bool, False = padding;
        weights: (Q,) per-query weights (default 1).

    Returns:
        scalar: the weighted mean over queries of the mean over valid tokens.

    Raises:
        ValueError: shapes differ.
    """
    g = check_tensor(ground, "ground", ndim=2, finite=False)
    pm = check_tensor(positive_map, "positive_map", shape=tuple(g.shape))
    valid = torch.as_tensor(valid)
    if tuple(valid.shape) != (g.shape[1],):
        raise ValueError(
            f"valid must have shape ({g.shape[1]},), got {tuple(valid.shape)}"
        )
    w = (
        torch.ones(g.shape[0])
        if weights is None
        else check_tensor(weights, "weights", shape=(g.shape[0],))
    )
    return _token_loss(g, pm, valid.bool(), w)


def _token_loss(
    g: torch.Tensor, pm: torch.Tensor, valid: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    per = _focal(g[:, valid], (pm[:, valid] > 0).float(), 0.25, 2.0).mean(-1)
    return (w * per).sum() / w.sum()


def box_iou_3d_torch(
    a: torch.Tensor, b: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """IoU and GIoU of axis-aligned 3D boxes ``(min xyz, max xyz)``, row by row.

    Args:
        a, b: (n, 6) boxes with max >= min.

    Returns:
        ``(iou, giou)``, each (n,).
    """
    lo, hi = torch.maximum(a[:, :3], b[:, :3]), torch.minimum(a[:, 3:], b[:, 3:])
    inter = (hi - lo).clamp(min=0).prod(-1)
    va, vb = (
        (a[:, 3:] - a[:, :3]).clamp(min=0).prod(-1),
        (b[:, 3:] - b[:, :3]).clamp(min=0).prod(-1),
    )
    union = va + vb - inter
    iou = inter / union.clamp(min=1e-12)
    hull = (
        (torch.maximum(a[:, 3:], b[:, 3:]) - torch.minimum(a[:, :3], b[:, :3]))
        .clamp(min=0)
        .prod(-1)
    )
    return iou, iou - (hull - union) / hull.clamp(min=1e-12)


def box_l1_giou_3d(
    pred: torch.Tensor, target: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Box regression losses: mean L1 of the corners and mean ``1 - GIoU`` (3D, axis-aligned).

    Args:
        pred, target: (n, 6) boxes ``(min, max)`` with max >= min.

    Returns:
        ``(l1, giou_loss)`` scalars.

    Raises:
        ValueError: shapes differ or are not (n, 6); a box with max < min.
    """
    p = check_tensor(pred, "pred", shape=(None, 6))
    t = check_tensor(target, "target", shape=(p.shape[0], 6))
    for name, x in (("pred", p), ("target", t)):
        if bool((x[:, 3:] < x[:, :3]).any()):
            raise ValueError(f"{name}: a box has max < min")
    _, giou = box_iou_3d_torch(p, t)
    return (p - t).abs().mean(), (1 - giou).mean()


def match_costs(
    pred: dict,
    b: int,
    masks: torch.Tensor,
    pmap: torch.Tensor,
    boxes: torch.Tensor | None,
    w: dict = DEFAULTS.cost_weights,
) -> torch.Tensor:
    """(Q, G) matching cost of sample ``b``: ``2 cls + 0.2 BCE + 0.2 dice (+ 0.1 L1 + 0.1 GIoU)``.

    ``cls`` is minus the mean sigmoid grounding probability over the target's span tokens.
    """
    with torch.no_grad():
        g = pred["ground"][b].sigmoid().nan_to_num(0.0)  # (Q, S)
        cost = -w["cls"] * g @ pmap.T  # pmap rows sum to 1
        if "masks" in pred:
            x = pred["masks"][b]
            M = x.shape[1]
            pos = F.binary_cross_entropy_with_logits(
                x, torch.ones_like(x), reduction="none"
            )
            neg = F.binary_cross_entropy_with_logits(
                x, torch.zeros_like(x), reduction="none"
            )
            bce = (pos @ masks.T + neg @ (1 - masks).T) / M
            p = x.sigmoid()
            dice = 1 - (2 * p @ masks.T + 1) / (
                p.sum(-1, keepdim=True) + masks.sum(-1)[None] + 1
            )
            cost = cost + w["mask_bce"] * bce + w["dice"] * dice
        if "boxes" in pred and boxes is not None:
            pb = pred["boxes"][b]
            l1 = torch.cdist(pb, boxes, p=1) / 6
            Q, G = pb.shape[0], boxes.shape[0]
            _, giou = box_iou_3d_torch(pb.repeat_interleave(G, 0), boxes.repeat(Q, 1))
            cost = cost + w["box_l1"] * l1 + w["giou"] * (1 - giou.view(Q, G))
    return cost


def set_loss(
    preds: Sequence[dict],
    targets: Sequence[dict],
    text_pad: torch.Tensor,
    w: dict = DEFAULTS.loss_weights,
    no_object: float = DEFAULTS.no_object_weight,
) -> torch.Tensor:
    """The deep-supervised set loss, averaged over stages and samples.

    Args:
        preds: stage predictions (:meth:`LangCondMaskDecoder.forward`).
        targets: per sample ``{"masks": (G, M) float, "pmap": (G, S) float, "boxes": (G, 6) float}``
            (the target object first, then the anchors).
        text_pad: (B, S) bool padding mask.

    Returns:
        scalar loss.
    """
    total = torch.zeros((), device=text_pad.device)
    for pred in preds:
        for b, tgt in enumerate(targets):
            cost = match_costs(pred, b, tgt["masks"], tgt["pmap"], tgt.get("boxes"))
            rows, cols = hungarian_match(cost.cpu().numpy())
            rows_t, cols_t = (
                torch.from_numpy(rows).to(text_pad.device),
                torch.from_numpy(cols).to(text_pad.device),
            )
            Q = pred["ground"].shape[1]
            pm = torch.zeros(Q, tgt["pmap"].shape[1], device=text_pad.device)
            pm[rows_t] = tgt["pmap"][cols_t]
            qw = torch.full((Q,), no_object, device=text_pad.device)
            qw[rows_t] = 1.0
            loss = w["token"] * _token_loss(pred["ground"][b], pm, ~text_pad[b], qw)
            if "masks" in pred:
                x, t = pred["masks"][b][rows_t], tgt["masks"][cols_t]
                loss = (
                    loss
                    + w["mask_bce"] * F.binary_cross_entropy_with_logits(x, t)
                    + w["dice"] * _dice(x, t).mean()
                )
            if "boxes" in pred and "boxes" in tgt and "masks" not in pred:
                pb, tb = pred["boxes"][b][rows_t], tgt["boxes"][cols_t]
                _, giou = box_iou_3d_torch(pb, tb)
                loss = (
                    loss
                    + w["box_l1"] * (pb - tb).abs().mean()
                    + w["giou"] * (1 - giou).mean()
                )
            total = total + loss
    return total / (len(preds) * len(targets))

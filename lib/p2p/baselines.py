"""What chapter 09 compares P2P against.

- the black-box classifier (the same :class:`~icml25.p2p.SmallCNNClassifier`, full images);
- pixel-group P2P: each ``patch x patch`` square is a group (:func:`pixel_groups`), the
  pixel-level instance-wise selection that superpixels are meant to beat;
- fixed-``tau`` P2P (``P2P(dynamic=False)``, trained at ``tau = 0.2``);
- random superpixels at P2P's kept fraction (:func:`random_superpixel_masks`), whose localisation
  precision is the object-area fraction in expectation;
- post-hoc top-k masks of captum attributions on the black box (:func:`captum_masks`: Saliency,
  IntegratedGradients, Occlusion), at P2P's kept fraction per image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_choice, check_int, check_rng

from ._checks import _check_image_tensor

__all__ = ["pixel_groups", "random_superpixel_masks", "captum_masks", "CAPTUM_METHODS"]

CAPTUM_METHODS = ("saliency", "integrated_gradients", "occlusion")


def pixel_groups(n: int, H: int, W: int, patch: int = 2) -> np.ndarray:
    """Square-patch groups: pixel ``(r, c)`` is in group ``(r // patch) * ceil(W / patch) + c // patch``.

    Args:
        n: images (>= 1). H, W: image size (>= 1). patch: side of a patch (>= 1).

    Returns:
        (n, H, W) int64 labels (consecutive).

    Raises:
        ValueError: sizes < 1.
    """
    n, H, W = (
        check_int(n, "n", low=1),
        check_int(H, "H", low=1),
        check_int(W, "W", low=1),
    )
    patch = check_int(patch, "patch", low=1)
    cols = -(-W // patch)
    lab = (np.arange(H)[:, None] // patch) * cols + np.arange(W)[None, :] // patch
    return np.broadcast_to(lab, (n, H, W)).astype(np.int64).copy()


def random_superpixel_masks(groups: Any, kept: Any, rng: Any) -> np.ndarray:
    """Keep superpixels in a uniformly random order until the kept area reaches ``kept[b]``.

    Args:
        groups: (B, H, W) integer labels. kept: (B,) target fractions in [0, 1].
        rng: ``numpy.random.Generator``.

    Returns:
        (B, H, W) bool masks (kept area >= ``kept[b]``, overshooting by at most one group).

    Raises:
        TypeError: ``rng`` not a Generator. ValueError: shapes that disagree, fractions outside [0, 1].
    """
    g = check_array(groups, "groups", kind="int", ndim=3, low=0)
    B = g.shape[0]
    k = check_array(kept, "kept", shape=(B,), low=0.0, high=1.0)
    rng = check_rng(rng, "rng")
    out = np.zeros(g.shape, dtype=bool)
    for b in range(B):
        labels, sizes = np.unique(g[b], return_counts=True)
        perm = rng.permutation(len(labels))
        area = np.cumsum(sizes[perm]) / g[b].size
        n_keep = int(np.searchsorted(area, k[b] - 1e-12) + 1) if k[b] > 0 else 0
        out[b] = np.isin(g[b], labels[perm[:n_keep]])
    return out


def captum_masks(
    model: Any,
    x: Any,
    kept: Any,
    method: str = "saliency",
    target: Any = None,
    ig_steps: int = 16,
    window: int = 4,
) -> np.ndarray:
    """Post-hoc masks: the ``round(kept[b] H W)`` pixels of largest summed |attribution|.

    Attributions of the black box's ``target`` logit (its prediction when ``None``) from
    ``captum.attr``: ``Saliency`` (|gradient|), ``IntegratedGradients`` (black baseline,
    ``ig_steps`` steps) or ``Occlusion`` (non-overlapping ``window x window`` black patches);
    absolute values summed over channels.

    Args:
        model: a classifier (eval mode is set for the call). x: (B, 3, H, W) images in [0, 1].
        kept: (B,) fractions in [0, 1]. method: one of :data:`CAPTUM_METHODS`.
        target: (B,) classes or ``None``. ig_steps, window: method settings (>= 1, >= 2).

    Returns:
        (B, H, W) bool masks.

    Raises:
        ValueError: shapes that disagree, unknown method, fractions outside [0, 1].
    """
    import torch
    from captum.attr import IntegratedGradients, Occlusion, Saliency

    x = _check_image_tensor(x)
    B, C, H, W = x.shape
    k = check_array(kept, "kept", shape=(B,), low=0.0, high=1.0)
    method = check_choice(method, "method", CAPTUM_METHODS)
    ig_steps = check_int(ig_steps, "ig_steps", low=1)
    window = check_int(window, "window", low=2)
    was = model.training
    model.eval()
    if target is None:
        with torch.no_grad():
            target = model(x).argmax(1)
    else:
        target = torch.as_tensor(
            check_array(target, "target", kind="int", shape=(B,), low=0)
        )
    xi = x.clone().requires_grad_(True)
    if method == "saliency":
        attr = Saliency(model).attribute(xi, target=target, abs=True)
    elif method == "integrated_gradients":
        attr = IntegratedGradients(model).attribute(
            xi, baselines=torch.zeros_like(x), target=target, n_steps=ig_steps
        )
    else:
        attr = Occlusion(model).attribute(
            x,
            sliding_window_shapes=(C, window, window),
            strides=(C, window, window),
            baselines=0.0,
            target=target,
            perturbations_per_eval=16,
        )
    model.train(was)
    score = attr.detach().abs().sum(1).flatten(1).cpu().numpy()  # (B, H W)
    out = np.zeros((B, H * W), dtype=bool)
    for b in range(B):
        n_keep = int(round(k[b] * H * W))
        if n_keep:
            out[b, np.argsort(-score[b], kind="stable")[:n_keep]] = True
    return out.reshape(B, H, W)

"""Baselines (Sec. 4 ablations): a keyword heuristic with no learning. The other baselines are
configurations of :class:`icml25.univlg.UniVLG`: ``use_3d=False`` (no 3D layers, 2D features
unprojected), 3D-only training (:func:`icml25.univlg.train_grounding` without the 2D set) and
``decoder="box"`` (:class:`icml25.univlg.BoxDecoder`). No maintained library implements 3D
referential grounding from sensor RGB-D, so there is no library baseline.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from icml25.checks import check_real

from .data import COLOURS, Expression, Scene

__all__ = ["keyword_heuristic", "cell_colours"]

_NAMES = list(COLOURS)
_CHROMA = np.array([np.asarray(COLOURS[c]) / sum(COLOURS[c]) for c in _NAMES])


def cell_colours(scene: Scene) -> np.ndarray:
    """Colour class of every feature cell: -1 grey/floor/sky, else the index into ``COLOURS``.

    Cells are averaged over their pixels; grey means max - min channel < 0.12; otherwise the
    nearest palette chromaticity ``rgb / sum(rgb)`` decides (shading-invariant).
    """
    V, H, W, _ = scene.rgb.shape
    S = scene.xyz.shape[1]
    rgb = scene.rgb.reshape(V, S, H // S, S, W // S, 3).mean(axis=(2, 4)).reshape(-1, 3)
    grey = rgb.max(1) - rgb.min(1) < 0.12
    chroma = rgb / rgb.sum(1, keepdims=True).clip(1e-6)
    cls = np.argmin(((chroma[:, None, :] - _CHROMA[None]) ** 2).sum(-1), axis=1)
    return np.where(grey, -1, cls)


def keyword_heuristic(
    scene: Scene, expression: Expression, radius: float = 0.3
) -> np.ndarray:
    """Ground by keywords of the target phrase only: the largest blob of its colour.

    Non-grey cells are grouped into blobs (same colour class, 3D neighbours within ``radius``);
    if the target phrase names a colour the largest blob of that colour is returned, else the
    largest blob. Relations, shapes and sizes are ignored (what a bag-of-keywords reads).

    Args:
        scene: a :class:`Scene`; expression: one of its expressions; radius: metres (> 0).

    Returns:
        (N,) bool mask over the scene's points (all False when no blob matches).

    Raises:
        ValueError: non-positive radius.
    """
    r = check_real(radius, "radius", low=0.0, low_open=True)
    cls = cell_colours(scene)
    pts = scene.points.astype(np.float64)
    obj, a, b = expression.spans[0]
    words = expression.text[a:b].split()
    want = [_NAMES.index(w) for w in words if w in _NAMES]
    cand = np.flatnonzero(cls >= 0) if not want else np.flatnonzero(cls == want[0])
    mask = np.zeros(len(pts), dtype=bool)
    if len(cand) == 0:
        return mask
    pairs = cKDTree(pts[cand]).query_pairs(r, output_type="ndarray")
    same = (
        cls[cand][pairs[:, 0]] == cls[cand][pairs[:, 1]]
        if len(pairs)
        else np.zeros(0, bool)
    )
    pairs = pairs[same]
    g = coo_matrix(
        (np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(cand), len(cand))
    )
    _, comp = connected_components(g, directed=False)
    best = np.argmax(np.bincount(comp))
    mask[cand[comp == best]] = True
    return mask

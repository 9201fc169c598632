"""Lifting RGB-D views to 3D (UniVLG Sec. 3.1): unprojection, resampling, voxels, kNN.

Conventions: pixel ``(u, v)`` is column, row with the pixel centre at integer coordinates; the
camera frame is OpenCV's (x right, y down, z forward); ``T_cw`` maps camera to world; depth is the
z coordinate in the camera frame (metres). Invalid depth (<= 0, NaN, > ``max_depth``) lifts to NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import (
    check_array,
    check_budget,
    check_int,
    check_positive,
    check_real,
)
from icml25.kernels import knn_attention

from ._checks import _check_intrinsics, _check_rigid
from .defaults import DEFAULTS

__all__ = [
    "unproject",
    "project",
    "lift_monocular",
    "resample_xyz",
    "voxelize",
    "knn_points",
    "disparity_to_depth",
]


def unproject(
    depth: Any, K: Any, T_cw: Any, max_depth: float = DEFAULTS.max_depth_m
) -> np.ndarray:
    """World coordinates of every pixel of ``V`` posed depth maps.

    Implements ``X = T_v [ (u - c_x) d / f_x, (v - c_y) d / f_y, d, 1 ]^T`` (Sec. 3.1).

    Args:
        depth: (V, H, W) float depth in metres; <= 0, NaN or > ``max_depth`` marks a hole.
        K: (V, 3, 3) intrinsics (positive focal lengths, bottom row (0, 0, 1)).
        T_cw: (V, 4, 4) rigid camera-to-world poses.
        max_depth: farther points are ignored (the paper's 15 m).

    Returns:
        (V, H, W, 3) float64 world coordinates; NaN where the depth is invalid.

    Raises:
        ValueError: shapes that disagree (naming the argument), singular ``K``, non-rigid ``T_cw``.
    """
    d = check_array(depth, "depth", ndim=3, dtype=np.float64, finite=False)
    V = d.shape[0]
    K = _check_intrinsics(K, "K", V)
    T = _check_rigid(T_cw, "T_cw", V)
    return _unproject(d, K, T, check_positive(max_depth, "max_depth"))


def _unproject(
    d: np.ndarray, K: np.ndarray, T: np.ndarray, max_depth: float
) -> np.ndarray:
    """``X = T [(u - c_x) d / f_x, (v - c_y) d / f_y, d, 1]`` per pixel; holes become NaN."""
    V, H, W = d.shape
    v, u = np.meshgrid(
        np.arange(H, dtype=np.float64), np.arange(W, dtype=np.float64), indexing="ij"
    )
    fx, fy, cx, cy = (
        K[:, 0, 0, None, None],
        K[:, 1, 1, None, None],
        K[:, 0, 2, None, None],
        K[:, 1, 2, None, None],
    )
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(d) & (d > 0) & (d <= max_depth)
    dd = np.where(ok, d, np.nan)
    # (V, H, W, 3) camera frame
    cam = np.stack([(u - cx) * dd / fx, (v - cy) * dd / fy, dd], axis=-1)
    return np.einsum("vij,vhwj->vhwi", T[:, :3, :3], cam) + T[:, None, None, :3, 3]


def project(xyz: Any, K: Any, T_cw: Any) -> np.ndarray:
    """Pixel coordinates and depth of world points seen by each view (the inverse of :func:`unproject`).

    Args:
        xyz: (V, ..., 3) world points, one set per view.
        K: (V, 3, 3) intrinsics; T_cw: (V, 4, 4) camera-to-world poses.

    Returns:
        (V, ..., 3) float64 ``(u, v, depth)``.

    Raises:
        ValueError: shapes, singular ``K``, non-rigid ``T_cw``.
    """
    X = check_array(xyz, "xyz", dtype=np.float64, finite=False)
    if X.ndim < 2 or X.shape[-1] != 3:
        raise ValueError(f"xyz must have shape (V, ..., 3), got {X.shape}")
    V = X.shape[0]
    K = _check_intrinsics(K, "K", V)
    T = _check_rigid(T_cw, "T_cw", V)
    flat = X.reshape(V, -1, 3)
    R, t = T[:, :3, :3], T[:, :3, 3]
    cam = np.einsum("vji,vnj->vni", R, flat - t[:, None, :])  # R^T (X - t)
    z = cam[..., 2]
    u = K[:, 0, 0, None] * cam[..., 0] / z + K[:, 0, 2, None]
    v = K[:, 1, 1, None] * cam[..., 1] / z + K[:, 1, 2, None]
    return np.stack([u, v, z], axis=-1).reshape(X.shape)


def lift_monocular(image: Any, depth: Any, fov_deg: float = 60.0) -> np.ndarray:
    """Pointmap of one image from a (monocular) depth estimate, in its camera frame (pose = identity).

    The paper lifts RefCOCO/COCO images with MoGe depth; here the depth is given (a degraded copy
    of the true one in :class:`Synthetic2DRef`, or stereo depth). The pointmap is normalised per
    image (divided by the median depth) because monocular depth has no metric scale.

    Args:
        image: (H, W, 3) float image in [0, 1] (only its size is used).
        depth: (H, W) positive depth.
        fov_deg: assumed horizontal field of view in degrees, in (0, 180).

    Returns:
        (H, W, 3) float64 points, median depth 1.

    Raises:
        ValueError: shapes that disagree, non-positive depth, fov out of range.
    """
    img = check_array(image, "image", ndim=3, low=0.0, high=1.0)
    H, W = img.shape[:2]
    d = check_array(
        depth, "depth", shape=(H, W), dtype=np.float64, low=0.0, low_open=True
    )
    fov = check_real(
        fov_deg, "fov_deg", low=0.0, high=180.0, low_open=True, high_open=True
    )
    f = 0.5 * W / np.tan(np.radians(fov) / 2)
    K = np.array([[[f, 0, (W - 1) / 2], [0, f, (H - 1) / 2], [0, 0, 1]]])
    d = d / np.median(d)
    return _unproject(d[None], K, np.eye(4)[None], np.inf)[0]


def disparity_to_depth(
    disparity: Any, focal_px: float, baseline_m: float
) -> np.ndarray:
    """Stereo depth ``d = f B / disparity`` (NaN where the disparity is <= 0).

    Args:
        disparity: (H, W) disparity in pixels.
        focal_px: focal length in pixels (> 0); baseline_m: camera baseline in metres (> 0).

    Returns:
        (H, W) float64 depth in metres.

    Raises:
        ValueError: not 2D, non-positive focal length or baseline.
    """
    disp = check_array(disparity, "disparity", ndim=2, dtype=np.float64, finite=False)
    f = check_positive(focal_px, "focal_px")
    b = check_positive(baseline_m, "baseline_m")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(disp > 0, f * b / disp, np.nan)


def resample_xyz(xyz: Any, size: int) -> np.ndarray:
    """Pointmaps resized to a feature resolution by averaging the valid points of each cell.

    Args:
        xyz: (V, H, W, 3) points (NaN = hole); H and W divisible by ``size``.
        size: output side S (features are S x S).

    Returns:
        (V, S, S, 3) float64 mean of the finite points per (H/S x W/S) cell; NaN if none.

    Raises:
        ValueError: wrong shape, H or W not divisible by ``size``.
    """
    X = check_array(xyz, "xyz", ndim=4, dtype=np.float64, finite=False)
    if X.shape[-1] != 3:
        raise ValueError(f"xyz must have shape (V, H, W, 3), got {X.shape}")
    S = check_int(size, "size", low=1)
    V, H, W, _ = X.shape
    if H % S or W % S:
        raise ValueError(f"size = {S} must divide the pointmap's H = {H} and W = {W}")
    cells = X.reshape(V, S, H // S, S, W // S, 3)
    ok = np.isfinite(cells).all(-1, keepdims=True)
    n = ok.sum(axis=(2, 4))
    s = np.where(ok, cells, 0.0).sum(axis=(2, 4))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def voxelize(
    xyz: Any, feats: Any, voxel: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean features and mean coordinates per occupied voxel, and the point -> voxel map.

    The paper's multi-scale voxelisation (``scatter_mean``; sizes 0.02-0.16 m).

    Args:
        xyz: (N, 3) finite points (metres).
        feats: (N, C) features.
        voxel: voxel side (metres, > 0).

    Returns:
        ``(vfeats (V, C) float64, vxyz (V, 3) float64, p2v (N,) int64)`` with voxels ordered by
        their integer grid key; ``vfeats[p2v]`` scatters back to the points.

    Raises:
        ValueError: shapes, non-finite points, non-positive ``voxel``.
    """
    X = check_array(xyz, "xyz", ndim=2, dtype=np.float64)
    if X.shape[1] != 3:
        raise ValueError(f"xyz must have shape (N, 3), got {X.shape}")
    F = check_array(feats, "feats", ndim=2, dtype=np.float64)
    if F.shape[0] != X.shape[0]:
        raise ValueError(
            f"feats must have {X.shape[0]} rows like xyz, got {F.shape[0]}"
        )
    return _voxelize(X, F, check_positive(voxel, "voxel"))


def _voxelize(
    X: np.ndarray, F: np.ndarray, voxel: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group points by ``floor(x / voxel)``, average features and coordinates per group."""
    keys = np.floor(X / voxel).astype(np.int64)
    _, p2v = np.unique(keys, axis=0, return_inverse=True)
    p2v = p2v.reshape(-1)
    n = np.bincount(p2v).astype(np.float64)[:, None]
    vf = np.zeros((len(n), F.shape[1]))
    vx = np.zeros((len(n), 3))
    np.add.at(vf, p2v, F)
    np.add.at(vx, p2v, X)
    return vf / n, vx / n, p2v


def knn_points(
    q: Any, ref: Any, k: int = DEFAULTS.k, q_batch: Any = None, ref_batch: Any = None
) -> np.ndarray:
    """Indices of the ``k`` nearest points of each query, across all views of its own scene.

    Per-scene offsets come from the batch ids; ties go to the lower index; the search is tiled
    (the reference) or runs the CUDA kernel (:func:`icml25.kernels.knn_attention.knn`).

    Args:
        q: (N, 3) query points; ref: (M, 3) reference points (finite).
        k: neighbours, 1..16 (the paper's 8).
        q_batch, ref_batch: (N,), (M,) int scene ids (``ref_batch`` sorted), or both None.

    Returns:
        (N, k) int64 indices into ``ref``.

    Raises:
        ValueError: as :func:`icml25.kernels.knn_attention.knn_reference`.
    """
    qa = check_array(q, "q", ndim=2, dtype=np.float32)
    check_budget(f"knn_points(N={qa.shape[0]})", n_bytes=float(qa.shape[0]) * 16 * 8)
    idx, _ = knn_attention.knn(qa, ref, k, q_batch, ref_batch)
    return idx

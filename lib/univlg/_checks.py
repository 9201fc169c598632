"""Validators of UniVLG's own structures (camera matrices), built on :mod:`icml25.checks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array

__all__: list[str] = []


def _check_intrinsics(K: Any, name: str, n: int) -> np.ndarray:
    """(n, 3, 3) pinhole intrinsics with positive focal lengths and bottom row (0, 0, 1)."""
    K = check_array(K, name, shape=(n, 3, 3), dtype=np.float64)
    det = np.linalg.det(K)
    if np.any(np.abs(det) < 1e-12):
        raise ValueError(
            f"{name}: singular intrinsics (det = 0) in view(s) {np.flatnonzero(np.abs(det) < 1e-12)[:5].tolist()}"
        )
    if not np.allclose(K[:, 2], [0.0, 0.0, 1.0]):
        raise ValueError(
            f"{name}: the bottom row of each intrinsics matrix must be (0, 0, 1)"
        )
    return K


def _check_rigid(T: Any, name: str, n: int) -> np.ndarray:
    """(n, 4, 4) rigid transforms: rotation block orthonormal with det +1, last row (0, 0, 0, 1)."""
    T = check_array(T, name, shape=(n, 4, 4), dtype=np.float64)
    R = T[:, :3, :3]
    err = np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max(axis=(1, 2))
    if np.any(err > 1e-5) or np.any(np.linalg.det(R) < 0):
        raise ValueError(
            f"{name}: not a rigid transform (rotation block not orthonormal with det +1) in view(s) "
            f"{np.flatnonzero((err > 1e-5) | (np.linalg.det(R) < 0))[:5].tolist()}"
        )
    if not np.allclose(T[:, 3], [0.0, 0.0, 0.0, 1.0]):
        raise ValueError(f"{name}: the last row of each pose must be (0, 0, 0, 1)")
    return T

"""Face data by code: synthetic identities (our construction) and the real faces of ``lfw_subset``.

Synthetic faces: each identity ``k`` is a fixed parameter vector (face width and height, eye
spacing and height, skin, hair and eye colours, hair line, mouth width and curvature), spread over
the parameter box by a deterministic low-discrepancy sequence (golden-ratio steps), so identity
``k`` is the same face in every run and in the shipped models. Each image adds pose (shift,
scale, tilt) and light (brightness, a horizontal gradient) jitter from ``rng``, then pixel noise.
Real faces: scikit-image ships ``lfw_subset`` (200 grey 25 x 25 images: 100 faces, then 100
non-faces); we resize them to the working size and repeat the grey channel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_budget, check_int, check_real, check_rng

__all__ = ["identity_params", "synthetic_faces", "lfw_faces", "N_IDENTITY_PARAMS"]

#: the per-identity parameters, in order
_PARAM_NAMES = (
    "face_w",
    "face_h",
    "eye_dx",
    "eye_y",
    "skin_r",
    "skin_g",
    "skin_b",
    "hair_r",
    "hair_g",
    "hair_b",
    "hair_line",
    "mouth_w",
    "mouth_curve",
    "eye_dark",
    "bg_hue",
)
N_IDENTITY_PARAMS = len(_PARAM_NAMES)
_LOW = np.array(
    [
        0.26,
        0.32,
        0.10,
        -0.16,
        0.55,
        0.35,
        0.25,
        0.05,
        0.03,
        0.02,
        -0.30,
        0.08,
        -0.08,
        0.0,
        0.0,
    ]
)
_HIGH = np.array(
    [
        0.38,
        0.44,
        0.20,
        -0.04,
        0.98,
        0.80,
        0.65,
        0.75,
        0.55,
        0.40,
        -0.14,
        0.20,
        0.08,
        0.25,
        1.0,
    ]
)


def identity_params(n_identities: int) -> np.ndarray:
    """The fixed parameters of identities ``0 .. n_identities - 1`` (no randomness: a design).

    Coordinate ``i`` of identity ``k`` is ``frac((k + 1) * phi_i)`` with ``phi_i`` the fractional
    parts of square roots of primes (a Weyl sequence), mapped into the box ``[_LOW, _HIGH]``.

    Returns:
        ``(n_identities, N_IDENTITY_PARAMS)`` float64.

    Raises:
        ValueError: ``n_identities < 1``.
    """
    n = check_int(n_identities, "n_identities", low=1)
    primes = np.array(
        [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47], dtype=np.float64
    )
    phi = np.sqrt(primes) % 1.0
    u = ((np.arange(1, n + 1)[:, None] * phi[None, :]) + 0.5) % 1.0
    return _LOW + u * (_HIGH - _LOW)


def _render(p: np.ndarray, jit: np.ndarray, size: int) -> np.ndarray:
    """One face ``(3, size, size)`` in [0, 1] from identity parameters ``p`` and jitter
    ``jit = (dx, dy, scale, tilt, brightness, gradient)`` (soft edges by a logistic of the distance)."""
    dx, dy, scale, tilt, bright, grad = jit
    t = (np.arange(size) + 0.5) / size * 2 - 1
    X, Y = np.meshgrid(t, t)
    c, s = np.cos(tilt), np.sin(tilt)
    u = (c * (X - dx) + s * (Y - dy)) / scale
    v = (-s * (X - dx) + c * (Y - dy)) / scale
    edge = size / 4.0

    def soft(d: np.ndarray) -> np.ndarray:  # 1 inside (d < 0), 0 outside
        return 1.0 / (1.0 + np.exp(np.clip(d * edge, -30, 30)))

    hue = p[14]
    bg = np.array(
        [0.35 + 0.3 * hue, 0.45 + 0.2 * np.sin(6.28 * hue) ** 2, 0.65 - 0.3 * hue]
    )
    img = np.broadcast_to(bg[:, None, None], (3, size, size)).copy()
    skin, hair = p[4:7], p[7:10]
    head = soft(np.sqrt((u / (p[0] * 1.9)) ** 2 + (v / (p[1] * 1.9)) ** 2) - 1.0)
    hair_cap = soft(
        np.sqrt((u / (p[0] * 2.05)) ** 2 + ((v + 0.04) / (p[1] * 2.0)) ** 2) - 1.0
    ) * soft(v - p[10] * 1.6)
    face = head * (1 - soft(v - p[10] * 1.6))
    for ch in range(3):
        img[ch] = img[ch] * (1 - hair_cap) + hair[ch] * hair_cap
        img[ch] = img[ch] * (1 - face) + skin[ch] * face
    eyes = np.zeros_like(u)
    for sgn in (-1.0, 1.0):
        eyes = np.maximum(
            eyes,
            soft(
                np.sqrt((u - sgn * p[2] * 1.8) ** 2 + ((v - p[3] * 1.8) * 1.4) ** 2)
                - 0.075
            ),
        )
    eye_col = np.array([0.05, 0.05, 0.1]) + p[13]
    mouth_v = 0.36 - p[12] * 4.0 * (u / max(p[11] * 1.8, 1e-3)) ** 2 + p[12]
    mouth = soft(np.abs(v - mouth_v) - 0.035) * soft(np.abs(u) - p[11] * 1.8)
    mouth_col = np.array([0.55, 0.12, 0.15])
    for ch in range(3):
        img[ch] = img[ch] * (1 - eyes) + eye_col[ch] * eyes
        img[ch] = img[ch] * (1 - mouth) + mouth_col[ch] * mouth
    light = bright * (1.0 + grad * X)
    return np.clip(img * light[None], 0.0, 1.0)


def synthetic_faces(
    identities: Any,
    n_per_identity: int,
    size: int,
    rng: np.random.Generator,
    noise: float = 0.02,
) -> tuple[np.ndarray, np.ndarray]:
    """Images of the given synthetic identities with pose and light jitter (our construction).

    Args:
        identities: int or sequence of non-negative ints; an int ``n`` means ``range(n)``.
        n_per_identity: images per identity (>= 1).
        size: image side in pixels (>= 8).
        rng: ``numpy.random.Generator`` for the jitter and the pixel noise.
        noise: standard deviation of the added Gaussian pixel noise (>= 0).

    Returns:
        ``(images, labels)``: ``(N, 3, size, size)`` float32 in [0, 1] and ``(N,)`` int64 identity
        indices, ``N = len(identities) * n_per_identity``, grouped by identity.

    Raises:
        ValueError: bad sizes, negative identities or noise; TypeError: ``rng`` not a Generator.
        TooLargeError: more than the memory available.
    """
    rng = check_rng(rng)
    ids = (
        list(range(check_int(identities, "identities", low=1)))
        if isinstance(identities, (int, np.integer))
        else [check_int(i, "identities", low=0) for i in identities]
    )
    if not ids:
        raise ValueError("identities must name at least one identity")
    n_per = check_int(n_per_identity, "n_per_identity", low=1)
    size = check_int(size, "size", low=8)
    noise = check_real(noise, "noise", low=0.0)
    check_budget(
        f"synthetic_faces(n_per_identity={n_per}, size={size})",
        n_bytes=8.0 * len(ids) * n_per * 3 * size * size,
    )
    params = identity_params(max(ids) + 1)
    out = np.empty((len(ids) * n_per, 3, size, size), dtype=np.float32)
    labels = np.repeat(np.asarray(ids, dtype=np.int64), n_per)
    i = 0
    for k in ids:
        for _ in range(n_per):
            jit = np.array(
                [
                    rng.uniform(-0.08, 0.08),
                    rng.uniform(-0.06, 0.06),
                    rng.uniform(0.92, 1.08),
                    rng.uniform(-0.12, 0.12),
                    rng.uniform(0.8, 1.15),
                    rng.uniform(-0.15, 0.15),
                ]
            )
            img = _render(params[k], jit, size)
            out[i] = np.clip(img + noise * rng.standard_normal(img.shape), 0.0, 1.0)
            i += 1
    return out, labels


def lfw_faces(size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """scikit-image's ``lfw_subset`` resized to ``size`` x ``size``, grey repeated to RGB.

    Returns:
        ``(images, is_face)``: ``(200, 3, size, size)`` float32 in [0, 1] and ``(200,)`` int64,
        1 for the first 100 (faces) and 0 for the 100 non-faces.

    Raises:
        ValueError: ``size < 8``.
    """
    import torch
    import torch.nn.functional as F
    from skimage.data import lfw_subset

    size = check_int(size, "size", low=8)
    raw = np.asarray(lfw_subset(), dtype=np.float32)  # (200, 25, 25) in [0, 1]
    t = F.interpolate(
        torch.from_numpy(raw)[:, None],
        size=(size, size),
        mode="bilinear",
        align_corners=False,
    )
    imgs = t.clamp(0, 1).repeat(1, 3, 1, 1).numpy().astype(np.float32)
    is_face = np.r_[np.ones(100, dtype=np.int64), np.zeros(100, dtype=np.int64)]
    return imgs, is_face

"""A BAM-like semi-synthetic data set (chapter 09): digits pasted into natural scenes.

BAM (Yang and Kim, 2019) pastes objects into scene images so that the object's pixels are known.
This generator does the same offline: backgrounds are random crops of images that ship inside
scikit-image's wheel (``skimage.data``; nothing is downloaded), objects are scikit-learn's 8 x 8
handwritten digits (also shipped), the digit is the label, and the object mask is exact (the
pixels the digit's ink covers). A reconstruction of the paper's BAM setting at small scale, not
BAM itself.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from icml25.checks import (
    check_bool,
    check_choice,
    check_int,
    check_probability,
    check_rng,
)

__all__ = ["BACKGROUNDS", "background_images", "make_bam_like"]

#: the scikit-image images used as scenes (all in the wheel: ``skimage.data.<name>()``)
BACKGROUNDS: tuple[str, ...] = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "brick",
    "grass",
    "gravel",
    "hubble_deep_field",
    "retina",
)
_SCENE_SIDE = 96  # each scene is resized so that its short side is this many pixels


@functools.lru_cache(maxsize=None)
def _scenes() -> tuple[np.ndarray, ...]:
    import skimage.data
    from skimage.transform import resize

    out = []
    for name in BACKGROUNDS:
        im = getattr(skimage.data, name)()
        im = im.astype(np.float32) / 255.0
        if im.ndim == 2:
            im = np.repeat(im[..., None], 3, axis=2)
        h, w = im.shape[:2]
        s = _SCENE_SIDE / min(h, w)
        out.append(
            resize(
                im,
                (max(_SCENE_SIDE, round(h * s)), max(_SCENE_SIDE, round(w * s))),
                anti_aliasing=True,
                preserve_range=True,
            ).astype(np.float32)
        )
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32), d.target.astype(np.int64)


def background_images() -> tuple[np.ndarray, ...]:
    """The scenes, as float32 (h, w, 3) arrays in [0, 1], short side 96 pixels (loaded from the
    scikit-image wheel, never downloaded; cached).

    Returns:
        one array per name of :data:`BACKGROUNDS`.
    """
    return _scenes()


_MAX_BYTES = 16 * 2**30  # the largest image array make_bam_like allocates (float32)


def make_bam_like(
    n: int,
    H: int = 32,
    rng: Any = None,
    spurious: bool = False,
    split: str = "train",
    spurious_p: float = 0.9,
) -> dict[str, np.ndarray]:
    """Draw ``n`` images: a scene crop with one coloured digit pasted at a random place.

    The digit (8 x 8, upsampled by ``k = H // 16`` with nearest neighbours, so ``8k x 8k``) is
    blended over the crop with its ink as opacity, in a random saturated colour; its mask is the
    set of pixels with ink > 0. Digits of ``split="train"`` come from the even-indexed images of
    scikit-learn's digits, ``"test"`` from the odd ones, so a test digit was never seen.
    With ``spurious=True`` the scene predicts the label: scene ``y mod 9`` with probability
    ``spurious_p`` (a random scene otherwise); use it for the training split only, and draw the
    test split without it, to see whether a classifier reads the object or the scene.

    Args:
        n: number of images (>= 1).
        H: side of the square images (>= 16, a multiple of 16 not needed).
        rng: ``numpy.random.Generator``.
        spurious: correlate scene and label (see above).
        split: ``"train"`` or ``"test"`` (which digit images are used).
        spurious_p: probability of the label's scene when ``spurious``.

    Returns:
        dict with ``x`` (n, H, H, 3) float32 in [0, 1], ``y`` (n,) int64 digit labels,
        ``object_mask`` (n, H, H) bool, ``scene`` (n,) int64 index into :data:`BACKGROUNDS`.

    Raises:
        TypeError: ``rng`` not a Generator, ``spurious`` not a bool. ValueError: ``n < 1``,
        ``H < 16``, unknown ``split``, ``spurious_p`` outside [0, 1], ``n`` images of ``H x H`` that
        need more than 16 GiB (refused before anything is allocated).
    """
    n = check_int(n, "n", low=1)
    H = check_int(H, "H", low=16, high=1024)
    if n * H * H * 3 * 4 > _MAX_BYTES:
        raise ValueError(
            f"n = {n} images of {H}x{H} pixels need {n * H * H * 12 / 2**30:.1f} GiB of float32, more than "
            f"the {_MAX_BYTES / 2**30:.0f} GiB this function allocates; lower n or H"
        )
    rng = check_rng(rng, "rng")
    spurious = check_bool(spurious, "spurious")
    split = check_choice(split, "split", ("train", "test"))
    spurious_p = check_probability(spurious_p, "spurious_p")
    scenes = _scenes()
    imgs, labels = _digits()
    pool = np.arange(0 if split == "train" else 1, len(labels), 2)
    k = max(1, H // 16)
    side = 8 * k
    x = np.empty((n, H, H, 3), dtype=np.float32)
    mask = np.zeros((n, H, H), dtype=bool)
    y = np.empty(n, dtype=np.int64)
    scene = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = int(pool[rng.integers(len(pool))])
        y[i] = labels[j]
        if spurious and rng.random() < spurious_p:
            s = int(y[i] % len(scenes))
        else:
            s = int(rng.integers(len(scenes)))
        scene[i] = s
        im = scenes[s]
        r0 = int(rng.integers(im.shape[0] - H + 1))
        c0 = int(rng.integers(im.shape[1] - H + 1))
        crop = im[r0 : r0 + H, c0 : c0 + H]
        # (side, side) opacity in [0, 1]
        ink = np.kron(imgs[j], np.ones((k, k), dtype=np.float32))
        colour = rng.uniform(0.0, 1.0, 3).astype(np.float32)
        colour[int(rng.integers(3))] = 1.0  # saturated: one channel at full intensity
        pr = int(rng.integers(H - side + 1))
        pc = int(rng.integers(H - side + 1))
        out = crop.copy()
        a = ink[..., None]
        out[pr : pr + side, pc : pc + side] = (1 - a) * out[
            pr : pr + side, pc : pc + side
        ] + a * colour
        x[i] = np.clip(out, 0.0, 1.0)
        mask[i, pr : pr + side, pc : pc + side] = ink > 0
        scene[i] = s
    return {"x": x, "y": y, "object_mask": mask, "scene": scene}

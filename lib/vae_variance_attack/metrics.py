"""How well a protection erases identity: classifiers, identity accuracy, ISM, FDFR proxy, PSNR.

The paper (and Anti-DreamBooth) scores generations with a face detector (FDFR, the face detection
failure rate) and a face recogniser (ISM, the identity score matching: cosine similarity of
ArcFace embeddings to the clean identity). Neither network is reachable offline; these are
stand-ins (our construction): a small CNN identity classifier trained on clean faces (its
penultimate features give the ISM cosine) and a face/non-face CNN trained on the real faces and
non-faces of ``lfw_subset`` plus the synthetic faces (grey, so colour is no cue).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_int, check_real, check_rng, check_tensor

from ._checks import _check_images

__all__ = [
    "identity_classifier",
    "face_classifier",
    "identity_accuracy",
    "ism",
    "fdfr_proxy",
    "psnr",
]


def _cnn(n_classes: int, width: int = 16) -> Any:
    import torch.nn as nn

    class SmallCNN(nn.Module):
        """Three conv blocks, global average pooling (the embedding), a linear head."""

        def __init__(self) -> None:
            super().__init__()
            w = width
            self.features = nn.Sequential(
                nn.Conv2d(3, w, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(w, 2 * w, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(2 * w, 4 * w, 3, padding=1),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
                nn.Flatten(),
            )
            self.head = nn.Linear(4 * w, n_classes)

        def embed(self, x: Any) -> Any:
            """``(B, 4 width)`` features of ``x`` in [0, 1] (centred at 0.5)."""
            return self.features(x - 0.5)

        def forward(self, x: Any) -> Any:
            """``(B, n_classes)`` logits."""
            return self.head(self.embed(x))

    return SmallCNN()


SmallCNN = (
    _cnn  # the factory (the class is local so that each call builds a fresh module)
)


def _fit(
    model: Any,
    x: Any,
    y: Any,
    rng: np.random.Generator,
    n_epochs: int,
    batch_size: int,
    lr: float,
    noise: float,
) -> Any:
    import torch

    g = torch.Generator().manual_seed(int(rng.integers(2**62)))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n = x.shape[0]
    model.train()
    for _ in range(n_epochs):
        perm = torch.from_numpy(rng.permutation(n))
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            xb = x[idx]
            xb = (
                xb
                + noise
                * torch.rand(xb.shape[0], 1, 1, 1, generator=g)
                * torch.randn(xb.shape, generator=g)
            ).clamp(0, 1)
            loss = torch.nn.functional.cross_entropy(model(xb), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model.requires_grad_(False)


def identity_classifier(
    images: Any,
    labels: Any,
    rng: np.random.Generator,
    n_epochs: int = 8,
    batch_size: int = 64,
    lr: float = 2e-3,
    noise: float = 0.1,
) -> Any:
    """A small CNN that tells the synthetic identities apart (trained on clean faces, with noise
    augmentation of random strength up to ``noise`` so noisy generations are judged fairly).

    Args:
        images: ``(N, 3, H, W)`` in [0, 1]; labels: ``(N,)`` int identities ``0 .. K - 1``;
        rng: generator; n_epochs, batch_size, lr, noise: training settings.

    Returns:
        the trained module (``model(x)`` logits, ``model.embed(x)`` features), eval mode, frozen.

    Raises:
        ValueError: bad images, labels of another length or negative, bad settings; TypeError: rng.
    """
    import torch

    rng = check_rng(rng)
    x = _check_images(images, "images")
    y = check_tensor(labels, "labels", ndim=1, floating=False).to(torch.int64)
    if y.shape[0] != x.shape[0] or int(y.min()) < 0:
        raise ValueError(
            f"labels must be {x.shape[0]} non-negative ints, got shape {tuple(y.shape)}"
        )
    torch.manual_seed(int(rng.integers(2**62)))
    model = _cnn(int(y.max()) + 1)
    return _fit(
        model,
        x,
        y,
        rng,
        check_int(n_epochs, "n_epochs", low=1),
        check_int(batch_size, "batch_size", low=1),
        check_real(lr, "lr", low=0.0, low_open=True),
        check_real(noise, "noise", low=0.0),
    )


def _on(model: Any, x: Any) -> Any:
    """``x`` on ``model``'s device (the classifiers train on the CPU; generations may be on a GPU)."""
    return x.to(next(model.parameters()).device)


def _grey(x: Any) -> Any:
    return x.mean(1, keepdim=True).repeat(1, 3, 1, 1)


def face_classifier(
    lfw_images: Any,
    lfw_is_face: Any,
    synthetic: Any,
    rng: np.random.Generator,
    n_epochs: int = 15,
    batch_size: int = 32,
    lr: float = 2e-3,
) -> Any:
    """A face/non-face CNN on grey images: ``lfw_subset`` faces and the ``synthetic`` faces are
    class 1, the ``lfw_subset`` non-faces class 0 (the FDFR stand-in; our construction).

    Returns:
        the trained module (logits of (non-face, face) for grey-converted input; use :func:`fdfr_proxy`).

    Raises:
        ValueError: bad images or labels; TypeError: rng.
    """
    import torch

    rng = check_rng(rng)
    xl = _check_images(lfw_images, "lfw_images")
    yl = check_tensor(lfw_is_face, "lfw_is_face", ndim=1, floating=False).to(
        torch.int64
    )
    if yl.shape[0] != xl.shape[0] or not bool(((yl == 0) | (yl == 1)).all()):
        raise ValueError(f"lfw_is_face must be {xl.shape[0]} zeros and ones")
    xs = _check_images(synthetic, "synthetic", size=int(xl.shape[-1]))
    x = _grey(torch.cat([xl, xs]))
    y = torch.cat([yl, torch.ones(xs.shape[0], dtype=torch.int64)])
    torch.manual_seed(int(rng.integers(2**62)))
    return _fit(
        _cnn(2),
        x,
        y,
        rng,
        check_int(n_epochs, "n_epochs", low=1),
        check_int(batch_size, "batch_size", low=1),
        check_real(lr, "lr", low=0.0, low_open=True),
        0.05,
    )


def identity_accuracy(classifier: Any, images: Any, identity: int) -> float:
    """Fraction of ``images`` that ``classifier`` assigns to ``identity`` (1/K is chance).

    Raises:
        ValueError: bad images, identity negative.
    """
    import torch

    x = _on(classifier, _check_images(images, "images"))
    k = check_int(identity, "identity", low=0)
    with torch.no_grad():
        return float((classifier(x).argmax(1) == k).double().mean())


def ism(classifier: Any, images: Any, reference: Any) -> float:
    """ISM stand-in: mean cosine similarity of ``classifier.embed`` features of ``images`` to the
    centroid of the features of ``reference`` (clean images of the identity).

    Raises:
        ValueError: bad images.
    """
    import torch

    x = _on(classifier, _check_images(images, "images"))
    r = _on(classifier, _check_images(reference, "reference"))
    with torch.no_grad():
        c = classifier.embed(r).mean(0, keepdim=True)
        return float(
            torch.nn.functional.cosine_similarity(classifier.embed(x), c, dim=1).mean()
        )


def fdfr_proxy(face_clf: Any, images: Any) -> float:
    """FDFR stand-in: the fraction of ``images`` the face/non-face CNN calls non-face.

    Raises:
        ValueError: bad images.
    """
    import torch

    x = _on(face_clf, _check_images(images, "images"))
    with torch.no_grad():
        return float((face_clf(_grey(x)).argmax(1) == 0).double().mean())


def psnr(x: Any, y: Any) -> np.ndarray:
    """Per-image PSNR in dB of ``y`` against ``x`` (both in [0, 1], peak 1); inf where equal.

    Returns:
        ``(B,)`` float64.

    Raises:
        ValueError: bad images or shapes that differ.
    """
    import torch

    a = _check_images(x, "x")
    b = _check_images(y, "y")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"y must have the shape of x {tuple(a.shape)}, got {tuple(b.shape)}"
        )
    mse = ((a.double() - b.double()) ** 2).flatten(1).mean(1)
    with np.errstate(divide="ignore"):
        return (10 * torch.log10(1.0 / mse)).cpu().numpy()

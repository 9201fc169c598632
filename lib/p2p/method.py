"""P2P: instance-wise selection of superpixels (Vandenhirtz and Vogt, ICML 2025).

Per image ``x`` with superpixel map ``g``: an importance predictor emits ``num_dims = 4`` channels
per pixel; they are averaged over each superpixel (``\\bar e_g``); ``mu_g = \\bar e_g[0]`` is the
group's selection logit and ``u_g = \\bar e_g[1:4]`` a row of ``U`` with ``Sigma = U U^T``.
Training draws correlated logits ``l ~ N(mu, Sigma)``, a relaxed Bernoulli mask
``m_g ~ RelaxedBernoulli(sigmoid(l_g), lambda)`` and classifies ``m * x + (1 - m) * 0``; the loss
is ``CE + beta R_tau(p_bar) + gamma mean|Sigma|`` with the size-weighted selection rate
``p_bar = sum_g sigmoid(mu_g) |g| / (H W)``. Test time uses ``m_g = 1[sigmoid(mu_g) > 0.5]`` and,
in the dynamic variant, the smallest budget ``tau`` on a 0.05 grid at which the classifier is
``kappa``-confident.

Facts from the official code (``models/models.py``, ``models/losses.py``): the pooling, the
rank-``num_dims - 1`` covariance, the KL-style penalty with its ``eps = 1e-6``, the annealing of
``beta`` and of the temperature, the threshold search, ``tau ~ U[0.05, 1]`` in training and the
hard 0.5 threshold at test time. Ours (labelled reconstructions): the small CNNs (the paper uses
LRASPP-MobileNetV3 and ViT-tiny, pretrained); ``tau`` conditioning by adding ``tau`` to the
features that enter the head (the code adds it to the inputs of LRASPP's two heads); the
low-rank sampler ``l = mu + U xi + sqrt(eps) zeta`` in place of ``MultivariateNormal(mu, U U^T +
jitter)``, the same law with a fixed jitter ``eps`` (the code raises the jitter until a Cholesky
factorisation succeeds).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from icml25.checks import (
    check_bool,
    check_choice,
    check_int,
    check_real,
    check_tensor,
    check_torch_generator,
)
from icml25.kernels import superpixel

from ._checks import (
    _check_groups,
    _check_image_tensor,
    _check_images,
    _check_labels,
    _check_tau,
)
from .defaults import DEFAULTS

__all__ = [
    "superpixels",
    "relabel_consecutive",
    "n_groups",
    "group_mean",
    "group_size",
    "groups_to_mask",
    "selection_rate",
    "threshold_penalty",
    "low_rank_logits",
    "anneal_beta",
    "anneal_temperature",
    "p2p_loss",
    "P2PLoss",
    "P2POutput",
    "ImportancePredictor",
    "SmallCNNClassifier",
    "P2P",
    "to_tensor",
    "REG_VARIANTS",
]

REG_VARIANTS = ("kl", "l1")
_EPS = 1e-6  # the code's eps inside the KL-style penalty


def _torch():
    import torch

    return torch


def _nn():
    import torch.nn as nn

    return nn


# --------------------------------------------------------------------------------------
# Superpixels and pooling
# --------------------------------------------------------------------------------------


def relabel_consecutive(labels: np.ndarray) -> np.ndarray:
    """Labels of one map renumbered ``0 .. k-1`` in order of first value (``np.unique`` order).

    Args:
        labels: integer array of any shape (one superpixel map).

    Returns:
        int64 array of the same shape whose values are exactly ``0 .. k-1``.

    Raises:
        TypeError: not integers.
    """
    from icml25.checks import check_array

    arr = check_array(labels, "labels", kind="int")
    _, inv = np.unique(arr, return_inverse=True)
    return inv.reshape(arr.shape).astype(np.int64)


def superpixels(
    images: np.ndarray,
    n_segments: int = DEFAULTS.n_segments,
    compactness: float = DEFAULTS.compactness,
) -> np.ndarray:
    """SLIC superpixels of each image, consecutive labels per image (``skimage.segmentation.slic``).

    Args:
        images: (N, H, W, 3) float in [0, 1].
        n_segments: SLIC's target number of segments (>= 1; the result may differ).
        compactness: SLIC's colour/space trade-off (> 0).

    Returns:
        (N, H, W) int64 labels, ``0 .. k_i - 1`` in image ``i``.

    Raises:
        TypeError/ValueError: images not (N, H, W, 3) floats in [0, 1]; ``n_segments < 1``;
        ``compactness <= 0``.
    """
    from skimage.segmentation import slic

    x = _check_images(images)
    n_segments = check_int(n_segments, "n_segments", low=1)
    compactness = check_real(compactness, "compactness", low=0.0, low_open=True)
    out = np.empty(x.shape[:3], dtype=np.int64)
    for i in range(x.shape[0]):
        seg = slic(
            x[i].astype(np.float64),
            n_segments=n_segments,
            compactness=compactness,
            start_label=0,
            channel_axis=-1,
        )
        out[i] = relabel_consecutive(seg)
    return out


def n_groups(groups: Any, n_segments: int) -> int:
    """``max(groups.max() + 1, n_segments)``: the group count the code allocates (SLIC may return
    more segments than asked).

    Args:
        groups: integer labels (any shape, torch or NumPy). n_segments: the requested count.

    Returns:
        int.
    """
    n_segments = check_int(n_segments, "n_segments", low=1)
    size = groups.numel() if hasattr(groups, "numel") else np.size(groups)
    top = int(groups.max()) if size else -1
    return max(top + 1, n_segments)


def group_mean(emb: Any, groups: Any, G: int) -> Any:
    """Per-superpixel mean of a pixel embedding (the code's ``get_group_average``).

    ``\\bar e[b, c, g] = (1/|g|) sum_{p in g} emb[b, c, p]``; empty groups are 0.

    Args:
        emb: (B, C, H, W) float tensor. groups: (B, H, W) integer labels. G: number of groups,
            ``G > groups.max()``.

    Returns:
        (B, C, G) tensor on ``emb``'s device, differentiable in ``emb``.

    Raises:
        TypeError: non-float ``emb`` or non-integer ``groups``. ValueError: shapes that do not
        match, negative labels, ``G <= groups.max()``.
    """
    emb = check_tensor(emb, "emb", ndim=4)
    B, C, H, W = emb.shape
    G = check_int(G, "G", low=1)
    g = _check_groups(groups, "groups", (B, H, W), G).to(emb.device)
    return _group_mean(emb, g, G)


def _group_mean(emb: Any, groups: Any, G: int) -> Any:
    """``\\bar e_g = (1/|g|) sum_{p: g(p) = g} e(p)`` through the segment-mean kernel."""
    return superpixel.segment_mean(emb.flatten(2), groups.flatten(1), G)


def group_size(groups: Any, G: int) -> Any:
    """Pixels per group, ``|g|`` (the code's ``get_group_average(..., reduction="sum")`` of ones).

    Args:
        groups: (B, H, W) integer labels (torch or NumPy). G: ``> groups.max()``.

    Returns:
        (B, G) float32 tensor (on ``groups``' device).

    Raises:
        as :func:`group_mean`.
    """
    G = check_int(G, "G", low=1)
    shape = tuple(groups.shape)
    if len(shape) != 3:
        raise ValueError(f"groups must be (B, H, W), got shape {shape}")
    g = _check_groups(groups, "groups", shape, G)
    return _group_size(g, G)


def _group_size(groups: Any, G: int) -> Any:
    torch = _torch()
    flat = groups.flatten(1)
    out = torch.zeros(flat.shape[0], G, device=flat.device)
    return out.scatter_add_(1, flat, torch.ones_like(flat, dtype=out.dtype))


def groups_to_mask(groups: Any, m: Any) -> Any:
    """Pixel mask ``m(p) = m_{g(p)}`` (the code's ``groups_to_mask``, a gather).

    Args:
        groups: (B, H, W) integer labels. m: (B, G) float group mask, ``G > groups.max()``.

    Returns:
        (B, 1, H, W) tensor like ``m``.

    Raises:
        ValueError: batch sizes that differ, labels ``>= G``.
    """
    m = check_tensor(m, "m", ndim=2)
    shape = tuple(groups.shape)
    if len(shape) != 3 or shape[0] != m.shape[0]:
        raise ValueError(
            f"groups must be (B, H, W) with B = {m.shape[0]} (rows of m), got shape {shape}"
        )
    g = _check_groups(groups, "groups", shape, int(m.shape[1])).to(m.device)
    return _groups_to_mask(g, m)


def _groups_to_mask(groups: Any, m: Any) -> Any:
    B, H, W = groups.shape
    return m.gather(1, groups.flatten(1)).view(B, 1, H, W)


# --------------------------------------------------------------------------------------
# Sparsity penalty and sampling
# --------------------------------------------------------------------------------------


def selection_rate(group_probs: Any, group_sizes: Any) -> Any:
    """Size-weighted selection rate ``p_bar = sum_g pi_g |g| / sum_g |g|`` (``= (1/HW) sum_p pi_{g(p)}``).

    Args:
        group_probs: (B, G) probabilities. group_sizes: (B, G) pixel counts (rows sum to H W).

    Returns:
        (B,) tensor.

    Raises:
        ValueError: shapes differ, probabilities outside [0, 1], negative sizes, an empty row.
    """
    p = check_tensor(group_probs, "group_probs", ndim=2)
    s = check_tensor(group_sizes, "group_sizes", shape=tuple(p.shape))
    if p.numel() and (float(p.detach().min()) < 0 or float(p.detach().max()) > 1):
        raise ValueError("group_probs must lie in [0, 1]")
    if s.numel() and (
        float(s.detach().min()) < 0 or float(s.detach().sum(1).min()) <= 0
    ):
        raise ValueError("group_sizes must be >= 0 with a positive sum per row")
    return _selection_rate(p, s.to(p))


def _selection_rate(p: Any, sizes: Any) -> Any:
    """``p_bar = sum_g pi_g |g| / (H W)`` (the code's ``compute_weighted_group_probs``)."""
    return (p * sizes).sum(1) / sizes.sum(1)


def threshold_penalty(p_bar: Any, tau: Any, variant: str = DEFAULTS.reg_variant) -> Any:
    """The budget penalty ``R_tau(p_bar)`` per image (no weight ``beta``).

    ``kl``: ``R = -log(1 - tau + eps - max(p_bar - tau, 0)) + log(1 - tau + eps)``, zero while
    ``p_bar <= tau``, ``log((1 - tau)/(1 - p_bar))`` above it (up to ``eps = 1e-6``), infinite as
    ``p_bar -> 1``; ``l1``: ``max(p_bar - tau, 0)``.

    Args:
        p_bar: (B,) selection rates in [0, 1]. tau: a float or (B,) budgets in (0, 1].
        variant: ``"kl"`` or ``"l1"``.

    Returns:
        (B,) tensor.

    Raises:
        ValueError: rates outside [0, 1], ``tau`` outside (0, 1], unknown ``variant``.
    """
    p = check_tensor(p_bar, "p_bar", ndim=1)
    if p.numel() and (float(p.detach().min()) < 0 or float(p.detach().max()) > 1):
        raise ValueError("p_bar must lie in [0, 1]")
    t = _check_tau(tau, "tau", p.shape[0]).to(p)
    return _penalty(p, t, check_choice(variant, "variant", REG_VARIANTS))


def _penalty(p_bar: Any, tau: Any, variant: str) -> Any:
    """``R_tau(p) = -log(1 - tau + eps - max(p - tau, 0)) + log(1 - tau + eps)`` (kl) or
    ``max(p - tau, 0)`` (l1); ``p`` is the size-weighted selection rate ``p_bar``."""
    excess = (p_bar - tau).clamp(min=0.0)
    if variant == "l1":
        return excess
    torch = _torch()
    return -torch.log(1 - tau + _EPS - excess) + torch.log(1 - tau + _EPS)


def low_rank_logits(
    mu: Any, U: Any, jitter: float = DEFAULTS.jitter, rng: Any = None
) -> Any:
    """Draw ``l = mu + U xi + sqrt(jitter) zeta``, ``xi ~ N(0, I_r)``, ``zeta ~ N(0, I_G)``.

    The law is ``N(mu, U U^T + jitter I)``: the code's ``MultivariateNormal(mu, U U^T)`` with its
    jitter, without a ``G x G`` Cholesky factorisation (a reconstruction: the code grows the jitter
    from 1e-6 until Cholesky succeeds; here it is fixed). Reparameterised (differentiable).

    Args:
        mu: (B, G) means. U: (B, G, r) factors. jitter: variance added on the diagonal (>= 0).
        rng: ``torch.Generator`` or ``None`` (torch's global generator).

    Returns:
        (B, G) tensor.

    Raises:
        ValueError: shapes that disagree, negative jitter. TypeError: ``rng`` not a Generator.
    """
    mu = check_tensor(mu, "mu", ndim=2)
    U = check_tensor(U, "U", ndim=3)
    if tuple(U.shape[:2]) != tuple(mu.shape):
        raise ValueError(
            f"U must be (B, G, r) with (B, G) = {tuple(mu.shape)}, got {tuple(U.shape)}"
        )
    jitter = check_real(jitter, "jitter", low=0.0)
    return _low_rank(mu, U, jitter, check_torch_generator(rng, "rng"))


def _low_rank(mu: Any, U: Any, jitter: float, gen: Any) -> Any:
    """``l = mu + U xi + sqrt(eps) zeta``: covariance ``U U^T + eps I`` at ``O(G r)`` per draw."""
    torch = _torch()
    B, G, r = U.shape
    dev = mu.device
    xi = torch.randn(
        B, r, 1, generator=gen, device=gen.device if gen is not None else dev
    ).to(dev, mu.dtype)
    zeta = torch.randn(
        B, G, generator=gen, device=gen.device if gen is not None else dev
    ).to(dev, mu.dtype)
    return mu + (U @ xi).squeeze(-1) + math.sqrt(jitter) * zeta


def anneal_beta(epoch: int, n_epochs: int, beta: float = DEFAULTS.beta) -> float:
    """The penalty weight at 0-based ``epoch`` (the code's ``compute_reg_weight(epoch + 1)``).

    With ``e = epoch + 1``: ``beta / 100`` while ``e < n_epochs // 10``, linear from ``beta / 100`` to
    ``beta`` up to ``e = n_epochs // 2``, ``beta`` after.

    Raises:
        ValueError: ``epoch < 0``, ``n_epochs < 1``, ``beta < 0``.
    """
    epoch = check_int(epoch, "epoch", low=0)
    n_epochs = check_int(n_epochs, "n_epochs", low=1)
    beta = check_real(beta, "beta", low=0.0)
    e, start, final = epoch + 1, n_epochs // 10, n_epochs // 2
    lo = beta / 100
    if e >= final:
        return beta
    if e < start:
        return lo
    return lo + (beta - lo) * (e - start) / float(final - start)


def anneal_temperature(
    epoch: int, n_epochs: int, final_temp: float = DEFAULTS.final_temp
) -> float:
    """Relaxed-Bernoulli temperature ``max(exp(epoch log(final) / (n_epochs // 2)), final)``:
    exponential from 1 to ``final_temp`` over the first half of training (the code's
    ``compute_temperature``).

    Raises:
        ValueError: ``epoch < 0``, ``n_epochs < 1``, ``final_temp`` outside (0, 1].
    """
    epoch = check_int(epoch, "epoch", low=0)
    n_epochs = check_int(n_epochs, "n_epochs", low=1)
    final_temp = check_real(final_temp, "final_temp", low=0.0, low_open=True, high=1.0)
    half = n_epochs // 2
    if half == 0:
        return final_temp
    return max(math.exp(math.log(final_temp) * epoch / half), final_temp)


class P2PLoss(NamedTuple):
    """Parts of the P2P objective (each a scalar tensor; ``rate`` is (B,))."""

    total: Any
    ce: Any
    reg: Any
    cov: Any
    rate: Any


def p2p_loss(
    logits: Any,
    y: Any,
    group_probs: Any,
    group_sizes: Any,
    cov: Any,
    tau: Any,
    beta: float = DEFAULTS.beta,
    gamma: float = DEFAULTS.gamma,
    variant: str = DEFAULTS.reg_variant,
) -> P2PLoss:
    """``L = CE(f(x~), y) + beta mean_b R_tau(p_bar_b) + gamma mean|Sigma|`` (``models/losses.py``).

    Args:
        logits: (B, K) class logits. y: (B,) labels in [0, K). group_probs: (B, G) ``sigmoid(mu)``.
        group_sizes: (B, G) pixel counts. cov: (B, G, G) ``U U^T`` or ``None`` (no covariance).
        tau: float or (B,) budgets in (0, 1]. beta, gamma: weights (>= 0). variant: ``"kl"``/``"l1"``.

    Returns:
        :class:`P2PLoss` (``total`` is what is minimised).

    Raises:
        TypeError/ValueError: shapes that disagree, labels out of range, ``tau`` outside (0, 1],
        negative weights, unknown ``variant``.
    """
    logits = check_tensor(logits, "logits", ndim=2)
    B, K = logits.shape
    y = _check_labels(y, "y", B).to(logits.device)
    if y.numel() and int(y.max()) >= K:
        raise ValueError(f"y must be < {K} (the number of logits), got {int(y.max())}")
    p = check_tensor(group_probs, "group_probs", ndim=2)
    if p.shape[0] != B:
        raise ValueError(f"group_probs must have {B} rows, got {tuple(p.shape)}")
    s = check_tensor(group_sizes, "group_sizes", shape=tuple(p.shape))
    if cov is not None:
        cov = check_tensor(cov, "cov", shape=(B, p.shape[1], p.shape[1]))
    t = _check_tau(tau, "tau", B).to(logits.device)
    beta = check_real(beta, "beta", low=0.0)
    gamma = check_real(gamma, "gamma", low=0.0)
    return _loss(
        logits,
        y,
        p,
        s.to(p),
        cov,
        t,
        beta,
        gamma,
        check_choice(variant, "variant", REG_VARIANTS),
    )


def _loss(
    logits: Any,
    y: Any,
    p: Any,
    sizes: Any,
    cov: Any,
    tau: Any,
    beta: float,
    gamma: float,
    variant: str,
) -> P2PLoss:
    """``CE + beta mean R_tau(p_bar) + gamma mean|Sigma|``; ``p_bar`` from group probabilities
    (not pixels: one huge pixel logit cannot buy a whole superpixel)."""
    torch = _torch()
    ce = torch.nn.functional.cross_entropy(logits, y)
    rate = _selection_rate(p, sizes)
    reg = beta * _penalty(rate, tau, variant).mean()
    cv = (
        gamma * cov.abs().mean()
        if cov is not None
        else torch.zeros((), device=logits.device)
    )
    return P2PLoss(ce + reg + cv, ce, reg, cv, rate)


# --------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------


def _conv_bn(cin: int, cout: int, dilation: int = 1, stride: int = 1) -> Any:
    nn = _nn()
    return nn.Sequential(
        nn.Conv2d(
            cin, cout, 3, stride=stride, padding=dilation, dilation=dilation, bias=False
        ),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class ImportancePredictor(_nn().Module):
    """A small CNN emitting ``num_dims`` channels per pixel (ours; the paper uses
    LRASPP-MobileNetV3, ImageNet-pretrained, which also works at reduced resolution).

    Trunk: three 3 x 3 conv-BN-ReLU layers at half resolution (the first with stride 2), dilations
    1, 2, 4. Head: the trunk's features plus ``tau`` (a constant added to every feature: the code
    adds ``tau`` to the inputs of LRASPP's heads), a 3 x 3 conv-BN-ReLU and a 1 x 1 conv to
    ``num_dims``, upsampled bilinearly to the input's size. Channel 0 is the selection logit,
    channels 1: are the covariance factors.
    """

    def __init__(
        self,
        in_ch: int = 3,
        num_dims: int = DEFAULTS.num_dims,
        tau_conditioning: bool = True,
        width: int = 32,
    ) -> None:
        """Args: in_ch: input channels; num_dims: output channels (>= 1); tau_conditioning: add
        ``tau`` to the head's input (the dynamic variant); width: trunk channels."""
        super().__init__()
        nn = _nn()
        in_ch = check_int(in_ch, "in_ch", low=1)
        self.num_dims = check_int(num_dims, "num_dims", low=1)
        self.tau_conditioning = check_bool(tau_conditioning, "tau_conditioning")
        width = check_int(width, "width", low=4)
        self.trunk = nn.Sequential(
            _conv_bn(in_ch, width // 2, stride=2),
            _conv_bn(width // 2, width, 2),
            _conv_bn(width, width, 4),
        )
        self.head = nn.Sequential(
            _conv_bn(width, width), nn.Conv2d(width, self.num_dims, 1)
        )

    def features(self, x: Any) -> Any:
        """The trunk's (B, width, H, W) features of ``x`` (independent of ``tau``)."""
        return self.trunk(x)

    def embed(self, h: Any, tau: Any = None, size: Any = None) -> Any:
        """The (B, num_dims, H, W) embedding from trunk features ``h`` and budgets ``tau`` ((B,)),
        upsampled to ``size = (H, W)`` (twice the features' size when ``None``)."""
        if self.tau_conditioning and tau is not None:
            h = h + tau.to(h).view(-1, 1, 1, 1)
        size = tuple(size) if size is not None else (2 * h.shape[-2], 2 * h.shape[-1])
        return _nn().functional.interpolate(
            self.head(h), size=size, mode="bilinear", align_corners=False
        )

    def forward(self, x: Any, tau: Any = None) -> Any:
        """(B, num_dims, H, W) embedding of ``x`` (B, C, H, W) at budgets ``tau`` ((B,) or None)."""
        return self.embed(self.features(x), tau, x.shape[-2:])


class SmallCNNClassifier(_nn().Module):
    """A BatchNorm CNN classifier (ours; the paper uses ViT-tiny/16 or ResNet-18, pretrained).

    Three conv-BN-ReLU stages (``width``, 2 ``width``, 4 ``width`` channels; 2 x 2 max pooling
    after the first two), global max pooling and a linear layer to ``n_classes`` logits. Max
    pooling suits a small object at a random place: global average pooling learned far more
    slowly in our trials (0.62 against 0.93 test accuracy after 6 epochs on the BAM-like data).
    """

    def __init__(self, n_classes: int, in_ch: int = 3, width: int = 16) -> None:
        """Args: n_classes: classes (>= 2); in_ch: input channels; width: first stage's channels."""
        super().__init__()
        nn = _nn()
        n_classes = check_int(n_classes, "n_classes", low=2)
        width = check_int(width, "width", low=4)
        self.net = nn.Sequential(
            _conv_bn(check_int(in_ch, "in_ch", low=1), width),
            nn.MaxPool2d(2),
            _conv_bn(width, 2 * width),
            nn.MaxPool2d(2),
            _conv_bn(2 * width, 4 * width),
            nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
            nn.Linear(4 * width, n_classes),
        )

    def forward(self, x: Any) -> Any:
        """(B, n_classes) logits of images ``x`` (B, C, H, W)."""
        return self.net(x)


class P2POutput(NamedTuple):
    """One P2P forward: ``logits`` (B, K), ``group_probs`` (B, G) ``sigmoid(mu)``, ``mask`` (B, 1, H, W)
    pixel mask, ``group_mask`` (B, G) the (relaxed or hard) selection, ``cov`` (B, G, G) or None,
    ``masked`` (B, C, H, W) the classifier's input."""

    logits: Any
    group_probs: Any
    mask: Any
    group_mask: Any
    cov: Any
    masked: Any


class P2P(_nn().Module):
    """Importance predictor + superpixel selection + classifier, trained jointly (the paper's model).

    ``forward`` samples a relaxed mask in training mode and thresholds ``sigmoid(mu) > 0.5`` in
    eval mode. ``find_dynamic_threshold`` is the code's ``find_optimal_threshold``.
    """

    def __init__(
        self,
        predictor: Any,
        classifier: Any,
        use_cov: bool = True,
        dynamic: bool = True,
        final_temp: float = DEFAULTS.final_temp,
        straight_through: bool = DEFAULTS.straight_through,
        n_segments: int = 1,
        jitter: float = DEFAULTS.jitter,
    ) -> None:
        """Args:
        predictor: an :class:`ImportancePredictor` (``num_dims >= 2`` when ``use_cov``).
        classifier: a module mapping (B, C, H, W) to (B, K) logits.
        use_cov: correlated logits ``N(mu, U U^T)`` in training (else ``l = mu``).
        dynamic: the budget ``tau`` is an input (the dynamic variant).
        final_temp: final temperature (the schedule is set by :meth:`set_temperature`).
        straight_through: hard forward, relaxed backward.
        n_segments: the least number of groups to allocate (:func:`n_groups`).
        jitter: diagonal variance of the low-rank sampler.
        """
        super().__init__()
        self.predictor = predictor
        self.classifier = classifier
        self.use_cov = check_bool(use_cov, "use_cov")
        self.dynamic = check_bool(dynamic, "dynamic")
        self.final_temp = check_real(
            final_temp, "final_temp", low=0.0, low_open=True, high=1.0
        )
        self.straight_through = check_bool(straight_through, "straight_through")
        self.n_segments = check_int(n_segments, "n_segments", low=1)
        self.jitter = check_real(jitter, "jitter", low=0.0)
        if self.use_cov and predictor.num_dims < 2:
            raise ValueError(
                "predictor.num_dims must be >= 2 when use_cov (1 mean + factors)"
            )
        self.temperature = 1.0
        # black: the images are not normalised
        self.register_buffer("fill", _torch().zeros(3))

    def set_temperature(self, temperature: float) -> None:
        """Set the relaxed-Bernoulli temperature (> 0) used by training-mode forwards."""
        self.temperature = check_real(
            temperature, "temperature", low=0.0, low_open=True
        )

    def _prepare(self, x: Any, groups: Any, tau: Any) -> tuple[Any, Any, Any, int]:
        x = _check_image_tensor(x)
        B, _, H, W = x.shape
        g = _check_groups(groups, "groups", (B, H, W)).to(x.device)
        t = None if tau is None else _check_tau(tau, "tau", B).to(x.device)
        if self.dynamic and t is None:
            raise ValueError(
                "tau must be given for a dynamic P2P (a float or (B,) budgets in (0, 1])"
            )
        return x, g, t, n_groups(g, self.n_segments)

    def forward(
        self, x: Any, groups: Any, tau: Any = None, rng: Any = None
    ) -> P2POutput:
        """Classify ``x`` through a selection of its superpixels.

        Args:
            x: (B, 3, H, W) float images in [0, 1]. groups: (B, H, W) integer superpixel labels.
            tau: budgets, a float or (B,) in (0, 1] (required when ``dynamic``; ignored otherwise).
            rng: ``torch.Generator`` for the training-mode draws, or ``None``.

        Returns:
            :class:`P2POutput`.

        Raises:
            TypeError/ValueError: images outside [0, 1], groups of another shape or negative,
            ``tau`` outside (0, 1], missing ``tau`` in the dynamic variant.
        """
        x, g, t, G = self._prepare(x, groups, tau)
        gen = check_torch_generator(rng, "rng")
        return self._forward(x, self.predictor.features(x), g, t, G, gen)

    def _forward(self, x: Any, h: Any, g: Any, tau: Any, G: int, gen: Any) -> P2POutput:
        torch = _torch()
        emb = self.predictor.embed(h, tau if self.dynamic else None, x.shape[-2:])
        ge = _group_mean(emb, g, G)  # (B, D, G): \bar e_g
        mu = ge[:, 0]  # selection logits mu_g
        # (B, G, D - 1): rows u_g
        U = ge[:, 1:].transpose(1, 2) if self.use_cov else None
        probs = torch.sigmoid(mu)  # pi_g at the mean (regularised)
        cov = U @ U.transpose(1, 2) if self.use_cov else None
        if self.training:
            logits_l = _low_rank(mu, U, self.jitter, gen) if self.use_cov else mu
            m = _relaxed_bernoulli(logits_l, self.temperature, gen)
            if self.straight_through:
                m = (m > 0.5).to(m) - m.detach() + m
        else:
            m = (probs > 0.5).to(probs)  # hard selection at test time
        B, C, H, W = x.shape
        masked = superpixel.masked_fill(
            x.flatten(2), g.flatten(1), m, self.fill.to(x)
        ).view(B, C, H, W)
        return P2POutput(
            self.classifier(masked), probs, _groups_to_mask(g, m), m, cov, masked
        )

    def find_dynamic_threshold(
        self,
        x: Any,
        groups: Any,
        kappa: float = DEFAULTS.kappa,
        step: float = DEFAULTS.tau_step,
    ) -> tuple[Any, P2POutput]:
        """Per-instance budget: the smallest ``tau`` in ``step, 2 step, ..., 1`` at which the
        classifier's top softmax probability reaches ``kappa`` (``1`` if it never does), as the
        code's ``find_optimal_threshold``: an image, once confident, keeps its ``tau``.

        Runs in eval mode without gradients (hard masks); the trunk is evaluated once.

        Args:
            x: (B, 3, H, W) images in [0, 1]. groups: (B, H, W) labels.
            kappa: certainty threshold in (0, 1). step: grid step in (0, 1].

        Returns:
            ``(tau, out)``: (B,) budgets and the :class:`P2POutput` at those budgets.

        Raises:
            ValueError: ``kappa`` outside (0, 1), ``step`` outside (0, 1], a fixed-budget model.
        """
        if not self.dynamic:
            raise ValueError(
                "find_dynamic_threshold needs a dynamic P2P (dynamic=True)"
            )
        kappa = check_real(
            kappa, "kappa", low=0.0, low_open=True, high=1.0, high_open=True
        )
        step = check_real(step, "step", low=0.0, low_open=True, high=1.0)
        x, g, _, G = self._prepare(x, groups, 1.0)
        return self._search(x, g, G, kappa, step)

    def _search(
        self, x: Any, g: Any, G: int, kappa: float, step: float
    ) -> tuple[Any, P2POutput]:
        """Raise ``tau`` by ``step`` for the images whose ``max softmax < kappa``; freeze the others."""
        torch = _torch()
        was = self.training
        self.eval()
        with torch.no_grad():
            h = self.predictor.features(x)
            B = x.shape[0]
            # grid index of each tau
            k_img = torch.ones(B, dtype=torch.long, device=x.device)
            done = torch.zeros(B, dtype=torch.bool, device=x.device)
            K = max(1, int(math.ceil(1.0 / step - 1e-9)))
            for k in range(1, K + 1):
                k_img = torch.where(done, k_img, torch.full_like(k_img, k))
                tau = (k_img.to(x.dtype) * step).clamp(max=1.0)
                out = self._forward(x, h, g, tau, G, None)
                done = done | (torch.softmax(out.logits, 1).max(1).values >= kappa)
                if bool(done.all()):
                    break
        self.train(was)
        return tau, out


def _relaxed_bernoulli(logits: Any, temperature: float, gen: Any) -> Any:
    """``sigmoid((l + log u - log(1 - u)) / lambda)``, ``u ~ U(0, 1)``: torch's RelaxedBernoulli
    (the binary Concrete) with logits ``l``, reparameterised, drawn from ``gen``."""
    torch = _torch()
    u = torch.rand(
        logits.shape,
        generator=gen,
        device=gen.device if gen is not None else logits.device,
    )
    u = u.to(logits).clamp(1e-6, 1 - 1e-6)
    return torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / temperature)


def to_tensor(images: np.ndarray) -> Any:
    """(N, H, W, 3) float images in [0, 1] -> (N, 3, H, W) float32 torch tensor.

    Raises:
        TypeError/ValueError: as :func:`superpixels`' ``images``.
    """
    return _torch().as_tensor(_check_images(images)).permute(0, 3, 1, 2).contiguous()

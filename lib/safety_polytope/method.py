"""SaP's method: the concept encoder, the safety polytope and its loss, SafeFlow steering (Sec. 3-4).

A hidden state ``h`` is *safe* when its concept features ``E(h)`` satisfy every facet,
``v_k(h) = phi_k^T E(h) - xi_k < 0`` for ``k = 1..K``. The facets are learned from labelled
states (1 = safe, 0 = unsafe) with a hinge loss in which a safe state must clear *every* facet by
the margin ``m`` and an unsafe one only has to violate *one* (its assigned facet). At inference
SafeFlow moves a flagged state back inside with a small edit.

Boundary convention (kept from the public code, documented here): the detector and the training
use the strict ``v < 0`` (``cost < threshold``); the steering objective penalises ``[v]_+``, so a
state exactly on a facet (``v = 0``) counts as safe there (``<=``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
    check_torch_generator,
)
from icml25.kernels import polytope

from ._checks import _check_labels, _check_states

__all__ = [
    "ConceptEncoder",
    "SafetyPolytope",
    "fit_polytope",
    "steer_hidden",
    "project_linear_polytope",
    "entropy_bits",
]


class ConceptEncoder(nn.Module):
    """``E(h) = ReLU(W_e h + b_e)`` (``nonlinear=True``) or ``E = Id`` (a linear polytope).

    Xavier-uniform ``W_e`` and zero ``b_e``, as in the code's ``rand_init_phi_theta``.
    """

    def __init__(
        self, d: int, F: int, nonlinear: bool = True, rng: torch.Generator | None = None
    ) -> None:
        """Args: d: state dimension; F: feature width (ignored, = d, when linear); nonlinear:
        Linear+ReLU or identity; rng: ``torch.Generator`` of the init (``None``: torch's global one).

        Raises:
            ValueError: d or F < 1. TypeError: rng not a torch.Generator.
            TooLargeError: ``W_e`` (with Adam's state) cannot fit in memory.
        """
        super().__init__()
        self.d = check_int(d, "d", low=1)
        self.nonlinear = check_bool(nonlinear, "nonlinear")
        self.F = check_int(F, "F", low=1) if self.nonlinear else self.d
        rng = check_torch_generator(rng)
        if self.nonlinear:
            check_budget(
                f"ConceptEncoder(d={self.d}, F={self.F})",
                n_bytes=4.0 * 4 * (self.d + 1) * self.F,
            )
            self.linear = nn.Linear(self.d, self.F)
            # xavier_uniform_, drawn from rng
            bound = math.sqrt(6.0 / (self.d + self.F))
            with torch.no_grad():
                self.linear.weight.copy_(
                    (torch.rand(self.F, self.d, generator=rng) * 2 - 1) * bound
                )
                self.linear.bias.zero_()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """(N, d) states -> (N, F) concept features."""
        return torch.relu(self.linear(h)) if self.nonlinear else h


def entropy_bits(facets: torch.Tensor | np.ndarray, K: int) -> float:
    """``H(p) = -sum_k p_k log2 p_k`` of the facet assignment of unsafe samples (bits).

    ``p_k`` is the fraction of the given facet indices equal to ``k`` (the code's
    ``calculate_entropy``, a ``scatter_add`` of ones: an integer count, hence no gradient).

    Args:
        facets: (n,) integer facet indices in ``[0, K)`` of the unsafe samples.
        K: number of facets.

    Returns:
        entropy in bits, in ``[0, log2 K]`` (0 for no samples).

    Raises:
        ValueError: K < 1, facets not 1-D, or an index outside ``[0, K)``.
        TypeError: facets not integers (a float index such as 1.7 is refused, not truncated).
    """
    K = check_int(K, "K", low=1)
    f = check_array(
        facets.detach().cpu().numpy() if isinstance(facets, torch.Tensor) else facets,
        "facets",
        ndim=1,
        kind="int",
        dtype=np.int64,
    )
    if f.size and (f.min() < 0 or f.max() >= K):
        raise ValueError(
            f"facets must lie in [0, {K}), got range [{f.min()}, {f.max()}]"
        )
    return _entropy_bits(f, K)


def _entropy_bits(f: np.ndarray, K: int) -> float:
    if f.size == 0:
        return 0.0
    p = np.bincount(f, minlength=K) / f.size
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


class SafetyPolytope(nn.Module):
    """The safety polytope ``S = {h : phi_k^T E(h) < xi_k, k = 1..K}`` of SaP (Sec. 3).

    Parameters: the concept encoder ``E`` (:class:`ConceptEncoder`), facet normals ``phi``
    (K, F) and offsets ``xi`` (K,), both drawn ``N(0, 1)`` as in the code.
    """

    def __init__(
        self,
        d: int,
        K: int,
        F: int,
        margin: float = 1.0,
        unsafe_weight: float = 2.0,
        l1_feat: float = 0.1,
        l1_phi: float = 1e-4,
        entropy_weight: float = 1.0,
        nonlinear: bool = True,
        entropy_assignment: bool = True,
        entropy_threshold_frac: float = 0.5,
        max_attempts: int = 100,
        rng: torch.Generator | None = None,
    ) -> None:
        """Args: d state dimension; K facets (>= 1); F concept width; margin ``m >= 0``;
        unsafe_weight ``w_u >= 0``; l1_feat ``lambda_f``; l1_phi ``lambda_phi``; entropy_weight
        ``lambda_H``; nonlinear (ReLU encoder or ``E = Id``); entropy_assignment (the code's
        re-assignment heuristic, :meth:`assign_facets`); entropy_threshold_frac (re-assign while
        ``H < frac log2 K``); max_attempts (proposals per batch); rng (torch.Generator of the init).

        Raises:
            ValueError: K < 1, d or F < 1, a negative weight or margin. TypeError: bad rng.
            TooLargeError: the parameters (with Adam's state) cannot fit in memory.
        """
        super().__init__()
        self.K = check_int(K, "K", low=1)
        self.margin = check_real(margin, "margin", low=0.0)
        self.unsafe_weight = check_real(unsafe_weight, "unsafe_weight", low=0.0)
        self.l1_feat = check_real(l1_feat, "l1_feat", low=0.0)
        self.l1_phi = check_real(l1_phi, "l1_phi", low=0.0)
        self.entropy_weight = check_real(entropy_weight, "entropy_weight", low=0.0)
        self.entropy_assignment = check_bool(entropy_assignment, "entropy_assignment")
        self.entropy_threshold_frac = check_real(
            entropy_threshold_frac, "entropy_threshold_frac", low=0.0, high=1.0
        )
        self.max_attempts = check_int(max_attempts, "max_attempts", low=0)
        rng = check_torch_generator(rng)
        width = (
            check_int(F, "F", low=1)
            if check_bool(nonlinear, "nonlinear")
            else check_int(d, "d", low=1)
        )
        check_budget(
            f"SafetyPolytope(K={self.K}, F={width})",
            n_bytes=4.0 * 4 * (self.K + 1) * width,
        )
        self.encoder = ConceptEncoder(d, F, nonlinear, rng)
        self.d, self.F = self.encoder.d, self.encoder.F
        self.phi = nn.Parameter(torch.randn(self.K, self.F, generator=rng))
        self.xi = nn.Parameter(torch.randn(self.K, generator=rng))
        self.history: dict[str, list[float]] = {}

    # -- detector ----------------------------------------------------------------------
    def violations(self, h: torch.Tensor | np.ndarray) -> torch.Tensor:
        """``v_k(h) = phi_k^T E(h) - xi_k``: (N, d) states -> (N, K) float32 (positive = outside).

        Raises:
            ValueError: h not (N, d) with this polytope's d, or non-finite (NaN) states.
        """
        return _violations(self, _check_states(h, "h", self.d))

    def is_safe(self, h: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Detector: ``max_k v_k(h) < 0`` (strict, as training). (N, d) -> (N,) bool.

        Raises: as :meth:`violations`.
        """
        with torch.no_grad():
            return (self.violations(h) < 0).all(dim=1)

    def facet_of(self, h: torch.Tensor | np.ndarray) -> torch.Tensor:
        """The most violated facet ``argmax_k v_k(h)`` of each state: (N, d) -> (N,) int64.

        Raises: as :meth:`violations`.
        """
        with torch.no_grad():
            return self.violations(h).argmax(dim=1)

    def steer_terms(
        self, x: torch.Tensor, inner_margin: float = 0.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-row ``(sum_k v_k(x), sum_k [v_k(x) + inner_margin]_+)`` for :func:`steer_hidden`
        (parameters detached; ``x`` keeps its graph). Trusts its arguments."""
        return _steer_terms(self, x, inner_margin)

    # -- training ----------------------------------------------------------------------
    def assign_facets(
        self, v: torch.Tensor, y: torch.Tensor, rng: np.random.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, float, int]:
        """The facet each unsafe sample must violate: argmax, then the code's entropy re-assignment.

        Start from ``k*(i) = argmax_k v_ik``. While ``H(p) < frac log2 K`` and fewer than
        ``max_attempts`` proposals: pick a random unsafe sample, propose another facet among those
        it violates (``v > 0``, the code's ``valid_edges_threshold = 0``; the runner-up when it
        violates at most one), keep it only if ``H`` increases. So ``H`` never decreases.

        Args:
            v: (N, K) violations (detached inside). y: (N,) labels in {0, 1}.
            rng: numpy Generator of the proposals.

        Returns:
            ``(v_assigned (N,), facets (N,) int64, H in bits over unsafe rows, n_reassigned)``.

        Raises:
            ValueError: shapes do not match; NaN or inf violations; labels outside {0, 1}. TypeError: rng.
        """
        rng = check_rng(rng)
        if not isinstance(v, torch.Tensor) or v.ndim != 2 or v.shape[1] != self.K:
            raise ValueError(f"v must be an (N, {self.K}) tensor of violations")
        if not bool(torch.isfinite(v).all()):
            raise ValueError(
                "v must be finite (it holds NaN or inf): violations of NaN states have no argmax"
            )
        y = _check_labels(y, v.shape[0], both=False)
        return _assign_facets(
            v,
            y,
            self.K,
            self.entropy_assignment,
            self.entropy_threshold_frac,
            self.max_attempts,
            rng,
        )

    def loss(
        self, h: torch.Tensor | np.ndarray, y: Any, rng: np.random.Generator
    ) -> tuple[torch.Tensor, dict]:
        """SaP's training loss on a batch (sum reduction, as the code's default).

        ``L = sum_{y=1} sum_k [m + v_k]_+ + w_u sum_{y=0} [m - v_{k*(i)}]_+ + lambda_f mean ||E(h)||_1
        + lambda_phi mean_k ||phi_k||_1 - lambda_H H(p)``, with ``k*`` from :meth:`assign_facets`.
        ``H(p)`` is computed from integer facet counts, so it carries **no gradient**: it acts only
        through the re-assignment, and its term shifts the loss value by a constant (as in the code).

        Args:
            h: (N, d) states. y: (N,) labels in {0, 1} (1 = safe). rng: numpy Generator.

        Returns:
            ``(loss (scalar tensor with grad), info)``, info holding ``entropy`` (bits) and
            ``n_reassigned``.

        Raises:
            ValueError: wrong d, NaN states, labels outside {0, 1}. TypeError: rng.
        """
        h = _check_states(h, "h", self.d)
        y = _check_labels(y, h.shape[0], both=False)
        return _sap_loss(self, h, y, check_rng(rng))


def _violations(poly: SafetyPolytope, h: torch.Tensor) -> torch.Tensor:
    """``v = E(h) Phi^T - xi`` (Sec. 3; ``xi`` is the code's ``threshold``)."""
    return poly.encoder(h) @ poly.phi.T - poly.xi


def _assign_facets(
    v: torch.Tensor,
    y: torch.Tensor,
    K: int,
    enabled: bool,
    frac: float,
    max_attempts: int,
    rng: np.random.Generator,
) -> tuple[torch.Tensor, torch.Tensor, float, int]:
    """Argmax facet, then re-assign random unsafe samples while it raises ``H`` (the code's
    ``violation_entropy_assignment``, with a NumPy generator for the proposals)."""
    vd = v.detach()
    best_v, facets = vd.max(dim=1)
    facets = facets.clone()
    unsafe = torch.nonzero(y == 0).flatten().numpy()
    f_np = facets.numpy().copy()
    H = _entropy_bits(f_np[unsafe], K)
    n_reassigned = 0
    if enabled and K > 1 and unsafe.size:
        threshold = frac * math.log2(K)
        attempts = 0
        while H < threshold and attempts < max_attempts:
            i = int(unsafe[rng.integers(unsafe.size)])
            order = torch.argsort(vd[i], descending=True).numpy()
            valid = order[vd[i, order].numpy() > 0]  # facets this sample violates
            k = (
                int(order[1])
                if valid.size <= 1
                else int(valid[rng.integers(1, valid.size)])
            )
            old = f_np[i]
            f_np[i] = k
            H_new = _entropy_bits(f_np[unsafe], K)
            if H_new > H:
                H, n_reassigned = H_new, n_reassigned + 1
            else:
                f_np[i] = old
            attempts += 1
    facets = torch.from_numpy(f_np)
    return v.gather(1, facets[:, None]).squeeze(1), facets, H, n_reassigned


def _sap_loss(
    poly: SafetyPolytope, h: torch.Tensor, y: torch.Tensor, rng: np.random.Generator
) -> tuple[torch.Tensor, dict]:
    """``sum_safe sum_k [m + v_k]_+ + w_u sum_unsafe [m - v_k*]_+ + lambda_f mean|E|_1
    + lambda_phi mean|phi_k|_1 - lambda_H H`` (Sec. 3; ``H`` a constant: no gradient)."""
    feats = poly.encoder(h)
    v = feats @ poly.phi.T - poly.xi
    v_star, _, H, n_re = _assign_facets(
        v,
        y,
        poly.K,
        poly.entropy_assignment,
        poly.entropy_threshold_frac,
        poly.max_attempts,
        rng,
    )
    # every facet, by the margin
    safe = torch.relu(poly.margin + v).sum(dim=1)[y == 1].sum()
    unsafe = torch.relu(poly.margin - v_star)[y == 0].sum()  # the assigned facet only
    l1 = (
        poly.l1_feat * feats.abs().sum(dim=1).mean()
        + poly.l1_phi * poly.phi.abs().sum(dim=1).mean()
    )
    loss = safe + poly.unsafe_weight * unsafe + l1 - poly.entropy_weight * H
    return loss, {"entropy": H, "n_reassigned": n_re}


def fit_polytope(
    h: Any,
    y: Any,
    K: int,
    epochs: int,
    *,
    rng: np.random.Generator,
    lr: float = 1e-2,
    batch: int = 128,
    F: int = 1024,
    nonlinear: bool = True,
    margin: float = 1.0,
    unsafe_weight: float = 2.0,
    l1_feat: float = 0.1,
    l1_phi: float = 1e-4,
    entropy_weight: float = 1.0,
    entropy_assignment: bool = True,
) -> SafetyPolytope:
    """Train a :class:`SafetyPolytope` with Adam on shuffled mini-batches (the code's ``learn_polytope``).

    The loss is not monotone over epochs (mini-batches, re-assignment), so the parameters of the
    epoch with the lowest full-data hinge loss (the loss without the constant ``-lambda_H H``) are
    returned, not the last ones. ``poly.history`` holds per-epoch ``loss``, ``entropy`` and
    ``n_reassigned``.

    Args:
        h: (N, d) float states. y: (N,) labels in {0, 1}, both present (1 = safe).
        K: facets (>= 1). epochs: passes over the data (>= 1).
        rng: numpy Generator (init, shuffling, re-assignment proposals).
        lr, batch: Adam step size, batch size. Other keywords: see :class:`SafetyPolytope`.

    Returns:
        the fitted polytope (eval mode).

    Raises:
        ValueError: labels outside {0, 1}, one class only, K < 1, NaN states, bad sizes.
        TypeError: rng not a numpy Generator.
        TooLargeError: N, F, K or epochs too large for memory or hours of compute (refused up front).
    """
    rng = check_rng(rng)
    h = _check_states(h, "h")
    y = _check_labels(y, h.shape[0])
    K = check_int(K, "K", low=1)
    epochs = check_int(epochs, "epochs", low=1)
    batch = check_int(batch, "batch", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    width = (
        check_int(F, "F", low=1) if check_bool(nonlinear, "nonlinear") else h.shape[1]
    )
    check_budget(
        f"fit_polytope(N={h.shape[0]}, F={width}, K={K})",  # the full-data score each epoch
        n_bytes=4.0 * 3 * h.shape[0] * (width + K),
        n_operations=2.0 * epochs * h.shape[0] * (h.shape[1] + K) * width,
    )
    tg = torch.Generator().manual_seed(int(rng.integers(2**62)))
    poly = SafetyPolytope(
        h.shape[1],
        K,
        F,
        margin,
        unsafe_weight,
        l1_feat,
        l1_phi,
        entropy_weight,
        nonlinear,
        entropy_assignment,
        rng=tg,
    )
    return _fit(poly, h, y, epochs, lr, batch, rng)


def _fit(
    poly: SafetyPolytope,
    h: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    lr: float,
    batch: int,
    rng: np.random.Generator,
) -> SafetyPolytope:
    opt = torch.optim.Adam(poly.parameters(), lr=lr)
    hist: dict[str, list[float]] = {"loss": [], "entropy": [], "n_reassigned": []}
    best, best_state = math.inf, None
    N = h.shape[0]
    for _ in range(epochs):
        perm = torch.from_numpy(rng.permutation(N))
        n_re = 0
        for s in range(0, N, batch):
            idx = perm[s : s + batch]
            loss, info = _sap_loss(poly, h[idx], y[idx], rng)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n_re += info["n_reassigned"]
        with torch.no_grad():
            # fixed proposals: a comparable score
            full, info = _sap_loss(poly, h, y, np.random.default_rng(0))
            score = float(full) + poly.entropy_weight * info["entropy"]
        hist["loss"].append(score)
        hist["entropy"].append(info["entropy"])
        hist["n_reassigned"].append(n_re)
        if score < best:
            best, best_state = (
                score,
                {k: v.clone() for k, v in poly.state_dict().items()},
            )
    poly.load_state_dict(best_state)
    poly.history = hist
    return poly.eval()


# -- SafeFlow steering (Algorithm 1) ---------------------------------------------------


def steer_hidden(
    h: Any,
    polytope: Any,
    lam: float = 2.0,
    mu: float = 1e-4,
    lr: float = 1e-2,
    n_steps: int = 1,
    dist: str = "l1",
    inner_margin: float = 0.0,
) -> tuple[torch.Tensor, dict]:
    """SafeFlow: move each flagged state back towards the safe set with SGD (Algorithm 1).

    For every row the detector flags (``polytope.is_safe`` False), minimise
    ``(1/d) dist(h', h) + lam sum_k [v_k(h') + inner_margin]_+ + mu sum_k v_k(h')`` over ``h'``
    with ``n_steps`` SGD steps of size ``lr`` from ``h' = h`` (the code: ``dist = ||.||_1``,
    ``inner_margin = 0``, one step). ``dist="l2"`` uses ``||h' - h||_2`` (the code's commented
    alternative); ``inner_margin > 0`` aims ``inner_margin`` inside the facets (our option).
    Runs in float32; a row batch whose loss turns non-finite is reset to ``h`` (as the code).
    Works for a :class:`SafetyPolytope` or a :class:`~icml25.safety_polytope.BaselineMLP`
    (anything with ``steer_terms`` and ``is_safe``).

    Args:
        h: (N, d) states. polytope: the detector. lam, mu: penalty weights (>= 0). lr: SGD step
        (> 0). n_steps: iterations (>= 1). dist: ``"l1"`` or ``"l2"``. inner_margin: >= 0.

    Returns:
        ``(h_new (N, d) float32, info)``; info: ``flagged`` (N,) bool, ``inside`` (N,) bool after
        steering (penalty-free, i.e. all ``v + inner_margin <= 0``), ``shift_l1`` (N,), ``reset`` bool.

    Raises:
        RuntimeError: called under ``torch.inference_mode`` (the code silently returned the input
            there, which disables steering: we refuse instead).
        ValueError / TypeError: bad arguments, wrong d, NaN states.
    """
    if torch.is_inference_mode_enabled():
        raise RuntimeError(
            "steer_hidden needs autograd: it cannot run under torch.inference_mode "
            "(use torch.no_grad, which it overrides, or nothing)"
        )
    if not hasattr(polytope, "steer_terms") or not hasattr(polytope, "is_safe"):
        raise TypeError(
            f"polytope must be a SafetyPolytope or BaselineMLP, got {type(polytope).__name__}"
        )
    h = _check_states(h, "h", polytope.d)
    lam = check_real(lam, "lam", low=0.0)
    mu = check_real(mu, "mu", low=0.0)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    n_steps = check_int(n_steps, "n_steps", low=1)
    dist = check_choice(dist, "dist", ("l1", "l2"))
    inner_margin = check_real(inner_margin, "inner_margin", low=0.0)
    return _safeflow(h, polytope, lam, mu, lr, n_steps, dist, inner_margin)


def _steer_terms(
    poly: SafetyPolytope, x: torch.Tensor, inner_margin: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum_k v_k(x), sum_k [v_k(x) + inner_margin]_+)`` per row, parameters detached."""
    E = poly.encoder
    feats = (
        torch.relu(x @ E.linear.weight.detach().T + E.linear.bias.detach())
        if E.nonlinear
        else x
    )
    v = feats @ poly.phi.detach().T - poly.xi.detach()
    return v.sum(dim=1), torch.relu(v + inner_margin).sum(dim=1)


def _safeflow(
    h: torch.Tensor,
    poly: Any,
    lam: float,
    mu: float,
    lr: float,
    n_steps: int,
    dist: str,
    inner_margin: float,
) -> tuple[torch.Tensor, dict]:
    """SGD on ``(1/d) dist(h', h) + lam sum_k [v_k(h') + margin]_+ + mu sum_k v_k(h')`` (Alg. 1)."""
    h = h.float()
    with torch.no_grad():
        flagged = ~poly.is_safe(h)
    out = h.clone()
    reset = False
    idx = torch.nonzero(flagged).flatten()
    if idx.numel():
        h0 = h[idx].detach()
        x = h0.clone().requires_grad_(True)
        opt = torch.optim.SGD([x], lr=lr)
        d = h.shape[1]
        with torch.enable_grad():
            for _ in range(n_steps):
                opt.zero_grad()
                diff = x - h0
                gap = (
                    diff.abs().sum()
                    if dist == "l1"
                    else torch.sqrt((diff * diff).sum(dim=1) + 1e-12).sum()
                )
                v_sum, pen = poly.steer_terms(x, inner_margin)
                loss = gap / d + lam * pen.sum() + mu * v_sum.sum()
                if not torch.isfinite(loss):
                    with torch.no_grad():
                        x.copy_(h0)
                    reset = True
                    break
                loss.backward()
                opt.step()
        out[idx] = x.detach()
    with torch.no_grad():
        _, pen_after = poly.steer_terms(out, inner_margin)
    return out, {
        "flagged": flagged,
        "inside": pen_after <= 0,
        "shift_l1": (out - h).abs().sum(dim=1),
        "reset": reset,
    }


def project_linear_polytope(
    h: Any, Phi: Any, xi: Any, n_sweeps: int = 200
) -> np.ndarray:
    """Exact Euclidean projection of each row of ``h`` onto ``{x : Phi x <= xi}`` (``E = Id``).

    ``argmin_{x : Phi x <= xi} ||x - h||_2``, by cyclic Dykstra over the K half-spaces
    (:func:`icml25.kernels.polytope.dykstra_project`; CUDA on a GPU). For ``K = 1`` it equals the
    closed form ``h - [phi^T h - xi]_+ phi / ||phi||^2``. The reference SafeFlow cannot beat.

    Args:
        h: (N, d) points. Phi: (K, d) facet normals. xi: (K,) offsets. n_sweeps: Dykstra sweeps.

    Returns:
        (N, d) float64 projections.

    Raises:
        ValueError / TypeError: naming the bad argument (wrong d, zero facet, NaN); ValueError when
        the polytope is empty (checked by a linear program). TooLargeError: sizes beyond memory/compute.
    """
    if isinstance(h, torch.Tensor):
        h = h.detach().cpu().numpy()
    if isinstance(Phi, torch.Tensor):
        Phi = Phi.detach().cpu().numpy()
    if isinstance(xi, torch.Tensor):
        xi = xi.detach().cpu().numpy()
    # validates h, Phi, xi, n_sweeps first
    out = polytope.dykstra_project(h, Phi, xi, n_sweeps)
    _check_nonempty(np.asarray(Phi, dtype=np.float64), np.asarray(xi, dtype=np.float64))
    return out


def _check_nonempty(Phi: np.ndarray, xi: np.ndarray) -> None:
    """Raise when ``{x : Phi x <= xi}`` is empty: Dykstra then cycles and returns no projection."""
    from scipy.optimize import linprog

    res = linprog(
        np.zeros(Phi.shape[1]), A_ub=Phi, b_ub=xi, bounds=(None, None), method="highs"
    )
    if res.status == 2:
        raise ValueError(
            "Phi, xi: the polytope {x : Phi x <= xi} is empty (its half-spaces do not intersect), "
            "so there is no projection"
        )

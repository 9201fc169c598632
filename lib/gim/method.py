"""The generative intervention model: an SCM learned jointly with a map gamma -> p(I, psi | gamma).

**What is verified** (abstract, introduction, a reading note of Secs. 3.1-3.3): observed
perturbation features ``gamma`` are mapped to a *distribution over atomic interventions* (latent
targets ``I`` and parameters ``psi``) in a causal model that is estimated jointly; prediction for an
unseen ``gamma`` uses a MAP approximation. **What is reconstructed** (the paper's equations and its
code ``NoraSchneider/gim`` could not be read here; every choice below is the chapter's own):

- the causal model: a linear-Gaussian SCM ``x = x W + b + sigma eps`` (or one MLP per node on
  masked parents), with NOTEARS' acyclicity ``h(W) = tr exp(W o W) - d`` in an augmented
  Lagrangian and an l1 penalty;
- the intervention family: a shift ``x_j += I_j psi_j`` on the targets (all cells of a context
  share one draw);
- the GIM: ``p_phi(I, psi | gamma) = prod_j Bern(I_j; sigmoid(g_phi(gamma)_j)) N(psi_j; m_phi(gamma)_j, s_j^2)``,
  two heads on a shared 2-layer ReLU trunk;
- the objective, ``mode="mc"``: ``log p(D0) + sum_k log (1/S) sum_s prod_i p(x_ki | I_s, psi_s)``,
  ``(I_s, psi_s) ~ p_phi(. | gamma_k)`` with a Gumbel-sigmoid relaxation of ``I`` (an IWAE-style
  bound), minus ``lamI`` per expected target; ``mode="map"``: per-context point estimates
  ``(I_k, psi_k)`` (relaxed Bernoulli logits and shifts) scored by the likelihood plus
  ``log p_phi(I_k, psi_k | gamma_k)``; ``mode="free"``: the same without the GIM term (the first
  stage of the two-stage baseline).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_real,
    check_rng,
)
from icml25.kernels import gim_kernels

from ._checks import _check_contexts, _check_gammas, _topological_order

__all__ = ["notears_h", "prune_to_dag", "SCMModule", "GIMNet", "GIM"]


def _torch_gen(
    rng: np.random.Generator | None, device: str = "cpu"
) -> torch.Generator | None:
    if rng is None:
        return None
    return torch.Generator(device=device).manual_seed(
        int(check_rng(rng).integers(2**62))
    )


def notears_h(W: Any) -> float:
    """NOTEARS' acyclicity function ``h(W) = tr exp(W o W) - d`` (Zheng et al. 2018); 0 iff a DAG.

    Args:
        W: (d, d) real weighted adjacency.

    Returns:
        ``h >= 0`` as a float.

    Raises:
        ValueError: not square or not finite.
    """
    import scipy.linalg

    W = check_array(W, "W", ndim=2, dtype=np.float64)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square, got shape {W.shape}")
    return float(np.trace(scipy.linalg.expm(W * W)) - W.shape[0])


def _h_torch(A: torch.Tensor) -> torch.Tensor:
    """``tr exp(A o A) - d`` (differentiable)."""
    return torch.linalg.matrix_exp(A * A).diagonal().sum() - A.shape[0]


def prune_to_dag(A: Any, threshold: float) -> np.ndarray:
    """``|A| > threshold`` as a boolean graph, then the weakest edge of a cycle removed until acyclic.

    Args:
        A: (d, d) weighted adjacency (edge i -> j at ``A[i, j]``). threshold: in ``(0, 1)``... any
            value > 0 (the read-out's cut).

    Returns:
        (d, d) bool adjacency of a DAG.

    Raises:
        ValueError: ``A`` not square or not finite, ``threshold <= 0``.
    """
    A = np.abs(check_array(A, "A", ndim=2, dtype=np.float64))
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    threshold = check_positive(threshold, "threshold")
    return _prune(A, threshold)


def _prune(A: np.ndarray, threshold: float) -> np.ndarray:
    G = A > threshold
    np.fill_diagonal(G, False)
    while _topological_order(G) is None:  # drop the weakest edge still present
        w = np.where(G, A, np.inf)
        i, j = np.unravel_index(np.argmin(w), w.shape)
        G[i, j] = False
    return G


class SCMModule(nn.Module):
    """The learned causal model ``x_j = f_j(x_pa(j)) + b_j + sigma_j eps_j (+ I_j psi_j)``
    (a reconstruction: additive-noise Gaussian SCM with shift interventions; the paper's
    likelihood could not be read).

    ``kind="linear"``: ``f(x) = x W`` with a zero diagonal. ``kind="mlp"``: for node ``j`` a
    one-hidden-layer sigmoid MLP on all inputs, whose first-layer column norms are the adjacency
    (NOTEARS-MLP's construction). Parameters are float64.

    Args:
        d: variables, >= 2. kind: ``"linear"`` or ``"mlp"``. hidden: MLP width.
        rng: initialises the MLP weights (``None``: torch's global generator).
        mask: (d, d) 0/1 known graph (edges allowed only where 1), or ``None`` (learned graph).
    """

    def __init__(
        self,
        d: int,
        kind: str = "linear",
        hidden: int = 8,
        rng: np.random.Generator | None = None,
        mask: Any = None,
    ) -> None:
        super().__init__()
        self.d = check_int(d, "d", low=2)
        self.kind = check_choice(kind, "kind", ("linear", "mlp"))
        hidden = check_int(hidden, "hidden", low=1)
        g = _torch_gen(rng)
        dt = torch.float64
        allowed = (
            np.ones((self.d, self.d))
            if mask is None
            else check_array(
                np.asarray(mask, dtype=float),
                "mask",
                shape=(self.d, self.d),
                low=0.0,
                high=1.0,
            )
        )
        self.register_buffer(
            "offdiag",
            (1.0 - torch.eye(self.d, dtype=dt)) * torch.as_tensor(allowed, dtype=dt),
        )
        if self.kind == "linear":
            self.W = nn.Parameter(torch.zeros(self.d, self.d, dtype=dt))
        else:
            # (node, h, input)
            self.fc1 = nn.Parameter(
                0.1 * torch.randn(self.d, hidden, self.d, generator=g, dtype=dt)
            )
            self.b1 = nn.Parameter(torch.zeros(self.d, hidden, dtype=dt))
            self.v = nn.Parameter(
                0.1 * torch.randn(self.d, hidden, generator=g, dtype=dt)
            )
        self.b = nn.Parameter(torch.zeros(self.d, dtype=dt))
        self.log_sigma = nn.Parameter(torch.zeros(self.d, dtype=dt))

    def adjacency(self) -> torch.Tensor:
        """(d, d) nonnegative-or-signed weights of the edges ``i -> j`` (``W`` or MLP column norms)."""
        if self.kind == "linear":
            return self.W * self.offdiag
        # [input i, node j]
        return torch.sqrt((self.fc1**2).sum(1) + 1e-12).T * self.offdiag

    def mean_fn(
        self, X: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``f(X) + b`` for cells ``X (..., d)``; ``mask (d, d)`` keeps only edges where it is 1."""
        M = self.offdiag if mask is None else self.offdiag * mask
        if self.kind == "linear":
            return X @ (self.W * M) + self.b
        Xe = X[..., None, :] * M.T  # (..., node, input)
        # (..., node, h)
        H = torch.sigmoid((Xe[..., None, :] * self.fc1).sum(-1) + self.b1)
        return (H * self.v).sum(-1) + self.b

    def sigma(self) -> torch.Tensor:
        """(d,) noise scales."""
        return torch.exp(self.log_sigma)

    def log_prob(self, X: Any, I: Any, psi: Any) -> torch.Tensor:
        """``log p(D_k | I_ks, psi_ks) = sum_i sum_j log N(x_kij - f_j(x_ki) - I_ksj psi_ksj; 0, sigma_j^2)``.

        No log-determinant: the Jacobian of ``x -> x - f(x)`` is unit-triangular on a DAG. The
        per-context sums go through the kernel dispatcher :func:`icml25.kernels.gim_kernels.context_loglik`.

        Args:
            X: (K, n, d) cells. I, psi: (K, S, d) targets (in [0, 1], relaxed) and shifts; every
                cell of context ``k`` shares sample ``s``.

        Returns:
            (K, S) float64 tensor, differentiable.

        Raises:
            ValueError: shapes that disagree (``X``, ``I``, ``psi``), non-finite values, or ``I`` outside
                [0, 1].
        """
        X = (
            torch.as_tensor(_check_contexts(X, "X", d=self.d))
            if not isinstance(X, torch.Tensor)
            else X
        )
        if X.ndim != 3 or X.shape[2] != self.d:
            raise ValueError(
                f"X must have shape (K, n, {self.d}), got shape {tuple(X.shape)}"
            )
        I, psi = (
            torch.as_tensor(I, dtype=torch.float64),
            torch.as_tensor(psi, dtype=torch.float64),
        )
        for name, t in (("I", I), ("psi", psi)):
            if t.ndim != 3 or t.shape[0] != X.shape[0] or t.shape[2] != self.d:
                raise ValueError(
                    f"{name} must have shape ({X.shape[0]}, S, {self.d}), got shape {tuple(t.shape)}"
                )
        if I.shape != psi.shape:
            raise ValueError(
                f"I and psi must have one shape, got {tuple(I.shape)} and {tuple(psi.shape)}"
            )
        for name, t in (("X", X), ("I", I), ("psi", psi)):
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} must be finite (no NaN or inf)")
        if bool(((I < 0) | (I > 1)).any()):
            raise ValueError("I must lie in [0, 1] (a relaxed or 0/1 target indicator)")
        return self._log_prob(X.to(torch.float64), I * psi)

    def _log_prob(self, X: torch.Tensor | tuple, shift: torch.Tensor) -> torch.Tensor:
        """``X`` is the cells ``(K, n, d)`` or, for the linear SCM, their :func:`_moments`."""
        SR, SR2, n = self._residual_sums(X)
        return gim_kernels.context_loglik(SR, SR2, shift, self.sigma(), n)

    def _residual_sums(
        self, X: torch.Tensor | tuple
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """``(sum_i R, sum_i R^2, n)`` per context, ``R = x - f(x)``. From the moments of a linear
        SCM: with ``A = I_d - W``, ``sum_i R_j = n ((xbar A)_j - b_j)`` and
        ``sum_i R_j^2 = A_j^T M A_j - 2 n b_j (xbar A)_j + n b_j^2``, ``M = sum_i x_i x_i^T``."""
        if isinstance(X, tuple):  # linear SCM, moments (n, xbar, M)
            n, xbar, M = X
            A = (
                torch.eye(self.d, dtype=torch.float64, device=self.W.device)
                - self.W * self.offdiag
            )
            xa = xbar @ A  # (K, d)
            SR2 = (
                torch.einsum("kab,aj,bj->kj", M, A, A)
                - 2.0 * n * self.b * xa
                + n * self.b**2
            )
            return n * (xa - self.b), SR2, n
        R = X - self.mean_fn(X)  # residuals, (K, n, d)
        return R.sum(1), (R * R).sum(1), X.shape[1]

    @torch.no_grad()
    def sample(
        self, n: int, I: Any, psi: Any, rng: np.random.Generator, graph: Any
    ) -> np.ndarray:
        """``n`` cells for each of ``B`` interventions by ancestral sampling on the DAG ``graph``.

        Args:
            n: cells per intervention. I, psi: (B, d) targets (0/1) and shifts. rng: the generator.
            graph: (d, d) bool DAG (:meth:`GIM.graph`); edges outside it are dropped.

        Returns:
            (B, n, d) float64.
        """
        n = check_int(n, "n", low=1)
        rng = check_rng(rng)
        I = check_array(np.asarray(I, dtype=float), "I", ndim=2, low=0.0, high=1.0)
        psi = check_array(psi, "psi", shape=I.shape)
        order = _topological_order(np.asarray(graph))
        if order is None:
            raise ValueError("graph has a directed cycle")
        mask = torch.as_tensor(np.asarray(graph, dtype=float))
        eps = torch.as_tensor(rng.standard_normal((I.shape[0], n, self.d)))
        noise = eps * self.sigma() + torch.as_tensor(I * psi)[:, None, :]
        Xs = torch.zeros_like(noise)
        for j in order:
            Xs[..., j] = self.mean_fn(Xs, mask)[..., j] + noise[..., j]
        return Xs.numpy()


class GIMNet(nn.Module):
    """``gamma -> (target_logits, shift_mean)``, two linear heads on a 2-layer ReLU trunk (reconstruction).

    Inputs are standardised with the training features' mean and scale (set by :meth:`GIM.fit`).
    A learned per-variable ``log_s`` is the scale of ``psi`` around ``shift_mean``.

    Args:
        q: feature dimension. d: variables. hidden: trunk width. rng: initialisation (``None``:
            torch's global generator).
    """

    def __init__(
        self, q: int, d: int, hidden: int = 64, rng: np.random.Generator | None = None
    ) -> None:
        super().__init__()
        self.q, self.d = check_int(q, "q", low=1), check_int(d, "d", low=1)
        hidden = check_int(hidden, "hidden", low=1)
        if rng is not None:
            torch.manual_seed(int(check_rng(rng).integers(2**62)))
        self.trunk = nn.Sequential(
            nn.Linear(q, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        ).double()
        self.head_targets = nn.Linear(hidden, d).double()
        self.head_shift = nn.Linear(hidden, d).double()
        self.log_s = nn.Parameter(torch.full((d,), math.log(0.1), dtype=torch.float64))
        self.register_buffer("loc", torch.zeros(q, dtype=torch.float64))
        self.register_buffer("scale", torch.ones(q, dtype=torch.float64))

    def forward(self, gamma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(target_logits, shift_mean)``, each ``(B, d)``, for features ``gamma (B, q)`` float64.

        Raises:
            ValueError: ``gamma`` not a ``(B, q)`` tensor.
        """
        if (
            not isinstance(gamma, torch.Tensor)
            or gamma.ndim != 2
            or gamma.shape[1] != self.q
        ):
            shape = (
                tuple(gamma.shape) if hasattr(gamma, "shape") else type(gamma).__name__
            )
            raise ValueError(f"gamma must be a (B, {self.q}) tensor, got {shape}")
        hdn = self.trunk((gamma - self.loc) / self.scale)
        return self.head_targets(hdn), self.head_shift(hdn)


def _moments(X: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """``(n, xbar (K, d), M (K, d, d))`` of cells ``X (K, n, d)``: all a linear-Gaussian SCM needs."""
    return X.shape[1], X.mean(1), torch.einsum("kni,knj->kij", X, X)


def _relaxed_bernoulli(
    logits: torch.Tensor, S: int, tau: float, g: torch.Generator | None
) -> torch.Tensor:
    """Gumbel-sigmoid samples ``sigmoid((logits + log U - log(1 - U)) / tau)``, shape ``(K, S, d)``."""
    U = torch.rand(
        (logits.shape[0], S, logits.shape[1]),
        generator=g,
        dtype=logits.dtype,
        device=logits.device,
    ).clamp(1e-6, 1 - 1e-6)
    return torch.sigmoid((logits[:, None, :] + torch.log(U) - torch.log1p(-U)) / tau)


def _mc_objective(
    scm: SCMModule,
    net: GIMNet,
    X: torch.Tensor,
    G: torch.Tensor,
    S: int,
    tau: float,
    g: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``sum_k log (1/S) sum_s p(D_k | I_s, psi_s)`` with ``(I_s, psi_s) ~ p_phi(. | gamma_k)`` relaxed.

    Returns the bound summed over contexts and the target probabilities ``sigmoid(g_phi)`` (K, d).
    """
    logits, m = net(G)
    I = _relaxed_bernoulli(logits, S, tau, g)  # (K, S, d)
    eps = torch.randn(I.shape, generator=g, dtype=I.dtype, device=I.device)
    psi = m[:, None, :] + torch.exp(net.log_s) * eps  # psi ~ N(m, s^2)
    ll = scm._log_prob(X, I * psi)  # (K, S)
    return (torch.logsumexp(ll, dim=1) - math.log(S)).sum(), torch.sigmoid(logits)


def _map_objective(
    scm: SCMModule,
    net: GIMNet | None,
    X: torch.Tensor,
    G: torch.Tensor | None,
    ell: torch.Tensor,
    psi: torch.Tensor,
    S: int,
    tau: float,
    g: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``sum_k E_relaxed[log p(D_k | I_k, psi_k)] + log p_phi(I_k, psi_k | gamma_k)`` at point
    estimates ``(sigmoid(ell_k), psi_k)``; the GIM term is left out when ``net`` is ``None``."""
    I = _relaxed_bernoulli(ell, S, tau, g)
    fit = scm._log_prob(X, I * psi[:, None, :]).mean(1).sum()
    pi_k = torch.sigmoid(ell)
    if net is None:
        return fit, pi_k
    logits, m = net(G)
    s = torch.exp(net.log_s)
    bern = pi_k * nn.functional.logsigmoid(logits) + (
        1 - pi_k
    ) * nn.functional.logsigmoid(-logits)
    gauss = -0.5 * ((psi - m) / s) ** 2 - torch.log(s) - 0.5 * math.log(2 * math.pi)
    return fit + bern.sum() + (pi_k * gauss).sum(), pi_k


def _posterior(
    logits: torch.Tensor,
    m: torch.Tensor,
    s: torch.Tensor,
    sigma: torch.Tensor,
    SR: torch.Tensor,
    n: int,
) -> torch.Tensor:
    """``sigmoid(g + log BF)``, ``log BF = b^2/(2a) - m^2/(2 s^2) - log(a s^2)/2`` (see
    :meth:`GIM.posterior_target_probs`)."""
    a = n / sigma**2 + 1.0 / s**2
    b = SR / sigma**2 + m / s**2
    log_bf = b**2 / (2 * a) - m**2 / (2 * s**2) - 0.5 * torch.log(a * s**2)
    return torch.sigmoid(logits + log_bf)


class GIM:
    """A generative intervention model: the SCM ``scm`` and the feature map ``net``, fit jointly.

    The paper's setting (features -> a distribution over interventions in a jointly estimated
    causal model, MAP prediction); the concrete family and objectives are a reconstruction
    (module docstring).

    Args:
        scm: an :class:`SCMModule`. net: a :class:`GIMNet` on the same ``d``.

    Raises:
        TypeError: wrong module types. ValueError: ``d`` of ``scm`` and ``net`` differ.
    """

    def __init__(self, scm: SCMModule, net: GIMNet) -> None:
        if not isinstance(scm, SCMModule):
            raise TypeError(f"scm must be an SCMModule, got {type(scm).__name__}")
        if not isinstance(net, GIMNet):
            raise TypeError(f"net must be a GIMNet, got {type(net).__name__}")
        if scm.d != net.d:
            raise ValueError(f"scm has d = {scm.d} but net has d = {net.d}")
        self.scm, self.net = scm, net
        self.history: list[dict] = []
        self.context_probs: np.ndarray | None = None
        self.context_psi: np.ndarray | None = None

    def fit(
        self,
        D0: Any,
        X_ctx: Any,
        gammas: Any,
        n_steps: int,
        S: int,
        lam1: float,
        lamI: float,
        mode: str,
        rng: np.random.Generator,
        lr: float = 1e-2,
        temperature: float = 0.5,
        use_d0: bool = True,
        device: str = "cpu",
    ) -> "GIM":
        """Maximise the joint objective (module docstring) with full-batch Adam.

        A reconstruction: the paper's objectives (MC marginal likelihood vs MAP) and its optimiser
        could not be read; the form below and every setting are this chapter's (chapter 04, def04-gim).

        ``loss = -(log p(D0) + sum_k obj_k - lamI sum_k sum_j pi_kj) / N + lam1 |A|_1 + alpha h + mu h^2 / 2``
        with ``N`` the number of cells; the augmented-Lagrangian ``alpha, mu`` are updated ten times
        (``alpha += mu h``; ``mu *= 10`` when ``h`` fell by less than 4x, up to 1e4); the
        Gumbel-sigmoid temperature anneals geometrically from 1 to ``temperature``. The objective
        changes with ``alpha, mu`` and the temperature, so the last iterate is returned.

        Args:
            D0: (n0, d) observational cells. X_ctx: (K, n, d) cells of the contexts.
            gammas: (K, q) features. n_steps: Adam steps >= 1. S: samples per context >= 1.
            lam1: l1 weight >= 0. lamI: nats per expected target and context >= 0.
            mode: ``"mc"``, ``"map"`` or ``"free"`` (module docstring). rng: every draw.
            lr: Adam's step. temperature: final relaxation temperature in (0, 1].
            use_d0: include ``log p(D0)`` (the "no D0" ablation sets False).
            device: torch device of the training loop (``icml25.common.torch_device(PROFILE)``);
                the modules return to the CPU afterwards, where the read-outs run.

        Returns:
            ``self``; ``history`` holds ``{step, nll, h}`` records, ``context_probs`` / ``context_psi``
            the per-context estimates (``map``/``free``).

        Raises:
            ValueError: shapes of ``D0``, ``X_ctx`` and ``gammas`` that disagree (or with ``d``),
                ``S < 1``, non-finite data, bad ``mode``. TypeError: ``rng`` not a Generator.
        """
        d = self.scm.d
        X = _check_contexts(X_ctx, "X_ctx", d=d)
        D0 = check_array(D0, "D0", shape=(None, d), min_size=d)
        G = _check_gammas(gammas, K=X.shape[0], q=self.net.q)
        n_steps = check_int(n_steps, "n_steps", low=1)
        S = check_int(S, "S", low=1)
        lam1 = check_real(lam1, "lam1", low=0.0)
        lamI = check_real(lamI, "lamI", low=0.0)
        mode = check_choice(mode, "mode", ("mc", "map", "free"))
        rng = check_rng(rng)
        lr = check_positive(lr, "lr")
        temperature = check_real(
            temperature, "temperature", low=0.0, high=1.0, low_open=True
        )
        device = check_choice(device, "device", ("cpu", "cuda"))
        t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
        self.scm.to(device)
        self.net.to(device)
        try:
            self._fit(
                t(D0)[None],
                t(X),
                t(G),
                n_steps,
                S,
                lam1,
                lamI,
                mode,
                _torch_gen(rng, device),
                lr,
                temperature,
                bool(use_d0),
            )
        finally:
            self.scm.cpu()
            self.net.cpu()
        return self

    def _fit(
        self,
        D0: torch.Tensor,
        X: torch.Tensor,
        G: torch.Tensor,
        n_steps: int,
        S: int,
        lam1: float,
        lamI: float,
        mode: str,
        g: torch.Generator,
        lr: float,
        temperature: float,
        use_d0: bool,
    ) -> None:
        """The training loop (see :meth:`fit`)."""
        K, n, d = X.shape
        self.net.loc.copy_(G.mean(0))
        self.net.scale.copy_(G.std(0).clamp_min(1e-6))
        params = list(self.scm.parameters()) + (
            list(self.net.parameters()) if mode != "free" else []
        )
        ell = psi = None
        if mode in ("map", "free"):
            # logits
            ell = torch.full(
                (K, d), -2.0, dtype=torch.float64, device=X.device, requires_grad=True
            )
            # shifts
            psi = torch.zeros(
                (K, d), dtype=torch.float64, device=X.device, requires_grad=True
            )
            params += [ell, psi]
        opt = torch.optim.Adam(params, lr=lr, foreach=True)
        N = K * n + (D0.shape[1] if use_d0 else 0)  # cells
        alpha, mu, h_prev = 0.0, 1.0, math.inf
        every = max(1, n_steps // 10)
        zero = torch.zeros((1, 1, d), dtype=torch.float64, device=X.device)
        if self.scm.kind == "linear":  # sufficient statistics, once
            X, D0 = _moments(X), _moments(D0)
        for step in range(n_steps):
            tau = temperature ** (step / max(1, n_steps - 1))  # 1 -> temperature
            if mode == "mc":
                obj, pi = _mc_objective(self.scm, self.net, X, G, S, tau, g)
            else:
                obj, pi = _map_objective(
                    self.scm,
                    self.net if mode == "map" else None,
                    X,
                    G,
                    ell,
                    psi,
                    S,
                    tau,
                    g,
                )
            ll0 = self.scm._log_prob(D0, zero).sum() if use_d0 else 0.0
            A = self.scm.adjacency()
            h = _h_torch(A)
            nll = -(ll0 + obj - lamI * pi.sum()) / N
            loss = nll + lam1 * A.abs().sum() + alpha * h + 0.5 * mu * h * h
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (step + 1) % every == 0:
                hv = float(h.detach())
                alpha += mu * hv
                if hv > 0.25 * h_prev:
                    mu = min(mu * 10.0, 1e4)
                h_prev = hv
                self.history.append(dict(step=step + 1, nll=float(nll.detach()), h=hv))
        if ell is not None:
            self.context_probs = torch.sigmoid(ell).detach().cpu().numpy()
            self.context_psi = psi.detach().cpu().numpy()

    def weighted_adjacency(self) -> np.ndarray:
        """(d, d) float64 learned edge weights ``i -> j`` (``W``, or MLP column norms)."""
        with torch.no_grad():
            return self.scm.adjacency().numpy().copy()

    def graph(self, threshold: float = 0.3) -> np.ndarray:
        """The read-out DAG: ``|A| > threshold``, then the weakest edge of any cycle dropped.

        Args:
            threshold: in (0, 1).

        Returns:
            (d, d) bool adjacency of a DAG.

        Raises:
            ValueError: ``threshold`` outside (0, 1).
        """
        threshold = check_real(
            threshold, "threshold", low=0.0, high=1.0, low_open=True, high_open=True
        )
        return _prune(np.abs(self.weighted_adjacency()), threshold)

    def _gamma(self, gamma: Any) -> torch.Tensor:
        g = check_array(gamma, "gamma", ndim=(1, 2))
        g = g[None] if g.ndim == 1 else g
        _check_gammas(g, q=self.net.q, name="gamma")
        return torch.as_tensor(g, dtype=torch.float64)

    def target_probs(self, gamma: Any) -> np.ndarray:
        """``sigmoid(g_phi(gamma))``: the probability that each variable is a direct target, (B, d).

        Raises:
            ValueError: ``gamma`` not ``(q,)`` or ``(B, q)``, or not finite.
        """
        with torch.no_grad():
            return torch.sigmoid(self.net(self._gamma(gamma))[0]).numpy()

    def posterior_target_probs(self, X_ctx: Any, gammas: Any) -> np.ndarray:
        """``P(I_kj = 1 | D_k, gamma_k)`` for observed contexts, in closed form, (K, d).

        The residual likelihood is a sum over variables of terms in ``I_j psi_j`` alone and the GIM
        factorises over variables, so the posterior factorises too. Integrating
        ``psi_j ~ N(m_j, s_j^2)`` against ``prod_i N(R_ij - psi_j; 0, sigma_j^2)`` gives the log
        Bayes factor ``b^2 / (2 a) - m^2 / (2 s^2) - log(a s^2) / 2`` with
        ``a = n / sigma^2 + 1 / s^2``, ``b = sum_i R_ij / sigma^2 + m / s^2``; the posterior logit is
        the GIM's ``g_phi(gamma_k)_j`` plus that factor.

        Raises:
            ValueError: shapes of ``X_ctx`` and ``gammas`` that disagree (or with ``d``, ``q``).
        """
        X = _check_contexts(X_ctx, "X_ctx", d=self.scm.d)
        G = _check_gammas(gammas, K=X.shape[0], q=self.net.q)
        with torch.no_grad():
            SR, _, n = self.scm._residual_sums(torch.as_tensor(X, dtype=torch.float64))
            logits, m = self.net(torch.as_tensor(G, dtype=torch.float64))
            return _posterior(
                logits, m, torch.exp(self.net.log_s), self.scm.sigma(), SR, n
            ).numpy()

    def shift_mean(self, gamma: Any) -> np.ndarray:
        """``m_phi(gamma)``: the predicted shift of each variable, (B, d) (read-out with the targets)."""
        with torch.no_grad():
            return self.net(self._gamma(gamma))[1].numpy()

    def predict(
        self, gamma: Any, n: int, rng: np.random.Generator, threshold: float = 0.3
    ) -> np.ndarray:
        """Cells under the MAP intervention of ``gamma``: ``I = 1[sigmoid(g) > 1/2]``, ``psi = m``.

        Ancestral sampling on :meth:`graph` (``threshold``) with the learned mechanisms and noise.

        Args:
            gamma: (q,) or (B, q) features. n: cells per feature vector. rng: the generator.

        Returns:
            (B, n, d) float64.

        Raises:
            ValueError: bad ``gamma``, ``n < 1``, ``threshold`` outside (0, 1). TypeError: ``rng``.
            TooLargeError (a ValueError): ``B * n`` cells cannot fit in memory.
        """
        G = self._gamma(gamma)
        n = check_int(n, "n", low=1)
        check_budget(
            f"GIM.predict(n={n}) for {G.shape[0]} feature vectors",
            n_bytes=4 * 8.0 * G.shape[0] * n * self.scm.d,
        )
        rng = check_rng(rng)
        with torch.no_grad():
            logits, m = self.net(G)
        I = (torch.sigmoid(logits) > 0.5).double().numpy()
        return self.scm.sample(n, I, m.numpy(), rng, self.graph(threshold))

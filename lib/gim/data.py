"""The synthetic Hill-dose benchmark of the paper's Sec. 5 (sizes verified, generator reconstructed).

A linear-Gaussian (or MLP) SCM on ``d`` variables over an Erdős–Rényi DAG. A "drug" hits one or two
direct targets with a shift whose size follows a Hill dose–response ``psi(c) = a c^m / (K^m + c^m)``;
its feature vector ``z`` is a fixed random linear map of (targets, amplitudes, K, m) plus noise, so
the features are informative but entangled. A context's perturbation features are
``gamma = [z, c]``. Every cell of one context shares the drug's intervention (the paper's setting).

Convention: ``W[i, j]`` is the weight of the edge ``i -> j``; a row vector of cells satisfies
``x = x W + b + eps + I * psi``, so ``x = (b + eps + I * psi)(I_d - W)^{-1}`` and a shift on node
``j`` moves the mean by ``(I_d - W)^{-T} (I * psi)`` (it reaches every descendant of ``j``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
)

from ._checks import _check_dag, _topological_order

__all__ = [
    "random_dag",
    "LinearSCM",
    "MLPSCM",
    "hill",
    "DrugLibrary",
    "make_drug_library",
    "Split",
    "Benchmark",
    "make_benchmark",
]


def random_dag(d: int, exp_degree: float, rng: np.random.Generator) -> np.ndarray:
    """An Erdős–Rényi DAG with weights ``±U[0.5, 1.5]`` (reconstruction of the paper's generator).

    Each of the ``d (d - 1) / 2`` pairs of a random order is an edge with probability
    ``exp_degree / (d - 1)``, so a node has ``exp_degree`` neighbours on average.

    Args:
        d: number of variables, >= 1.
        exp_degree: expected degree, in ``[0, d - 1]``.
        rng: the generator of every draw.

    Returns:
        ``W (d, d) float64``, ``W[i, j] != 0`` iff the edge ``i -> j``; acyclic.

    Raises:
        ValueError: ``d < 1`` or ``exp_degree`` outside ``[0, d - 1]``; TypeError: ``rng`` not a Generator.
        TooLargeError (a ValueError): the ``(d, d)`` draws cannot fit in memory.
    """
    d = check_int(d, "d", low=1)
    check_budget(f"random_dag(d={d})", n_bytes=5 * 8.0 * d * d)
    exp_degree = check_real(exp_degree, "exp_degree", low=0.0, high=max(d - 1, 0))
    rng = check_rng(rng)
    p = exp_degree / (d - 1) if d > 1 else 0.0
    upper = np.triu(rng.random((d, d)) < p, k=1)
    weights = rng.uniform(0.5, 1.5, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    perm = rng.permutation(d)
    W = np.zeros((d, d))
    W[np.ix_(perm, perm)] = np.where(upper, weights, 0.0)
    return W


def _check_intervention(I: Any, psi: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(I, psi)`` as float vectors ``(d,)`` (zeros when both are ``None``); ``I`` in ``[0, 1]``."""
    if I is None and psi is None:
        return np.zeros(d), np.zeros(d)
    if I is None or psi is None:
        raise ValueError(
            "I and psi must be given together (targets and shift sizes), or neither"
        )
    I = check_array(np.asarray(I, dtype=np.float64), "I", shape=(d,), low=0.0, high=1.0)
    psi = check_array(psi, "psi", shape=(d,), dtype=np.float64)
    return I, psi


@dataclass(frozen=True)
class LinearSCM:
    """A linear-Gaussian SCM ``x_j = sum_i W[i, j] x_i + b_j + sigma_j eps_j (+ I_j psi_j)``.

    Attributes:
        W: (d, d) float64 weighted adjacency of a DAG. b: (d,) intercepts. sigma: (d,) noise scales > 0.

    Raises (on construction):
        ValueError: ``W`` not square or cyclic (named ``W``), ``b``/``sigma`` of the wrong shape,
            ``sigma <= 0``.
    """

    W: np.ndarray
    b: np.ndarray
    sigma: np.ndarray

    def __post_init__(self) -> None:
        W = _check_dag(self.W, "W")
        d = W.shape[0]
        object.__setattr__(self, "W", W)
        object.__setattr__(
            self, "b", check_array(self.b, "b", shape=(d,), dtype=np.float64)
        )
        object.__setattr__(
            self,
            "sigma",
            check_array(
                self.sigma,
                "sigma",
                shape=(d,),
                low=0.0,
                low_open=True,
                dtype=np.float64,
            ),
        )

    @property
    def d(self) -> int:
        """Number of variables."""
        return self.W.shape[0]

    def mean(self, I: Any = None, psi: Any = None) -> np.ndarray:
        """``E[x] = (I_d - W)^{-T} (b + I * psi)``, shape ``(d,)`` (the shift reaches descendants)."""
        I, psi = _check_intervention(I, psi, self.d)
        return np.linalg.solve(np.eye(self.d) - self.W.T, self.b + I * psi)

    def covariance(self) -> np.ndarray:
        """``Cov[x] = (I_d - W)^{-T} diag(sigma^2) (I_d - W)^{-1}``, shape ``(d, d)`` (shift-invariant)."""
        Ainv = np.linalg.inv(np.eye(self.d) - self.W)
        return Ainv.T @ np.diag(self.sigma**2) @ Ainv

    def sample(
        self, n: int, rng: np.random.Generator, I: Any = None, psi: Any = None
    ) -> np.ndarray:
        """``n`` cells under the shift intervention ``(I, psi)`` (one intervention shared by all cells).

        Args:
            n: number of cells, >= 1. rng: the generator.
            I: (d,) targets in [0, 1] (0/1 for an atomic intervention) or ``None`` (observational).
            psi: (d,) shift sizes, given with ``I``.

        Returns:
            (n, d) float64.

        Raises:
            ValueError: bad ``n``, shapes, ``I`` outside [0, 1], only one of ``I``/``psi``.
            TooLargeError (a ValueError): ``n`` cells cannot fit in memory.
            TypeError: ``rng`` not a Generator.
        """
        n = check_int(n, "n", low=1)
        check_budget(f"LinearSCM.sample(n={n})", n_bytes=3 * 8.0 * n * self.d)
        rng = check_rng(rng)
        I, psi = _check_intervention(I, psi, self.d)
        noise = rng.standard_normal((n, self.d)) * self.sigma + self.b + I * psi
        return np.linalg.solve((np.eye(self.d) - self.W).T, noise.T).T


@dataclass(frozen=True)
class MLPSCM:
    """A nonlinear additive-noise SCM ``x_j = v_j . tanh(x_pa(j) A_j) + b_j + sigma_j eps_j (+ I_j psi_j)``.

    The parents of ``j`` are the nonzero entries of column ``j`` of ``W``; the random weights
    ``A_j`` (d, hidden), ``v_j`` (hidden,) are drawn once in :meth:`from_graph` (the ``gpu`` profile's
    nonlinear system; a reconstruction, the paper's nonlinear mechanisms were not readable).
    """

    W: np.ndarray
    A: np.ndarray
    v: np.ndarray
    b: np.ndarray
    sigma: np.ndarray

    def __post_init__(self) -> None:
        W = _check_dag(self.W, "W")
        d = W.shape[0]
        object.__setattr__(self, "W", W)
        A = check_array(self.A, "A", ndim=3, dtype=np.float64)
        if A.shape[:2] != (d, d):
            raise ValueError(
                f"A must have shape ({d}, {d}, hidden), got shape {A.shape}"
            )
        object.__setattr__(self, "A", A * (W != 0)[:, :, None])
        object.__setattr__(
            self, "v", check_array(self.v, "v", shape=(d, A.shape[2]), dtype=np.float64)
        )
        object.__setattr__(
            self, "b", check_array(self.b, "b", shape=(d,), dtype=np.float64)
        )
        object.__setattr__(
            self,
            "sigma",
            check_array(
                self.sigma,
                "sigma",
                shape=(d,),
                low=0.0,
                low_open=True,
                dtype=np.float64,
            ),
        )

    @classmethod
    def from_graph(
        cls, W: np.ndarray, rng: np.random.Generator, hidden: int = 8
    ) -> "MLPSCM":
        """Random tanh mechanisms on the graph of ``W``, noise scales ``U[0.5, 1]``."""
        W = _check_dag(W, "W")
        rng = check_rng(rng)
        hidden = check_int(hidden, "hidden", low=1)
        d = W.shape[0]
        A = rng.normal(0.0, 1.0, (d, d, hidden))
        v = rng.normal(0.0, 1.5 / np.sqrt(hidden), (d, hidden))
        return cls(W, A, v, np.zeros(d), rng.uniform(0.5, 1.0, d))

    @property
    def d(self) -> int:
        """Number of variables."""
        return self.W.shape[0]

    def sample(
        self, n: int, rng: np.random.Generator, I: Any = None, psi: Any = None
    ) -> np.ndarray:
        """``n`` cells by ancestral sampling under ``(I, psi)``; (n, d) float64 (see :class:`LinearSCM`)."""
        n = check_int(n, "n", low=1)
        check_budget(
            f"MLPSCM.sample(n={n})",
            n_bytes=8.0 * n * (3 * self.d + 2 * self.A.shape[2]),
        )
        rng = check_rng(rng)
        I, psi = _check_intervention(I, psi, self.d)
        X = np.zeros((n, self.d))
        eps = rng.standard_normal((n, self.d))
        for j in _topological_order(self.W):
            X[:, j] = (
                np.tanh(X @ self.A[:, j, :]) @ self.v[j]
                + self.b[j]
                + self.sigma[j] * eps[:, j]
                + I[j] * psi[j]
            )
        return X


def hill(c: Any, a: Any, K: Any, m: Any) -> np.ndarray:
    """The Hill dose–response ``psi(c) = a c^m / (K^m + c^m)`` (broadcasting; ``c >= 0``, ``K, m > 0``).

    Raises:
        ValueError: negative doses, non-positive ``K`` or ``m``, non-finite values.
    """
    c = check_array(c, "c", low=0.0)
    a = check_array(a, "a")
    K = check_array(K, "K", low=0.0, low_open=True)
    m = check_array(m, "m", low=0.0, low_open=True)
    cm = c**m
    return a * cm / (K**m + cm)


@dataclass(frozen=True)
class DrugLibrary:
    """Drugs with direct targets and Hill parameters, and their feature vectors.

    Attributes:
        targets: (n_drugs, d) bool, the direct targets (one or two per drug).
        amplitude: (n_drugs, d) float64, the Hill amplitude ``a`` per target (0 elsewhere).
        K, m: (n_drugs,) the half-saturation dose and Hill coefficient.
        z: (n_drugs, q) float64 features, ``z = A [targets; amplitude; K; m] + 0.1 noise``.
        A: (q, 2 d + 2) the fixed feature map (shared by the training and the new drugs).
    """

    targets: np.ndarray
    amplitude: np.ndarray
    K: np.ndarray
    m: np.ndarray
    z: np.ndarray
    A: np.ndarray

    def shift(self, drug: int, c: float) -> np.ndarray:
        """The true shift vector ``psi (d,)`` of ``drug`` at dose ``c`` (zero off its targets)."""
        return hill(c, self.amplitude[drug], self.K[drug], self.m[drug])


def make_drug_library(
    n_drugs: int, d: int, q: int, rng: np.random.Generator, A: np.ndarray | None = None
) -> DrugLibrary:
    """``n_drugs`` random drugs (reconstruction of the paper's Hill functions).

    Each drug hits 1 or 2 targets, with amplitudes ``a in ±[1, 3]``, ``K in [0.5, 1.5]`` and
    ``m in [1, 3]``. ``A`` (q, 2d + 2) is drawn ``N(0, 1/sqrt(2d+2))`` when not given; pass the
    training library's ``A`` to draw new drugs in the same feature space.

    Raises:
        ValueError: sizes below 1, ``A`` of the wrong shape; TypeError: ``rng`` not a Generator.
    """
    n_drugs = check_int(n_drugs, "n_drugs", low=1)
    d = check_int(d, "d", low=1)
    q = check_int(q, "q", low=1)
    rng = check_rng(rng)
    if A is None:
        A = rng.normal(0.0, 1.0 / np.sqrt(2 * d + 2), (q, 2 * d + 2))
    else:
        A = check_array(A, "A", shape=(q, 2 * d + 2), dtype=np.float64)
    targets = np.zeros((n_drugs, d), dtype=bool)
    amplitude = np.zeros((n_drugs, d))
    for i in range(n_drugs):
        hit = rng.choice(d, size=min(d, int(rng.integers(1, 3))), replace=False)
        targets[i, hit] = True
        amplitude[i, hit] = rng.uniform(1.0, 3.0, hit.size) * rng.choice(
            [-1.0, 1.0], hit.size
        )
    K = rng.uniform(0.5, 1.5, n_drugs)
    m = rng.uniform(1.0, 3.0, n_drugs)
    u = np.concatenate(
        [targets.astype(float), amplitude / 2.0, K[:, None], m[:, None] / 2.0], axis=1
    )
    z = u @ A.T + 0.1 * rng.standard_normal((n_drugs, q))
    return DrugLibrary(targets, amplitude, K, m, z, A)


@dataclass(frozen=True)
class Split:
    """Perturbational contexts of one split.

    Attributes:
        X: (K, n_k, d) cells. gammas: (K, q + 1) features ``[z, c]``. targets: (K, d) bool direct
        targets. psi: (K, d) true shifts (standardised units). drug: (K,) drug index in its
        library. dose: (K,) doses.
    """

    X: np.ndarray
    gammas: np.ndarray
    targets: np.ndarray
    psi: np.ndarray
    drug: np.ndarray
    dose: np.ndarray


@dataclass(frozen=True)
class Benchmark:
    """The three splits, the observational cells and the true system (all standardised on ``D0``).

    Attributes:
        scm: the true SCM in raw units. W: (d, d) its graph in standardised units
        (``W[i, j] s_i / s_j``, same support). D0: (n0, d). train, partial, full: :class:`Split`.
        library, new_library: the training drugs and the new (fully OOD) drugs.
        loc, scale: (d,) the standardisation, ``x_std = (x - loc) / scale``.
    """

    scm: Any
    W: np.ndarray
    D0: np.ndarray
    train: Split
    partial: Split
    full: Split
    library: DrugLibrary
    new_library: DrugLibrary
    loc: np.ndarray
    scale: np.ndarray
    meta: dict = field(default_factory=dict)


def _split(
    scm: Any,
    lib: DrugLibrary,
    doses: tuple[float, ...],
    n_k: int,
    loc: np.ndarray,
    scale: np.ndarray,
    rng: np.random.Generator,
) -> Split:
    X, G, T, P, drug, dose = [], [], [], [], [], []
    for i in range(lib.z.shape[0]):
        for c in doses:
            psi = lib.shift(i, c)
            X.append(
                (scm.sample(n_k, rng, lib.targets[i].astype(float), psi) - loc) / scale
            )
            G.append(np.concatenate([lib.z[i], [c]]))
            T.append(lib.targets[i])
            P.append(psi / scale)
            drug.append(i)
            dose.append(c)
    return Split(
        np.stack(X),
        np.stack(G),
        np.stack(T),
        np.stack(P),
        np.array(drug),
        np.array(dose, dtype=float),
    )


def make_benchmark(
    rng: np.random.Generator,
    d: int = 10,
    n_train_drugs: int = 40,
    n_new_drugs: int = 20,
    doses_train: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0),
    doses_partial: tuple[float, ...] = (0.25, 0.75, 1.25, 1.75, 2.25),
    n_k: int = 50,
    n0: int = 800,
    exp_degree: float = 2.0,
    q: int = 16,
    kind: str = "linear",
    standardize: bool = True,
) -> Benchmark:
    """The train / partially OOD (new doses) / fully OOD (new drugs) splits of the paper's Sec. 5.

    Defaults are the paper's sizes (verified): 40 drugs x 4 doses x 50 cells, 800 observational
    cells, 40 x 5 partial-OOD and 20 x 4 full-OOD contexts. The generator itself is a
    reconstruction (the paper's was not readable). The system is a linear-Gaussian SCM
    (``kind="linear"``, weights ``±U[0.5, 1.5]``, ``sigma ~ U[0.5, 1]``) or a random tanh SCM
    (``kind="mlp"``). With ``standardize`` every split is standardised by the mean and standard
    deviation of ``D0`` (against varsortability; the affine map keeps the SCM linear and the
    shifts on the same targets).

    Raises:
        ValueError: sizes below 1, an empty dose list, a negative dose, bad ``kind``.
        TypeError: ``rng`` not a Generator.
    """
    rng = check_rng(rng)
    d = check_int(d, "d", low=2)
    n_train_drugs = check_int(n_train_drugs, "n_train_drugs", low=1)
    n_new_drugs = check_int(n_new_drugs, "n_new_drugs", low=1)
    n_k = check_int(n_k, "n_k", low=2)
    n0 = check_int(n0, "n0", low=2)
    q = check_int(q, "q", low=1)
    kind = check_choice(kind, "kind", ("linear", "mlp"))
    for name, doses in (("doses_train", doses_train), ("doses_partial", doses_partial)):
        check_array(np.asarray(doses, dtype=float), name, ndim=1, low=0.0, min_size=1)
    W = random_dag(d, exp_degree, rng)
    if kind == "linear":
        scm: Any = LinearSCM(W, np.zeros(d), rng.uniform(0.5, 1.0, d))
    else:
        scm = MLPSCM.from_graph(W, rng)
    D0_raw = scm.sample(n0, rng)
    loc, scale = (
        (D0_raw.mean(0), D0_raw.std(0)) if standardize else (np.zeros(d), np.ones(d))
    )
    lib = make_drug_library(n_train_drugs, d, q, rng)
    new = make_drug_library(n_new_drugs, d, q, rng, A=lib.A)
    train = _split(scm, lib, tuple(doses_train), n_k, loc, scale, rng)
    partial = _split(scm, lib, tuple(doses_partial), n_k, loc, scale, rng)
    full = _split(scm, new, tuple(doses_train), n_k, loc, scale, rng)
    W_std = W * scale[:, None] / scale[None, :]
    return Benchmark(
        scm,
        W_std,
        (D0_raw - loc) / scale,
        train,
        partial,
        full,
        lib,
        new,
        loc,
        scale,
        meta=dict(d=d, n_k=n_k, n0=n0, kind=kind, exp_degree=exp_degree, q=q),
    )

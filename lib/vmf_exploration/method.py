"""vMF-exp, the paper's method: vMF densities and sampling, the explorer, the closed forms P0 and P1.

Bendada et al., "Exploring Large Action Sets with Hyperspherical Embeddings using von
Mises-Fisher Sampling" (ICML 2025). Actions ``X`` (n, d) and a state ``V`` (d,) live on the unit
sphere S^{d-1}. vMF-exp

1. draws a perturbed state ``V~ ~ vMF(mu=V, kappa)`` (Wood 1994 rejection sampler), and
2. plays the action closest to ``V~``: ``argmax_i <V~, X_i>`` (one exact or approximate
   maximum-inner-product search, :func:`icml25.kernels.mips.mips_argmax` for the exact one).

Action ``a`` is then played with the vMF mass of its Voronoi cell. For action sets drawn
uniformly on the sphere vMF-exp and Boltzmann exploration share the leading term
``P0 = f(A) |S^{d-1}| / n`` (``f`` the vMF density, Sec. 4 of the paper); :func:`p1` adds the
first-order correction used in the authors' code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
)
from icml25.kernels import mips

from ._checks import _check_actions, _check_dim, _check_state, _kappa_array, _unit_rows
from .data import _orthogonal_unit
from .defaults import DEFAULTS

__all__ = [
    "sphere_area",
    "vmf_log_normalizer",
    "vmf_logpdf",
    "mean_resultant_length",
    "sample_vmf",
    "VMFExplorer",
    "action_probs_vmf_mc",
    "p0",
    "p1",
]


# --------------------------------------------------------------------------------------
# Bessel functions, normaliser, density (stable in kappa and d)
# --------------------------------------------------------------------------------------


def _debye_log_iv(nu: float, x: np.ndarray) -> np.ndarray:
    """log I_nu(x) by the uniform asymptotic (Debye) expansion in nu (DLMF 10.41.3), 4 terms.

    Relative error O(nu^-5); used only where ``ive`` underflows, which needs nu >= ~50.
    """
    z = x / nu
    s = np.hypot(1.0, z)  # sqrt(1 + z^2) without overflow for z up to the largest float
    p = 1.0 / s
    eta = s + np.log(z / (1.0 + s))
    p2 = p * p
    u1 = p * (3.0 - 5.0 * p2) / 24.0
    u2 = p2 * (81.0 - 462.0 * p2 + 385.0 * p2 * p2) / 1152.0
    u3 = (
        p
        * p2
        * (30375.0 - 369603.0 * p2 + 765765.0 * p2**2 - 425425.0 * p2**3)
        / 414720.0
    )
    u4 = (
        p2
        * p2
        * (
            4465125.0
            - 94121676.0 * p2
            + 349922430.0 * p2**2
            - 446185740.0 * p2**3
            + 185910725.0 * p2**4
        )
        / 39813120.0
    )
    series = 1.0 + u1 / nu + u2 / nu**2 + u3 / nu**3 + u4 / nu**4
    return -0.5 * np.log(2.0 * np.pi * nu) + nu * eta - 0.5 * np.log(s) + np.log(series)


def _series_log_iv(nu: float, x: np.ndarray, terms: int = 60) -> np.ndarray:
    """log I_nu(x) by its power series sum_k (x/2)^(2k+nu) / (k! Gamma(k+nu+1)) in log space."""
    k = np.arange(terms, dtype=np.float64)[:, None]
    logx2 = np.log(x / 2.0)[None, :]
    logt = (
        (2.0 * k + nu) * logx2
        - special.gammaln(k + 1.0)
        - special.gammaln(k + nu + 1.0)
    )
    return special.logsumexp(logt, axis=0)


def _hankel_log_iv(nu: float, x: np.ndarray, terms: int = 30) -> np.ndarray:
    """log I_nu(x) by the large-argument (Hankel) expansion (DLMF 10.40.1), for x >= max(nu^2, 50).

    ``I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k`` with
    ``a_k(nu) = prod_{j=1}^{k} (4 nu^2 - (2j - 1)^2) / (k! 8^k)``, summed up to its smallest term.
    For ``x >= nu^2`` the k-th term ratio is at most ``1 / (2 (k + 1))`` while ``(2k + 1)^2 <
    4 nu^2``, so the truncation error is far below float64 round-off; the leading ``x - log(2 pi
    x) / 2`` is what keeps kappa up to 1e308 finite (``scipy.special.ive`` returns NaN from about
    1e10 on).
    """
    mu = 4.0 * nu * nu
    total = np.ones_like(x)
    term = np.ones_like(x)
    prev = np.full_like(x, np.inf)
    for k in range(1, terms + 1):
        # / x last: no overflow near 1e308
        term = -term * ((mu - (2 * k - 1) ** 2) / (8.0 * k)) / x
        grow = np.abs(term) >= prev  # an asymptotic series: stop at its smallest term
        if np.all(grow | (term == 0)):
            break
        total = np.where(grow, total, total + term)
        prev = np.where(grow, 0.0, np.abs(term))  # once grown, add nothing more
        term = np.where(grow, 0.0, term)
    return x - 0.5 * (math.log(2.0 * math.pi) + np.log(x)) + np.log(total)


def _log_iv(nu: float, kappa: np.ndarray) -> np.ndarray:
    """log I_nu(kappa) for kappa > 0, nu >= 0, stable for large kappa and nu (any finite kappa).

    ``log(ive(nu, kappa)) + kappa`` where the scaled Bessel function is representable; where it
    underflows (large nu, small kappa) or fails (scipy returns NaN beyond kappa ~ 1e10) the power
    series (small kappa), the Hankel expansion (kappa >= max(nu^2, 50)) or the Debye expansion.
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        scaled = special.ive(nu, kappa)
        out = np.log(scaled) + kappa
    bad = ~np.isfinite(out) | (scaled < 1e-280)
    if np.any(bad):
        kb = kappa[bad]
        # kappa^2 / (4 (nu + 1)) < 1/2: the series converges fast
        small = kb < math.sqrt(2.0 * (nu + 1.0))
        large = ~small & (kb >= max(nu * nu, 50.0))
        debye = ~small & ~large
        res = np.empty_like(kb)
        if np.any(small):
            res[small] = _series_log_iv(nu, kb[small])
        if np.any(large):
            res[large] = _hankel_log_iv(nu, kb[large])
        if np.any(debye):
            res[debye] = _debye_log_iv(nu, kb[debye])
        out = np.array(out, dtype=np.float64, copy=True)
        out[bad] = res
    return out


def sphere_area(d: int) -> float:
    """Surface area |S^{d-1}| = 2 pi^{d/2} / Gamma(d/2) of the unit sphere in R^d.

    Raises:
        ValueError / TypeError: ``d`` is not an integer >= 2.
    """
    d = _check_dim(d)
    return float(np.exp(_log_sphere_area(d)))


def _log_sphere_area(d: int) -> float:
    return math.log(2.0) + 0.5 * d * math.log(math.pi) - special.gammaln(0.5 * d)


def vmf_log_normalizer(d: int, kappa: float | np.ndarray) -> float | np.ndarray:
    """log C_d(kappa), the log normalising constant of the vMF density on S^{d-1}.

    C_d(kappa) = kappa^{d/2-1} / ((2 pi)^{d/2} I_{d/2-1}(kappa)) (Sec. 3 of Bendada et al.,
    ICML 2025; Mardia & Jupp 2000, eq. 9.3.4), so that f(x) = C_d(kappa) exp(kappa <mu, x>)
    integrates to 1 against the surface measure. Computed in log space with the exponentially
    scaled Bessel function ``scipy.special.ive`` (and an asymptotic expansion where even that
    underflows, e.g. d = 1000, kappa = 1, where scipy's own ``vonmises_fisher`` returns inf, or
    fails, kappa beyond ~1e10, where the Hankel expansion ``log I_nu(kappa) = kappa -
    log(2 pi kappa) / 2 + log(1 - (4 nu^2 - 1) / (8 kappa) + ...)`` takes over), so it is finite
    for any finite kappa (up to the largest float, ~1.8e308) and d. The kappa -> 0 limit is
    -log |S^{d-1}| (uniform).

    Args:
        d: ambient dimension, integer >= 2.
        kappa: concentration >= 0, scalar or array.

    Returns:
        float (scalar kappa) or float64 array of kappa's shape.

    Raises:
        ValueError: d < 2, kappa negative or non-finite.
        TypeError: d not an integer.
    """
    d = _check_dim(d)
    scalar, k = _kappa_array(kappa)
    nu = 0.5 * d - 1.0
    out = np.full(k.shape, -_log_sphere_area(d))
    pos = k > 0
    if np.any(pos):
        kp = k[pos]
        log_kpow = nu * np.log(kp) if nu != 0 else np.zeros_like(kp)
        out[pos] = log_kpow - 0.5 * d * math.log(2.0 * math.pi) - _log_iv(nu, kp)
    return float(out[0]) if scalar else out.reshape(np.shape(kappa))


def vmf_logpdf(x: np.ndarray, mu: np.ndarray, kappa: float) -> np.ndarray | float:
    """Log density of vMF(mu, kappa) at unit vectors x, w.r.t. the surface measure of S^{d-1}.

    log f(x) = log C_d(kappa) + kappa <mu, x> (Sec. 3 of the paper). ``mu`` is normalised; the
    rows of ``x`` must already be unit vectors (checked to 1e-3).

    Args:
        x: (..., d) float points on the sphere.
        mu: (d,) mean direction (any non-zero finite vector).
        kappa: concentration >= 0 (0 gives the uniform density 1 / |S^{d-1}|).

    Returns:
        float64 array of shape x.shape[:-1] (a float for a single (d,) point).

    Raises:
        ValueError: d < 2, kappa negative/non-finite, mu zero/non-finite, dimensions of x and
            mu differ, or x not on the unit sphere.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    mu_arr = check_array(mu, "mu", ndim=1, dtype=np.float64)
    d = _check_dim(mu_arr.shape[0], "mu's dimension d")
    mu_u = _unit_rows(mu_arr, "mu")
    xa = check_array(x, "x", dtype=np.float64)
    if xa.ndim < 1 or xa.shape[-1] != d:
        raise ValueError(
            f"x must have shape (..., {d}) to match mu, got shape {xa.shape}"
        )
    if np.any(np.abs(np.linalg.norm(xa, axis=-1) - 1.0) > 1e-3):
        raise ValueError("x must hold unit vectors (points on the sphere S^(d-1))")
    out = vmf_log_normalizer(d, kappa) + kappa * (xa @ mu_u)
    return float(out) if np.ndim(out) == 0 else out


def mean_resultant_length(d: int, kappa: float | np.ndarray) -> float | np.ndarray:
    """A_d(kappa) = E[<x, mu>] under vMF(mu, kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa).

    The ratio of Bessel functions (Mardia & Jupp 2000, eq. 9.3.9), computed as a ratio of
    ``scipy.special.ive`` (the exponential scalings cancel), so it is stable for large kappa
    and d; A_d(0) = 0 and A_d(kappa) -> 1 as kappa -> inf. Example: A_32(10) = 0.2879.

    Args:
        d: dimension >= 2.
        kappa: concentration >= 0, scalar or array.

    Returns:
        float or float64 array in [0, 1).

    Raises:
        ValueError: d < 2, kappa negative or non-finite.
    """
    d = _check_dim(d)
    scalar, k = _kappa_array(kappa)
    nu = 0.5 * d - 1.0
    out = np.zeros(k.shape)
    pos = k > 0
    if np.any(pos):
        out[pos] = np.exp(_log_iv(nu + 1.0, k[pos]) - _log_iv(nu, k[pos]))
    return float(out[0]) if scalar else out.reshape(np.shape(kappa))


# --------------------------------------------------------------------------------------
# Sampling on the sphere
# --------------------------------------------------------------------------------------


def _wood_cosines(
    d: int, kappa: float, size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Wood (1994) rejection sampler for t = <x, mu>: density prop. to e^{kappa t}(1-t^2)^{(d-3)/2}.

    Returns (t, 1 - t^2) -- the latter computed without cancellation, for the sine factor.
    Written in the algebraically simplified, cancellation-free form:
    1 - x0 t = 2b / ((1+b)(1-(1-b)z)) and 1 - t = 2bz / (1-(1-b)z).
    """
    a = 0.5 * (d - 1.0)
    if kappa == 0.0:  # t = 1 - 2z with z ~ Beta(a, a) is exactly the uniform marginal
        z = rng.beta(a, a, size=size)
        return 1.0 - 2.0 * z, 4.0 * z * (1.0 - z)
    # Wood eq. 4
    b = (d - 1.0) / (2.0 * kappa + math.sqrt(4.0 * kappa * kappa + (d - 1.0) ** 2))
    x0 = (1.0 - b) / (1.0 + b)
    log_1mx0sq = math.log(4.0 * b) - 2.0 * math.log1p(b)  # log(1 - x0^2)
    c = kappa * x0 + (d - 1.0) * log_1mx0sq
    ts, oms = [], []
    found = 0
    while found < size:
        m = max(16, int(1.2 * (size - found)) + 8)
        z = rng.beta(a, a, size=m)
        e = rng.standard_exponential(size=m)
        den = 1.0 - (1.0 - b) * z
        t = (1.0 - (1.0 + b) * z) / den
        log_1mx0t = math.log(2.0 * b) - math.log1p(b) - np.log(den)
        accept = kappa * t + (d - 1.0) * log_1mx0t - c >= -e
        one_minus_t = 2.0 * b * z / den
        ts.append(t[accept])
        oms.append(one_minus_t[accept] * (1.0 + t[accept]))
        found += int(accept.sum())
    return np.concatenate(ts)[:size], np.concatenate(oms)[:size]


def sample_vmf(
    mu: np.ndarray, kappa: float, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw from the von Mises-Fisher distribution vMF(mu, kappa) on S^{d-1} (Wood 1994).

    Wood's rejection sampler (Wood 1994, "Simulation of the von Mises Fisher distribution";
    step 2 of vMF-exp, Sec. 3-4 of Bendada et al., ICML 2025), vectorised: the cosine
    t = <x, mu> is drawn by rejection from a Beta((d-1)/2, (d-1)/2) proposal (acceptance rate
    stays high for every d and kappa), then x = t mu + sqrt(1 - t^2) u with u uniform on the
    unit vectors orthogonal to mu. kappa = 0 gives the uniform distribution. Stable for very
    large kappa (the rejection test is evaluated in a cancellation-free form).

    Two layouts of ``mu``:

    * ``mu`` (d,): ``size`` i.i.d. draws around the same mean, output (size, d);
    * ``mu`` (B, d): one draw per row, row i ~ vMF(mu[i], kappa); ``size`` must equal B
      (this is what :class:`VMFExplorer` uses for a batch of states).

    The random stream: for a given ``rng`` state, ``size`` and ``kappa`` the cosines are drawn
    first, then the orthogonal directions, so the call is reproducible from ``rng``.

    Args:
        mu: (d,) or (B, d) mean direction(s); normalised to unit length.
        kappa: concentration >= 0 (0 = uniform, large = concentrated at mu).
        size: number of draws (== B for a (B, d) ``mu``), integer >= 0.
        rng: numpy Generator.

    Returns:
        (size, d) float64 unit vectors.

    Raises:
        ValueError: d < 2; kappa negative or non-finite; mu zero, non-finite, or not 1-D/2-D;
            size < 0 or size != B for a (B, d) mu.
        TypeError: rng not a numpy Generator; kappa, size of the wrong type.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    size = check_int(size, "size", low=0)
    check_rng(rng)
    mu_arr = check_array(mu, "mu", ndim=(1, 2), dtype=np.float64)
    d = _check_dim(mu_arr.shape[-1], "mu's dimension d")
    if mu_arr.ndim == 1:
        check_budget(f"sample_vmf(size={size})", n_bytes=32.0 * size * d)
        return _sample_vmf_shared(_unit_rows(mu_arr[None], "mu")[0], kappa, size, rng)
    else:
        if mu_arr.shape[0] != size:
            raise ValueError(
                f"size must equal the number of rows of a (B, d) mu (one draw per row): "
                f"got size={size}, mu of shape {mu_arr.shape}"
            )
        mu_rows = _unit_rows(mu_arr, "mu")
    return _sample_vmf_rows(mu_rows, kappa, rng)


def _householder_vector(mu: np.ndarray) -> tuple[np.ndarray, float]:
    """``(v, sigma)`` of the reflection ``H = I - 2 v v^T / |v|^2``, ``v = sigma e_1 - mu``, which
    maps ``sigma e_1`` to the unit vector ``mu``; ``sigma = -sign(mu_1)`` (+1 when ``mu_1 = 0``)
    keeps ``|v|^2 = 2 (1 + |mu_1|) >= 2`` away from cancellation."""
    sigma = -1.0 if mu[0] > 0 else 1.0
    v = -mu
    v[0] += sigma
    return v, sigma


def _sample_vmf_shared(
    mu: np.ndarray, kappa: float, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` vMF draws around one unit ``mu`` (d,); trusted inputs.

    In coordinates where ``mu`` is ``sigma e_1`` a draw is ``x_local = (sigma t, sqrt(1 - t^2) u)``,
    ``u`` uniform on S^{d-2} (a normalised Gaussian (d-1)-vector), and one Householder reflection
    maps it onto ``mu``: ``x = H x_local = x_local - (2 / |v|^2) <x_local, v> v`` = t mu +
    sqrt(1 - t^2) H u, with H u uniform on the unit vectors orthogonal to mu: the distribution of
    :func:`_sample_vmf_rows` (scipy's ``vonmises_fisher`` rotates the same way). The reflection is
    a matrix-vector product and a rank-1 update in place (BLAS ``dgemv``, ``dger``), so the (size, d)
    draws are read and written a handful of times. Cosines first, then the Gaussians.
    """
    from scipy.linalg import blas

    d = mu.size
    if size == 0:
        return np.empty((0, d))
    t, one_minus_t2 = _wood_cosines(d, kappa, size, rng)
    v, sigma = _householder_vector(mu)
    x = rng.standard_normal((size, d))
    tail = x[:, 1:]
    norm2 = np.einsum("ij,ij->i", tail, tail)
    norm2[norm2 == 0.0] = (
        1.0  # probability 0; the draw is then t mu, still a unit vector
    )
    # column 0 is overwritten next
    x *= (np.sqrt(np.maximum(one_minus_t2, 0.0)) / np.sqrt(norm2))[:, None]
    x[:, 0] = sigma * t
    # x <- x - (2 / |v|^2) (x v) v^T, in place on the Fortran-ordered view x^T (d, size)
    blas.dger(-2.0 / (v @ v), v, x @ v, a=x.T, overwrite_a=True)
    # |x| = 1 up to rounding; renormalise so downstream inner products are exact cosines
    x *= (1.0 / np.sqrt(np.einsum("ij,ij->i", x, x)))[:, None]
    return x


def _sample_vmf_rows(
    mu_rows: np.ndarray, kappa: float, rng: np.random.Generator
) -> np.ndarray:
    """One vMF draw per unit row of ``mu_rows`` (B, d); trusted inputs."""
    size, d = mu_rows.shape
    if size == 0:
        return np.empty((0, d))
    t, one_minus_t2 = _wood_cosines(d, kappa, size, rng)
    u = _orthogonal_unit(np.ascontiguousarray(mu_rows), rng)
    x = t[:, None] * mu_rows + np.sqrt(np.maximum(one_minus_t2, 0.0))[:, None] * u
    # |x| = 1 up to rounding; renormalise so downstream inner products are exact cosines
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --------------------------------------------------------------------------------------
# Maximum inner product search and the vMF explorer
# --------------------------------------------------------------------------------------


def _argmax_ip(Q: np.ndarray, X: mips.ActionTable) -> np.ndarray:
    """Exact argmax_i <q, X_i> per row (ties -> lowest index) through :mod:`icml25.kernels.mips`.

    The fused GPU kernel never materialises the (B, n) scores and the CPU reference is chunked
    over actions, so all queries go in one call. Returns a NumPy int64 array.
    """
    idx, _ = mips.mips_argmax(np.ascontiguousarray(Q, dtype=np.float32), X)
    return idx


def _top_m(Vu: np.ndarray, X: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-m (indices, scores) by inner product, (B, m) each, in descending score order."""
    scores = Vu @ X.astype(np.float64, copy=False).T
    if m < X.shape[0]:
        idx = np.argpartition(-scores, m - 1, axis=1)[:, :m]
    else:
        idx = np.broadcast_to(np.arange(X.shape[0]), scores.shape).copy()
    sc = np.take_along_axis(scores, idx, axis=1)
    order = np.argsort(-sc, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(sc, order, axis=1)


class VMFExplorer:
    """vMF-exp policy over a fixed action table (Sec. 3-4 of Bendada et al., ICML 2025).

    ``act(V, rng)`` draws V~ ~ vMF(V, kappa) per state (:func:`sample_vmf`, one draw per row)
    and returns the action nearest to V~: argmax_i <V~, X_i>. Two indexes:

    * ``"exact"``: brute-force maximum inner product (``icml25.kernels.mips.mips_argmax``; on a
      GPU the actions stay on the device), ties to the lowest index;
    * ``"faiss-hnsw"``: ``faiss.IndexHNSWFlat(d, M, METRIC_INNER_PRODUCT)``, the sub-linear
      approximate search that makes vMF-exp practical at n ~ 10^6-10^7 (property P1).

    Action rows are normalised on construction (stored as float32 in ``X``).

    Args:
        actions: (n, d) action embeddings, n >= 1, d >= 2, finite, non-zero rows.
        kappa: vMF concentration >= 0 (same number as the B-exp inverse temperature).
        index: ``"exact"`` or ``"faiss-hnsw"``.
        M: HNSW graph degree (default 16; faiss's own default is 32).
        ef_search: HNSW query beam (default 128); larger is slower and more accurate.
        ef_construction: HNSW build beam (default 40, faiss's default).

    Attributes:
        X: (n, d) float32 unit action table (NumPy); ``table`` holds it as a
            :class:`icml25.kernels.mips.ActionTable` (kept on the GPU when there is one).
        n, d, kappa, index_kind.

    Raises:
        ValueError: bad actions, kappa, or index name; M, ef_search, ef_construction < 1.
        ImportError: ``"faiss-hnsw"`` without faiss installed (``pip install faiss-cpu``).
    """

    INDEXES = ("exact", "faiss-hnsw")

    def __init__(
        self,
        actions: np.ndarray,
        kappa: float,
        index: str = "exact",
        *,
        M: int = DEFAULTS.hnsw_M,
        ef_search: int = DEFAULTS.hnsw_ef_search,
        ef_construction: int = DEFAULTS.hnsw_ef_construction,
    ) -> None:
        self.kappa = check_real(kappa, "kappa", low=0.0)
        self.index_kind = check_choice(index, "index", self.INDEXES)
        Xc = _check_actions(actions, "actions").values
        self.X = np.ascontiguousarray(
            _unit_rows(Xc.astype(np.float64), "actions"), dtype=np.float32
        )
        self.table = mips.ActionTable(self.X)
        self.n, self.d = self.X.shape
        self.M = check_int(M, "M", low=1)
        self.ef_construction = check_int(ef_construction, "ef_construction", low=1)
        self._ef_search = check_int(ef_search, "ef_search", low=1)
        self._faiss_index = None
        if index == "faiss-hnsw":
            import faiss

            ix = faiss.IndexHNSWFlat(self.d, self.M, faiss.METRIC_INNER_PRODUCT)
            ix.hnsw.efConstruction = self.ef_construction
            ix.add(self.X)
            ix.hnsw.efSearch = self._ef_search
            self._faiss_index = ix

    @property
    def ef_search(self) -> int:
        """HNSW query beam width (settable)."""
        return self._ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        """Set the HNSW query beam width (an integer >= 1; ValueError/TypeError otherwise)."""
        self._ef_search = check_int(value, "ef_search", low=1)
        if self._faiss_index is not None:
            self._faiss_index.hnsw.efSearch = self._ef_search

    def __repr__(self) -> str:
        return f"VMFExplorer(n={self.n}, d={self.d}, kappa={self.kappa}, index={self.index_kind!r})"

    def _queries(self, V: Any, name: str = "V") -> tuple[np.ndarray, bool]:
        return _check_state(V, name, self.d)

    def _nearest(self, Q: np.ndarray) -> np.ndarray:
        """a_b = argmax_i <Q_b, X_i>: exact (the mips kernel) or approximate (the HNSW graph)."""
        if self._faiss_index is None:
            return _argmax_ip(Q, self.table)
        _, idx = self._faiss_index.search(np.ascontiguousarray(Q, dtype=np.float32), 1)
        return idx[:, 0].astype(np.int64)

    def greedy(self, V: np.ndarray) -> np.ndarray | np.int64:
        """The greedy action argmax_i <V, X_i> (vMF-exp with V~ = V), (B,) int64 or a scalar."""
        Vu, single = self._queries(V)
        out = self._nearest(Vu)
        return out[0] if single else out

    def act(self, V: np.ndarray, rng: np.random.Generator) -> np.ndarray | np.int64:
        """vMF-exp decisions: V~_b ~ vMF(V_b, kappa) (= ``sample_vmf(V, kappa, B, rng)``), then the
        nearest action to each V~_b.

        Args:
            V: (d,) or (B, d) states (normalised).
            rng: numpy Generator.

        Returns:
            (B,) int64 action indices (a numpy int64 scalar for a (d,) state).

        Raises:
            ValueError: V of the wrong dimension, zero or non-finite. TypeError: rng.
        """
        check_rng(rng)
        Vu, single = self._queries(V)
        out = self._act(Vu, rng)
        return out[0] if single else out

    def _act(self, Vu: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """a_b = argmax_i <V~_b, X_i> with V~_b ~ vMF(V_b, kappa), one draw per unit row V_b (vMF-exp)."""
        Vt = _sample_vmf_rows(Vu, self.kappa, rng)
        return self._nearest(Vt)

    def search(self, V: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k actions by inner product: (indices (B, k) int64, scores (B, k) float64), best first.

        Exact scan for ``"exact"``; the HNSW graph for ``"faiss-hnsw"`` (may miss neighbours;
        missing slots, if faiss finds fewer than k, are filled by the exact scan).

        Raises:
            ValueError: k outside [1, n]; bad V.
            TooLargeError: the exact scan's (B, n) scores cannot fit in memory.
        """
        Vu, _ = self._queries(V)
        k = check_int(k, "k", low=1, high=self.n)
        check_budget(
            f"VMFExplorer.search of {Vu.shape[0]} states over n={self.n}",
            n_bytes=24.0 * Vu.shape[0] * self.n,
        )
        if self._faiss_index is None:
            return _top_m(Vu, self.X, k)
        sc, idx = self._faiss_index.search(
            np.ascontiguousarray(Vu, dtype=np.float32), k
        )
        if np.any(idx < 0):  # pragma: no cover - HNSW returned fewer than k results
            ex_idx, ex_sc = _top_m(Vu, self.X, k)
            bad = idx < 0
            idx[bad], sc[bad] = ex_idx[bad], ex_sc[bad]
        return idx.astype(np.int64), sc.astype(np.float64)

    def recall(self, queries: np.ndarray, k: int = 1) -> float:
        """recall@k of this index against the exact search: mean |top-k approx ∩ top-k exact| / k.

        Exactly 1.0 for ``index="exact"``.

        Args:
            queries: (Q, d) query vectors (normalised), e.g. vMF draws around states.
            k: 1 <= k <= n.

        Returns:
            float in [0, 1].

        Raises:
            ValueError: k outside [1, n]; bad queries.
            TooLargeError: the exact scan's (Q, n) scores cannot fit in memory.
        """
        Q, _ = self._queries(queries, "queries")
        k = check_int(k, "k", low=1, high=self.n)
        check_budget(
            f"VMFExplorer.recall of {Q.shape[0]} queries over n={self.n}",
            n_bytes=24.0 * Q.shape[0] * self.n,
        )
        approx, _ = self.search(Q, k)
        exact, _ = _top_m(Q, self.X, k)
        hits = [len(np.intersect1d(a, e)) for a, e in zip(approx, exact)]
        return float(np.mean(hits) / k)


def action_probs_vmf_mc(
    V: ArrayLike,
    X: ArrayLike | mips.ActionTable,
    kappa: float,
    n_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Monte Carlo estimate of the vMF-exp probabilities: the vMF mass of each Voronoi cell.

    P_vMF(a) = integral over Vor(X_a) of f(V~) dV~ (Sec. 4 of the paper), estimated by the
    frequency of argmax_i <V~_s, X_i> over ``n_samples`` draws V~_s ~ vMF(V, kappa) (exact search;
    standard error sqrt(P(1-P)/n_samples)). ``X`` rows are normalised.

    Args:
        V: (d,) state. X: (n, d) actions. kappa: >= 0. n_samples: >= 1. rng: numpy Generator.

    Returns:
        (n,) float64 frequencies summing to 1.

    Raises:
        ValueError: bad V, X, kappa, dimensions, n_samples < 1.
        TooLargeError: ``n_samples * n * d`` inner-product terms exceed
            :data:`icml25.checks.MAX_OPERATIONS` (refused before any draw).
        TypeError: rng.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    n_samples = check_int(n_samples, "n_samples", low=1)
    check_rng(rng)
    Xc = _check_actions(X).values
    Vu, single = _check_state(V, "V", Xc.shape[1])
    if not single:
        raise ValueError(f"V must have shape (d,), got shape {np.shape(V)}")
    n, d = Xc.shape
    # each draw costs a vMF sample (~10 d) and an exact search
    # over the n actions (2 n d)
    check_budget(
        f"action_probs_vmf_mc(n_samples={n_samples}) over {n} actions in d={d}",
        n_operations=float(n_samples) * d * (2.0 * n + 10.0),
    )
    table = mips.ActionTable(_unit_rows(Xc.astype(np.float64), "X").astype(np.float32))
    return _voronoi_frequencies(Vu[0], table, kappa, n_samples, rng)


def _voronoi_frequencies(
    v: np.ndarray,
    table: mips.ActionTable,
    kappa: float,
    n_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """P_vMF(a) ≈ #{s : argmax_i <V~_s, X_i> = a} / S with V~_s ~ vMF(v, kappa), s = 1..S."""
    n = table.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    step = max(1, min(n_samples, DEFAULTS.chunk_elements // max(n, 1), 1 << 16))
    for s in range(0, n_samples, step):
        b = min(step, n_samples - s)
        Vt = _sample_vmf_rows(np.broadcast_to(v, (b, v.shape[0])), kappa, rng)
        counts += np.bincount(_argmax_ip(Vt, table), minlength=n)
    return counts / n_samples


# --------------------------------------------------------------------------------------
# The closed forms P0, P1
# --------------------------------------------------------------------------------------


def _check_closed_form_args(
    alpha: Any, d: Any, kappa: Any, n: Any
) -> tuple[np.ndarray, int, float, np.ndarray]:
    """(alpha in [-1, 1], d >= 2, kappa >= 0, n >= 1) for :func:`p0` and :func:`p1`."""
    return (
        check_array(
            alpha, "alpha (a cosine similarity)", low=-1.0, high=1.0, dtype=np.float64
        ),
        _check_dim(d),
        check_real(kappa, "kappa", low=0.0),
        check_array(n, "n (number of actions)", low=1.0, dtype=np.float64),
    )


def p0(
    alpha: float | ArrayLike, d: int, kappa: float, n: float | ArrayLike
) -> float | np.ndarray:
    """Leading-order probability of an action A with <V, A> = alpha among n uniform actions.

    P0(A) = f(A) |S^{d-1}| / n, shared by B-exp and vMF-exp (Sec. 4 of the paper;
    ``theo_proba(order=0)`` in the official code; formula in :func:`_p0`). Example:
    p0(0.5, 4, 1.0, 1000) = 1.4586e-3.

    Args:
        alpha: <V, A> in [-1, 1] (scalar or array, broadcast with n).
        d: dimension >= 2.
        kappa: >= 0.
        n: number of actions >= 1 (scalar or array).

    Returns:
        float or float64 array of the broadcast shape of alpha and n.

    Raises:
        ValueError: alpha outside [-1, 1], d < 2, kappa negative/non-finite, n < 1.
    """
    out = _p0(*_check_closed_form_args(alpha, d, kappa, n))
    return float(out) if np.ndim(out) == 0 else out


def _p0(a: np.ndarray, d: int, kappa: float, n: np.ndarray) -> np.ndarray:
    """P0 = exp(kappa alpha) C_d(kappa) |S^{d-1}| / n
          = exp(kappa alpha) (kappa/2)^{d/2-1} / (Gamma(d/2) I_{d/2-1}(kappa) n),

    in log space so it is finite for large kappa and d (a = alpha).
    """
    return np.exp(
        kappa * a + vmf_log_normalizer(d, kappa) + _log_sphere_area(d) - np.log(n)
    )


def p1(
    alpha: float | ArrayLike, d: int, kappa: float, n: float | ArrayLike
) -> float | np.ndarray:
    """First-order vMF-exp probability: P1 = P0 [1 + kappa alpha (mu_n - 1)] (formula in :func:`_p1`).

    ``theo_proba(order=1)`` in the official code; Sec. 4 of the paper. The correction is
    negative for alpha > 0 -- actions close to V get less mass under vMF-exp than under B-exp --
    and shrinks only like n^{-2/(d-1)}, so it matters for d >~ 16. It is a first-order
    expansion: for large kappa |alpha| at moderate n it can exceed 1 in size (P1 can even be
    negative); it is returned as is, not clipped.

    Args / Returns / Raises: as :func:`p0`.
    """
    out = _p1(*_check_closed_form_args(alpha, d, kappa, n))
    return float(out) if np.ndim(out) == 0 else out


def _p1(a: np.ndarray, d: int, kappa: float, n: np.ndarray) -> np.ndarray:
    """P1 = P0 [1 - kappa alpha (1 - mu_n)] with
    1 - mu_n = (B(1/2, (d-1)/2) (d-1))^{2/(d-1)} / 2 * Gamma((d+1)/(d-1)) * n^{-2/(d-1)}.
    """
    e = 2.0 / (d - 1.0)
    log_c = e * (special.betaln(0.5, 0.5 * (d - 1.0)) + math.log(d - 1.0)) - math.log(
        2.0
    )
    one_minus_mu = np.exp(
        log_c + special.gammaln((d + 1.0) / (d - 1.0)) - e * np.log(n)
    )
    return _p0(a, d, kappa, n) * (1.0 - kappa * a * one_minus_mu)

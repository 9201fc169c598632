"""The experiments' Monte Carlo loop: the probability of a fixed action for every catalogue size."""

from __future__ import annotations

import numpy as np

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
)
from icml25.kernels import mips

from ._checks import _check_dim
from .data import _uniform_sphere, sample_with_similarity
from .defaults import DEFAULTS
from .method import _sample_vmf_rows

__all__ = ["mc_prob_curve"]

_SAMPLERS = ("vmf", "boltzmann", "both")


def mc_prob_curve(
    d: int,
    kappa: float,
    alpha: float,
    n_max: int,
    n_samples: int,
    rng: np.random.Generator,
    sampler: str = "vmf",
    *,
    samples_per_trial: int = DEFAULTS.samples_per_trial,
    trial_batch: int = 16,
    return_stderr: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """P(a) for every action-set size n = 1..n_max at once, averaged over random action sets.

    The Monte Carlo protocol of Sec. 5 of the paper and its official code ("prefix trick").
    Each *trial* draws a state V uniform on S^{d-1}, the fixed action A with <V, A> = alpha
    (:func:`sample_with_similarity`) and n_max - 1 other actions X_1..X_{n_max-1} uniform on the
    sphere. The action set of size n is {A, X_1, ..., X_{n-1}} -- nested prefixes -- so one
    trial answers every n at once:

    * ``"vmf"``: draw ``samples_per_trial`` V~_s ~ vMF(V, kappa); for each, the first index
      j_s whose action beats A (<V~_s, X_j> > <V~_s, A>, the kernel ``first_beater``); A is
      played in the set of size n iff j_s >= n - 1. A ``bincount`` of j_s and a reverse cumulative
      sum give the estimate for all n. Ties (probability 0 in float64) count for A.
    * ``"boltzmann"``: the exact B-exp probability of A in each prefix (no sampling needed):
      1 / (1 + sum_{j < n} exp(kappa (<X_j, V> - alpha))).
    * ``"both"``: both, from the *same* random action sets (common random numbers, so their
      difference has a smaller MC error).

    The number of trials (random action sets) is ceil(n_samples / samples_per_trial); the last
    trial gets the remainder of the vMF draws. Under "boltzmann" only that trial count matters.

    Indexing (exact): ``curve[n - 1]`` estimates P(A is played | n actions in total, A included),
    so ``curve[0] == 1``. The official code stores the value for {A, X_1..X_m} (m + 1 actions) at
    position m - 1 and plots it against n = m; here that value sits at ``curve[m]`` (an off-by-one
    of no consequence at n ~ 10^6, visible at small n). Compare with ``p0(alpha, d, kappa, n)``
    for ``n = arange(1, n_max + 1)``.

    Computation: vMF draws come from the NumPy ``rng``; the action sets, the Boltzmann prefix sums
    and j_s come from the dispatchers of :mod:`icml25.kernels.mips` (``uniform_action_sets``,
    ``prefix_boltzmann``, ``first_beater``): float64 from ``rng`` and a pruned exact scan on the
    CPU (memory per batch of trials bounded by ``VMFDefaults.chunk_elements``), float32 on the
    device on a GPU, so n_max = 10^6 at d = 32 is practical there. Sizes whose action sets cannot fit in memory, or whose
    draws exceed :data:`icml25.checks.MAX_OPERATIONS`, are refused before any work.

    Args:
        d: dimension >= 2.
        kappa: vMF concentration = B-exp inverse temperature, >= 0.
        alpha: <V, A> in [-1, 1].
        n_max: largest action-set size, >= 1.
        n_samples: total vMF draws over all trials, >= 1.
        rng: numpy Generator.
        sampler: ``"vmf"``, ``"boltzmann"`` or ``"both"``.
        samples_per_trial: vMF draws per random action set (the code's ``bs``), >= 1.
        trial_batch: trials processed together by the Boltzmann reduction, >= 1 (memory knob).
        return_stderr: also return the standard error of each entry, from the spread over
            trials (it includes both the action-set and the vMF sampling variability).

    Returns:
        (n_max,) float64 curve (``(2, n_max)``, rows vMF then Boltzmann, for "both"); with
        ``return_stderr`` a pair (curve, stderr) of equal shapes (stderr is 0 with one trial).

    Raises:
        ValueError: d < 2; kappa negative/non-finite; alpha outside [-1, 1]; n_max,
            n_samples, samples_per_trial or trial_batch < 1; unknown sampler.
        TooLargeError: one trial's action set cannot fit in memory, or the trials' draws
            (about ``n_trials * n_max * d + 10 * n_samples * d`` operations) exceed the limit.
        TypeError: rng not a numpy Generator; an integer argument of another type.
    """
    d = _check_dim(d)
    kappa = check_real(kappa, "kappa", low=0.0)
    alpha = float(
        check_array(alpha, "alpha (a cosine similarity)", shape=(), low=-1.0, high=1.0)
    )
    n_max = check_int(n_max, "n_max", low=1)
    n_samples = check_int(n_samples, "n_samples", low=1)
    samples_per_trial = check_int(samples_per_trial, "samples_per_trial", low=1)
    trial_batch = check_int(trial_batch, "trial_batch", low=1)
    check_rng(rng)
    sampler = check_choice(sampler, "sampler", _SAMPLERS)
    return_stderr = check_bool(return_stderr, "return_stderr")
    want_vmf = sampler in ("vmf", "both")
    n_trials = -(-n_samples // samples_per_trial)
    nX = n_max - 1
    # Boltzmann-only trials are batched (bounded memory); vMF trials go one by one
    rows_per_batch = 1 if want_vmf else trial_batch
    rows_per_batch = max(
        1, min(rows_per_batch, DEFAULTS.chunk_elements // max(1, nX * d))
    )
    what = f"mc_prob_curve(n_max={n_max}, n_samples={n_samples}, d={d})"
    check_budget(
        what,
        n_bytes=8.0
        * (3 * rows_per_batch * nX * d + 8 * n_max + 4 * samples_per_trial * d),
    )
    check_budget(what, n_operations=4.0 * n_trials * n_max * d + 10.0 * n_samples * d)
    curve, stderr = _prefix_curves(
        d,
        kappa,
        alpha,
        n_max,
        n_samples,
        rng,
        sampler,
        samples_per_trial,
        rows_per_batch,
    )
    return (curve, stderr) if return_stderr else curve


def _prefix_curves(
    d: int,
    kappa: float,
    alpha: float,
    n_max: int,
    n_samples: int,
    rng: np.random.Generator,
    sampler: str,
    samples_per_trial: int,
    rows_per_batch: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Trial means and standard errors of the prefix curves (the "prefix trick", Sec. 5).

    For each trial (V, A, X_1..X_{n_max-1}):
    vMF:   curve[n-1] = #{s : j_s >= n - 1} / S,  j_s = min{j : <V~_s, X_j> > <V~_s, A>};
    B-exp: curve[n-1] = 1 / (1 + sum_{j < n} exp(kappa (<X_j, V> - alpha))).
    """
    want_vmf = sampler in ("vmf", "both")
    want_b = sampler in ("boltzmann", "both")
    n_trials = -(-n_samples // samples_per_trial)
    nX = n_max - 1
    # running sums over trials of the per-trial curves and of their squares
    sums = {
        k: np.zeros(n_max) for k, w in (("vmf", want_vmf), ("boltzmann", want_b)) if w
    }
    sqs = {k: np.zeros(n_max) for k in sums}
    done = 0
    while done < n_trials:
        tb = min(rows_per_batch, n_trials - done)
        V = _uniform_sphere(tb, d, rng)
        A = sample_with_similarity(V, alpha, rng)
        X = mips.uniform_action_sets(tb, nX, d, rng)  # on the GPU when there is one
        if want_b:
            # exact B-exp probability of A in each prefix
            cur = mips.prefix_boltzmann(X, V, kappa, alpha)
            sums["boltzmann"] += cur.sum(axis=0)
            sqs["boltzmann"] += (cur * cur).sum(axis=0)
        if want_vmf:
            S = min(samples_per_trial, n_samples - done * samples_per_trial)
            Vt = _sample_vmf_rows(np.broadcast_to(V[0], (S, d)), kappa, rng)
            thr = Vt @ A[0]
            j = (
                mips.first_beater(Vt, X.table(0), thr)
                if nX
                else np.zeros(S, dtype=np.int64)
            )
            counts = np.bincount(j, minlength=n_max)[:n_max]
            cur = np.cumsum(counts[::-1])[::-1] / S  # cur[n-1] = #{s: j_s >= n-1} / S
            sums["vmf"] += cur
            sqs["vmf"] += cur * cur
        done += tb
    curves, errs = [], []
    for k in ("vmf", "boltzmann"):
        if k not in sums:
            continue
        mean = sums[k] / n_trials
        if n_trials > 1:
            var = (
                np.maximum(sqs[k] / n_trials - mean * mean, 0.0)
                * n_trials
                / (n_trials - 1)
            )
            err = np.sqrt(var / n_trials)
        else:
            err = np.zeros(n_max)
        curves.append(mean)
        errs.append(err)
    if sampler == "both":
        return np.stack(curves), np.stack(errs)
    return curves[0], errs[0]

"""Predictions of the minimum cut: their errors, how the experiments make them, and learning them.

The quality of ``p`` is measured against a minimum cut ``C*`` of value ``k`` by the
false-negative mass ``eta = sum_{e in C*} (1 - p_e) w_e / k`` and the false-positive mass
``rho = sum_{e not in C*} p_e w_e / k`` (Sec. 2).

Reconstructed part: the learning surrogate of :func:`learn_predictions_ogd`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_rng,
)
from icml25.kernels import contraction

from .graph import (
    GraphLike,
    _check_predictions,
    _check_side,
    _check_weights,
    _graph_and_side,
    validate_graph,
)
from .method import _batch_bytes, _trial_operations

__all__ = [
    "prediction_errors",
    "inject_errors",
    "predict_by_sampling",
    "learn_predictions_ogd",
]


def prediction_errors(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    p: ArrayLike | None = None,
    side: ArrayLike | None = None,
) -> tuple[float, float]:
    """The paper's prediction errors against the cut ``side`` (Sec. 2).

    ``eta = sum_{e in C} (1 - p_e) w_e / k`` (false negatives, in [0, 1]) and
    ``rho = sum_{e not in C} p_e w_e / k`` (false positives, >= 0), with ``C`` the edges crossing
    ``side`` and ``k = w(C)``.

    Args:
        edges: (m, 2) int64 (or a :class:`WeightedGraph`, then no ``weights``); weights: (m,)
        float64 > 0; p: (m,) in [0, 1] (required); side: (n,) bool (required; for arrays ``n`` is
        its length).

    Returns:
        ``(eta, rho)`` floats.

    Raises:
        ValueError: bad graph or ``p``; ``side`` not a proper bipartition; ``w(C) = 0``.
    """
    g, side = _graph_and_side(edges, weights, side)
    p = _check_predictions(p, g.m)
    return _prediction_errors(g.edges, g.weights, p, side)


def _prediction_errors(
    edges: np.ndarray, w: np.ndarray, p: np.ndarray, side: np.ndarray
) -> tuple[float, float]:
    """``eta = sum_{e in C} (1 - p_e) w_e / k``, ``rho = sum_{e not in C} p_e w_e / k``, ``k = w(C)``."""
    crossing = side[edges[:, 0]] != side[edges[:, 1]]
    k = w[crossing].sum()
    if k <= 0:
        raise ValueError(
            "side cuts no edge (k = 0): eta and rho are normalised by k and undefined"
        )
    eta = float(((1.0 - p[crossing]) * w[crossing]).sum() / k)
    rho = float((p[~crossing] * w[~crossing]).sum() / k)
    return eta, rho


def _weighted_prefix(
    weights: np.ndarray, target: float, rng: np.random.Generator
) -> np.ndarray:
    """Indices drawn without replacement, prob. proportional to weight, until their sum >= target.

    Sequential weighted sampling without replacement = ascending exponential clocks -log(u)/w.
    As in the official ``sample``: everything when ``target >= sum(weights)``, nothing when 0.
    """
    if target <= 0 or weights.size == 0:
        return np.zeros(0, dtype=np.int64)
    if target >= weights.sum():
        return np.arange(weights.size)
    order = np.argsort(rng.exponential(size=weights.size) / weights)
    count = int(np.searchsorted(np.cumsum(weights[order]), target, side="left")) + 1
    return order[:count]


def inject_errors(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    side: ArrayLike | None = None,
    eta: float | None = None,
    rho: float | None = None,
    *,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float, float]:
    """Binary predictions with (about) the requested errors, as the official ``boost_graph_with_error``.

    Start from the perfect prediction (``p = 1`` on the cut edges of ``side``, 0 elsewhere). Cut
    edges are drawn proportionally to weight until their weight passes ``eta k`` and get ``p = 0``
    (false negatives); non-cut edges are drawn until their weight passes ``min(rho k, w(E \\ C))``
    and get ``p = 1`` (false positives). Whole edges are drawn, so the realised errors overshoot.

    Args:
        edges, weights: the graph (or a :class:`WeightedGraph`); side: (n,) bool shore of the
        reference cut; eta: target false-negative error in [0, 1] (required); rho: target
        false-positive error >= 0 (required); rng: ``numpy.random.Generator`` (keyword, required).

    Returns:
        ``(p, eta_realised, rho_realised)``: (m,) float64 in {0, 1}, and the errors of ``p``.

    Raises:
        ValueError: bad graph or side, ``eta`` outside [0, 1], ``rho < 0`` or non-finite.
        TypeError: ``rng`` is not a Generator.
    """
    g, side = _graph_and_side(edges, weights, side)
    rng = check_rng(rng)
    eta = check_probability(eta, "eta")
    rho = check_real(rho, "rho", low=0.0)
    weights = g.weights
    crossing = side[g.edges[:, 0]] != side[g.edges[:, 1]]
    cut_idx, rest_idx = np.flatnonzero(crossing), np.flatnonzero(~crossing)
    k = weights[cut_idx].sum()
    if k <= 0:
        raise ValueError("side cuts no edge (k = 0)")
    p = crossing.astype(np.float64)
    fn = cut_idx[_weighted_prefix(weights[cut_idx], eta * k, rng)]
    fp = rest_idx[
        _weighted_prefix(weights[rest_idx], min(rho * k, weights[rest_idx].sum()), rng)
    ]
    p[fn] = 0.0
    p[fp] = 1.0
    return p, float(weights[fn].sum() / k), float(weights[fp].sum() / k)


def predict_by_sampling(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    *,
    rng: np.random.Generator,
    frac: float = 0.5,
    n_trials: int = 50,
) -> np.ndarray:
    """The official real-data heuristic: predicted cut edges from Karger on a random edge sample.

    Keep a uniformly random ``floor(frac m)`` of the edges, run ``n_trials`` Karger trials on that
    subgraph and predict ``p_e = 1`` for every sampled edge that crossed one of the cuts found;
    every other edge gets ``p_e = 0`` (it will be boosted).

    Args:
        edges, weights, n: the graph; rng: ``numpy.random.Generator`` (keyword, required); frac: the
        sampled fraction in (0, 1]; n_trials: Karger trials on the sample (>= 1, one kernel call).

    Returns:
        (m,) float64 in {0, 1}.

    Raises:
        ValueError: bad graph, ``frac`` outside (0, 1], ``n_trials < 1``.
        TooLargeError: the ``n_trials`` trials cannot fit in memory (or take hours).
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    frac = check_real(frac, "frac", low=0.0, high=1.0, low_open=True)
    n_trials = check_int(n_trials, "n_trials", low=1)
    # the sample is a subgraph: at most these
    check_budget(
        f"predict_by_sampling(n={g.n}, m={g.m}, n_trials={n_trials})",
        n_bytes=_batch_bytes(g, n_trials),
        n_operations=n_trials * _trial_operations(g),
    )
    m = g.m
    sample = np.sort(rng.choice(m, size=max(1, int(frac * m)), replace=False))
    sub_e, sub_w = g.edges[sample], g.weights[sample]
    seed = int(rng.integers(0, 2**63))
    _, labels = contraction.contraction_trials(
        sub_e, sub_w, g.n, n_trials, seed, [(sub_w / sub_w.max(), 2)]
    )
    crossed = (labels[:, sub_e[:, 0]] != labels[:, sub_e[:, 1]]).any(axis=0)
    p = np.zeros(m)
    p[sample[crossed]] = 1.0
    return p


def learn_predictions_ogd(
    edges: ArrayLike,
    n: int,
    instances: Sequence[tuple[np.ndarray, np.ndarray]],
    lr: float = 0.5,
    epochs: int = 1,
    p0: float = 0.5,
    *,
    rng: np.random.Generator | None = None,
    shuffle: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Learn one prediction vector for a family of instances by projected online gradient descent.

    Stand-in surrogate (a reconstruction; the paper convexifies its expected-runtime objective):
    ``L_i(p) = 2 ln(n) eta_i(p) + 2 rho_i(p)``, the log of the reconstructed trial count
    ``n^(2 eta) e^(2 rho)``-type bound, linear (hence convex) in ``p``. Instance ``i`` is a
    weight vector on the common edges and the shore of its minimum cut. One OGD step per
    instance, step ``lr / sqrt(step)``, projection onto ``[0, 1]^m``.

    Args:
        edges: (m, 2) the common edge set; n: vertices; instances: sequence of
        ``(weights_i (m,) float64 > 0, side_i (n,) bool)``; lr > 0; epochs >= 1: passes over the
        instances; p0: initial prediction in [0, 1]; rng: ``numpy.random.Generator`` that
        shuffles the order each epoch (keyword; required when ``shuffle``); shuffle: ``False``
        takes the instances in the given order (the online sequence as it arrived) and draws
        nothing, so no ``rng`` is needed.

    Returns:
        ``(p, losses)``: (m,) float64 learned predictions and the surrogate loss of each step,
        evaluated before the step (the online regret sequence).

    Raises:
        ValueError: empty ``instances``, bad shapes (the message names ``instances[i]``),
            ``lr <= 0``, ``epochs < 1``, ``p0`` outside [0, 1].
        TypeError: ``instances`` not a sequence of ``(weights, side)`` pairs; ``rng`` not a
            Generator while ``shuffle`` (``None`` included: there is no default stream).
        TooLargeError: ``epochs x len(instances)`` steps over ``m`` edges would take hours.
    """
    if isinstance(instances, (str, bytes)) or not hasattr(instances, "__iter__"):
        raise TypeError(
            f"instances must be a sequence of (weights, side) pairs, got {type(instances).__name__}"
        )
    instances = list(instances)
    if len(instances) == 0:
        raise ValueError("instances must not be empty")
    lr = check_positive(lr, "lr")
    epochs = check_int(epochs, "epochs", low=1)
    p0 = check_probability(p0, "p0")
    shuffle = check_bool(shuffle, "shuffle")
    rng = check_rng(rng) if shuffle else None
    common = check_array(edges, "edges", shape=(None, 2), kind="number")
    # the common edges, checked once
    g = validate_graph(common, np.ones(common.shape[0]), n)
    check_budget(
        f"learn_predictions_ogd(epochs={epochs}, {len(instances)} instances, m={g.m})",
        n_operations=4.0 * epochs * len(instances) * g.m,
    )
    grads, consts = [], []
    for i, instance in enumerate(instances):
        if (
            isinstance(instance, (str, bytes))
            or not hasattr(instance, "__len__")
            or len(instance) != 2
        ):
            raise TypeError(
                f"instances[{i}] must be a pair (weights, side), got {type(instance).__name__}"
            )
        w = _check_weights(instance[0], g.m, name=f"instances[{i}] weights")
        side = _check_side(instance[1], g.n, name=f"instances[{i}] side")
        try:
            grads.append(_surrogate_gradient(g.edges, w, side, g.n))
        except ValueError as err:
            raise ValueError(f"instances[{i}]: {err}") from None
        consts.append(2 * math.log(g.n) * 1.0)
    return _ogd(grads, consts, g.m, lr, epochs, p0, rng)


def _surrogate_gradient(
    edges: np.ndarray, w: np.ndarray, side: np.ndarray, n: int
) -> np.ndarray:
    """``L(p) = 2 ln n sum_C (1 - p) w / k + 2 sum_{not C} p w / k = const + g . p``: the ``g``."""
    crossing = side[edges[:, 0]] != side[edges[:, 1]]
    k = w[crossing].sum()
    if k <= 0:
        raise ValueError("every instance's side must cut at least one edge")
    return np.where(crossing, -2 * math.log(n) * w / k, 2 * w / k)


def _ogd(
    grads: list[np.ndarray],
    consts: list[float],
    m: int,
    lr: float,
    epochs: int,
    p0: float,
    rng: np.random.Generator | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Projected OGD ``p <- clip(p - lr / sqrt(step) * g_i, 0, 1)``; losses before each step."""
    p = np.full(m, float(p0))
    losses, step = [], 0
    order = np.arange(len(grads))
    for _ in range(epochs):
        if rng is not None:
            order = rng.permutation(len(grads))
        for i in order:
            step += 1
            losses.append(consts[i] + grads[i] @ p)
            p = np.clip(p - lr / math.sqrt(step) * grads[i], 0.0, 1.0)
    return p, np.array(losses)

"""The loops behind the chapter's experiments (one call per notebook cell).

Every function returns a list of row dicts (the notebook makes a DataFrame of them). Ratios are
``cost / reference`` (lower is better, >= 1 against the optimum) or ``revenue / reference``
(higher is better, <= 1 against the optimum).
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from icml25.checks import check_array, check_int, check_rng

from ._checks import _check_tree, _check_weights
from .baselines import LINKAGES, linkage_tree, spectral_tree
from .data import hsbm
from .method import build_from_counts, build_insertion, build_nearlinear_mw
from .oracle import SplittingOracle
from .trees import (
    Tree,
    _cost_and_revenue,
    balanced_tree,
    dasgupta_cost,
    optimal_tree,
    random_binary_tree,
)

__all__ = [
    "insertion_queries",
    "ratio_sweep",
    "hsbm_comparison",
    "mw_scaling",
    "decoy_comparison",
]


def insertion_queries(
    ns: Sequence[int], rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Queries of :func:`build_insertion` with a perfect oracle, on balanced and random trees.

    Args:
        ns: a 1-D sequence of leaf counts, each >= 3; rng: generator of the random trees and orders.

    Returns:
        rows ``{n, tree, depth, queries, bound = 2 n ceil(log2 n), recovered}``.

    Raises:
        TypeError: ``ns`` not integers, ``rng`` not a Generator. ValueError: ``ns`` not 1-D (a
        bare integer) or an entry below 3.
    """
    ns = check_array(ns, "ns", kind="int", ndim=1, low=3)
    rng = check_rng(rng)
    rows = []
    for n in ns.tolist():
        for kind, T in (
            ("balanced", balanced_tree(n)),
            ("random", random_binary_tree(n, rng)),
        ):
            o = SplittingOracle(T, 1.0)
            B = build_insertion(o, n, rng)
            rows.append(
                dict(
                    n=n,
                    tree=kind,
                    depth=T.depth(),
                    queries=o.n_queries,
                    bound=2 * n * math.ceil(math.log2(n)),
                    recovered=bool(
                        np.array_equal(B.lca_size_matrix(), T.lca_size_matrix())
                    ),
                )
            )
    return rows


def ratio_sweep(
    graphs: Sequence[np.ndarray],
    ps: Sequence[float],
    n_oracle_seeds: int,
    rng: np.random.Generator,
    label: str = "graph",
) -> list[dict[str, Any]]:
    """Dasgupta cost / OPT on small graphs (``n <= 12``) for the oracle algorithms and the baselines.

    The oracle knows the DP optimum; each ``p`` is run with ``n_oracle_seeds`` oracle seeds.

    Returns:
        rows ``{label, graph, method, p, ratio}`` (``p`` is NaN for the baselines).

    Raises:
        TypeError: ``n_oracle_seeds`` not an integer, ``rng`` not a Generator.
        ValueError: ``n_oracle_seeds < 1``, a bad graph.
    """
    n_oracle_seeds = check_int(n_oracle_seeds, "n_oracle_seeds", low=1)
    rng = check_rng(rng)
    rows = []
    for g, W in enumerate(graphs):
        W = _check_weights(W)
        n = W.shape[0]
        T = optimal_tree(W)
        opt = dasgupta_cost(T, W)
        base = {m: linkage_tree(W, m) for m in LINKAGES}
        base["spectral"] = spectral_tree(W)
        base["random"] = random_binary_tree(n, rng)
        for name, B in base.items():
            rows.append(
                dict(
                    label=label,
                    graph=g,
                    method=name,
                    p=float("nan"),
                    ratio=dasgupta_cost(B, W) / opt,
                )
            )
        for p in ps:
            for s in range(n_oracle_seeds):
                seed = int(rng.integers(2**62))
                o = SplittingOracle(T, p, seed=seed)
                rows.append(
                    dict(
                        label=label,
                        graph=g,
                        method="counts",
                        p=p,
                        ratio=dasgupta_cost(build_from_counts(o, n, p), W) / opt,
                    )
                )
                o = SplittingOracle(T, p, seed=seed)
                rows.append(
                    dict(
                        label=label,
                        graph=g,
                        method="insertion",
                        p=p,
                        ratio=dasgupta_cost(build_insertion(o, n, rng), W) / opt,
                    )
                )
    return rows


def hsbm_comparison(
    depth: int,
    q0: float,
    decay: float,
    n_samples: int,
    ps: Sequence[float],
    K: int,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """All methods on one HSBM draw; ratios to the best tree found (planted included).

    Returns:
        ``(rows, info)``: rows ``{method, p, cost, revenue}`` with ``cost_ratio = cost / best cost``
        and ``rev_ratio = revenue / best revenue``; info ``{n, m, planted_cost, avg_cost}``.
    """
    rng = check_rng(rng)
    W, planted = hsbm(depth, q0, decay, n_samples, rng)
    n = W.shape[0]
    Wsp = sp.csr_matrix(W)
    trees: list[tuple[str, float, Tree]] = [("planted", float("nan"), planted)]
    trees += [
        (m, float("nan"), linkage_tree(W, m)) for m in ("average", "single", "complete")
    ]
    trees += [
        ("spectral", float("nan"), spectral_tree(W)),
        ("random", float("nan"), random_binary_tree(n, rng)),
    ]
    for p in ps:
        seed = int(rng.integers(2**62))
        trees.append(
            (
                "counts",
                p,
                build_from_counts(SplittingOracle(planted, p, seed=seed), n, p),
            )
        )
        trees.append(
            (
                f"counts K={K}",
                p,
                build_from_counts(
                    SplittingOracle(planted, p, seed=seed), n, p, K=K, rng=rng
                ),
            )
        )
        trees.append(
            (
                f"nearlinear_mw K={K}",
                p,
                build_nearlinear_mw(
                    SplittingOracle(planted, p, seed=seed), Wsp, K, p, rng
                ),
            )
        )
    rows = []
    for name, p, T in trees:
        c, r = _cost_and_revenue(T, W)
        rows.append(dict(method=name, p=p, cost=float(c), revenue=float(r)))
    best_c = min(r["cost"] for r in rows)
    best_r = max(r["revenue"] for r in rows)
    for r in rows:
        r["cost_ratio"] = r["cost"] / best_c
        r["rev_ratio"] = r["revenue"] / best_r
    info = dict(
        n=n,
        m=int((W > 0).sum() // 2),
        planted_cost=rows[0]["cost"],
        avg_cost=rows[1]["cost"],
    )
    return rows, info


def mw_scaling(
    depths: Sequence[int],
    q0: float,
    decay: float,
    n_samples: int,
    p: float,
    K: int,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """MW revenue ratio and wall time of :func:`build_nearlinear_mw` vs average linkage, against ``n``.

    The reference revenue is the best of the planted tree, average linkage and the algorithm's tree.

    Returns:
        rows ``{n, m, mw_ratio, avg_ratio, random_ratio, mw_seconds, avg_seconds, queries}``.
    """
    rng = check_rng(rng)
    rows = []
    for depth in depths:
        W, planted = hsbm(depth, q0, decay, n_samples, rng)
        n = W.shape[0]
        Wsp = sp.csr_matrix(W)
        o = SplittingOracle(planted, p, seed=int(rng.integers(2**62)))
        t0 = time.perf_counter()
        T = build_nearlinear_mw(o, Wsp, K, p, rng)
        t_mw = time.perf_counter() - t0
        t0 = time.perf_counter()
        A = linkage_tree(W, "average")
        t_avg = time.perf_counter() - t0
        revs = {
            k: float(_cost_and_revenue(X, Wsp)[1])
            for k, X in (
                ("mw", T),
                ("avg", A),
                ("planted", planted),
                ("random", random_binary_tree(n, rng)),
            )
        }
        best = max(revs["mw"], revs["avg"], revs["planted"])
        rows.append(
            dict(
                n=n,
                m=int(Wsp.nnz // 2),
                mw_ratio=revs["mw"] / best,
                avg_ratio=revs["avg"] / best,
                random_ratio=revs["random"] / best,
                mw_seconds=t_mw,
                avg_seconds=t_avg,
                queries=o.n_queries,
            )
        )
    return rows


def decoy_comparison(
    W: np.ndarray,
    tree_star: Tree,
    ps: Sequence[float],
    n_oracle_seeds: int,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """Uniform vs decoy noise for :func:`build_from_counts`; the decoy is the average-linkage tree.

    Returns:
        rows ``{noise, p, ratio}`` with ``ratio = cost / cost(tree_star)``.

    Raises:
        TypeError: ``n_oracle_seeds`` not an integer, ``tree_star`` not a Tree, ``rng`` not a
        Generator. ValueError: ``n_oracle_seeds < 1``, bad ``W``.
    """
    n_oracle_seeds = check_int(n_oracle_seeds, "n_oracle_seeds", low=1)
    rng = check_rng(rng)
    W = _check_weights(W)
    tree_star = _check_tree(tree_star, "tree_star", n=W.shape[0])
    n = W.shape[0]
    ref = dasgupta_cost(tree_star, W)
    decoy = linkage_tree(W, "average")
    rows = []
    for p in ps:
        for _ in range(n_oracle_seeds):
            seed = int(rng.integers(2**62))
            for noise in ("uniform", "decoy"):
                o = SplittingOracle(
                    tree_star, p, noise=noise, seed=seed, decoy_tree=decoy
                )
                rows.append(
                    dict(
                        noise=noise,
                        p=p,
                        ratio=dasgupta_cost(build_from_counts(o, n, p), W) / ref,
                    )
                )
    return rows

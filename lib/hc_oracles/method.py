"""Tree-building algorithms with a splitting oracle (Braverman et al., ICML 2025).

The paper's body could not be read for this chapter: the three algorithms below are
**reconstructions** consistent with its abstract (an ``O(1)``-approximation for Dasgupta in
polynomial time; a ``(1 - o(1))``-approximation for Moseley-Wang in near-linear time) and with the
exact triplet identity ``|T*[u v v]| = 2 + #{x : O*(u, v, x) != x}``. They are not transcriptions
of the paper's pseudocode, and no streaming/PRAM variant is implemented.

- :func:`build_insertion`: insert leaves one by one, descending with one query per level.
- :func:`build_from_counts`: count ``c_uv`` over all (or ``K`` sampled) third vertices, debias
  under uniform noise, then average linkage on the estimated LCA sizes.
- :func:`build_nearlinear_mw`: estimate LCA sizes on the graph's edges only (``K`` samples per
  edge), then Kruskal-merge in increasing estimated size.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from icml25.checks import check_array, check_budget, check_int, check_rng
from icml25.kernels import triplets

from ._checks import _check_oracle, _check_p, _check_weights
from .oracle import SplittingOracle
from .trees import Tree, _relabelled, _upper_edges

#: bytes per sampled query of :func:`_sampled_counts` (U, V, x,
#: answers and masks, int64)
_BYTES_PER_SAMPLE = 48

__all__ = [
    "build_insertion",
    "build_from_counts",
    "build_nearlinear_mw",
    "debiased_lca_sizes",
    "all_triplet_counts",
]


# --------------------------------------------------------------------------------------
# 1. Insertion (exact oracle)
# --------------------------------------------------------------------------------------


def _insert_all(oracle: Any, order: np.ndarray) -> Tree:
    """Insert ``order[2:]`` into the cherry ``(order[0], order[1])``.

    At an internal node with children ``L, R`` and representatives ``a in L``, ``b in R`` ask
    ``O(a, b, x)``: answer ``x`` -> ``x`` becomes the sibling of this node; ``b`` (``a, x`` merge
    first) -> descend into ``L``; ``a`` -> descend into ``R``. Reaching a leaf ``l`` makes the
    cherry ``(l, x)``. One query per level: ``O(depth)`` per leaf.
    """
    n = len(order)
    left: dict[int, int] = {}
    right: dict[int, int] = {}
    parent: dict[int, int] = {}
    rep = {i: i for i in range(n)}  # a leaf under each node
    a0, b0 = int(order[0]), int(order[1])
    root = nxt = n
    left[root], right[root], rep[root] = a0, b0, a0
    parent[a0] = parent[b0] = root
    nxt += 1
    for x in order[2:].tolist():
        node = root
        # descend until x's place: above `node`, or a cherry with a leaf
        while node >= n:
            a, b = rep[left[node]], rep[right[node]]
            ans = int(
                oracle.query_batch(np.array([a]), np.array([b]), np.array([x]))[0]
            )
            if ans == x:
                break
            node = left[node] if ans == b else right[node]
        m, nxt = nxt, nxt + 1
        left[m], right[m], rep[m] = node, x, rep[node]
        if node == root:
            root = m
        else:
            pt = parent[node]
            if left[pt] == node:
                left[pt] = m
            else:
                right[pt] = m
            parent[m] = pt
        parent[node] = parent[x] = m
    return _relabelled(root, {v: (left[v], right[v]) for v in left}, n)


def build_insertion(oracle: Any, n: int, rng: np.random.Generator) -> Tree:
    """Recover ``T*`` by inserting the leaves in a random order (reconstruction; exact oracle).

    With a correct oracle every answer is right and the result is ``T*`` exactly, with at most
    ``depth(T*)`` queries per leaf (``<= n ceil(log2 n)`` on a balanced tree). With a noisy oracle
    the answers are followed as given.

    Args:
        oracle: a :class:`SplittingOracle` (or an amplified one) on ``n`` vertices.
        n: number of leaves (>= 2).
        rng: the insertion order's generator.

    Returns:
        the built :class:`Tree`; ``oracle.n_queries`` grows by the queries made.

    Raises:
        TypeError: not an oracle, ``rng`` not a Generator. ValueError: ``n`` mismatch.
    """
    n = check_int(n, "n", low=2)
    oracle = _check_oracle(oracle, n)
    rng = check_rng(rng)
    return _insert_all(oracle, rng.permutation(n))


# --------------------------------------------------------------------------------------
# 2. Counting (Dasgupta target)
# --------------------------------------------------------------------------------------


def _debias(c: np.ndarray, n: int, p: float) -> np.ndarray:
    """``s_hat = 2 + (c - (1 - p) (2/3) (n - 2)) / p`` (reconstruction, uniform noise).

    ``E[c_uv] = p (|T*[u v v]| - 2) + (1 - p) (2/3) (n - 2)``: an ``x`` inside the LCA is counted
    unless a wrong answer names it (prob. ``(1 - p)/3``), one outside is counted when a wrong answer
    names another vertex (prob. ``(1 - p) 2/3``).
    """
    return 2.0 + (c - (1.0 - p) * (2.0 / 3.0) * (n - 2)) / p


def debiased_lca_sizes(C: Any, p: float) -> np.ndarray:
    """Estimated LCA sizes ``s_hat`` from counts ``C[u, v] = #{x : O(u, v, x) != x}`` (over all ``x``).

    Args:
        C: (n, n) counts (int or float, e.g. rescaled sampled counts).
        p: success probability in (0, 1].

    Returns:
        (n, n) float64 ``s_hat`` (diagonal set to 1).

    Raises:
        ValueError: ``C`` not square or a count outside ``[0, n - 2]`` (a count is over the
        ``n - 2`` third vertices), ``p`` outside (0, 1].
    """
    C = check_array(C, "C", ndim=2, dtype=np.float64)
    if C.shape[0] != C.shape[1] or C.shape[0] < 3:
        raise ValueError(f"C must be square (n, n) with n >= 3, got shape {C.shape}")
    C = check_array(C, "C", low=0.0, high=float(C.shape[0] - 2))
    s = _debias(C, C.shape[0], _check_p(p))
    np.fill_diagonal(s, 1.0)
    return s


def _counts_from_answers(
    n: int, lo: np.ndarray, mid: np.ndarray, hi: np.ndarray, ans: np.ndarray
) -> np.ndarray:
    """Each triple adds 1 to the two pairs that contain its answer (``O(u, v, x) != x``)."""
    C = np.zeros((n, n), dtype=np.int64)
    # pair (a, b), third c
    for a, b, c in ((lo, mid, hi), (lo, hi, mid), (mid, hi, lo)):
        hit = ans != c
        np.add.at(C, (a[hit], b[hit]), 1)
    return (C + C.T).astype(np.int32)


def all_triplet_counts(oracle: Any) -> np.ndarray:
    """``C[u, v] = #{x : O(u, v, x) != x}`` by asking the oracle every unordered triple once.

    A persistent :class:`SplittingOracle` is counted by the kernel
    (:func:`icml25.kernels.triplets.triplet_counts`, GPU when there is one); any other oracle is
    asked through ``query_batch`` in chunks. ``n_queries`` grows by ``C(n, 3)`` either way.

    Returns:
        (n, n) int32 counts, zero diagonal.

    Raises:
        TypeError: not an oracle. TooLargeError: the kernel's limit (``n^3`` ordered triples:
        :data:`icml25.kernels.triplets.CPU_MAX_TRIPLES` on the CPU reference, minutes of work,
        ``n > 1709``; :data:`~icml25.kernels.triplets.GPU_MAX_TRIPLES` on a GPU) or, for any
        other oracle, ``C(n, 3)`` queries beyond the CPU limit.
    """
    oracle = _check_oracle(oracle)
    n = oracle.n
    n_triples = n * (n - 1) * (n - 2) // 6
    if isinstance(oracle, SplittingOracle) and oracle.persistent:
        # refuses what cannot fit
        C = triplets.triplet_counts(oracle.S, oracle.p, oracle.seed, oracle.D)
        oracle.n_queries += n_triples
        return C
    check_budget(
        f"all_triplet_counts(n={n}, a non-persistent or wrapped oracle)",
        n_bytes=4.0 * n * n * 2 + 8.0 * 12 * n * n,
        n_operations=6.0 * n_triples,
        max_operations=triplets.CPU_MAX_TRIPLES,
    )
    C = np.zeros((n, n), dtype=np.int32)
    for a in range(n - 2):
        b, c = np.triu_indices(n - a - 1, 1)
        b, c = b + a + 1, c + a + 1
        lo = np.full(len(b), a, dtype=np.int64)
        C += _counts_from_answers(n, lo, b, c, oracle.query_batch(lo, b, c))
    return C


def _sampled_counts(
    oracle: Any, u: np.ndarray, v: np.ndarray, K: int, rng: np.random.Generator
) -> np.ndarray:
    """``(n - 2)/K * #{k : O(u, v, x_k) != x_k}`` for ``K`` uniform third vertices per pair (with replacement)."""
    n = oracle.n
    lo, hi = np.minimum(u, v)[:, None], np.maximum(u, v)[:, None]
    x = rng.integers(0, n - 2, size=(len(u), K))
    x = x + (x >= lo)
    x = x + (x >= hi)
    U, V = np.repeat(u, K), np.repeat(v, K)
    ans = oracle.query_batch(U, V, x.ravel()).reshape(len(u), K)
    return (ans != x).sum(axis=1) * (n - 2) / K


def _average_linkage_on(s_hat: np.ndarray) -> Tree:
    """Average linkage with ``s_hat`` as the dissimilarity (an ultrametric when exact)."""
    d = np.clip(s_hat, 2.0, None)
    Z = linkage(squareform(d, checks=False), method="average")
    return Tree.from_linkage(Z)


def build_from_counts(
    oracle: Any,
    n: int,
    p: float,
    K: int | None = None,
    rng: np.random.Generator | None = None,
) -> Tree:
    """Counting algorithm (reconstruction; the paper's Dasgupta target is an ``O(1)`` approximation).

    Count ``c_uv`` over all third vertices (``K=None``: ``C(n, 3)`` queries) or ``K`` sampled ones
    per pair (``K C(n, 2)`` queries, rescaled by ``(n - 2)/K``), debias with :func:`debiased_lca_sizes`
    (valid under uniform noise only) and build average linkage on ``s_hat``. At ``p = 1`` the counts
    are ``S - 2``, an ultrametric, and average linkage returns ``T*`` exactly.

    Args:
        oracle: a :class:`SplittingOracle` on ``n`` vertices; n: leaves (>= 3);
        p: the success probability assumed by the debiasing, in (0, 1];
        K: sampled third vertices per pair, or ``None`` for all; rng: needed when ``K`` is given.

    Returns:
        the built :class:`Tree`.

    Raises:
        TypeError: not an oracle, ``rng`` neither a Generator nor ``None`` (checked even when
        ``K=None`` does not draw). ``rng=None`` with ``K``. ValueError: bad ``n``, ``p`` or ``K``.
        TooLargeError: ``K C(n, 2)`` sampled queries beyond memory or the work limit.
    """
    n = check_int(n, "n", low=3)
    oracle = _check_oracle(oracle, n)
    p = _check_p(p)
    rng = check_rng(rng, allow_none=True)
    if K is None:
        C = all_triplet_counts(oracle).astype(np.float64)
    else:
        K = check_int(K, "K", low=1)
        if rng is None:
            raise TypeError(
                "build_from_counts(K=...) samples third vertices: pass rng, a numpy.random.Generator"
            )
        n_queries = float(K) * n * (n - 1) / 2
        check_budget(
            f"build_from_counts(n={n}, K={K})",
            n_bytes=_BYTES_PER_SAMPLE * n_queries,
            n_operations=100.0 * n_queries,
        )
        u, v = np.triu_indices(n, 1)
        C = np.zeros((n, n))
        C[u, v] = _sampled_counts(
            oracle, u.astype(np.int64), v.astype(np.int64), K, rng
        )
        C = C + C.T
    s = _debias(C, n, p)
    np.fill_diagonal(s, 0.0)
    return _average_linkage_on(s)


# --------------------------------------------------------------------------------------
# 3. Near-linear time (Moseley-Wang target)
# --------------------------------------------------------------------------------------


def _kruskal_tree(n: int, u: np.ndarray, v: np.ndarray, key: np.ndarray) -> Tree:
    """Merge components along edges in increasing ``key``; join what is left in index order.

    Pairs in different components carry no edge, so the order of the final joins changes neither
    revenue nor cost.
    """
    parent = np.arange(n)
    node = np.arange(n)  # tree node of each component root
    children: list[tuple[int, int]] = []

    def find(a: int) -> int:
        root = a
        while parent[root] != root:
            root = parent[root]
        while parent[a] != root:
            parent[a], a = root, parent[a]
        return root

    for e in np.argsort(key, kind="stable").tolist():
        ra, rb = find(int(u[e])), find(int(v[e]))
        if ra != rb:
            children.append((int(node[ra]), int(node[rb])))
            parent[rb] = ra
            node[ra] = n + len(children) - 1
    roots = [r for r in range(n) if find(r) == r]
    cur = int(node[roots[0]])
    for r in roots[1:]:
        children.append((cur, int(node[r])))
        cur = n + len(children) - 1
    return Tree(np.array(children, dtype=np.int64).reshape(-1, 2), n)


def build_nearlinear_mw(
    oracle: Any, W_sparse: Any, K: int, p: float, rng: np.random.Generator
) -> Tree:
    """Near-linear MW algorithm (reconstruction): LCA sizes estimated on edges only, then Kruskal.

    For each edge ``(u, v)`` of ``W`` sample ``K`` third vertices, estimate
    ``s_hat_uv = 2 + ((n - 2) c_uv / K - (1 - p)(2/3)(n - 2)) / p`` and merge components in increasing
    ``s_hat`` (single linkage restricted to the edges; ties by edge order). ``m K`` queries and
    ``O(m K + m log m)`` time. Revenue only counts edges, so pairs without an edge are joined last
    in any order.

    Args:
        oracle: a :class:`SplittingOracle` on ``n`` vertices.
        W_sparse: (n, n) weights as :func:`icml25.hc_oracles.dasgupta_cost` (sparse or dense).
        K: third vertices per edge (>= 1); p: assumed success probability in (0, 1];
        rng: generator of the sampled third vertices.

    Returns:
        the built :class:`Tree`.

    Raises:
        TypeError: not an oracle, ``rng`` not a Generator. ValueError: bad ``W_sparse``, ``K``, ``p``.
        TooLargeError: ``m K`` sampled queries beyond memory or the work limit.
    """
    W = _check_weights(W_sparse, "W_sparse")
    n = W.shape[0]
    oracle = _check_oracle(oracle, n)
    K = check_int(K, "K", low=1)
    p = _check_p(p)
    rng = check_rng(rng)
    u, v, _ = _upper_edges(W)
    n_queries = float(len(u)) * K
    check_budget(
        f"build_nearlinear_mw(m={len(u)}, K={K})",
        n_bytes=_BYTES_PER_SAMPLE * n_queries,
        n_operations=100.0 * n_queries,
    )
    if n < 3 or len(u) == 0:
        return _kruskal_tree(n, u, v, np.zeros(len(u)))
    c = _sampled_counts(oracle, u, v, K, rng)
    return _kruskal_tree(n, u, v, _debias(c, n, p))

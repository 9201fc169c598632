"""Binary trees on ``n`` leaves, the Dasgupta and Moseley-Wang objectives, and the exact optimum.

A tree is stored in SciPy's linkage layout: merge ``i`` joins nodes ``children[i, 0]`` and
``children[i, 1]`` into node ``n + i`` (leaves are ``0..n-1``, the root is ``2n - 2``), and every
child id is smaller than its parent's. ``|T[u v v]|`` is the number of leaves under the lowest
common ancestor of ``u`` and ``v``; :meth:`Tree.lca_size_matrix` holds it for every pair.

Objectives (Dasgupta 2016; Moseley and Wang 2017), for symmetric weights ``W >= 0``:

- ``cost_G(T) = sum_{u<v} w_uv |T[u v v]|`` (minimise),
- ``rev_G(T) = sum_{u<v} w_uv (n - |T[u v v]|)`` (maximise), so ``cost + rev = n sum w`` and one
  tree is optimal for both.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp

from icml25.checks import check_array, check_budget, check_int, check_rng
from icml25.kernels import triplets

from ._checks import _check_tree, _check_weights

#: bytes per leaf of the Python-level tree builders (lists, dicts and tuples of ints)
_BYTES_PER_LEAF = 400

__all__ = [
    "Tree",
    "random_binary_tree",
    "balanced_tree",
    "enumerate_binary_trees",
    "same_tree",
    "dasgupta_cost",
    "mw_revenue",
    "triplet_revenue",
    "optimal_tree",
]


@dataclass(frozen=True, eq=False)
class Tree:
    """A rooted binary tree with leaves ``0..n-1`` (SciPy linkage layout, see the module doc).

    Attributes:
        children: (n - 1, 2) int64; merge ``i`` creates node ``n + i``.
        n: number of leaves (>= 2).
    """

    children: np.ndarray
    n: int

    def __post_init__(self) -> None:
        ch = check_array(self.children, "children", kind="int", ndim=2)
        n = check_int(self.n, "n", low=2)
        if ch.shape != (n - 1, 2):
            raise ValueError(
                f"children must have shape ({n - 1}, 2) for n = {n}, got {ch.shape}: not a binary tree"
            )
        limit = n + np.arange(n - 1)
        if ch.size and (ch.min() < 0 or np.any(ch.max(axis=1) >= limit)):
            raise ValueError(
                "children: merge i may only join nodes with ids < n + i (not a binary tree)"
            )
        used = np.bincount(ch.ravel(), minlength=2 * n - 1)
        if np.any(used[:-1] != 1) or used[-1] != 0:
            raise ValueError(
                "children: every node but the root must be used exactly once (not a binary tree)"
            )
        ch = ch.copy()
        ch.flags.writeable = False
        object.__setattr__(self, "children", ch)
        object.__setattr__(self, "n", n)

    @classmethod
    def from_linkage(cls, Z: Any) -> "Tree":
        """The tree of a SciPy linkage matrix ``Z`` ((n - 1, 4): two child ids, a height, a size).

        Raises:
            ValueError: ``Z`` is not (n - 1, 4), a child id is not a whole number in
                ``[0, 2n - 3]``, the size column disagrees with the children, or ``Z`` is not a
                binary tree (all naming ``Z``).
        """
        Z = check_array(Z, "Z", ndim=2)
        if Z.shape[0] < 1 or Z.shape[1] != 4:
            raise ValueError(f"Z must have shape (n - 1, 4) with n >= 2, got {Z.shape}")
        n = Z.shape[0] + 1
        ids = Z[:, :2]
        if np.any(ids != np.round(ids)) or ids.min() < 0 or ids.max() > 2 * n - 3:
            raise ValueError(
                f"Z: child ids in the first two columns must be whole numbers in [0, {2 * n - 3}]"
            )
        try:
            tree = cls(ids.astype(np.int64), n)
        except ValueError as err:
            raise ValueError(f"Z is not a binary tree's linkage: {err}") from err
        if not np.array_equal(tree._sizes[n:], Z[:, 3]):
            raise ValueError(
                "Z: the size column (Z[:, 3]) disagrees with the cluster sizes of the children"
            )
        return tree

    def to_linkage(self) -> np.ndarray:
        """(n - 1, 4) float64 SciPy linkage: children, height ``|cluster|`` (monotone), size."""
        s = self.sizes()[self.n :]
        return np.column_stack(
            [
                self.children.astype(np.float64),
                s.astype(np.float64),
                s.astype(np.float64),
            ]
        )

    def sizes(self) -> np.ndarray:
        """(2n - 1,) int64 number of leaves under each node."""
        return self._sizes.copy()

    @functools.cached_property
    def _sizes(self) -> np.ndarray:
        s = np.ones(2 * self.n - 1, dtype=np.int64)
        for i, (a, b) in enumerate(self.children):
            s[self.n + i] = s[a] + s[b]
        return s

    @functools.cached_property
    def _lca(self) -> np.ndarray:
        n = self.n
        S = np.ones((n, n), dtype=np.int32)
        members: list[list[int]] = [[i] for i in range(n)] + [[] for _ in range(n - 1)]
        for i, (a, b) in enumerate(self.children.tolist()):
            A, B = members[a], members[b]
            s = len(A) + len(B)
            S[np.ix_(A, B)] = s
            S[np.ix_(B, A)] = s
            members[n + i] = A + B
            members[a] = members[b] = []  # freed: O(n^2) memory at most once
        S.flags.writeable = False
        return S

    def lca_size_matrix(self) -> np.ndarray:
        """(n, n) int32 ``S[u, v] = |T[u v v]|`` (``S[u, u] = 1``), in O(n^2): each merge of ``A``
        and ``B`` sets ``S[A x B] = |A| + |B|``. Read-only (cached).

        Raises:
            TooLargeError: the ``4 n^2`` bytes do not fit.
        """
        if "_lca" not in self.__dict__:
            check_budget(
                f"Tree.lca_size_matrix(n={self.n})",
                n_bytes=4.0 * self.n**2 + _BYTES_PER_LEAF * self.n,
            )
        return self._lca

    def depth(self) -> int:
        """Number of internal nodes on the longest root-to-leaf path."""
        d = np.zeros(2 * self.n - 1, dtype=np.int64)
        for i, (a, b) in enumerate(self.children):
            d[self.n + i] = 1 + max(d[a], d[b])
        return int(d[-1])


def _from_nested(nested: Any, n: int) -> Tree:
    """A :class:`Tree` from nested pairs of leaf ids, e.g. ``((0, 1), 2)`` (iterative: any depth)."""
    children: list[tuple[int, int]] = []
    done: list[int] = []  # ids of finished subtrees
    stack: list[tuple[Any, bool]] = [(nested, False)]
    while stack:
        t, expanded = stack.pop()
        if not isinstance(t, tuple):
            done.append(int(t))
        elif expanded:
            b, a = done.pop(), done.pop()
            children.append((a, b))
            done.append(n + len(children) - 1)
        else:
            stack += [(t, True), (t[1], False), (t[0], False)]
    return Tree(np.array(children, dtype=np.int64).reshape(-1, 2), n)


def _relabelled(root: int, kids: dict[int, tuple[int, int]], n: int) -> Tree:
    """The :class:`Tree` of a pointer structure (``kids[v] = (left, right)`` for internal ``v``,
    leaves ``0..n-1``, internal ids arbitrary), renumbered in post-order so children come first."""
    order: list[int] = []
    stack = [(root, False)]
    while stack:
        v, done = stack.pop()
        if v < n:
            continue
        if done:
            order.append(v)
        else:
            stack += [(v, True), (kids[v][1], False), (kids[v][0], False)]
    new_id = {v: n + i for i, v in enumerate(order)}
    ch = np.array(
        [
            [new_id.get(kids[v][0], kids[v][0]), new_id.get(kids[v][1], kids[v][1])]
            for v in order
        ],
        dtype=np.int64,
    )
    return Tree(ch.reshape(-1, 2), n)


def random_binary_tree(n: int, rng: np.random.Generator) -> Tree:
    """A uniformly random rooted binary tree on leaves ``0..n-1`` (one of ``(2n - 3)!!``).

    Leaf ``k`` is inserted above a uniformly chosen node of the tree on ``0..k-1`` (each of the
    ``2k - 1`` nodes, the root included), which gives every tree the same probability.

    Raises:
        ValueError: ``n < 2``. TypeError: ``rng`` is not a Generator.
        TooLargeError: about 400 bytes a leaf (Python lists and dicts) do not fit.
    """
    n = check_int(n, "n", low=2)
    rng = check_rng(rng)
    check_budget(
        f"random_binary_tree(n={n})",
        n_bytes=float(_BYTES_PER_LEAF) * n,
        n_operations=1e3 * n,
    )
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    kids = np.full((2 * n - 1, 2), -1, dtype=np.int64)
    nodes = [0, 1]
    nxt = n  # next internal id (renumbered topologically below)
    kids[nxt] = (0, 1)
    parent[0] = parent[1] = nxt
    root = nxt
    nodes.append(nxt)
    nxt += 1
    for k in range(2, n):
        c = nodes[int(rng.integers(len(nodes)))]
        m = nxt
        nxt += 1
        pc = parent[c]
        kids[m] = (c, k)
        parent[c] = parent[k] = m
        parent[m] = pc
        if pc < 0:
            root = m
        else:
            kids[pc, 0 if kids[pc, 0] == c else 1] = m
        nodes += [k, m]
    return _relabelled(
        root,
        {v: (int(a), int(b)) for v, (a, b) in enumerate(kids.tolist()) if a >= 0},
        n,
    )


def balanced_tree(n: int) -> Tree:
    """The balanced binary tree on ``0..n-1`` (halves ``[lo, mid)`` and ``[mid, hi)`` recursively).

    Raises:
        ValueError: ``n < 2``. TooLargeError: about 400 bytes a leaf do not fit.
    """
    n = check_int(n, "n", low=2)
    check_budget(
        f"balanced_tree(n={n})",
        n_bytes=float(_BYTES_PER_LEAF) * n,
        n_operations=1e3 * n,
    )

    def build(lo: int, hi: int) -> Any:
        if hi - lo == 1:
            return lo
        mid = (lo + hi + 1) // 2
        return (build(lo, mid), build(mid, hi))

    return _from_nested(build(0, n), n)


def _insertions(t: Any, k: int) -> Iterator[Any]:
    yield (t, k)
    if isinstance(t, tuple):
        for left in _insertions(t[0], k):
            yield (left, t[1])
        for right in _insertions(t[1], k):
            yield (t[0], right)


def enumerate_binary_trees(n: int) -> list[Tree]:
    """All ``(2n - 3)!!`` rooted binary trees on leaves ``0..n-1`` (``n <= 7``: 10 395 trees).

    Raises:
        ValueError: ``n < 2`` or ``n > 7``.
    """
    n = check_int(n, "n", low=2, high=7)
    trees: list[Any] = [(0, 1)]
    for k in range(2, n):
        trees = [t2 for t in trees for t2 in _insertions(t, k)]
    return [_from_nested(t, n) for t in trees]


def same_tree(a: Tree, b: Tree) -> bool:
    """Whether two binary trees on the same leaves are equal as leaf-labelled trees.

    Equal LCA-size matrices mean equal triplets (``x`` splits from ``u, v`` iff ``S_uv < S_ux``),
    and a binary tree is determined by its triplets.

    Raises:
        TypeError: an argument is not a :class:`Tree`.
    """
    _check_tree(a, "a")
    _check_tree(b, "b")
    return a.n == b.n and bool(np.array_equal(a.lca_size_matrix(), b.lca_size_matrix()))


def _upper_edges(
    W: np.ndarray | sp.csr_matrix,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u, v, w)`` of the pairs ``u < v`` with ``w_uv > 0``."""
    if sp.issparse(W):
        U = sp.triu(W, 1).tocoo()
        keep = U.data > 0
        return U.row[keep].astype(np.int64), U.col[keep].astype(np.int64), U.data[keep]
    u, v = np.nonzero(np.triu(W, 1))
    return u.astype(np.int64), v.astype(np.int64), W[u, v]


# --------------------------------------------------------------------------------------
# Objectives
# --------------------------------------------------------------------------------------


def _edge_lca_sizes(tree: Tree, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``|T[u_e v v_e]|`` for each pair ``e`` by binary lifting (O((n + m) log n), no n^2 matrix)."""
    n = tree.n
    N = 2 * n - 1
    parent = np.empty(N, dtype=np.int64)
    parent[tree.children.ravel()] = np.repeat(np.arange(n, N, dtype=np.int64), 2)
    parent[N - 1] = N - 1
    depth = np.zeros(N, dtype=np.int64)
    for i in range(n - 2, -1, -1):  # parents have larger ids: top-down in decreasing id
        depth[tree.children[i]] = depth[n + i] + 1
    levels = max(1, int(depth.max()).bit_length())
    up = [parent]
    for _ in range(levels - 1):
        up.append(up[-1][up[-1]])
    a, b = u.astype(np.int64).copy(), v.astype(np.int64).copy()
    swap = depth[a] < depth[b]
    a[swap], b[swap] = b[swap], a[swap]
    diff = depth[a] - depth[b]
    for k in range(levels):
        sel = ((diff >> k) & 1).astype(bool)
        a[sel] = up[k][a[sel]]
    for k in range(levels - 1, -1, -1):
        pa, pb = up[k][a], up[k][b]
        move = pa != pb
        a[move], b[move] = pa[move], pb[move]
    lca = np.where(a == b, a, parent[a])
    return tree._sizes[lca]


def _cost_and_revenue(tree: Tree, W: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """``[cost_G(T), rev_G(T)]`` with ``cost = sum_{u<v} w_uv |T[u v v]|``, ``rev = sum w (n - |T[u v v]|)``.

    Sparse ``W``: LCA sizes of the edges only (:func:`_edge_lca_sizes`); dense: the LCA matrix."""
    if sp.issparse(W):
        u, v, w = _upper_edges(W)
        s = _edge_lca_sizes(tree, u, v).astype(np.float64)
        return np.array([w @ s, w @ (tree.n - s)])
    return triplets.lca_sums(W, tree.lca_size_matrix())


def _objective_budget(what: str, tree: Tree, W: np.ndarray | sp.csr_matrix) -> None:
    n = tree.n
    if sp.issparse(W):
        levels = max(1, n.bit_length())
        check_budget(what, n_bytes=8.0 * (2 * n) * (levels + 3) + 64.0 * W.nnz)
    else:
        check_budget(what, n_bytes=4.0 * n * n + 40.0 * n * n)


def dasgupta_cost(tree: Tree, W: Any) -> float:
    """Dasgupta's cost ``cost_G(T) = sum_{u<v} w_uv |T[u v v]|`` (Dasgupta 2016; Sec. 2 of the paper).

    Args:
        tree: a :class:`Tree` on ``n`` leaves.
        W: (n, n) float64 symmetric weights >= 0 with a zero diagonal (dense or ``scipy.sparse``).

    Returns:
        the cost (float, same units as ``W``). A sibling pair of weight ``w`` costs ``2 w``.

    Raises:
        TypeError: ``tree`` is not a Tree. ValueError: bad ``W`` or a size mismatch.
        TooLargeError: the memory of the LCA sizes (dense: ``n^2``; sparse: per edge) does not fit.
    """
    W = _check_weights(W)
    tree = _check_tree(tree, n=W.shape[0])
    _objective_budget(f"dasgupta_cost(n={tree.n})", tree, W)
    return float(_cost_and_revenue(tree, W)[0])


def mw_revenue(tree: Tree, W: Any) -> float:
    """Moseley-Wang revenue ``rev_G(T) = sum_{u<v} w_uv (n - |T[u v v]|)`` (Moseley and Wang 2017).

    Args and Raises: as :func:`dasgupta_cost`.

    Returns:
        the revenue (float); ``cost + revenue = n sum_{u<v} w_uv``.
    """
    W = _check_weights(W)
    tree = _check_tree(tree, n=W.shape[0])
    _objective_budget(f"mw_revenue(n={tree.n})", tree, W)
    return float(_cost_and_revenue(tree, W)[1])


def _triplet_revenue(S: np.ndarray, W: np.ndarray) -> float:
    """``rev(T) = sum_{u<v<x} w_{pair merged first}``: each triple pays the weight of the pair whose
    LCA is lowest, since ``n - |T[u v v]|`` counts the ``x`` outside ``T[u v v]``."""
    total = 0.0
    n = S.shape[0]
    for a in range(n - 2):  # one a at a time: (n^2) pairs per step
        bc = np.array(list(itertools.combinations(range(a + 1, n), 2)), dtype=np.int64)
        if not len(bc):
            continue
        b, c = bc[:, 0], bc[:, 1]
        sab, sac = S[a, b], S[a, c]
        # the lowest-LCA pair
        w = np.where(sab < sac, W[a, b], np.where(sac < sab, W[a, c], W[b, c]))
        total += float(w.sum())
    return total


def triplet_revenue(tree: Tree, W: Any) -> float:
    """MW revenue as a sum over triples: ``sum_{u<v<x} w_(pair merged first)`` (the triplet identity).

    Args:
        tree: a :class:`Tree`; W: (n, n) weights as :func:`dasgupta_cost`, n <= 400 (the
            ``n^3 / 6`` triples of n = 400 are the work limit).

    Returns:
        the revenue (float), equal to :func:`mw_revenue` up to rounding.

    Raises:
        as :func:`dasgupta_cost`; TooLargeError for ``n > 400`` (``n^3 / 6`` triples beyond
        ``400^3 / 6``).
    """
    W = _check_weights(W)
    tree = _check_tree(tree, n=W.shape[0])
    check_budget(
        f"triplet_revenue(n={tree.n})",
        n_operations=tree.n**3 / 6,
        max_operations=400**3 / 6,
    )
    W = W.toarray() if sp.issparse(W) else W
    return _triplet_revenue(tree.lca_size_matrix(), W)


# --------------------------------------------------------------------------------------
# The exact optimum (subset dynamic programme)
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _dp_structure(
    n: int,
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]:
    """Bits of every subset and, per size k, the splits (S, A, B) with A holding S's lowest vertex."""
    masks = np.arange(1 << n, dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(n)) & 1).astype(np.float64)
    pop = bits.sum(axis=1).astype(np.int64)
    levels = []
    for k in range(2, n + 1):
        Ss, As = [], []
        for S in masks[pop == k].tolist():
            pos = [i for i in range(n) if S >> i & 1]
            low, rest = 1 << pos[0], np.array([1 << i for i in pos[1:]], dtype=np.int64)
            # drop r = all ones (A = S)
            r = np.arange((1 << (k - 1)) - 1, dtype=np.int64)
            A = low | (((r[:, None] >> np.arange(k - 1)) & 1) @ rest)
            Ss.append(np.full(len(A), S, dtype=np.int64))
            As.append(A)
        Sa, Aa = np.concatenate(Ss), np.concatenate(As)
        starts = np.flatnonzero(np.r_[True, Sa[1:] != Sa[:-1]])
        levels.append((Sa, Aa, Sa ^ Aa, starts))
    return bits, levels


def _optimal_split(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``OPT(S) = min_{A | B = S} OPT(A) + OPT(B) + |S| w(A, B)``, ``OPT({v}) = 0`` (all subsets S).

    ``w(A, B) = w(S) - w(A) - w(B)`` with ``w(X)`` the weight inside ``X``; a merge of ``A`` and ``B``
    charges ``|A| + |B|`` to every edge across it, which is ``cost_G`` node by node.

    Returns:
        ``(opt, best_A)``: (2^n,) optimal costs and the chosen side holding the lowest vertex.
    """
    n = W.shape[0]
    bits, levels = _dp_structure(n)
    inside = 0.5 * np.einsum("si,ij,sj->s", bits, W, bits)  # w(X) for every subset X
    opt = np.zeros(1 << n)
    best = np.zeros(1 << n, dtype=np.int64)
    for k, (Sa, Aa, Ba, starts) in enumerate(levels, start=2):
        val = opt[Aa] + opt[Ba] + k * (inside[Sa] - inside[Aa] - inside[Ba])
        lo = np.minimum.reduceat(val, starts)
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(Sa)]))
        hit = np.flatnonzero(val <= lo[group])
        first = hit[np.r_[True, group[hit][1:] != group[hit][:-1]]]
        opt[Sa[starts]] = lo
        best[Sa[starts]] = Aa[first]
    return opt, best


def optimal_tree(W: Any) -> Tree:
    """A Dasgupta-optimal (hence also MW-optimal) tree, by the exact subset DP (``n <= 14``).

    ``3^n / 2`` splits are scored level by level (vectorised). Since ``cost + rev = n sum w``, the
    minimiser of cost is the maximiser of revenue.

    Args:
        W: (n, n) weights as :func:`dasgupta_cost`, ``2 <= n <= 14``.

    Returns:
        an optimal :class:`Tree` (ties broken towards the first split in subset order).

    Raises:
        ValueError: bad ``W`` or ``n > 14``.
    """
    W = _check_weights(W)
    W = W.toarray() if sp.issparse(W) else W
    n = W.shape[0]
    if n > 14:
        raise ValueError(
            f"W has n = {n} vertices; optimal_tree's subset DP accepts n <= 14 (3^n work)"
        )
    _, best = _optimal_split(W)

    def build(S: int) -> Any:
        if S & (S - 1) == 0:
            return S.bit_length() - 1
        A = int(best[S])
        return (build(A), build(S ^ A))

    return _from_nested(build((1 << n) - 1), n)

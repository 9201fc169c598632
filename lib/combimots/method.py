"""Pareto Monte Carlo tree search over a make-on-demand space (CombiMOTS, Southiratn et al., ICML 2025).

Reconstructed from the paper's official code (``Tibogoss/CombiMOTS``, branch ``legacy``,
``pmcts/generate/{node,generator}.py``), which extends SyntheMol's MCTS (Swanson et al. 2024) to vector
rewards; written anew here, no code copied. The tree is SyntheMol's: a node is a tuple of SMILES (the
first the molecule built so far, the rest blocks waiting to react) with its construction log; its
children are (a) the products of every template whose slots the tuple fills exactly and (b) the tuple
plus one block that fills an empty slot of some template (the root: every block). What CombiMOTS
changes is the value: every node carries an objective *vector* ``P`` (the mean over its molecules),
accumulated values ``W`` (a vector) and visits ``N``; selection keeps the children whose Pareto UCB
vectors no sibling dominates and picks one of them uniformly; the backup takes the element-wise max.

The Pareto mask and non-dominated sort are :mod:`icml25.kernels.dominance`'s (shared with chapter 18).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from icml25.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_real,
    check_rng,
)
from icml25.kernels import dominance

from ._checks import _check_objectives
from .defaults import DEFAULTS
from .space import Reaction, _assignments

__all__ = [
    "VARIANTS",
    "pareto_ucb",
    "diversity_factor",
    "pareto_mask",
    "non_dominated_sort",
    "Node",
    "ParetoMCTS",
]

#: the two Pareto UCB formulas of the official code
VARIANTS = ("pmcts", "aizynthfinder")

pareto_mask = dominance.pareto_mask
non_dominated_sort = dominance.non_dominated_sort


# --------------------------------------------------------------------------- Pareto UCB


def pareto_ucb(
    W: Any,
    N: Any,
    P: Any,
    n: int,
    c: float = DEFAULTS.c,
    variant: str = DEFAULTS.variant,
) -> np.ndarray:
    """Pareto UCB vectors of ``k`` sibling nodes (the official code's ``Node.get_ucb_score``).

    ``pmcts``:           ``UCB_i = W_i / N_i + c P_i sqrt(ln D + 4 ln(1 + n) / (2 (1 + N_i)))``
    ``aizynthfinder``:   ``UCB_i = W_i / N_i + c P_i sqrt(ln D + ln(1 + n)) / (1 + N_i)``

    with ``W_i / N_i := 0`` for an unvisited child, ``n = sum_j N_j`` over the siblings and ``D`` the number
    of objectives (the ``ln D`` term is the multi-objective UCB of Chen et al.'s Pareto MCTS).

    Args:
        W: (k, D) accumulated value vectors (>= 0). N: (k,) visit counts (>= 0 integers).
        P: (k, D) prior objective vectors of the children (>= 0). n: total sibling visits (>= 0).
        c: exploration weight >= 0 (the paper's 10). variant: ``"pmcts"`` or ``"aizynthfinder"``.

    Returns:
        (k, D) float64 UCB vectors (every objective maximised).

    Raises:
        ValueError (naming the argument): shapes differ, ``F``-like matrices not 2-D, NaN or negative
        values, ``c < 0``, ``n < 0`` or ``n < sum(N)``, unknown ``variant``.
    """
    W = _check_objectives(W, "W")
    P = _check_objectives(P, "P")
    if P.shape != W.shape:
        raise ValueError(f"P must have the shape of W {W.shape}, got {P.shape}")
    N = check_array(N, "N", shape=(W.shape[0],), kind="int", low=0)
    n = check_int(n, "n", low=0)
    if n < int(N.sum()):
        raise ValueError(
            f"n (total sibling visits) must be >= sum(N) = {int(N.sum())}, got {n}"
        )
    return _pareto_ucb(
        W,
        N.astype(np.float64),
        P,
        float(n),
        check_real(c, "c", low=0.0),
        check_choice(variant, "variant", VARIANTS),
    )


def _pareto_ucb(
    W: np.ndarray, N: np.ndarray, P: np.ndarray, n: float, c: float, variant: str
) -> np.ndarray:
    """``Q + c P * bonus``: ``Q = W / N`` (0 when ``N = 0``); bonus ``sqrt(ln D + 2 ln(1+n) / (1+N))``
    (``pmcts``: the code's ``4 ln(1+n) / (2 (1+N))``) or ``sqrt(ln D + ln(1+n)) / (1+N)`` (``aizynthfinder``)."""
    D = W.shape[1]
    Q = np.divide(W, N[:, None], out=np.zeros_like(W), where=N[:, None] > 0)
    if variant == "pmcts":
        bonus = np.sqrt(math.log(D) + 4.0 * math.log1p(n) / (2.0 * (1.0 + N)))
    else:
        bonus = math.sqrt(math.log(D) + math.log1p(n)) / (1.0 + N)
    return Q + c * P * bonus[:, None]


def diversity_factor(
    max_counts: Any, decay: float = DEFAULTS.diversity_decay
) -> np.ndarray:
    """Building-block diversity factor ``exp(-(count - 1) / decay)`` multiplying a child's UCB vector.

    ``count`` is the largest number of finished molecules (plus the block's own node) that use any block of
    the child; the ``- 1`` discounts the block's own node (SyntheMol divides its scalar score by the same
    exponential).

    Args:
        max_counts: (k,) integers >= 0. decay: > 0 (the paper's 100).

    Returns:
        (k,) float64 factors (> 1 for a block no finished molecule uses yet, as in the official code).
    """
    counts = check_array(max_counts, "max_counts", ndim=1, kind="int", low=0)
    return np.exp(
        -(counts.astype(np.float64) - 1.0)
        / check_real(decay, "decay", low=0.0, low_open=True)
    )


# ----------------------------------------------------------------------------- tree


@dataclass(eq=False)
class Node:
    """A node of the search tree (SyntheMol's state; CombiMOTS's vector statistics).

    Attributes:
        molecules: the SMILES tuple (first: the molecule built so far; rest: blocks waiting to react).
        bb: SMILES of the building blocks used. log: construction log, one dict per reaction
            (``reaction_id``, ``reactants`` in slot order, ``reagent_ids``).
        P: (D,) objective vector (mean over ``molecules``). W: (D,) accumulated values. N: visits.
        node_id: order of first selection or completion. rollout: the rollout that created it.
    """

    molecules: tuple[str, ...]
    bb: frozenset[str]
    log: tuple[dict, ...]
    P: np.ndarray
    W: np.ndarray
    N: int = 0
    node_id: int = -1
    rollout: int = 0
    scored: bool = field(default=False, repr=False)

    @property
    def n_reactions(self) -> int:
        """Reactions used so far."""
        return len(self.log)


class ParetoMCTS:
    """CombiMOTS's Pareto MCTS over a one-step (``max_reactions = 1``) make-on-demand space.

    Args:
        objective_fn: ``list[str] -> (n, D)`` objective matrix in [0, 1] (all maximised), e.g.
            :func:`icml25.combimots.stand_in_objectives`; blocks are scored once at construction (the paper
            precomputes block docking scores), products when a node is expanded.
        blocks: DataFrame (``smiles``, ``reagent_id``); reactions: the space's :class:`Reaction` list.
        c: exploration weight >= 0. variant: ``"pmcts"`` or ``"aizynthfinder"``.
        max_reactions: reactions per molecule (>= 1; 1 keeps products inside the orderable REAL space).
        num_expand_nodes: at most this many block children per expansion, drawn afresh at every visit as
            SyntheMol does without ``store_nodes`` (None: all).
        diversity: multiply the UCB by :func:`diversity_factor`.
        rng: the generator of the search's draws (expansion subsets, ties on the front; the official code's
            ``default_rng(rng_seed)``).

    Attributes:
        n_oracle_calls: distinct product SMILES scored (the oracle budget; blocks not counted).
        n_rollouts: rollouts run so far.

    Raises:
        ValueError (naming the argument): ``c < 0``, unknown ``variant``, ``max_reactions < 1``,
        ``num_expand_nodes < 1``, objectives with NaN or negative values, no block fitting any slot.
        TypeError: ``rng`` not a ``numpy.random.Generator``, ``objective_fn`` not callable.
    """

    def __init__(
        self,
        objective_fn: Callable[[list[str]], np.ndarray],
        blocks: pd.DataFrame,
        reactions: Sequence[Reaction],
        c: float = DEFAULTS.c,
        variant: str = DEFAULTS.variant,
        max_reactions: int = DEFAULTS.max_reactions,
        num_expand_nodes: int | None = None,
        diversity: bool = True,
        rng: np.random.Generator | None = None,
    ) -> None:
        if not callable(objective_fn):
            raise TypeError("objective_fn must be callable: list[str] -> (n, D) array")
        self.c = check_real(c, "c", low=0.0)
        self.variant = check_choice(variant, "variant", VARIANTS)
        self.max_reactions = check_int(max_reactions, "max_reactions", low=1)
        self.num_expand_nodes = (
            None
            if num_expand_nodes is None
            else check_int(num_expand_nodes, "num_expand_nodes", low=1)
        )
        self.diversity = check_bool(diversity, "diversity")
        self.rng = check_rng(rng)
        if "smiles" not in getattr(blocks, "columns", ()):
            raise ValueError(
                "blocks must be a DataFrame with columns 'smiles' and 'reagent_id'"
            )
        self.reactions = list(reactions)
        if not self.reactions or not all(
            isinstance(r, Reaction) for r in self.reactions
        ):
            raise TypeError("reactions must be a non-empty list of Reaction")
        self.objective_fn = objective_fn
        self.block_ids = dict(
            zip(blocks["smiles"], (int(v) for v in blocks["reagent_id"]))
        )
        # slot index of every block: (reaction index, slot) pairs it may fill
        # (SMARTS and allowed set)
        self._slots: dict[str, tuple[tuple[int, int], ...]] = {}
        for s in self.block_ids:
            self._slots[s] = tuple(
                (ri, i)
                for ri, r in enumerate(self.reactions)
                for i in r.reactant_matches(s)
            )
        self.root_blocks = [s for s in self.block_ids if self._slots[s]]
        if not self.root_blocks:
            raise ValueError("blocks: no block fits any reaction slot")
        Fb = _check_objectives(objective_fn(self.root_blocks), "objective_fn(blocks)")
        if Fb.shape[0] != len(self.root_blocks):
            raise ValueError(
                f"objective_fn returned {Fb.shape[0]} rows for {len(self.root_blocks)} SMILES"
            )
        self.D = Fb.shape[1]
        self._score: dict[str, np.ndarray] = dict(zip(self.root_blocks, Fb))
        self.n_oracle_calls = 0
        self.n_rollouts = 0
        self.root = Node(
            (),
            frozenset(),
            (),
            np.zeros(self.D),
            np.zeros(self.D),
            node_id=0,
            scored=True,
        )
        self.node_map: dict[tuple[str, ...], Node] = {(): self.root}
        self.bb_counts: Counter[str] = Counter()
        self._products: dict[tuple[str, ...], list[tuple[str, dict]]] = {}
        self._next_blocks: dict[tuple[str, ...], list[str]] = {}

    # --------------------------------------------------------------- expansion

    def _slots_of(self, smiles: str) -> tuple[tuple[int, int], ...]:
        # an intermediate (max_reactions > 1): SMARTS only
        if smiles not in self._slots:
            self._slots[smiles] = tuple(
                (ri, i)
                for ri, r in enumerate(self.reactions)
                for i in r.smarts_matches(smiles)
            )
        return self._slots[smiles]

    def _per_reaction(self, molecules: tuple[str, ...], ri: int) -> list[list[int]]:
        return [[i for rj, i in self._slots_of(m) if rj == ri] for m in molecules]

    def _product_children(self, molecules: tuple[str, ...]) -> list[tuple[str, dict]]:
        """Products of every template whose slots ``molecules`` fill exactly, all assignments (cached)."""
        if molecules in self._products:
            return self._products[molecules]
        out: list[tuple[str, dict]] = []
        seen: set[str] = set()
        for ri, r in enumerate(self.reactions):
            if r.n_reactants != len(molecules):
                continue
            for combo in _assignments(
                self._per_reaction(molecules, ri), r.n_reactants, full=True
            ):
                ordered = [m for _, m in sorted(zip(combo, molecules))]
                entry = {
                    "reaction_id": r.reaction_id,
                    "reactants": tuple(ordered),
                    "reagent_ids": tuple(self.block_ids.get(m, -1) for m in ordered),
                }
                for p in r.run(ordered):
                    if p not in seen:
                        seen.add(p)
                        out.append((p, entry))
        self._products[molecules] = out
        return out

    def _block_children(self, molecules: tuple[str, ...]) -> list[str]:
        """Blocks that fill a still-empty slot of some template the tuple partly fills (root: all; cached)."""
        if not molecules:
            return self.root_blocks
        if molecules in self._next_blocks:
            return self._next_blocks[molecules]
        out: dict[str, None] = {}
        for ri, r in enumerate(self.reactions):
            if r.n_reactants <= len(molecules):
                continue
            for combo in _assignments(
                self._per_reaction(molecules, ri), r.n_reactants, full=False
            ):
                for i in sorted(set(range(r.n_reactants)) - set(combo)):
                    for b in sorted(r.allowed[i]) if r.allowed is not None else ():
                        out.setdefault(b, None)
        res = list(out)
        self._next_blocks[molecules] = res
        return res

    def _children(self, node: Node) -> list[Node]:
        kids: list[Node] = []
        for p, entry in self._product_children(node.molecules):
            kids.append(self._get((p,), node.bb, node.log + (entry,)))
        nxt = self._block_children(node.molecules)
        if self.num_expand_nodes is not None and len(nxt) > self.num_expand_nodes:
            nxt = [
                nxt[j]
                for j in self.rng.choice(
                    len(nxt), size=self.num_expand_nodes, replace=False
                )
            ]
        for b in nxt:
            if b not in node.molecules:
                kids.append(self._get(node.molecules + (b,), node.bb | {b}, node.log))
        kids = list({id(k): k for k in kids}.values())
        self._score_nodes(kids)
        # finished molecules (and single blocks) enter the node map and the block counts
        for k in kids:
            if len(k.molecules) == 1 and k.node_id < 0:
                k.node_id = len(self.node_map)
                self.node_map[k.molecules] = k
                self.bb_counts.update(k.bb)
        return kids

    def _get(
        self, molecules: tuple[str, ...], bb: frozenset[str], log: tuple[dict, ...]
    ) -> Node:
        node = self.node_map.get(molecules)
        if node is None:
            node = Node(
                molecules,
                bb,
                log,
                np.zeros(self.D),
                np.zeros(self.D),
                rollout=self.n_rollouts,
            )
        return node

    def _score_nodes(self, nodes: list[Node]) -> None:
        new = list(
            dict.fromkeys(
                m
                for k in nodes
                if not k.scored
                for m in k.molecules
                if m not in self._score
            )
        )
        if new:
            F = _check_objectives(
                self.objective_fn(new), "objective_fn(products)", D=self.D
            )
            self._score.update(zip(new, F))
            self.n_oracle_calls += len(new)
        for k in nodes:
            if not k.scored:
                k.P = np.mean([self._score[m] for m in k.molecules], axis=0)
                k.scored = True

    # ------------------------------------------------------------- selection and backup

    def _select(self, kids: list[Node]) -> Node:
        """Pareto-optimal child by UCB vector (times the diversity factor), uniformly among them."""
        W = np.stack([k.W for k in kids])
        N = np.array([k.N for k in kids], dtype=np.float64)
        P = np.stack([k.P for k in kids])
        ucb = _pareto_ucb(W, N, P, float(N.sum()), self.c, self.variant)
        if self.diversity:
            counts = np.array([max(self.bb_counts[b] for b in k.bb) for k in kids])
            ucb *= np.exp(-(counts - 1.0) / DEFAULTS.diversity_decay)[:, None]
        front = np.flatnonzero(dominance.pareto_mask(ucb))
        return kids[int(front[self.rng.integers(front.size)])]

    def _rollout(self, node: Node) -> np.ndarray:
        """One descent: select to a finished node, return its ``P``; on the way back ``v <- max(v, P_child)``
        element-wise for a finished child of a node that has reacted, then ``W += v``, ``N += 1``."""
        if node.n_reactions >= self.max_reactions:
            return node.P.copy()
        kids = self._children(node)
        if not kids:
            if len(node.molecules) == 1:
                return node.P.copy()
            raise RuntimeError(f"a partial node {node.molecules} has no children")
        child = self._select(kids)
        if child.molecules not in self.node_map:
            child.node_id = len(self.node_map)
            self.node_map[child.molecules] = child
        v = self._rollout(child)
        if len(child.molecules) == 1 and node.n_reactions > 0:
            v = np.maximum(v, child.P)
        child.W = child.W + v
        child.N += 1
        return v

    def run(self, n_rollouts: int) -> "ParetoMCTS":
        """Run ``n_rollouts`` rollouts from the root (continuing a previous run). Returns ``self``.

        Raises:
            ValueError: ``n_rollouts < 0``.
        """
        for _ in range(check_int(n_rollouts, "n_rollouts", low=0)):
            self.n_rollouts += 1
            self._rollout(self.root)
        return self

    # --------------------------------------------------------------- output

    def molecules(self) -> list[Node]:
        """Finished molecules: one SMILES and at least one reaction, in order of creation."""
        return [
            k
            for k in self.node_map.values()
            if len(k.molecules) == 1 and k.n_reactions > 0
        ]

    def objectives(self) -> np.ndarray:
        """(n, D) objective vectors of :meth:`molecules`."""
        mols = self.molecules()
        return np.stack([k.P for k in mols]) if mols else np.zeros((0, self.D))

    def fronts(self) -> list[list[Node]]:
        """The finished molecules split into successive non-dominated fronts (front 0 = Pareto set)."""
        mols = self.molecules()
        if not mols:
            return []
        rank = dominance.non_dominated_sort(self.objectives())
        return [
            [m for m, r in zip(mols, rank) if r == f]
            for f in range(int(rank.max()) + 1)
        ]

    def recipes(self) -> list[dict]:
        """One recipe per finished molecule: ``smiles``, ``reaction_id``, ``reactants`` (block SMILES in slot
        order), ``reagent_ids`` (Enamine ids), ``objectives`` (D,), ``front`` and ``rollout``."""
        mols = self.molecules()
        rank = (
            dominance.non_dominated_sort(self.objectives())
            if mols
            else np.zeros(0, dtype=np.int64)
        )
        out = []
        for m, r in zip(mols, rank):
            last = m.log[-1]
            out.append(
                {
                    "smiles": m.molecules[0],
                    "reaction_id": last["reaction_id"],
                    "reactants": last["reactants"],
                    "reagent_ids": last["reagent_ids"],
                    "objectives": m.P.copy(),
                    "front": int(r),
                    "rollout": m.rollout,
                    "log": m.log,
                }
            )
        return out

"""Baselines: SyntheMol's own MCTS ``Generator`` on the scalarised objective (the paper's single-objective
baseline; ``synthemol`` 1.0.4, Swanson et al. 2024), random REAL products at the same oracle budget
(:func:`icml25.combimots.random_real_products`), and NSGA-II over block pairs (pymoo)."""

from __future__ import annotations

import contextlib
import io
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from icml25.checks import check_int, check_real

from .objectives import ObjectiveVector
from .space import Reaction

__all__ = ["scalarize", "run_synthemol", "nsga2_block_pairs"]


def scalarize(objective: ObjectiveVector) -> Callable[[str], float]:
    """The scalar score ``mean_d F_d`` of one SMILES (the paper's scalarised ablation is the mean of its
    four objectives), cached through ``objective``."""
    if not isinstance(objective, ObjectiveVector):
        raise TypeError(
            f"objective must be an ObjectiveVector, got {type(objective).__name__}"
        )

    def score(smiles: str) -> float:
        return float(objective([smiles])[0].mean())

    return score


def _synthemol_reactions(reactions: Sequence[Reaction]) -> tuple:
    """SyntheMol ``Reaction`` objects with the same templates and allowed sets as ``reactions``."""
    from synthemol.reactions import QueryMol
    from synthemol.reactions import Reaction as SMReaction

    out = []
    for r in reactions:
        sm = SMReaction(
            reactants=[QueryMol(s) for s in r.reactant_smarts],
            product=QueryMol(r.product_smarts),
            reaction_id=r.reaction_id,
        )
        for q, allowed in zip(sm.reactants, r.allowed):
            q.all_building_blocks = r.block_set
            q.allowed_building_blocks = allowed
        out.append(sm)
    return tuple(out)


def run_synthemol(
    blocks: pd.DataFrame,
    reactions: Sequence[Reaction],
    score_fn: Callable[[str], float],
    n_rollouts: int,
    c: float = 10.0,
    num_expand_nodes: int | None = None,
    rng_seed: int = 0,
) -> list[dict]:
    """SyntheMol's MCTS (``synthemol.generate.Generator``), maximising ``score_fn``, one reaction per molecule.

    Args:
        blocks: DataFrame (``smiles``, ``reagent_id``); reactions: the space (its allowed sets are copied).
        score_fn: SMILES -> float >= 0 (e.g. :func:`scalarize`). n_rollouts: rollouts (>= 1).
        c: SyntheMol's ``explore_weight``. num_expand_nodes: its expansion cap. rng_seed: its ``rng_seed``
            (SyntheMol seeds its own ``numpy.random.default_rng``).

    Returns:
        Its finished molecules, best first: dicts with ``smiles``, ``score``, ``reaction_id``, ``reactants``
        (in slot order) and ``reagent_ids``.

    Raises:
        ValueError: ``n_rollouts < 1``, ``c < 0``.
    """
    from synthemol.generate import Generator

    n_rollouts = check_int(n_rollouts, "n_rollouts", low=1)
    c = check_real(c, "c", low=0.0)
    ids = dict(zip(blocks["smiles"], (int(v) for v in blocks["reagent_id"])))
    by_id = {r.reaction_id: r for r in reactions}
    gen = Generator(
        building_block_smiles_to_id=ids,
        max_reactions=1,
        scoring_fn=score_fn,
        explore_weight=c,
        num_expand_nodes=num_expand_nodes,
        optimization="maximize",
        reactions=_synthemol_reactions(reactions),
        rng_seed=check_int(rng_seed, "rng_seed", low=0),
        no_building_block_diversity=False,
        store_nodes=False,
        verbose=False,
    )
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        nodes = gen.generate(n_rollout=n_rollouts)
    inv = {v: k for k, v in ids.items()}
    del by_id
    out = []
    for node in nodes:
        log = node.construction_log[-1]
        reactants = tuple(inv.get(i, "") for i in log["building_block_ids"])
        out.append(
            {
                "smiles": node.molecules[0],
                "score": float(node.P),
                "reaction_id": int(log["reaction_id"]),
                "reactants": reactants,
                "reagent_ids": tuple(int(i) for i in log["building_block_ids"]),
            }
        )
    return out


def nsga2_block_pairs(
    objective: ObjectiveVector,
    blocks: pd.DataFrame,
    reactions: Sequence[Reaction],
    n_evals: int,
    rng: np.random.Generator,
    pop_size: int = 40,
) -> list[dict]:
    """NSGA-II (pymoo, Deb et al. 2002) over (reaction, block, block) choices of two-slot reactions.

    The genome is three reals in [0, 1) mapped to a two-slot reaction and one allowed block per slot;
    its objectives are those of the first product (0 when the pair does not react). Runs until
    ``n_evals`` distinct products have been scored.

    Returns:
        The distinct products scored, as recipes (``smiles``, ``reaction_id``, ``reactants``, ``reagent_ids``).

    Raises:
        ValueError: ``n_evals < 1``, ``pop_size < 4``.
    """
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize

    from icml25.checks import check_rng

    n_evals = check_int(n_evals, "n_evals", low=1)
    pop_size = check_int(pop_size, "pop_size", low=4)
    rng = check_rng(rng)
    two = [
        r
        for r in reactions
        if r.n_reactants == 2 and r.allowed is not None and all(r.allowed)
    ]
    pools = [[sorted(a) for a in r.allowed] for r in two]
    ids = dict(zip(blocks["smiles"], (int(v) for v in blocks["reagent_id"])))
    found: dict[str, dict] = {}
    D = objective.D

    def decode(x: np.ndarray) -> dict | None:
        ri = min(int(x[0] * len(two)), len(two) - 1)
        a = pools[ri][0][min(int(x[1] * len(pools[ri][0])), len(pools[ri][0]) - 1)]
        b = pools[ri][1][min(int(x[2] * len(pools[ri][1])), len(pools[ri][1]) - 1)]
        if a == b:
            return None
        prods = two[ri].run([a, b])
        if not prods:
            return None
        return {
            "smiles": prods[0],
            "reaction_id": two[ri].reaction_id,
            "reactants": (a, b),
            "reagent_ids": (ids.get(a, -1), ids.get(b, -1)),
        }

    class _Pairs(Problem):
        def __init__(self) -> None:
            super().__init__(n_var=3, n_obj=D, xl=0.0, xu=1.0 - 1e-9)

        def _evaluate(self, X: np.ndarray, out: dict, *args, **kwargs) -> None:
            F = np.zeros((len(X), D))
            for i, x in enumerate(X):
                rec = decode(x)
                if rec is None or len(found) >= n_evals and rec["smiles"] not in found:
                    continue
                found.setdefault(rec["smiles"], rec)
                F[i] = objective([rec["smiles"]])[0]
            out["F"] = -F

    n_gen = max(2, 4 * n_evals // pop_size)
    minimize(
        _Pairs(),
        NSGA2(pop_size=pop_size),
        ("n_gen", n_gen),
        seed=int(rng.integers(2**31)),
        verbose=False,
    )
    return list(found.values())[:n_evals]

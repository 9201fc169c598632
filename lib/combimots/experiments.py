"""The loops a notebook cell calls: one comparison of Pareto MCTS with its baselines at one oracle budget,
the summary metrics of that comparison, the widget's grid of runs and the ``gpu`` profile's re-docking."""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from icml25.checks import check_int, check_real, check_rng
from icml25.kernels import dominance

from ._checks import _check_smiles
from .baselines import nsga2_block_pairs, run_synthemol, scalarize
from .method import ParetoMCTS
from .metrics import diversity, novelty, uniqueness, validity
from .objectives import ObjectiveVector
from .space import Reaction, random_real_products

__all__ = ["MethodRun", "compare_methods", "summarize", "front_grid", "redock"]


@dataclass
class MethodRun:
    """The molecules one method produced: ``recipes`` (dicts with ``smiles``, ``reaction_id``, ``reactants``,
    ``reagent_ids``), their (n, D) objective matrix ``F``, the oracle calls and the CPU seconds."""

    name: str
    recipes: list[dict]
    F: np.ndarray
    n_oracle_calls: int
    cpu_s: float
    extra: dict = field(default_factory=dict)

    @property
    def smiles(self) -> list[str]:
        """SMILES of the molecules, in the method's order."""
        return [r["smiles"] for r in self.recipes]

    def front(self) -> np.ndarray:
        """Indices of the method's Pareto-optimal molecules."""
        return (
            np.flatnonzero(dominance.pareto_mask(self.F))
            if len(self.F)
            else np.zeros(0, dtype=np.int64)
        )


def compare_methods(
    objective: ObjectiveVector,
    blocks: pd.DataFrame,
    reactions: Sequence[Reaction],
    n_rollouts: int,
    num_expand_nodes: int | None,
    c: float,
    rng: np.random.Generator,
    with_nsga2: bool = True,
) -> dict[str, MethodRun]:
    """Pareto MCTS, SyntheMol's ``Generator`` (same rollouts, scalarised objective), random REAL products and
    NSGA-II (both at Pareto MCTS's oracle budget), all on ``objective`` over one space.

    Args:
        objective: the D-objective oracle (cached: a molecule scored once costs once, for all methods).
        blocks, reactions: the space. n_rollouts: rollouts of both tree searches (>= 1).
        num_expand_nodes: expansion cap of both tree searches. c: exploration weight of both.
        rng: the generator of every draw (Pareto MCTS, SyntheMol's ``rng_seed``, random products, NSGA-II).

    Returns:
        ``{"pmcts": ..., "synthemol": ..., "random": ..., "nsga2": ...}`` of :class:`MethodRun`.

    Raises:
        ValueError: ``n_rollouts < 1``, ``c < 0``.
    """
    n_rollouts = check_int(n_rollouts, "n_rollouts", low=1)
    c = check_real(c, "c", low=0.0)
    rng = check_rng(rng)
    tree_rng, sm_seed = (
        np.random.default_rng(rng.integers(2**63)),
        int(rng.integers(2**31)),
    )
    runs: dict[str, MethodRun] = {}

    t = time.process_time()
    tree = ParetoMCTS(
        objective,
        blocks,
        reactions,
        c=c,
        num_expand_nodes=num_expand_nodes,
        rng=tree_rng,
    ).run(n_rollouts)
    recs = tree.recipes()
    runs["pmcts"] = MethodRun(
        "Pareto MCTS (CombiMOTS)",
        recs,
        np.stack([r["objectives"] for r in recs]),
        tree.n_oracle_calls,
        time.process_time() - t,
        {"tree": tree},
    )
    budget = tree.n_oracle_calls

    t = time.process_time()
    before = objective.n_calls
    sm = run_synthemol(
        blocks,
        reactions,
        scalarize(objective),
        n_rollouts,
        c=c,
        num_expand_nodes=num_expand_nodes,
        rng_seed=sm_seed,
    )
    runs["synthemol"] = MethodRun(
        "SyntheMol MCTS (scalarised)",
        sm,
        objective([r["smiles"] for r in sm]),
        len(sm),
        time.process_time() - t,
        {"new_calls": objective.n_calls - before},
    )

    t = time.process_time()
    rnd = random_real_products(blocks, reactions, budget, rng)
    runs["random"] = MethodRun(
        "random REAL products",
        rnd,
        objective([r["smiles"] for r in rnd]),
        len(rnd),
        time.process_time() - t,
    )
    if with_nsga2:
        t = time.process_time()
        ns = nsga2_block_pairs(objective, blocks, reactions, budget, rng)
        runs["nsga2"] = MethodRun(
            "NSGA-II over block pairs",
            ns,
            objective([r["smiles"] for r in ns]),
            len(ns),
            time.process_time() - t,
        )
    return runs


def summarize(
    methods: dict[str, MethodRun],
    reactions: Sequence[Reaction],
    train_smiles: Sequence[str],
    tol: float = 0.02,
) -> dict[str, float]:
    """Metrics of a comparison (keys ``<method>_<metric>``) and the claims' derived quantities.

    Per method: ``n`` molecules, ``oracle_calls``, ``hv`` (hypervolume of all its molecules above the
    origin), ``front_size``, ``front_div`` (diversity of its Pareto set), ``validity`` (recipe replay),
    ``uniqueness``, ``novelty`` (vs ``train_smiles``), ``best_<d>`` per objective, ``cpu_s``. Also
    ``synthemol_topk_div`` (SyntheMol's best ``k`` by its scalar score, ``k`` = Pareto MCTS's front size) and
    ``pmcts_front_gap`` (largest shortfall, over objectives, of Pareto MCTS's front from the best value any
    method found).
    """
    m: dict[str, float] = {}
    best_any = np.max(
        np.concatenate([r.F for r in methods.values() if len(r.F)]), axis=0
    )
    D = len(best_any)
    for key, run in methods.items():
        F = run.F
        front = run.front()
        m[f"{key}_n"] = len(run.recipes)
        m[f"{key}_oracle_calls"] = int(run.n_oracle_calls)
        m[f"{key}_hv"] = dominance.hypervolume(F, np.zeros(D)) if len(F) else 0.0
        m[f"{key}_front_size"] = int(front.size)
        m[f"{key}_front_div"] = diversity([run.smiles[i] for i in front])
        m[f"{key}_validity"] = (
            validity(run.recipes, reactions) if run.recipes else float("nan")
        )
        m[f"{key}_uniqueness"] = uniqueness(run.smiles) if run.recipes else float("nan")
        m[f"{key}_novelty"] = (
            novelty(run.smiles, train_smiles) if run.recipes else float("nan")
        )
        m[f"{key}_cpu_s"] = float(run.cpu_s)
        for d in range(D):
            m[f"{key}_best_{d}"] = float(F[:, d].max()) if len(F) else float("nan")
    p = methods["pmcts"]
    k = max(2, int(p.front().size))
    m["synthemol_topk_div"] = diversity(methods["synthemol"].smiles[:k])
    m["topk"] = k
    front_best = p.F[p.front()].max(axis=0)
    m["pmcts_front_gap"] = float(np.max(best_any - front_best))
    m["pmcts_front_gap_objective"] = int(np.argmax(best_any - front_best))
    m["front_covers_best"] = bool(m["pmcts_front_gap"] <= tol)
    return m


def front_grid(
    objective: ObjectiveVector,
    blocks: pd.DataFrame,
    reactions: Sequence[Reaction],
    n_rollouts: int,
    num_expand_nodes: int | None,
    cs: Sequence[float],
    variants: Sequence[str],
    diversities: Sequence[bool],
    rng: np.random.Generator,
) -> dict[tuple, np.ndarray]:
    """Pareto MCTS's finished molecules for every (c, variant, diversity) of a small grid (the widget's data).

    Every run starts from the same state of one generator drawn from ``rng`` (common random numbers), so
    the runs differ by their settings only.

    Returns:
        ``{(c, variant, diversity): (n, D) objectives}``.
    """
    n_rollouts = check_int(n_rollouts, "n_rollouts", low=1)
    key = int(check_rng(rng).integers(2**63))
    out = {}
    for c in cs:
        for v in variants:
            for dv in diversities:
                tree = ParetoMCTS(
                    objective,
                    blocks,
                    reactions,
                    c=c,
                    variant=v,
                    num_expand_nodes=num_expand_nodes,
                    diversity=dv,
                    rng=np.random.default_rng(key),
                ).run(n_rollouts)
                out[(float(c), v, bool(dv))] = tree.objectives()
    return out


def _dock_one(args: tuple[str, str]) -> float:
    from .objectives import dock_dockstring

    smiles, target = args
    fn = dock_dockstring(target, num_cpus=1)
    fn([smiles])
    return float(fn.raw[0])


def redock(
    smiles_by_method: dict[str, list[str]], targets: Sequence[str], n_workers: int
) -> pd.DataFrame:
    """Vina scores (kcal/mol, DOCKSTRING) of every molecule on every target, ``n_workers`` processes of one
    thread each (about 270 s of CPU per molecule: the ``gpu`` profile's host cores only).

    Returns:
        DataFrame with columns ``method``, ``smiles``, ``target``, ``vina`` (NaN where docking failed).

    Raises:
        ValueError: ``n_workers < 1``, no targets. TypeError: a bare string in place of a list.
    """
    n_workers = check_int(n_workers, "n_workers", low=1)
    if not isinstance(smiles_by_method, dict):
        raise TypeError(
            f"smiles_by_method must be a dict method -> list of SMILES, got {type(smiles_by_method).__name__}"
        )
    smiles_by_method = {
        m: _check_smiles(lst, f"smiles_by_method[{m!r}]")
        for m, lst in smiles_by_method.items()
    }
    targets = _check_smiles(targets, "targets", allow_empty=False)
    jobs = [
        (meth, s, t)
        for meth, lst in smiles_by_method.items()
        for s in lst
        for t in targets
    ]
    with ProcessPoolExecutor(max_workers=n_workers) as ex:
        scores = list(ex.map(_dock_one, [(s, t) for _, s, t in jobs]))
    return pd.DataFrame(
        [
            {"method": m, "smiles": s, "target": t, "vina": v}
            for (m, s, t), v in zip(jobs, scores)
        ]
    )

"""icml25.combimots: templates vs SyntheMol, the REAL space, objectives vs RDKit, Pareto UCB vs its formula,
the tree search's invariants, metrics vs RDKit loops, baselines, bad inputs; one DOCKSTRING run (slow)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit")
pytest.importorskip("synthemol")

from rdkit import Chem, DataStructs  # noqa: E402
from rdkit.Chem import QED, rdFingerprintGenerator  # noqa: E402

from icml25 import combimots as cm  # noqa: E402
from icml25.combimots import space  # noqa: E402
from icml25.kernels import dominance  # noqa: E402

ERLOTINIB = "COCCOc1cc2ncnc(Nc3cccc(C#C)c3)c2cc1OCCOC"
CRIZOTINIB = "C[C@@H](Oc1cc(-c2cnn(C3CCNCC3)c2)cnc1N)c1c(Cl)ccc(F)c1Cl"
SOME = [
    "CCO",
    "c1ccccc1O",
    "CC(=O)Nc1ccc(O)cc1",
    ERLOTINIB,
    CRIZOTINIB,
    "NCCc1ccccc1",
    "OC(=O)c1ccncc1",
]


@pytest.fixture(scope="module")
def small_space():
    return cm.load_real_space(
        n_blocks=450, rng=np.random.default_rng(3), min_per_slot=12
    )


def _cheap_objective():
    """A fast deterministic 2-objective oracle in [0, 1] (heavy-atom and hetero-atom shares)."""

    def heavy(smiles):
        out = np.zeros(len(smiles))
        for i, s in enumerate(smiles):
            m = Chem.MolFromSmiles(s)
            if m is not None:
                out[i] = min(1.0, m.GetNumHeavyAtoms() / 40)
        return out

    def hetero(smiles):
        out = np.zeros(len(smiles))
        for i, s in enumerate(smiles):
            m = Chem.MolFromSmiles(s)
            if m is not None and m.GetNumHeavyAtoms():
                out[i] = (
                    sum(a.GetSymbol() not in ("C", "H") for a in m.GetAtoms())
                    / m.GetNumHeavyAtoms()
                )
        return out

    return cm.ObjectiveVector({"heavy": heavy, "hetero": hetero})


# ---------------------------------------------------------------------------- the space


def test_templates_are_synthemols_real_reactions():
    from synthemol.reactions import REAL_REACTIONS

    assert len(cm.REAL_TEMPLATES) == len(REAL_REACTIONS) == cm.DEFAULTS.n_reactions
    for (rid, reactants, product), ref in zip(cm.REAL_TEMPLATES, REAL_REACTIONS):
        assert rid == ref.id
        assert list(reactants) == [q.smarts_with_atom_mapping for q in ref.reactants]
        assert product == ref.product.smarts_with_atom_mapping


def test_full_space_has_139493_blocks_and_13_reactions():
    blocks, mapping, n_rows = space._read_real()
    assert n_rows == cm.DEFAULTS.n_real_blocks == 139_493
    raw = pd.read_csv(cm.synthemol_resources() / "building_blocks.csv")
    assert len(raw) == 139_493 and len(blocks) == raw["smiles"].nunique()
    full, reactions = cm.load_real_space()
    assert len(full) == len(blocks) and len(reactions) == 13
    for r in reactions:
        assert [len(a) for a in r.allowed] == [
            len(mapping[r.reaction_id][i]) for i in range(r.n_reactants)
        ]


def test_subsample_keeps_min_per_slot_and_restricts_allowed_sets(small_space):
    blocks, reactions = small_space
    assert len(blocks) == 450 and blocks["smiles"].is_unique
    keep = set(blocks["smiles"])
    for r in reactions:
        for a in r.allowed:
            assert len(a) >= 12 and a <= keep
    again, _ = cm.load_real_space(
        n_blocks=450, rng=np.random.default_rng(3), min_per_slot=12
    )
    assert again["smiles"].tolist() == blocks["smiles"].tolist()
    other, _ = cm.load_real_space(
        n_blocks=450, rng=np.random.default_rng(4), min_per_slot=12
    )
    assert other["smiles"].tolist() != blocks["smiles"].tolist()


def test_products_equal_synthemols_reaction(small_space):
    from synthemol.reactions import REAL_REACTIONS

    blocks, reactions = small_space
    rng = np.random.default_rng(0)
    checked = 0
    for r, ref in zip(reactions, REAL_REACTIONS):
        for _ in range(4):
            reactants = [sorted(a)[int(rng.integers(len(a)))] for a in r.allowed]
            want = []
            for prods in ref.run_reactants(reactants):
                s = Chem.MolToSmiles(Chem.RemoveHs(prods[0]))
                if s not in want:
                    want.append(s)
            assert r.run(reactants) == want
            checked += bool(want)
    assert checked >= 30  # most random allowed tuples react


def test_reactant_matches_needs_explicit_hs_and_the_allowed_set(small_space):
    _, reactions = small_space
    amide = next(r for r in reactions if r.reaction_id == 22)
    amine, acid = sorted(amide.allowed[0])[0], sorted(amide.allowed[1])[0]
    assert 0 in amide.reactant_matches(amine) and 1 in amide.reactant_matches(acid)
    # the amine SMARTS names [H]: without explicit hydrogens RDKit finds no match
    assert not Chem.MolFromSmiles("CCNCC").HasSubstructMatch(amide.queries[0])
    assert amide.reactant_matches("CCNCC") == [0]  # not a block: SMARTS only
    assert amide.reactant_matches("not a smiles") == []
    prods = amide.run([amine, acid])
    assert prods and all(Chem.MolFromSmiles(p) is not None for p in prods)
    with pytest.raises(ValueError, match="reactants"):
        amide.run([amine])
    with pytest.raises(ValueError, match="invalid"):
        amide.run([amine, "C1CC"])
    with pytest.raises(TypeError, match="smiles"):
        amide.reactant_matches(3)


def test_load_real_space_bad_inputs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_blocks"):
        cm.load_real_space(n_blocks=50, rng=rng)
    with pytest.raises(ValueError, match="n_blocks"):
        cm.load_real_space(n_blocks=0, rng=rng)
    with pytest.raises(ValueError, match="min_per_slot"):
        cm.load_real_space(n_blocks=100, rng=rng, min_per_slot=0)
    with pytest.raises(TypeError, match="rng"):
        cm.load_real_space(n_blocks=1000)


def test_reduce_search_space_matches_rdkit(small_space):
    from rdkit.Chem import BRICS

    blocks, _ = small_space
    kept = cm.reduce_search_space(blocks, [ERLOTINIB, CRIZOTINIB], sim_threshold=0.3)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    frags = set()
    for s in (ERLOTINIB, CRIZOTINIB):
        for f in BRICS.BRICSDecompose(Chem.MolFromSmiles(s)):
            import re

            fm = Chem.MolFromSmiles(re.sub(r"\[\d*\*\]", "[H]", f))
            if fm is not None and fm.GetNumHeavyAtoms() >= 3:
                frags.add(Chem.MolToSmiles(fm))
    ffp = [gen.GetFingerprint(Chem.MolFromSmiles(f)) for f in sorted(frags)]
    want = [
        s
        for s in blocks["smiles"]
        if max(
            DataStructs.BulkTanimotoSimilarity(
                gen.GetFingerprint(Chem.MolFromSmiles(s)), ffp
            )
        )
        >= np.float32(0.3)
    ]
    assert kept["smiles"].tolist() == want and 0 < len(want) < len(blocks)
    with pytest.raises(ValueError, match="sim_threshold"):
        cm.reduce_search_space(blocks, [ERLOTINIB], sim_threshold=1.5)
    with pytest.raises(ValueError, match="reference_smiles"):
        cm.reduce_search_space(blocks, [])
    with pytest.raises(ValueError, match="smiles"):
        cm.reduce_search_space(pd.DataFrame({"x": [1]}), [ERLOTINIB])


def test_random_products_are_distinct_and_replay(small_space):
    blocks, reactions = small_space
    recs = cm.random_real_products(blocks, reactions, 40, np.random.default_rng(1))
    assert len(recs) == 40 and len({r["smiles"] for r in recs}) == 40
    assert cm.validity(recs, reactions) == 1.0
    with pytest.raises(ValueError, match="n"):
        cm.random_real_products(blocks, reactions, -1, np.random.default_rng(1))
    with pytest.raises(TypeError, match="rng"):
        cm.random_real_products(blocks, reactions, 3, 0)


# --------------------------------------------------------------------------- objectives


def test_objectives_match_rdkit_and_score_invalid_as_zero():
    import sys
    from pathlib import Path

    from rdkit.Chem import RDConfig

    sys.path.append(str(Path(RDConfig.RDContribDir) / "SA_Score"))
    import sascorer

    smi = SOME + ["not a smiles"]
    q = cm.qed(smi)
    sa = cm.sa_objective(smi)
    for i, s in enumerate(SOME):
        m = Chem.MolFromSmiles(s)
        assert q[i] == pytest.approx(QED.qed(m), abs=1e-12)
        assert sa[i] == pytest.approx((10 - sascorer.calculateScore(m)) / 9, abs=1e-12)
    assert q[-1] == 0.0 and sa[-1] == 0.0
    assert ((0 <= sa) & (sa <= 1) & (0 <= q) & (q <= 1)).all()


def test_similarity_objective_is_max_rdkit_tanimoto():
    refs = [ERLOTINIB, CRIZOTINIB]
    fn = cm.similarity_objective(refs)
    got = fn(SOME + ["xx"])
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    rf = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in refs]
    for i, s in enumerate(SOME):
        want = max(
            DataStructs.BulkTanimotoSimilarity(
                gen.GetFingerprint(Chem.MolFromSmiles(s)), rf
            )
        )
        assert got[i] == np.float32(want)
    assert got[3] == 1.0 and got[-1] == 0.0
    with pytest.raises(ValueError, match="refs"):
        cm.similarity_objective([])
    with pytest.raises(ValueError, match="refs"):
        cm.similarity_objective(["C1CC"])
    with pytest.raises(TypeError, match="smiles"):
        fn("CCO")


def test_objective_vector_caches_and_counts():
    obj = _cheap_objective()
    F = obj(["CCO", "CCO", "CCN"])
    assert F.shape == (3, 2) and np.array_equal(F[0], F[1]) and obj.n_calls == 2
    obj(["CCO", "CCC"])
    assert obj.n_calls == 3 and obj.D == 2
    assert obj([]).shape == (0, 2)
    bad = cm.ObjectiveVector({"neg": lambda s: -np.ones(len(s))})
    with pytest.raises(ValueError, match="finite"):
        bad(["C"])
    with pytest.raises(ValueError, match="objectives"):
        cm.ObjectiveVector({})


def test_stand_in_objectives_and_reference_inhibitors():
    refs = cm.load_reference_inhibitors()
    assert set(refs["target"]) == {"EGFR", "MET"} and len(refs) >= 5
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    for r in refs.itertuples():
        assert CalcMolFormula(Chem.MolFromSmiles(r.smiles)) == r.formula
    obj = cm.stand_in_objectives(refs)
    assert obj.names == ("sim_EGFR", "sim_MET", "QED", "SA")
    F = obj([ERLOTINIB, CRIZOTINIB])
    assert F[0, 0] == 1.0 and F[1, 1] == 1.0 and F[0, 1] < 1 and F[1, 0] < 1
    with pytest.raises(ValueError, match="targets"):
        cm.stand_in_objectives(refs, targets=("EGFR", "KRAS"))


# --------------------------------------------------------------------------- Pareto UCB


def _ucb_scalar(w, n_i, p, n, c, D, variant):
    q = w / n_i if n_i > 0 else 0.0
    if variant == "pmcts":
        return q + c * p * math.sqrt(
            math.log(D) + 4 * math.log(1 + n) / (2 * (1 + n_i))
        )
    return q + c * p * math.sqrt(math.log(D) + math.log(1 + n)) / (1 + n_i)


@pytest.mark.parametrize("variant", ["pmcts", "aizynthfinder"])
def test_pareto_ucb_equals_the_formula(variant):
    rng = np.random.default_rng(0)
    k, D = 7, 4
    W, N, P = rng.random((k, D)) * 5, rng.integers(0, 6, size=k), rng.random((k, D))
    n = int(N.sum())
    got = cm.pareto_ucb(W, N, P, n, c=10.0, variant=variant)
    for i in range(k):
        for d in range(D):
            assert got[i, d] == pytest.approx(
                _ucb_scalar(W[i, d], N[i], P[i, d], n, 10.0, D, variant), rel=1e-12
            )
    assert np.array_equal(
        cm.pareto_ucb(W, N, P, n, c=0.0),
        np.where(N[:, None] > 0, W / np.maximum(N, 1)[:, None], 0),
    )


def test_diversity_factor_closed_form():
    assert np.allclose(
        cm.diversity_factor([1, 101, 0]), [1.0, math.exp(-1), math.exp(0.01)]
    )
    with pytest.raises(ValueError, match="max_counts"):
        cm.diversity_factor([-1])
    with pytest.raises(ValueError, match="decay"):
        cm.diversity_factor([1], decay=0)


def test_pareto_ucb_bad_inputs():
    W, N, P = np.ones((3, 2)), np.ones(3, dtype=int), np.ones((3, 2))
    with pytest.raises(ValueError, match="c"):
        cm.pareto_ucb(W, N, P, 3, c=-1.0)
    with pytest.raises(ValueError, match="W"):
        cm.pareto_ucb(np.array([[np.nan, 1.0]] * 3), N, P, 3)
    with pytest.raises(ValueError, match="P"):
        cm.pareto_ucb(W, N, -P, 3)
    with pytest.raises(ValueError, match="W"):
        cm.pareto_ucb(np.ones(3), N, P, 3)
    with pytest.raises(ValueError, match="P"):
        cm.pareto_ucb(W, N, np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="N"):
        cm.pareto_ucb(W, np.ones(2, dtype=int), P, 3)
    with pytest.raises(ValueError, match="n"):
        cm.pareto_ucb(W, N, P, -1)
    with pytest.raises(ValueError, match="variant"):
        cm.pareto_ucb(W, N, P, 3, variant="uct")


def test_pareto_mask_and_sort_are_the_shared_kernels():
    assert (
        cm.pareto_mask is dominance.pareto_mask
        and cm.non_dominated_sort is dominance.non_dominated_sort
    )
    assert cm.hypervolume is dominance.hypervolume


# ---------------------------------------------------------------------- the tree search


@pytest.fixture(scope="module")
def tree(small_space):
    blocks, reactions = small_space
    return cm.ParetoMCTS(
        _cheap_objective(),
        blocks,
        reactions,
        num_expand_nodes=10,
        rng=np.random.default_rng(0),
    ).run(40)


def test_every_molecule_replays_and_counts_one_oracle_call(tree, small_space):
    _, reactions = small_space
    recs = tree.recipes()
    assert recs and cm.validity(recs, reactions) == 1.0
    smiles = [r["smiles"] for r in recs]
    assert len(set(smiles)) == len(smiles)
    assert tree.n_oracle_calls == len(set(smiles) - set(tree.root_blocks))
    assert all(
        len(r["log"]) == 1 and r["reactants"] and all(i >= 0 for i in r["reagent_ids"])
        for r in recs
    )


def test_fronts_partition_molecules_by_non_dominated_sort(tree):
    F = tree.objectives()
    fronts = tree.fronts()
    assert sum(len(f) for f in fronts) == len(F)
    rank = dominance.non_dominated_sort(F)
    assert [len(f) for f in fronts] == [
        int((rank == r).sum()) for r in range(rank.max() + 1)
    ]
    first = np.stack([m.P for m in fronts[0]])
    assert dominance.pareto_mask(first).all()
    assert [r["front"] for r in tree.recipes()] == rank.tolist()


def test_visit_counts_and_values_add_up(tree):
    root_children = [
        k
        for k in tree.node_map.values()
        if len(k.molecules) == 1 and not k.log and k.N > 0
    ]
    assert sum(k.N for k in root_children) == tree.n_rollouts == 40
    # W of a root child is the sum of its rollouts' returns: each return is some
    # finished molecule's P (element-wise max of those below), hence <= the
    # element-wise max over all molecules
    best = tree.objectives().max(axis=0)
    for k in root_children:
        assert (k.W <= k.N * best + 1e-12).all() and (k.W >= 0).all()


def test_same_seed_same_search(small_space):
    blocks, reactions = small_space
    a = cm.ParetoMCTS(
        _cheap_objective(),
        blocks,
        reactions,
        num_expand_nodes=10,
        rng=np.random.default_rng(5),
    ).run(15)
    b = cm.ParetoMCTS(
        _cheap_objective(),
        blocks,
        reactions,
        num_expand_nodes=10,
        rng=np.random.default_rng(5),
    ).run(15)
    assert [r["smiles"] for r in a.recipes()] == [r["smiles"] for r in b.recipes()]


def test_parallel_sibling_selection_picks_only_pareto_children(small_space):
    blocks, reactions = small_space
    t = cm.ParetoMCTS(
        _cheap_objective(),
        blocks,
        reactions,
        c=0.0,
        num_expand_nodes=10,
        diversity=False,
        rng=np.random.default_rng(0),
    )
    kids = t._children(t.root)
    # c = 0 and nothing visited: all UCBs are 0, all tie
    ucb = np.stack([k.P for k in kids]) * 0.0
    assert dominance.pareto_mask(ucb).all()
    picks = {id(t._select(kids)) for _ in range(60)}
    assert len(picks) > 5  # uniform among the tied front, not the first child


def test_paretomcts_bad_inputs(small_space):
    blocks, reactions = small_space
    obj = _cheap_objective()
    with pytest.raises(TypeError, match="rng"):
        cm.ParetoMCTS(obj, blocks, reactions)
    r0 = np.random.default_rng(0)
    with pytest.raises(ValueError, match="c"):
        cm.ParetoMCTS(obj, blocks, reactions, c=-1, rng=r0)
    with pytest.raises(ValueError, match="variant"):
        cm.ParetoMCTS(obj, blocks, reactions, variant="nope", rng=r0)
    with pytest.raises(ValueError, match="max_reactions"):
        cm.ParetoMCTS(obj, blocks, reactions, max_reactions=0, rng=r0)
    with pytest.raises(ValueError, match="num_expand_nodes"):
        cm.ParetoMCTS(obj, blocks, reactions, num_expand_nodes=0, rng=r0)
    with pytest.raises(TypeError, match="objective_fn"):
        cm.ParetoMCTS(3, blocks, reactions, rng=r0)
    with pytest.raises(ValueError, match="objective_fn"):
        cm.ParetoMCTS(lambda s: np.full((len(s), 2), np.nan), blocks, reactions, rng=r0)
    with pytest.raises(ValueError, match="objective_fn"):
        cm.ParetoMCTS(lambda s: -np.ones((len(s), 2)), blocks, reactions, rng=r0)
    with pytest.raises(ValueError, match="blocks"):
        cm.ParetoMCTS(obj, pd.DataFrame({"x": []}), reactions, rng=r0)
    with pytest.raises(ValueError, match="n_rollouts"):
        cm.ParetoMCTS(obj, blocks, reactions, num_expand_nodes=5, rng=r0).run(-1)


# ----------------------------------------------------------------------------- metrics


def test_diversity_and_novelty_equal_rdkit_loops():
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=3, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in SOME]
    sims = [
        DataStructs.BulkTanimotoSimilarity(fps[i], fps[:i]) for i in range(1, len(fps))
    ]
    n_pairs = len(fps) * (len(fps) - 1) / 2
    want_div = 1 - sum(float(np.float32(x)) for row in sims for x in row) / n_pairs
    assert cm.diversity(SOME) == pytest.approx(want_div, abs=1e-6)
    assert cm.diversity(["CCO"]) == 0.0
    train = [ERLOTINIB, "CCO"]
    tfp = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in train]
    want_nov = np.mean(
        [max(DataStructs.BulkTanimotoSimilarity(f, tfp)) < 0.4 for f in fps]
    )
    assert cm.novelty(SOME, train) == want_nov
    assert cm.uniqueness(["A", "A", "B", "C"]) == 0.75
    with pytest.raises(ValueError, match="thr"):
        cm.novelty(SOME, train, thr=2)
    with pytest.raises(ValueError, match="gen"):
        cm.novelty([], train)
    with pytest.raises(ValueError, match="smiles"):
        cm.uniqueness([])


def test_validity_detects_a_forged_recipe(small_space):
    blocks, reactions = small_space
    recs = cm.random_real_products(blocks, reactions, 4, np.random.default_rng(2))
    forged = dict(recs[0], smiles="CCO")
    assert cm.validity(recs[1:] + [forged], reactions) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="reaction"):
        cm.replay_recipe(dict(recs[0], reaction_id=99), reactions)
    with pytest.raises(ValueError, match="recipes"):
        cm.validity([], reactions)


# ------------------------------------------------------------ baselines and experiments


def test_synthemol_generator_runs_on_the_same_space(small_space):
    blocks, reactions = small_space
    obj = _cheap_objective()
    out = cm.run_synthemol(
        blocks,
        reactions,
        cm.scalarize(obj),
        n_rollouts=8,
        num_expand_nodes=10,
        rng_seed=0,
    )
    assert out and cm.validity(out, reactions) == 1.0
    scores = [r["score"] for r in out]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(obj([out[0]["smiles"]])[0].mean())
    with pytest.raises(ValueError, match="n_rollouts"):
        cm.run_synthemol(blocks, reactions, cm.scalarize(obj), n_rollouts=0)


def test_nsga2_returns_valid_distinct_products(small_space):
    blocks, reactions = small_space
    out = cm.nsga2_block_pairs(
        _cheap_objective(), blocks, reactions, 30, np.random.default_rng(0), pop_size=10
    )
    assert 0 < len(out) <= 30 and len({r["smiles"] for r in out}) == len(out)
    assert cm.validity(out, reactions) == 1.0
    with pytest.raises(ValueError, match="pop_size"):
        cm.nsga2_block_pairs(
            _cheap_objective(),
            blocks,
            reactions,
            30,
            np.random.default_rng(0),
            pop_size=2,
        )


def test_compare_and_summarize(small_space):
    blocks, reactions = small_space
    runs = cm.compare_methods(
        _cheap_objective(),
        blocks,
        reactions,
        10,
        8,
        10.0,
        np.random.default_rng(0),
        with_nsga2=False,
    )
    assert set(runs) == {"pmcts", "synthemol", "random"}
    assert runs["random"].n_oracle_calls == runs["pmcts"].n_oracle_calls
    m = cm.summarize(runs, reactions, [ERLOTINIB])
    for key in ("pmcts", "synthemol", "random"):
        F = runs[key].F
        assert m[f"{key}_hv"] == pytest.approx(dominance.hypervolume(F, np.zeros(2)))
        assert m[f"{key}_validity"] == 1.0
    front_best = runs["pmcts"].F[runs["pmcts"].front()].max(axis=0)
    # a per-objective best is never dominated
    assert np.allclose(front_best, runs["pmcts"].F.max(axis=0))
    with pytest.raises(ValueError, match="n_rollouts"):
        cm.compare_methods(
            _cheap_objective(), blocks, reactions, 0, 8, 10.0, np.random.default_rng(0)
        )


def test_claims_are_well_formed():
    ids = [c.id for c in cm.CLAIMS]
    assert len(ids) == len(set(ids)) >= 4


@pytest.mark.slow
def test_dockstring_docks_crizotinib_on_met():
    dock = cm.dock_dockstring("MET", num_cpus=2)
    v = dock([CRIZOTINIB])
    # a MET inhibitor in MET's pocket binds
    assert np.isfinite(dock.raw[0]) and dock.raw[0] < -5.0
    assert v[0] == pytest.approx(min(1.0, -dock.raw[0] / 20.0))
    with pytest.raises(ValueError, match="target"):
        cm.dock_dockstring("NOT_A_TARGET")


def test_review_bad_inputs_are_refused():
    """Inputs that returned silent wrong results before the chapter review."""
    W, N, P = np.ones((2, 2)), np.array([3, 4]), np.ones((2, 2))
    with pytest.raises(ValueError, match="n"):
        cm.pareto_ucb(W, N, P, 1)  # n below the siblings' visits
    with pytest.raises(ValueError, match="gen"):
        cm.novelty(["not a smiles"], ["CCO"])  # an unparsable SMILES counted as novel
    with pytest.raises(ValueError, match="train"):
        cm.novelty(["CCO"], ["not a smiles"])
    with pytest.raises(ValueError, match="smiles"):
        cm.diversity(["CCO", "not a smiles"])  # ... and as diverse
    with pytest.raises(TypeError, match="objectives"):
        cm.ObjectiveVector({"a": 3})
    with pytest.raises(TypeError, match="objectives"):
        cm.ObjectiveVector([lambda s: np.zeros(len(s))])
    with pytest.raises(TypeError, match="objective"):
        cm.scalarize(lambda s: 0.0)
    with pytest.raises(TypeError, match="smiles_by_method"):
        # a bare string was docked character by character
        cm.redock({"a": "CCO"}, ("EGFR",), 1)
    with pytest.raises(TypeError, match="targets"):
        cm.redock({"a": ["CCO"]}, "EGFR", 1)

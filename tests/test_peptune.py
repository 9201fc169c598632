"""Chapter 18 (PepTune): schedules, chemistry, tokenizer, MDLM loss and sampler, MCTG, baselines."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
import torch

from icml25 import peptune as pt
from icml25.common import repo_root

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def corpus():
    return pt.peptide_corpus(60, rng=11)


@pytest.fixture(scope="module")
def tok(corpus):
    return pt.SmilesTokenizer.from_corpus(corpus)


@pytest.fixture(scope="module")
def tiny(tok):
    torch.manual_seed(0)
    return pt.MaskedDiffusionTransformer(
        tok, d=16, layers=1, heads=2, max_len=96
    ).eval()


# ---------------------------------------------------------------------------- schedules


@pytest.mark.parametrize("eps", [1e-3, 0.1, 0.5])
@pytest.mark.parametrize("w", [1.0, 2.0, 3.0])
def test_logpoly_closed_forms_and_finite_differences(eps, w):
    s = pt.LogPoly(w=w, eps=eps)
    t = torch.linspace(0.05, 0.95, 19, dtype=torch.float64)
    assert torch.allclose(s.mask_prob(t), (1 - eps) * t**w)
    assert torch.allclose(s.sigma(t), -torch.log(1 - (1 - eps) * t**w))
    h = 1e-6
    fd = (s.sigma(t + h) - s.sigma(t - h)) / (2 * h)
    assert torch.allclose(s.dsigma(t), fd, rtol=1e-6, atol=1e-8)
    assert torch.allclose(1 - torch.exp(-s.sigma(t)), s.mask_prob(t))


def test_code_derivative_differs_from_exact():
    exact, code = pt.LogPoly(3, 1e-3), pt.LogPoly(3, 1e-3, derivative="code")
    t = torch.tensor([0.5], dtype=torch.float64)
    want = (3 * 0.25 - 1e-3) / (1 - (1 - 1e-3) * 0.125)
    assert float(code.dsigma(t)) == pytest.approx(want, rel=1e-12)
    assert float(exact.dsigma(t)) == pytest.approx(
        3 * (1 - 1e-3) * 0.25 / (1 - (1 - 1e-3) * 0.125), rel=1e-12
    )
    assert float(code.dsigma(t)) != pytest.approx(float(exact.dsigma(t)), rel=1e-6)


@pytest.mark.parametrize("eps", [1e-3, 1e-6, 0.3])
def test_loglinear_weight_is_one_over_t(eps):
    s = pt.LogLinear(eps)
    t = torch.linspace(0.01, 1.0, 100, dtype=torch.float64)
    assert torch.allclose(pt.loss_weight(s.sigma(t), s.dsigma(t)), 1 / t, rtol=1e-9)


@pytest.mark.parametrize("w", [2.0, 3.0])
def test_logpoly_weight_is_w_over_t(w):
    s = pt.LogPoly(w=w, eps=1e-3)
    t = torch.linspace(0.01, 1.0, 50, dtype=torch.float64)
    assert torch.allclose(pt.loss_weight(s.sigma(t), s.dsigma(t)), w / t, rtol=1e-9)


def test_bond_dependent_schedule_values_at_half():
    s = pt.BondDependentSchedule()
    p = s.mask_prob(
        torch.tensor([0.5, 0.5], dtype=torch.float64), torch.tensor([True, False])
    )
    assert p.tolist() == pytest.approx([(1 - 1e-3) / 8, (1 - 1e-3) / 2], abs=1e-12)
    assert round(float(p[0]), 4) == 0.1249 and round(float(p[1]), 4) == 0.4995
    u = pt.BondDependentSchedule(uniform=True)
    assert torch.allclose(
        u.mask_prob(0.5, torch.tensor([True, False])), torch.tensor([0.4995, 0.4995])
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: pt.LogLinear(eps=0.0), "eps"),
        (lambda: pt.LogLinear(eps=1.0), "eps"),
        (lambda: pt.LogPoly(w=0.5), "w"),
        (lambda: pt.BondDependentSchedule(eps=-1), "eps"),
        (lambda: pt.LogPoly(derivative="x"), "derivative"),
        (lambda: pt.LogLinear().mask_prob(1.5), "t"),
        (lambda: pt.LogLinear().sigma(-0.1), "t"),
        (
            lambda: pt.BondDependentSchedule().dsigma(
                torch.tensor([float("nan")]), None
            ),
            "t",
        ),
    ],
)
def test_schedule_bad_inputs(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ---------------------------------------------------------------------------- chemistry


def test_corpus_valid_distinct_seeded(corpus):
    assert len(corpus) == 60 and len(set(corpus)) == 60
    assert all(pt.is_valid_peptide(s) for s in corpus)
    state = random.getstate()
    again = pt.peptide_corpus(60, rng=11)
    # seeded, global random restored
    assert again == corpus and random.getstate() == state
    assert pt.peptide_corpus(10, rng=12) != corpus[:10]


def test_corpus_modifications_present():
    c = pt.peptide_corpus(
        80,
        rng=np.random.default_rng(3),
        p_nmethyl=1.0,
        p_cyclic=1.0,
        cyclizations=("SS",),
        p_noncanonical=0.0,
    )
    from rdkit import Chem

    nme = Chem.MolFromSmarts("[CH3][NX3]([CX4])[CX3]=O")
    ss = Chem.MolFromSmarts("[SX2][SX2]")
    mols = [Chem.MolFromSmiles(s) for s in c]
    assert all(m.HasSubstructMatch(nme) for m in mols)
    assert sum(m.HasSubstructMatch(ss) for m in mols) > 0


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(n=0), "n"),
        (dict(residues=(1, 3)), "residues"),
        (dict(residues=(4, 3)), "residues"),
        (dict(p_dextro=1.5), "p_dextro"),
        (dict(cyclizations=("XX",)), "cyclizations"),
        (dict(p_nmethyl=-0.1), "p_nmethyl"),
        (dict(p_noncanonical=2.0), "p_noncanonical"),
    ],
)
def test_corpus_bad_inputs(kw, match):
    with pytest.raises(ValueError, match=match):
        pt.peptide_corpus(**({"n": 3} | kw))


def test_is_valid_peptide_rules():
    from rdkit import Chem

    tri = Chem.MolToSmiles(Chem.MolFromSequence("AGV"))
    di = Chem.MolToSmiles(Chem.MolFromSequence("AG"))
    assert pt.is_valid_peptide(tri) and pt.is_valid_peptide(tri, strict=False)
    assert not pt.is_valid_peptide(di)  # one backbone link < min_bonds = 2
    assert pt.is_valid_peptide(di, min_bonds=1)
    # the code's lenient rule: any amide
    assert pt.is_valid_peptide("CC(=O)NC", strict=False)
    assert not pt.is_valid_peptide("CC(=O)NC")
    assert not pt.is_valid_peptide("CCO") and not pt.is_valid_peptide(
        "C(C", strict=False
    )
    assert not pt.is_valid_peptide(tri + "." + tri) and not pt.is_valid_peptide("")
    with pytest.raises(TypeError, match="strict"):
        pt.is_valid_peptide(tri, strict="yes")
    with pytest.raises(ValueError, match="min_bonds"):
        pt.is_valid_peptide(tri, min_bonds=0)


@pytest.mark.parametrize(
    "smiles, bond_tokens",
    [
        # N-terminal amide written forward: N C ( = O ) are the bond tokens of "NC(=O)"
        ("CNC(=O)C", ["N", "C", "(", "=", "O", ")"]),
        # N-methyl amide N(C)C(=O)
        ("CN(C)C(=O)C", ["N", "(", "C", ")", "C", "(", "=", "O", ")"]),
        # ester OC(=O)
        ("COC(=O)C", ["O", "C", "(", "=", "O", ")"]),
        # reversed amide C(=O)N with a ring-closure digit
        ("C1CC(=O)N1", ["C", "(", "=", "O", ")", "N", "1"]),
        ("CCO", []),
    ],
)
def test_bond_mask_hand_cases(smiles, bond_tokens):
    toks = pt.tokenize_smiles(smiles)
    m = pt.peptide_bond_mask(smiles, toks)
    assert [t for t, b in zip(toks, m) if b] == bond_tokens


def test_bond_mask_first_pattern_wins_and_bad_tokens():
    # "OC(=O)N": ester matched first; the reversed amide may not reuse its C(=O)
    s = "COC(=O)NC"
    m = pt.peptide_bond_mask(s)
    assert "".join(t for t, b in zip(pt.tokenize_smiles(s), m) if b) == "OC(=O)"
    with pytest.raises(ValueError, match="concatenate"):
        pt.peptide_bond_mask("CCO", ["C", "O"])
    with pytest.raises(ValueError, match="smiles"):
        pt.tokenize_smiles("C C")


def test_bond_mask_counts_peptide_bonds():
    from rdkit import Chem

    for seq in ("AGV", "AGVL", "GGGGG"):
        s = Chem.MolToSmiles(Chem.MolFromSequence(seq))
        spans = pt.bond_spans(s)
        # every backbone amide is caught (plus any side-chain amide)
        assert len(spans) >= len(seq) - 1


def test_tokenizer_round_trip_and_unknown(tok, corpus):
    ids = tok.encode(corpus[0], 96)
    assert ids.dtype == np.int64 and len(ids) == 96 and tok.decode(ids) == corpus[0]
    assert tok.itos[tok.pad_id] == "[PAD]" and tok.itos[tok.mask_id] == "[MASK]"
    X, B = tok.encode_batch(corpus[:5], 96)
    assert X.shape == B.shape == (5, 96) and B.any() and not B[X == tok.pad_id].any()
    with pytest.raises(ValueError, match="unknown tokens"):
        tok.encode("[Se]CC")
    assert not tok.can_encode("[Se]CC")
    with pytest.raises(ValueError, match="length"):
        tok.encode(corpus[0], 3)
    with pytest.raises(ValueError, match="outside"):
        tok.decode([999])
    with pytest.raises(ValueError, match="special"):
        pt.SmilesTokenizer(["C", "[MASK]"])


# ----------------------------------------------------------------- model, loss, sampler


def test_subs_parameterisation(tiny, tok, corpus):
    x = torch.from_numpy(tok.encode_batch(corpus[:3], 96)[0])
    z = x.clone()
    z[:, ::2] = tok.mask_id
    lp = pt.subs_log_probs(tiny(z), z, tok.mask_id)
    p = lp.exp()
    assert torch.allclose(p.sum(-1), torch.ones(3, 96), atol=1e-5)
    assert (p[..., tok.mask_id] < 1e-30).all()  # never predicts [MASK]
    vis = z != tok.mask_id
    assert torch.equal(lp.argmax(-1)[vis], z[vis]) and torch.allclose(
        p.max(-1).values[vis], torch.ones(int(vis.sum()))
    )


def test_q_xt_rate_and_code_cap():
    x = torch.full((200, 50), 5)
    g = torch.Generator().manual_seed(0)
    z = pt.q_xt(x, torch.tensor(0.3), 1, g)
    frac = float((z == 1).float().mean())
    assert abs(frac - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 10_000)
    zc = pt.q_xt(x, torch.tensor(0.99), 1, g, max_mask_frac=0.75)
    assert ((zc == 1).sum(-1) <= 37).all()  # 75 % of 50, the first positions


def test_mdlm_loss_weights_and_backward(tiny, tok, corpus):
    x, b = (torch.from_numpy(a) for a in tok.encode_batch(corpus[:8], 96))
    g = torch.Generator().manual_seed(1)
    parts = pt.mdlm_loss(tiny, x, b, rng=g)
    assert (
        torch.isfinite(parts.loss)
        and parts.invalid > 0
        and 0 <= parts.argmax_valid <= 1
    )
    parts.loss.backward()
    assert all(p.grad is not None for p in tiny.parameters() if p.requires_grad)
    tiny.zero_grad()
    # at t = 1 every token is masked w.p. 1 - eps; the NLL part is then the mean of w_l
    # (-log p(x0_l)) with w_l = 1/t = 1 (log-linear) and w/t = 3
    # (bond tokens, LogPoly w = 3)
    t = torch.ones(8)
    off = pt.mdlm_loss(
        tiny, x, b, t=t, invalid_loss=False, rng=torch.Generator().manual_seed(2)
    )
    assert off.invalid == 0.0
    z = torch.full_like(x, tok.mask_id)
    with torch.no_grad():
        tok_nll = (
            -pt.subs_log_probs(tiny(z), z, tok.mask_id)
            .gather(-1, x[..., None])
            .squeeze(-1)
        )
    nll = (torch.where(b, 3.0, 1.0) * tok_nll).mean()
    assert off.nll == pytest.approx(float(nll), rel=0.02)


def test_mdlm_loss_bad_inputs(tiny, tok, corpus):
    x, b = (torch.from_numpy(a) for a in tok.encode_batch(corpus[:2], 96))
    with pytest.raises(ValueError, match="bond_mask"):
        pt.mdlm_loss(tiny, x, b[:, :5])
    with pytest.raises(ValueError, match="x0"):
        pt.mdlm_loss(tiny, x[0], b)
    with pytest.raises(ValueError, match="vocabulary"):
        pt.mdlm_loss(tiny, x + 1000, b)
    with pytest.raises(ValueError, match="t must"):
        pt.mdlm_loss(tiny, x, b, t=torch.tensor([0.5, 1.5]))


def test_sample_and_reverse_step(tiny, tok):
    g = torch.Generator().manual_seed(0)
    out = pt.sample(tiny, 5, 40, 6, rng=g)
    assert out.shape == (5, 40) and not (out == tok.mask_id).any()
    z = torch.full((3, 40), tok.mask_id)
    z[:, :4] = 5
    zs = pt.reverse_step(tiny, z, 0.9, 0.5, rng=g)
    assert torch.equal(zs[:, :4], z[:, :4])
    for bad, match in [(dict(t=1.5), "t"), (dict(s=0.95), "s must be < t")]:
        with pytest.raises(ValueError, match=match):
            pt.reverse_step(tiny, z, **({"t": 0.9, "s": 0.5} | bad))
    with pytest.raises(ValueError, match="L"):
        pt.sample(tiny, 2, 500, 4)
    with pytest.raises(ValueError, match="steps"):
        pt.sample(tiny, 2, 10, 0)


def test_model_bad_construction(tok):
    with pytest.raises(ValueError, match="vocab"):
        pt.MaskedDiffusionTransformer(["C"], d=16)
    with pytest.raises(ValueError, match="divisible"):
        pt.MaskedDiffusionTransformer(tok, d=10, heads=4)
    with pytest.raises(ValueError, match="layers"):
        pt.MaskedDiffusionTransformer(tok, d=16, layers=0, heads=2)


def test_checkpoint_round_trip(tiny, tmp_path):
    path = tmp_path / "m.pt"
    pt.save_checkpoint(tiny, path, extra={"steps": 3})
    m, extra = pt.load_checkpoint(path)
    z = torch.full((2, 30), tiny.mask_id)
    assert extra["steps"] == 3 and torch.allclose(m(z), tiny(z))
    torch.save({"x": 1}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="checkpoint"):
        pt.load_checkpoint(tmp_path / "bad.pt")


def test_shipped_checkpoint_loads_and_matches_readme():
    path = repo_root() / pt.CHECKPOINT
    if not path.exists():
        pytest.fail(f"shipped checkpoint {path} is missing")
    assert path.stat().st_size <= 5 * 2**20
    readme = (path.parent / "README.md").read_text()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest in readme, (
        "data/18-peptune/README.md must quote the checkpoint's sha256"
    )
    model, extra = pt.load_shipped()
    assert extra["steps"] > 0 and extra["evals"]
    out = pt.sample(
        model, 4, model.config["max_len"], 4, rng=torch.Generator().manual_seed(0)
    )
    assert (
        out.shape == (4, model.config["max_len"]) and not (out == model.mask_id).any()
    )


# ----------------------------------------------------------------------------- MCTG


def test_pareto_front_rules():
    f = pt.ParetoFront(K=2, size=2)
    # dominated, but |F| < size
    assert f.add("a", [0.5, 0.5]) and f.add("b", [0.1, 0.1])
    assert not f.add("a", [0.9, 0.9])  # duplicate SMILES
    assert not f.add("c", [0.0, 0.0])  # dominated and front full
    assert f.add("d", [0.9, 0.1])  # non-dominated: joins, prunes "b"
    assert sorted(f.smiles) == ["a", "d"]
    s, S = f.nondominated()
    assert sorted(s) == ["a", "d"] and S.shape == (2, 2)


def _fake_scores(K):
    def make(j):
        def f(smiles):
            return np.array([((len(s) * (j + 3)) % 7) / 7 for s in smiles])

        return f

    return [make(j) for j in range(K)]


def test_mctg_runs_logs_and_backs_up(tiny):
    mc = pt.MCTG(
        tiny,
        _fake_scores(3),
        num_children=4,
        num_iter=5,
        n_steps=6,
        front_size=5,
        L=40,
        rng=np.random.default_rng(0),
        strict=False,
    )
    smiles, S = mc.run()
    assert len(mc.log) == 5 and mc.valid_fraction.shape == (5,)
    assert S.shape == (len(smiles), 3)
    # the root was visited once per iteration; W of a node = sum of its
    # children's W plus their backups
    assert mc.root.N == 5
    assert len(mc.root.children) == 4
    for c in mc.root.children:
        assert c.N >= 1 and c.step == 1
    assert max(r["depth"] for r in mc.log) <= 5


def test_mctg_rollout_from_node_time_vs_code_restart(tiny):
    a = pt.MCTG(
        tiny,
        _fake_scores(2),
        num_children=2,
        num_iter=1,
        n_steps=10,
        L=20,
        rng=np.random.default_rng(0),
    )
    b = pt.MCTG(
        tiny,
        _fake_scores(2),
        num_children=2,
        num_iter=1,
        n_steps=10,
        L=20,
        rng=np.random.default_rng(0),
        rollout_restart=True,
    )
    assert np.allclose(a.times[4:][0], a.times[4]) and len(a.times[4:]) == 7
    z = torch.full((2, 20), tiny.mask_id)
    assert not (a.rollout(z.clone(), 4) == tiny.mask_id).any()
    assert not (b.rollout(z.clone(), 4) == tiny.mask_id).any()


def test_mctg_bad_inputs(tiny):
    with pytest.raises(ValueError, match="num_children"):
        pt.MCTG(tiny, _fake_scores(2), num_children=0)
    with pytest.raises(ValueError, match="invalid_penalty"):
        pt.MCTG(tiny, _fake_scores(2), invalid_penalty=-1)
    with pytest.raises(ValueError, match="score_fns"):
        pt.MCTG(tiny, [])
    bad = pt.MCTG(
        tiny,
        [lambda s: np.full(len(s), np.nan)],
        num_children=2,
        num_iter=1,
        n_steps=2,
        L=20,
        rng=np.random.default_rng(0),
        strict=False,
    )
    with pytest.raises(ValueError, match="NaN"):
        bad.score(["CC(=O)NC", "CC(=O)NCC"])
    wrong = pt.MCTG(
        tiny,
        [lambda s: np.zeros(len(s) + 1)],
        num_children=2,
        num_iter=1,
        n_steps=2,
        L=20,
        rng=np.random.default_rng(0),
        strict=False,
    )
    with pytest.raises(ValueError, match="shape"):
        wrong.score(["CC(=O)NC"])
    with pytest.raises(ValueError, match="shape"):
        pt.check_scores(np.zeros((2, 3)), 2, 2)


# ---------------------------------------------------------------- objectives, baselines


@pytest.fixture(scope="module")
def objectives(corpus):
    return pt.PeptideObjectives(n_estimators=10).fit(corpus, np.random.default_rng(0))


def test_objectives_scores(objectives, corpus):
    S = objectives.score(corpus[:7])
    assert S.shape == (7, 5) and (S >= 0).all() and (S <= 1).all()
    assert objectives.binding([objectives.reference])[0] == pytest.approx(1.0)
    fns = objectives.score_fns()
    assert np.allclose(np.stack([f(corpus[:7]) for f in fns], 1), S)
    vals = pt.descriptor_scores(corpus)
    # solubility vs permeability conflict
    assert np.corrcoef(vals[:, 0], vals[:, 3])[0, 1] < -0.5
    with pytest.raises(RuntimeError, match="fit"):
        pt.PeptideObjectives().score(corpus[:2])
    with pytest.raises(ValueError, match="label_noise"):
        pt.PeptideObjectives(label_noise=0.6)
    with pytest.raises(ValueError, match="smiles"):
        pt.PeptideObjectives().fit(["CCO"] * 5, np.random.default_rng(0))


def test_front_hypervolume_against_pymoo():
    from pymoo.indicators.hv import HV

    S = np.array([[0.2, 0.9, 0.4], [0.6, 0.5, 0.5], [0.9, 0.1, 0.7]])
    assert pt.front_hypervolume(S) == pytest.approx(HV(ref_point=np.zeros(3))(-S))
    assert pt.front_hypervolume(np.zeros((0, 3))) == 0.0
    with pytest.raises(ValueError, match="S"):
        pt.front_hypervolume(np.zeros(3))


def test_generation_metrics_by_hand(corpus):
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    gen_smiles = corpus[:4] + [corpus[0], "CCO"]
    m = pt.generation_metrics(gen_smiles, corpus[10:])
    assert m["validity"] == pytest.approx(5 / 6) and m["uniqueness"] == pytest.approx(
        4 / 5
    )
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in corpus[:4]]
    sims = [
        DataStructs.TanimotoSimilarity(a, b)
        for i, a in enumerate(fps)
        for j, b in enumerate(fps)
        if i != j
    ]
    assert m["diversity"] == pytest.approx(1 - np.mean(sims), abs=1e-6)
    tr = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in corpus[10:]]
    snn = np.mean([max(DataStructs.BulkTanimotoSimilarity(f, tr)) for f in fps])
    assert m["snn"] == pytest.approx(snn, abs=1e-6)


def test_nsga2_and_best_of_n(objectives, tiny):
    out = pt.nsga2_residues(
        objectives.score, 5, pop_size=6, n_gen=2, rng=np.random.default_rng(0)
    )
    assert (
        out["calls"] <= 12
        and out["scores"].shape[1] == 5
        and len(out["smiles"]) == len(out["scores"])
    )
    assert all(pt.is_valid_peptide(s) for s in out["smiles"])
    bon = pt.best_of_n(
        tiny,
        objectives.score,
        3,
        30,
        4,
        np.random.default_rng(0),
        batch=8,
        max_samples=16,
    )
    assert bon["samples"] == 16 and bon["calls"] <= 3
    with pytest.raises(ValueError, match="calls"):
        pt.best_of_n(tiny, objectives.score, 0, 30, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="pop_size"):
        pt.nsga2_residues(
            objectives.score, 5, pop_size=1, n_gen=2, rng=np.random.default_rng(0)
        )


def test_experiment_loops_run_small(tiny, corpus, objectives):
    rows = pt.repair_validity(
        tiny, corpus[:4], [0.0001, 0.5], 4, np.random.default_rng(0)
    )
    assert [r["t0"] for r in rows] == [0.0001, 0.5]
    # almost nothing masked: copied back
    assert rows[0]["masked_fraction"] < 0.05 and rows[0]["exact"] >= 0.75
    assert all(0 <= r["valid_strict"] <= r["valid_lenient"] <= 1 for r in rows)
    abl = pt.ablation_runs(
        corpus[:20],
        3,
        16,
        1,
        2,
        96,
        np.random.default_rng(0),
        eval_n=2,
        eval_steps=2,
        batch=4,
    )
    assert set(abl) == {"peptune", "uniform_schedule", "no_invalid_loss"}
    # same init and batch
    assert abl["peptune"]["nll_first"] == pytest.approx(
        abl["no_invalid_loss"]["nll_first"], rel=1e-5
    )
    res = pt.compare_methods(
        tiny,
        objectives,
        corpus[:6],
        corpus[6:],
        3,
        2,
        3,
        4,
        0.5,
        np.random.default_rng(0),
        L=30,
    )
    assert res["mctg"].root.N == 2 and res["hv_nsga"] >= 0 and res["nsga_calls"] <= 6


# ------------------------------------------------------------------ bad inputs (review)


def test_public_functions_reject_bad_inputs(tiny, tok, corpus):
    """Inputs that used to return a silent wrong result (or an anonymous torch error) now raise."""
    for f in (pt.validity, pt.descriptor_scores, pt.morgan_bits, pt.morgan_counts):
        with pytest.raises(ValueError, match="smiles"):
            f(corpus[0])  # a bare string is not a list of peptides
    with pytest.raises(ValueError, match="smiles"):
        pt.generation_metrics(corpus[0], corpus)
    with pytest.raises(ValueError, match="train_smiles"):
        pt.generation_metrics(corpus[:3], corpus[0])
    with pytest.raises(ValueError, match="n_bits"):
        pt.morgan_bits(corpus[:2], 0)
    with pytest.raises(ValueError, match="ids"):
        tok.decode_batch(np.array([3, 4]))
    with pytest.raises(ValueError, match="n_steps"):
        pt.time_grid(0)
    with pytest.raises(ValueError, match="t_start"):
        pt.time_grid(4, t_start=2.0)
    with pytest.raises(ValueError, match="eps"):
        pt.time_grid(4, eps=-1.0)
    with pytest.raises(ValueError, match="n must"):
        pt.sample_times(-1)
    with pytest.raises(ValueError, match="mask_prob"):
        pt.q_xt(
            torch.zeros(2, 3, dtype=torch.long), torch.full((2, 3), 1.5), tok.mask_id
        )
    with pytest.raises(ValueError, match="max_mask_frac"):
        pt.q_xt(
            torch.zeros(2, 3, dtype=torch.long),
            torch.full((2, 3), 0.5),
            tok.mask_id,
            max_mask_frac=2.0,
        )
    with pytest.raises(ValueError, match="z holds"):
        tiny(torch.full((1, 10), tok.vocab_size + 1))
    with pytest.raises(ValueError, match="is_bond"):
        pt.BondDependentSchedule().mask_prob(
            torch.tensor([0.5, 0.5]), torch.tensor([True, False, True])
        )
    with pytest.raises(ValueError, match="is_bond"):
        pt.BondDependentSchedule().mask_prob(
            torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0])
        )
    ids, bonds = pt.encode_corpus(corpus[:4], tok, 96)
    with pytest.raises(ValueError, match="warmup"):
        pt.train_model(tiny, ids, bonds, 1, warmup=-1)
    with pytest.raises(ValueError, match="bonds"):
        pt.train_model(tiny, ids, bonds.float(), 1)
    with pytest.raises(ValueError, match="weight_decay"):
        pt.train_model(tiny, ids, bonds, 1, weight_decay=-0.1)
    front = pt.ParetoFront(2, 4)
    with pytest.raises(ValueError, match="shape"):
        front.add("CC", np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        front.add("CC", np.array([np.nan, 1.0]))
    assert len(front) == 0
    g = np.random.default_rng(0)
    with pytest.raises(ValueError, match="smiles"):
        pt.repair_validity(tiny, [], [0.1], 4, g)
    with pytest.raises(ValueError, match="t0s"):
        pt.repair_validity(tiny, corpus[:2], [2.0], 4, g)

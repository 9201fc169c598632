"""Objectives for MCTG: stand-ins for PepTune's property classifiers, said plainly.

The paper scores peptides with XGBoost classifiers on PeptideCLM embeddings (solubility,
hemolysis, non-fouling, permeability) and an ESM-2 cross-attention binding model; all of those
weights are downloads. Here each property is a **stand-in**: a label computed from RDKit
descriptors (a rule of this chapter, not a measured property), flipped at random with a small
probability, and learnt by an ``xgboost`` classifier on Morgan count fingerprints, so that MCTG is
guided by "classifier rewards" as in the paper. Binding is the Morgan Tanimoto similarity to
cyclo(RGDfK) (the integrin ligand, built by p2smi as a head-to-tail cycle).

Permeability and solubility conflict by construction: the permeability rule rewards Crippen logP
per heavy atom (plus N-methylation and macrocycles, minus polar surface), the solubility rule
penalises it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from icml25.checks import check_int, check_probability, check_rng
from icml25.kernels import tanimoto

from .chem import _smiles_list

__all__ = [
    "OBJECTIVES",
    "PeptideObjectives",
    "descriptor_scores",
    "morgan_bits",
    "morgan_counts",
    "rgd_ligand",
]

#: The five objectives, every one maximised (hemolysis enters as non-hemolysis, 1 - p).
OBJECTIVES: tuple[str, ...] = (
    "binding",
    "solubility",
    "nonhemolysis",
    "nonfouling",
    "permeability",
)

_N_BITS = 1024


def _mols(smiles: Sequence[str]):
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    smiles = _smiles_list(smiles)
    return [Chem.MolFromSmiles(s) if isinstance(s, str) and s else None for s in smiles]


def _generator(n_bits: int = _N_BITS):
    from rdkit.Chem import rdFingerprintGenerator

    check_int(n_bits, "n_bits", low=1)

    return rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=n_bits)


def morgan_bits(smiles: Sequence[str], n_bits: int = _N_BITS) -> np.ndarray:
    """Morgan (radius 2) bit fingerprints, ``(n, n_bits)`` uint8; an unparsable string gives zeros."""
    gen = _generator(n_bits)
    out = np.zeros((len(smiles), n_bits), dtype=np.uint8)
    for i, m in enumerate(_mols(smiles)):
        if m is not None:
            out[i] = gen.GetFingerprintAsNumPy(m)
    return out


def morgan_counts(smiles: Sequence[str], n_bits: int = _N_BITS) -> np.ndarray:
    """Morgan (radius 2) count fingerprints, ``(n, n_bits)`` float32 (zeros if unparsable)."""
    gen = _generator(n_bits)
    out = np.zeros((len(smiles), n_bits), dtype=np.float32)
    for i, m in enumerate(_mols(smiles)):
        if m is not None:
            out[i] = gen.GetCountFingerprintAsNumPy(m)
    return out


def rgd_ligand() -> str:
    """SMILES of cyclo(RGDfK) (head-to-tail, D-Phe), built by p2smi."""
    import p2smi.utilities.smilesgen as smilesgen

    return smilesgen.constrained_peptide_smiles("RGDfK", "HT")[2]


_SMARTS = {
    "nmethyl": "[CH3][NX3]([CX4])[CX3]=O",
    "cation": "[$([NX3;H2;!$(NC=O);!$(N-a)]),$([NX3;H1;!$(NC=O)]C(=N)N),$([nH]1cncc1)]",
    "anion": "[CX3](=O)[OX2H1,OX1-]",
    "hydroxyl": "[OX2H1][CX4]",
    "amide_side": "[NX3H2][CX3]=O",
}


def descriptor_scores(smiles: Sequence[str]) -> np.ndarray:
    """The stand-in property values behind the labels, ``(n, 4)`` float64 in the order
    (solubility, non-hemolysis, non-fouling, permeability); NaN rows for unparsable strings.

    - permeability: ``logP/heavy + 0.3 N-methyl + 0.3 macrocycle − TPSA/(100 heavy)`` (scaled);
    - solubility: ``−logP/heavy + 0.2 (charged groups)/residue-ish`` (heavy atoms / 8);
    - non-hemolysis: ``−(cationic groups) × (aromatic rings)`` (cationic amphipathicity);
    - non-fouling: ``(hydroxyl + side-chain amide + anion + cation balance) per heavy atom``.
    """
    from rdkit import Chem
    from rdkit.Chem import Crippen, rdMolDescriptors

    pats = {k: Chem.MolFromSmarts(v) for k, v in _SMARTS.items()}
    out = np.full((len(smiles), 4), np.nan)
    for i, m in enumerate(_mols(smiles)):
        if m is None:
            continue
        heavy = max(1, m.GetNumHeavyAtoms())
        logp = Crippen.MolLogP(m) / heavy
        tpsa = rdMolDescriptors.CalcTPSA(m) / heavy
        cnt = {k: len(m.GetSubstructMatches(p)) for k, p in pats.items()}
        ri = m.GetRingInfo()
        macro = float(any(len(r) >= 12 for r in ri.AtomRings()))
        arom = rdMolDescriptors.CalcNumAromaticRings(m)
        res = heavy / 8.0
        perm = 10 * logp + 0.3 * cnt["nmethyl"] + 0.3 * macro - tpsa / 2
        sol = -10 * logp + 0.2 * (cnt["cation"] + cnt["anion"]) / res
        nonhemo = -float(cnt["cation"] * arom)
        nonfoul = (
            cnt["hydroxyl"] + cnt["amide_side"] + min(cnt["anion"], cnt["cation"])
        ) / res - 0.3 * abs(cnt["cation"] - cnt["anion"]) / res
        out[i] = (sol, nonhemo, nonfoul, perm)
    return out


class PeptideObjectives:
    """The five MCTG objectives: binding (Tanimoto to cyclo(RGDfK)) and four classifiers.

    :meth:`fit` labels a corpus with :func:`descriptor_scores` (above the corpus median = 1),
    flips each label with probability ``label_noise``, and trains one ``xgboost`` classifier per
    property on Morgan counts (``n_estimators``, depth 4, one thread). Scores are probabilities
    of the good class, so every objective lies in [0, 1] and is maximised.

    Args:
        n_estimators: trees per classifier (>= 1).
        label_noise: probability of flipping a label, in [0, 0.5).
        reference: SMILES of the binding target's ligand (default cyclo(RGDfK)).
    """

    names: tuple[str, ...] = OBJECTIVES

    def __init__(
        self,
        n_estimators: int = 60,
        label_noise: float = 0.1,
        reference: str | None = None,
    ):
        self.n_estimators = check_int(n_estimators, "n_estimators", low=1)
        self.label_noise = check_probability(label_noise, "label_noise")
        if self.label_noise >= 0.5:
            raise ValueError(f"label_noise must be < 0.5, got {label_noise}")
        self.reference = reference or rgd_ligand()
        self._ref_packed = tanimoto.pack_bits(morgan_bits([self.reference]))
        self.models: list = []
        self.calls = 0

    def fit(
        self, smiles: Sequence[str], rng: np.random.Generator
    ) -> "PeptideObjectives":
        """Train the four classifiers on ``smiles`` (valid peptides). Returns ``self``.

        Raises:
            ValueError: fewer than 20 parsable molecules, or a label with one class only.
        """
        import xgboost as xgb

        rng = check_rng(rng)
        vals = descriptor_scores(smiles)
        keep = ~np.isnan(vals).any(axis=1)
        if keep.sum() < 20:
            raise ValueError(
                f"smiles: need >= 20 parsable molecules to fit, got {int(keep.sum())}"
            )
        X = morgan_counts([s for s, k in zip(smiles, keep) if k])
        vals = vals[keep]
        self.models = []
        self.train_accuracy = []
        for j in range(vals.shape[1]):
            y = (vals[:, j] > np.median(vals[:, j])).astype(int)
            flip = rng.random(len(y)) < self.label_noise
            y = np.where(flip, 1 - y, y)
            if y.min() == y.max():
                raise ValueError(
                    f"objective {self.names[j + 1]}: labels hold one class only"
                )
            clf = xgb.XGBClassifier(
                n_estimators=self.n_estimators,
                max_depth=4,
                learning_rate=0.2,
                n_jobs=1,
                tree_method="hist",
                random_state=int(rng.integers(2**31)),
                verbosity=0,
            )
            clf.fit(X, y)
            self.models.append(clf)
            self.train_accuracy.append(float((clf.predict(X) == y).mean()))
        return self

    def binding(self, smiles: Sequence[str]) -> np.ndarray:
        """Tanimoto (Morgan radius 2, 1024 bits) to the reference ligand, ``(n,)`` float64."""
        if len(smiles) == 0:
            return np.zeros(0)
        return tanimoto.max_tanimoto(
            tanimoto.pack_bits(morgan_bits(smiles)), self._ref_packed
        ).astype(np.float64)

    def score(self, smiles: Sequence[str]) -> np.ndarray:
        """Scores ``(n, 5)`` float64 in [0, 1], columns :data:`OBJECTIVES` (all maximised).

        Raises:
            RuntimeError: :meth:`fit` not called.
        """
        if not self.models:
            raise RuntimeError("PeptideObjectives.fit must be called before score")
        smiles = list(smiles)
        self.calls += len(smiles)
        if not smiles:
            return np.zeros((0, len(self.names)))
        X = morgan_counts(smiles)
        cols = [self.binding(smiles)] + [
            m.predict_proba(X)[:, 1].astype(np.float64) for m in self.models
        ]
        return np.stack(cols, axis=1)

    def score_fns(self) -> list[Callable[[list[str]], np.ndarray]]:
        """One callable per objective (``list[str] -> (n,)``), the interface :class:`MCTG` takes.

        They share one cache, so the five calls on one batch score it once.
        """
        cache: dict = {"key": None, "val": None}

        def col(j: int) -> Callable[[list[str]], np.ndarray]:
            def f(smiles: list[str]) -> np.ndarray:
                key = tuple(smiles)
                if cache["key"] != key:
                    cache["key"], cache["val"] = key, self.score(smiles)
                return cache["val"][:, j]

            f.__name__ = self.names[j]
            return f

        return [col(j) for j in range(len(self.names))]

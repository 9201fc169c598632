"""Objectives (oracles), each ``list[str] -> (n,) float64`` in [0, 1], maximised; invalid SMILES score 0.

The paper's objective vector for EGFR-MET is ``[a_EGFR, a_MET, -DS_EGFR/20, -DS_MET/20]`` with Chemprop
activity classifiers ``a`` and QuickVina docking scores ``DS`` (its ``qed_sa`` mode: ``[a_1, a_2, QED,
(10 - SA)/9]``). The ``cpu`` profile uses **stand-ins**: the largest Morgan Tanimoto to approved inhibitors
of each target (``data/14-combimots/reference_inhibitors.csv``) replaces each activity classifier, with
RDKit's QED and SA score. Docking (:func:`dock_dockstring`, AutoDock Vina through DOCKSTRING) is the real
docking oracle, used in the ``gpu`` profile only (about 270 s of CPU per molecule).
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from icml25.checks import check_choice, check_int
from icml25.common import repo_root

from ._checks import _check_smiles
from .space import to_mol

__all__ = [
    "qed",
    "sa_objective",
    "similarity_objective",
    "dock_dockstring",
    "morgan_packed",
    "load_reference_inhibitors",
    "ObjectiveVector",
    "stand_in_objectives",
]

Objective = Callable[[Sequence[str]], np.ndarray]


def _packed(
    smiles: list[str], radius: int, n_bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """Packed Morgan fingerprints ``(n, ceil(n_bits/64))`` uint64 and a validity mask (invalid rows are 0)."""
    from icml25.kernels import tanimoto

    gen = _morgan_gen(radius, n_bits)
    bits = np.zeros((len(smiles), n_bits), dtype=bool)
    ok = np.zeros(len(smiles), dtype=bool)
    for i, s in enumerate(smiles):
        mol = to_mol(s)
        if mol is None:
            continue
        bits[i] = gen.GetFingerprintAsNumPy(mol).astype(bool)
        ok[i] = True
    return tanimoto.pack_bits(bits), ok


@lru_cache(maxsize=8)
def _morgan_gen(radius: int, n_bits: int) -> Any:
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)


def morgan_packed(
    smiles: Sequence[str], radius: int = 2, n_bits: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """Morgan fingerprints of ``smiles``, packed for :mod:`icml25.kernels.tanimoto`.

    Returns:
        ``(P, ok)``: (n, ceil(n_bits / 64)) uint64 and (n,) bool (False, with an all-zero row, for an
        invalid SMILES).

    Raises:
        TypeError: not a list of strings. ValueError: radius < 0 or n_bits < 1.
    """
    smiles = _check_smiles(smiles)
    return _packed(
        smiles, check_int(radius, "radius", low=0), check_int(n_bits, "n_bits", low=1)
    )


def qed(smiles: Sequence[str]) -> np.ndarray:
    """RDKit's quantitative estimate of drug-likeness (Bickerton et al. 2012), (n,) float64 in [0, 1]."""
    from rdkit.Chem import QED

    out = np.zeros(len(_check_smiles(smiles)))
    for i, s in enumerate(smiles):
        mol = to_mol(s)
        if mol is not None:
            out[i] = QED.qed(mol)
    return out


@lru_cache(maxsize=1)
def _sascorer() -> Any:
    from rdkit.Chem import RDConfig

    path = str(Path(RDConfig.RDContribDir) / "SA_Score")
    if path not in sys.path:
        sys.path.append(path)
    # RDKit Contrib (Ertl and Schuffenhauer 2009), shipped in the rdkit wheel
    import sascorer

    return sascorer


def sa_objective(smiles: Sequence[str]) -> np.ndarray:
    """Synthetic accessibility as an objective, ``(10 - SA) / 9`` (the paper's mapping of RDKit's SA score,
    1 = easy ... 10 = hard, to [0, 1], maximised). (n,) float64; invalid SMILES give 0."""
    sas = _sascorer()
    out = np.zeros(len(_check_smiles(smiles)))
    for i, s in enumerate(smiles):
        mol = to_mol(s)
        if mol is not None:
            out[i] = (10.0 - sas.calculateScore(mol)) / 9.0
    return np.clip(out, 0.0, 1.0)


def similarity_objective(
    refs: Sequence[str], radius: int = 2, n_bits: int = 2048
) -> Objective:
    """Stand-in activity oracle: the largest Morgan Tanimoto of a molecule to the reference actives ``refs``.

    Args:
        refs: SMILES of known actives of one target (>= 1, all valid).
        radius, n_bits: Morgan fingerprint.

    Returns:
        A function ``list[str] -> (n,) float64`` in [0, 1] (bulk Tanimoto kernel, row max).

    Raises:
        ValueError: empty or invalid ``refs``, radius < 0, n_bits < 1.
    """
    from icml25.kernels import tanimoto

    refs = _check_smiles(refs, "refs", allow_empty=False)
    radius = check_int(radius, "radius", low=0)
    n_bits = check_int(n_bits, "n_bits", low=1)
    R, ok = _packed(refs, radius, n_bits)
    if not ok.all():
        raise ValueError(
            f"refs holds an invalid SMILES: {refs[int(np.flatnonzero(~ok)[0])]!r}"
        )

    def similarity(smiles: Sequence[str]) -> np.ndarray:
        A, valid = _packed(_check_smiles(smiles), radius, n_bits)
        return np.where(valid, tanimoto.max_tanimoto(A, R).astype(np.float64), 0.0)

    return similarity


def dock_dockstring(
    target: str, num_cpus: int = 1, dock_scale: float = 20.0
) -> Objective:
    """Docking objective ``-Vina / dock_scale`` clipped to [0, 1] (the paper's ``-DS/20``), via DOCKSTRING.

    DOCKSTRING (García-Ortegón et al. 2022) prepares the ligand (Open Babel's ``obabel``, from the
    ``openbabel-wheel`` package: this function puts the interpreter's ``bin`` folder on ``PATH``) and runs
    AutoDock Vina in the curated pocket of ``target``. About 270 s of CPU per molecule on 2 cores: the
    ``gpu`` profile's host cores only. A molecule that fails to dock scores 0.

    Args:
        target: DOCKSTRING target name, ``"EGFR"`` or ``"MET"`` here (any of its 58 works).
        num_cpus: Vina threads per molecule.
        dock_scale: kcal/mol mapped to 1 (the paper's 20).

    Returns:
        A function ``list[str] -> (n,) float64`` in [0, 1]; its attribute ``raw`` holds the last Vina
        scores (kcal/mol, NaN for failures).

    Raises:
        ValueError: unknown target, num_cpus < 1.
    """
    from dockstring import load_target

    target = str(target).upper()
    check_int(num_cpus, "num_cpus", low=1)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    try:
        tgt = load_target(target)
    except Exception as err:  # noqa: BLE001 - dockstring raises its own error types
        raise ValueError(
            f"target {target!r} is not a DOCKSTRING target: {err}"
        ) from err

    def dock(smiles: Sequence[str]) -> np.ndarray:
        smiles = _check_smiles(smiles)
        raw = np.full(len(smiles), np.nan)
        for i, s in enumerate(smiles):
            try:
                raw[i] = float(tgt.dock(s, num_cpus=num_cpus)[0])
            except Exception:  # noqa: BLE001 - a ligand that fails preparation or docking scores 0
                pass
        dock.raw = raw
        return np.where(np.isfinite(raw), np.clip(-raw / dock_scale, 0.0, 1.0), 0.0)

    dock.raw = np.zeros(0)
    return dock


def load_reference_inhibitors(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Approved EGFR and MET inhibitors shipped with the chapter (``data/14-combimots/reference_inhibitors.csv``).

    Returns:
        DataFrame with columns ``target`` (``"EGFR"`` / ``"MET"``), ``name``, ``smiles``, ``formula``.

    Raises:
        FileNotFoundError: the file is missing.
    """
    p = (
        Path(path)
        if path is not None
        else repo_root() / "data" / "14-combimots" / "reference_inhibitors.csv"
    )
    return pd.read_csv(p)


class ObjectiveVector:
    """Several objectives evaluated together, cached by SMILES, with an oracle-call counter.

    Args:
        objectives: mapping name -> ``list[str] -> (n,)`` objective in [0, 1].

    Calling it on ``smiles`` returns the (n, D) float64 matrix (columns in the mapping's order);
    ``n_calls`` counts the distinct SMILES it has evaluated (the paper's oracle budget), ``names`` the
    objectives.
    """

    def __init__(self, objectives: dict[str, Objective]) -> None:
        if not isinstance(objectives, dict):
            raise TypeError(
                f"objectives must be a dict name -> callable, got {type(objectives).__name__}"
            )
        if not objectives:
            raise ValueError("objectives must name at least one objective")
        for name, fn in objectives.items():
            if not isinstance(name, str) or not callable(fn):
                raise TypeError(
                    f"objectives must map str names to callables, got {name!r}: {type(fn).__name__}"
                )
        self.names = tuple(objectives)
        self._fns = tuple(objectives.values())
        self._cache: dict[str, np.ndarray] = {}
        self.n_calls = 0

    @property
    def D(self) -> int:
        """Number of objectives."""
        return len(self.names)

    def __call__(self, smiles: Sequence[str]) -> np.ndarray:
        smiles = _check_smiles(smiles)
        new = list(dict.fromkeys(s for s in smiles if s not in self._cache))
        if new:
            cols = [np.asarray(fn(new), dtype=np.float64) for fn in self._fns]
            F = np.stack(cols, axis=1)
            if F.shape != (len(new), self.D) or not np.isfinite(F).all() or F.min() < 0:
                raise ValueError(
                    "an objective returned values that are not finite and >= 0"
                )
            for s, row in zip(new, F):
                self._cache[s] = row
            self.n_calls += len(new)
        if not smiles:
            return np.zeros((0, self.D))
        return np.stack([self._cache[s] for s in smiles])


def stand_in_objectives(
    refs: pd.DataFrame,
    targets: tuple[str, str] = ("EGFR", "MET"),
    radius: int = 2,
    n_bits: int = 2048,
) -> ObjectiveVector:
    """The ``cpu`` profile's D = 4 objective vector: ``[sim_EGFR, sim_MET, QED, (10 - SA)/9]``.

    ``sim_T`` (max Tanimoto to the approved inhibitors of target ``T``) stands in for the paper's Chemprop
    activity classifier of ``T``; it is not an activity model.

    Raises:
        ValueError: a target with no reference inhibitor.
    """
    objs: dict[str, Objective] = {}
    for t in targets:
        t = check_choice(t, "targets", sorted(set(refs["target"])))
        objs[f"sim_{t}"] = similarity_objective(
            list(refs.loc[refs["target"] == t, "smiles"]), radius, n_bits
        )
    objs["QED"] = qed
    objs["SA"] = sa_objective
    return ObjectiveVector(objs)

"""The make-on-demand space: Enamine REAL building blocks, the 13 REAL reaction templates, recipes.

The blocks (``building_blocks.csv``, 139,493 rows) and the reaction -> slot -> allowed-blocks map
(``reaction_to_building_blocks.pkl``) are read from the installed ``synthemol`` 1.0.4 package (found with
``importlib.util.find_spec``; nothing is copied into ``data/``). The 13 template SMARTS below are the REAL
reactions as SyntheMol and CombiMOTS use them (public facts; ``tests/test_combimots.py`` checks them against
``synthemol.reactions.REAL_REACTIONS`` and checks the products against SyntheMol's own ``Reaction``).
"""

from __future__ import annotations

import importlib.util
import itertools
import pickle
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from icml25.checks import check_int, check_real

from ._checks import _check_smiles

__all__ = [
    "REAL_TEMPLATES",
    "Reaction",
    "synthemol_resources",
    "load_real_space",
    "reduce_search_space",
    "replay_recipe",
    "random_real_products",
    "to_mol",
]

_BOC = "CC(C)(C)OC(=O)[N:1]([*:2])[*:3].[*:4][N:5]([H])[*:6]"
_AMINE = "[*:1][N:2]([H])[*:3]"
_ACID = "[OH1][C:4]([*:5])=[O:6]"
_AMIDE = "[*:5][C:4](=[O:6])[N:2]([*:1])[*:3]"
_PRIMARY = "[*:1][N:2]([H])[H:3]"
_HALIDE = "[F,Cl,Br,I][*:4]"

#: (reaction_id, reactant SMARTS per slot, product SMARTS), with atom
#: maps, in SyntheMol's order
REAL_TEMPLATES: tuple[tuple[int, tuple[str, ...], str], ...] = (
    (
        275592,
        (_BOC, "[OH1][C:7]([*:8])=[O:9]", "[OH1][C:10]([*:11])=[O:12]"),
        "[*:4][N:5]([*:6])[C:7](=[O:9])[*:8].[*:3][N:1]([*:2])[C:10](=[O:12])[*:11]",
    ),
    (22, (_AMINE, _ACID), _AMIDE),
    (11, (_AMINE, _ACID), _AMIDE),
    (527, (_AMINE, _ACID), _AMIDE),
    (240690, (_AMINE, _ACID), _AMIDE),
    (
        2430,
        (_PRIMARY, "[*:4][N:5]([H])[*:6]"),
        "O=C([N:2]([*:1])[H:3])[N:5]([*:4])[*:6]",
    ),
    (
        2708,
        (_PRIMARY, "[*:4][N:5]([H])[H:6]"),
        "O=C([N:2]([*:1])[H:3])[N:5]([*:4])[H:6]",
    ),
    (2230, (_AMINE, _HALIDE), "[*:1][N:2]([*:3])[*:4]"),
    (
        2718,
        (_PRIMARY, "[*:4][N:5]([H])[H:6]"),
        "O=C(C(=O)[N:2]([*:1])[H:3])[N:5]([*:4])[H:6]",
    ),
    (
        40,
        (_AMINE, "[O:4]=[S:5](=[O:6])([F,Cl,Br,I])[*:7]"),
        "[O:4]=[S:5](=[O:6])([*:7])[N:2]([*:1])[*:3]",
    ),
    (27, (_AMINE, _HALIDE), "[*:1][N:2]([*:3])[*:4]"),
    (
        271948,
        (_AMINE, "[*:4][N:5]([H])[H:6]"),
        "O=C(C(=O)[N:2]([*:1])[*:3])[N:5]([*:4])[H:6]",
    ),
    (
        1458,
        ("[OH1:1][C:2]([*:3])=[O:4]", "[F,Cl,Br,I][*:5]"),
        "[O:4]=[C:2]([*:3])[O:1][*:5]",
    ),
)


def _strip_maps(smarts: str) -> str:
    """The SMARTS without atom-map numbers (``[C:4]`` -> ``[C]``), for substructure matching."""
    return re.sub(r"\[([^:\]]+)(:\d+)\]", r"[\1]", smarts)


@lru_cache(maxsize=200_000)
def _mol_h(smiles: str) -> Any:
    """The RDKit molecule of ``smiles`` with explicit hydrogens (REAL SMARTS name ``[H]``), or None."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.AddHs(mol)


def to_mol(smiles: str) -> Any:
    """RDKit molecule of ``smiles`` (None when it does not parse); RDKit's log is silenced."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return Chem.MolFromSmiles(smiles)


class Reaction:
    """One REAL reaction template with its allowed building blocks per slot.

    Args:
        reactant_smarts: one SMARTS per reactant slot (atom-mapped, as in :data:`REAL_TEMPLATES`).
        product_smarts: the product SMARTS.
        reaction_id: Enamine's reaction id.
        allowed: per slot, the building-block SMILES allowed in it (None: any molecule matching the SMARTS).
        block_set: all building-block SMILES of the space; a block outside ``allowed[i]`` never fills slot
            ``i``, while a molecule that is not a block (an intermediate) is matched by SMARTS only
            (SyntheMol's rule).

    Raises:
        ValueError: a SMARTS does not parse, or ``allowed`` has the wrong number of slots.
    """

    def __init__(
        self,
        reactant_smarts: Sequence[str],
        product_smarts: str,
        reaction_id: int,
        allowed: Sequence[frozenset[str]] | None = None,
        block_set: frozenset[str] | None = None,
    ) -> None:
        from rdkit import Chem
        from rdkit.Chem import AllChem

        self.reactant_smarts = tuple(reactant_smarts)
        self.product_smarts = str(product_smarts)
        self.reaction_id = int(reaction_id)
        self.queries = tuple(
            Chem.MolFromSmarts(_strip_maps(s)) for s in self.reactant_smarts
        )
        if any(q is None for q in self.queries):
            raise ValueError(
                f"reactant_smarts of reaction {reaction_id} do not parse: {self.reactant_smarts}"
            )
        smarts = (
            ".".join(f"({s})" for s in self.reactant_smarts)
            + f">>({self.product_smarts})"
        )
        self.rxn = AllChem.ReactionFromSmarts(smarts)
        if allowed is not None and len(allowed) != len(self.reactant_smarts):
            raise ValueError(
                f"allowed must have {len(self.reactant_smarts)} slots, got {len(allowed)}"
            )
        self.allowed = None if allowed is None else tuple(frozenset(a) for a in allowed)
        self.block_set = frozenset() if block_set is None else frozenset(block_set)
        # SMILES -> slots (the allowed sets never change)
        self._matches: dict[str, list[int]] = {}

    @property
    def n_reactants(self) -> int:
        """Number of reactant slots."""
        return len(self.reactant_smarts)

    def smarts_matches(self, smiles: str) -> list[int]:
        """Slots whose SMARTS matches ``smiles`` (explicit Hs added), ignoring the allowed sets."""
        mol = _mol_h(smiles)
        if mol is None:
            return []
        return [i for i, q in enumerate(self.queries) if mol.HasSubstructMatch(q)]

    def reactant_matches(self, smiles: str) -> list[int]:
        """Slots that ``smiles`` may fill: SMARTS match and, for a building block, membership of the slot's
        allowed set. Returns slot indices in increasing order (empty for an invalid SMILES)."""
        if not isinstance(smiles, str):
            raise TypeError(f"smiles must be a string, got {type(smiles).__name__}")
        if smiles not in self._matches:
            # test only the slots that allow it
            if self.allowed is not None and smiles in self.block_set:
                cand = [i for i, a in enumerate(self.allowed) if smiles in a]
                mol = _mol_h(smiles) if cand else None
                slots = [
                    i
                    for i in cand
                    if mol is not None and mol.HasSubstructMatch(self.queries[i])
                ]
            else:
                slots = self.smarts_matches(smiles)
            self._matches[smiles] = slots
        return list(self._matches[smiles])

    def run(self, reactants: Sequence[str]) -> list[str]:
        """Products of the reaction on ``reactants`` (one SMILES per slot, in slot order).

        Hydrogens are made explicit before running (the SMARTS name them) and removed after; products
        that RDKit cannot sanitise are dropped. Returns the distinct canonical product SMILES, in RDKit's
        order (empty when the template does not apply).

        Raises:
            ValueError: the number of reactants differs from the number of slots, or one does not parse.
        """
        from rdkit import Chem

        reactants = _check_smiles(reactants, "reactants")
        if len(reactants) != self.n_reactants:
            raise ValueError(
                f"reactants must hold {self.n_reactants} SMILES (reaction {self.reaction_id}), got {len(reactants)}"
            )
        mols = [_mol_h(s) for s in reactants]
        if any(m is None for m in mols):
            raise ValueError(f"reactants hold an invalid SMILES: {reactants}")
        out: list[str] = []
        for prods in self.rxn.RunReactants(mols):
            try:
                smi = Chem.MolToSmiles(Chem.RemoveHs(prods[0]))
            except Exception:  # noqa: BLE001 - an unsanitisable product is not a product
                continue
            if smi not in out:
                out.append(smi)
        return out

    def __repr__(self) -> str:
        return f"Reaction(id={self.reaction_id}, slots={self.n_reactants})"


def synthemol_resources() -> Path:
    """Folder of the REAL data shipped inside the installed ``synthemol`` package.

    Raises:
        ModuleNotFoundError: ``synthemol`` is not installed (the ``combimots`` extra).
    """
    spec = importlib.util.find_spec("synthemol")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "synthemol is not installed: pip install 'icml25[combimots]'"
        )
    return Path(spec.origin).parent / "resources" / "real"


@lru_cache(maxsize=1)
def _read_real() -> tuple[pd.DataFrame, dict[int, dict[int, frozenset[str]]], int]:
    folder = synthemol_resources()
    raw = pd.read_csv(folder / "building_blocks.csv")
    blocks = raw.drop_duplicates("smiles", keep="first").reset_index(drop=True)[
        ["smiles", "reagent_id"]
    ]
    with open(folder / "reaction_to_building_blocks.pkl", "rb") as fh:
        mapping = pickle.load(fh)
    mapping = {
        int(r): {int(i): frozenset(s) for i, s in slots.items()}
        for r, slots in mapping.items()
    }
    return blocks, mapping, len(raw)


def _build_reactions(
    mapping: dict[int, dict[int, frozenset[str]]], keep: frozenset[str]
) -> list[Reaction]:
    reactions = []
    for rid, reactants, product in REAL_TEMPLATES:
        allowed = [mapping[rid][i] & keep for i in range(len(reactants))]
        reactions.append(
            Reaction(reactants, product, rid, allowed=allowed, block_set=keep)
        )
    return reactions


def load_real_space(
    n_blocks: int | None = None,
    rng: np.random.Generator | None = None,
    min_per_slot: int = 30,
) -> tuple[pd.DataFrame, list[Reaction]]:
    """Enamine REAL building blocks and the 13 REAL reactions, optionally a stratified subsample.

    The full space has 139,493 block rows (137,656 distinct SMILES; the first id of a repeated SMILES is
    kept). A subsample of ``n_blocks`` first draws ``min_per_slot`` allowed blocks for every reaction slot
    (all of them where a slot has fewer), then fills up uniformly from the blocks allowed in some slot, and
    restricts every reaction's allowed sets to the subsample, so every template stays usable.

    Args:
        n_blocks: blocks to keep (None: all).
        rng: the generator of the subsample's draws (needed when ``n_blocks`` is given).
        min_per_slot: blocks guaranteed per reaction slot.

    Returns:
        ``(blocks, reactions)``: a DataFrame with columns ``smiles`` (str) and ``reagent_id`` (int), and the
        13 :class:`Reaction` with their allowed sets.

    Raises:
        ValueError: ``n_blocks`` too small for ``min_per_slot`` on every slot, negative sizes.
        TypeError: ``n_blocks`` given without a ``numpy.random.Generator`` ``rng``.
        ModuleNotFoundError: synthemol missing.
    """
    from icml25.checks import check_rng

    min_per_slot = check_int(min_per_slot, "min_per_slot", low=1)
    blocks, mapping, _ = _read_real()
    if n_blocks is None:
        return blocks.copy(), _build_reactions(mapping, frozenset(blocks["smiles"]))
    n_blocks = check_int(n_blocks, "n_blocks", low=1)
    rng = check_rng(rng)
    chosen: set[str] = set()
    for rid, reactants, _ in REAL_TEMPLATES:
        for i in range(len(reactants)):
            pool = sorted(mapping[rid][i])
            take = min(min_per_slot, len(pool))
            chosen.update(
                pool[j] for j in rng.choice(len(pool), size=take, replace=False)
            )
    if len(chosen) > n_blocks:
        raise ValueError(
            f"n_blocks = {n_blocks} is too small: {min_per_slot} blocks for each of the "
            f"{sum(len(t[1]) for t in REAL_TEMPLATES)} reaction slots already need {len(chosen)}"
        )
    usable = sorted(
        frozenset().union(*(s for slots in mapping.values() for s in slots.values()))
        - chosen
    )
    extra = rng.choice(
        len(usable), size=min(n_blocks - len(chosen), len(usable)), replace=False
    )
    chosen.update(usable[j] for j in extra)
    sub = blocks[blocks["smiles"].isin(chosen)].reset_index(drop=True)
    return sub, _build_reactions(mapping, frozenset(sub["smiles"]))


def reduce_search_space(
    blocks: pd.DataFrame,
    reference_smiles: Sequence[str],
    sim_threshold: float = 0.4,
    radius: int = 2,
    n_bits: int = 2048,
) -> pd.DataFrame:
    """Blocks similar to a fragment of the reference actives (the paper's Sec. 3 search-space reduction).

    The paper takes property-aware fragments from a trained FGIB model per target; here the fragments are
    RDKit's BRICS fragments of the reference molecules (a *substitute*, not FGIB), dummy atoms removed.
    A block is kept when its Morgan Tanimoto to some fragment is at least ``sim_threshold`` (bulk Tanimoto
    kernel, :mod:`icml25.kernels.tanimoto`).

    Args:
        blocks: DataFrame with a ``smiles`` column.
        reference_smiles: SMILES of the reference actives (>= 1).
        sim_threshold: Tanimoto threshold in [0, 1] (the paper's 0.4).
        radius, n_bits: Morgan fingerprint.

    Returns:
        The kept rows of ``blocks`` (index reset).

    Raises:
        ValueError: no ``smiles`` column, empty or invalid references, threshold outside [0, 1].
    """
    from rdkit import Chem
    from rdkit.Chem import BRICS

    from icml25.kernels import tanimoto

    from .objectives import _packed

    if "smiles" not in getattr(blocks, "columns", ()):
        raise ValueError("blocks must be a DataFrame with a 'smiles' column")
    refs = _check_smiles(reference_smiles, "reference_smiles", allow_empty=False)
    thr = check_real(sim_threshold, "sim_threshold", low=0.0, high=1.0)
    frags: set[str] = set()
    for s in refs:
        mol = to_mol(s)
        if mol is None:
            raise ValueError(f"reference_smiles holds an invalid SMILES: {s!r}")
        for f in BRICS.BRICSDecompose(mol):
            fm = Chem.MolFromSmiles(re.sub(r"\[\d*\*\]", "[H]", f))
            if fm is not None and fm.GetNumHeavyAtoms() >= 3:
                frags.add(Chem.MolToSmiles(fm))
    A, ok = _packed(list(blocks["smiles"]), radius, n_bits)
    B, _ = _packed(sorted(frags), radius, n_bits)
    keep = (tanimoto.max_tanimoto(A, B) >= np.float32(thr)) & ok
    return blocks[keep].reset_index(drop=True)


def replay_recipe(recipe: dict, reactions: Sequence[Reaction]) -> bool:
    """Re-run a recipe's logged reaction on its logged blocks; True when the logged product comes out.

    Args:
        recipe: a dict with ``smiles``, ``reaction_id`` and ``reactants`` (SMILES in slot order), as
            :meth:`icml25.combimots.ParetoMCTS.recipes` returns.
        reactions: the reactions of the space.

    Raises:
        KeyError: a key is missing. ValueError: unknown reaction id.
    """
    by_id = {r.reaction_id: r for r in reactions}
    rid = int(recipe["reaction_id"])
    if rid not in by_id:
        raise ValueError(f"recipe names reaction {rid}, not in the space's reactions")
    return recipe["smiles"] in by_id[rid].run(list(recipe["reactants"]))


def random_real_products(
    blocks: pd.DataFrame,
    reactions: Sequence[Reaction],
    n: int,
    rng: np.random.Generator,
    max_tries: int | None = None,
) -> list[dict]:
    """``n`` distinct random one-step REAL products (the random baseline at a given oracle budget).

    Each draw picks a reaction uniformly, then one allowed block per slot uniformly, runs the reaction
    and keeps one of its products uniformly; repeated products are drawn again.

    Args:
        blocks: the space's blocks (``smiles``, ``reagent_id``); reactions: its reactions.
        n: products wanted; rng: the generator of every draw; max_tries: draws allowed (default 20 n).

    Returns:
        ``n`` recipes (dicts with ``smiles``, ``reaction_id``, ``reactants``, ``reagent_ids``), fewer only
        when ``max_tries`` ran out.

    Raises:
        ValueError: ``n < 0``. TypeError: ``rng`` not a Generator.
    """
    from icml25.checks import check_rng

    n = check_int(n, "n", low=0)
    rng = check_rng(rng)
    max_tries = (
        20 * max(n, 1)
        if max_tries is None
        else check_int(max_tries, "max_tries", low=1)
    )
    ids = dict(zip(blocks["smiles"], blocks["reagent_id"]))
    usable = [
        r for r in reactions if r.allowed is not None and all(len(a) for a in r.allowed)
    ]
    pools = {r.reaction_id: [sorted(a) for a in r.allowed] for r in usable}
    out: list[dict] = []
    seen: set[str] = set()
    for _ in range(max_tries):
        if len(out) >= n:
            break
        r = usable[int(rng.integers(len(usable)))]
        reactants = [p[int(rng.integers(len(p)))] for p in pools[r.reaction_id]]
        if len(set(reactants)) < len(reactants):
            continue
        prods = r.run(reactants)
        if not prods:
            continue
        smi = prods[int(rng.integers(len(prods)))]
        if smi in seen:
            continue
        seen.add(smi)
        out.append(
            {
                "smiles": smi,
                "reaction_id": r.reaction_id,
                "reactants": tuple(reactants),
                "reagent_ids": tuple(int(ids.get(s, -1)) for s in reactants),
            }
        )
    return out


def _assignments(
    slot_lists: Sequence[Sequence[int]], n_slots: int, full: bool
) -> list[tuple[int, ...]]:
    """Assignments of molecules to distinct slots (one slot per molecule), all slots filled when ``full``."""
    out = []
    for combo in itertools.product(*slot_lists):
        if len(set(combo)) == len(combo) and (not full or len(combo) == n_slots):
            out.append(combo)
    return out

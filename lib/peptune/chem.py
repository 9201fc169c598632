"""Peptides as SMILES: a p2smi corpus, validity rules, peptide-bond token masks, a tokenizer.

PepTune (Tang, Zhang and Chatterjee, ICML 2025, Sec. 3) writes a peptide as one SMILES string so
that non-natural residues (D-residues, N-methylation, non-canonical side chains) and macrocycles
(disulphide, head-to-tail, side-chain cyclisations) are expressible. Here the corpus is drawn by
the ``p2smi`` package (residue letters -> cyclisation constraint -> SMILES); the paper's 11 M
peptide corpus is a download and is not used.

Reconstructions (labelled): the tokenizer is atom-level (the classic SMILES regex), not the
paper's SMILES Pair-Encoding vocabulary of 586; the strict validity rule (a connected molecule
holding at least ``min_bonds`` alpha-amino-acid amide links) is this chapter's, the official
code's lenient rule (RDKit parses it and it holds one amide or N-methyl amide) is
``strict=False``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

import numpy as np

from icml25.checks import check_bool, check_int, check_probability

__all__ = [
    "CYCLIZATIONS",
    "SMILES_REGEX",
    "SmilesTokenizer",
    "bond_spans",
    "is_valid_peptide",
    "peptide_bond_mask",
    "peptide_corpus",
    "tokenize_smiles",
    "validity",
]

#: The five cyclisation types p2smi builds: disulphide, head-to-tail, side chain to
#: N-terminus, side chain to C-terminus, side chain to side chain.
CYCLIZATIONS: tuple[str, ...] = ("SS", "HT", "SCNT", "SCCT", "SCSC")

#: Atom-level SMILES regex (bracket atoms, two-letter halogens,
#: ring-bond digits and ``%nn``).
SMILES_REGEX = re.compile(
    r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$|%[0-9]{2}|[0-9])"
)

# Peptide-bond regexes of the official code, tried in this order; a later match may not
# overlap an earlier one ("first match wins").
_BOND_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"OC\(=O\)",  # ester (depsipeptide)
        r"N\(C\)C\(=O\)",  # N-methyl amide
        r"N[12]C\(=O\)",  # proline (ring) amide
        r"NC\(=O\)",  # amide
        r"C\(=O\)N\(C\)",  # reversed N-methyl amide
        r"C\(=O\)N[12]?",  # reversed amide
    )
)

_SPECIALS = ("[PAD]", "[MASK]")


def _rdkit():
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return Chem


_PATTERNS: dict[str, object] = {}


def _pattern(name: str):
    if not _PATTERNS:
        Chem = _rdkit()
        # alpha-carbon - carbonyl - amide N - alpha-carbon: one
        # backbone link between residues
        _PATTERNS["link"] = Chem.MolFromSmarts("[CX4][CX3](=O)[NX3][CX4]")
        _PATTERNS["amide"] = Chem.MolFromSmarts("[NX3][CX3](=O)")
    return _PATTERNS[name]


def tokenize_smiles(smiles: str) -> list[str]:
    """Split ``smiles`` into atom-level tokens whose concatenation is ``smiles``.

    Raises:
        ValueError: ``smiles`` is not a string, or it holds characters the regex cannot cover.
    """
    if not isinstance(smiles, str):
        raise ValueError(f"smiles must be a string, got {type(smiles).__name__}")
    tokens = SMILES_REGEX.findall(smiles)
    if "".join(tokens) != smiles:
        raise ValueError(
            f"smiles {smiles!r} holds characters outside the SMILES token regex"
        )
    return tokens


def is_valid_peptide(smiles: str, strict: bool = True, min_bonds: int = 2) -> bool:
    """Is ``smiles`` a peptide?

    ``strict=True`` (this chapter's rule): RDKit parses it, it is one connected molecule, and it
    holds at least ``min_bonds`` backbone links ``C_alpha-C(=O)-N-C_alpha`` (a chain of
    ``min_bonds + 1`` residues; N-methyl and proline amides count). ``strict=False`` (the official
    code's ``is_peptide``): RDKit parses it and it contains one amide ``N-C(=O)``.

    Args:
        smiles: the string; an empty or non-string value is simply not a peptide.
        strict: which rule.
        min_bonds: backbone links the strict rule needs (>= 1).

    Raises:
        ValueError: ``strict`` is not a bool, ``min_bonds < 1``.
    """
    check_bool(strict, "strict")
    check_int(min_bonds, "min_bonds", low=1)
    if not isinstance(smiles, str) or not smiles:
        return False
    Chem = _rdkit()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return False
    if not strict:
        return mol.HasSubstructMatch(_pattern("amide"))
    if "." in smiles:
        return False
    return len(mol.GetSubstructMatches(_pattern("link"))) >= min_bonds


def _smiles_list(smiles: object, name: str = "smiles") -> list:
    """``smiles`` as a list; a bare string (which would be read character by character) or a
    non-sequence raises ``ValueError`` naming ``name``."""
    if isinstance(smiles, (str, bytes)):
        raise ValueError(
            f"{name} must be a sequence of SMILES strings, not a single string {smiles[:40]!r}"
        )
    try:
        return list(smiles)
    except TypeError:
        raise ValueError(
            f"{name} must be a sequence of SMILES strings, got {type(smiles).__name__}"
        ) from None


def validity(smiles: Sequence[str], strict: bool = True) -> float:
    """Fraction of ``smiles`` that :func:`is_valid_peptide` accepts (0.0 for an empty list).

    Raises:
        ValueError: ``smiles`` is a single string or not a sequence.
    """
    smiles = _smiles_list(smiles)
    if len(smiles) == 0:
        return 0.0
    return float(np.mean([is_valid_peptide(s, strict=strict) for s in smiles]))


def bond_spans(smiles: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of peptide bonds in ``smiles`` (official regexes, in order,
    a span overlapping an earlier one dropped)."""
    taken: list[tuple[int, int]] = []
    for pat in _BOND_PATTERNS:
        for m in pat.finditer(smiles):
            a, b = m.span()
            if all(b <= x or a >= y for x, y in taken):
                taken.append((a, b))
    return sorted(taken)


def peptide_bond_mask(smiles: str, tokens: Sequence[str] | None = None) -> np.ndarray:
    """Which tokens of ``smiles`` belong to a peptide bond (Sec. 3.2, bond-dependent masking).

    The mask must be computed on exactly the string that is tokenised (canonicalisation reorders
    atoms), so the tokens must concatenate to ``smiles``.

    Args:
        smiles: the SMILES string.
        tokens: its tokens (default :func:`tokenize_smiles`).

    Returns:
        ``(len(tokens),)`` bool array, True where a token overlaps a bond span.

    Raises:
        ValueError: the tokens do not concatenate to ``smiles``.
    """
    if tokens is None:
        tokens = tokenize_smiles(smiles)
    if not isinstance(smiles, str) or "".join(tokens) != smiles:
        raise ValueError(
            "tokens must concatenate to smiles (compute the mask on the tokenised string)"
        )
    spans = bond_spans(smiles)
    out = np.zeros(len(tokens), dtype=bool)
    pos = 0
    for i, tok in enumerate(tokens):
        a, b = pos, pos + len(tok)
        out[i] = any(a < y and b > x for x, y in spans)
        pos = b
    return out


def peptide_corpus(
    n: int,
    residues: tuple[int, int] = (3, 5),
    p_noncanonical: float = 0.05,
    p_dextro: float = 0.2,
    cyclizations: Iterable[str] = CYCLIZATIONS,
    p_cyclic: float = 0.5,
    p_nmethyl: float = 0.2,
    rng: np.random.Generator | int = 1234,
    max_tokens: int | None = 96,
    max_tries: int = 20,
) -> list[str]:
    """Draw ``n`` distinct peptide SMILES with ``p2smi`` (residues -> constraint -> SMILES).

    Each peptide: a length in ``residues`` (inclusive), each residue drawn from p2smi's residue
    lists, non-canonical with probability ``p_noncanonical``, D with probability ``p_dextro``; with probability
    ``p_cyclic`` one of ``cyclizations`` is asked for (a sequence that cannot take it is redrawn,
    up to ``max_tries`` times, then left linear); with probability ``p_nmethyl`` a fraction of its
    amide nitrogens is methylated (p2smi ``add_n_methylation``). Entries failing the strict
    :func:`is_valid_peptide` or longer than ``max_tokens`` tokens are dropped and redrawn.

    p2smi draws from Python's global :mod:`random`: it is seeded here from ``rng`` (a NumPy
    generator; an int is used as the key itself, 1234 for the shipped checkpoint's corpus) and its
    state is restored afterwards.

    Returns:
        ``n`` distinct SMILES strings.

    Raises:
        ValueError: bad sizes/probabilities, an unknown cyclisation, or ``n`` not reachable.
    """
    import p2smi.utilities.smilesgen as smilesgen
    from p2smi import chemMods, fasta2smi, genPeps

    check_int(n, "n", low=1)
    if not (isinstance(residues, (tuple, list)) and len(residues) == 2):
        raise ValueError(f"residues must be a (min, max) pair, got {residues!r}")
    lo = check_int(residues[0], "residues[0]", low=2)
    hi = check_int(residues[1], "residues[1]", low=lo)
    check_probability(p_noncanonical, "p_noncanonical")
    check_probability(p_dextro, "p_dextro")
    check_probability(p_cyclic, "p_cyclic")
    check_probability(p_nmethyl, "p_nmethyl")
    cyc = tuple(cyclizations)
    bad = [c for c in cyc if c not in CYCLIZATIONS]
    if bad:
        raise ValueError(f"cyclizations: unknown {bad}; known {CYCLIZATIONS}")
    if p_cyclic > 0 and not cyc:
        raise ValueError("cyclizations must be non-empty when p_cyclic > 0")
    if max_tokens is not None:
        check_int(max_tokens, "max_tokens", low=8)
    check_int(max_tries, "max_tries", low=1)

    lists = genPeps.get_amino_acid_lists()
    state = random.getstate()
    random.seed(_corpus_key(rng))
    out: dict[str, None] = {}
    try:
        attempts = 0
        while len(out) < n:
            attempts += 1
            if attempts > 50 * n + 1000:
                raise ValueError(
                    f"n={n}: only {len(out)} distinct peptides reachable with these settings"
                )
            want = random.choice(cyc) if (cyc and random.random() < p_cyclic) else ""
            for _ in range(max_tries):
                seq = _draw_letters(
                    random.randint(lo, hi), p_noncanonical, p_dextro, lists
                )
                try:
                    s, constr = fasta2smi.constraint_resolver(seq, want)
                except Exception:
                    continue
                if not want or constr:
                    break
            try:
                ok, _ = fasta2smi.validate_constraint_pattern(s, constr)
                if not ok:
                    continue
                smi = smilesgen.constrained_peptide_smiles(s, constr)[2]
            except Exception:
                continue
            if p_nmethyl > 0 and random.random() < p_nmethyl:
                try:
                    smi, _ = chemMods.add_n_methylation(smi, random.uniform(0.2, 0.6))
                except Exception:
                    continue
            if not is_valid_peptide(smi, strict=True):
                continue
            if max_tokens is not None and len(tokenize_smiles(smi)) > max_tokens:
                continue
            out[smi] = None
    finally:
        random.setstate(state)
    return list(out)


def _corpus_key(rng: np.random.Generator | int) -> int:
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return int(rng)
    from icml25.checks import check_rng

    return int(check_rng(rng).integers(2**62))


def _draw_letters(length: int, p_nc: float, p_d: float, lists) -> str:
    """Residue letters, each drawn independently from p2smi's four residue lists (canonical L,
    canonical D, non-canonical L, non-canonical D). p2smi's own ``build_sequence`` rounds the
    fractions per peptide, which for 3-5 residues and small fractions gives none at all."""
    canon, canon_d, nc, nc_d = lists
    out = []
    for _ in range(length):
        noncanon = random.random() < p_nc
        dextro = random.random() < p_d
        pool = (nc_d if dextro else nc) if noncanon else (canon_d if dextro else canon)
        out.append(random.choice(pool))
    return "".join(out)


class SmilesTokenizer:
    """Atom-level SMILES tokenizer with ``[PAD]`` (id 0) and ``[MASK]`` (id 1).

    Reconstruction: the paper uses a SMILES Pair-Encoding vocabulary (586 tokens); atom-level
    regex tokens keep the vocabulary small (tens of tokens) for CPU-sized models.

    Args:
        vocab: the non-special tokens (order kept, duplicates dropped).

    Raises:
        ValueError: empty vocab or a special token inside it.
    """

    def __init__(self, vocab: Sequence[str]):
        toks = list(dict.fromkeys(vocab))
        if not toks:
            raise ValueError("vocab must hold at least one token")
        if any(t in _SPECIALS for t in toks):
            raise ValueError(f"vocab must not contain the special tokens {_SPECIALS}")
        self.itos: list[str] = [*_SPECIALS, *toks]
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}
        self.pad_id = 0
        self.mask_id = 1

    @classmethod
    def from_corpus(cls, smiles: Iterable[str]) -> "SmilesTokenizer":
        """Vocabulary = every token seen in ``smiles``, sorted."""
        seen: set[str] = set()
        for s in smiles:
            seen.update(tokenize_smiles(s))
        return cls(sorted(seen))

    @property
    def vocab_size(self) -> int:
        """Number of tokens, the two specials included."""
        return len(self.itos)

    def can_encode(self, smiles: str) -> bool:
        """True when every token of ``smiles`` is in the vocabulary."""
        try:
            return all(t in self.stoi for t in tokenize_smiles(smiles))
        except ValueError:
            return False

    def encode(self, smiles: str, length: int | None = None) -> np.ndarray:
        """Token ids of ``smiles`` (int64), right-padded with ``[PAD]`` to ``length``.

        Raises:
            ValueError: an unknown token (named), or more tokens than ``length``.
        """
        toks = tokenize_smiles(smiles)
        unknown = [t for t in toks if t not in self.stoi]
        if unknown:
            raise ValueError(
                f"smiles {smiles!r}: unknown tokens {sorted(set(unknown))}"
            )
        ids = [self.stoi[t] for t in toks]
        if length is not None:
            check_int(length, "length", low=1)
            if len(ids) > length:
                raise ValueError(f"smiles has {len(ids)} tokens > length={length}")
            ids = ids + [self.pad_id] * (length - len(ids))
        return np.asarray(ids, dtype=np.int64)

    def encode_batch(
        self, smiles: Sequence[str], length: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(ids (n, length) int64, bond_mask (n, length) bool)`` for a list of SMILES."""
        ids = np.full((len(smiles), length), self.pad_id, dtype=np.int64)
        bonds = np.zeros((len(smiles), length), dtype=bool)
        for i, s in enumerate(smiles):
            row = self.encode(s, length)
            ids[i] = row
            m = peptide_bond_mask(s)
            bonds[i, : len(m)] = m
        return ids, bonds

    def decode(self, ids: Sequence[int]) -> str:
        """SMILES from ids: ``[PAD]`` dropped, a remaining ``[MASK]`` kept literally (invalid).

        Raises:
            ValueError: an id outside the vocabulary.
        """
        out = []
        for i in np.asarray(ids).reshape(-1).tolist():
            if not 0 <= int(i) < self.vocab_size:
                raise ValueError(
                    f"token id {i} outside the vocabulary of {self.vocab_size}"
                )
            if int(i) != self.pad_id:
                out.append(self.itos[int(i)])
        return "".join(out)

    def decode_batch(self, ids: np.ndarray) -> list[str]:
        """:meth:`decode` of every row of a ``(n, L)`` array (ValueError for any other shape)."""
        ids = np.asarray(ids)
        if ids.ndim != 2:
            raise ValueError(f"ids must be a (n, L) array, got shape {ids.shape}")
        return [self.decode(r) for r in ids]

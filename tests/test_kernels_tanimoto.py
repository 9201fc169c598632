"""Kernels of kernels/tanimoto.cu: packing vs a per-bit loop, similarities vs RDKit, NVRTC, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.checks import TooLargeError
from icml25.kernels import compile_ptx
from icml25.kernels import tanimoto as tk

rdkit = pytest.importorskip("rdkit")
from rdkit import Chem, DataStructs  # noqa: E402
from rdkit.Chem import rdFingerprintGenerator  # noqa: E402

SMILES = [
    "CCO",
    "c1ccccc1",
    "CC(=O)Oc1ccccc1C(=O)O",
    "CCN(CC)CC",
    "C",
    "O=C(O)c1ccccc1",
    "COc1cc2ncnc(Nc3cccc(C#C)c3)c2cc1OCCOC",
    "Cc1ccc(NC(=O)c2ccc(CN3CCN(C)CC3)cc2)cc1Nc1nccc(-c2cccnc2)n1",
]


def _random_bitvects(n, n_bits, p, seed):
    rng = np.random.default_rng(seed)
    bits = rng.random((n, n_bits)) < p
    fps = []
    for row in bits:
        fp = DataStructs.ExplicitBitVect(n_bits)
        for j in np.flatnonzero(row):
            fp.SetBit(int(j))
        fps.append(fp)
    return bits, fps


def test_compiles_with_nvrtc():
    ptx = compile_ptx("tanimoto")
    for name in ("bulk_tanimoto", "max_tanimoto"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("n_bits", [1, 63, 64, 65, 130, 2048])
def test_pack_bits_matches_a_per_bit_loop(n_bits):
    rng = np.random.default_rng(n_bits)
    bits = rng.random((7, n_bits)) < 0.4
    packed = tk.pack_bits(bits)
    W = -(-n_bits // 64)
    assert packed.shape == (7, W) and packed.dtype == np.uint64
    for i in range(7):
        for w in range(W):
            want = sum(
                1 << (j % 64)
                for j in range(w * 64, min(n_bits, (w + 1) * 64))
                if bits[i, j]
            )
            assert int(packed[i, w]) == want
    assert np.array_equal(tk.pack_bits(bits.astype(np.uint8)), packed)


def test_pack_fingerprints_equals_pack_bits_of_rdkit_bits():
    bits, fps = _random_bitvects(5, 200, 0.2, 0)
    assert np.array_equal(tk.pack_fingerprints(fps), tk.pack_bits(bits))


@pytest.mark.parametrize("n_bits,p", [(2048, 0.02), (167, 0.3), (64, 0.5), (100, 0.0)])
def test_bulk_tanimoto_equals_rdkit_exactly(n_bits, p):
    _, fps_a = _random_bitvects(9, n_bits, p, 1)
    _, fps_b = _random_bitvects(6, n_bits, p, 2)
    want = np.array(
        [DataStructs.BulkTanimotoSimilarity(f, fps_b) for f in fps_a], dtype=np.float32
    )
    A, B = tk.pack_fingerprints(fps_a), tk.pack_fingerprints(fps_b)
    got = tk.bulk_tanimoto_reference(A, B)
    assert got.dtype == np.float32 and got.shape == (9, 6)
    assert np.array_equal(got, want)
    assert np.array_equal(tk.bulk_tanimoto(A, B), want)


def test_bulk_tanimoto_on_morgan_fingerprints_equals_rdkit():
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in SMILES]
    P = tk.pack_fingerprints(fps)
    want = np.array(
        [DataStructs.BulkTanimotoSimilarity(f, fps) for f in fps], dtype=np.float32
    )
    assert np.array_equal(tk.bulk_tanimoto(P, P), want)
    assert np.array_equal(np.diag(want), np.ones(len(SMILES), dtype=np.float32))


def test_empty_fingerprints_give_rdkits_value():
    e = DataStructs.ExplicitBitVect(128)
    rd = DataStructs.BulkTanimotoSimilarity(e, [e])[0]
    A = tk.pack_bits(np.zeros((1, 128), dtype=bool))
    assert tk.bulk_tanimoto(A, A)[0, 0] == np.float32(rd) == 0.0
    assert tk.max_tanimoto(A, A)[0] == 0.0


def test_chunking_does_not_change_values(monkeypatch):
    bits, _ = _random_bitvects(50, 300, 0.1, 3)
    A = tk.pack_bits(bits)
    full = tk.bulk_tanimoto_reference(A, A)
    monkeypatch.setattr(tk, "_CHUNK_BYTES", 8 * 50 * A.shape[1] * 3)  # 3 rows per chunk
    assert np.array_equal(tk.bulk_tanimoto_reference(A, A), full)
    assert np.array_equal(tk.max_tanimoto_reference(A, A[:7]), full[:, :7].max(axis=1))


def test_max_tanimoto_is_the_row_max_of_a_python_loop():
    bits_a, fps_a = _random_bitvects(20, 256, 0.15, 4)
    bits_b, fps_b = _random_bitvects(3, 256, 0.15, 5)
    want = np.array(
        [max(DataStructs.BulkTanimotoSimilarity(f, fps_b)) for f in fps_a],
        dtype=np.float32,
    )
    A, B = tk.pack_bits(bits_a), tk.pack_bits(bits_b)
    assert np.array_equal(tk.max_tanimoto_reference(A, B), want)
    assert np.array_equal(tk.max_tanimoto(A, B), want)
    assert tk.max_tanimoto(A[:0], B).shape == (0,)


def test_bad_inputs():
    A = tk.pack_bits(np.ones((2, 70), dtype=bool))
    with pytest.raises(TypeError, match="A"):
        tk.bulk_tanimoto(A.astype(np.int64), A)
    with pytest.raises(TypeError, match="B"):
        tk.bulk_tanimoto(A, A.astype(np.float64))
    with pytest.raises(ValueError, match="A"):
        tk.bulk_tanimoto(A[0], A)
    with pytest.raises(ValueError, match="W"):
        tk.bulk_tanimoto(A, A[:, :1])
    with pytest.raises(ValueError, match="B"):
        tk.max_tanimoto(A, A[:0])
    with pytest.raises(ValueError, match="W"):
        tk.max_tanimoto_reference(A, A[:, :1])
    with pytest.raises(ValueError, match="bits"):
        tk.pack_bits(np.ones(5, dtype=bool))
    with pytest.raises(ValueError, match="0 and 1"):
        tk.pack_bits(np.full((2, 3), 2))
    with pytest.raises(TypeError, match="bits"):
        tk.pack_bits(np.ones((2, 3)))
    with pytest.raises(ValueError, match="n_bits"):
        tk.pack_bits(np.ones((2, 0), dtype=bool))
    with pytest.raises(ValueError, match="fps"):
        tk.pack_fingerprints([])
    with pytest.raises(TypeError, match="fps"):
        tk.pack_fingerprints([1, 2])
    with pytest.raises(ValueError, match="same number of bits"):
        tk.pack_fingerprints(
            [DataStructs.ExplicitBitVect(8), DataStructs.ExplicitBitVect(9)]
        )
    big = np.zeros((1, 1), dtype=np.uint64)
    with pytest.raises(TooLargeError):
        tk.bulk_tanimoto(
            np.broadcast_to(big, (10**7, 1)), np.broadcast_to(big, (10**7, 1))
        )


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    bits_a, _ = _random_bitvects(300, 2048, 0.03, 6)
    bits_b, _ = _random_bitvects(170, 2048, 0.03, 7)
    bits_a[0] = False
    bits_b[0] = False
    A, B = tk.pack_bits(bits_a), tk.pack_bits(bits_b)
    want = tk.bulk_tanimoto_reference(A, B)
    assert np.array_equal(cp.asnumpy(tk.bulk_tanimoto_gpu(A, B)), want)
    assert np.array_equal(cp.asnumpy(tk.max_tanimoto_gpu(A, B)), want.max(axis=1))
    assert np.array_equal(tk.bulk_tanimoto(A, B), want)
    assert np.array_equal(tk.max_tanimoto(A, B), want.max(axis=1))

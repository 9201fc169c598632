"""Kernels of kernels/triplets.cu: the reference against a naive triple loop, NVRTC compile, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.hc_oracles import balanced_tree, random_binary_tree
from icml25.kernels import _splitmix64, compile_ptx, triplets

MASK = (1 << 64) - 1


def _splitmix_py(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _naive_counts(S, p, seed, D=None):
    """Python-int definition: one triple at a time, the hash written out."""
    n = S.shape[0]
    thr = int(np.floor(p * 2.0**53))
    mixed = _splitmix_py(seed)

    def truth(M, a, b, c):
        if M[a, b] < M[a, c]:
            return c
        if M[a, c] < M[a, b]:
            return b
        return a

    C = np.zeros((n, n), dtype=np.int32)
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            for x in range(n):
                if x in (u, v):
                    continue
                a, b, c = sorted((u, v, x))
                h = _splitmix_py(mixed ^ ((a * n + b) * n + c))
                if (h >> 11) < thr:
                    ans = truth(S, a, b, c)
                elif D is not None:
                    ans = truth(D, a, b, c)
                else:
                    ans = (a, b, c)[_splitmix_py(h) % 3]
                C[u, v] += ans != x
    return C


def test_compiles_with_nvrtc():
    ptx = compile_ptx("triplets")
    for name in ("triplet_counts", "lca_sums"):
        assert f".entry {name}" in ptx


def test_shared_splitmix_matches_python_ints():
    xs = np.array([0, 1, 12345, 2**63 + 7, 2**64 - 1], dtype=np.uint64)
    assert [int(h) for h in _splitmix64(xs)] == [_splitmix_py(int(x)) for x in xs]


@pytest.mark.parametrize("p", [1.0, 0.75, 0.5, 0.1])
def test_counts_match_naive_triple_loop(p):
    rng = np.random.default_rng(1)
    S = random_binary_tree(11, rng).lca_size_matrix()
    np.testing.assert_array_equal(
        triplets.triplet_counts_reference(S, p, 42), _naive_counts(S, p, 42)
    )


def test_decoy_counts_match_naive_triple_loop():
    rng = np.random.default_rng(2)
    S = random_binary_tree(9, rng).lca_size_matrix()
    D = random_binary_tree(9, rng).lca_size_matrix()
    np.testing.assert_array_equal(
        triplets.triplet_counts_reference(S, 0.6, 7, D), _naive_counts(S, 0.6, 7, D)
    )


def test_perfect_counts_are_the_triplet_identity():
    S = balanced_tree(32).lca_size_matrix()
    C = triplets.triplet_counts_reference(S, 1.0, 0)
    off = ~np.eye(32, dtype=bool)
    # |T[u v v]| = 2 + #{x : O(u, v, x) != x}
    np.testing.assert_array_equal(C[off], S[off] - 2)


def test_counts_are_symmetric_and_chunking_does_not_matter(monkeypatch):
    S = random_binary_tree(40, np.random.default_rng(3)).lca_size_matrix()
    full = triplets.triplet_counts_reference(S, 0.7, 5)
    monkeypatch.setattr(triplets, "_CHUNK_ELEMENTS", 1)
    np.testing.assert_array_equal(triplets.triplet_counts_reference(S, 0.7, 5), full)
    np.testing.assert_array_equal(full, full.T)


def test_lca_sums_match_a_pair_loop():
    rng = np.random.default_rng(4)
    n = 13
    S = random_binary_tree(n, rng).lca_size_matrix()
    W = rng.random((n, n))
    W = np.triu(W, 1) + np.triu(W, 1).T
    cost = sum(W[u, v] * S[u, v] for u in range(n) for v in range(u + 1, n))
    rev = sum(W[u, v] * (n - S[u, v]) for u in range(n) for v in range(u + 1, n))
    np.testing.assert_allclose(
        triplets.lca_sums_reference(W, S), [cost, rev], rtol=1e-12
    )


def _require_gpu():  # pragma: no cover - GPU
    cupy = pytest.importorskip("cupy")
    if not cupy.is_available():
        pytest.skip("no GPU")


@pytest.mark.gpu
def test_gpu_counts_equal_reference():  # pragma: no cover - GPU
    _require_gpu()
    rng = np.random.default_rng(5)
    for n, p in ((17, 0.75), (200, 0.6)):
        S = random_binary_tree(n, rng).lca_size_matrix()
        D = random_binary_tree(n, rng).lca_size_matrix()
        np.testing.assert_array_equal(
            triplets.triplet_counts_gpu(S, p, 9).get(),
            triplets.triplet_counts_reference(S, p, 9),
        )
        np.testing.assert_array_equal(
            triplets.triplet_counts_gpu(S, p, 9, D).get(),
            triplets.triplet_counts_reference(S, p, 9, D),
        )
        W = rng.random((n, n))
        W = np.triu(W, 1) + np.triu(W, 1).T
        np.testing.assert_allclose(
            triplets.lca_sums_gpu(W, S).get().sum(axis=1),
            triplets.lca_sums_reference(W, S),
            rtol=1e-9,
        )


# ------------------------------------------------- review fixes: validation and budgets

import time  # noqa: E402

from icml25.checks import TooLargeError  # noqa: E402


def _lazy_S(n):
    # an (n, n) view of no memory: only the budget may look
    return np.broadcast_to(np.int32(2), (n, n))


@pytest.mark.parametrize(
    "call",
    [
        lambda: triplets.triplet_counts_reference(_lazy_S(3000), 0.5, 0),
        lambda: triplets.triplet_counts(_lazy_S(3000), 0.5, 0),
        lambda: triplets.triplet_counts_reference(_lazy_S(10**6), 0.5, 0),
    ],
    ids=[
        "reference n=3000 (an hour at 7.7e6/s)",
        "dispatcher n=3000 on the CPU",
        "reference n=10**6 (bytes)",
    ],
)
def test_counts_refuse_what_the_path_cannot_count(call, monkeypatch):
    monkeypatch.setattr(triplets, "gpu_available", lambda: False)
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError):
        call()
    assert time.perf_counter() - t0 < 1.0


def test_reference_blocks_stay_within_the_chunk_above_one_row(monkeypatch):
    """n^2 > _CHUNK_ELEMENTS (the n > 1448 regime at the real chunk): blocks over (u, v) too."""
    rng = np.random.default_rng(4)
    n = 20
    S = random_binary_tree(n, rng).lca_size_matrix()
    want = triplets.triplet_counts_reference(S, 0.6, 3)
    sizes = []
    real = triplets.oracle_answers

    def spy(S_, lo, *args, **kwargs):
        sizes.append(lo.size)
        return real(S_, lo, *args, **kwargs)

    monkeypatch.setattr(triplets, "_CHUNK_ELEMENTS", 3 * n)
    monkeypatch.setattr(triplets, "oracle_answers", spy)
    got = triplets.triplet_counts_reference(S, 0.6, 3)
    np.testing.assert_array_equal(got, want)
    assert max(sizes) <= 3 * n


@pytest.mark.parametrize(
    "call, err",
    [
        (
            lambda: triplets.triplet_counts(np.ones((3, 4), np.int32), 0.5, 0),
            ValueError,
        ),
        (
            lambda: triplets.triplet_counts(np.full((3, 3), 2, np.int32), 2.0, 0),
            ValueError,
        ),
        (
            lambda: triplets.triplet_counts(np.full((3, 3), 2, np.int32), -1, 0),
            ValueError,
        ),
        (lambda: triplets.triplet_counts(np.full((3, 3), 2.5), 0.5, 0), TypeError),
        (
            lambda: triplets.triplet_counts(np.full((3, 3), 2, np.int32), 0.5, -1),
            ValueError,
        ),
        (
            lambda: triplets.triplet_counts(
                np.full((3, 3), 2, np.int32), 0.5, 0, np.full((4, 4), 2, np.int32)
            ),
            ValueError,
        ),
        (
            lambda: triplets.triplet_counts(np.full((3, 3), 9, np.int32), 0.5, 0),
            ValueError,
        ),
        (
            lambda: triplets.triplet_counts_reference(
                np.ones((3, 4), np.int32), 0.5, 0
            ),
            ValueError,
        ),
        (
            lambda: triplets.lca_sums(np.zeros((3, 3)), np.ones((4, 4), np.int32)),
            ValueError,
        ),
        (lambda: triplets.lca_sums(np.zeros((3, 3)), np.ones((3, 3))), TypeError),
        (
            lambda: triplets.lca_sums_reference(
                np.full((3, 3), np.nan), np.ones((3, 3), np.int32)
            ),
            ValueError,
        ),
    ],
    ids=[
        "S not square",
        "p=2",
        "p=-1",
        "float S",
        "seed<0",
        "D shape",
        "S above n",
        "reference S not square",
        "lca_sums shapes",
        "lca_sums float S",
        "lca_sums NaN W",
    ],
)
def test_dispatchers_validate_like_the_other_kernels(call, err):
    with pytest.raises(err, match=r"\b(S|D|W|p|seed)\b"):
        call()


@pytest.mark.gpu
def test_gpu_lca_sums_are_bit_reproducible():  # pragma: no cover - GPU
    _require_gpu()
    rng = np.random.default_rng(6)
    S = random_binary_tree(700, rng).lca_size_matrix()
    W = np.triu(rng.random((700, 700)), 1)
    W = W + W.T
    first = triplets.lca_sums(W, S)
    for _ in range(5):
        assert np.array_equal(triplets.lca_sums(W, S), first)

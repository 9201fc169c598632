"""Kernels of kernels/dominance.cu: masks and sorting vs brute force, pymoo and paretoset; hypervolume vs hand values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from icml25.checks import TooLargeError
from icml25.kernels import compile_ptx
from icml25.kernels import dominance as dk

pymoo = pytest.importorskip("pymoo")
paretoset = pytest.importorskip("paretoset")
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting  # noqa: E402


def _brute_mask(F):
    n = len(F)
    return np.array(
        [
            not any(np.all(F[j] >= F[i]) and np.any(F[j] > F[i]) for j in range(n))
            for i in range(n)
        ],
        dtype=bool,
    )


def _cases():
    rng = np.random.default_rng(0)
    yield rng.random((200, 2))
    yield rng.random((300, 4))
    yield np.round(rng.random((400, 3)), 1)  # many ties and exact duplicates
    yield np.repeat(rng.random((30, 2)), 3, axis=0)  # every row three times
    x = rng.random(100)
    yield np.stack([x, 1 - x], axis=1)  # all on one front
    yield np.stack([np.arange(50.0)] * 3, axis=1)  # a chain: 50 fronts
    yield rng.integers(0, 4, size=(600, 5)).astype(float)


CASES = list(_cases())


def test_compiles_with_nvrtc():
    ptx = compile_ptx("dominance")
    for name in ("pareto_mask", "dominator_count", "release_front"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("k", range(len(CASES)))
def test_pareto_mask_matches_brute_force_paretoset_and_pymoo(k):
    F = CASES[k]
    got = dk.pareto_mask_reference(F)
    assert got.dtype == np.bool_ and got.shape == (len(F),)
    assert np.array_equal(got, _brute_mask(F))
    assert np.array_equal(
        got,
        paretoset.paretoset(
            F, sense=["max"] * F.shape[1], distinct=False, use_numba=False
        ),
    )
    front = NonDominatedSorting().do(-F, only_non_dominated_front=True)
    assert np.array_equal(np.flatnonzero(got), np.sort(front))
    assert np.array_equal(dk.pareto_mask(F), got)


def test_duplicates_are_both_kept():
    F = np.array([[1.0, 2.0], [1.0, 2.0], [0.5, 1.0], [2.0, 0.0]])
    assert dk.pareto_mask(F).tolist() == [True, True, False, True]
    assert dk.non_dominated_sort(F).tolist() == [0, 0, 1, 0]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_non_dominated_sort_identical_to_pymoo(k):
    F = CASES[k]
    want = NonDominatedSorting().do(-F, return_rank=True)[1]
    got = dk.non_dominated_sort_reference(F)
    assert got.dtype == np.int64
    assert np.array_equal(got, want)
    assert np.array_equal(dk.non_dominated_sort(F), want)


def test_chain_has_one_front_per_point_and_chunking_is_invisible(monkeypatch):
    F = CASES[5]
    assert dk.non_dominated_sort(F).tolist() == list(range(49, -1, -1))
    G = CASES[1]
    want = dk.pareto_mask_reference(G)
    monkeypatch.setattr(dk, "_CHUNK", 7)
    monkeypatch.setattr(dk, "_PAIR_BUDGET", 50)
    assert np.array_equal(dk.pareto_mask_reference(G), want)


def test_empty_and_single():
    assert dk.pareto_mask(np.zeros((0, 3))).shape == (0,)
    assert dk.non_dominated_sort(np.zeros((0, 3))).shape == (0,)
    assert dk.pareto_mask([[0.3, 0.1]]).tolist() == [True]


def test_hypervolume_hand_values():
    # one box: 2 x 3 above (0, 0)
    assert dk.hypervolume([[2.0, 3.0]], [0.0, 0.0]) == pytest.approx(6.0)
    # staircase (1,3), (2,2), (3,1) over (0,0): 3 + 2 + 1 = 6; a dominated point and a
    # duplicate change nothing
    F = [[1, 3], [2, 2], [3, 1], [1, 1], [2, 2]]
    assert dk.hypervolume(F, [0, 0]) == pytest.approx(6.0)
    # reference shifted to (1, 0): x in [1, 2] has height 2, x in [2, 3] height 1: 3;
    # (1, 3) is not strictly better, ignored
    assert dk.hypervolume(F, [1, 0]) == pytest.approx(3.0)
    # 3-D: two unit cubes overlapping in a 0.5 x 1 x 1 slab: 1 + 1 - 0.5
    assert dk.hypervolume([[1, 1, 1], [1.5, 1, 1]], [0, 0, 0]) == pytest.approx(1.5)
    G = [[1, 1, 1], [0.5, 2, 1]]
    assert dk.hypervolume(G, [0, 0, 0]) == pytest.approx(1 + 1 - 0.5)
    # nothing beats the reference
    assert dk.hypervolume([[0.0, 5.0]], [0.0, 0.0]) == 0.0
    assert dk.hypervolume(np.zeros((0, 2)), [0.0, 0.0]) == 0.0


def test_hypervolume_equals_inclusion_exclusion():
    rng = np.random.default_rng(3)
    F = rng.random((6, 3))
    ref = np.zeros(3)
    total = 0.0
    for r in range(1, 7):
        for S in itertools.combinations(range(6), r):
            total += (-1) ** (r + 1) * np.prod(F[list(S)].min(axis=0) - ref)
    assert dk.hypervolume(F, ref) == pytest.approx(total, rel=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="F"):
        dk.pareto_mask(np.ones(3))
    with pytest.raises(ValueError, match="F"):
        dk.pareto_mask([[1.0, np.nan]])
    with pytest.raises(ValueError, match="F"):
        dk.non_dominated_sort_reference([[1.0, np.inf]])
    with pytest.raises(ValueError, match="F"):
        dk.pareto_mask_reference(np.ones((3, 0)))
    with pytest.raises(TypeError, match="F"):
        dk.non_dominated_sort([["a", "b"]])
    with pytest.raises(ValueError, match="F"):
        dk.hypervolume(np.ones(2), [0.0, 0.0])
    with pytest.raises(ValueError, match="ref"):
        dk.hypervolume(np.ones((2, 2)), [0.0])
    with pytest.raises(ValueError, match="ref"):
        dk.hypervolume(np.ones((2, 2)), [0.0, np.nan])
    with pytest.raises(ValueError, match="F"):
        dk.hypervolume([[np.nan, 1.0]], [0.0, 0.0])
    with pytest.raises(TooLargeError):
        dk.pareto_mask(np.broadcast_to(np.zeros((1, 2)), (3 * 10**6, 2)))


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    for F in CASES + [np.round(np.random.default_rng(9).random((20000, 3)), 2)]:
        assert np.array_equal(
            cp.asnumpy(dk.pareto_mask_gpu(F)), dk.pareto_mask_reference(F)
        )
        assert np.array_equal(
            cp.asnumpy(dk.non_dominated_sort_gpu(F)), dk.non_dominated_sort_reference(F)
        )
    F = np.random.default_rng(10).random((5000, 4))
    assert np.array_equal(dk.pareto_mask(F), dk.pareto_mask_reference(F))
    assert np.array_equal(
        dk.non_dominated_sort(F), NonDominatedSorting().do(-F, return_rank=True)[1]
    )

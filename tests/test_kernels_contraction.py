"""Kernels of kernels/contraction.cu: references against naive definitions, NVRTC compile, GPU parity."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from icml25.kernels import compile_ptx, contraction


def _random_graph(n, density, rng):
    pairs = np.array(
        [
            (i, j)
            for i, j in itertools.combinations(range(n), 2)
            if rng.random() < density
        ],
        dtype=np.int64,
    )
    return pairs, rng.uniform(0.5, 3.0, size=len(pairs))


def _kruskal_labels(edges, keys, n, stop_at):
    """Naive definition: scan edges in (key, id) order with union-find, stop at stop_at components."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    components = n
    for e in sorted(range(len(keys)), key=lambda e: (keys[e], e)):
        if components <= stop_at:
            break
        a, b = find(int(edges[e, 0])), find(int(edges[e, 1]))
        if a != b:
            parent[a] = b
            components -= 1
    roots = [find(v) for v in range(n)]
    smallest = {}
    for v, root in enumerate(roots):
        smallest.setdefault(root, v)
    return np.array([smallest[root] for root in roots], dtype=np.int32)


def test_compiles_with_nvrtc():
    ptx = compile_ptx("contraction")
    for name in ("exp_clock_keys", "contract_by_keys", "cut_values"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("stop_at", [1, 2, 3, 5])
def test_contract_by_keys_reference_matches_kruskal(stop_at):
    rng = np.random.default_rng(stop_at)
    for n in (6, 11, 25):
        edges, w = _random_graph(n, 0.4, rng)
        keys = contraction.exp_clock_keys_reference(w, 8, seed=int(rng.integers(2**62)))
        labels = contraction.contract_by_keys_reference(edges, keys, n, stop_at)
        for r in range(keys.shape[0]):
            np.testing.assert_array_equal(
                labels[r], _kruskal_labels(edges, keys[r], n, stop_at)
            )


def test_contract_by_keys_reference_breaks_ties_by_edge_id():
    rng = np.random.default_rng(3)
    edges, _ = _random_graph(12, 0.5, rng)
    # many exact ties
    keys = np.round(rng.random((5, len(edges))), 1).astype(np.float32)
    keys[0] = 0.0
    labels = contraction.contract_by_keys_reference(edges, keys, 12, 2)
    for r in range(5):
        np.testing.assert_array_equal(labels[r], _kruskal_labels(edges, keys[r], 12, 2))


def test_contract_by_keys_reference_disconnected_graph_keeps_components():
    edges = np.array([[0, 1], [1, 2], [3, 4], [4, 5]])
    keys = np.ones((1, 4), dtype=np.float32)
    labels = contraction.contract_by_keys_reference(edges, keys, 6, 2)
    np.testing.assert_array_equal(labels[0], [0, 0, 0, 3, 3, 3])


def test_uniforms_in_open_interval_and_reproducible():
    u = contraction.uniforms_reference(50, 40, seed=7)
    assert u.shape == (50, 40) and u.min() > 0 and u.max() < 1
    np.testing.assert_array_equal(u, contraction.uniforms_reference(50, 40, seed=7))
    np.testing.assert_array_equal(
        u[10:], contraction.uniforms_reference(40, 40, seed=7, trial_offset=10)
    )
    assert not np.array_equal(u, contraction.uniforms_reference(50, 40, seed=8))
    # uniform: KS-type bound on the empirical CDF of 2000 draws
    flat = np.sort(u.ravel())
    assert np.max(np.abs(flat - np.arange(1, flat.size + 1) / flat.size)) < 0.04


def test_exp_clock_keys_are_exponential_with_rate_w():
    wc = np.array([0.5, 1.0, 4.0])
    keys = contraction.exp_clock_keys_reference(wc, 20000, seed=11).astype(np.float64)
    np.testing.assert_allclose(keys.mean(axis=0), 1 / wc, rtol=0.05)
    # the minimum clock is edge e with probability w_e / sum(w)
    winner = np.bincount(keys.argmin(axis=1), minlength=3) / 20000
    np.testing.assert_allclose(winner, wc / wc.sum(), atol=0.015)


def test_cut_values_reference_matches_loop():
    rng = np.random.default_rng(5)
    edges, w = _random_graph(9, 0.6, rng)
    labels = rng.integers(0, 3, size=(4, 9)).astype(np.int32)
    expected = [
        sum(
            w[e]
            for e in range(len(w))
            if labels[r, edges[e, 0]] != labels[r, edges[e, 1]]
        )
        for r in range(4)
    ]
    np.testing.assert_allclose(
        contraction.cut_values_reference(edges, w, labels), expected, rtol=1e-12
    )


def test_contraction_trials_two_phases_stop_at_two_components():
    rng = np.random.default_rng(2)
    edges, w = _random_graph(15, 0.5, rng)
    cut, labels = contraction.contraction_trials_reference(
        edges, w, 15, 10, seed=3, phases=[(w * 5, 6), (w, 2)]
    )
    assert all(np.unique(row).size == 2 for row in labels)
    np.testing.assert_allclose(cut, contraction.cut_values_reference(edges, w, labels))


def test_dispatchers_use_reference_without_gpu(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    rng = np.random.default_rng(1)
    edges, w = _random_graph(10, 0.5, rng)
    keys = contraction.exp_clock_keys(w, 3, seed=4)
    np.testing.assert_array_equal(
        keys, contraction.exp_clock_keys_reference(w, 3, seed=4)
    )
    labels = contraction.contract_by_keys(edges, keys, 10, 2)
    np.testing.assert_array_equal(
        labels, contraction.contract_by_keys_reference(edges, keys, 10, 2)
    )
    np.testing.assert_array_equal(
        contraction.cut_values(edges, w, labels),
        contraction.cut_values_reference(edges, w, labels),
    )
    cut, lab = contraction.contraction_trials(edges, w, 10, 5, seed=2, phases=[(w, 2)])
    ref_cut, ref_lab = contraction.contraction_trials_reference(
        edges, w, 10, 5, seed=2, phases=[(w, 2)]
    )
    np.testing.assert_array_equal(cut, ref_cut)
    np.testing.assert_array_equal(lab, ref_lab)
    assert contraction.max_batch() == contraction.MAX_BATCH_CPU


def _dispatcher_outputs(edges, w, n):
    keys = contraction.exp_clock_keys(w, 4, seed=3)
    labels = contraction.contract_by_keys(edges, keys, n, 2)
    cut = contraction.cut_values(edges, w, labels)
    trial_cut, trial_labels = contraction.contraction_trials(
        edges, w, n, 4, seed=3, phases=[(w, 3), (w, 2)]
    )
    return {
        "exp_clock_keys": keys,
        "contract_by_keys": labels,
        "cut_values": cut,
        "contraction_trials cut": trial_cut,
        "contraction_trials labels": trial_labels,
    }


def test_every_dispatcher_returns_numpy():
    """NumPy in, NumPy out on whichever path runs (on a GPU the three single-kernel dispatchers
    used to hand back CuPy arrays, so chapter 06 had to branch on the device)."""
    rng = np.random.default_rng(8)
    edges, w = _random_graph(12, 0.5, rng)
    for name, out in _dispatcher_outputs(edges, w, 12).items():
        assert type(out) is np.ndarray, (name, type(out))
    assert contraction.max_batch() in (
        contraction.MAX_BATCH_CPU,
        contraction.MAX_BATCH_GPU,
    )


# ------------------------------------------------------------- GPU parity (needs a GPU)


@pytest.mark.gpu
def test_every_dispatcher_returns_numpy_on_the_gpu():  # pragma: no cover - GPU
    from icml25.common import gpu_available

    assert gpu_available()
    rng = np.random.default_rng(9)
    edges, w = _random_graph(40, 0.3, rng)
    for name, out in _dispatcher_outputs(edges, w, 40).items():
        assert type(out) is np.ndarray, (name, type(out))
    assert contraction.max_batch() == contraction.MAX_BATCH_GPU


@pytest.mark.gpu
def test_exp_clock_keys_gpu_matches_reference():  # pragma: no cover - GPU
    w = np.random.default_rng(0).uniform(0.1, 5.0, size=3000)
    gpu = contraction.exp_clock_keys_gpu(w, 64, seed=123, trial_offset=7).get()
    ref = contraction.exp_clock_keys_reference(w, 64, seed=123, trial_offset=7)
    np.testing.assert_allclose(gpu, ref, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("stop_at", [2, 7])
def test_contract_by_keys_gpu_matches_reference(stop_at):  # pragma: no cover - GPU
    rng = np.random.default_rng(stop_at)
    edges, w = _random_graph(80, 0.2, rng)
    keys = contraction.exp_clock_keys_reference(w, 128, seed=9)
    keys[:8] = np.round(keys[:8], 1)  # ties: broken by edge id on both sides
    gpu = contraction.contract_by_keys_gpu(edges, keys, 80, stop_at).get()
    np.testing.assert_array_equal(
        gpu, contraction.contract_by_keys_reference(edges, keys, 80, stop_at)
    )


@pytest.mark.gpu
def test_cut_values_gpu_matches_reference():  # pragma: no cover - GPU
    rng = np.random.default_rng(4)
    edges, w = _random_graph(50, 0.3, rng)
    labels = rng.integers(0, 2, size=(32, 50)).astype(np.int32)
    np.testing.assert_allclose(
        contraction.cut_values_gpu(edges, w, labels).get(),
        contraction.cut_values_reference(edges, w, labels),
        rtol=1e-9,
    )


@pytest.mark.gpu
def test_contraction_trials_gpu_matches_reference_statistically():  # pragma: no cover - GPU
    rng = np.random.default_rng(6)
    edges, w = _random_graph(30, 0.3, rng)
    cut_gpu, _ = contraction.contraction_trials_gpu(
        edges, w, 30, 4000, seed=1, phases=[(w, 2)]
    )
    cut_ref, _ = contraction.contraction_trials_reference(
        edges, w, 30, 4000, seed=2, phases=[(w, 2)]
    )
    assert abs(float(cut_gpu.get().mean()) - cut_ref.mean()) < 0.1 * cut_ref.mean()


@pytest.mark.parametrize("stop_at", [1, 2, 4])
def test_batched_kruskal_path_matches_kruskal_and_scipy_path(stop_at):
    rng = np.random.default_rng(10 + stop_at)
    edges, w = _random_graph(9, 0.5, rng)
    keys = contraction.exp_clock_keys_reference(w, 64, seed=5)
    keys[:4] = np.round(keys[:4], 1)
    # R >= 32, tiny: batched path
    batched = contraction.contract_by_keys_reference(edges, keys, 9, stop_at)
    # R = 8: SciPy path
    per_trial = np.concatenate(
        [
            contraction.contract_by_keys_reference(edges, keys[i : i + 8], 9, stop_at)
            for i in range(0, 64, 8)
        ]
    )
    np.testing.assert_array_equal(batched, per_trial)
    for r in range(64):
        np.testing.assert_array_equal(
            batched[r], _kruskal_labels(edges, keys[r], 9, stop_at)
        )

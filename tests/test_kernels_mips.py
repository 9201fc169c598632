"""Kernels of chapter 02 (``kernels/mips.{cu,py}``): references against naive math, GPU against references.

CPU tests check the NumPy references against independent definitions (a full ``Q @ X.T`` with
``np.argmax``, a Python loop, the published Philox known answers, the softmax by chi-square).
Tests marked ``gpu`` check the CUDA kernels against those references; ``tests/conftest.py`` skips
them without a GPU. Integer-valued float32 data makes every inner product exact in any summation
order, so GPU and CPU must then agree bit for bit, ties included.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from icml25.kernels import mips
from icml25.kernels.mips import (
    first_beater,
    first_beater_reference,
    gumbel_max_sample,
    gumbel_max_sample_reference,
    gumbel_noise_reference,
    mips_argmax,
    mips_argmax_reference,
    philox4x32_10,
)

# p-value below which a goodness-of-fit test fails. The tests are seeded, so each either
# passes or fails deterministically; 1e-4 keeps the false-alarm rate of a correct
# sampler negligible while a wrong distribution (e.g. kappa applied twice, or off
# by one index) gives p ~ 0.
P_MIN = 1e-4


def _int_data(rng, shape, low=-2, high=3):
    """Small integers as float32: inner products are exact, and ties are frequent."""
    return rng.integers(low, high, size=shape).astype(np.float32)


def _unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _softmax(z):
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


@pytest.fixture
def small_chunks(monkeypatch):
    """Force many chunks in the references, so that chunk boundaries are exercised."""
    monkeypatch.setattr(mips, "_CHUNK_ELEMENTS", 7 * 13)
    monkeypatch.setattr(mips, "_GUMBEL_CHUNK_ELEMENTS", 5 * 13)


# --------------------------------------------------------------------------------------
# Philox
# --------------------------------------------------------------------------------------

# Random123 kat_vectors, "philox4x32 10" lines: counter (4 words), key
# (2 words) -> output (4 words).
RANDOM123_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF,) * 2,
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter, key, expected", RANDOM123_KAT)
def test_philox_matches_random123_known_answers(counter, key, expected):
    out = philox4x32_10(np.array(counter, dtype=np.uint32)[:, None], key)
    assert out.dtype == np.uint32 and out.shape == (4, 1)
    assert [int(w) for w in out[:, 0]] == list(expected)


def test_philox_vectorised_equals_one_counter_at_a_time():
    rng = np.random.default_rng(0)
    counters = rng.integers(0, 2**32, size=(4, 37), dtype=np.uint64).astype(np.uint32)
    key = (0x12345678, 0x9ABCDEF0)
    batched = philox4x32_10(counters, key)
    for j in range(counters.shape[1]):
        np.testing.assert_array_equal(
            batched[:, j], philox4x32_10(counters[:, j : j + 1], key)[:, 0]
        )


def test_gumbel_noise_is_standard_gumbel():
    g = gumbel_noise_reference(
        7, 0, np.arange(40)[:, None], np.arange(2500)[None, :]
    ).ravel()
    assert g.dtype == np.float32
    assert stats.kstest(g.astype(np.float64), stats.gumbel_r.cdf).pvalue > P_MIN


def test_gumbel_noise_streams_differ_by_seed_offset_and_position():
    b, i = np.arange(100)[:, None], np.arange(100)[None, :]
    base = gumbel_noise_reference(1, 0, b, i)
    # reproducible
    np.testing.assert_array_equal(base, gumbel_noise_reference(1, 0, b, i))
    # (b, i) vs (i, b): the diagonal is the same draw
    off_diagonal = ~np.eye(100, dtype=bool)
    for other in (
        gumbel_noise_reference(2, 0, b, i),
        gumbel_noise_reference(1, 1, b, i),
        base.T,
    ):
        assert np.mean(base[off_diagonal] == other[off_diagonal]) < 0.01
        # Independent streams: correlation of ~1e4 pairs has sd 0.01.
        assert abs(np.corrcoef(base[off_diagonal], other[off_diagonal])[0, 1]) < 0.05
    # The high words of seed and offset matter too.
    assert np.mean(base == gumbel_noise_reference(1 + 2**32, 0, b, i)) < 0.01
    assert np.mean(base == gumbel_noise_reference(1, 2**32, b, i)) < 0.01


# --------------------------------------------------------------------------------------
# References against naive math
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "B, n, d", [(1, 1, 1), (5, 97, 3), (33, 1000, 32), (8, 300, 65)]
)
def test_mips_argmax_reference_matches_full_matmul(small_chunks, B, n, d):
    rng = np.random.default_rng(B * n * d)
    Q = rng.standard_normal((B, d)).astype(np.float32)
    X = rng.standard_normal((n, d)).astype(np.float32)
    index, score = mips_argmax_reference(Q, X)
    S = Q.astype(np.float64) @ X.T.astype(np.float64)
    assert (
        index.dtype == np.int64
        and score.dtype == np.float32
        and index.shape == score.shape == (B,)
    )
    np.testing.assert_array_equal(index, np.argmax(S, axis=1))
    np.testing.assert_allclose(score, S.max(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("B, n, d", [(40, 500, 4), (9, 2000, 2)])
def test_mips_argmax_reference_ties_go_to_lowest_index(small_chunks, B, n, d):
    rng = np.random.default_rng(n + d)
    Q = _int_data(rng, (B, d))
    # few distinct rows: the maximum is attained many times
    X = _int_data(rng, (n, d), -1, 2)
    index, score = mips_argmax_reference(Q, X)
    S = Q.astype(np.int64) @ X.astype(np.int64).T  # exact
    # ties really occur
    assert (S == S.max(axis=1, keepdims=True)).sum(axis=1).min() > 1
    # np.argmax: first occurrence
    np.testing.assert_array_equal(index, np.argmax(S, axis=1))
    np.testing.assert_array_equal(score, S.max(axis=1).astype(np.float32))


def test_mips_argmax_reference_duplicate_best_rows_across_chunks(small_chunks):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 6)).astype(np.float32) * 0.1
    q = np.ones((1, 6), dtype=np.float32)
    for j in (17, 250, 499):
        X[j] = 1.0  # the same best row three times, in different chunks
    index, _ = mips_argmax_reference(q, X)
    assert index[0] == 17


def _first_beater_loop(Q, X, thr):
    out = []
    for q, t in zip(Q, thr):
        j = 0
        while j < len(X) and not float(
            np.dot(q.astype(np.float64), X[j].astype(np.float64))
        ) > float(t):
            j += 1
        out.append(j)
    return np.array(out)


@pytest.mark.parametrize("B, n, d", [(1, 1, 1), (30, 400, 5), (12, 1000, 40)])
def test_first_beater_reference_matches_python_loop(small_chunks, B, n, d):
    rng = np.random.default_rng(B + n + d)
    Q, X = _int_data(rng, (B, d)), _int_data(rng, (n, d))
    S = Q.astype(np.int64) @ X.astype(np.int64).T
    # Thresholds: equal to some score (strict '>' matters), below everything
    # (-> 0), at the max (-> n).
    thr = S[np.arange(B), rng.integers(0, n, size=B)].astype(np.float32)
    thr[0::4] = S.max(axis=1)[0::4]
    thr[1::4] = S.min(axis=1)[1::4] - 1
    out = first_beater_reference(Q, X, thr)
    assert out.dtype == np.int64 and out.shape == (B,)
    np.testing.assert_array_equal(out, _first_beater_loop(Q, X, thr))
    assert np.all(out[0::4] == n) and np.all(out[1::4] == 0)


def test_gumbel_max_reference_is_argmax_of_logits_plus_its_noise(small_chunks):
    rng = np.random.default_rng(4)
    V, X = _unit_rows(rng, 11, 5), _unit_rows(rng, 300, 5)
    kappa, seed, offset = 3.5, 12345, 6
    got = gumbel_max_sample_reference(V, X, kappa, seed, offset)
    noise = gumbel_noise_reference(
        seed, offset, np.arange(11)[:, None], np.arange(300)[None, :]
    )
    expected = np.argmax(np.float32(kappa) * (V @ X.T) + noise, axis=1)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kappa", [0.0, 1.0, 4.0])
def test_gumbel_max_reference_matches_softmax(kappa):
    """Each row of V gets its own noise, so N equal rows give N independent draws."""
    rng = np.random.default_rng(5)
    n, d, N = 12, 4, 40_000
    X = _unit_rows(rng, n, d)
    v = _unit_rows(rng, 1, d)
    draws = gumbel_max_sample_reference(np.repeat(v, N, axis=0), X, kappa, seed=2024)
    counts = np.bincount(draws, minlength=n)
    p = _softmax(kappa * (X.astype(np.float64) @ v[0].astype(np.float64)))
    assert stats.chisquare(counts, N * p).pvalue > P_MIN


def test_gumbel_max_reference_offsets_give_fresh_draws():
    rng = np.random.default_rng(6)
    V, X = _unit_rows(rng, 2000, 3), _unit_rows(rng, 50, 3)
    a = gumbel_max_sample_reference(V, X, 1.0, seed=1, offset=0)
    np.testing.assert_array_equal(
        a, gumbel_max_sample_reference(V, X, 1.0, seed=1, offset=0)
    )
    b = gumbel_max_sample_reference(V, X, 1.0, seed=1, offset=1)
    c = gumbel_max_sample_reference(V, X, 1.0, seed=2, offset=0)
    # Independent draws coincide with probability sum_i p_i^2
    # (about 1/50 here), far below 1/2.
    assert np.mean(a == b) < 0.1 and np.mean(a == c) < 0.1


def test_gumbel_max_reference_large_kappa_is_argmax():
    rng = np.random.default_rng(7)
    V, X = _unit_rows(rng, 64, 8), _unit_rows(rng, 200, 8)
    greedy, _ = mips_argmax_reference(V, X)
    S = np.sort(V.astype(np.float64) @ X.T.astype(np.float64), axis=1)
    # with kappa * gap >> Gumbel range (< 35), the noise cannot flip
    gap = (S[:, -1] - S[:, -2]).min()
    kappa = 200.0 / gap
    np.testing.assert_array_equal(
        gumbel_max_sample_reference(V, X, kappa, seed=3), greedy
    )


def test_references_accept_float64_and_int_inputs():
    rng = np.random.default_rng(8)
    Q, X = rng.integers(-3, 4, (4, 3)), rng.standard_normal((20, 3))
    index, _ = mips_argmax_reference(Q, X)
    np.testing.assert_array_equal(
        index, np.argmax(Q.astype(np.float32) @ X.astype(np.float32).T, axis=1)
    )
    assert first_beater_reference(Q, X, [0, 1, 2, 3]).shape == (4,)
    assert gumbel_max_sample_reference(
        X[:2], X, 1, seed=np.uint64(5), offset=np.int32(2)
    ).shape == (2,)


def test_references_empty_batch():
    X = np.ones((5, 3), dtype=np.float32)
    index, score = mips_argmax_reference(np.zeros((0, 3)), X)
    assert index.shape == score.shape == (0,)
    assert gumbel_max_sample_reference(np.zeros((0, 3)), X, 1.0, 0).shape == (0,)
    assert first_beater_reference(np.zeros((0, 3)), X, np.zeros(0)).shape == (0,)


def test_dispatchers_return_numpy_for_numpy_inputs():
    rng = np.random.default_rng(9)
    Q, X = _int_data(rng, (10, 4)), _int_data(rng, (300, 4))
    index, score = mips_argmax(Q, X)
    assert isinstance(index, np.ndarray) and isinstance(score, np.ndarray)
    ref_index, ref_score = mips_argmax_reference(Q, X)
    np.testing.assert_array_equal(index, ref_index)
    np.testing.assert_array_equal(score, ref_score)
    thr = ref_score - 1
    fb = first_beater(Q, X, thr)
    assert isinstance(fb, np.ndarray)
    np.testing.assert_array_equal(fb, first_beater_reference(Q, X, thr))
    g = gumbel_max_sample(Q, X, 0.5, seed=1)
    assert isinstance(g, np.ndarray) and g.dtype == np.int64 and g.shape == (10,)


def test_first_beater_reference_float64_matches_bruteforce(small_chunks):
    """float64 queries and actions: the doubling-block scan computes in float64, exactly."""
    rng = np.random.default_rng(20)
    Q, X = _unit_rows(rng, 300, 3).astype(np.float64), rng.standard_normal((5000, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    thr = Q @ X[7] + 0.3
    beats = (Q @ X.T) > thr[:, None]
    expected = np.where(beats.any(axis=1), np.argmax(beats, axis=1), X.shape[0])
    np.testing.assert_array_equal(first_beater_reference(Q, X, thr), expected)
    np.testing.assert_array_equal(first_beater(Q, X, thr), expected)


def test_first_beater_float64_and_float32_differ_only_at_near_ties():
    rng = np.random.default_rng(21)
    Q, X = _unit_rows(rng, 200, 8), _unit_rows(rng, 3000, 8)
    thr = (Q @ X[17]).astype(np.float32) + np.float32(0.2)
    got64 = first_beater_reference(
        Q.astype(np.float64), X.astype(np.float64), thr.astype(np.float64)
    )
    assert np.mean(got64 == first_beater_reference(Q, X, thr)) > 0.99


def test_boltzmann_sample_reference_matches_softmax():
    rng = np.random.default_rng(22)
    n, d, N = 12, 4, 40_000
    X = _unit_rows(rng, n, d)
    v = _unit_rows(rng, 1, d)
    draws = mips.boltzmann_sample_reference(
        np.repeat(v, N, axis=0), X, 3.0, np.random.default_rng(1)
    )
    p = _softmax(3.0 * (X.astype(np.float64) @ v[0].astype(np.float64)))
    assert stats.chisquare(np.bincount(draws, minlength=n), N * p).pvalue > P_MIN
    again = mips.boltzmann_sample(
        np.repeat(v, N, axis=0), X, 3.0, np.random.default_rng(1)
    )
    # the dispatcher's CPU path is the reference
    np.testing.assert_array_equal(draws, again)
    with pytest.raises(TypeError, match="rng"):
        mips.boltzmann_sample(v, X, 1.0, 0)


def test_action_table_is_validated_once_and_accepted_everywhere():
    rng = np.random.default_rng(23)
    Q, X = _int_data(rng, (9, 4)), _int_data(rng, (200, 4))
    table = mips.ActionTable(X)
    assert (
        table.shape == (200, 4)
        and table.values.dtype == np.float32
        and not table.values.flags.writeable
    )
    assert mips.ActionTable(X.astype(np.float64)).values.dtype == np.float64
    # wrapping twice is harmless
    np.testing.assert_array_equal(mips.ActionTable(table).values, table.values)
    np.testing.assert_array_equal(
        mips_argmax(Q, table)[0], mips_argmax_reference(Q, X)[0]
    )
    thr = np.zeros(9)
    np.testing.assert_array_equal(
        first_beater(Q, table, thr), first_beater_reference(Q, X, thr)
    )
    np.testing.assert_array_equal(
        gumbel_max_sample(Q, table, 1.0, 3), gumbel_max_sample_reference(Q, X, 1.0, 3)
    )
    with pytest.raises(ValueError, match="actions"):
        mips.ActionTable(np.ones((0, 4)))
    with pytest.raises(ValueError, match="same d"):
        mips_argmax(Q[:, :3], table)


def test_uniform_action_sets_and_prefix_boltzmann_reference():
    """The sets are normalised rng.standard_normal draws; prefix_boltzmann is the softmax weight of A
    (score alpha) among {A} and each prefix of the set, by direct computation."""
    sets = mips.uniform_action_sets_reference(3, 50, 4, np.random.default_rng(30))
    z = np.random.default_rng(30).standard_normal((3, 50, 4))
    X = z / np.linalg.norm(z, axis=2, keepdims=True)
    assert sets.shape == (3, 50, 4)
    np.testing.assert_array_equal(sets.table(1).values, X[1])
    np.testing.assert_array_equal(
        mips.uniform_action_sets(3, 50, 4, np.random.default_rng(30)).table(2).values,
        X[2],
    )
    V = _unit_rows(np.random.default_rng(31), 3, 4).astype(np.float64)
    P = mips.prefix_boltzmann(sets, V, 2.0, 0.3)
    assert P.shape == (3, 51)
    for t in range(3):
        for m in (0, 1, 17, 50):
            logits = np.concatenate([[2.0 * 0.3], 2.0 * (X[t, :m] @ V[t])])
            assert P[t, m] == pytest.approx(_softmax(logits)[0], rel=1e-12)
    with pytest.raises(ValueError, match="t must be"):
        sets.table(3)
    with pytest.raises(ValueError, match="V must have shape"):
        mips.prefix_boltzmann(sets, V[:2], 2.0, 0.3)
    with pytest.raises(TypeError, match="sets"):
        mips.prefix_boltzmann(X, V, 2.0, 0.3)
    with pytest.raises(TypeError, match="rng"):
        mips.uniform_action_sets(3, 50, 4, 0)


def test_uniform_action_sets_refuses_sizes_that_cannot_fit():
    from icml25.checks import TooLargeError

    with pytest.raises(
        TooLargeError, match=r"uniform_action_sets\(n_sets=10, n=1000000000000"
    ):
        mips.uniform_action_sets(10, 10**12, 32, np.random.default_rng(0))


class _FakeDevice:
    def __init__(self, a):
        self.a = a

    def get(self):
        return self.a


def test_dispatchers_gpu_branch_returns_numpy(monkeypatch):
    """The dispatchers' GPU branch (launchers replaced by the references): NumPy comes back."""
    monkeypatch.setattr(mips, "gpu_available", lambda: True)
    calls = []

    def fake(name, fn):
        def run(*args):
            calls.append(name)
            out = fn(*args)
            return (
                tuple(_FakeDevice(a) for a in out)
                if isinstance(out, tuple)
                else _FakeDevice(out)
            )

        return run

    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    monkeypatch.setattr(
        mips,
        "_mips_argmax_device",
        fake("argmax", lambda q, x: mips._mips_argmax(f32(q), f32(x.values))),
    )
    monkeypatch.setattr(
        mips,
        "_gumbel_max_device",
        fake(
            "gumbel",
            lambda q, x, k, s, o: mips._gumbel_max(f32(q), f32(x.values), k, s, o),
        ),
    )
    monkeypatch.setattr(
        mips,
        "_first_beater_device",
        fake("beater", lambda q, x, t: mips._first_beater(f32(q), f32(x.values), t)),
    )
    rng = np.random.default_rng(24)
    Q, X = _int_data(rng, (10, 4)), _int_data(rng, (300, 4))
    index, score = mips_argmax(Q, X)
    assert isinstance(index, np.ndarray) and isinstance(score, np.ndarray)
    assert isinstance(first_beater(Q, X, score - 1), np.ndarray)
    assert isinstance(gumbel_max_sample(Q, X, 1.0, 0), np.ndarray)
    draws = mips.boltzmann_sample(Q, X, 1.0, np.random.default_rng(0))
    assert isinstance(draws, np.ndarray) and draws.dtype == np.int64
    assert calls == ["argmax", "beater", "gumbel", "gumbel"]


# --------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------

_Q = np.zeros((3, 4), dtype=np.float32)
_X = np.ones((10, 4), dtype=np.float32)
_T = np.zeros(3, dtype=np.float32)

_CALLS = {
    "mips_argmax": lambda q, x, **kw: mips_argmax(q, x),
    "gumbel_max_sample": lambda q, x, **kw: gumbel_max_sample(
        q, x, kw.get("kappa", 1.0), kw.get("seed", 0), kw.get("offset", 0)
    ),
    "first_beater": lambda q, x, **kw: first_beater(q, x, kw.get("threshold", _T)),
}
_NAMES = {
    "mips_argmax": ("queries", "actions"),
    "first_beater": ("queries", "actions"),
    "gumbel_max_sample": ("V", "X"),
}


def _nan_at(a, where=(0, 0)):
    a = a.copy()
    a[where] = np.nan
    return a


@pytest.mark.parametrize("fn", list(_CALLS))
@pytest.mark.parametrize(
    "q, x, error, which",
    [
        (_Q[0], _X, ValueError, 0),  # 1-D queries
        (_Q, _X[None], ValueError, 1),  # 3-D actions
        (_Q, _X[:, :3], ValueError, 0),  # d differs (message names both)
        (_Q, _X[:0], ValueError, 1),  # n == 0
        (_Q.astype(np.complex64), _X, TypeError, 0),
        (_Q, _X.astype(object), TypeError, 1),
        (_nan_at(_Q), _X, ValueError, 0),
        (_Q, _nan_at(_X, (3, 2)) * np.inf, ValueError, 1),
        (_Q, np.full((10, 4), 1e300), ValueError, 1),  # overflows float32
    ],
)
def test_bad_arrays_raise_naming_the_argument(fn, q, x, error, which):
    with pytest.raises(error, match=_NAMES[fn][which]):
        _CALLS[fn](q, x)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        ({"kappa": -0.1}, ValueError, "kappa"),
        ({"kappa": float("nan")}, ValueError, "kappa"),
        ({"kappa": float("inf")}, ValueError, "kappa"),
        ({"kappa": 1e39}, ValueError, "kappa"),
        ({"kappa": "1"}, TypeError, "kappa"),
        ({"kappa": True}, TypeError, "kappa"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 2**64}, ValueError, "seed"),
        ({"seed": 1.0}, TypeError, "seed"),
        ({"seed": True}, TypeError, "seed"),
        ({"offset": -3}, ValueError, "offset"),
        ({"offset": 0.5}, TypeError, "offset"),
    ],
)
def test_gumbel_max_sample_bad_scalars(kwargs, error, name):
    with pytest.raises(error, match=name):
        _CALLS["gumbel_max_sample"](_Q, _X, **kwargs)


@pytest.mark.parametrize(
    "threshold, error",
    [
        (np.zeros(4), ValueError),  # wrong length
        (np.zeros((3, 1)), ValueError),  # 2-D
        (np.array([0.0, np.nan, 0.0]), ValueError),
        (np.array([0.0, np.inf, 0.0]), ValueError),
        (np.array(["a", "b", "c"]), TypeError),
    ],
)
def test_first_beater_bad_threshold(threshold, error):
    with pytest.raises(error, match="threshold"):
        first_beater(_Q, _X, threshold)


# --------------------------------------------------------------------------------------
# GPU against the references (skipped without a GPU)
# --------------------------------------------------------------------------------------

# (B, n, d): one query and many; B around the 8-query block; n around the 256-action
# tile; d around the 32-dimension chunk; n large enough for many blocks and atomics.
GPU_SHAPES = [
    (1, 1, 1),
    (7, 255, 3),
    (8, 256, 4),
    (9, 257, 25),
    (33, 1000, 32),
    (17, 4099, 33),
    (300, 3001, 64),
    (64, 100_003, 100),
    (24, 2_000_000, 16),
]


@pytest.mark.gpu
@pytest.mark.parametrize("B, n, d", GPU_SHAPES)
def test_mips_argmax_gpu_equals_reference_on_exact_data(B, n, d):
    import cupy as cp

    rng = np.random.default_rng(B + n + d)
    Q, X = _int_data(rng, (B, d)), _int_data(rng, (n, d))
    index, score = mips.mips_argmax_gpu(cp.asarray(Q), cp.asarray(X))
    ref_index, ref_score = mips_argmax_reference(Q, X)
    assert index.dtype == cp.int64 and score.dtype == cp.float32
    np.testing.assert_array_equal(index.get(), ref_index)  # ties included: lowest index
    np.testing.assert_array_equal(score.get(), ref_score)


@pytest.mark.gpu
def test_mips_argmax_gpu_special_scores():
    """All-tied rows, all-negative scores, zero scores and huge (exact) magnitudes."""
    import cupy as cp

    rng = np.random.default_rng(10)
    n, d = 1000, 8
    X = _int_data(rng, (n, d), 1, 3)  # entries 1 or 2
    X[:, 0] = 1.0
    X[[400, 700, 999]] = 2.0  # the only (tied) best rows for positive queries
    X[[300, 800]] = 1.0  # tied least-bad rows for the negative query
    Q = np.stack(
        [
            np.ones(d),  # positive scores, ties
            -np.ones(d),  # every score negative: the max is the least negative
            np.zeros(d),  # every score is 0: index 0
            np.full(d, 2.0**100),  # scores ~2^104, exact, near the top of float32
            np.full(d, -(2.0**100)),
        ]
    ).astype(np.float32)
    index, score = mips.mips_argmax_gpu(cp.asarray(Q), cp.asarray(X))
    ref_index, ref_score = mips_argmax_reference(Q, X)
    np.testing.assert_array_equal(index.get(), ref_index)
    np.testing.assert_array_equal(score.get(), ref_score)
    assert index.get()[0] == 400 and index.get()[2] == 0 and index.get()[3] == 400


@pytest.mark.gpu
def test_mips_argmax_gpu_negative_zero_ties_positive_zero():
    """-1e-30 * 1e-30 underflows to -0.0, which must tie with +0.0 (lowest index wins)."""
    import cupy as cp

    q = cp.asarray(np.array([[-1e-30]], dtype=np.float32))
    # scores -5e-30, -0, +0
    cases = (([1e-30, 0.0, 1e-30], 0), ([0.0, 1e-30], 0), ([5.0, 1e-30, 0.0], 1))
    for column, expected in cases:
        X = np.array(column, dtype=np.float32)[:, None]
        index, score = mips.mips_argmax_gpu(q, cp.asarray(X))
        assert (
            int(index.get()[0])
            == expected
            == int(mips_argmax_reference(q.get(), X)[0][0])
        )
        assert float(score.get()[0]) == 0.0


@pytest.mark.gpu
def test_mips_argmax_gpu_matches_reference_on_random_floats():
    import cupy as cp

    rng = np.random.default_rng(11)
    B, n, d = 256, 200_000, 32
    Q, X = _unit_rows(rng, B, d), _unit_rows(rng, n, d)
    index, score = mips.mips_argmax_gpu(cp.asarray(Q), cp.asarray(X))
    index, score = index.get(), score.get()
    ref_index, ref_score = mips_argmax_reference(Q, X)
    np.testing.assert_allclose(score, ref_score, rtol=1e-5, atol=1e-6)
    # Indices may differ only at float32 near-ties: then both
    # rows score the same to 1e-5.
    S64 = Q.astype(np.float64) @ X.T.astype(np.float64)
    rows = np.arange(B)
    differ = index != ref_index
    assert differ.mean() <= 0.01
    np.testing.assert_allclose(
        S64[rows[differ], index[differ]],
        S64[rows[differ], ref_index[differ]],
        rtol=1e-5,
    )


@pytest.mark.gpu
@pytest.mark.parametrize("B, n, d", GPU_SHAPES)
def test_first_beater_gpu_equals_reference_on_exact_data(B, n, d):
    import cupy as cp

    rng = np.random.default_rng(B * 7 + n + d)
    Q, X = _int_data(rng, (B, d)), _int_data(rng, (n, d))
    best = mips_argmax_reference(Q, X)[1]
    # Mix of answers within one 8-query block: early (low threshold), late or never
    # (at the max), and in between (threshold just under the max: the first row
    # reaching the max value).
    thr = best - rng.integers(0, 4, size=B).astype(np.float32)
    thr[::4] = best[::4]  # nobody beats the max -> n
    out = mips.first_beater_gpu(cp.asarray(Q), cp.asarray(X), cp.asarray(thr))
    assert out.dtype == cp.int64
    np.testing.assert_array_equal(out.get(), first_beater_reference(Q, X, thr))


@pytest.mark.gpu
@pytest.mark.parametrize("kappa", [0.0, 1.0, 10.0])
def test_gumbel_max_gpu_draws_equal_reference(kappa):
    import cupy as cp

    rng = np.random.default_rng(12)
    B, n, d = 2048, 5000, 32
    V, X = _unit_rows(rng, B, d), _unit_rows(rng, n, d)
    seed, offset = 2**40 + 17, 2**33 + 5  # high words of key and counter in use
    gpu = mips.gumbel_max_sample_gpu(
        cp.asarray(V), cp.asarray(X), kappa, seed, offset
    ).get()
    ref = gumbel_max_sample_reference(V, X, kappa, seed, offset)
    assert np.mean(gpu == ref) >= 0.999, (
        f"only {np.mean(gpu == ref):.4%} of draws agree"
    )


@pytest.mark.gpu
def test_gumbel_max_gpu_draws_equal_reference_on_exact_data():
    """Exact logits: only the Gumbel noise's rounding (logf vs np.log) could differ."""
    import cupy as cp

    rng = np.random.default_rng(13)
    B, n, d = 1000, 3000, 9
    V, X = _int_data(rng, (B, d)), _int_data(rng, (n, d))
    gpu = mips.gumbel_max_sample_gpu(cp.asarray(V), cp.asarray(X), 0.5, 99, 3).get()
    ref = gumbel_max_sample_reference(V, X, 0.5, 99, 3)
    assert np.mean(gpu == ref) >= 0.999


@pytest.mark.gpu
@pytest.mark.parametrize("n, kappa", [(12, 3.0), (700, 2.0), (700, 0.0)])
def test_gumbel_max_gpu_matches_softmax(n, kappa):
    import cupy as cp

    rng = np.random.default_rng(14)
    d, N = 6, 1_000_000
    X = _unit_rows(rng, n, d)
    v = _unit_rows(rng, 1, d)
    V = cp.asarray(np.repeat(v, N, axis=0))
    draws = mips.gumbel_max_sample_gpu(V, cp.asarray(X), kappa, seed=77).get()
    counts = np.bincount(draws, minlength=n)
    p = _softmax(kappa * (X.astype(np.float64) @ v[0].astype(np.float64)))
    assert (N * p).min() > 5  # chi-square validity
    assert stats.chisquare(counts, N * p).pvalue > P_MIN
    # A fresh offset gives independent draws: they coincide with probability sum_i p_i^2
    # (binomial sd below 5e-4 at N = 1e6).
    again = mips.gumbel_max_sample_gpu(V, cp.asarray(X), kappa, seed=77, offset=1).get()
    assert abs(np.mean(draws == again) - np.sum(p**2)) < 0.005


@pytest.mark.gpu
def test_gpu_kernels_split_huge_batches_like_the_reference():
    """B > 8 * 65535 queries: the launcher splits gridDim.y; Gumbel noise keeps global row indices."""
    import cupy as cp

    rng = np.random.default_rng(15)
    B, n, d = 8 * 65535 + 300, 40, 3
    V, X = _int_data(rng, (B, d)), _int_data(rng, (n, d))
    index, _ = mips.mips_argmax_gpu(cp.asarray(V), cp.asarray(X))
    np.testing.assert_array_equal(index.get(), mips_argmax_reference(V, X)[0])
    gpu = mips.gumbel_max_sample_gpu(cp.asarray(V), cp.asarray(X), 0.7, 5).get()
    rows = np.arange(B - 2000, B)  # rows of the second launch
    noise = gumbel_noise_reference(5, 0, rows[:, None], np.arange(n)[None, :])
    expected = np.argmax(np.float32(0.7) * (V[rows] @ X.T) + noise, axis=1)
    assert np.mean(gpu[rows] == expected) >= 0.999
    # noise keyed by rows 0..1999 instead
    local = gumbel_max_sample_reference(V[rows], X, 0.7, 5)
    # so the global row index really enters the noise
    assert np.mean(gpu[rows] == local) < 0.5


@pytest.mark.gpu
def test_dispatchers_return_numpy_on_the_gpu():
    """A caller never sees CuPy: NumPy (or CuPy, copied to the host for validation) in, NumPy out."""
    import cupy as cp

    rng = np.random.default_rng(16)
    Q, X = _int_data(rng, (10, 4)), _int_data(rng, (300, 4))
    index, score = mips_argmax(cp.asarray(Q), X)
    assert isinstance(index, np.ndarray) and isinstance(score, np.ndarray)
    np.testing.assert_array_equal(index, mips_argmax_reference(Q, X)[0])
    assert isinstance(first_beater(Q, mips.ActionTable(X), np.zeros(10)), np.ndarray)
    assert isinstance(gumbel_max_sample(Q, X, 1.0, 0), np.ndarray)
    assert isinstance(
        mips.boltzmann_sample(Q, X, 1.0, np.random.default_rng(0)), np.ndarray
    )
    with pytest.raises(ValueError, match="queries"):
        mips_argmax(cp.full((2, 4), cp.nan, dtype=cp.float32), X)


@pytest.mark.gpu
def test_action_sets_on_the_gpu():
    """Sets drawn on the device: unit rows, centred; prefix_boltzmann and first_beater read them there."""
    import cupy as cp

    sets = mips.uniform_action_sets(2, 3000, 5, np.random.default_rng(40))
    assert isinstance(sets._x, cp.ndarray) and sets.shape == (2, 3000, 5)
    X = cp.asnumpy(sets._x)
    np.testing.assert_allclose(
        np.linalg.norm(X.astype(np.float64), axis=2), 1.0, atol=1e-5
    )
    assert abs(X.mean()) < 0.02
    V = _unit_rows(np.random.default_rng(41), 2, 5)
    P = mips.prefix_boltzmann(sets, V, 2.0, 0.1)
    assert isinstance(P, np.ndarray) and P.shape == (2, 3001)
    np.testing.assert_allclose(
        P, mips._prefix_boltzmann(np, X, V.astype(np.float32), 2.0, 0.1), rtol=1e-5
    )
    Q = _unit_rows(np.random.default_rng(42), 64, 5)
    thr = (Q @ X[0, 11]).astype(np.float32)
    got = mips.first_beater(Q, sets.table(0), thr)
    assert isinstance(got, np.ndarray)
    assert np.mean(got == first_beater_reference(Q, X[0], thr)) > 0.99

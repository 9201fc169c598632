"""Tests of icml25.checks (the shared validators) and of .ci/deps.py (imports found with ast)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from icml25 import checks
from icml25.checks import (
    TooLargeError,
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_rng,
    check_tensor,
    check_torch_generator,
)


@pytest.mark.parametrize("value", [3, np.int64(3), np.array(3)])
def test_check_int_accepts_integers(value):
    assert (
        check_int(value, "n", low=1, high=3) == 3 and type(check_int(value, "n")) is int
    )


@pytest.mark.parametrize("value", [True, 3.0, "3", None, np.array([3])])
def test_check_int_refuses_other_kinds_naming_the_argument(value):
    with pytest.raises(TypeError, match="^n_trials must be an integer"):
        check_int(value, "n_trials", low=1)


def test_check_int_bounds_are_inclusive():
    assert check_int(1, "n", low=1, high=1) == 1
    with pytest.raises(ValueError, match=r"n must be an integer >= 1 and <= 5, got 6"):
        check_int(6, "n", low=1, high=5)


def test_check_real_bounds_nan_inf():
    assert check_real(np.float32(0.5), "x", low=0, high=1) == 0.5
    assert check_real(np.inf, "x", allow_inf=True) == np.inf
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="x must be a finite real number"):
            check_real(bad, "x")
    with pytest.raises(ValueError, match="> 0"):
        check_positive(0.0, "lam")
    with pytest.raises(ValueError, match="< 1"):
        check_probability(1.0, "delta", open_low=True, open_high=True)
    assert check_probability(0.0, "p") == 0.0
    with pytest.raises(TypeError):
        check_real(True, "x")
    with pytest.raises(TypeError):
        check_real("1", "x")


def test_check_bool_and_choice():
    assert check_bool(np.bool_(True), "flag") is True
    with pytest.raises(TypeError, match="flag must be True or False"):
        check_bool(1, "flag")
    assert check_choice("exact", "estimator", ("exact", "hutchinson")) == "exact"
    with pytest.raises(
        ValueError,
        match=r"estimator must be one of \['exact', 'hutchinson'\], got 'Exact'",
    ):
        check_choice("Exact", "estimator", ("exact", "hutchinson"))
    with pytest.raises(ValueError):
        check_choice([1], "x", (1, 2))  # unhashable: never a choice


def test_check_array_kinds_shapes_and_ranges():
    out = check_array([[1, 2], [3, 4]], "X", shape=(None, 2))
    assert out.dtype == np.float64 and out.shape == (2, 2)
    x32 = np.ones(3, np.float32)
    assert check_array(x32, "x") is x32  # no copy when nothing changes
    assert check_array(np.arange(3), "idx", kind="int").dtype == np.int64
    assert check_array([], "idx", kind="int").dtype == np.int64
    with pytest.raises(TypeError, match="idx must be an array of integers"):
        check_array([0.5], "idx", kind="int")
    with pytest.raises(TypeError, match="X must be an array of real numbers"):
        check_array(["a"], "X")
    with pytest.raises(TypeError, match="real numbers, got dtype bool"):
        check_array([True], "X")
    with pytest.raises(
        ValueError, match=r"X must have shape \(\?, 3\), got shape \(2, 2\)"
    ):
        check_array(np.ones((2, 2)), "X", shape=(None, 3))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        check_array(np.ones((1, 1, 1)), "X", ndim=(1, 2))
    with pytest.raises(ValueError, match="finite"):
        check_array([1.0, np.nan], "x")
    assert np.isnan(check_array([np.nan], "x", finite=False)[0])
    with pytest.raises(ValueError, match="weights must be >= 0 everywhere"):
        check_array([1.0, -1.0], "weights", low=0)
    with pytest.raises(ValueError, match="v must be > 0 everywhere"):
        check_array([1.0, 0.0], "v", low=0, low_open=True)
    with pytest.raises(ValueError, match="at least 1 element"):
        check_array([], "x", min_size=1)
    with pytest.raises(ValueError, match="kind must be one of"):
        check_array([1], "x", kind="complex")


def test_check_array_takes_torch_tensors_to_numpy():
    torch = pytest.importorskip("torch")
    out = check_array(torch.arange(4.0), "x", ndim=1)
    assert isinstance(out, np.ndarray) and out.tolist() == [0, 1, 2, 3]


def test_check_tensor():
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3)
    assert check_tensor(t, "x", shape=(None, 3)) is t
    assert isinstance(check_tensor([[1.0, 2.0]], "x", ndim=2), torch.Tensor)
    with pytest.raises(ValueError, match="finite"):
        check_tensor(torch.tensor([float("nan")]), "x")
    with pytest.raises(TypeError, match="floating-point"):
        check_tensor(torch.arange(3), "x")
    with pytest.raises(ValueError, match=r"x must have shape \(\?, 2\)"):
        check_tensor(t, "x", shape=(None, 2))
    with pytest.raises(TypeError, match="torch.Tensor"):
        check_tensor("abc", "x")


def test_check_rng_and_torch_generator():
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0)
    assert check_rng(g) is g
    assert check_rng(None, allow_none=True) is None
    for bad in (0, np.random.RandomState(0), None):
        with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
            check_rng(bad)
    tg = torch.Generator().manual_seed(0)
    assert check_torch_generator(tg) is tg and check_torch_generator(None) is None
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        check_torch_generator(g)


def test_check_budget_quotes_the_estimate():
    check_budget("f(n=10)", n_bytes=1e3, n_operations=1e3)
    with pytest.raises(TooLargeError, match=r"f\(n=10\*\*12\) would need about .* GiB"):
        check_budget("f(n=10**12)", n_bytes=8e12 * 8, max_bytes=2**30)
    with pytest.raises(TooLargeError, match="elementary operations"):
        check_budget("g(trials=10**12)", n_operations=1e20)
    assert issubclass(TooLargeError, ValueError)
    assert checks.available_memory_bytes() > 0


def _deps():
    path = Path(__file__).resolve().parents[1] / ".ci" / "deps.py"
    spec = importlib.util.spec_from_file_location("ci_deps", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ci_deps_finds_imports_with_ast_not_text():
    deps = _deps()
    code = (
        "%matplotlib inline\n"
        "import icml25.common as common\n"
        "from icml25.kernels import mips\n"
        "from icml25.checks import check_int\n"
        "s = 'from icml25 import lowra'  # a string, not an import\n"
        "# import icml25.grokking\n"
    )
    files = deps.module_files(code)
    assert {
        "lib/common.py",
        "kernels/mips.py",
        "kernels/mips.cu",
        "lib/checks.py",
    } <= files
    assert not any("lowra" in f or "grokking" in f for f in files)

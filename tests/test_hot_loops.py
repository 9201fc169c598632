"""The hot-loop tables of the chapters and of ``make bench`` (``icml25.hot_loops``, re-exported
by ``icml25.common``; ``benchmarks/_summary.py`` imports the same row check and format)."""

from __future__ import annotations

import json

import pytest

from icml25 import common


def _grokking_run():
    path = common.repo_root() / "benchmarks" / "results" / "grokking.json"
    return json.loads(path.read_text())


def test_hot_loops_table_reads_a_benchmark_and_binds_no_name(tmp_path, capsys):
    run = _grokking_run()
    (tmp_path / "x.json").write_text(json.dumps(run))
    table, sentence = common.hot_loops_table("x", tmp_path)
    assert len(table) == len(run["hot_loops"])
    # each row says what its bytes or operations counted
    assert list(table["counted"]) == [r["counted"] for r in run["hot_loops"]]
    fracs = [r["fraction_of_limit"] for r in run["hot_loops"]]
    from icml25.hot_loops import percent

    assert f"{percent(min(fracs))} to {percent(max(fracs))}" in sentence
    assert common.hot_loops_table("absent", tmp_path) is None
    before = set(globals())
    common.show_hot_loops("absent", tmp_path)
    said = capsys.readouterr().out
    assert "no hot-loop limits recorded yet" in said
    assert (
        str(tmp_path / "absent.json") in said
    )  # the folder asked about, not the default
    assert set(globals()) == before


def test_hot_loops_table_names_the_recorded_command(tmp_path):
    run = _grokking_run()
    run["limits_provenance"]["command"] = "grokking.py --quick --repeats 2"
    (tmp_path / "q.json").write_text(json.dumps(run))
    _, sentence = common.hot_loops_table("q", tmp_path)
    assert "`python benchmarks/grokking.py --quick --repeats 2`" in sentence
    assert "make bench" not in sentence


@pytest.mark.parametrize("name", ["../x", "", "a/b", "x.json", "1x", " x", "x" * 300])
def test_hot_loops_table_refuses_a_name_that_is_not_an_identifier(tmp_path, name):
    with pytest.raises(ValueError, match="benchmark"):
        common.hot_loops_table(name, tmp_path)
    with pytest.raises(TypeError, match="benchmark"):
        common.hot_loops_table(None, tmp_path)


def _spoil(run, how):
    row = run["hot_loops"][0]
    if how == "missing key":
        del row["limit_per_s"]
    elif how == "nan":
        row["fraction_of_limit"] = float("nan")
    elif how == "string number":
        row["achieved_per_s"] = "fast"
    elif how == "row not an object":
        run["hot_loops"][0] = [1, 2]
    elif how == "loops not a list":
        run["hot_loops"] = {"a": row}
    elif how == "no limits":
        del run["machine_limits"]
    elif how == "infinite ratio":
        row["ratio_to_baseline"] = float("inf")
    elif how == "command not a string":
        run["limits_provenance"]["command"] = ["grokking.py", "--quick"]
    elif how == "cores not a count":
        run["limits_provenance"]["cpu_count"] = True
    elif how == "limit not a number":
        run["machine_limits"]["copy_Bps"] = "10 GB/s"
    elif how == "limit zero":
        run["machine_limits"]["fp64_flops"] = 0
    elif how == "no time":
        run["limits_provenance"]["utc"] = " "
    elif how == "huge number":
        row["achieved_per_s"] = 10**400
    return run


@pytest.mark.parametrize(
    "how,key",
    [
        ("missing key", "limit_per_s"),
        ("nan", "NaN"),
        ("string number", "achieved_per_s"),
        ("row not an object", "hot_loops\\[0\\]"),
        ("loops not a list", "hot_loops"),
        ("no limits", "machine_limits"),
        ("infinite ratio", "Infinity"),
        ("command not a string", "limits_provenance.command"),
        ("cores not a count", "limits_provenance.cpu_count"),
        ("limit not a number", "machine_limits"),
        ("limit zero", "machine_limits"),
        ("no time", "utc"),
        ("huge number", "achieved_per_s"),
    ],
)
def test_hot_loops_table_names_file_and_key_of_a_malformed_record(tmp_path, how, key):
    (tmp_path / "bad.json").write_text(json.dumps(_spoil(_grokking_run(), how)))
    with pytest.raises(ValueError, match=key) as err:
        common.hot_loops_table("bad", tmp_path)
    assert "bad.json" in str(err.value)


def test_summary_and_chapters_share_one_row_definition(tmp_path):
    import importlib.util

    from icml25 import hot_loops

    path = common.repo_root() / "benchmarks" / "_summary.py"
    spec = importlib.util.spec_from_file_location("bench_summary", path)
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    assert (
        summary.si is hot_loops.si and summary.loop_problems is hot_loops.loop_problems
    )
    assert hot_loops.si(1.234e9, "B/s") == "1.23 GB/s"
    assert hot_loops.si(float("nan"), "B/s") == "n/a"
    good = _grokking_run()
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "bad.json").write_text(json.dumps(_spoil(_grokking_run(), "nan")))
    out = summary.collect(tmp_path)
    assert len(out["rows"]) == len(good["hot_loops"]) * 2 - 1
    assert any(
        u["file"] == "bad.json" and "fraction_of_limit" in u["error"]
        for u in out["unreadable"]
    )


def test_percent_is_one_unit_at_every_scale():
    from icml25.hot_loops import percent

    assert [percent(f) for f in (0.227, 0.0034, 0.00012, 4.9e-06, 1.188)] == [
        "22.7%",
        "0.34%",
        "0.012%",
        "4.9e-04%",
        "118.8%",
    ]
    assert percent(float("nan")) == "n/a"


def test_one_loop_reads_singular_and_a_fraction_over_one_is_explained(tmp_path):
    run = _grokking_run()
    run["hot_loops"] = run["hot_loops"][:1]
    (tmp_path / "one.json").write_text(json.dumps(run))
    _, sentence = common.hot_loops_table("one", tmp_path)
    assert "The one hot loop is" in sentence and "1 hot loops" not in sentence
    loop = run["hot_loops"][0]
    loop["limit_per_s"] = loop["achieved_per_s"] / 1.2
    loop["fraction_of_limit"] = 1.2
    (tmp_path / "over.json").write_text(json.dumps(run))
    _, sentence = common.hot_loops_table("over", tmp_path)
    assert "120.0%" in sentence and "above 100% means" in sentence


def test_a_fraction_that_is_not_achieved_over_limit_is_refused(tmp_path):
    run = _grokking_run()
    run["hot_loops"][0]["fraction_of_limit"] = 0.99
    (tmp_path / "bad.json").write_text(json.dumps(run))
    with pytest.raises(ValueError, match="fraction_of_limit"):
        common.hot_loops_table("bad", tmp_path)


def test_hot_loops_table_names_a_record_it_cannot_read(tmp_path):
    (tmp_path / "d.json").mkdir()
    with pytest.raises(ValueError, match="d.json"):
        common.hot_loops_table("d", tmp_path)

"""`hierdp release` writes ``lower`` and ``upper`` for every query kind (default 90%, or
``--interval LEVEL``; ``--interval none`` gives none), in CSV and Parquet, with the
manifest's ``intervals`` record saying how they were made."""

from __future__ import annotations

import dataclasses
import importlib

import pandas as pd
import pytest
from conftest import run_cli as run
from test_intervals_kinds import UNITS, ages, flows, group_sizes

from hierdp_core.export import read_release
from hierdp_core.intervals import INPUTS
from hierdp_core.mechanisms.base import capabilities


def _csv(tmp_path, query: str):
    """A small input of the query kind, written as CSV, and its command-line options."""
    path = tmp_path / f"{query}.csv"
    if query == "group-sizes":
        d = group_sizes(scale=5)
        rows = UNITS.loc[UNITS.index.repeat(5)].assign(
            size=list(range(5)) * len(UNITS), n=d.leaf_counts.ravel())
        rows.to_csv(path, index=False)
        return path, ["--levels", "s,c", "--query", "group-sizes", "--size-column", "size",
                      "--count-column", "n", "--max-size", "4", "--mechanism",
                      "gs-topdown", "--invariant", "total", "--epsilon", "1"]
    if query == "flows":
        d = flows(scale=5)
        codes = UNITS["c"].to_numpy()
        states = UNITS["s"].to_numpy()
        pd.DataFrame({"os": states[d.origin], "oc": codes[d.origin],
                      "ds": states[d.destination], "dc": codes[d.destination],
                      "n": d.counts}).to_csv(path, index=False)
        return path, ["--query", "flows", "--origin-levels", "os,oc",
                      "--destination-levels", "ds,dc", "--count-column", "n",
                      "--mechanism", "inftda", "--invariant", "total", "--rho", "0.5"]
    d = ages(scale=5)
    rows = UNITS.loc[UNITS.index.repeat(8)].assign(age=list(range(8)) * len(UNITS),
                                                   n=d.leaf_counts.ravel())
    rows.to_csv(path, index=False)
    bands = ["--workload", "0-2,3-7"] if query == "ranges-bands" else []
    return path, ["--levels", "s,c", "--query", "ranges", "--attribute", "age",
                  "--count-column", "n", "--mechanism", "dawa", "--epsilon", "1", *bands]


@pytest.mark.parametrize("query", ["group-sizes", "flows", "ranges", "ranges-bands"])
def test_release_files_carry_intervals_for_every_query(capsys, tmp_path, query):
    path, options = _csv(tmp_path, query)
    base = ["release", path, *options, "--structure-from-data", "--seed", 3]
    code, _, err = run(capsys, *base, "--out", tmp_path / "a", "--format", "csv,parquet",
                       "--interval", "0.8")
    assert code == 0, err
    table, manifest = read_release(tmp_path / "a")
    assert {"lower", "upper"} <= set(table.columns)
    assert (table["lower"] <= table["value"]).all() and (table["value"] <= table["upper"]).all()
    record = manifest["intervals"]
    assert record["level"] == 0.8 and record["inputs"] == INPUTS
    if query == "ranges-bands":  # the single values within a band are shares of it
        assert "not estimates of each value" in manifest["workload"]["values_within_a_band"]
    assert set(table["level_name"]) <= set(record["method"])
    bootstrapped = {"parametric bootstrap", "bias-widened bootstrap", "share-of-band bound",
                    "share-of-bucket bound"}
    assert bootstrapped & set(record["method"].values())
    assert record["replicates"] >= 20 and record["seed"] is not None
    code, out, err = run(capsys, *base, "--out", tmp_path / "b")  # the default level
    assert code == 0, err
    said = [line for line in out.splitlines() if line.startswith("error estimated")]
    estimate = read_release(tmp_path / "b")[1]["intervals"]["estimated_error"]["by_level"]
    assert len(said) == any(estimate.values())  # none where every cell shares a band
    assert all(f"{name} " in said[0] for name in estimate) if said else query.endswith("bands")
    assert read_release(tmp_path / "b")[1]["intervals"]["level"] == 0.9
    code, _, err = run(capsys, *base, "--out", tmp_path / "c", "--interval", "none")
    assert code == 0, err
    table, manifest = read_release(tmp_path / "c")
    assert "lower" not in table.columns and "intervals" not in manifest


def test_uncalibrated_levels_are_flagged_in_the_manifest_with_one_warning(capsys, tmp_path,
                                                                          monkeypatch):
    """stability-histogram's levels above the leaves carry the suppression bound and are
    calibrated; a mechanism that declares levels uncalibrated (here stability-histogram
    made to) gets them marked per level in the manifest, with the reason, and the command
    line warns once, after the release is written; a calibrated release (InfTDA's, DAWA's
    over ranges) gets no such line."""
    path, options = _csv(tmp_path, "flows")
    options = [*options[:options.index("--mechanism")], "--mechanism", "stability-histogram",
               "--epsilon", "1", "--delta", "1e-6"]
    base = ["release", path, *options, "--structure-from-data", "--seed", 3]
    code, out, err = run(capsys, *base, "--out", tmp_path / "s")
    assert code == 0 and "not calibrated" not in err, err
    record = read_release(tmp_path / "s")[1]["intervals"]
    assert all(c["calibrated"] for c in record["calibration"].values())
    assert list(record["method"].values())[:-1] == ["suppression bound"] * (
        len(record["method"]) - 1)
    declared = dataclasses.replace(capabilities("stability-histogram"),
                                   uncalibrated=("above the leaves", "suppressed cells"))
    calibration_module = importlib.import_module("hierdp_core.intervals.calibration")
    monkeypatch.setattr(calibration_module, "capabilities",
                        lambda name: declared if name == "stability-histogram"
                        else capabilities(name))
    code, out, err = run(capsys, *base, "--out", tmp_path / "a")
    assert code == 0, err
    calibration = read_release(tmp_path / "a")[1]["intervals"]["calibration"]
    flagged = [name for name, c in calibration.items() if not c["calibrated"]]
    assert flagged == list(calibration)[:-1]
    assert all("suppressed" in calibration[n]["reason"] for n in flagged)
    lines = [line for line in err.splitlines() if "not calibrated" in line]
    assert len(lines) == 1
    assert lines[0].startswith("warning: the intervals of stability-histogram at ")
    assert all(name in lines[0] for name in flagged)
    code, _, err = run(capsys, *base, "--out", tmp_path / "b", "--interval", "none")
    assert code == 0 and "not calibrated" not in err  # no intervals, nothing to warn about
    for query, out in (("flows", "c"), ("ranges", "d")):
        path, options = _csv(tmp_path, query)
        code, _, err = run(capsys, "release", path, *options, "--structure-from-data",
                           "--seed", 3, "--out", tmp_path / out)
        assert code == 0 and "not calibrated" not in err, err
        calibration = read_release(tmp_path / out)[1]["intervals"]["calibration"]
        assert all(c["calibrated"] for c in calibration.values())


@pytest.mark.parametrize("query", ["counts", "group-sizes", "flows", "ranges"])
def test_an_interval_at_half_or_below_is_made_for_every_query(capsys, tmp_path, query):
    """--interval 0.5 (or lower) crashed every counts release after its budget was
    charged (the one-sided quantile at 2 level - 1 <= 0 took a logarithm of 0): such a
    level's one-sided quantile is 0, and the intervals hold their values."""
    if query == "counts":
        path = tmp_path / "counts.csv"
        UNITS.assign(n=range(3, 3 + len(UNITS))).to_csv(path, index=False)
        options = ["--levels", "s,c", "--count-column", "n", "--mechanism", "topdown",
                   "--epsilon", "1"]
    else:
        path, options = _csv(tmp_path, query)
    for level in ("0.5", "0.2"):
        out = tmp_path / level
        code, _, err = run(capsys, "release", path, *options, "--structure-from-data",
                           "--seed", 3, "--interval", level, "--out", out)
        assert code == 0, err
        table, manifest = read_release(out)
        assert (table["lower"] <= table["value"]).all()
        assert (table["value"] <= table["upper"]).all()
        assert manifest["intervals"]["level"] == float(level)

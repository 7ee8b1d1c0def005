"""`hierdp evaluate` reports, per level, how often the release's intervals hold the true
values (``coverage``, beside ``interval_level``), for every query kind whose release has
intervals (issue 30, item 4), and the error its manifest estimates beside the error
measured per released value (item 3)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run
from test_intervals_cli import _csv

from hierdp_core.export import read_release
from hierdp_core.intervals.coverage import coverage_per_level


def _counts_csv(tmp_path):
    rng = np.random.default_rng(4)
    county = [f"c{i:02d}" for i in range(40)]
    table = pd.DataFrame({"state": [f"s{i % 4}" for i in range(40)], "county": county,
                          "n": rng.integers(0, 30, 40)})
    path = tmp_path / "counts.csv"
    table.to_csv(path, index=False)
    return path, table


def _evaluate(capsys, path, out):
    code, printed, err = run(capsys, "evaluate", path, out, "--json")
    assert code == 0, err
    return pd.DataFrame(json.loads(printed))


def test_evaluate_reports_coverage_per_level_beside_the_errors(capsys, tmp_path):
    path, table = _counts_csv(tmp_path)
    out = tmp_path / "rel"
    code, _, err = run(capsys, "release", path, "--levels", "state,county", "--count-column",
                       "n", "--mechanism", "topdown", "--epsilon", "0.3", "--seed", 2,
                       "--structure-from-data", "--interval", "0.8", "--out", out)
    assert code == 0, err
    rows = _evaluate(capsys, path, out)
    overall = rows[rows["bin"] == "all"].set_index("level")
    # what the release's own intervals hold, counted here from its table and the input
    released, _ = read_release(out)
    truth = {"total": table["n"].sum(), **table.groupby("state")["n"].sum(),
             **table.set_index("county")["n"]}
    t = released["label"].astype(str).map(truth).to_numpy()
    inside = (released["lower"] <= t) & (t <= released["upper"])
    expected = inside.groupby(released["level"]).mean()
    assert overall["coverage"].to_numpy() == pytest.approx(expected.to_numpy())
    assert 0 < expected[2] < 1  # a level where some interval misses (eps 0.3, level 0.8)
    assert (overall["interval_level"] == 0.8).all()
    assert rows.loc[rows["bin"] != "all", "coverage"].isna().all()
    assert (overall["mae"] > 0).all()
    # TopDown's bootstrap estimated its error: the manifest's figure beside the measured
    estimate = read_release(out)[1]["intervals"]["estimated_error"]["by_level"]
    assert overall["estimated_mae"].tolist() == list(estimate.values())
    measured = (released["value"] - t).abs().groupby(released["level"]).mean()
    assert overall["mae_per_value"].to_numpy() == pytest.approx(measured.to_numpy())
    assert rows.loc[rows["bin"] != "all", "estimated_mae"].isna().all()


def test_evaluate_without_intervals_has_no_coverage(capsys, tmp_path):
    path, _ = _counts_csv(tmp_path)
    out = tmp_path / "rel"
    assert run(capsys, "release", path, "--levels", "state,county", "--count-column", "n",
               "--mechanism", "least-squares", "--epsilon", "1", "--seed", 2,
               "--structure-from-data", "--interval", "none", "--out", out)[0] == 0
    assert "coverage" not in _evaluate(capsys, path, out).columns


@pytest.mark.parametrize("query", ["group-sizes", "flows"])
def test_evaluate_coverage_of_other_query_kinds(capsys, tmp_path, query):
    path, options = _csv(tmp_path, query)
    out = tmp_path / "rel"
    code, _, err = run(capsys, "release", path, *options, "--structure-from-data", "--seed",
                       3, "--interval-replicates", 20, "--out", out)
    assert code == 0, err
    rows = _evaluate(capsys, path, out)
    assert rows["coverage"].between(0, 1).all() and rows["coverage"].notna().all()
    assert (rows["interval_level"] == 0.9).all()
    assert list(rows["level"]) == list(range(len(rows)))
    estimate = read_release(out)[1]["intervals"]["estimated_error"]["by_level"]
    assert rows["estimated_mae"].tolist() == list(estimate.values())
    assert (rows["mae_per_value"].iloc[1:] > 0).all()


def test_evaluate_a_range_release_s_coverage_and_estimate(capsys, tmp_path):
    """A range release gets its coverage per level too (its cells: unit x value) and its
    estimated error beside the measured (the range metrics' own ``cell_mae``); DAWA's
    levels whose cells share a bucket have no estimate (NaN)."""
    path, options = _csv(tmp_path, "ranges")
    out = tmp_path / "rel"
    code, _, err = run(capsys, "release", path, *options, "--structure-from-data", "--seed",
                       3, "--interval-replicates", 20, "--out", out)
    assert code == 0, err
    rows = _evaluate(capsys, path, out)
    estimate = read_release(out)[1]["intervals"]["estimated_error"]["by_level"]
    assert [None if np.isnan(v) else v for v in rows["estimated_mae"]] == list(
        estimate.values())
    assert (rows["mae_per_value"] > 0).all()
    np.testing.assert_allclose(rows["mae_per_value"], rows["cell_mae"])
    released, _ = read_release(out)
    assert rows["coverage"].between(0, 1).all() and (rows["interval_level"] == 0.9).all()
    assert len(rows) == released["level"].nunique()


def test_coverage_per_level_counts_each_level_apart():
    level = np.array([[0, 0], [1, 1], [1, 1]])
    truth = np.array([[5, 5], [1, 2], [3, 4]])
    got = coverage_per_level(level, truth, truth - 1, truth + np.array([[1, 1], [1, -3],
                                                                         [1, 1]]), 3)
    assert got[:2].tolist() == [1.0, 0.75] and np.isnan(got[2])

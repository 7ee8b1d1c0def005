"""``--split-goal``: the counts split chosen by the optimiser from a stated goal, its note,
its manifest record, and the refusals (bad goal, with --split, other queries)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from hierdp_core.cli.split import parse_goal
from hierdp_core.errors import InputError


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(3)
    units = pd.DataFrame({"state": np.repeat(["A", "B", "C"], 4),
                          "county": [f"c{i:02d}" for i in range(12)]})
    units.to_csv(tmp_path / "geo.csv", index=False)
    data = units.assign(n=rng.integers(0, 50, len(units)))
    path = tmp_path / "counts.csv"
    data.to_csv(path, index=False)
    return path


def release(capsys, table, out, *flags):
    return run_cli(capsys, "release", table, "--levels", "state,county", "--count-column", "n",
                   "--geography", table.parent / "geo.csv", "--epsilon", "1",
                   "--seed", "1", "--out", out, *flags)


def test_goals_parse_and_bad_ones_are_named():
    assert parse_goal("mse").weights is None and parse_goal("mae").metric == "mae"
    assert parse_goal("mse:0,1,4").weights == (0.0, 1.0, 4.0)
    assert parse_goal("relative:1e6,-,500").populations[1] != parse_goal(
        "relative:1e6,-,500").populations[1]  # NaN: the level is left out
    for bad in ("", "rmse", "mse:a,1", "mse:1,-", "relative", "relative:", "mse:-1,1"):
        with pytest.raises(InputError):
            parse_goal(bad)


def test_a_goal_chooses_and_records_the_split(capsys, table, tmp_path):
    code, _, err = release(capsys, table, tmp_path / "r", "--mechanism", "raw-laplace",
                           "--split-goal", "mse:1,1,8")
    assert code == 0, err
    assert "note: --split-goal chose the split" in err and "(closed form)" in err
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    shares = list(manifest["split"].values())
    # eps_l proportional to w_l^(1/3): 1, 1, 2
    assert shares == pytest.approx([0.25, 0.25, 0.5], rel=1e-9)
    assert manifest["input"]["split_goal"] == "mse:1,1,8"


def test_the_optimised_split_lowers_the_stated_error(capsys, table, tmp_path):
    code, _, err = release(capsys, table, tmp_path / "t", "--mechanism", "topdown",
                           "--split-goal", "relative:2000,500,50")
    assert code == 0, err
    goal, uniform = (float(v) for v in
                     err.split("a priori goal ")[1].split(" with")[0].split(" vs "))
    assert goal < uniform


@pytest.mark.parametrize("flags, words", [
    (["--mechanism", "raw-laplace", "--split-goal", "mse", "--split", "1,1,1"], "not both"),
    (["--mechanism", "raw-laplace", "--split-goal", "mse:1,1"], "one value per level"),
    (["--mechanism", "raw-laplace", "--split-goal", "mse:0,1,1"], "every level"),
    (["--mechanism", "topdown", "--split-goal", "psnr"], "--split-goal wants"),
])
def test_refusals_are_one_line(capsys, table, tmp_path, flags, words):
    out = tmp_path / "x"
    code, _, err = release(capsys, table, out, *flags)
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not out.exists()


def test_other_queries_are_refused(capsys, tmp_path):
    trips = tmp_path / "trips.csv"
    pd.DataFrame({"o": ["A", "B"], "d": ["B", "A"]}).to_csv(trips, index=False)
    code, _, err = run_cli(capsys, "release", trips, "--query", "flows", "--origin-levels", "o",
                           "--destination-levels", "d", "--structure-from-data",
                           "--mechanism", "inftda", "--rho", "1", "--invariant", "total",
                           "--seed", "1", "--split-goal", "mse", "--out", tmp_path / "f")
    assert code == 2 and "not of inftda (flows)" in err and err.count("\n") == 1, err

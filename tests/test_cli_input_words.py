"""Mistakes a new user makes on the command line, each answered by one line naming it (exit
status 2, nothing spent): a negative share in ``--split`` (however argparse is given it),
a count column that is missing (no level or category column offered for it), and
``--levels`` named finest first."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.errors import BudgetError, HierarchyError, HierdpError, InputError
from hierdp_core.privacy.ledger import Ledger

COUNTS = pd.DataFrame({"state": ["A", "A", "A", "B", "B"],
                       "county": ["a1", "a2", "a3", "b1", "b2"],
                       "population": [120, 0, 5, 87, 413]})


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "counts.csv"
    COUNTS.to_csv(path, index=False)
    return path


def release(capsys, data: Path, *extra, levels: str = "state,county",
            count: str = "population"):
    """A secure release of ``data`` (it would be charged to the ledger)."""
    return run(capsys, "release", data, "--levels", levels, "--count-column", count,
               "--structure-from-data", "--mechanism", "topdown", "--interval", "none",
               "--epsilon", "1", "--out", data.parent / "out", *extra)


def one_line(code: int, err: str) -> str:
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "np." not in err and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("split", [["--split", "-1,1,1"], ["--split=-1,1,1"],
                                   ["--split", "1, -1 ,1"], ["--split", "-.5,1,1"]])
def test_a_negative_share_is_named_as_typed(capsys, data, split):
    typed = "-.5" if "-.5" in split[-1] else "-1"
    err = one_line(*release(capsys, data, *split)[::2])
    assert err == (f"error: --split's shares must be non-negative numbers (one per level, "
                   f"root first), got {typed!r}")
    assert not Ledger().path.exists() or Ledger().datasets() == []


@pytest.mark.parametrize(("split", "said"), [
    ("nan,1,1", "got 'nan'"), ("1,inf,1", "got 'inf'"), ("0,0,0", "must not all be zero"),
    ("1,x,1", "got '1,x,1'"), ("1,1", "the split needs 3 weights")])
def test_other_bad_splits_spend_nothing(capsys, data, split, said):
    err = one_line(*release(capsys, data, "--split", split)[::2])
    assert said in err
    assert not Ledger().path.exists() or Ledger().datasets() == []


def test_negative_numbers_stay_values_of_other_options(capsys, data):
    err = one_line(*release(capsys, data, "--delta", "-1e-6", "--rho", "1")[::2])
    assert "expected one argument" not in err


def test_core_split_errors_show_plain_numbers():
    import numpy as np

    from hierdp_core.privacy.budget import split_shares
    from hierdp_core.privacy.split_optimiser import Goal
    from hierdp_core.ranges.baselines import level_shares

    with pytest.raises(BudgetError) as caught:
        split_shares(3, weights=[-1, 1, 1])
    assert str(caught.value) == "split weights must be non-negative numbers, got -1"
    weights = list(np.array([-1.0, 1.0]))  # numpy scalars, as a caller may hold them
    for refuse in (Goal.weighted, Goal.worst_relative, lambda w: level_shares(1, w)):
        with pytest.raises(HierdpError) as caught:
            refuse(weights)
        assert "np." not in str(caught.value) and "[-1.0, 1.0]" in str(caught.value)


def test_a_missing_count_column_is_never_matched_to_a_level(capsys, data):
    err = one_line(*release(capsys, data, count="count")[::2])
    assert "count column 'count' not found" in err and "did you mean" not in err
    err = one_line(*release(capsys, data, count="Population")[::2])
    assert err.endswith("did you mean 'population' for 'Population'?")


def test_the_core_offers_only_columns_that_could_be_counts():
    from hierdp_core.data.validate import validate_counts
    from hierdp_core.queries.counts import count_data_from_table

    numbered = COUNTS.assign(county=range(5))  # numeric codes: a level all the same
    with pytest.raises(InputError) as caught:
        count_data_from_table(numbered, ["state", "county"], count_column="count")
    assert "did you mean" not in str(caught.value)
    table = pd.DataFrame({"county": [1, 2], "counts": ["a", "b"], "counted": [3, 4]})
    with pytest.raises(InputError) as caught:
        validate_counts(table, "count", roles=["county"])
    assert str(caught.value).endswith("did you mean 'counted' for 'count'?")
def test_levels_named_finest_first_are_said_so(capsys, data):
    err = one_line(*release(capsys, data, levels="county,state")[::2])
    assert err == ("error: --levels go from the coarsest to the finest: did you mean "
                   "state,county?")
    geography = data.parent / "geography.csv"
    COUNTS[["state", "county"]].to_csv(geography, index=False)
    code, _, err = run(capsys, "release", data, "--levels", "county,state", "--count-column",
                       "population", "--geography", geography, "--mechanism", "topdown",
                       "--epsilon", "1", "--interval", "none", "--out", data.parent / "o2")
    assert one_line(code, err) == ("error: --levels go from the coarsest to the finest: did "
                                   "you mean state,county?")


def test_the_core_says_the_order_meant():
    from hierdp_core.errors import LevelOrderError
    from hierdp_core.hierarchy import build_hierarchy

    with pytest.raises(LevelOrderError) as caught:
        build_hierarchy(COUNTS, ["county", "state"])
    assert isinstance(caught.value, HierarchyError)
    assert caught.value.meant == ("state", "county")
    assert str(caught.value) == ("the levels go from the coarsest to the finest: did you "
                                 "mean state, county?")
    crossed = pd.DataFrame({"state": ["A", "A", "B"], "county": ["x", "y", "x"]})
    with pytest.raises(HierarchyError, match="do not nest") as caught:  # no order nests
        build_hierarchy(crossed, ["state", "county"])
    assert not isinstance(caught.value, LevelOrderError)
    one_code = pd.DataFrame({"state": ["A", "B"], "county": ["x", "x"]})
    with pytest.raises(HierarchyError, match="do not nest") as caught:  # x: not a level above
        build_hierarchy(one_code, ["state", "county"])
    assert not isinstance(caught.value, LevelOrderError)


@pytest.mark.parametrize(("query", "mechanism", "engine"), [
    ("group-sizes", "gs-topdown", "memory"), ("ranges", "identity", "memory"),
    ("flows", "inftda", "memory"), ("flows", "inftda", "dask")])
def test_a_split_of_the_wrong_length_spends_nothing_on_any_query(capsys, tmp_path, query,
                                                                   mechanism, engine):
    """Checked against the mechanism's levels before the write-ahead spend, as counts'
    (each was charged, then refused)."""
    from test_budget_extremes import release_argv

    argv = release_argv(tmp_path / query, query, mechanism, "--epsilon", "1",
                        *(["--delta", "1e-6"] if query == "flows" else []),
                        "--split", "1,1,1,1,1,1,1,1,1", "--engine", engine)
    err = one_line(*run(capsys, *argv)[::2])
    assert "weights" in err or "split" in err, err
    assert not Ledger().path.exists() or Ledger().datasets() == []


@pytest.mark.parametrize("rows, said", [
    ([["Total", "Total", 35725]], "region 'Total'"),  # a totals row
    ([["84", "84", 900]], "dep '84' (the code of its region)"),  # a subtotal row
])
def test_totals_rows_read_as_units_are_warned_about(capsys, tmp_path, rows, said):
    """With the units read from the data, a totals or subtotal row becomes a unit of its
    own and is added into the levels above: the release says so (exploration only)."""
    table = pd.DataFrame([["84", "01", 500], ["84", "07", 400], ["93", "13", 300], *rows],
                         columns=["region", "dep", "n"])
    table.to_csv(tmp_path / "t.csv", index=False)
    argv = ["release", tmp_path / "t.csv", "--levels", "region,dep", "--count-column", "n",
            "--structure-from-data", "--mechanism", "topdown", "--epsilon", 1, "--seed", 1]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "a")
    assert code == 0, err
    assert "warning: units that look like totals or subtotals: " + said in err
    assert "if they are totals rows, remove them" in err
    code, _, err = run(capsys, *argv, "--local-codes", "--out", tmp_path / "b")
    assert code == 0 and "(the code of its" not in err, err  # local codes repeat parents'
    table.iloc[:3].to_csv(tmp_path / "t.csv", index=False)
    code, _, err = run(capsys, *argv, "--out", tmp_path / "c")
    assert code == 0 and "totals" not in err, err
    # units a declared geography names are its units: no warning
    geography = table[["region", "dep"]]
    geography.to_csv(tmp_path / "g.csv", index=False)
    table.to_csv(tmp_path / "t.csv", index=False)
    declared = [a for a in argv if a != "--structure-from-data"]
    code, _, err = run(capsys, *declared, "--geography", tmp_path / "g.csv",
                       "--out", tmp_path / "d")
    assert code == 0 and "totals" not in err, err


def test_units_passing_through_a_level_are_no_subtotals(capsys, tmp_path):
    """With --ragged a unit without a county passes through the level with its state's
    code: no 'subtotal' to warn about."""
    pd.DataFrame({"state": ["06", "07", "11"], "county": ["06001", "", ""],
                  "n": [3, 4, 5]}).to_csv(tmp_path / "t.csv", index=False)
    code, _, err = run(capsys, "release", tmp_path / "t.csv", "--levels", "state,county",
                       "--count-column", "n", "--structure-from-data", "--ragged",
                       "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
                       "--out", tmp_path / "o")
    assert code == 0 and "totals" not in err, err

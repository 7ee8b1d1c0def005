"""The input model of issue 16 on the command line: wide tables (one column per category)
released in one command, empty count cells (--missing), units that skip a level
(--ragged). Every bad input is one `error:` line, exit status 2, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.cli.table import input_columns
from hierdp_core.export import read_release

BANDS = [f"age_{lo}_{lo + 4}" for lo in range(0, 100, 5)] + ["age_100"]
UNITS = pd.DataFrame({"state": ["06", "06", "06", "11", "11"],
                      "county": ["06001", "06003", "06005", "11001", "11003"]})


def census(seed: int = 0) -> pd.DataFrame:
    """Units x 21 age bands, as census tables are published."""
    rng = np.random.default_rng(seed)
    counts = pd.DataFrame(rng.integers(0, 400, (len(UNITS), len(BANDS))), columns=BANDS)
    return pd.concat([UNITS, counts], axis=1)


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    data, geography = tmp_path / "census.csv", tmp_path / "geography.csv"
    census().to_csv(data, index=False)
    pd.concat([UNITS, pd.DataFrame({"state": ["11"], "county": ["11009"]})]).to_csv(
        geography, index=False)
    return data, geography


def release(capsys, data, out, *extra, seed=True):
    return run(capsys, "release", data, "--levels", "state,county", "--mechanism", "topdown",
               "--epsilon", 1, *(["--seed", 1] if seed else []), "--out", out, *extra)


def one_error(code, err, *words):
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    for word in words:
        assert word in err, err


def totals(out: Path) -> pd.DataFrame:
    table, _ = read_release(out)
    return table


# ---- wide tables ---------------------------------------------------------------------------
def test_a_wide_census_table_releases_in_one_command_and_is_publishable(capsys, files,
                                                                        tmp_path):
    data, geography = files
    out = tmp_path / "out"
    code, stdout, err = release(capsys, data, out, "--wide", "age_*", "--geography", geography,
                                "--category-values", f"category={'|'.join(BANDS)}",
                                seed=False)
    assert code == 0, err
    assert "publishable: yes" in stdout
    table, manifest = read_release(out)
    assert list(table["category"].unique()) == BANDS  # the declared values, in their order
    assert manifest["publishable"] is True
    spec = manifest["input"]
    assert "wide" not in spec and spec["wide_name"] == "category"  # the header: data
    assert spec["wide_patterns"] == ["age_*"]
    assert spec["category_values"] == {"category": BANDS}
    assert spec["missing"] == "error" and spec["ragged"] is False
    assert "11009" in set(table["node_id"].str.rsplit("/", n=1).str[-1])  # the empty unit
    code, report, _ = run(capsys, "evaluate", data, out)
    assert code == 0 and "mae" in report


def test_wide_names_patterns_and_count_column(capsys, files, tmp_path):
    data, _ = files
    out = tmp_path / "out"
    code, _, err = release(capsys, data, out, "--wide", "age_0_4,age_5_9,age_1*",
                           "--wide-name", "age", "--count-column", "people",
                           "--structure-from-data")
    assert code == 0, err
    table, manifest = read_release(out)
    assert manifest["input"]["wide_patterns"] == ["age_0_4", "age_5_9", "age_1*"]  # as given
    assert manifest["input"]["count_column"] == "people"
    assert table.loc[table["level"] == 0, "value"].size == 5


def test_wide_category_values_may_be_declared(capsys, files, tmp_path):
    data, geography = files
    out = tmp_path / "out"
    declared = "|".join(reversed(BANDS))
    code, _, err = release(capsys, data, out, "--wide", "age_*", "--geography", geography,
                           "--category-values", f"category={declared}")
    assert code == 0, err
    assert list(totals(out)["category"].unique()) == BANDS[::-1]


def test_wide_household_sizes_and_ages(capsys, tmp_path):
    sizes = UNITS.assign(hh1=[4, 2, 0, 1, 3], hh2=[1, 0, 2, 2, 2], hh7=[0, 1, 0, 0, 1])
    data = tmp_path / "households.csv"
    sizes.to_csv(data, index=False)
    out = tmp_path / "gs"
    code, _, err = run(capsys, "release", data, "--levels", "state,county", "--query",
                       "group-sizes", "--wide", "hh*", "--max-size", 8, "--mechanism",
                       "gs-noisy", "--epsilon", 1, "--seed", 1, "--structure-from-data",
                       "--out", out)
    assert code == 0, err
    assert json.loads((out / "manifest.json").read_text())["input"]["size_column"] == \
        "category"
    ages = UNITS.assign(age_0=[1, 2, 3, 4, 5], age_1=[0, 1, 0, 1, 0], age_2=[3, 3, 3, 3, 3])
    data = tmp_path / "ages.csv"
    ages.to_csv(data, index=False)
    out = tmp_path / "rg"
    code, _, err = run(capsys, "release", data, "--levels", "state,county", "--query",
                       "ranges", "--wide", "age_*", "--attribute", "age", "--domain", "0-2",
                       "--mechanism", "identity", "--epsilon", 1, "--seed", 1,
                       "--structure-from-data", "--out", out)
    assert code == 0, err
    table, manifest = read_release(out)
    assert manifest["input"]["attribute"] == "age"
    assert sorted(table["category"].astype(str).unique()) == ["0", "1", "2"]


def test_input_columns_resolve_wide_patterns_against_the_header():
    from dataclasses import replace

    from hierdp_core.config import ReleaseConfig

    cfg = ReleaseConfig(mechanism="topdown", levels=("state", "county"), wide="age_*,total",
                        wide_name="category")
    assert input_columns(cfg) is None  # a pattern without the header: read everything
    header = ["state", "county", "note", *BANDS, "total"]
    assert input_columns(cfg, header) == ["state", "county", *BANDS, "total"]
    cfg = replace(cfg, wide="age_0_4,age_5_9")
    assert input_columns(cfg) == ["state", "county", "age_0_4", "age_5_9"]


# ---- missing cells -------------------------------------------------------------------------
@pytest.fixture
def holes(tmp_path) -> Path:
    table = census()
    table["age_0_4"] = table["age_0_4"].astype(float)
    table.loc[[1, 3], "age_0_4"] = np.nan
    path = tmp_path / "holes.csv"
    table.to_csv(path, index=False)
    return path


def test_missing_cells_are_refused_by_default(capsys, holes, tmp_path):
    out = tmp_path / "out"
    code, _, err = release(capsys, holes, out, "--wide", "age_*", "--structure-from-data")
    one_error(code, err, "2 empty count cell(s)", "'age_0_4' (2)", "rows [2, 4]",
              "--missing zero", "--missing drop")
    assert not out.exists()


@pytest.mark.parametrize("policy, words", [("zero", "2 empty count cell(s) counted as 0"),
                                           ("drop", "2 empty count cell(s) left out")])
def test_missing_cells_zero_or_drop_with_one_note(capsys, holes, tmp_path, policy, words):
    out = tmp_path / "out"
    code, _, err = release(capsys, holes, out, "--wide", "age_*", "--structure-from-data",
                           "--missing", policy)
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and words in notes[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"]["missing"] == policy
    assert "2" not in json.dumps(manifest["input"]["missing"])  # the policy, no count


def test_missing_cells_of_a_long_table(capsys, tmp_path):
    path = tmp_path / "long.csv"
    UNITS.assign(n=[3, None, 4, 5, None]).to_csv(path, index=False)
    out = tmp_path / "out"
    code, _, err = release(capsys, path, out, "--count-column", "n", "--structure-from-data")
    one_error(code, err, "'n' (2)", "rows [2, 5]")
    code, _, err = release(capsys, path, out, "--count-column", "n", "--structure-from-data",
                           "--missing", "drop")
    assert code == 0 and "2 empty count cell(s) left out" in err


# ---- ragged hierarchies --------------------------------------------------------------------
RAGGED = pd.DataFrame({"state": ["06", "06", "06", "11", "11"],
                       "county": ["06001", "06001", "", "", ""],
                       "city": ["Oakland", "Berkeley", "Sacramento", "Washington", "Other"],
                       "n": [10, 20, 30, 40, 50]})


@pytest.fixture
def ragged(tmp_path) -> tuple[Path, Path]:
    data, geography = tmp_path / "ragged.csv", tmp_path / "geo.csv"
    RAGGED.to_csv(data, index=False)
    RAGGED.drop(columns="n").to_csv(geography, index=False)
    return data, geography


def test_units_that_skip_a_level_pass_through_it_and_totals_add_up(capsys, ragged, tmp_path):
    data, geography = ragged
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "release", data, "--levels", "state,county,city",
                            "--count-column", "n", "--mechanism", "topdown", "--epsilon", 1,
                            "--ragged", "--geography", geography, "--out", out)
    assert code == 0, err
    assert "publishable: yes" in stdout
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "3 empty level code(s) filled" in notes[0] and "county: 3" in notes[0]
    table, manifest = read_release(out)
    assert manifest["input"]["ragged"] is True
    counties = table[table["level"] == 2]
    assert len(counties) == 3  # 06001, and 06 and 11 passing through the county level
    value = dict(zip(table["node_id"], table["value"], strict=True))
    for level in (1, 2):  # every parent equals the sum of its children
        children = table[table["level"] == level + 1]
        sums = children.groupby("parent_id")["value"].sum()
        for parent, total in sums.items():
            assert value[parent] == total
    assert table.loc[table["level"] == 0, "value"].iloc[0] >= 0


def test_without_ragged_an_empty_code_suggests_it(capsys, ragged, tmp_path):
    data, _ = ragged
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--levels", "state,county,city",
                       "--count-column", "n", "--mechanism", "topdown", "--epsilon", 1,
                       "--seed", 1, "--structure-from-data", "--out", out)
    one_error(code, err, "'county' has 3 missing value(s)", "rows [3, 4, 5]", "--ragged")
    assert not out.exists()


def test_ragged_flows_fill_each_end(capsys, tmp_path):
    trips = pd.DataFrame({"o_state": ["06", "07", "11"], "o_county": ["06001", "", ""],
                          "d_state": ["11", "06", "07"], "d_county": ["", "06001", ""],
                          "trips": [5, 6, 7]})
    path = tmp_path / "trips.csv"
    trips.to_csv(path, index=False)
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", path, "--query", "flows", "--origin-levels",
                       "o_state,o_county", "--destination-levels", "d_state,d_county",
                       "--count-column", "trips", "--mechanism", "inftda", "--epsilon", 1,
                       "--delta", 1e-6, "--seed", 1, "--invariant", "total",
                       "--structure-from-data", "--ragged", "--out", out)
    assert code == 0, err
    assert "o_county: 2" in err and "d_county: 2" in err


# ---- every bad input: one line, exit 2, nothing written --------------------------------------
@pytest.mark.parametrize("flags, words", [
    (["--wide", "pop_*"], ["no column matches 'pop_*' (--wide)", "the table has"]),
    (["--wide", "age_*,county"], ["'county' is one of the wide columns"]),
    (["--wide", "age_*", "--count-column", "state"], ["'state'", "count column",
                                                      "one role"]),
    (["--wide", "age_*", "--wide-name", "county"], ["'county'", "both a level and a category"]),
    (["--wide", "age_*", "--missing", "maybe"], ["argument --missing: invalid choice"]),
])
def test_bad_wide_inputs_are_one_line(capsys, files, tmp_path, flags, words):
    data, _ = files
    out = tmp_path / "out"
    code, _, err = release(capsys, data, out, "--structure-from-data", *flags)
    one_error(code, err, *words)
    assert not out.exists()


def test_wide_flows_are_refused(capsys, files, tmp_path):
    data, _ = files
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--query", "flows", "--origin-levels",
                       "state", "--destination-levels", "county", "--wide", "age_*",
                       "--mechanism", "inftda", "--epsilon", 1, "--delta", 1e-6, "--seed", 1,
                       "--invariant", "total", "--structure-from-data", "--out", out)
    one_error(code, err, "--wide does not apply to flows")
    assert not out.exists()


def test_ragged_errors_are_one_line(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"state": ["06", ""], "county": ["a", "b"], "n": [1, 2]}).to_csv(path,
                                                                                 index=False)
    out = tmp_path / "out"
    code, _, err = release(capsys, path, out, "--count-column", "n", "--ragged",
                           "--structure-from-data")
    one_error(code, err, "'state' has 1 missing value(s)")
    assert "--ragged" not in err
    pd.DataFrame({"state": ["06", "06"], "county": ["06", ""], "n": [1, 2]}).to_csv(
        path, index=False)
    code, _, err = release(capsys, path, out, "--count-column", "n", "--ragged",
                           "--structure-from-data")
    one_error(code, err, "row 2 has no county", "row 1 has a real county '06'")
    assert not out.exists()


def test_a_ragged_geography_without_the_rule_suggests_it(capsys, ragged, tmp_path):
    _, geography = ragged
    data = tmp_path / "explicit.csv"  # the data spells the units passing through
    RAGGED.assign(county=["06001", "06001", "06", "11", "11"]).to_csv(data, index=False)
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--levels", "state,county,city",
                       "--count-column", "n", "--mechanism", "topdown", "--epsilon", 1,
                       "--geography", geography, "--out", out)
    one_error(code, err, "geo.csv", "--ragged")
    assert not out.exists()

"""Declared categories for wide tables on the command line (issue 27, item 2): the category
values of ``--wide`` come from ``--category-values``, never from the header; a declared
value with no column is released as 0; a band is its own category and never one of its
ends. Acceptance: a band table's release equals the long-form release of the same bands."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.export import read_release

UNITS = pd.DataFrame({"state": ["06", "06", "06", "11", "11"],
                      "county": ["06001", "06003", "06005", "11001", "11003"]})
BANDS = {"age_0_19": "0-19", "age_20_39": "20-39", "age_40_64": "40-64", "age_65_plus": "65+"}
DECLARED = "0-19|20-39|40-64|65+|unknown"  # 'unknown': declared, no column


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(7)
    counts = pd.DataFrame(rng.integers(0, 300, (len(UNITS), len(BANDS))), columns=list(BANDS))
    wide = pd.concat([UNITS, counts], axis=1)
    paths = {name: tmp_path / f"{name}.csv" for name in ("wide", "long", "geography")}
    wide.to_csv(paths["wide"], index=False)
    long = wide.melt(id_vars=["state", "county"], var_name="age", value_name="n")
    long["age"] = long["age"].map(BANDS)
    long.sample(frac=1, random_state=3).to_csv(paths["long"], index=False)  # shuffled rows
    pd.concat([UNITS, pd.DataFrame({"state": ["11"], "county": ["11009"]})]).to_csv(
        paths["geography"], index=False)
    return paths, wide


def release(capsys, data, out, *extra, seed=True):
    return run(capsys, "release", data, "--levels", "state,county", "--mechanism", "topdown",
               "--epsilon", 1, *(["--seed", 5] if seed else []), "--out", out, *extra)


def one_error(code, err, *words):
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    for word in words:
        assert word in err, err


def test_a_band_table_releases_exactly_as_the_long_form_of_the_same_bands(capsys, files,
                                                                         tmp_path):
    paths, _ = files
    common = ["--geography", paths["geography"], "--category-values", f"age={DECLARED}",
              "--count-column", "n"]
    code, _, err = release(capsys, paths["wide"], tmp_path / "w", "--wide", "age_*",
                           "--wide-name", "age", *common)
    assert code == 0, err
    code, _, err = release(capsys, paths["long"], tmp_path / "l", "--categories", "age",
                           *common)
    assert code == 0, err
    wide, wide_manifest = read_release(tmp_path / "w")
    long, long_manifest = read_release(tmp_path / "l")
    pd.testing.assert_frame_equal(wide, long)
    assert list(wide["category"].unique()) == DECLARED.split("|")  # the bands, declared order
    assert wide_manifest["input"]["structure"] == "declared"
    assert wide_manifest["input"]["category_values"] == {"age": DECLARED.split("|")}


def test_a_declared_value_with_no_column_is_released_and_evaluate_rebuilds_it(capsys, files,
                                                                              tmp_path):
    paths, wide = files
    out = tmp_path / "out"
    code, stdout, err = release(capsys, paths["wide"], out, "--wide", "age_*", "--geography",
                                paths["geography"], "--category-values",
                                f"category={DECLARED}", "--invariant", "total",
                                "--invariant", "category-totals", seed=False)
    assert code == 0, err
    assert "publishable: yes" in stdout
    table, manifest = read_release(out)
    assert set(table["category"]) == set(DECLARED.split("|"))
    unknown = table[table["category"] == "unknown"]
    assert len(unknown) == len(table) // 5  # every unit, including the empty one
    root = table[table["level"] == 0].set_index("category")["value"]
    # the declared invariants: the total and the root's count of every band
    assert root.sum() == wide[list(BANDS)].to_numpy().sum()
    assert manifest["publishable"] is True
    code, report, err = run(capsys, "evaluate", paths["wide"], out)
    assert code == 0 and "mae" in report, err


def test_the_header_is_not_a_declaration(capsys, files, tmp_path):
    paths, _ = files
    out = tmp_path / "out"
    code, _, err = release(capsys, paths["wide"], out, "--wide", "age_*", "--geography",
                           paths["geography"], seed=False)
    one_error(code, err, "--category-values category=", "e.g. 0_19",
              "header is not a declaration", "--structure-from-data")
    assert not out.exists()


def test_exploration_may_read_the_header_and_says_it_is_not_publishable(capsys, files,
                                                                        tmp_path):
    paths, _ = files
    out = tmp_path / "out"
    code, stdout, err = release(capsys, paths["wide"], out, "--wide", "age_*",
                                "--structure-from-data", seed=False)
    assert code == 0, err
    table, manifest = read_release(out)
    assert list(table["category"].unique()) == list(BANDS)  # the bands by name, not an end
    assert manifest["publishable"] is False and manifest["input"]["structure"] == "from-data"
    assert "publishable: NO" in stdout


@pytest.mark.parametrize("declared, words", [
    ("age=19|39|64|65", ["'age_0_19'", "band 0-19", "never one of its ends"]),
    ("age=0-19|20-39|40-64", ["'age_65_plus'", "name none of the declared values"]),
    ("age=0-19|0_19|20-39|40-64|65+", ["read the same"]),
])
def test_columns_that_name_no_declared_band_are_one_line_errors(capsys, files, tmp_path,
                                                                declared, words):
    paths, _ = files
    out = tmp_path / "out"
    code, _, err = release(capsys, paths["wide"], out, "--wide", "age_*", "--wide-name",
                           "age", "--geography", paths["geography"], "--category-values",
                           declared)
    one_error(code, err, *words)
    assert not out.exists()


def test_ranges_refuse_band_columns_and_group_sizes_take_an_open_band_at_the_top(capsys,
                                                                                 files,
                                                                                 tmp_path):
    paths, _ = files
    code, _, err = run(capsys, "release", paths["wide"], "--levels", "state,county",
                       "--query", "ranges", "--wide", "age_*", "--attribute", "age",
                       "--domain", "0-65", "--mechanism", "identity", "--epsilon", 1,
                       "--seed", 1, "--geography", paths["geography"], "--out",
                       tmp_path / "rg")
    one_error(code, err, "'age_0_19' is the band 0-19, not one age value",
              "never counted at one of its ends")
    sizes = UNITS.assign(hh1=[4, 2, 0, 1, 3], hh2=[1, 0, 2, 2, 2], hh3_plus=[0, 1, 0, 0, 1])
    data = tmp_path / "households.csv"
    sizes.to_csv(data, index=False)
    args = ["release", data, "--levels", "state,county", "--query", "group-sizes", "--wide",
            "hh*", "--mechanism", "gs-noisy", "--epsilon", 1, "--seed", 1,
            "--structure-from-data"]
    code, _, err = run(capsys, *args, "--max-size", 5, "--out", tmp_path / "gs5")
    one_error(code, err, "'hh3_plus' is the band 3+", "declared top, 5+")
    code, _, err = run(capsys, *args, "--max-size", 3, "--out", tmp_path / "gs3")
    assert code == 0, err
    assert json.loads((tmp_path / "gs3" / "manifest.json").read_text())["input"][
        "max_size"] == 3


def test_the_columns_a_pattern_matched_are_published_nowhere(capsys, files, tmp_path):
    """The header of a pivoted table says which bands occur in the data: the manifest keeps
    the declared pattern, and neither it nor the saved configuration nor the command's
    output names a matched column (the evaluation rebuilds the table from the pattern)."""
    paths, _ = files
    out, config = tmp_path / "out", tmp_path / "release.json"
    code, stdout, err = release(capsys, paths["wide"], out, "--wide", "age_*", "--wide-name",
                                "age", "--category-values", f"age={DECLARED}", "--geography",
                                paths["geography"], "--save-config", config, seed=False)
    assert code == 0, err
    _, manifest = read_release(out)
    assert manifest["publishable"] is True
    assert manifest["input"]["wide_patterns"] == ["age_*"] and "wide" not in manifest["input"]
    written = (out / "manifest.json").read_text() + config.read_text() + stdout + err
    assert not [column for column in BANDS if column in written]
    code, report, err = run(capsys, "evaluate", paths["wide"], out)
    assert code == 0 and "mae" in report, err

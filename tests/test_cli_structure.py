"""The declared structure on the command line: ``--geography``, ``--category-values``,
``--domain``, ``--structure-from-data`` and ``--invariant``; a release without a declared
structure, or with records outside it, is one error line (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli as run

PEOPLE = pd.DataFrame({"state": ["06", "06", "06", "36"],
                       "county": ["06001", "06037", "06037", "36061"],
                       "sex": ["F", "M", "F", "F"], "age": [4, 40, 71, 33],
                       "household": ["h1", "h2", "h2", "h3"]})
GEOGRAPHY = pd.DataFrame({"state": ["06", "06", "36", "36", "48"],
                          "state_name": ["California"] * 2 + ["New York"] * 2 + ["Texas"],
                          "county": ["06001", "06037", "36061", "36047", "48201"],
                          "county_name": ["Alameda", "Los Angeles", "New York", "Kings",
                                          "Harris"]})


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    data, geography = tmp_path / "people.csv", tmp_path / "units.csv"
    PEOPLE.to_csv(data, index=False)
    GEOGRAPHY.to_csv(geography, index=False)
    return data, geography


def counts(capsys, data, out, *extra):
    return run(capsys, "release", data, "--levels", "state,county", "--mechanism", "topdown",
               "--epsilon", 1, "--seed", 1, "--out", out, *extra)


def read(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)


QUERIES = {
    "counts": ([], ["--geography", "--category-values", "--structure-from-data"]),
    "group-sizes": (["--query", "group-sizes", "--group-column", "household", "--max-size", 4,
                     "--mechanism", "gs-noisy"], ["--geography", "--structure-from-data"]),
    "flows": (["--query", "flows", "--origin-levels", "state", "--destination-levels",
               "county", "--mechanism", "stability-histogram", "--delta", 1e-6],
              ["--geography", "--structure-from-data"]),
    "ranges": (["--query", "ranges", "--attribute", "age", "--mechanism", "dawa"],
               ["--geography", "--domain", "--structure-from-data"]),
}


@pytest.mark.parametrize("query", list(QUERIES))
def test_a_release_without_a_declared_structure_names_the_flags(capsys, files, tmp_path,
                                                                 query):
    data, _ = files
    extra, flags = QUERIES[query]
    levels = [] if query == "flows" else ["--levels", "state,county"]
    code, _, err = run(capsys, "release", data, *levels, "--mechanism", "topdown", *extra,
                       "--epsilon", 1, "--out", tmp_path / "out")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert all(flag in err for flag in flags), err
    assert not (tmp_path / "out").exists()


def test_declared_units_and_categories_without_records_are_released(capsys, files, tmp_path):
    data, geography = files
    code, out, err = counts(capsys, data, tmp_path / "out", "--geography", geography,
                            "--names", "state=state_name,county=county_name",
                            "--category-values", "sex=M|F|X")
    assert code == 0, err
    table = read(tmp_path / "out")
    assert {"48", "48/48201", "36/36047"} <= set(table["node_id"])  # nobody lives there
    assert table["category"].tolist()[:3] == ["M", "F", "X"]  # X: declared, never observed
    assert set(table.loc[table["node_id"] == "48/48201", "category"]) == {"M", "F", "X"}
    assert "Harris" in set(table["label"]) and "Kings" in set(table["label"])
    spec = json.loads((tmp_path / "out" / "manifest.json").read_text())["input"]
    assert spec["structure"] == "declared" and spec["geography"]["file"] == "units.csv"
    assert spec["category_values"] == {"sex": ["M", "F", "X"]} and spec["invariants"] == []


def test_records_outside_the_structure_are_one_error_line(capsys, files, tmp_path):
    data, geography = files
    bad = PEOPLE.copy()
    bad.loc[[1, 2], "county"] = "06999"
    bad.loc[3, "state"] = "06"  # 36061 put under California
    bad.to_csv(data, index=False)
    code, _, err = counts(capsys, data, tmp_path / "out", "--geography", geography)
    assert code == 2 and err.count("\n") == 1
    assert "3 data row(s) lie outside the declared geography (units.csv)" in err
    assert "county '06999' (not in the geography)" in err
    assert "county '36061' under state '06'" in err
    code, _, err = counts(capsys, data, tmp_path / "out", "--geography", geography,
                          "--category-values", "sex=F")
    assert code == 2 and "outside the declared geography" in err  # units are checked first
    PEOPLE.to_csv(data, index=False)
    code, _, err = counts(capsys, data, tmp_path / "out", "--geography", geography,
                          "--category-values", "sex=F")
    assert code == 2 and "1 row(s) have 'sex' value(s) outside the declared values (F): 'M'" \
        in err


@pytest.mark.parametrize("extra, needle", [
    (["--categories", "sex"], "--category-values COL=V1|V2"),
    (["--structure-from-data"], "not both"),
    (["--category-values", "age=1|2", "--categories", "sex"], "not in --categories"),
    (["--category-values", "sex"], "COLUMN=V1|V2"),
])
def test_inconsistent_declarations(capsys, files, tmp_path, extra, needle):
    data, geography = files
    code, _, err = counts(capsys, data, tmp_path / "out", "--geography", geography, *extra)
    assert code == 2 and needle in err and err.count("\n") == 1


def test_the_exact_total_is_declared(capsys, files, tmp_path):
    data, geography = files
    code, _, err = counts(capsys, data, tmp_path / "a", "--geography", geography,
                          "--invariant", "total", "--epsilon", 0.1)
    assert code == 0, err
    table = read(tmp_path / "a")
    assert table.loc[table["level"] == "0", "value"].tolist() == ["4"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["invariants"] == ["root total"]
    assert manifest["input"]["invariants"] == ["total"]
    code, _, err = counts(capsys, data, tmp_path / "b", "--geography", geography,
                          "--param", "root_invariant=true")
    assert code == 2 and "declare it with --invariant total" in err
    code, _, err = run(capsys, "release", data, "--levels", "state,county", "--mechanism",
                       "raw-laplace", "--epsilon", 1, "--geography", geography, "--invariant",
                       "total", "--out", tmp_path / "c")
    assert code == 2 and "cannot keep the total exactly" in err
    code, _, err = run(capsys, "release", data, "--levels", "state,county", "--query", "ranges",
                       "--attribute", "age", "--domain", "0-99", "--mechanism", "dawa",
                       "--epsilon", 1, "--geography", geography, "--invariant", "groups",
                       "--out", tmp_path / "d")
    assert code == 2 and "drop --invariant groups" in err


def test_with_categories_the_root_s_count_of_every_category_is_declared_too(capsys, files,
                                                                            tmp_path):
    """The root's cells are kept as they are: with categories, ``--invariant total``
    alone would publish the one man of the whole table exactly, as 1."""
    data, geography = files
    sexes = ("--categories", "sex", "--category-values", "sex=F|M")
    code, _, err = counts(capsys, data, tmp_path / "a", "--geography", geography, *sexes,
                          "--invariant", "total")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "declare it with --invariant category-totals" in err
    assert "without categories" in err and not (tmp_path / "a").exists()
    code, _, err = counts(capsys, data, tmp_path / "b", "--geography", geography, *sexes,
                          "--invariant", "category-totals")
    assert code == 2 and "declare it with --invariant total" in err
    code, _, err = counts(capsys, data, tmp_path / "c", "--geography", geography, *sexes,
                          "--invariant", "total", "--invariant", "category-totals")
    assert code == 0, err
    table = read(tmp_path / "c")
    root = table[table["level"] == "0"].set_index("category")["value"]
    assert root.to_dict() == {"F": "3", "M": "1"}  # published exactly, as declared
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["invariants"] == ["root total", "root count of every category"]
    assert manifest["input"]["invariants"] == ["total", "category-totals"]


def test_evaluate_finds_and_checks_the_geography(capsys, files, tmp_path):
    data, geography = files
    out = tmp_path / "out"
    assert counts(capsys, data, out, "--geography", geography,
                  "--category-values", "sex=F|M")[0] == 0
    code, report, err = run(capsys, "evaluate", data, out, "--json")
    assert code == 0, err
    assert [row["level"] for row in json.loads(report) if row["bin"] == "all"] == [0, 1, 2]
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.move(data, moved / data.name)
    shutil.move(geography, moved / "public-units.csv")
    code, _, err = run(capsys, "evaluate", moved / data.name, out)
    assert code == 2 and "'units.csv'" in err and "--geography" in err
    code, _, err = run(capsys, "evaluate", moved / data.name, out, "--geography",
                       moved / "public-units.csv")
    assert code == 0, err
    GEOGRAPHY.iloc[:4].to_csv(moved / "public-units.csv", index=False)
    code, _, err = run(capsys, "evaluate", moved / data.name, out, "--geography",
                       moved / "public-units.csv")
    assert code == 2 and "sha256" in err

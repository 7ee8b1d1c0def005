"""The `hierdp` command line: contracts of `mechanisms`, `release`, `evaluate`, and one-line
errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.data.samples import synthetic_us_like

REQUIRED_KEYS = {"name", "description", "reference", "queries", "privacy", "private",
                 "consistent", "parameters"}


SEX_AGE = ["--category-values", "sex=F|M", "--category-values", "age_group=0-17|18-64|65+"]


@pytest.fixture(scope="module")
def state_county_csv(tmp_path_factory) -> Path:
    """Synthetic counties, and beside them (``geography.csv``) the public list of counties
    with one more state (99, county 99001) that has nobody in the data."""
    path = tmp_path_factory.mktemp("input") / "counties.csv"
    table = synthetic_us_like(seed=5, n_states=12, n_counties=300)
    table.to_csv(path, index=False)
    units = table[["state", "county"]].drop_duplicates()
    extra = pd.DataFrame({"state": ["99"], "county": ["99001"]})
    pd.concat([units, extra]).to_csv(path.parent / "geography.csv", index=False)
    return path




def check_consistent(table: pd.DataFrame, by_category: bool) -> None:
    """Every parent equals the sum of its children (per category)."""
    keys = ["parent_id", "category"] if by_category else ["parent_id"]
    children = table[table["level"] > 0].groupby(keys)["value"].sum()
    parents = table.set_index(["node_id", "category"] if by_category else ["node_id"])["value"]
    parents.index = parents.index.set_names(keys)
    joined = children.to_frame("children").join(parents.rename("parent"))
    assert len(joined) > 0
    assert (joined["children"] == joined["parent"]).all()


def test_mechanisms_json_lists_the_contract(capsys):
    code, out, _ = run(capsys, "mechanisms", "--json")
    assert code == 0
    entries = json.loads(out)
    names = {e["name"] for e in entries}
    assert {"raw-laplace", "raw-geometric", "raw-discrete-gaussian", "least-squares",
            "topdown"} <= names
    for e in entries:
        assert REQUIRED_KEYS <= set(e)
        assert set(e["queries"]) <= {"counts", "group-sizes", "flows", "ranges"}
        assert e["privacy"] in ("pure-dp", "zcdp", "approx-dp")
        assert isinstance(e["private"], bool) and isinstance(e["consistent"], bool)
    assert next(e for e in entries if e["name"] == "topdown")["consistent"] is True


def test_mechanisms_table(capsys):
    code, out, _ = run(capsys, "mechanisms")
    assert code == 0 and "topdown" in out and "least-squares" in out


@pytest.mark.parametrize("categories", [None, "sex,age_group"])
def test_topdown_release_adds_up(capsys, tmp_path, state_county_csv, categories):
    out_dir = tmp_path / "rel"
    geography = state_county_csv.parent / "geography.csv"
    args = ["release", state_county_csv, "--levels", "state,county", "--count-column", "count",
            "--mechanism", "topdown", "--epsilon", "1", "--seed", "3", "--out", out_dir,
            "--geography", geography, "--duplicates", "sum"]  # a row per sex and age group
    if categories:
        args += ["--categories", categories, *SEX_AGE]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    table = pd.read_csv(out_dir / "release.csv", dtype={"node_id": str, "parent_id": str},
                        keep_default_na=False)
    expected = ["level", "level_name", "node_id", "parent_id", "label"]
    expected += ["category", "value"] if categories else ["value"]
    assert list(table.columns) == expected + ["lower", "upper"]  # --interval 0.9 by default
    assert table["value"].dtype.kind == "i" and (table["value"] >= 0).all()
    assert set(table["level"]) == {0, 1, 2}
    assert table.loc[table["level"] == 0, "parent_id"].eq("").all()
    check_consistent(table, by_category=bool(categories))
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["mechanism"]["name"] == "topdown"
    assert manifest["privacy"]["definition"] == "pure-dp"
    assert manifest["privacy"]["epsilon"] == pytest.approx(1.0)
    assert manifest["randomness"] == {"mode": "exploration", "source": "numpy-pcg64", "seed": 3}
    assert set(manifest["split"]) == {"total", "state", "county"}
    assert sum(manifest["split"].values()) == pytest.approx(1.0)
    assert len(manifest["ledger"]) == 3
    assert manifest["hierdp_version"] and manifest["created_utc"]
    assert manifest["input"]["fingerprint"]["method"] == "hmac-sha256"
    assert manifest["input"]["levels"] == ["state", "county"]
    assert manifest["input"]["structure"] == "declared"
    assert manifest["input"]["geography"]["file"] == "geography.csv"
    assert len(manifest["input"]["geography"]["sha256"]) == 64
    if categories:
        assert manifest["input"]["category_values"] == {"sex": ["F", "M"],
                                                        "age_group": ["0-17", "18-64", "65+"]}
        assert list(table["category"].iloc[:6]) == ["F / 0-17", "F / 18-64", "F / 65+",
                                                    "M / 0-17", "M / 18-64", "M / 65+"]
    # the declared state 99 has nobody in the data and is released like any other
    assert {"99", "99/99001"} <= set(table["node_id"])


def test_release_with_rho_split_and_parquet(capsys, tmp_path, state_county_csv):
    out_dir = tmp_path / "rel"
    code, _, err = run(capsys, "release", state_county_csv, "--levels", "state,county",
                       "--count-column", "count", "--mechanism", "topdown", "--rho", "0.5",
                       "--split", "0,1,3", "--seed", "1", "--format", "csv,parquet",
                       "--structure-from-data", "--duplicates", "sum", "--out", out_dir)
    assert code == 0, err
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["privacy"]["definition"] == "zcdp"
    assert manifest["privacy"]["rho"] == pytest.approx(0.5)
    assert manifest["split"] == pytest.approx({"total": 0.0, "state": 0.25, "county": 0.75})
    assert manifest["ledger"][2]["noise"] == "discrete-gaussian"
    parquet = pd.read_parquet(out_dir / "release.parquet")
    csv = pd.read_csv(out_dir / "release.csv", keep_default_na=False,
                      dtype={"node_id": str, "parent_id": str})
    assert np.array_equal(parquet["value"].to_numpy(), csv["value"].to_numpy())


def test_evaluate_reports_metrics_by_level(capsys, tmp_path, state_county_csv):
    out_dir = tmp_path / "rel"
    assert run(capsys, "release", state_county_csv, "--levels", "state,county",
               "--count-column", "count", "--categories", "sex", "--mechanism",
               "least-squares", "--epsilon", "2", "--seed", "0", "--out", out_dir,
               "--geography", state_county_csv.parent / "geography.csv",
               "--category-values", "sex=F|M", "--duplicates", "sum")[0] == 0
    # the geography named in the manifest is found beside the input
    code, out, err = run(capsys, "evaluate", state_county_csv, out_dir, "--json")
    assert code == 0, err
    assert "confidential" in err
    rows = pd.DataFrame(json.loads(out))
    overall = rows[rows["bin"] == "all"].set_index("level")
    assert list(overall.index) == [0, 1, 2]
    assert (overall["mae"] > 0).all() and (overall["mae"] < 50).all()
    assert (overall["consistency_violations"] == 0).all()
    # the same with the true table named by --truth (issue 30's spelling)
    code, again, _ = run(capsys, "evaluate", out_dir, "--truth", state_county_csv, "--json")
    assert code == 0 and json.loads(again) == json.loads(out)
    for argv, wrong in (([out_dir], "needs the true table"),
                        ([state_county_csv, out_dir, "--truth", state_county_csv], "twice")):
        code, _, err = run(capsys, "evaluate", *argv)
        assert code == 2 and wrong in err and len(err.strip().splitlines()) == 1, err


def test_evaluate_warns_when_the_truth_is_not_the_releases_input(capsys, monkeypatch,
                                                                tmp_path, state_county_csv):
    """evaluate --truth TABLE compared a release with any table: when the publisher's key
    is here and TABLE's keyed fingerprint is not the manifest's, one warning line says so
    (and the errors are still reported); none when it matches or without the key."""
    out_dir = tmp_path / "rel"
    assert run(capsys, "release", state_county_csv, "--levels", "state,county",
               "--count-column", "count", "--mechanism", "topdown", "--epsilon", "1",
               "--seed", "0", "--structure-from-data", "--duplicates", "sum",
               "--out", out_dir)[0] == 0
    other = tmp_path / "other.csv"
    table = pd.read_csv(state_county_csv, dtype={"state": str, "county": str})
    table.assign(count=table["count"] + 1).to_csv(other, index=False)
    warning = (f"warning: {other} is not the input this release was made from (its keyed "
               "fingerprint differs): the errors below compare with another table\n")
    code, out, err = run(capsys, "evaluate", out_dir, "--truth", other)
    assert code == 0 and "mae" in out and err.count(warning) == 1, err
    code, out, err = run(capsys, "evaluate", out_dir, "--truth", state_county_csv)
    assert code == 0 and "mae" in out and "warning" not in err, err
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))  # no key here
    code, out, err = run(capsys, "evaluate", out_dir, "--truth", other)
    assert code == 0 and "mae" in out and "warning" not in err, err


BAD_INPUTS = [
    (["--levels", "state,cnty", "--count-column", "count"], "cnty"),
    (["--levels", "state,county", "--count-column", "nope"], "nope"),
    (["--levels", "state,county", "--count-column", "count", "--epsilon", "0"], "epsilon"),
    (["--levels", "state,county", "--count-column", "count", "--mechanism", "magic"], "magic"),
    (["--levels", "state,county", "--count-column", "count", "--rho", "1"], "exactly one"),
    (["--levels", "state,county", "--count-column", "count", "--split", "1,2"], "3 weights"),
    (["--levels", "state,county", "--count-column", "count", "--param", "noise=cauchy"],
     "noise"),
]


@pytest.mark.parametrize("extra, needle", BAD_INPUTS)
def test_bad_input_gives_one_clear_line(capsys, tmp_path, state_county_csv, extra, needle):
    args = ["release", state_county_csv, "--out", tmp_path / "o", "--structure-from-data",
            "--duplicates", "sum"]
    args += extra
    if "--mechanism" not in extra:
        args += ["--mechanism", "topdown"]
    if "--epsilon" not in extra:
        args += ["--epsilon", "1"]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert needle in err and "Traceback" not in err


def test_bad_tables_name_the_problem(capsys, tmp_path):
    cases = {
        "nest.csv": ("state,county,count\nA,x,1\nB,x,2\n", "more than one"),
        "neg.csv": ("state,county,count\nA,x,1\nA,y,-2\n", "negative"),
        "frac.csv": ("state,county,count\nA,x,1.5\nA,y,2\n", "integ"),
        "empty.csv": ("state,county,count\n", "no data rows"),
    }
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        code, _, err = run(capsys, "release", path, "--levels", "state,county",
                           "--count-column", "count", "--mechanism", "topdown",
                           "--epsilon", "1", "--structure-from-data", "--out", tmp_path / "o")
        assert code == 2, name
        assert needle in err.lower(), (name, err)


def test_module_and_console_script_entry_points(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hierdp_core", "mechanisms", "--json"],
                            capture_output=True, text=True, check=True)
    assert "topdown" in result.stdout
    script = Path(sys.executable).parent / "hierdp"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                            check=True)
    assert result.stdout.startswith("hierdp ")


def test_release_labels_come_from_name_columns(capsys, tmp_path):
    path = tmp_path / "named.csv"
    pd.DataFrame({"state": ["06", "06", "36"], "state_name": ["California"] * 2 + ["New York"],
                  "county": ["06001", "06037", "36061"],
                  "county_name": ["Alameda", "Los Angeles", "New York County"],
                  "n": [10, 20, 30]}).to_csv(path, index=False)
    out_dir = tmp_path / "rel"
    code, _, err = run(capsys, "release", path, "--levels", "state,county", "--count-column",
                       "n", "--names", "state=state_name,county=county_name", "--mechanism",
                       "topdown", "--epsilon", "1", "--seed", "0", "--structure-from-data",
                       "--out", out_dir)
    assert code == 0, err
    table = pd.read_csv(out_dir / "release.csv", dtype=str, keep_default_na=False)
    assert table["label"].tolist() == ["total", "California", "New York", "Alameda",
                                       "Los Angeles", "New York County"]
    assert table["node_id"].tolist()[-1] == "36/36061"
    code, _, err = run(capsys, "release", path, "--levels", "state,county", "--count-column",
                       "n", "--names", "state", "--mechanism", "topdown", "--epsilon", "1",
                       "--structure-from-data", "--out", out_dir)
    assert code == 2 and err.startswith("error:") and "LEVEL=COLUMN" in err

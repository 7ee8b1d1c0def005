"""The flows contract of the CLI: `hierdp release ... --query flows` on trip records writes
one row per released node of the O/D tree (`ORIGIN>DESTINATION` ids), consistent with an
exact root for the top-down mechanisms; evaluate reports the per-level flow metrics; the
manifest holds no true value; bad input is one error line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.mechanisms.base import list_mechanisms

N_TRIPS = 3000


@pytest.fixture(scope="module")
def trips_csv(tmp_path_factory):
    """3,000 trips between 12 counties in 3 states, concentrated on a few pairs."""
    rng = np.random.default_rng(6)
    counties = [f"{s:02d}{c:03d}" for s in range(1, 4) for c in range(1, 5)]
    weights = rng.pareto(1.5, size=len(counties) ** 2) + 0.01
    pairs = rng.choice(len(counties) ** 2, size=N_TRIPS, p=weights / weights.sum())
    o, d = np.divmod(pairs, len(counties))
    o, d = np.asarray(counties)[o], np.asarray(counties)[d]
    table = pd.DataFrame({"o_state": [c[:2] for c in o], "o_county": o,
                          "d_state": [c[:2] for c in d], "d_county": d})
    path = tmp_path_factory.mktemp("flows") / "trips.csv"
    table.to_csv(path, index=False)
    # the public geography (columns named by the common level names): the 12 counties and
    # a fourth state whose one county has no trip
    units = pd.DataFrame({"county": counties + ["04001"]})
    units.insert(0, "state", units["county"].str[:2])
    units.to_csv(path.parent / "geography.csv", index=False)
    return path


#: the top-down mechanisms keep the number of trips exactly under bounded neighbours
KEEPS_TOTAL = {"inftda", "tda-l2", "tda-linf-milp"}


def release(capsys, path, out_dir, mechanism, *extra):
    invariant = ("--invariant", "total") if mechanism in KEEPS_TOTAL else ()
    return run(capsys, "release", path, "--query", "flows", "--origin-levels",
               "o_state,o_county", "--destination-levels", "d_state,d_county", "--mechanism",
               mechanism, "--epsilon", 1, "--delta", 1e-8, "--seed", 4, "--out", out_dir,
               "--geography", path.parent / "geography.csv", *invariant, *extra)


def read(out_dir):
    return pd.read_csv(out_dir / "release.csv", dtype=str, keep_default_na=False).astype(
        {"level": int, "value": int})


CONSISTENT = [i.name for i in list_mechanisms("flows") if i.consistent]


@pytest.mark.parametrize("mechanism", CONSISTENT)
def test_consistent_flow_release(capsys, tmp_path, trips_csv, mechanism):
    code, out, err = release(capsys, trips_csv, tmp_path, mechanism)
    assert code == 0, err
    table = read(tmp_path)
    assert list(table.columns) == ["level", "level_name", "node_id", "parent_id", "label",
                                   "origin_id", "destination_id", "value", "lower", "upper"]  # --interval 0.9 by default
    assert (table["value"] > 0).all()
    assert sorted(set(table["level"])) == [0, 1, 2, 3, 4]
    assert (table["node_id"] == table["origin_id"] + ">" + table["destination_id"]).all()
    assert table["node_id"].is_unique
    children = table[table["level"] > 0].groupby("parent_id")["value"].sum()
    parents = table.set_index("node_id")["value"]
    assert (parents.loc[children.index].to_numpy() == children.to_numpy()).all()
    # every parent id names a node one level up
    level_of = table.set_index("node_id")["level"]
    below = table[table["level"] > 0]
    assert (level_of.loc[below["parent_id"]].to_numpy() == below["level"].to_numpy() - 1).all()
    if mechanism != "stability-histogram":  # the top-down ones keep n exactly
        assert table.loc[table["level"] == 0, "value"].tolist() == [N_TRIPS]
        assert table.loc[table["level"] == 0, "node_id"].tolist() == ["total>total"]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    # the declared state 04 and its county, without trips, are areas of the release
    assert manifest["hierarchy"]["units_per_level"] == [1, 4, 13]
    assert manifest["input"]["structure"] == "declared"
    assert manifest["input"]["invariants"] == (["total"] if mechanism in KEEPS_TOTAL else [])


def test_county_level_ids_and_levels(capsys, tmp_path, trips_csv):
    assert release(capsys, trips_csv, tmp_path, "inftda")[0] == 0
    table = read(tmp_path)
    names = table.groupby("level")["level_name"].first().tolist()
    assert names == ["total", "total>state", "state>state", "state>county", "county>county"]
    cross = table[table["level"] == 3].iloc[0]
    assert len(cross["origin_id"]) == 2 and len(cross["destination_id"]) == 5
    assert cross["parent_id"] == cross["origin_id"] + ">" + cross["destination_id"][:2]


def test_manifest_has_the_privacy_record_and_no_true_values(capsys, tmp_path, trips_csv):
    assert release(capsys, trips_csv, tmp_path, "inftda", "--split-preset", "geometric")[0] == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["privacy"]["definition"] == "zcdp"
    assert manifest["privacy"]["epsilon_tight"] <= 1.0 + 1e-6
    assert manifest["tree"]["kind"] == "destination"
    assert manifest["input"]["origin_levels"] == ["o_state", "o_county"]
    shares = list(manifest["split"].values())
    assert shares[0] == 0 and shares[-1] > shares[1]  # geometric: finer levels get more
    text = (tmp_path / "manifest.json").read_text()
    truth = pd.read_csv(trips_csv).groupby(["o_county", "d_county"]).size()
    assert f'"{truth.max()}"' not in text  # no true count is written as a value


def test_evaluate_reports_flow_metrics(capsys, tmp_path, trips_csv):
    assert release(capsys, trips_csv, tmp_path, "tda-l2")[0] == 0
    code, out, err = run(capsys, "evaluate", trips_csv, tmp_path, "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["level"] for r in rows] == [0, 1, 2, 3, 4]
    assert rows[0]["max_abs_error"] == 0 and rows[-1]["true_nonzero"] > 0
    assert {"fdr", "fnr", "mae", "rmse", "cpc"} <= set(rows[0])


@pytest.mark.parametrize("argv, message", [
    (["--origin-levels", "o_state,o_county"], "--destination-levels"),
    (["--origin-levels", "o_state", "--destination-levels", "d_state,d_county"],
     "same number"),
    (["--origin-levels", "o_state,o_county", "--destination-levels", "d_state,d_cnty"],
     "d_cnty"),
])
def test_bad_flow_arguments_are_one_error_line(capsys, tmp_path, trips_csv, argv, message):
    code, out, err = run(capsys, "release", trips_csv, "--query", "flows", *argv,
                         "--mechanism", "inftda", "--epsilon", 1, "--delta", 1e-8,
                         "--invariant", "total", "--structure-from-data", "--out", tmp_path)
    assert code == 2 and message in err and "Traceback" not in err


def test_flow_geography_columns_and_exact_total(capsys, tmp_path, trips_csv):
    geography = pd.read_csv(trips_csv.parent / "geography.csv", dtype=str)
    named_as_origins = tmp_path / "origins.csv"
    geography.rename(columns={"state": "o_state", "county": "o_county"}).to_csv(
        named_as_origins, index=False)
    code, _, err = release(capsys, trips_csv, tmp_path / "a", "inftda", "--geography",
                           named_as_origins)
    assert code == 0, err
    wrong = tmp_path / "wrong.csv"
    geography.rename(columns={"county": "area"}).to_csv(wrong, index=False)
    code, _, err = release(capsys, trips_csv, tmp_path / "b", "inftda", "--geography", wrong)
    assert code == 2 and "o_state,o_county or d_state,d_county or state,county" in err
    # bounded neighbours keep n exactly: declared, or noised with unbounded neighbours
    argv = ["release", trips_csv, "--query", "flows", "--origin-levels", "o_state,o_county",
            "--destination-levels", "d_state,d_county", "--mechanism", "inftda", "--rho",
            0.5, "--seed", 1, "--geography", trips_csv.parent / "geography.csv"]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "c")
    assert code == 2 and "--invariant total" in err and "neighbouring=unbounded" in err
    code, _, err = run(capsys, *argv, "--param", "neighbouring=unbounded", "--out",
                       tmp_path / "d")
    assert code == 0, err
    assert json.loads((tmp_path / "d" / "manifest.json").read_text())["invariants"] == []


def test_trips_outside_the_geography_are_refused(capsys, tmp_path, trips_csv):
    trips = pd.read_csv(trips_csv, dtype=str)
    trips.loc[[5, 9], "d_county"] = "01999"
    trips.loc[7, "o_state"] = "02"  # a county of another state under state 02
    assert trips.loc[7, "o_county"][:2] != "02"
    path = tmp_path / "trips.csv"
    trips.to_csv(path, index=False)
    code, _, err = release(capsys, path, tmp_path / "out", "inftda", "--geography",
                           trips_csv.parent / "geography.csv")
    assert code == 2 and err.count("\n") == 1
    assert f"1 data row(s) lie outside the declared geography (geography.csv): o_county " \
        f"'{trips.loc[7, 'o_county']}' under o_state '02'" in err
    trips.loc[7, "o_state"] = trips.loc[7, "o_county"][:2]
    trips.to_csv(path, index=False)
    code, _, err = release(capsys, path, tmp_path / "out", "inftda", "--geography",
                           trips_csv.parent / "geography.csv")
    assert code == 2 and "2 data row(s)" in err and "d_county '01999'" in err


def test_mechanism_for_another_query_is_refused(capsys, tmp_path, trips_csv):
    code, out, err = release(capsys, trips_csv, tmp_path, "topdown")
    assert code == 2 and "does not release flows" in err


def test_a_secure_flow_release_is_publishable(capsys, tmp_path, trips_csv):
    """An (epsilon, delta) request that the flow mechanism draws under rho-zCDP: its ledger
    entry (approximate DP) covers the release's rho (the verdict converts, it does not
    compare the definitions' names)."""
    code, _, err = run(capsys, "release", trips_csv, "--query", "flows", "--origin-levels",
                       "o_state,o_county", "--destination-levels", "d_state,d_county",
                       "--mechanism", "inftda", "--invariant", "total", "--epsilon", 1,
                       "--delta", 1e-8, "--out", tmp_path, "--geography",
                       trips_csv.parent / "geography.csv")
    assert code == 0, err
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["privacy"]["definition"] == "zcdp"
    assert manifest["publishable"] is True, manifest["not_publishable_because"]


@pytest.mark.parametrize("names", ["xyz=nonexistent", "state=state_name"])
def test_names_are_refused_for_flows(capsys, trips_csv, tmp_path, names):
    """--names was ignored by flows without a word, even naming a column that does not
    exist: one line says that flows are labelled by their codes and to drop it."""
    out = tmp_path / "out"
    code, stdout, err = release(capsys, trips_csv, out, "inftda", "--names", names)
    assert (code, stdout) == (2, "") and err.count("\n") == 1, err
    assert "--names does not apply to flows releases" in err and "drop it" in err
    assert "<level>_name" in err and not out.exists()


def test_a_geography_shared_by_ends_named_with_any_prefix(capsys, tmp_path):
    """A Norwegian commuter table names its ends bo_ (home) and arb_ (work): the public
    geography (fylke, kommune) was refused as lacking 'bo_fylke|arb_fylke'; two names that
    differ in their first word alone share the level's name."""
    pd.DataFrame({"fylke": ["03", "11", "11"], "kommune": ["0301", "1103", "1106"]}).to_csv(
        tmp_path / "geo.csv", index=False)
    pd.DataFrame({"bo_fylke": ["03", "11"], "bo_kommune": ["0301", "1103"],
                  "arb_fylke": ["11", "03"], "arb_kommune": ["1106", "0301"],
                  "pendlere": [40, 25]}).to_csv(tmp_path / "od.csv", index=False)
    code, _, err = run(capsys, "release", tmp_path / "od.csv", "--query", "flows",
                       "--origin-levels", "bo_fylke,bo_kommune", "--destination-levels",
                       "arb_fylke,arb_kommune", "--count-column", "pendlere", "--geography",
                       tmp_path / "geo.csv", "--mechanism", "inftda", "--invariant", "total",
                       "--rho", 1, "--seed", 1, "--out", tmp_path / "r")
    assert code == 0, err
    levels = json.loads((tmp_path / "r" / "manifest.json").read_text())["hierarchy"]
    assert levels["levels"][-1] == "kommune"

"""The publishable verdict on the command line: which releases say ``"publishable": true``,
the reasons of the others, non-private mechanisms refused by default, and nothing secret in
a release folder (no key, no seed of a publishable release, no true value)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli as run

COUNTS = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b2"],
                       "people": [120, 0, 87, 413]})
GEOGRAPHY = pd.DataFrame({"state": ["A", "A", "B", "B", "C"],
                          "county": ["a1", "a2", "b1", "b2", "c1"]})


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    data, geography = tmp_path / "counts.csv", tmp_path / "geography.csv"
    COUNTS.to_csv(data, index=False)
    GEOGRAPHY.to_csv(geography, index=False)
    return data, geography


def release(capsys, data: Path, out: Path, *extra) -> tuple[int, str, str, dict | None]:
    code, stdout, stderr = run(capsys, "release", data, "--levels", "state,county",
                               "--count-column", "people", "--epsilon", "1", "--out", out,
                               *extra)
    manifest = out / "manifest.json"
    return code, stdout, stderr, json.loads(manifest.read_text()) if manifest.exists() else None


def test_secure_topdown_over_a_declared_geography_is_publishable(capsys, files, tmp_path):
    data, geography = files
    out = tmp_path / "out"
    code, stdout, _, manifest = release(capsys, data, out, "--mechanism", "topdown",
                                        "--geography", geography)
    assert code == 0
    assert manifest["publishable"] is True and manifest["not_publishable_because"] == []
    assert "publishable: yes" in stdout
    assert "seed" not in manifest["randomness"]
    assert sorted(p.name for p in out.rglob("*")) == ["manifest.json", "release.csv"]
    table = pd.read_csv(out / "release.csv", dtype=str)
    assert "C/c1" in set(table["node_id"])  # declared, absent from the data, released
    losses = [m["privacy_loss"] for m in manifest["randomness"]["measurements"]]
    budgets = [row["budget"] for row in manifest["ledger"] if row["budget"]]
    assert losses == pytest.approx(budgets, rel=1e-9)


@pytest.mark.parametrize(("extra", "reason"), [
    (("--mechanism", "topdown", "--seed", "3"), "seeded generator"),
    (("--mechanism", "topdown", "--structure-from-data"), "structure from data"),
])
def test_exploration_releases_say_why_they_are_not_publishable(capsys, files, tmp_path, extra,
                                                                reason):
    data, geography = files
    extra = extra if "--structure-from-data" in extra else (*extra, "--geography", geography)
    code, stdout, _, manifest = release(capsys, data, tmp_path / "out", *extra)
    assert code == 0
    assert manifest["publishable"] is False
    assert any(reason in r for r in manifest["not_publishable_because"])
    assert "publishable: NO" in stdout and reason in stdout


def test_nonprivate_mechanism_is_refused_then_allowed_and_marked(capsys, tmp_path):
    ages = pd.DataFrame({"region": ["N", "N", "S"], "age": [3, 40, 70], "n": [5, 9, 4]})
    regions = pd.DataFrame({"region": ["N", "S"]})
    ages.to_csv(tmp_path / "ages.csv", index=False)
    regions.to_csv(tmp_path / "regions.csv", index=False)
    argv = ["release", tmp_path / "ages.csv", "--query", "ranges", "--levels", "region",
            "--attribute", "age", "--count-column", "n", "--domain", "0-99",
            "--geography", tmp_path / "regions.csv", "--mechanism", "dawa-reference",
            "--epsilon", "1", "--out", tmp_path / "out"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1
    assert "not differentially private" in err and "dawa" in err
    assert "--allow-nonprivate" in err and not (tmp_path / "out").exists()
    code, _, err = run(capsys, *argv, "--allow-nonprivate")
    assert code == 0 and "warning" in err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["publishable"] is False
    assert any("dawa-reference" in r for r in manifest["not_publishable_because"])


def test_paper_chain_is_refused_naming_the_private_version(capsys, tmp_path):
    people = pd.DataFrame({"region": ["N", "N", "S"], "household": ["h1", "h1", "h2"]})
    people.to_csv(tmp_path / "people.csv", index=False)
    code, _, err = run(capsys, "release", tmp_path / "people.csv", "--query", "group-sizes",
                       "--levels", "region", "--group-column", "household", "--max-size", "4",
                       "--structure-from-data", "--mechanism", "gs-mc-chain-paper",
                       "--epsilon", "1", "--out", tmp_path / "out")
    assert code == 2 and "gs-mc-chain" in err and "not differentially private" in err

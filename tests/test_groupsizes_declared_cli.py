"""``hierdp release --query group-sizes --groups FILE --min-size M``: neighbours D and D'
(D without the only member of a one-person household) get the same exactly released
numbers of groups with the groups file; without it a release keeping them exactly says
"publishable: NO" with the reason; a bad groups file is one error line and exit status 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import run_cli as run
from test_groupsizes_declared import GEOGRAPHY, GROUPS, NEIGHBOUR, PEOPLE

from hierdp_core.export import read_release


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("declared")
    PEOPLE.to_csv(folder / "people.csv", index=False)
    NEIGHBOUR.to_csv(folder / "neighbour.csv", index=False)
    GEOGRAPHY.to_csv(folder / "geography.csv", index=False)
    GROUPS.to_csv(folder / "groups.csv", index=False)
    return folder


def release(capsys, files, out, *extra, data="people.csv", mechanism="gs-mc-dp",
            invariant="groups"):
    return run(capsys, "release", files / data, "--query", "group-sizes", "--levels",
               "state,county", "--group-column", "household", "--max-size", 5,
               "--geography", files / "geography.csv", "--mechanism", mechanism,
               "--invariant", invariant, "--epsilon", 1, "--interval", "none",
               "--key-file", files / "key", "--out", out, *extra)


def group_counts(folder, key_file) -> pd.Series:
    table, _ = read_release(folder, key_file)
    return table.groupby("node_id")["value"].sum()


@pytest.mark.parametrize("min_size", ["0", "1"])
def test_neighbours_release_the_same_group_counts_with_the_groups_file(capsys, files,
                                                                       tmp_path, min_size):
    for data in ("people.csv", "neighbour.csv"):
        code, out, err = release(capsys, files, tmp_path / data, "--seed", 4, "--groups",
                                 files / "groups.csv", "--min-size", min_size, data=data)
        assert code == 0, err
        assert "publishable: NO (the noise comes from a seeded generator" in out
        assert "group counts read" not in out
    d, d2 = (group_counts(tmp_path / data, files / "key")
               for data in ("people.csv", "neighbour.csv"))
    assert d.equals(d2) and d["A"] == 803 and d["C/C0"] == 2  # declared, not the data's
    _, manifest = read_release(tmp_path / "people.csv", files / "key")
    assert manifest["input"]["min_size"] == int(min_size)
    assert manifest["input"]["groups"]["file"] == "groups.csv"
    assert len(manifest["input"]["groups"]["sha256"]) == 64
    assert manifest["privacy"]["group_counts"] == "declared"
    assert manifest["categories"][0] == min_size
    code, out, err = run(capsys, "evaluate", files / "people.csv", tmp_path / "people.csv",
                         "--key-file", files / "key", "--json")
    assert code == 0, err
    assert (pd.DataFrame(json.loads(out))["faithfulness_gap"] == 0).all()


def test_without_the_groups_file_exact_group_counts_are_not_publishable(capsys, files,
                                                                        tmp_path):
    code, out, err = release(capsys, files, tmp_path / "undeclared", "--secure",
                             "--budget-total", "2", mechanism="gs-topdown", invariant="total")
    assert code == 0, err
    assert "publishable: NO (group counts read from the confidential data, not declared" in out
    manifest = json.loads((tmp_path / "undeclared" / "manifest.json").read_text())
    assert manifest["publishable"] is False
    assert manifest["privacy"]["group_counts"] == "from-data"
    code, out, err = release(capsys, files, tmp_path / "declared", "--secure", "--groups",
                             files / "groups.csv", mechanism="gs-topdown", invariant="total")
    assert code == 0, err
    assert "publishable: yes" in out
    assert json.loads((tmp_path / "declared" / "manifest.json").read_text())["publishable"]


def test_estimated_group_counts_need_no_groups_file(capsys, files, tmp_path):
    code, out, err = run(capsys, "release", files / "people.csv", "--query", "group-sizes",
                         "--levels", "state,county", "--group-column", "household",
                         "--max-size", 5, "--geography", files / "geography.csv",
                         "--mechanism", "gs-topdown", "--param", "groups=estimated",
                         "--epsilon", 1, "--secure", "--interval", "none", "--key-file",
                         files / "key", "--out", tmp_path / "estimated")
    assert code == 0, err
    assert "publishable: yes" in out and "published exactly" not in out


def write(folder, name, table) -> str:
    table.to_csv(folder / name, index=False)
    return str(folder / name)


@pytest.mark.parametrize(("table", "message"), [
    (GROUPS.assign(county=["Z9", *GROUPS["county"][1:]]), "outside the declared geography"),
    (GROUPS.iloc[1:], "missing"),
    (GROUPS.assign(groups=[-1, *GROUPS["groups"][1:]]), "negative"),
    (GROUPS.assign(groups=[2.5, *GROUPS["groups"][1:]]), "2.5"),
    (GROUPS.rename(columns={"groups": "n"}), "exactly one of the columns"),
    (GROUPS.assign(groups=GROUPS["groups"] - 1), "contradict the data"),
])
def test_a_bad_groups_file_is_one_line_and_exit_2(capsys, files, tmp_path, table, message):
    path = write(tmp_path, "bad-groups.csv", table)
    code, out, err = release(capsys, files, tmp_path / "out", "--seed", 1, "--groups", path)
    assert code == 2 and out == "", out
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--structure-from-data"], "--groups needs --geography"),
    (["--min-size", "5"], "min_size"),
    (["--min-size", "-1"], "min_size"),
])
def test_groups_and_min_size_refusals(capsys, files, tmp_path, extra, message):
    argv = ["release", files / "people.csv", "--query", "group-sizes", "--levels",
            "state,county", "--group-column", "household", "--max-size", 5, "--mechanism",
            "gs-topdown", "--invariant", "total", "--epsilon", 1, "--seed", 1, "--groups",
            files / "groups.csv", "--out", tmp_path / "out", *extra]
    if "--structure-from-data" not in extra:
        argv += ["--geography", files / "geography.csv"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err

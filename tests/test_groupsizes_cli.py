"""The group-size contract of the CLI: `hierdp release ... --query group-sizes` on person
records writes one row per region x size, consistent and faithful for consistent
mechanisms; evaluate reports the group-size metrics; bad input is one error line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.mechanisms.base import list_mechanisms

MAX_SIZE = 64


@pytest.fixture(scope="module")
def people_csv(tmp_path_factory):
    """About 2,000 households in 3 states x 9 counties; sizes 1..8, a few group quarters."""
    rng = np.random.default_rng(4)
    rows = []
    for h in range(2000):
        state = rng.integers(3)
        county = f"{state:02d}{rng.integers(3):03d}"
        size = rng.choice([1, 2, 3, 4, 5, 8, 70], p=[.27, .34, .16, .13, .06, .035, .005])
        rows += [(f"{state:02d}", county, f"h{h}")] * int(size)
    path = tmp_path_factory.mktemp("gs") / "people.csv"
    pd.DataFrame(rows, columns=["state", "county", "household"]).to_csv(path, index=False)
    return path




def release(capsys, path, out_dir, mechanism, *extra):
    return run(capsys, "release", path, "--levels", "state,county", "--query", "group-sizes",
               "--group-column", "household", "--max-size", MAX_SIZE, "--mechanism",
               mechanism, "--epsilon", 1, "--seed", 2, "--out", out_dir, *extra)


CONSISTENT = [i.name for i in list_mechanisms("group-sizes") if i.consistent and i.private]


@pytest.mark.parametrize("mechanism", CONSISTENT)
def test_consistent_group_size_release(capsys, tmp_path, people_csv, mechanism):
    code, out, err = release(capsys, people_csv, tmp_path, mechanism)
    assert code == 0, err
    table = pd.read_csv(tmp_path / "release.csv", dtype={"node_id": str, "parent_id": str,
                                                         "category": str},
                        keep_default_na=False)
    assert list(table.columns) == ["level", "level_name", "node_id", "parent_id", "label",
                                   "category", "value"]
    assert sorted(set(table["category"]), key=int) == [str(s) for s in range(MAX_SIZE + 1)]
    assert table["value"].dtype.kind == "i" and (table["value"] >= 0).all()
    per_level = table.groupby("level")["value"].sum()
    assert (per_level == 2000).all()  # G at every level
    children = table[table["level"] > 0].groupby(["parent_id", "category"])["value"].sum()
    parents = table.set_index(["node_id", "category"])["value"]
    parents.index = parents.index.set_names(["parent_id", "category"])
    joined = children.to_frame("c").join(parents.rename("p"))
    assert len(joined) == 4 * (MAX_SIZE + 1) and (joined["c"] == joined["p"]).all()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["mechanism"]["name"] == mechanism
    assert manifest["input"]["query"] == "group-sizes" and manifest["input"]["max_size"] == 64
    assert "number of groups" in " ".join(manifest["invariants"])

    code, out, err = run(capsys, "evaluate", people_csv, tmp_path, "--json")
    assert code == 0, err
    metrics = pd.DataFrame(json.loads(out))
    assert (metrics["consistency_violations"] == 0).all()
    assert (metrics["faithfulness_gap"] == 0).all() and (metrics["l1"] >= 0).all()


def test_group_size_mechanisms_are_registered_for_group_sizes():
    infos = list_mechanisms("group-sizes")
    assert {"gs-noisy", "gs-topdown"} <= {i.name for i in infos}
    assert all(i.queries == ("group-sizes",) for i in infos)


@pytest.mark.parametrize("extra, message", [
    ((), None),
    (("--max-size", "0"), "max_size"),
    (("--categories", "state"), "--categories"),
])
def test_bad_group_size_arguments(capsys, tmp_path, people_csv, extra, message):
    if message is None:  # no --max-size at all
        code, _, err = run(capsys, "release", people_csv, "--levels", "state,county",
                           "--query", "group-sizes", "--group-column", "household",
                           "--mechanism", "gs-topdown", "--epsilon", 1, "--out", tmp_path)
        assert code == 2 and "--max-size" in err
        return
    code, _, err = release(capsys, people_csv, tmp_path, "gs-topdown", *extra)
    assert code == 2 and err.startswith("error:") and message in err


def test_count_mechanism_refuses_group_sizes_and_back(capsys, tmp_path, people_csv):
    code, _, err = release(capsys, people_csv, tmp_path, "topdown")
    assert code == 2 and "does not release group-sizes" in err
    code, _, err = run(capsys, "release", people_csv, "--levels", "state,county",
                       "--mechanism", "gs-topdown", "--epsilon", 1, "--out", tmp_path)
    assert code == 2 and "does not release counts" in err

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
    # the public geography: 4 counties per state (county 003 of each is empty) and a state 03
    # with no household
    units = [(f"{s:02d}", f"{s:02d}{c:03d}") for s in range(3) for c in range(4)]
    pd.DataFrame(units + [("03", "03000")], columns=["state", "county"]).to_csv(
        path.parent / "geography.csv", index=False)
    return path


#: what each group-size mechanism publishes exactly (its --invariant): every region's number
#: of groups where the noisy cumulative histograms are pinned to G_v (gs-mc-*, Kuo), the
#: total G where only the root is (gs-mh-*, gs-topdown, the paper chain), nothing (gs-noisy)
EXACT = {"gs-noisy": None, "gs-mh-relaxed": "total", "gs-mh-dp": "total",
         "gs-mc-relaxed": "groups", "gs-mc-dp": "groups", "gs-mc-chain": "groups",
         "gs-mc-chain-paper": "total", "gs-topdown": "total", "gs-kuo-hc": "groups",
         "gs-kuo-hg": "groups", "gs-kuo-hierarchical": "groups"}


def release(capsys, path, out_dir, mechanism, *extra):
    invariant = ("--invariant", EXACT[mechanism]) if EXACT.get(mechanism) else ()
    return run(capsys, "release", path, "--levels", "state,county", "--query", "group-sizes",
               "--group-column", "household", "--max-size", MAX_SIZE, "--mechanism",
               mechanism, "--epsilon", 1, "--seed", 2, "--out", out_dir,
               "--geography", path.parent / "geography.csv", *invariant, *extra)


CONSISTENT = [i.name for i in list_mechanisms("group-sizes") if i.consistent and i.private]


def test_every_group_size_mechanism_says_what_it_keeps_exactly():
    from hierdp_core.invariants import exact_quantities
    from hierdp_core.mechanisms.base import get_mechanism

    assert set(EXACT) == {i.name for i in list_mechanisms("group-sizes")}
    for name, exact in EXACT.items():
        assert exact_quantities(get_mechanism(name), "group-sizes", {}) == (
            [exact] if exact else []), name


@pytest.mark.parametrize("mechanism", CONSISTENT)
def test_consistent_group_size_release(capsys, tmp_path, people_csv, mechanism):
    code, out, err = release(capsys, people_csv, tmp_path, mechanism)
    assert code == 0, err
    table = pd.read_csv(tmp_path / "release.csv", dtype={"node_id": str, "parent_id": str,
                                                         "category": str},
                        keep_default_na=False)
    assert list(table.columns) == ["level", "level_name", "node_id", "parent_id", "label",
                                   "category", "value", "lower", "upper"]  # --interval 0.9 by default
    # sizes 1..N: --min-size defaults to 1 (a household has a member)
    assert sorted(set(table["category"]), key=int) == [str(s) for s in range(1, MAX_SIZE + 1)]
    assert table["value"].dtype.kind == "i" and (table["value"] >= 0).all()
    per_level = table.groupby("level")["value"].sum()
    assert (per_level == 2000).all()  # G at every level
    children = table[table["level"] > 0].groupby(["parent_id", "category"])["value"].sum()
    parents = table.set_index(["node_id", "category"])["value"]
    parents.index = parents.index.set_names(["parent_id", "category"])
    joined = children.to_frame("c").join(parents.rename("p"))
    assert len(joined) == 5 * MAX_SIZE and (joined["c"] == joined["p"]).all()
    # declared regions without any household are released (every level sums to G: they
    # hold no group)
    assert {"03", "03/03000", "00/00003", "02/02003"} <= set(table["node_id"])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["mechanism"]["name"] == mechanism
    assert manifest["input"]["query"] == "group-sizes" and manifest["input"]["max_size"] == 64
    assert manifest["input"]["min_size"] == 1
    assert manifest["input"]["structure"] == "declared"
    assert manifest["input"]["invariants"] == [EXACT[mechanism]]
    kept = " ".join(manifest["invariants"])
    assert ("every region" in kept) == (EXACT[mechanism] == "groups") and "groups" in kept

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
                           "--mechanism", "gs-topdown", "--invariant", "total",
                           "--structure-from-data", "--epsilon", 1, "--out", tmp_path)
        assert code == 2 and "--max-size" in err
        return
    code, _, err = release(capsys, people_csv, tmp_path, "gs-topdown", *extra)
    assert code == 2 and err.startswith("error:") and message in err


def test_exact_group_counts_must_be_declared(capsys, tmp_path, people_csv):
    geography = people_csv.parent / "geography.csv"
    argv = ["release", people_csv, "--levels", "state,county", "--query", "group-sizes",
            "--group-column", "household", "--max-size", 8, "--epsilon", 1, "--seed", 2,
            "--geography", geography, "--out", tmp_path / "out"]
    code, _, err = run(capsys, *argv, "--mechanism", "gs-mc-dp")
    assert code == 2 and err.count("\n") == 1
    assert "every region's number of groups" in err and "--invariant groups" in err
    code, _, err = run(capsys, *argv, "--mechanism", "gs-topdown", "--invariant", "groups")
    assert code == 2 and "--invariant total" in err and "drop --invariant groups" not in err
    code, _, err = run(capsys, *argv, "--mechanism", "gs-noisy", "--invariant", "total")
    assert code == 2 and "drop --invariant total" in err
    code, _, err = run(capsys, *argv, "--mechanism", "gs-noisy")
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["invariants"] == [] and manifest["input"]["invariants"] == []


def test_count_mechanism_refuses_group_sizes_and_back(capsys, tmp_path, people_csv):
    code, _, err = release(capsys, people_csv, tmp_path, "topdown")
    assert code == 2 and "does not release group-sizes" in err
    code, _, err = run(capsys, "release", people_csv, "--levels", "state,county",
                       "--mechanism", "gs-topdown", "--epsilon", 1, "--out", tmp_path)
    assert code == 2 and "does not release counts" in err

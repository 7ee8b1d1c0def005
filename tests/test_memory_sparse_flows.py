"""Streaming where the size is legitimate (issue 32): the O/D space of a flow release grows
as areas squared per level but is mostly empty; the mechanisms that hold only the children
of released positive pairs (`mechanisms.base.keeps_flows_sparse`) are bounded by a sparse plan (at
most the trips times the fan-out per level, never more than the level's pairs) instead of
the dense one, release where the dense space would be refused, and say so (a note on
stderr, ``input.memory`` in the manifest); the dense vanilla-gauss is still refused."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.export import read_release
from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.mechanisms.base import get_mechanism, keeps_flows_sparse
from hierdp_core.memory_of_data import plan_of_data
from hierdp_core.memory_sparse import flow_tree_shape
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

AREAS, STATES = 1500, 30
#: O/D pairs per tree level of a destination tree over 30 states > 3,000 areas
DENSE = [STATES, STATES**2, STATES * AREAS, AREAS**2]


@pytest.fixture
def flows(tmp_path):
    geography = tmp_path / "geo.csv"
    pd.DataFrame({"state": [f"S{i % STATES}" for i in range(AREAS)],
                  "area": [f"A{i}" for i in range(AREAS)]}).to_csv(geography, index=False)
    trips = tmp_path / "trips.csv"
    pd.DataFrame({"o_state": ["S1", "S2", "S1"], "o_area": ["A1", "A2", "A31"],
                  "d_state": ["S2", "S1", "S1"], "d_area": ["A2", "A1", "A1"],
                  "n": [3, 4, 2]}).to_csv(trips, index=False)
    return trips, geography


def _release(capsys, flows, tmp_path, mechanism, *extra):
    trips, geography = flows
    return run(capsys, "release", trips, "--origin-levels", "o_state,o_area",
               "--destination-levels", "d_state,d_area", "--count-column", "n",
               "--geography", geography, "--query", "flows", "--mechanism", mechanism,
               "--rho", 1, "--seed", 1, "--key-file", tmp_path / "key",
               "--out", tmp_path / "out", *extra)


def test_a_large_empty_od_space_is_released_sparsely_and_says_so(capsys, flows, tmp_path):
    code, _, err = _release(capsys, flows, tmp_path, "inftda", "--invariant", "total",
                            "--max-memory", "1GB")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "held sparsely" in line]
    assert len(notes) == 1 and notes[0].startswith("note: the O/D space of 2,295,930 cells")
    assert "by inftda: at most " in notes[0] and "for 9 trips" in notes[0]
    memory = read_release(tmp_path / "out", tmp_path / "key")[1]["input"]["memory"]
    # public only: the declared space and how it was held, nothing derived from the trips
    assert memory["representation"] == "sparse" and memory["dense_cells"] == sum(DENSE)
    assert set(memory) == {"representation", "dense_cells", "held"}


def test_the_dense_baseline_over_the_same_space_is_refused(capsys, flows, tmp_path):
    code, _, err = _release(capsys, flows, tmp_path, "vanilla-gauss", "--max-memory", "1GB")
    assert code == 2 and err.count("\n") == 1, err
    assert "the finest level's areas is too large" in err
    assert not (tmp_path / "out").exists()


def test_the_sparse_plan_still_refuses_what_does_not_fit(capsys, flows, tmp_path):
    code, _, err = _release(capsys, flows, tmp_path, "inftda", "--invariant", "total",
                            "--max-memory", "100KB")
    assert code == 2 and err.count("\n") == 1, err
    assert "the number of trips is too large" in err and "trips would fit" in err


def test_a_small_space_gets_no_note(capsys, flows, tmp_path):
    code, _, err = _release(capsys, flows, tmp_path, "inftda", "--invariant", "total")
    assert code == 0 and "held sparsely" not in err, err
    assert "memory" in read_release(tmp_path / "out", tmp_path / "key")[1]["input"]


@pytest.mark.parametrize(("mechanism", "tree"), [("inftda", "destination"),
                                                 ("inftda", "origin"),
                                                 ("tda-l2", "destination")])
def test_the_sparse_bound_holds_every_cell_noised(mechanism, tree):
    """Per tree level, the cells the top-down noised are at most the plan's bound (the
    trips times the fan-out, capped by the level's pairs)."""
    assert keeps_flows_sparse(mechanism)
    data = synthetic_flows(levels=2, branching=6, zero_probability=0.97, max_flow=3,
                           tree=tree)
    dense, fans = flow_tree_shape(data)
    release = get_mechanism(mechanism, "flows").release(data, PrivacyBudget.zcdp(0.5),
                                                        source=NoiseSource(seed=3))
    noised = [d["noised"] for d in release.diagnostics[1:]]
    bound = [min(d, data.n * f) for d, f in zip(dense, fans, strict=True)]
    assert len(noised) == len(bound) == data.depth
    assert all(n <= b for n, b in zip(noised, bound, strict=True)), (noised, bound)
    assert plan_of_data(data, mechanism).cells == sum(bound)
    assert any(n > 0 for n in noised)

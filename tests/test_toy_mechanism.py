"""Adding a mechanism is its module, its tests and one registry line (issue 29, item 2): a
toy count mechanism, registered here for the test only, runs through the command line, the
blockwise engine, the intervals and the privacy audit, which all ask the registry for its
`Capabilities` and know no list of names."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.audit import audit_mechanism
from hierdp_core.engine import blockwise
from hierdp_core.errors import InputError
from hierdp_core.mechanisms import base
from hierdp_core.mechanisms.base import Capabilities, MechanismInfo, get_mechanism, register
from hierdp_core.mechanisms.counts import NEIGHBOURING, CountMechanism
from hierdp_core.privacy.budget import PURE_DP, PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table

TOY = "toy-noisy-counts"


@dataclass
class ToyCounts(CountMechanism):
    """Geometric noise on every level, the noisy counts published as they are."""

    fixed_noise: str | None = "geometric"

    def __post_init__(self):
        self.info = MechanismInfo(
            name=TOY, description="A toy: geometric noise on every level.",
            reference="this test", queries=("counts",), privacy=PURE_DP, private=True,
            consistent=False, neighbouring=NEIGHBOURING, independent_columns=True,
            capabilities=Capabilities(estimate="raw", blockwise=True, split_optimiser=True,
                                      intervals="closed-form"))

    def estimate(self, data, noisy, variance, root, p):
        return noisy.astype(np.int64)


@pytest.fixture
def toy():
    """The toy, registered (one line) for the test and removed from the registry after."""
    get_mechanism("topdown")  # the counts module is loaded before the toy joins it
    mechanism = register(ToyCounts())
    yield mechanism
    del base._REGISTRY[TOY]


def people(n: int = 3_000, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"state": rng.integers(0, 4, n).astype(str)})
    t["county"] = t["state"] + "-" + rng.integers(0, 6, n).astype(str)
    return t


def test_the_blockwise_engine_runs_the_toy_bit_for_bit(toy, monkeypatch):
    from hierdp_core.mechanisms import streams

    monkeypatch.setattr(streams, "MAX_BLOCKS", 2)  # more than one block
    data = count_data_from_table(people(), ["state", "county"])
    budget = PrivacyBudget.pure(1.0)
    whole = toy.release(data, budget, source=NoiseSource(seed=4))
    parts = blockwise.release_count_data(toy, data, budget, source=NoiseSource(seed=4))
    assert np.array_equal(whole.values, parts.values)
    assert whole.mechanism == parts.mechanism == TOY


def test_the_engine_refuses_the_toy_when_it_does_not_declare_blockwise(toy, monkeypatch):
    from capability_helpers import declare

    declare(monkeypatch, TOY, blockwise=False)
    data = count_data_from_table(people(), ["state", "county"])
    with pytest.raises(InputError, match=f"'{TOY}' cannot run block by block; use one of "
                                         "raw-laplace"):
        blockwise.release_count_data(get_mechanism(TOY), data, PrivacyBudget.pure(1.0))


def test_the_command_line_lists_releases_and_audits_the_toy(toy, capsys, tmp_path):
    code, out, _ = run(capsys, "mechanisms", "--json")
    listed = {m["name"]: m for m in json.loads(out)}
    assert code == 0 and listed[TOY]["capabilities"]["blockwise"] is True
    csv = tmp_path / "people.csv"
    people().to_csv(csv, index=False)
    code, _, err = run(capsys, "release", csv, "--levels", "state,county",
                       "--mechanism", TOY, "--epsilon", "1", "--seed", "3",
                       "--structure-from-data", "--split-goal", "mse",
                       "--out", tmp_path / "out")
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["mechanism"]["name"] == TOY
    table = pd.read_csv(tmp_path / "out" / "release.csv")
    assert (table["lower"] <= table["value"]).all() and (table["value"] <= table["upper"]).all()
    code, out, err = run(capsys, "audit", "--mechanism", TOY, "--epsilon", "1",
                         "--trials", "2000", "--json")
    assert code == 0, err
    assert json.loads(out)["passed"] is True


def test_the_audit_runs_the_toy_and_finds_its_claim_holds(toy):
    """The audit reads the toy's plan and batches its columns as it declares."""
    r = audit_mechanism(TOY, 1.0, trials=4000, seed=1)
    assert r.passed and 0.0 < r.epsilon_lower_bound <= 1.0

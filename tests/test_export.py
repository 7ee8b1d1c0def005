"""Export: manifest contents, and that no true value reaches a release file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hierdp_core.export import build_manifest, read_release, write_release
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy import samplers
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table

CANARY = 98765431  # a true count that must never be written anywhere


@pytest.fixture
def canary_data():
    table = pd.DataFrame({
        "region": ["N", "N", "S", "S", "S"],
        "town": ["n1", "n2", "s1", "s2", "s3"],
        "count": [CANARY, 1234567, 7654321, 3, 0],
    })
    return count_data_from_table(table, ["region", "town"], count_column="count")


def _budget_for(info):
    return PrivacyBudget.zcdp(0.5) if info.privacy == "zcdp" else PrivacyBudget.pure(1.0)


@pytest.mark.parametrize("info", list_mechanisms("counts"), ids=lambda i: i.name)
def test_no_true_value_reaches_release_files(tmp_path, monkeypatch, canary_data, info):
    """Noise is forced to a known non-zero offset, so every released value is a function of
    noisy measurements; neither a true node count nor its digits may appear in any file."""

    def offset_noise(self, size, source):
        return np.full(size, 1000 if self.integer else 1000.5)

    monkeypatch.setattr(samplers.Noise, "sample", offset_noise)
    release = get_mechanism(info.name).release(canary_data, _budget_for(info),
                                               source=NoiseSource(seed=0))
    paths = write_release(release, tmp_path, formats=("csv", "parquet"),
                          input_spec={"levels": ["region", "town"]}, input_bytes=b"secret")
    truth = canary_data.node_counts().ravel()
    table = pd.read_parquet(paths["parquet"])
    assert not np.any(table["value"].to_numpy() == truth), "a node was released exactly"
    distinctive = [str(int(v)) for v in truth if v > 1000]
    for kind in ("csv", "manifest"):
        text = paths[kind].read_text()
        for number in distinctive:
            assert number not in text, f"true count {number} found in {paths[kind].name}"


def test_release_object_holds_no_truth(canary_data):
    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=1))
    for value in vars(release).values():
        assert value is not canary_data and value is not canary_data.leaf_counts


def test_manifest_fields(canary_data, tmp_path):
    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(0.5),
                                               split=[0, 1, 3], source=NoiseSource(seed=2))
    manifest = build_manifest(release, input_spec={"levels": ["region", "town"]})
    assert manifest["mechanism"]["name"] == "topdown"
    assert manifest["privacy"]["epsilon"] == pytest.approx(0.5)
    assert manifest["privacy"]["neighbouring"].startswith("add/remove one person")
    assert manifest["split"] == pytest.approx({"total": 0.0, "region": 0.25, "town": 0.75})
    assert manifest["ledger"][0]["noise"] == "not measured"
    assert manifest["ledger"][2]["noise_scale"] == pytest.approx(1 / (0.5 * 0.75))
    assert manifest["randomness"]["seed"] == 2
    assert manifest["hierarchy"]["units_per_level"] == [1, 2, 5]
    json.dumps(manifest)  # serialisable


def test_secure_mode_is_recorded(canary_data, tmp_path):
    release = get_mechanism("raw-geometric").release(canary_data, PrivacyBudget.pure(1.0),
                                                     source=NoiseSource(secure=True))
    write_release(release, tmp_path)
    table, manifest = read_release(tmp_path)
    assert manifest["randomness"] == {"mode": "secure", "source": "os-entropy",
                                      "sampler": "opendp"}
    assert len(table) == canary_data.hierarchy.n_nodes


def test_root_invariant_is_declared(canary_data):
    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=3), root_invariant=True)
    manifest = build_manifest(release)
    assert manifest["invariants"] == ["root total"]
    assert release.values[0, 0] == canary_data.node_counts()[0, 0]

"""Export: manifest contents, and that no true value reaches a release file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from ledger_marks import charged_in_ledger

from hierdp_core.export import build_manifest, read_release, write_release
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy import samplers
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, RELATIONS
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.verdict import LEDGER_ENTRY, NOT_CHARGED

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

    def offset_noise(self, values, source, **measurement):
        return np.asarray(values) + (1000 if self.integer else 1000.5)

    monkeypatch.setattr(samplers.Noise, "apply", offset_noise)
    release = get_mechanism(info.name).release(canary_data, _budget_for(info),
                                               source=NoiseSource(seed=0))
    paths = write_release(release, tmp_path, formats=("csv", "parquet"),
                          structure_declared=True, input_spec={"levels": ["region", "town"]},
                          input_content=b"secret")
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
    manifest = build_manifest(release, structure_declared=True,
                              input_spec={"levels": ["region", "town"]})
    assert manifest["mechanism"]["name"] == "topdown"
    assert manifest["privacy"]["epsilon"] == pytest.approx(0.5)
    assert manifest["privacy"]["neighbouring"] == RELATIONS[ADD_REMOVE_PERSON]
    assert manifest["split"] == pytest.approx({"total": 0.0, "region": 0.25, "town": 0.75})
    assert manifest["ledger"][0]["noise"] == "not measured"
    assert manifest["ledger"][2]["noise_scale"] == pytest.approx(1 / (0.5 * 0.75))
    assert manifest["randomness"]["seed"] == 2
    assert manifest["hierarchy"]["units_per_level"] == [1, 2, 5]
    json.dumps(manifest)  # serialisable


@pytest.mark.parametrize(("backend", "sampler"),
                         [("hierdp", "hierdp-exact"), ("opendp", "opendp")])
def test_secure_mode_is_recorded(canary_data, tmp_path, backend, sampler):
    release = get_mechanism("raw-geometric").release(
        canary_data, PrivacyBudget.pure(1.0), source=NoiseSource(secure=True, backend=backend))
    write_release(release, tmp_path, structure_declared=True)
    table, manifest = read_release(tmp_path)
    randomness = manifest["randomness"]
    assert {k: randomness[k] for k in ("mode", "source", "sampler")} == {
        "mode": "secure", "source": "os-entropy", "sampler": sampler}
    assert "algorithm" in randomness
    assert "seed" not in randomness
    measured = randomness["measurements"]
    assert [m["cells"] for m in measured] == [1, 2, 5]  # root, regions, towns
    for m, row in zip(measured, manifest["ledger"], strict=True):
        assert m["sampler"] == sampler
        assert m["privacy_loss"] == pytest.approx(row["budget"], rel=1e-9)
        assert m["privacy_loss"] <= row["budget"] * (1 + 1e-12)
        assert ("sampled" in m) == (backend == "hierdp")
    # drawn outside the budget ledger (Mechanism.release called directly): not publishable
    assert manifest["publishable"] is False
    assert manifest["not_publishable_because"] == [NOT_CHARGED]
    assert len(table) == canary_data.hierarchy.n_nodes
    marked = charged_in_ledger(release)
    write_release(marked, tmp_path / "charged", structure_declared=True)
    _, manifest = read_release(tmp_path / "charged")
    assert manifest["publishable"] is True and manifest["not_publishable_because"] == []
    assert manifest["randomness"][LEDGER_ENTRY] == marked.randomness[LEDGER_ENTRY]


def test_root_invariant_is_declared(canary_data):
    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=3), root_invariant=True)
    manifest = build_manifest(release, structure_declared=True)
    assert manifest["invariants"] == ["root total"]
    assert release.values[0, 0] == canary_data.node_counts()[0, 0]


# ---- the publishable verdict and the fingerprint key ------------------------------------------
def test_verdict_lists_every_reason(canary_data):
    seeded = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                              source=NoiseSource(seed=4))
    manifest = build_manifest(seeded, structure_declared=False)
    assert manifest["publishable"] is False and manifest["structure"] == "from-data"
    reasons = " | ".join(manifest["not_publishable_because"])
    assert "seeded generator" in reasons and "structure from data" in reasons
    assert len(manifest["not_publishable_because"]) == 2


def test_nonprivate_mechanism_is_never_publishable():
    from hierdp_core.verdict import verdict

    result = verdict(randomness={"mode": "secure", LEDGER_ENTRY: "e1"}, mechanism_private=False,
                     mechanism_name="dawa-reference", structure_declared=True,
                     mechanism_warning="use dawa")
    assert result == {"publishable": False, "not_publishable_because": [
        "mechanism 'dawa-reference' (DAWA, the authors' partition) is not differentially private as published (use dawa)"]}


def test_key_stays_outside_the_release_folder(canary_data, tmp_path):
    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(secure=True))
    key_file = tmp_path / "keys" / "publisher.key"
    out = tmp_path / "release"
    paths = write_release(release, out, structure_declared=True, input_content=b"input",
                          key_file=key_file)
    assert paths["key"] == key_file and key_file.stat().st_mode & 0o077 == 0
    assert sorted(p.name for p in out.rglob("*")) == ["manifest.json", "release.csv"]
    key = bytes.fromhex(key_file.read_text().strip())
    manifest = json.loads((out / "manifest.json").read_text())
    assert key.hex() not in json.dumps(manifest)
    again = write_release(release, tmp_path / "again", structure_declared=True,
                          input_content=b"input", key_file=key_file)  # the same key is reused
    second = json.loads(again["manifest"].read_text())
    assert second["input"]["fingerprint"]["value"] == manifest["input"]["fingerprint"]["value"]


def test_key_inside_the_release_folder_is_refused(canary_data, tmp_path):
    from hierdp_core.errors import InputError

    release = get_mechanism("topdown").release(canary_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=1))
    with pytest.raises(InputError, match="inside the release folder"):
        write_release(release, tmp_path / "out", structure_declared=True, input_content=b"x",
                      key_file=tmp_path / "out" / "private" / "k.key")
    assert not (tmp_path / "out").exists()


def test_fingerprint_of_a_path_equals_that_of_its_bytes(tmp_path):
    from hierdp_core.export import keyed_fingerprint

    path = tmp_path / "input.csv"
    path.write_bytes(b"a,b\n" * 700_000)  # larger than one block
    assert keyed_fingerprint(path, b"k" * 32) == keyed_fingerprint(path.read_bytes(), b"k" * 32)


def test_a_fingerprint_hashed_ahead_is_the_same_and_read_once(tmp_path, monkeypatch):
    """`fingerprint_ahead` hashes the input on a thread with the key that exists here; the
    release's `keyed_fingerprint` then takes its value (the file read once), the value of
    the file's bytes. No key here: nothing starts and no key is made; a file changed
    since is read again."""
    import os

    from hierdp_core import publisher_key
    from hierdp_core.export import keyed_fingerprint

    reads = []
    monkeypatch.setattr(publisher_key, "_AHEAD", {})
    mac = publisher_key._files_mac
    monkeypatch.setattr(publisher_key, "_files_mac",
                        lambda paths, key: reads.append(paths) or mac(paths, key))
    path, key_file = tmp_path / "input.csv", tmp_path / "fingerprint.key"
    path.write_bytes(b"a,b\n" * 300_000)
    publisher_key.fingerprint_ahead(path, key_file)
    assert not key_file.exists() and not publisher_key._AHEAD
    key, _ = publisher_key.publisher_key(key_file, None)
    publisher_key.fingerprint_ahead(path, key_file)
    assert keyed_fingerprint(path, key) == keyed_fingerprint(path.read_bytes(), key)
    assert len(reads) == 1 and not publisher_key._AHEAD
    path.write_bytes(b"a,c\n" * 300_000)
    os.utime(path, ns=(1, 1))
    publisher_key.fingerprint_ahead(path, key_file)
    path.write_bytes(b"a,d\n" * 300_000)  # changed again while or after it was hashed
    assert keyed_fingerprint(path, key) == keyed_fingerprint(path.read_bytes(), key)
    assert len(reads) == 3

"""A tamper-evident manifest (issue 27, item 4): every manifest carries its checksum and,
with the publisher's local key, its HMAC signature; ``hierdp verify`` checks files,
checksum and signature; ``evaluate`` and ``read_release`` refuse an edited manifest."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import ManifestError
from hierdp_core.export import read_release
from hierdp_core.manifest_seal import canonical_json, check_seal, key_id, seal

COUNTS = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                       "people": [30, 12, 7]})


@pytest.fixture
def made(tmp_path, capsys):
    """A release folder ``out`` written with the key ``key`` (both under tmp_path)."""
    COUNTS.to_csv(tmp_path / "counts.csv", index=False)
    COUNTS[["state", "county"]].to_csv(tmp_path / "geography.csv", index=False)
    code, _, err = run_cli(capsys, "release", tmp_path / "counts.csv", "--levels",
                           "state,county", "--count-column", "people", "--geography",
                           tmp_path / "geography.csv", "--mechanism", "topdown", "--epsilon",
                           "1", "--interval", "none", "--key-file", tmp_path / "key",
                           "--out", tmp_path / "out")
    assert code == 0, err
    return tmp_path


def verify(capsys, folder, *extra):
    return run_cli(capsys, "verify", folder, *extra)


def edit_manifest(folder, change) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest, indent=2))


def set_epsilon(manifest) -> None:
    manifest["privacy"]["epsilon"] = 0.01


def test_a_fresh_release_verifies_with_its_key(made, capsys):
    code, out, err = verify(capsys, made / "out", "--key-file", made / "key")
    key = bytes.fromhex((made / "key").read_text().strip())
    assert code == 0 and err == "" and out.count("\n") == 1
    assert out.startswith("verified: 1 file(s)") and f"signature (key {key_id(key)})" in out
    manifest = json.loads((made / "out" / "manifest.json").read_text())
    assert manifest["signature"]["key_id"] == key_id(key)
    assert key.hex() not in json.dumps(manifest)
    read_release(made / "out", made / "key")  # no error


def test_without_the_key_only_the_checksum_is_checked(made, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))  # no key there
    code, out, _ = verify(capsys, made / "out")
    assert code == 0 and out.count("\n") == 1
    assert "no signature key here: checksum only" in out
    assert not (tmp_path / "elsewhere").exists()  # verifying never makes a key
    read_release(made / "out")


def test_an_edited_manifest_is_refused_by_verify_read_release_and_evaluate(made, capsys):
    edit_manifest(made / "out", set_epsilon)
    code, out, err = verify(capsys, made / "out", "--key-file", made / "key")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: the manifest was edited after it was written")
    with pytest.raises(ManifestError, match="checksum does not match"):
        read_release(made / "out", made / "key")
    code, out, err = run_cli(capsys, "evaluate", made / "counts.csv", made / "out",
                             "--key-file", made / "key")
    assert code == 2 and out == "" and err.count("\n") == 1 and "edited" in err


def test_a_recomputed_checksum_is_caught_by_the_signature(made, capsys, tmp_path,
                                                          monkeypatch):
    def forge(manifest):
        set_epsilon(manifest)
        manifest["checksum"] = seal(manifest, None)["checksum"]
    edit_manifest(made / "out", forge)
    code, _, err = verify(capsys, made / "out", "--key-file", made / "key")
    assert code == 2 and err.count("\n") == 1 and "signature does not match" in err
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    assert verify(capsys, made / "out")[0] == 0  # a reader without the key cannot tell


def test_a_removed_signature_or_another_key_is_refused_with_the_key(made, capsys, tmp_path):
    other = tmp_path / "other.key"
    other.write_text("ab" * 32 + "\n")
    code, _, err = verify(capsys, made / "out", "--key-file", other)
    assert code == 2 and err.count("\n") == 1 and "signed with another key" in err
    code, out, _ = verify(capsys, made / "out", "--key-file", other, "--checksum-only")
    assert code == 0 and "signature not checked (--checksum-only)" in out

    def unsign(manifest):
        del manifest["signature"]
    edit_manifest(made / "out", unsign)
    code, _, err = verify(capsys, made / "out", "--key-file", made / "key")
    assert code == 2 and "not signed" in err


def test_an_edited_or_extra_data_file_is_refused_by_verify(made, capsys):
    folder = made / "out"
    copy = made / "copy"
    shutil.copytree(folder, copy)
    table = folder / "release.csv"
    table.write_text(table.read_text().replace("\n", "\n ", 1))
    code, out, err = verify(capsys, folder, "--key-file", made / "key")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "release.csv" in err and "does not match the sha256" in err
    (copy / "release.parquet").write_bytes(b"x")
    code, _, err = verify(capsys, copy, "--key-file", made / "key")
    assert code == 2 and "'release.parquet'" in err and "not listed" in err


def test_a_folder_that_is_not_a_release_is_one_line(capsys, tmp_path):
    code, _, err = verify(capsys, tmp_path)
    assert code == 2 and err.count("\n") == 1 and "no manifest.json" in err
    (tmp_path / "manifest.json").write_text("{}")
    code, _, err = verify(capsys, tmp_path)
    assert code == 2 and "no checksum" in err


def test_dashboard_manifest_is_sealed_and_signed(small_county_data, tmp_path, monkeypatch):
    from hierdp_core.export import local_key, manifest_bytes
    from hierdp_core.mechanisms.base import get_mechanism
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.samplers import NoiseSource

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    release = get_mechanism("topdown").release(small_county_data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=1))
    manifest = json.loads(manifest_bytes(release, structure_declared=True, max_epsilon=0.5))
    assert check_seal(manifest, local_key()) == "signature"
    assert manifest["epsilon_ceiling"]["max_epsilon"] == 0.5
    assert manifest["table_rules"]["consistent"]["holds"] is True


# ---- the canonical JSON and its checksum --------------------------------------------------
LEAVES = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8)
          | st.floats(allow_nan=False, allow_infinity=False))
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)
MANIFESTS = st.dictionaries(st.text(max_size=8).filter(
    lambda k: k not in ("checksum", "signature")), JSON, max_size=6)


@settings(max_examples=200, deadline=None)
@given(manifest=MANIFESTS, key=st.none() | st.binary(min_size=16, max_size=32),
       indent=st.sampled_from([None, 2]))
def test_seal_survives_a_json_round_trip(manifest, key, indent):
    sealed = seal(manifest, key)
    again = json.loads(json.dumps(sealed, indent=indent))
    assert canonical_json(again) == canonical_json(manifest)
    assert check_seal(again, key) == ("checksum" if key is None else "signature")
    assert seal(again, key) == sealed  # sealing twice changes nothing


@settings(max_examples=200, deadline=None)
@given(manifest=MANIFESTS.filter(bool), data=st.data())
def test_any_changed_field_breaks_the_checksum(manifest, data):
    sealed = seal(manifest, None)
    name = data.draw(st.sampled_from(sorted(manifest)))
    replacement = data.draw(JSON.filter(lambda v: json.dumps(v, sort_keys=True)
                                        != json.dumps(manifest[name], sort_keys=True)))
    with pytest.raises(ManifestError, match="edited"):
        check_seal({**sealed, name: replacement}, None)
    with pytest.raises(ManifestError, match="edited"):
        check_seal({**sealed, "added": 1} if "added" not in manifest else
                   {k: v for k, v in sealed.items() if k != "added"}, None)

"""The manifest states the privacy claim once: ``privacy`` holds the record and, under
``plan``, the stages that ran (no separate ``privacy_plan``); a release folder written before
(its plan beside the record) is still read and evaluated."""

from __future__ import annotations

import json

from conftest import run_cli as run
from test_evaluate_coverage import _counts_csv

from hierdp_core.export import MANIFEST, read_release
from hierdp_core.manifest_seal import seal
from hierdp_core.publisher_key import local_key


def _release(capsys, tmp_path):
    path, _ = _counts_csv(tmp_path)
    out = tmp_path / "rel"
    code, _, err = run(capsys, "release", path, "--levels", "state,county", "--count-column",
                       "n", "--mechanism", "topdown", "--epsilon", "0.5", "--seed", 2,
                       "--structure-from-data", "--out", out)
    assert code == 0, err
    return path, out


def test_the_manifest_writes_the_plan_inside_the_privacy_record(capsys, tmp_path):
    _, out = _release(capsys, tmp_path)
    _, manifest = read_release(out)
    assert "privacy_plan" not in manifest
    privacy = manifest["privacy"]
    assert privacy["epsilon"] == 0.5 and privacy["definition"] == "pure-dp"
    assert privacy["plan"]["mechanism"] == "topdown"
    assert privacy["plan"]["stages"][0]["relation"] == privacy["relation"]


def test_a_release_written_with_the_plan_beside_the_record_is_still_evaluated(capsys,
                                                                               tmp_path):
    path, out = _release(capsys, tmp_path)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["privacy_plan"] = manifest["privacy"].pop("plan")  # the shape written before
    (out / MANIFEST).write_text(json.dumps(seal(manifest, local_key()), indent=2))
    code, printed, err = run(capsys, "evaluate", path, out, "--json")
    assert code == 0, err
    assert {row["level"] for row in json.loads(printed)} == {0, 1, 2}

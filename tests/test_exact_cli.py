"""``--noise-backend`` on the command line: a secure release names the backend that drew
its noise in the manifest, and both backends give a publishable release."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import run_cli as run

COUNTS = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b2"],
                       "people": [120, 0, 87, 413]})


@pytest.mark.parametrize(("backend", "sampler"),
                         [(None, "hierdp-exact"), ("hierdp", "hierdp-exact"),
                          ("opendp", "opendp")])
def test_the_manifest_names_the_noise_backend(capsys, tmp_path, backend, sampler):
    data, geography, out = tmp_path / "c.csv", tmp_path / "g.csv", tmp_path / "out"
    COUNTS.to_csv(data, index=False)
    COUNTS[["state", "county"]].to_csv(geography, index=False)
    extra = () if backend is None else ("--noise-backend", backend)
    code, _, stderr = run(capsys, "release", data, "--levels", "state,county",
                          "--count-column", "people", "--epsilon", "1", "--out", out,
                          "--mechanism", "topdown", "--geography", geography, *extra)
    assert code == 0, stderr
    manifest = json.loads((out / "manifest.json").read_text())
    randomness = manifest["randomness"]
    assert randomness["sampler"] == sampler and randomness["mode"] == "secure"
    assert manifest["publishable"] is True
    for m in randomness["measurements"]:
        assert ("sampled" in m) == (sampler == "hierdp-exact")
        assert m["privacy_loss"] <= m["budget_share"] * (1 + 1e-9)


def test_an_unknown_backend_is_one_line_and_status_2(capsys, tmp_path):
    code, _, stderr = run(capsys, "release", tmp_path / "c.csv", "--levels", "a",
                          "--noise-backend", "numpy", "--out", tmp_path / "o")
    assert code == 2 and "--noise-backend" in stderr

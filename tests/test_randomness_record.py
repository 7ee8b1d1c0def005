"""The manifest's top-level ``randomness.sampler`` names every sampler that drew, read from
the measurements, never the backend chosen: continuous noise on values that are not whole
numbers goes through OpenDP's sampler on either backend (on whole numbers the hierdp backend
draws its exact integer counterpart), and the OpenDP backend draws everything."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from hierdp_core.privacy.noise_source import ALGORITHMS
from hierdp_core.privacy.samplers import Gaussian, Geometric, Laplace, NoiseSource

COUNTS = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"],
                       "count": [1203, 877, 40]})


def test_a_source_with_exact_and_continuous_noise_names_both_and_what_each_drew():
    source = NoiseSource(secure=True)
    Geometric(1.0).apply(np.arange(4), source, sensitivity=1.0, budget=1.0, label="cells")
    Laplace(2.0).apply(np.arange(3.0) / 2, source, sensitivity=1.0, budget=1.0, label="scores")
    Gaussian(3.0).apply(np.arange(2.0) / 3, source, sensitivity=1.0, budget=1.0,
                        label="totals")
    record = source.as_dict()
    assert record["sampler"] == ("hierdp-exact (geometric for cells) and opendp (laplace for "
                                 "scores; gaussian for totals)")
    assert record["algorithm"] == (f"hierdp-exact: {ALGORITHMS['hierdp-exact']}; "
                                   f"opendp: {ALGORITHMS['opendp']}")
    assert record["backend"] == "hierdp"


def test_a_source_that_drew_nothing_names_no_sampler():
    assert NoiseSource(secure=True).as_dict()["sampler"] == "none"


@pytest.mark.parametrize(("mechanism", "budget", "sampler"), [
    ("raw-laplace", ("--epsilon", "1", "--noise-backend", "opendp"), "opendp"),
    ("raw-laplace", ("--epsilon", "1"), "hierdp-exact"),
    ("least-squares", ("--rho", "0.5", "--param", "noise=gaussian"), "hierdp-exact"),
    ("topdown", ("--epsilon", "1"), "hierdp-exact")])
def test_the_manifest_names_the_sampler_that_drew(capsys, tmp_path, mechanism, budget,
                                                  sampler):
    data, geography, out = tmp_path / "c.csv", tmp_path / "g.csv", tmp_path / "out"
    COUNTS.to_csv(data, index=False)
    COUNTS[["state", "county"]].to_csv(geography, index=False)
    code, _, err = run_cli(capsys, "release", data, "--levels", "state,county",
                           "--count-column", "count", "--geography", geography,
                           "--mechanism", mechanism, *budget, "--out", out)
    assert code == 0, err
    randomness = json.loads((out / "manifest.json").read_text())["randomness"]
    assert {m["sampler"] for m in randomness["measurements"]} == {sampler}
    backend = "opendp" if "--noise-backend" in budget else "hierdp"
    assert randomness["sampler"] == sampler and randomness["backend"] == backend

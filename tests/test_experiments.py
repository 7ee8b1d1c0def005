"""Sweeps over mechanisms x epsilons x trials, split comparisons, and their summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import BudgetError, InputError, MechanismError
from hierdp_core.experiments import compare_splits, summarise, sweep
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import error_metrics
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

MECHS = ["topdown", "least-squares", "raw-discrete-gaussian"]
EPS = [0.5, 1.0, 4.0]


@pytest.fixture(scope="module")
def data(small_county_data):
    return small_county_data


@pytest.fixture(scope="module")
def runs(data):
    return sweep(data, MECHS, EPS, 3, seed=11)


def test_sweep_shape_and_columns(runs, data):
    n_levels = data.hierarchy.n_levels
    assert len(runs) == len(MECHS) * len(EPS) * 3 * n_levels
    assert list(runs.columns[:5]) == ["mechanism", "epsilon", "budget", "trial", "seed"]
    assert (runs["bin"] == "all").all()
    assert runs.attrs["completed_runs"] == runs.attrs["total_runs"] == 27
    assert runs.attrs["cancelled"] is False
    # one seed per run, all different
    assert runs.groupby(["mechanism", "epsilon", "trial"])["seed"].nunique().eq(1).all()
    assert runs["seed"].nunique() == 27


def test_budgets_per_mechanism(runs):
    budget = runs.drop_duplicates(["mechanism", "epsilon"]).set_index(["mechanism", "epsilon"])
    assert budget.loc[("topdown", 1.0), "budget"] == "epsilon=1"
    assert budget.loc[("raw-discrete-gaussian", 4.0), "budget"] == "rho=8"  # eps^2 / 2
    assert budget.loc[("raw-discrete-gaussian", 0.5), "budget"] == "rho=0.125"


def test_sweep_is_reproducible(data, runs):
    again = sweep(data, MECHS, EPS, 3, seed=11)
    pd.testing.assert_frame_equal(runs, again)
    other = sweep(data, MECHS, EPS, 3, seed=12)
    assert not np.allclose(runs["mae"], other["mae"])


def test_one_run_can_be_reproduced_from_its_seed(data, runs):
    row = runs[(runs["mechanism"] == "topdown") & (runs["epsilon"] == 0.5)
               & (runs["trial"] == 2) & (runs["level"] == 2)].iloc[0]
    release = get_mechanism("topdown").release(data, PrivacyBudget.pure(0.5),
                                               source=NoiseSource(seed=int(row["seed"])))
    m = error_metrics(data.hierarchy, data.node_counts(), release.values)
    assert m[(m["level"] == 2) & (m["bin"] == "all")]["mae"].iloc[0] == row["mae"]


def test_progress_and_cancellation(data):
    calls = []

    def progress(done, total):
        calls.append((done, total))
        return None if done < 4 else False

    out = sweep(data, MECHS, EPS, 5, seed=0, progress=progress)
    assert calls == [(i, 45) for i in range(1, 5)]
    assert out.attrs["cancelled"] is True and out.attrs["completed_runs"] == 4
    assert len(out.drop_duplicates(["mechanism", "epsilon", "trial"])) == 4
    # returning True/None keeps going
    seen = []
    full = sweep(data, ["topdown"], [1.0], 2, progress=lambda d, t: seen.append(d) or True)
    assert seen == [1, 2] and full.attrs["cancelled"] is False


def test_max_runs_is_refused_before_running(data):
    calls = []
    with pytest.raises(InputError, match="limit"):
        sweep(data, MECHS, EPS, 10, max_runs=50, progress=lambda d, t: calls.append(d))
    assert calls == []
    with pytest.raises(InputError, match="limit"):
        sweep(data, MECHS, [0.1] + EPS, 500)  # 3 x 4 x 500 > 2000 by default


def test_bad_settings_fail_before_any_run(data):
    calls = []
    progress = calls.append
    with pytest.raises(MechanismError):
        sweep(data, ["topdown", "no-such"], [1.0], 1, progress=lambda d, t: progress(d))
    with pytest.raises(BudgetError):
        sweep(data, ["topdown"], [1.0, -1.0], 1, progress=lambda d, t: progress(d))
    with pytest.raises(MechanismError):
        sweep(data, ["topdown"], [1.0], 1, params={"topdown": {"bogus": 1}})
    with pytest.raises(InputError):
        sweep(data, ["topdown", "topdown"], [1.0], 1)
    with pytest.raises(InputError):
        sweep(data, ["topdown"], [1.0], 0)
    assert calls == []


def test_params_and_split_are_applied(data):
    gauss = sweep(data, ["least-squares"], [1.0], 1,
                  params={"least-squares": {"noise": "discrete-gaussian"}, "unused": {}})
    assert gauss["budget"].iloc[0] == "rho=0.5"
    leaves = sweep(data, ["topdown"], [1.0], 1, split=[0, 0, 1], seed=3)
    uniform = sweep(data, ["topdown"], [1.0], 1, seed=3)
    assert not np.allclose(leaves["mae"], uniform["mae"])


def test_summarise(runs, data):
    s = summarise(runs, "mae")
    assert list(s.columns) == ["mechanism", "epsilon", "level", "level_name", "mean", "low",
                               "high", "trials"]
    assert len(s) == len(MECHS) * len(EPS) * data.hierarchy.n_levels
    assert s["mechanism"].drop_duplicates().tolist() == MECHS  # order of appearance
    assert (s["trials"] == 3).all()
    assert (s["low"] <= s["mean"] + 1e-12).all() and (s["mean"] <= s["high"] + 1e-12).all()
    # mean is the plain mean of the trials
    part = runs[(runs["mechanism"] == "least-squares") & (runs["epsilon"] == 1.0)
                & (runs["level"] == 1)]
    row = s[(s["mechanism"] == "least-squares") & (s["epsilon"] == 1.0) & (s["level"] == 1)]
    assert row["mean"].iloc[0] == pytest.approx(part["mae"].mean())
    assert row["low"].iloc[0] == pytest.approx(part["mae"].quantile(0.05))
    # more noise, more error
    county = s[(s["mechanism"] == "topdown") & (s["level"] == 2)].set_index("epsilon")
    assert county.loc[0.5, "mean"] > county.loc[4.0, "mean"]
    wide = summarise(runs, "mae", low=0.0, high=1.0)
    extremes = runs.groupby(["mechanism", "epsilon", "level"], sort=False)["mae"]
    np.testing.assert_allclose(np.sort(wide["high"]), np.sort(extremes.max()))
    np.testing.assert_allclose(np.sort(wide["low"]), np.sort(extremes.min()))
    with pytest.raises(InputError):
        summarise(runs, "nope")
    with pytest.raises(InputError):
        summarise(runs, "mae", low=0.9, high=0.1)


def test_compare_splits(data):
    splits = {"uniform": "uniform", "leaves-heavy": [1, 1, 8]}
    out = compare_splits(data, "topdown", 1.0, splits, 3, seed=5)
    assert list(out.columns[:6]) == ["mechanism", "split", "epsilon", "budget", "trial", "seed"]
    assert set(out["split"]) == set(splits) and (out["epsilon"] == 1.0).all()
    assert len(out) == 2 * 3 * data.hierarchy.n_levels
    again = compare_splits(data, "topdown", 1.0, splits, 3, seed=5)
    pd.testing.assert_frame_equal(out, again)
    s = summarise(out, "mae", by="split")
    assert list(s.columns[:2]) == ["split", "epsilon"] and len(s) == 2 * data.hierarchy.n_levels
    # cancellation and the run limit work here too
    stopped = compare_splits(data, "topdown", 1.0, splits, 3, progress=lambda d, t: d < 2)
    assert stopped.attrs["completed_runs"] == 2
    with pytest.raises(InputError):
        compare_splits(data, "topdown", 1.0, splits, 3, max_runs=5)
    with pytest.raises(BudgetError):  # raw mechanisms need every level measured
        compare_splits(data, "raw-geometric", 1.0, {"bad": [0, 0, 1]}, 1)

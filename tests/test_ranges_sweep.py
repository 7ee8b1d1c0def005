"""The range-query method comparison and sweep of the dashboard's Range queries page
(`hierdp_core.ranges_sweep`): seeded, one row per run and level, the release already made
kept first."""

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.evaluation import range_metrics
from hierdp_core.ranges_sweep import MAX_RUNS, compare_methods, method_runs


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"region": np.repeat(["A", "B"], 60),
                          "town": np.repeat(["A1", "A2", "B1", "B2"], 30),
                          "age": rng.integers(0, 10, 120)})
    return range_data_from_table(table, ["region", "town"], "age", domain=(0, 9))


def test_method_runs_are_seeded_per_trial(data):
    runs = method_runs(data, ["identity", "h2"], [0.5, 2.0], 2, seed=7)
    assert len(runs) == 2 * 2 * 2 * data.hierarchy.n_levels
    again = method_runs(data, ["identity", "h2"], [0.5, 2.0], 2, seed=7)
    pd.testing.assert_frame_equal(runs.drop(columns="seconds"), again.drop(columns="seconds"))
    one = runs[(runs["mechanism"] == "h2") & (runs["epsilon"] == 2.0) & (runs["trial"] == 1)]
    release = get_mechanism("h2").release(data, PrivacyBudget.pure(2.0),
                                          source=NoiseSource(seed=8))
    expected = range_metrics(data, release.values)
    np.testing.assert_allclose(one["mean_query_error"].to_numpy(),
                               expected["mean_query_error"].to_numpy())


def test_compare_keeps_the_release_first_and_adds_the_others(data):
    release = get_mechanism("identity").release(data, PrivacyBudget.pure(1.0),
                                                source=NoiseSource(seed=3))
    metrics = range_metrics(data, release.values)
    table = compare_methods(data, "identity", metrics, 0.1, ["identity", "h2"], 1.0, 3)
    assert list(pd.unique(table["mechanism"])) == ["identity (this release)", "h2"]
    first = table[table["mechanism"] == "identity (this release)"]
    np.testing.assert_allclose(first["mean_query_error"], metrics["mean_query_error"])
    assert set(table["epsilon"]) == {1.0} and (first["seconds"] == 0.1).all()


def test_too_many_runs_are_refused(data):
    with pytest.raises(InputError):
        method_runs(data, ["identity"], [1.0], MAX_RUNS + 1, seed=0)

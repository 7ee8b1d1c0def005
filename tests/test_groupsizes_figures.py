"""Group-size figures and sweeps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import group_size_data_from_people
from hierdp_core.groupsizes.experiments import group_size_sweep, mean_by_level
from hierdp_core.groupsizes.figures import size_histogram_figure


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    sizes = rng.choice([1, 2, 3, 4, 9], size=300, p=[.3, .3, .2, .15, .05])
    people = pd.DataFrame({"state": np.repeat(rng.choice(["A", "B"], 300), sizes),
                           "household": np.repeat(np.arange(300), sizes)})
    return group_size_data_from_people(people, ["state"], "household", max_size=10)


def test_size_histogram_leaves_out_empty_cells():
    fig = size_histogram_figure([2, 5, 0, 1], [1.5, 4.2, -0.7, 3.1], [1, 6, 0, 1], region="X")
    true, noisy, released = fig.data
    assert list(true.x) == [1, 3] and list(true.y) == [5, 1]
    assert list(noisy.x) == [1, 3] and noisy.mode == "markers"  # the negative cell is left out
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "true size 0: 2" in fig.layout.title.text
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 3]  # few sizes: each ticked


def test_sizes_from_one_are_placed_at_their_size():
    """A histogram of sizes 1..N (m = 1) was drawn shifted: its first cell said 'size 0'."""
    fig = size_histogram_figure([23, 5, 0, 1], None, [22, 6, 0, 1], region="X", min_size=1)
    true, released = fig.data
    assert list(true.x) == [1, 2, 4] and list(true.y) == [23, 5, 1]
    assert "size 0" not in fig.layout.title.text
    many = size_histogram_figure(np.ones(1000), None, np.ones(1000), region="X", min_size=1)
    assert many.layout.xaxis.dtick == 1 and many.layout.xaxis.tickvals is None


def test_sweep_rows_and_means(data):
    runs = group_size_sweep(data, ["gs-noisy", "gs-topdown"], [0.5, 2.0], 2)
    assert len(runs) == 2 * 2 * 2 * data.hierarchy.n_levels
    table = mean_by_level(runs, "l1")
    assert table["mechanism"].tolist() == ["gs-noisy", "gs-topdown"]
    assert list(table.columns[1:]) == list(data.hierarchy.level_names)
    topdown = runs[runs["mechanism"] == "gs-topdown"]
    assert (topdown["consistency_violations"] == 0).all()
    assert (topdown["faithfulness_gap"] == 0).all()
    with pytest.raises(InputError, match="at most"):
        group_size_sweep(data, ["gs-noisy"], [1.0], 5, max_runs=4)
    with pytest.raises(InputError):
        mean_by_level(runs, "nope")

"""Figure builders and the epsilon sweep of the flows page."""

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.experiments import summarise
from hierdp_core.flows.experiments import flow_sweep
from hierdp_core.flows.figures import flow_map, metrics_by_level, od_matrix
from hierdp_core.flows.metrics import flow_metrics
from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

COORDS = pd.DataFrame({"latitude": [40.0, 34.0, 41.9], "longitude": [-74.0, -118.0, -87.6]},
                      index=["NY", "CA", "IL"])


def pairs(values):
    return pd.DataFrame({"origin_id": ["NY", "NY", "CA", "IL", "IL"],
                         "destination_id": ["CA", "NY", "IL", "NY", "CA"], "value": values})


def test_flow_map_draws_one_line_per_shown_flow_in_few_traces():
    fig = flow_map(pairs([50, 99, 7, 20, 0]), COORDS, title="t", top=10,
                   false_positive=np.array([False, False, True, False, False]))
    lines = [t for t in fig.data if t.type == "scattergeo" and t.mode == "lines"]
    segments = sum(list(t.lon).count(None) for t in lines)
    assert segments == 3  # NY>NY is a self-flow and IL>CA is 0: not drawn
    red = [t for t in lines if t.line.color == "#d62728"]
    assert len(red) == 1 and list(red[0].lon).count(None) == 1
    assert "1 false positive" in fig.layout.title.text
    assert len(fig.data) <= 4 + 2 + 1  # line classes, hover points, area markers


def test_flow_map_top_and_base_layer():
    fig = flow_map(pairs([50, 99, 7, 20, 1]), COORDS, title="t", top=2,
                   base=({"type": "FeatureCollection", "features": []}, ["01", "02"]))
    assert fig.data[0].type == "choropleth" and list(fig.data[0].locations) == ["01", "02"]
    lines = [t for t in fig.data if t.type == "scattergeo" and t.mode == "lines"]
    assert sum(list(t.lon).count(None) for t in lines) == 2
    with pytest.raises(InputError, match="value"):
        flow_map(pairs([1] * 5).drop(columns="value"), COORDS, title="t")


def test_od_matrix_places_values_and_signs():
    fig = od_matrix(pairs([50, 99, 7, -20, 0]), ["CA", "IL", "NY"], title="m", signed=True)
    custom = np.asarray(fig.data[0].customdata)
    assert custom[2, 0] == 50 and custom[2, 2] == 99 and custom[1, 2] == -20
    assert np.asarray(fig.data[0].z)[1, 2] < 0


def test_sweep_and_level_figure():
    data = synthetic_flows(2, 2, 0.5, seed=3)
    runs = flow_sweep(data, ["inftda", "stability-histogram"], [0.5, 2.0], 2)
    assert len(runs) == 2 * 2 * 2 * (data.depth + 1)
    assert {"max_abs_error", "fdr", "seconds"} <= set(runs.columns)
    summary = summarise(runs, "max_abs_error")
    assert (summary.loc[summary["level"] == 0, "mean"][summary["mechanism"] == "inftda"]
            == 0).all()
    release = get_mechanism("inftda").release(data, PrivacyBudget.zcdp(0.1),
                                              source=NoiseSource(seed=1))
    fig = metrics_by_level(flow_metrics(data, release))
    assert len(fig.data) == 2 and len(fig.data[0].x) == data.depth + 1
    with pytest.raises(InputError, match="at most"):
        flow_sweep(data, ["inftda"], [1.0], 5, max_runs=4)

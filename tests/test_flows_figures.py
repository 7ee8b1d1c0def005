"""Figure builders and the epsilon sweep of the flows page."""

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.experiments import summarise
from hierdp_core.flows.experiments import flow_sweep
from hierdp_core.flows.figures import (
    FALSE_POSITIVE,
    flow_map,
    flow_sweep_figure,
    level_pairs,
    metrics_by_level,
    od_matrix,
)
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
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert FALSE_POSITIVE in legend and legend[0].startswith("<")


def test_flow_map_leaves_out_areas_off_the_map_and_labels_hover():
    coords = COORDS.drop(index="IL").assign(label=["New York", "California"])
    fig = flow_map(pairs([50, 99, 7, 20, 3]), coords, title="t")
    lines = [t for t in fig.data if t.type == "scattergeo" and t.mode == "lines"]
    assert sum(list(t.lon).count(None) for t in lines) == 1  # only NY>CA
    assert "3 flows to or from areas off the map" in fig.layout.title.text
    assert any("New York → California: 50" in str(t.text) for t in fig.data)


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


def test_level_pairs_align_truth_and_release():
    data = synthetic_flows(2, 3, 0.4, seed=5)
    release = get_mechanism("inftda").release(data, PrivacyBudget.zcdp(0.05),
                                              source=NoiseSource(seed=2))
    for level in range(data.depth + 1):
        frame = level_pairs(data, release, level)
        assert frame["true"].sum() == data.n
        assert frame["released"].sum() == release.total()
        assert ((frame["true"] > 0) | (frame["released"] != 0)).all()
        released = release.level_frame(level)
        merged = frame.merge(released, on=["origin_id", "destination_id"])
        assert len(merged) == len(released) and (merged["released"] == merged["value"]).all()


def test_flow_sweep_figure_has_error_and_fdr_panels():
    data = synthetic_flows(2, 2, 0.5, seed=3)
    runs = flow_sweep(data, ["inftda", "tda-l2"], [0.5, 2.0], 2)
    fig = flow_sweep_figure(runs, level_name=data.level_names[-1])
    means = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(means) == 4 and [t.showlegend for t in means].count(True) == 2
    assert {t.xaxis for t in means} == {"x", "x2"} and fig.layout.yaxis.type == "log"
    assert "false discovery rate" in fig.layout.annotations[1].text
    with pytest.raises(InputError, match="no runs"):
        flow_sweep_figure(runs, level_name="nowhere")
    with pytest.raises(InputError, match="metric"):
        flow_sweep_figure(runs, level_name=data.level_names[-1], metric="fdr")

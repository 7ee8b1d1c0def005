"""Figure builders: traces, titles, axis titles, colour ranges, log handling, limits."""

from __future__ import annotations

import contextvars
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from hierdp_core import figure_parts, palette, sweep_figures, viz
from hierdp_core.errors import InputError
from hierdp_core.experiments import summarise, sweep
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import error_metrics
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource


@pytest.fixture(scope="module")
def data(small_county_data):
    return small_county_data


@pytest.fixture(scope="module")
def release(data):
    return get_mechanism("least-squares").release(data, PrivacyBudget.pure(0.5),
                                                  split=[0, 1, 1], source=NoiseSource(seed=3))


@pytest.fixture(scope="module")
def metrics(data, release):
    return error_metrics(data.hierarchy, data.node_counts(), release.values)


def _title(fig) -> str:
    return fig.layout.title.text


# ---- offline config ------------------------------------------------------------------
def test_plotly_config_serves_topology_offline():
    config = figure_parts.plotly_config()
    assert config["topojsonURL"].startswith("data:application/json,")
    assert "http" not in config["topojsonURL"]


# ---- scatter ---------------------------------------------------------------------------
def test_scatter_plots_value_plus_one_on_log_axes():
    truth = np.array([0, 10, 1000])
    released = np.array([2, -3, 990])
    fig = viz.true_vs_released_scatter(truth, released, names=["x", "y", "z"],
                                       level_name="county")
    points, line = fig.data
    np.testing.assert_array_equal(points.x, [1, 11, 1001])
    np.testing.assert_array_equal(points.y, [3, 1, 991])  # negatives drawn at 0 (+1)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "+ 1" in fig.layout.xaxis.title.text and "+ 1" in fig.layout.yaxis.title.text
    assert list(line.x) == list(line.y)  # the y = x reference
    assert "county" in _title(fig) and "1 negative" in _title(fig)
    assert points.customdata[1][0] == "y" and points.customdata[1][2] == "-3"
    fig = viz.true_vs_released_scatter(truth, truth, level_name="c", title="My title")
    assert _title(fig).startswith("My title")


# ---- treemap ---------------------------------------------------------------------------
def test_treemap_whole_tree(data, release):
    h = data.hierarchy
    fig = viz.hierarchy_treemap(h, release.values)
    (trace,) = fig.data
    assert isinstance(trace, go.Treemap) and len(trace.ids) == h.n_nodes
    assert trace.parents[0] == "" and trace.ids[0] == "root"
    values = np.asarray(trace.values)
    # tile sizes nest: every parent equals the sum of its children
    assert h.consistency_violations(values.reshape(-1, 1), tol=1e-6) == 0
    assert trace.branchvalues == "total"
    assert _title(fig)


def test_treemap_node_limit_and_depth(data, release):
    h = data.hierarchy
    n_states = h.level_size(1)
    fig = viz.hierarchy_treemap(h, release.values, max_nodes=1 + n_states)
    assert len(fig.data[0].ids) == 1 + n_states
    assert "county not shown" in _title(fig)
    fig = viz.hierarchy_treemap(h, release.values, max_nodes=n_states)  # the states do not
    assert len(fig.data[0].ids) == n_states  # the root, the largest states, "2 more"
    assert fig.data[0].labels[-1] == "2 more" and "largest state units shown" in _title(fig)
    fig = viz.hierarchy_treemap(h, release.values, max_depth=1)
    assert len(fig.data[0].ids) == 1 + n_states
    with pytest.raises(InputError):
        viz.hierarchy_treemap(h, release.values[:5])


def test_treemap_below_a_unit(data, release):
    """A treemap from a unit down: the unit, its children, their children ..., each tile the
    sum of its children's, the unit's branches coloured as from the root; a root that is no
    node is refused."""
    h = data.hierarchy
    state = int(h.level_offsets[1]) + 1
    fig = viz.hierarchy_treemap(h, release.values, root=state)
    trace = fig.data[0]
    counties = h.children(state)
    assert list(trace.ids) == list(h.node_ids()[[state, *counties]])
    assert list(trace.parents) == ["", *[h.node_ids()[state]] * counties.size]
    values = np.asarray(trace.values)
    assert values[0] == pytest.approx(values[1:].sum())
    assert list(values[1:]) == list(np.maximum(release.values[counties].sum(axis=1), 0))
    whole = viz.hierarchy_treemap(h, release.values).data[0]
    assert trace.marker.colors[0] == whole.marker.colors[0]  # the page's colour
    assert trace.marker.colors[1] == whole.marker.colors[1 + h.level_size(1)]  # 1st county
    assert h.level_names[1] in _title(fig) and "1 nodes" not in _title(fig)
    with pytest.raises(InputError):
        viz.hierarchy_treemap(h, release.values, root=h.n_nodes)


def test_treemap_shows_the_largest_units_when_a_level_does_not_fit(data, release):
    """Not even the level below the root fits: its largest units, the rest as one tile whose
    size is their total (a flat table of thousands of units, a zoomed region of 1,200
    towns)."""
    h = data.hierarchy
    states = np.arange(h.level_offsets[1], h.level_offsets[2])
    totals = np.maximum(release.values.sum(axis=1), 0)
    trace = viz.hierarchy_treemap(h, release.values, max_nodes=5).data[0]
    largest = states[np.argsort(-totals[states], kind="stable")[:3]]
    assert list(trace.ids[1:4]) == list(h.node_ids()[np.sort(largest)])
    assert trace.ids[4] == f"root/{viz.OTHERS_ID}" and trace.labels[4] == "3 more"
    values = np.asarray(trace.values)
    assert values[4] == pytest.approx(totals[np.setdiff1d(states, largest)].sum())
    assert values[0] == pytest.approx(values[1:].sum())
    state = int(h.level_offsets[1]) + 1
    zoomed = viz.hierarchy_treemap(h, release.values, root=state, max_nodes=4).data[0]
    counties = h.children(state)
    assert len(zoomed.ids) == 4 and zoomed.labels[-1] == f"{counties.size - 2} more"
    assert zoomed.parents[-1] == h.node_ids()[state]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("name", list(palette.PALETTES))
def test_treemap_labels_read_on_their_tiles(data, release, name, dark):
    """Every tile label stands WCAG 4.5:1 off its tile, in both themes and every palette
    (the dark theme's white on light pink read 1.9:1); a branch keeps its colour down the
    tree, and the root tile is the page's colour."""
    def figure():
        palette.use(name, dark=dark)
        return viz.hierarchy_treemap(data.hierarchy, release.values)

    trace = contextvars.copy_context().run(figure).data[0]
    tiles, texts = list(trace.marker.colors), list(trace.textfont.color)
    assert len(tiles) == len(texts) == len(trace.ids)
    assert min(palette.contrast(t, c) for t, c in zip(texts, tiles, strict=True)) >= 4.5
    assert tiles[0] == palette.BACKGROUND[dark]
    h = data.hierarchy
    first_state = h.level_offsets[1]
    county = h.children(first_state)[0]
    assert tiles[county] == tiles[first_state] != tiles[first_state + 1]


def test_treemap_draws_one_level_when_two_would_be_too_many_tiles(data, release):
    h = data.hierarchy
    two_levels = int(h.level_offsets[3])
    assert viz.hierarchy_treemap(h, release.values, max_drawn=two_levels).data[0].maxdepth == 3
    assert viz.hierarchy_treemap(h, release.values,
                                 max_drawn=two_levels - 1).data[0].maxdepth == 2


# ---- metrics ---------------------------------------------------------------------------
def test_metric_by_level(metrics):
    fig = viz.metric_by_level(metrics, "mae")
    (bar,) = fig.data
    assert isinstance(bar, go.Bar) and list(bar.x) == ["total", "state", "county"]
    assert fig.layout.yaxis.title.text == "Mean absolute error (count per cell)"
    assert fig.layout.xaxis.title.text == "geography level"
    assert "cells of |released − true|" in _title(fig)  # definition from metric_names
    with pytest.raises(InputError):
        viz.metric_by_level(metrics, "no_such_metric")


def test_metric_by_bin(metrics):
    fig = viz.metric_by_bin(metrics, "share_over_10pct", 2)
    bins = metrics[(metrics["level"] == 2) & (metrics["bin"] != "all")]["bin"].tolist()
    assert list(fig.data[0].x) == bins and "all" not in bins
    assert fig.layout.yaxis.tickformat == ".0%"
    assert "% of units" in fig.layout.yaxis.title.text
    assert "county" in fig.layout.xaxis.title.text and "county" in _title(fig)
    with pytest.raises(InputError):
        viz.metric_by_bin(metrics, "mae", 7)


# ---- ledger ----------------------------------------------------------------------------
def test_ledger_figure_s_legend_stands_above_its_bars(release):
    """In the report the legend below the axis title was cut off: two bars of each level
    with no key (a new user's review)."""
    legend = viz.ledger_figure(release.ledger).layout.legend
    assert legend.yanchor == "bottom" and legend.y >= 1.0


def test_ledger_figure_marks_unmeasured_levels(release):
    fig = viz.ledger_figure(release.ledger)  # split [0, 1, 1]: the root is not measured
    expected, ci = fig.data
    assert list(expected.x) == ["total", "state", "county"]
    assert math.isnan(expected.y[0]) and expected.y[1] > 0 and ci.y[1] > expected.y[1]
    assert [a.text for a in fig.layout.annotations] == ["not measured"]
    assert "count" in fig.layout.yaxis.title.text
    assert "no true data" in _title(fig)


# ---- sweeps ----------------------------------------------------------------------------
def test_sweep_figure(data):
    runs = sweep(data, ["topdown", "raw-geometric"], [0.5, 1, 2], 2, seed=1)
    summary = summarise(runs, "rmse")
    fig = sweep_figures.sweep_figure(summary, metric="rmse", level_name="county")
    assert len(fig.data) == 4  # a band and a line per mechanism
    bands = [t for t in fig.data if t.fill == "toself"]
    lines = [t for t in fig.data if t.fill != "toself"]
    assert [t.name for t in lines] == ["topdown", "raw-geometric"]
    assert len(bands) == 2 and len(bands[0].x) == 6
    assert fig.layout.xaxis.type == "log" and "epsilon" in fig.layout.xaxis.title.text
    assert fig.layout.yaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [0.5, 1, 2]
    ticks = np.asarray(fig.layout.yaxis.tickvals)  # 1-2-5 x powers of ten around the data
    shown = summary.loc[summary["level_name"] == "county", ["low", "high"]].to_numpy()
    assert len(ticks) >= 2 and ticks.min() <= shown.max() and ticks.max() >= shown.min()
    mantissa = ticks / 10.0 ** np.floor(np.log10(ticks))
    assert np.isin(np.round(mantissa, 6), [1, 2, 5]).all()
    assert "Root mean squared error" in fig.layout.yaxis.title.text
    assert "county" in _title(fig) and "5%-95%" in _title(fig)
    fig = sweep_figures.sweep_figure(summary, metric="rmse", level_name="county", log_y=False)
    assert fig.layout.yaxis.type == "linear"
    with pytest.raises(InputError):
        sweep_figures.sweep_figure(summary, metric="rmse", level_name="tract")


# ---- one node --------------------------------------------------------------------------
def test_category_bars():
    cats = ["F", "M <x>"]
    fig = viz.category_bars(cats, [10, 20], [11.5, 18.2], [11, 19], node_label="Cook <IL>")
    assert [t.name for t in fig.data] == ["true", "noisy measurement", "released"]
    assert list(fig.data[0].x) == ["F", "M &lt;x&gt;"]
    assert fig.layout.barmode == "group"
    assert "Cook &lt;IL&gt;" in _title(fig)
    assert fig.layout.yaxis.title.text == "count" and fig.layout.xaxis.title.text == "category"
    fig = viz.category_bars(cats, None, [np.nan, np.nan], [11, 19], node_label="x")
    assert [t.name for t in fig.data] == ["released"]
    assert "not measured" in _title(fig)


def test_split_comparison_figure(data):
    from hierdp_core.experiments import compare_splits, summarise

    runs = compare_splits(data, "topdown", 1.0, {"uniform": "uniform", "finer": "finer"},
                          trials=3)
    fig = sweep_figures.split_comparison_figure(summarise(runs, "mae", by="split"), metric="mae")
    assert [t.name for t in fig.data] == ["uniform", "finer"]
    assert all(list(t.x) == list(data.hierarchy.level_names) for t in fig.data)
    assert fig.layout.barmode == "group" and "epsilon = 1" in _title(fig)
    with pytest.raises(InputError):
        sweep_figures.split_comparison_figure(summarise(runs, "mae"), metric="mae")  # no split column

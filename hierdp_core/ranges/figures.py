"""Figures of range releases (plotly): one unit's histogram over the ordered attribute with
DAWA's private buckets shaded behind it, the cumulative (prefix) curves, the error of several
methods by level and the epsilon sweep. Builders take arrays and frames, never a mechanism.

The true histograms are confidential: figures that draw them say so (`EVALUATION`).

Example
-------
>>> fig = histogram_with_buckets([str(a) for a in range(6)], [5, 4, 3, 3, 1, 0],
...                              [6, 3, 3, 3, 1, 0], np.array([0, 1, 4, 6]), "Unit A")
>>> len(fig.layout.shapes), fig.layout.title.text.startswith("Unit A: 3 buckets")
(2, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.experiments import summarise
from hierdp_core.figure_parts import PALETTE, esc, figure_title, log_axis_ticks, number_texts, rgba
from hierdp_core.sweep_figures import sweep_figure

EVALUATION = "true values: confidential, evaluation only, not a DP release"
RELEASED_COLOUR = PALETTE[0]
NOISY_COLOUR = PALETTE[1]
BAND_COLOUR = rgba("#2f5d8a", 0.10)
# metric of `hierdp_core.ranges.evaluation.range_metrics` -> (label, unit)
RANGE_METRICS = {
    "mean_query_error": ("mean error per query", "people"),
    "max_unit_query_error": ("largest unit's mean error per query", "people"),
    "max_query_error": ("largest error of any query", "people"),
    "cell_mae": ("mean absolute error per cell", "people"),
}


def metric_title(metric: str) -> str:
    """Axis title of a range metric with its unit, e.g. 'mean error per query (people)'."""
    label, unit = RANGE_METRICS.get(metric, (metric.replace("_", " "), ""))
    return f"{label} ({unit})" if unit else label


def _cells(values: Sequence[str], *series) -> tuple[np.ndarray, list[np.ndarray], dict]:
    """Cell positions 0..n-1, the series as float arrays of n values, and an x axis labelled
    with the attribute's values (about ten ticks)."""
    n = len(values)
    if n == 0:
        raise InputError("no attribute values to draw")
    arrays = []
    for s in series:
        a = np.asarray(s, dtype=float).ravel()
        if a.size != n:
            raise InputError(f"a histogram has {a.size} cells; the attribute has {n} values")
        arrays.append(a)
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, n) if n / s <= 12)
    ticks = list(range(0, n, step))
    axis = {"tickmode": "array", "tickvals": ticks,
            "ticktext": [esc(values[i]) for i in ticks], "range": [-0.5, n - 0.5]}
    return np.arange(n), arrays, axis


def bucket_bands(edges: np.ndarray | None, n: int) -> list[tuple[float, float]]:
    """x spans (cell positions) of every second bucket of a partition, the ones shaded;
    ``edges`` are the k + 1 bucket edges 0 .. n (None: no partition, nothing shaded; one
    bucket per cell: nothing shaded either, there is nothing to show)."""
    if edges is None:
        return []
    e = np.asarray(edges, dtype=np.int64)
    if e.ndim != 1 or e.size < 2 or e[0] != 0 or e[-1] != n or (np.diff(e) <= 0).any():
        raise InputError(f"bucket edges must rise from 0 to {n}")
    if e.size == n + 1:
        return []
    return [(e[i] - 0.5, e[i + 1] - 0.5) for i in range(0, e.size - 1, 2)]


def histogram_with_buckets(values: Sequence[str], true, released, edges, title: str, *,
                           noisy=None, attribute: str = "age",
                           height: int = 430) -> go.Figure:
    """One unit's histogram over the ordered ``values``: the released counts as light bars,
    the true ones (confidential, `EVALUATION`) as a thin step line over them, optionally the
    real-valued estimate before consistency (``noisy``, hidden until clicked in the legend),
    and the private buckets of ``edges`` (DAWA's Stage 1; None for methods without a
    partition) as alternating shaded bands, their number in the title."""
    x, (t, r), axis = _cells(values, true, released)
    labels = [esc(v) for v in values]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x, y=t, name="true (confidential)", mode="lines",
        line={"shape": "hvh", "width": 1.5, "color": palette.figure_look()["truth"]},
        customdata=np.column_stack([labels, number_texts(t)]),
        hovertemplate=f"{esc(attribute)} %{{customdata[0]}}<br>true: %{{customdata[1]}}"
                      "<extra></extra>"))
    fig.add_trace(go.Bar(
        x=x, y=r, name="released", marker_color=RELEASED_COLOUR, opacity=0.6,
        customdata=np.column_stack([labels, number_texts(r)]),
        hovertemplate=f"{esc(attribute)} %{{customdata[0]}}<br>released: "
                      "%{customdata[1]}<extra></extra>"))
    if noisy is not None:
        _, (z,), _ = _cells(values, noisy)
        fig.add_trace(go.Scatter(
            x=x, y=z, name="estimate before consistency", mode="lines",
            line={"color": NOISY_COLOUR, "width": 1.2, "dash": "dot"}, visible="legendonly",
            customdata=np.column_stack([labels, number_texts(z)]),
            hovertemplate=f"{esc(attribute)} %{{customdata[0]}}<br>estimate: "
                          "%{customdata[1]}<extra></extra>"))
    for x0, x1 in bucket_bands(edges, len(values)):
        fig.add_vrect(x0=x0, x1=x1, fillcolor=BAND_COLOUR, line_width=0, layer="below")
    if edges is None:
        head, sub = f"{esc(title)}: no partition", "every value measured"
    else:
        k = len(edges) - 1
        head = f"{esc(title)}: {k} bucket{'s' if k != 1 else ''}"
        sub = ("one bucket per value" if k == len(values)
               else "shaded: the private buckets (every other one)")
    fig.update_layout(
        title=figure_title(head, f"{sub}; step line: true values (evaluation only)"),
        height=height, bargap=0.05,
        xaxis={"title": {"text": esc(attribute)}, **axis},
        yaxis={"title": {"text": "people"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.22}, hovermode="x unified",
        margin={"t": 70, "r": 30})
    return fig


def cumulative_figure(values: Sequence[str], true, released, title: str, *,
                      attribute: str = "age", height: int = 430) -> go.Figure:
    """The prefix answers of one unit ("people with ``attribute`` at most a"), true
    (confidential, `EVALUATION`) and released; the largest gap is in the subtitle."""
    x, (t, r), axis = _cells(values, true, released)
    ct, cr = np.cumsum(t), np.cumsum(r)
    labels = [esc(v) for v in values]
    fig = go.Figure()
    for name, y, style in (("true", ct, {"color": "rgb(110, 110, 110)", "width": 3}),
                           ("released", cr, {"color": RELEASED_COLOUR, "width": 1.5,
                                             "dash": "dash"})):
        fig.add_trace(go.Scatter(
            x=x, y=y, name=name, mode="lines", line=style,
            customdata=np.column_stack([labels, number_texts(y)]),
            hovertemplate=f"{esc(attribute)} ≤ %{{customdata[0]}}<br>{name}: "
                          "%{customdata[1]}<extra></extra>"))
    gap = np.abs(cr - ct)
    worst = int(gap.argmax())
    fig.update_layout(
        title=figure_title(f"Cumulative: {esc(title)}",
                     f"largest gap {number_texts(gap[worst:worst + 1])[0]} people at "
                     f"{esc(attribute)} ≤ {labels[worst]}; true: evaluation only"),
        height=height, xaxis={"title": {"text": f"{esc(attribute)} (at most)"}, **axis},
        yaxis={"title": {"text": "people (cumulative)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.22}, hovermode="x unified",
        margin={"t": 70, "r": 30})
    return fig


def method_comparison_figure(table: pd.DataFrame, *, metric: str = "mean_query_error",
                             epsilon: float | None = None, height: int = 400) -> go.Figure:
    """Grouped bars of a metric per level, one colour per mechanism (log y when the values
    span more than a factor 20); ``table`` has the columns ``mechanism, level_name`` and
    ``metric`` (one row per mechanism and level, as `hierdp_core.experiments.repeat_releases`
    stacks `range_metrics`)."""
    missing = {"mechanism", "level_name", metric} - set(table.columns)
    if missing:
        raise InputError(f"the comparison lacks column(s) {sorted(missing)}")
    levels = list(pd.unique(table["level_name"]))
    fig = go.Figure()
    for i, (method, part) in enumerate(table.groupby("mechanism", sort=False)):
        part = part.set_index("level_name").reindex(levels)
        y = part[metric].to_numpy(float)
        fig.add_trace(go.Bar(
            x=[esc(lv) for lv in levels], y=y, name=esc(method),
            marker_color=PALETTE[i % len(PALETTE)], customdata=number_texts(y),
            hovertemplate=f"<b>{esc(method)}</b><br>%{{x}}: %{{customdata}}<extra></extra>"))
    positive = table[metric].to_numpy(float)
    use_log = bool((positive > 0).all() and positive.max() > 20 * positive.min())
    eps = f" at ε = {epsilon:g}" if epsilon is not None else ""
    fig.update_layout(
        barmode="group", height=height,
        title=figure_title(f"{RANGE_METRICS.get(metric, (metric,))[0].capitalize()} by level{eps}",
                     f"one release per mechanism ({EVALUATION})"),
        xaxis={"title": {"text": "level"}, "type": "category"},
        yaxis={"title": {"text": metric_title(metric) + (" (log scale)" if use_log else "")},
               "type": "log" if use_log else "linear",
               **(log_axis_ticks(positive) if use_log else {})},
        legend={"title": {"text": "mechanism"}})
    return fig


def range_sweep_figure(runs: pd.DataFrame, *, metric: str, level_name: str) -> go.Figure:
    """A metric against epsilon (log-log) per method at one level, mean and 5-95 % band over
    the trials (input: one row per method, epsilon, trial and level, as
    `hierdp_core.experiments.repeat_releases` stacks `range_metrics`)."""
    fig = sweep_figure(summarise(runs, metric), metric=metric, level_name=level_name)
    log = fig.layout.yaxis.type == "log"
    label = RANGE_METRICS.get(metric, (metric,))[0].capitalize()
    fig.update_layout(title_text=fig.layout.title.text.replace(metric.capitalize(), label, 1),
                      yaxis_title_text=metric_title(metric) + (" (log scale)" if log else ""))
    return fig

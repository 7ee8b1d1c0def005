"""Figure builders (plotly) for the dashboard and the evaluation report.

Every builder returns a `plotly.graph_objects.Figure` with a title, axis titles with units
and hover text naming the node and its value. Nothing here needs the internet. Maps
(choropleths) are in `hierdp_core.map_figures`, sweep and trade-off figures in
`hierdp_core.sweep_figures`.

Offline maps need one more thing. plotly.js fetches a world outline file
(``https://cdn.plot.ly/un/world_110m.json``) for every geo subplot whose trace has a
``locationmode`` -- and a choropleth with ``geojson=...`` always has one (``geojson-id``) --
and draws nothing if that fetch fails. `plotly_config()` returns a plotly *config* whose
``topojsonURL`` points at an empty topology held in a ``data:`` URL, so no request leaves
the browser; pass it wherever a figure is shown:
``st.plotly_chart(fig, config=plotly_config())`` or ``fig.to_html(config=plotly_config())``.

Text from the data (node labels, level and category names) is HTML-escaped before it goes
into titles or hover text, so a label such as ``<b>`` is shown as typed.

Example
-------
>>> fig = metric_by_level(pd.DataFrame({"level": [0, 1], "level_name": ["total", "state"],
...                                     "bin": ["all", "all"], "units": [1, 2],
...                                     "cells": [1, 2], "mae": [0.5, 1.5]}), "mae")
>>> fig.layout.yaxis.title.text
'mean absolute error (count per cell)'
"""

from __future__ import annotations

import html
import math
import urllib.parse
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import hex_to_rgb

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.metric_names import REGISTRY, axis_title
from hierdp_core.metrics import ALL_BIN, metric_descriptions

SEQUENTIAL_SCALE = "Viridis"  # the standard palette's; figures read `palette.active()`
DIVERGING_SCALE = "RdBu_r"  # blue = below truth, red = above


class _ActiveColours(Sequence):
    """The active palette's category colours (`hierdp_core.palette`), read when indexed."""

    def __getitem__(self, i):
        return palette.active().categorical[i]

    def __len__(self) -> int:
        return len(palette.active().categorical)


PALETTE = _ActiveColours()
_EMPTY_TOPOLOGY = '{"type":"Topology","objects":{},"arcs":[]}'

# metric -> (axis label, unit shown in brackets, is a fraction shown as %): the registry's
METRIC_AXES: dict[str, tuple[str, str, bool]] = {
    key: (entry.name, entry.unit, entry.percent) for key, entry in REGISTRY.items()}


def plotly_config(**extra) -> dict:
    """A plotly config that lets map figures render offline (see module doc).

    ``extra`` keys are merged in (e.g. ``displaylogo=False``)."""
    url = "data:application/json," + urllib.parse.quote(_EMPTY_TOPOLOGY) + "#"
    return {"topojsonURL": url, "displaylogo": False, **extra}


def metric_axis_title(metric: str) -> str:
    """Readable axis title with unit, e.g. ``'Mean absolute error (count per cell)'``."""
    return axis_title(metric)


# ---- helpers ---------------------------------------------------------------------------
def _esc(text) -> str:
    return html.escape(str(text), quote=False)


def _fmt(v: float) -> str:
    """A number for hover text: thousands separators, integers without decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 999.5:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _fmt_array(values) -> list[str]:
    return [_fmt(v) for v in np.asarray(values, dtype=float).ravel()]


def _as_1d(name: str, values, n: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric") from exc
    arr = arr.ravel() if arr.ndim != 1 else arr
    if n is not None and arr.size != n:
        raise InputError(f"{name} has {arr.size} values, expected {n}")
    return arr


def _names(names, n: int, default) -> list[str]:
    if names is None:
        names = default
    names = [str(x) for x in np.asarray(names, dtype=object).ravel()]
    if len(names) != n:
        raise InputError(f"{len(names)} names given for {n} values")
    return [_esc(x) for x in names]


def _title(text: str, subtitle: str | None = None) -> dict:
    """Title with an optional smaller second line (works on every plotly >= 5)."""
    full = text if not subtitle else f"{text}<br><sup>{subtitle}</sup>"
    return {"text": full, "x": 0.0, "xanchor": "left"}


def _rgba(colour: str, alpha: float) -> str:
    r, g, b = hex_to_rgb(colour)
    return f"rgba({r}, {g}, {b}, {alpha})"


def _short(v: float) -> str:
    """Compact tick label: 1, 10, 1k, 10k, 1M."""
    a = abs(v)
    sign = "-" if v < 0 else ""
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{sign}{a / div:g}{suffix}"
    return f"{sign}{a:g}"


def _log_axis_ticks(values) -> dict:
    """Plotly axis settings for a log axis over positive ``values``: ticks at 1, 2 and 5
    times powers of ten (only powers of ten over more than three decades), full labels."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {}
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    steps = (1.0,) if hi - lo > 3 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**d for d in range(lo, hi + 1) for m in steps
             if v.min() / 1.5 <= m * 10.0**d <= v.max() * 1.5]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [_short(t) for t in ticks]}


# ---- scatter ---------------------------------------------------------------------------
def true_vs_released_scatter(truth, released, *, names=None, level_name: str,
                             title: str | None = None) -> go.Figure:
    """Released against true counts of one level on log-log axes of value + 1 (so zeros
    show), with the y = x line. Negative released values are drawn at 0 (noted in the
    subtitle) but shown as they are on hover."""
    t = _as_1d("truth", truth)
    r = _as_1d("released", released, t.size)
    labels = _names(names, t.size, [f"#{i}" for i in range(t.size)])
    x = np.maximum(t, 0) + 1
    y = np.maximum(r, 0) + 1
    n_neg = int(np.count_nonzero(r < 0))
    scatter = go.Scattergl if t.size > 20000 else go.Scatter
    points = scatter(
        x=x, y=y, mode="markers", name=_esc(level_name),
        marker={"size": 6, "opacity": 0.6, "color": PALETTE[0]},
        customdata=np.column_stack([labels, _fmt_array(t), _fmt_array(r)]),
        hovertemplate="<b>%{customdata[0]}</b><br>true: %{customdata[1]}"
                      "<br>released: %{customdata[2]}<extra></extra>",
    )
    finite = np.concatenate([x[np.isfinite(x)], y[np.isfinite(y)]])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (1.0, 10.0)
    line = go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="released = true",
                      line={"color": "grey", "dash": "dash", "width": 1}, hoverinfo="skip")
    sub = f"{t.size:,} units; dashed line: released = true"
    if n_neg:
        sub += f"; {n_neg:,} negative released value(s) drawn at 0"
    fig = go.Figure([points, line])
    fig.update_layout(
        title=_title(_esc(title) if title else f"True vs released counts: {_esc(level_name)}",
                     sub),
        xaxis={"type": "log", "dtick": 1, "title": {"text": "true count + 1 (log scale)"}},
        yaxis={"type": "log", "dtick": 1,
               "title": {"text": "released count + 1 (log scale)"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


# ---- hierarchy -------------------------------------------------------------------------
def hierarchy_treemap(hierarchy, totals, *, max_depth: int | None = None,
                      max_nodes: int = 5000, max_drawn: int = 1000,
                      labels=None) -> go.Figure:
    """A treemap of the tree, sized by ``totals`` (one per node, or (n_nodes, k) summed).

    ``labels`` (one per node) replaces the nodes' codes as tile labels.
    Shows the levels from the root down to the deepest level whose cumulative node count
    is <= ``max_nodes`` (and <= ``max_depth``); at first two levels below the root are
    drawn, or one when that would exceed ``max_drawn`` tiles (drawing thousands of tiles takes
    the browser seconds); clicking a tile zooms into it. Tile sizes are the shown leaves' totals
    (negatives at 0) summed upwards, so the tiles nest even for an inconsistent release;
    hover shows each node's own value.
    """
    h = hierarchy
    t = np.asarray(totals, dtype=float)
    if t.ndim == 2:
        t = t.sum(axis=1)
    if t.shape != (h.n_nodes,):
        raise InputError(f"totals must have one value per node ({h.n_nodes}), got shape "
                         f"{np.shape(totals)}")
    if max_nodes < 1:
        raise InputError(f"max_nodes must be >= 1, got {max_nodes}")
    wanted = h.depth if max_depth is None else max(0, min(int(max_depth), h.depth))
    depth = wanted
    while depth > 0 and h.level_offsets[depth + 1] > max_nodes:
        depth -= 1
    n = int(h.level_offsets[depth + 1])

    sizes = np.zeros(n)
    sl = h.level_slice(depth)
    sizes[sl] = np.nan_to_num(np.maximum(t[sl], 0))
    for level in range(depth, 0, -1):
        sizes[h.level_slice(level - 1)] = np.add.reduceat(
            sizes[h.level_slice(level)], h.child_starts(level))
    level_names = np.asarray(h.level_names, dtype=object)[h.level_of_nodes()[:n]]
    names = h.labels() if labels is None else np.asarray(labels, dtype=object)
    labels = [_esc(x) for x in names[:n]]
    tiles, texts = _treemap_colours(h, n)
    fig = go.Figure(go.Treemap(
        ids=list(h.node_ids()[:n]),
        parents=list(h.parent_ids()[:n]),
        labels=labels,
        values=sizes,
        branchvalues="total",
        marker={"colors": tiles, "line": {"color": palette.BACKGROUND[palette.is_dark()]}},
        textfont={"color": texts},
        customdata=np.column_stack([[_esc(x) for x in level_names], _fmt_array(t[:n])]),
        hovertemplate="<b>%{label}</b> (%{customdata[0]})<br>count: %{customdata[1]}"
                      "<br>share of parent: %{percentParent:.1%}<extra></extra>",
        maxdepth=3 if h.level_offsets[min(depth, 2) + 1] <= max_drawn else 2,
    ))
    shown = " > ".join(_esc(x) for x in h.level_names[:depth + 1])
    sub = f"levels {shown}; {n:,} nodes; tile area = count"
    if depth < wanted:
        nxt = h.level_names[depth + 1]
        sub += (f"; {_esc(nxt)} not shown ({int(h.level_offsets[depth + 2]):,} nodes "
                f"would exceed {max_nodes:,})")
    fig.update_layout(title=_title("Hierarchy (click a tile to zoom)", sub), height=560,
                      margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig


def _treemap_colours(h, n: int) -> tuple[list[str], list[str]]:
    """The tile and label colours of the first ``n`` nodes of a treemap: each branch below
    the root in the next category colour (its units in its colour), the root in the page's;
    each label black or white, whichever stands further off its tile (WCAG contrast >= 4.5
    for any tile: the worse of the two is at least 4.58)."""
    branch = np.arange(n)
    for level in range(2, h.depth + 1):
        sl = h.level_slice(level)
        if sl.start >= n:
            break
        branch[sl.start:min(sl.stop, n)] = branch[h.parent[sl.start:min(sl.stop, n)]]
    colours = np.asarray([*palette.active().categorical,
                          palette.BACKGROUND[palette.is_dark()]], dtype=object)
    pick = (branch - 1) % (len(colours) - 1)
    pick[0] = len(colours) - 1  # the root: the page's colour
    texts = np.asarray([max(("#000000", "#ffffff"), key=lambda t, c=c: palette.contrast(t, c))
                        for c in colours], dtype=object)  # one choice per colour
    return colours[pick].tolist(), texts[pick].tolist()


# ---- metrics ---------------------------------------------------------------------------
def _metric_column(metrics: pd.DataFrame, metric: str) -> None:
    if metric not in metrics.columns:
        raise InputError(f"no metric {metric!r} in the table; it has {list(metrics.columns)}")


def _metric_bar(x, y, metric: str, hover_units, x_title: str, title: str) -> go.Figure:
    label, unit, percent = METRIC_AXES.get(metric, (metric, "", False))
    desc = metric_descriptions().get(metric, "")
    y = np.asarray(y, dtype=float)
    text = [("n/a" if not np.isfinite(v) else (f"{v:.1%}" if percent else _fmt(v)))
            for v in y]
    fig = go.Figure(go.Bar(
        x=[_esc(v) for v in x], y=y, text=text, textposition="auto",
        marker_color=PALETTE[0],
        customdata=np.column_stack([text, hover_units]),
        hovertemplate="<b>%{x}</b><br>" + _esc(label) + ": %{customdata[0]}"
                      "<br>%{customdata[1]}<br><i>" + _esc(desc) + "</i><extra></extra>",
    ))
    fig.update_layout(
        title=_title(title, _esc(desc)),
        xaxis={"title": {"text": x_title}, "type": "category"},
        yaxis={"title": {"text": metric_axis_title(metric)},
               **({"tickformat": ".0%"} if percent else {})},
    )
    return fig


def metric_by_level(metrics: pd.DataFrame, metric: str) -> go.Figure:
    """Bars of one metric per level (the ``bin == 'all'`` rows of `error_metrics`)."""
    _metric_column(metrics, metric)
    rows = metrics[metrics["bin"] == ALL_BIN].sort_values("level")
    units = [f"{u:,} units, {c:,} cells" for u, c in zip(rows["units"], rows["cells"],
                                                          strict=True)]
    label = METRIC_AXES.get(metric, (metric,))[0]
    return _metric_bar(rows["level_name"], rows[metric], metric, units, "geography level",
                       f"{label.capitalize()} by level")


def metric_by_bin(metrics: pd.DataFrame, metric: str, level: int) -> go.Figure:
    """Bars of one metric per population-size bin (true unit total) for one level."""
    _metric_column(metrics, metric)
    rows = metrics[(metrics["level"] == level) & (metrics["bin"] != ALL_BIN)]
    if rows.empty:
        raise InputError(f"no size-bin rows for level {level}")
    name = _esc(rows["level_name"].iloc[0])
    units = [f"{u:,} units, {c:,} cells" for u, c in zip(rows["units"], rows["cells"],
                                                          strict=True)]
    label = METRIC_AXES.get(metric, (metric,))[0]
    return _metric_bar(rows["bin"], rows[metric], metric, units,
                       f"true total of the {name} (size class, count)",
                       f"{label.capitalize()} by size: {name}")


def ledger_figure(ledger: pd.DataFrame) -> go.Figure:
    """A-priori noise per cell by level: expected |error| and the 95% half-width.

    Levels that are not measured (zero share) are labelled 'not measured'."""
    needed = {"level_name", "expected_abs_error", "ci95_abs_error", "share"}
    missing = needed - set(ledger.columns)
    if missing:
        raise InputError(f"the ledger lacks column(s) {sorted(missing)}")
    x = [_esc(v) for v in ledger["level_name"]]
    exp = ledger["expected_abs_error"].to_numpy(float)
    ci = ledger["ci95_abs_error"].to_numpy(float)
    unmeasured = ~np.isfinite(exp)
    if "noise" in ledger.columns:
        unmeasured |= (ledger["noise"] == "not measured").to_numpy()
    noise = ledger["noise"].astype(str).tolist() if "noise" in ledger else [""] * len(x)
    info = [f"share {s:.1%} of the budget; {_esc(n)}" for s, n in
            zip(ledger["share"].to_numpy(float), noise, strict=True)]
    fig = go.Figure([
        go.Bar(x=x, y=np.where(unmeasured, np.nan, exp), name="expected |error|",
               marker_color=PALETTE[0], customdata=np.column_stack([_fmt_array(exp), info]),
               text=["" if u else _fmt(v) for u, v in zip(unmeasured, exp, strict=True)],
               textposition="auto",
               hovertemplate="<b>%{x}</b><br>expected |error| per cell: %{customdata[0]}"
                             "<br>%{customdata[1]}<extra></extra>"),
        go.Bar(x=x, y=np.where(unmeasured, np.nan, ci), name="95% interval half-width",
               marker_color=PALETTE[1], customdata=np.column_stack([_fmt_array(ci), info]),
               text=["" if u else _fmt(v) for u, v in zip(unmeasured, ci, strict=True)],
               textposition="auto",
               hovertemplate="<b>%{x}</b><br>95% of cells within +/- %{customdata[0]}"
                             "<br>%{customdata[1]}<extra></extra>"),
    ])
    top = np.nanmax(np.concatenate([exp[~unmeasured], ci[~unmeasured], [1.0]]))
    for name, u in zip(x, unmeasured, strict=True):
        if u:
            fig.add_annotation(x=name, y=0.05 * top, text="not measured", showarrow=False,
                               font={"color": "grey"}, yanchor="bottom")
    fig.update_layout(
        barmode="group",
        title=_title("Noise per measured cell, by level",
                     "a priori, from the budget split alone (no true data); before "
                     "consistency post-processing"),
        xaxis={"title": {"text": "geography level"}, "type": "category"},
        yaxis={"title": {"text": "absolute error per cell (count)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


# ---- one node --------------------------------------------------------------------------
def category_bars(categories: Sequence[str], truth, noisy, released, *,
                  node_label: str) -> go.Figure:
    """Grouped bars for one node: true, noisy (measured) and released count per category.

    ``truth`` or ``noisy`` may be None (not shown); NaN noisy values mean the node's level
    was not measured and are noted as such."""
    cats = [_esc(c) for c in categories]
    k = len(cats)
    series = [("true", truth, PALETTE[2]), ("noisy measurement", noisy, PALETTE[1]),
              ("released", released, PALETTE[0])]
    fig = go.Figure()
    notes = []
    for name, values, colour in series:
        if values is None:
            continue
        v = _as_1d(name, values, k)
        if name.startswith("noisy") and not np.isfinite(v).any():
            notes.append("noisy: level not measured")
            continue
        fig.add_trace(go.Bar(
            x=cats, y=v, name=name, marker_color=colour, customdata=_fmt_array(v),
            hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{customdata}}<extra></extra>"))
    fig.update_layout(
        barmode="group",
        title=_title(f"Counts by category: {_esc(node_label)}", "; ".join(notes) or None),
        xaxis={"title": {"text": "category"}, "type": "category"},
        yaxis={"title": {"text": "count"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig

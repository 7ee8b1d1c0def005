"""Figure builders (plotly) for the dashboard and the evaluation report.

Every builder returns a `plotly.graph_objects.Figure` with a title, axis titles with units
and hover text naming the node and its value. Nothing here needs the internet. Maps
(choropleths) are in `hierdp_core.map_figures`, sweep and trade-off figures in
`hierdp_core.sweep_figures`.

Figures are shown with `hierdp_core.figure_parts.plotly_config()` (offline maps); text
from the data is HTML-escaped before it goes into titles or hover text.

Example
-------
>>> fig = metric_by_level(pd.DataFrame({"level": [0, 1], "level_name": ["total", "state"],
...                                     "bin": ["all", "all"], "units": [1, 2],
...                                     "cells": [1, 2], "mae": [0.5, 1.5]}), "mae")
>>> fig.layout.yaxis.title.text
'Mean absolute error (count per cell)'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.figure_parts import (
    PALETTE,
    esc,
    escaped_names,
    figure_title,
    number_text,
    number_texts,
    numeric_1d,
)
from hierdp_core.metric_names import REGISTRY, axis_title
from hierdp_core.metrics import ALL_BIN, metric_descriptions

SEQUENTIAL_SCALE = "Viridis"  # the standard palette's; figures read `palette.active()`
DIVERGING_SCALE = "RdBu_r"  # blue = below truth, red = above

# metric -> (axis label, unit shown in brackets, is a fraction shown as %): the registry's
METRIC_AXES: dict[str, tuple[str, str, bool]] = {
    key: (entry.name, entry.unit, entry.percent) for key, entry in REGISTRY.items()}


def metric_axis_title(metric: str) -> str:
    """Readable axis title with unit, e.g. ``'Mean absolute error (count per cell)'``."""
    return axis_title(metric)


# ---- scatter ---------------------------------------------------------------------------
def true_vs_released_scatter(truth, released, *, names=None, level_name: str,
                             title: str | None = None) -> go.Figure:
    """Released against true counts of one level on log-log axes of value + 1 (so zeros
    show), with the y = x line. Negative released values are drawn at 0 (noted in the
    subtitle) but shown as they are on hover."""
    t = numeric_1d("truth", truth)
    r = numeric_1d("released", released, t.size)
    labels = escaped_names(names, t.size, [f"#{i}" for i in range(t.size)])
    x = np.maximum(t, 0) + 1
    y = np.maximum(r, 0) + 1
    n_neg = int(np.count_nonzero(r < 0))
    scatter = go.Scattergl if t.size > 20000 else go.Scatter
    points = scatter(
        x=x, y=y, mode="markers", name=esc(level_name),
        marker={"size": 6, "opacity": 0.6, "color": PALETTE[0]},
        customdata=np.column_stack([labels, number_texts(t), number_texts(r)]),
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
        title=figure_title(esc(title) if title else f"True vs released counts: {esc(level_name)}",
                     sub),
        xaxis={"type": "log", "dtick": 1, "title": {"text": "true count + 1 (log scale)"}},
        yaxis={"type": "log", "dtick": 1,
               "title": {"text": "released count + 1 (log scale)"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


# ---- hierarchy -------------------------------------------------------------------------
OTHERS_ID = "\u2026more"  # the id (below its parent's) of the tile of the units left out


def hierarchy_treemap(hierarchy, totals, *, root: int = 0, max_depth: int | None = None,
                      max_nodes: int = 600, max_drawn: int = 1000,
                      labels=None) -> go.Figure:
    """A treemap of the tree below ``root`` (a node; default the whole tree), sized by
    ``totals`` (one per node, or (n_nodes, k) summed).

    ``labels`` (one per node) replaces the nodes' codes as tile labels.
    Shows the levels from ``root`` down to the deepest level whose cumulative node count
    (under ``root``) is <= ``max_nodes`` (and <= ``max_depth`` levels below it): plotly.js
    builds every node it is given, drawn or not (3,193 US counties and states: about 3 s of
    browser time, against 0.3 s for the 53 nodes down to the states), so deeper units are
    shown by choosing a smaller ``root``. When not even the level below ``root`` fits, its
    ``max_nodes - 2`` largest units are shown and the others as one tile ("N more"). At first two levels below the root are drawn, or
    one when that would exceed ``max_drawn`` tiles; clicking a tile zooms into it. Tile
    sizes are the shown leaves' totals (negatives at 0) summed upwards, so the tiles nest
    even for an inconsistent release; hover shows each node's own value.
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
    if not 0 <= root < h.n_nodes:
        raise InputError(f"root must be a node (0..{h.n_nodes - 1}), got {root}")
    top = int(h.level_of_nodes()[root])
    under = subtree_levels(h, root)
    wanted = len(under) - 1 if max_depth is None else max(0, min(int(max_depth), len(under) - 1))
    counts = np.cumsum([lv.size for lv in under])
    depth = wanted
    while depth > 0 and counts[depth] > max_nodes:
        depth -= 1
    others = None  # not one level below fits: its largest units, the rest as one tile
    if depth == 0 and wanted > 0 and max_nodes >= 3:
        children = under[1]
        order = np.argsort(-np.nan_to_num(np.maximum(t[children], 0)), kind="stable")
        under = [under[0], np.sort(children[order[:max_nodes - 2]])]
        rest = children[order[max_nodes - 2:]]
        others = (rest.size, float(np.nan_to_num(np.maximum(t[rest], 0)).sum()))
        depth = 1
    nodes = np.concatenate(under[:depth + 1])

    sizes = np.zeros(h.n_nodes)
    deepest = under[depth]
    sizes[deepest] = np.nan_to_num(np.maximum(t[deepest], 0))
    for level in range(depth, 0, -1):
        np.add.at(sizes, h.parent[under[level]], sizes[under[level]])
    level_names = np.asarray(h.level_names, dtype=object)[h.level_of_nodes()[nodes]]
    names = h.labels() if labels is None else np.asarray(labels, dtype=object)
    ids = list(h.node_ids()[nodes])
    parents = [""] + list(h.parent_ids()[nodes[1:]])
    tiles, texts = _treemap_colours(h, under[:depth + 1])
    tile_labels = [esc(x) for x in names[nodes]]
    hover = [[esc(x) for x in level_names], number_texts(t[nodes])]
    values = sizes[nodes]
    if others is not None:  # one tile for the units left out, in the page's colour
        sizes[root] += others[1]
        values = np.append(sizes[nodes], others[1])
        ids.append(f"{ids[0]}/{OTHERS_ID}")
        parents.append(ids[0])
        tile_labels.append(f"{others[0]:,} more")
        tiles.append(tiles[0])
        texts.append(texts[0])
        hover = [[*hover[0], esc(h.level_names[top + 1])],
                 [*hover[1], *number_texts(np.array([others[1]]))]]
    drawn_two = counts[min(depth, 2)] <= max_drawn
    fig = go.Figure(go.Treemap(
        ids=ids,
        parents=parents,
        labels=tile_labels,
        values=values,
        branchvalues="total",
        marker={"colors": tiles, "line": {"color": palette.BACKGROUND[palette.is_dark()]}},
        textfont={"color": texts},
        customdata=np.column_stack(hover),
        hovertemplate="<b>%{label}</b> (%{customdata[0]})<br>count: %{customdata[1]}"
                      "<br>share of parent: %{percentParent:.1%}<extra></extra>",
        maxdepth=3 if drawn_two else 2,
    ))
    shown = " > ".join(esc(x) for x in h.level_names[top:top + depth + 1])
    sub = f"levels {shown}; {len(ids):,} nodes; tile area = count"
    if others is not None:
        sub += (f"; the {under[1].size:,} largest {esc(h.level_names[top + 1])} units shown, "
                f"{others[0]:,} more as one tile ({int(counts[1]):,} nodes would exceed "
                f"{max_nodes:,})")
    elif depth < wanted:
        nxt = h.level_names[top + depth + 1]
        sub += (f"; {esc(nxt)} not shown ({int(counts[depth + 1]):,} nodes would exceed "
                f"{max_nodes:,})")
    title = "Hierarchy" if root == 0 else esc(unit_paths(h, names, top)[root])
    fig.update_layout(title=figure_title(f"{title} (click a tile to zoom)", sub),
                      height=560, margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig


def unit_paths(h, names, deepest: int) -> np.ndarray:
    """Each node's name after its ancestors' below the root, joined by " › " (a code may
    repeat under other parents), for the nodes of the levels down to ``deepest``; the root
    keeps its own name."""
    paths = np.asarray(names, dtype=object)[:int(h.level_offsets[deepest + 1])].copy()
    for level in range(2, deepest + 1):
        sl = h.level_slice(level)
        paths[sl] = paths[h.parent[sl]] + " › " + paths[sl]
    return paths


def subtree_levels(h, root: int) -> list[np.ndarray]:
    """The nodes under ``root`` (itself first), one array per level from its level down to
    the leaves, each in node order."""
    top = int(h.level_of_nodes()[root])
    out = [np.array([root])]
    inside = np.zeros(h.n_nodes, dtype=bool)
    inside[root] = True
    for level in range(top + 1, h.depth + 1):
        sl = h.level_slice(level)
        inside[sl] = inside[h.parent[sl]]
        out.append(np.flatnonzero(inside[sl]) + sl.start)
    return out


def _treemap_colours(h, under: list[np.ndarray]) -> tuple[list[str], list[str]]:
    """The tile and label colours of the nodes ``under`` (`subtree_levels`, cut at the
    deepest shown level): each branch below the root in the next category colour (its
    units in its colour), the root in the page's; each label black or white, whichever
    stands further off its tile (WCAG contrast >= 4.5 for any tile: the worse of the two
    is at least 4.58)."""
    branch = np.full(h.n_nodes, -1)
    if len(under) > 1:
        branch[under[1]] = np.arange(under[1].size)
    for level in under[2:]:
        branch[level] = branch[h.parent[level]]
    colours = np.asarray([*palette.active().categorical,
                          palette.BACKGROUND[palette.is_dark()]], dtype=object)
    pick = branch[np.concatenate(under)] % (len(colours) - 1)
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
    text = [("n/a" if not np.isfinite(v) else (f"{v:.1%}" if percent else number_text(v)))
            for v in y]
    fig = go.Figure(go.Bar(
        x=[esc(v) for v in x], y=y, text=text, textposition="auto",
        marker_color=PALETTE[0],
        customdata=np.column_stack([text, hover_units]),
        hovertemplate="<b>%{x}</b><br>" + esc(label) + ": %{customdata[0]}"
                      "<br>%{customdata[1]}<br><i>" + esc(desc) + "</i><extra></extra>",
    ))
    fig.update_layout(
        title=figure_title(title, esc(desc)),
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
    name = esc(rows["level_name"].iloc[0])
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
    x = [esc(v) for v in ledger["level_name"]]
    exp = ledger["expected_abs_error"].to_numpy(float)
    ci = ledger["ci95_abs_error"].to_numpy(float)
    unmeasured = ~np.isfinite(exp)
    if "noise" in ledger.columns:
        unmeasured |= (ledger["noise"] == "not measured").to_numpy()
    noise = ledger["noise"].astype(str).tolist() if "noise" in ledger else [""] * len(x)
    info = [f"share {s:.1%} of the budget; {esc(n)}" for s, n in
            zip(ledger["share"].to_numpy(float), noise, strict=True)]
    fig = go.Figure([
        go.Bar(x=x, y=np.where(unmeasured, np.nan, exp), name="expected |noise|",
               marker_color=PALETTE[0], customdata=np.column_stack([number_texts(exp), info]),
               text=["" if u else number_text(v) for u, v in zip(unmeasured, exp, strict=True)],
               textposition="auto",
               hovertemplate="<b>%{x}</b><br>expected |error| per cell: %{customdata[0]}"
                             "<br>%{customdata[1]}<extra></extra>"),
        go.Bar(x=x, y=np.where(unmeasured, np.nan, ci), name="95% interval half-width",
               marker_color=PALETTE[1], customdata=np.column_stack([number_texts(ci), info]),
               text=["" if u else number_text(v) for u, v in zip(unmeasured, ci, strict=True)],
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
        title=figure_title("Noise per measured cell, by level",
                     "a priori, from the budget split alone (no true data); before "
                     "consistency post-processing"),
        xaxis={"title": {"text": "geography level"}, "type": "category"},
        yaxis={"title": {"text": "absolute noise per cell (count)"}, "rangemode": "tozero"},
        # above the bars, right: in view with them (below the axis title it was cut off)
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right",
                "x": 1.0},
    )
    return fig


# ---- one node --------------------------------------------------------------------------
def category_bars(categories: Sequence[str], truth, noisy, released, *,
                  node_label: str) -> go.Figure:
    """Grouped bars for one node: true, noisy (measured) and released count per category.

    ``truth`` or ``noisy`` may be None (not shown); NaN noisy values mean the node's level
    was not measured and are noted as such."""
    cats = [esc(c) for c in categories]
    k = len(cats)
    series = [("true", truth, PALETTE[2]), ("noisy measurement", noisy, PALETTE[1]),
              ("released", released, PALETTE[0])]
    fig = go.Figure()
    notes = []
    for name, values, colour in series:
        if values is None:
            continue
        v = numeric_1d(name, values, k)
        if name.startswith("noisy") and not np.isfinite(v).any():
            notes.append("noisy: level not measured")
            continue
        fig.add_trace(go.Bar(
            x=cats, y=v, name=name, marker_color=colour, customdata=number_texts(v),
            hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{customdata}}<extra></extra>"))
    fig.update_layout(
        barmode="group",
        title=figure_title(f"Counts by category: {esc(node_label)}", "; ".join(notes) or None),
        xaxis={"title": {"text": "category"}, "type": "category"},
        yaxis={"title": {"text": "count"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig

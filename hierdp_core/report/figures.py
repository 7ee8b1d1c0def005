"""The figures of the release report (`hierdp_core.report.stakeholder`), from the release and
public parameters only: the maps of the released totals (and, for every level left off the
maps, the reason), the smallest tenth of the released numbers with their intervals, and the a priori
trade-off of error against epsilon.

Example
-------
>>> MAX_MAP_UNITS
4000
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core.figure_parts import PALETTE, mark_x
from hierdp_core.map_figures import choropleth
from hierdp_core.report.summary import plural

MAX_MAP_UNITS = 4000  # levels with more units are left off the maps (the file stays small)
SHOWN = 20  # released numbers in the intervals figure


def release_maps(release, geometries: dict) -> tuple[dict[str, go.Figure], list[str]]:
    """(maps, notes): a map of the released totals for every level in ``geometries`` (level
    -> (GeoJSON FeatureCollection dict, plotly projection)) with at most `MAX_MAP_UNITS`
    units, and for every other level a note "LEVEL: why it has no map"."""
    h = release.hierarchy
    totals, labels = release.totals(), h.labels()
    maps, notes = {}, []
    for level, name in enumerate(h.level_names):
        size = h.level_size(level)
        if level == 0 and size == 1:
            notes.append(f"{name}: one number ({totals[0]:,.0f}), no map needed")
        elif level not in geometries:
            notes.append(f"{name}: no boundaries for this level (bundled with the sample or "
                         "chosen on the Data page), so no map")
        elif size > MAX_MAP_UNITS:
            notes.append(f"{name}: {plural(size, 'unit')}, more than the {MAX_MAP_UNITS:,} "
                         "a map in this report holds (the file would grow by tens of MB); "
                         "the Export page's GeoJSON download has every unit with its value "
                         "and interval")
        else:
            geojson, projection = geometries[level]
            sl = h.level_slice(level)
            maps[f"Released counts by {name}"] = choropleth(
                geojson, np.asarray(h.codes[level]).astype(str), totals[sl],
                title=f"Released: {name}", colorbar_title="count", names=labels[sl],
                log_scale=True, projection=projection, height=520)
    return maps, notes


def small_numbers_with_intervals(release, count: int = SHOWN) -> go.Figure:
    """``count`` released numbers (unit x category) of the finest level with their
    intervals, evenly spread in rank over the smallest tenth, where the noise matters most
    (the release must carry intervals)."""
    h = release.hierarchy
    sl = h.level_slice(h.depth)
    values = release.values[sl]
    lower, upper = release.intervals.lower[sl], release.intervals.upper[sl]
    categories = release.categories or ("",)
    units = np.repeat(h.labels()[sl], values.shape[1])
    names = np.tile(np.asarray(categories, dtype=object), values.shape[0])
    ranked = np.argsort(values.ravel(), kind="stable")
    picks = np.unique(np.linspace(0, (ranked.size - 1) // 10, count).round().astype(int))
    order = ranked[picks][::-1]
    shown = [html.escape(f"{u}, {c}" if c and len(categories) > 1 else str(u))
             for u, c in zip(units[order], names[order], strict=True)]
    flat, lo, hi = values.ravel()[order], lower.ravel()[order], upper.ravel()[order]
    level = release.intervals.record.get("level", 0.9)
    fig = go.Figure(go.Scatter(
        x=flat, y=shown, mode="markers", marker={"color": PALETTE[0], "size": 8},
        error_x={"type": "data", "symmetric": False, "array": hi - flat,
                 "arrayminus": flat - lo, "color": PALETTE[1], "thickness": 2},
        name="released", hovertemplate="<b>%{y}</b><br>released %{x:,}<extra></extra>"))
    fig.update_layout(
        title={"text": f"Released numbers among the smallest tenth "
                       f"({h.level_names[h.depth]}), with their {level:.0%} intervals<br><sup>"
                       "where the noise matters most; intervals computed from the release "
                       "alone</sup>", "x": 0.0},
        xaxis={"title": {"text": "released count (people)"}, "rangemode": "tozero"},
        yaxis={"automargin": True}, height=max(360, 24 * len(shown) + 140),
        showlegend=False)
    return fig


def tradeoff_figure(table: pd.DataFrame, chosen: float | None = None) -> go.Figure:
    """Lines of the a priori typical error per released number against epsilon, one per
    level (log axes), with the chosen epsilon marked."""
    fig = go.Figure()
    for i, (level, part) in enumerate(table.groupby("level_name", sort=False)):
        fig.add_trace(go.Scatter(x=part["epsilon"], y=part["expected_abs_error"],
                                 mode="lines+markers", name=html.escape(str(level)),
                                 line={"color": PALETTE[i % len(PALETTE)]}))
    if chosen is not None:
        mark_x(fig, chosen, f"chosen ε = {chosen:g}", log_axis=True)
    fig.update_layout(
        title={"text": "Typical error against ε (expected before the release and before "
                       "consistency)<br><sup>levels with equal budget shares have one "
                       "line</sup>", "x": 0.0},
        xaxis={"title": {"text": "privacy budget ε (log scale)"}, "type": "log"},
        yaxis={"title": {"text": "expected |error| per released number (log scale)"},
               "type": "log"},
        legend={"title": {"text": "level"}})
    return fig

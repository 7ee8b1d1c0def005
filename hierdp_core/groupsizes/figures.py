"""Figures for group sizes (plotly): a region's size histogram, true vs noisy vs released,
on log axes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from hierdp_core.figure_parts import PALETTE, esc, figure_title, number_texts

#: a histogram of at most this many sizes has a tick at every size (a log axis marks 1, 10)
EVERY_SIZE_TICKED = 12


def size_histogram_figure(truth, noisy, released, *, region: str,
                          min_size: int = 0) -> go.Figure:
    """Number of groups of each size (``min_size``..N; log-log) for one region: true, noisy
    (as measured) and released. Cells with no group (or a negative noisy value) cannot sit
    on a log axis and are left out; size-0 groups (``min_size`` 0) are given in the
    subtitle. Up to `EVERY_SIZE_TICKED` sizes, every size has its tick."""
    fig = go.Figure()
    notes = []
    last = 0
    for name, values, colour, mode in (("true", truth, PALETTE[2], "lines+markers"),
                                       ("noisy measurement", noisy, PALETTE[1], "markers"),
                                       ("released", released, PALETTE[0], "lines+markers")):
        if values is None:
            continue
        v = np.asarray(values, dtype=float)
        size = np.arange(v.size) + min_size
        last = max(last, int(size[-1]) if size.size else 0)
        if min_size == 0:
            notes.append(f"{name} size 0: {number_texts(v[:1])[0]}")
        shown = np.flatnonzero((v > 0) & (size > 0))
        fig.add_trace(go.Scatter(
            x=size[shown], y=v[shown], name=name, mode=mode,
            line={"color": colour, "width": 1.5}, marker={"size": 5, "color": colour},
            customdata=number_texts(v[shown]),
            hovertemplate=f"size %{{x}}<br>{name}: %{{customdata}} groups<extra></extra>"))
    ticks = ({"tickvals": list(range(max(min_size, 1), last + 1))}
             if last <= EVERY_SIZE_TICKED else {"dtick": 1})
    fig.update_layout(
        title=figure_title(f"Groups by size: {esc(region)}", "; ".join(notes)),
        xaxis={"title": {"text": "group size (people, log scale)"}, "type": "log", **ticks},
        yaxis={"title": {"text": "number of groups (log scale)"}, "type": "log", "dtick": 1},
        legend={"orientation": "h", "y": -0.2}, hovermode="closest",
    )
    return fig

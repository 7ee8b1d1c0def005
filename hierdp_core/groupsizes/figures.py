"""Figures for group sizes (plotly): a region's size histogram, true vs noisy vs released,
on log axes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from hierdp_core.figure_parts import PALETTE, esc, figure_title, number_texts


def size_histogram_figure(truth, noisy, released, *, region: str) -> go.Figure:
    """Number of groups of each size (1..N; log-log) for one region: true, noisy (as
    measured) and released. Cells with no group (or a negative noisy value) cannot sit on a
    log axis and are left out; size-0 groups are given in the subtitle."""
    fig = go.Figure()
    notes = []
    for name, values, colour, mode in (("true", truth, PALETTE[2], "lines+markers"),
                                       ("noisy measurement", noisy, PALETTE[1], "markers"),
                                       ("released", released, PALETTE[0], "lines+markers")):
        if values is None:
            continue
        v = np.asarray(values, dtype=float)
        notes.append(f"{name} size 0: {number_texts(v[:1])[0]}")
        sizes = np.flatnonzero(v[1:] > 0) + 1
        fig.add_trace(go.Scatter(
            x=sizes, y=v[sizes], name=name, mode=mode,
            line={"color": colour, "width": 1.5}, marker={"size": 5, "color": colour},
            customdata=number_texts(v[sizes]),
            hovertemplate=f"size %{{x}}<br>{name}: %{{customdata}} groups<extra></extra>"))
    fig.update_layout(
        title=figure_title(f"Groups by size: {esc(region)}", "; ".join(notes)),
        xaxis={"title": {"text": "group size (people, log scale)"}, "type": "log", "dtick": 1},
        yaxis={"title": {"text": "number of groups (log scale)"}, "type": "log", "dtick": 1},
        legend={"orientation": "h", "y": -0.2}, hovermode="closest",
    )
    return fig

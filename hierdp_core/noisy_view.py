"""What consistency does, level by level: the noisy measurements and the consistent release,
both against the truth (for evaluation only: the figure reads the true values).

`noisy_vs_released_by_level` draws, per level of the hierarchy, the spread of
``noisy - true`` beside that of ``released - true`` (box plots over the level's units: the
box is the middle half, the whiskers 1.5 times its width), the truth being the line at 0,
with each one's mean absolute error in the hover and under the level's name."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from hierdp_core.errors import InputError
from hierdp_core.figure_parts import PALETTE, esc, figure_title

NOISY_GREY = "#8c8c8c"


def _per_node(values, n_nodes: int, name: str) -> np.ndarray:
    """``values`` (per node, or per node x category: summed; None: all missing) as a float
    vector; a node missing in every category is missing."""
    if values is None:
        return np.full(n_nodes, np.nan)
    v = np.asarray(values, dtype=float)
    if v.ndim == 2:
        v = np.where(np.isnan(v).all(axis=1), np.nan, np.nansum(v, axis=1))
    if v.shape != (n_nodes,):
        raise InputError(f"{name} has shape {np.shape(values)}; expected {n_nodes} nodes")
    return v


def noisy_vs_released_by_level(hierarchy, true, noisy, released) -> go.Figure:
    """Box plots per level of ``noisy - true`` (grey) and ``released - true`` (the palette's
    first colour) over the level's units; ``true``, ``noisy`` and ``released`` are per node
    (or per node x category, summed over categories). A level whose noisy values are all
    missing (not measured) shows the released values only, and says so."""
    n = hierarchy.n_nodes
    t, z, r = (_per_node(v, n, name) for v, name in
               ((true, "true"), (noisy, "noisy"), (released, "released")))
    fig = go.Figure()
    names, mae_text = [], []
    xs = {"noisy": [], "released": []}
    ys = {"noisy": [], "released": []}
    for level in range(hierarchy.n_levels):
        sl = hierarchy.level_slice(level)
        truth = t[sl]
        name = esc(hierarchy.level_names[level])
        names.append(name)
        errors = {"noisy": z[sl] - truth, "released": r[sl] - truth}
        maes = {}
        for kind, e in errors.items():
            e = e[np.isfinite(e)]
            maes[kind] = float(np.abs(e).mean()) if e.size else None
            xs[kind].append(np.full(e.size, name, dtype=object))
            ys[kind].append(e)
        mae_text.append("not measured" if maes["noisy"] is None else
                        f"MAE noisy {maes['noisy']:.3g}, released {maes['released']:.3g}")
    for kind, colour, label in (("noisy", NOISY_GREY, "noisy measurement − true"),
                                ("released", PALETTE[0], "consistent release − true")):
        fig.add_trace(go.Box(
            x=np.concatenate(xs[kind]), y=np.concatenate(ys[kind]), name=label,
            marker_color=colour, boxpoints=False, offsetgroup=kind,
            hovertemplate=f"{label}<br>%{{y:.4g}}<extra></extra>"))
    fig.add_hline(y=0.0, line={"color": "grey", "dash": "dash", "width": 1})
    fig.update_layout(
        boxmode="group",
        title=figure_title("Noisy vs consistent vs true, per level",
                     "the error of each unit, noisy measurement and consistent release; "
                     "dashed line: the truth (error 0)"),
        xaxis={"title": {"text": "geography level"}, "type": "category",
               "tickmode": "array", "tickvals": names,
               "ticktext": [f"{nm}<br><sub>{m}</sub>" for nm, m in
                            zip(names, mae_text, strict=True)]},
        yaxis={"title": {"text": "value − true (people)"}, "zeroline": False},
        legend={"orientation": "h", "y": -0.3})
    return fig

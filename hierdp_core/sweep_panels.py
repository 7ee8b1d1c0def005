"""Trade-off figures that tell mechanisms apart when their errors are close (at the US
county level three mechanisms' lines lie on top of each other in `sweep_figure`):

- `sweep_panels`: small multiples, one panel per mechanism on shared log axes, each with its
  own 5-95% band, the other mechanisms' means drawn thin and grey for reference;
- `relative_sweep_figure`: each mechanism's error divided by a baseline mechanism's mean at
  the same epsilon (1 = as good as the baseline), with its band divided the same way.

Input: `hierdp_core.experiments.summarise` (columns ``[by, epsilon, level, level_name, mean,
low, high, trials]``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hierdp_core.errors import InputError
from hierdp_core.figure_parts import PALETTE, esc, figure_title, log_axis_ticks, rgba
from hierdp_core.sweep_figures import level_rows
from hierdp_core.viz import METRIC_AXES, metric_axis_title

REFERENCE_GREY = "rgba(128, 128, 128, 0.7)"


def _band(fig: go.Figure, eps, low, high, colour: str, group: str, **cell) -> None:
    """A filled band from ``low`` to ``high`` over ``eps``."""
    fig.add_trace(go.Scatter(
        x=np.concatenate([eps, eps[::-1]]), y=np.concatenate([high, low[::-1]]),
        mode="lines", fill="toself", fillcolor=rgba(colour, 0.3), line={"width": 0},
        hoverinfo="skip", showlegend=False, legendgroup=group, name=f"{group} band"), **cell)


def _eps_axis(eps_values) -> dict:
    ticks = sorted(eps_values)
    return {"type": "log", "tickmode": "array", "tickvals": ticks,
            "ticktext": [f"{e:g}" for e in ticks]}


def sweep_panels(summary: pd.DataFrame, *, metric: str, level_name: str,
                 log_y: bool = True, by: str = "mechanism") -> go.Figure:
    """One panel per ``by`` value (mechanism): its mean against epsilon with its 5-95% band,
    the other groups' means as thin grey lines; log epsilon axis, shared y axis (log when
    ``log_y`` and every value is positive)."""
    rows = level_rows(summary, level_name, by)
    groups = list(pd.unique(rows[by]))
    values = rows[["mean", "low", "high"]].to_numpy(float)
    use_log = log_y and bool((values > 0).all())
    fig = make_subplots(rows=1, cols=len(groups), shared_yaxes=True,
                        subplot_titles=[esc(g) for g in groups], horizontal_spacing=0.03)
    lines = {g: rows[rows[by] == g].sort_values("epsilon") for g in groups}
    for col, g in enumerate(groups, start=1):
        for other in groups:
            if other != g:
                part = lines[other]
                fig.add_trace(go.Scatter(
                    x=part["epsilon"], y=part["mean"], mode="lines", showlegend=False,
                    line={"color": REFERENCE_GREY, "width": 1, "dash": "dot"},
                    name=esc(other), hovertemplate=f"{esc(other)}: %{{y:.4g}}<extra></extra>"),
                    row=1, col=col)
        part = lines[g]
        colour = PALETTE[(col - 1) % len(PALETTE)]
        eps = part["epsilon"].to_numpy(float)
        _band(fig, eps, part["low"].to_numpy(float), part["high"].to_numpy(float), colour,
              str(g), row=1, col=col)
        fig.add_trace(go.Scatter(
            x=eps, y=part["mean"], mode="lines+markers", name=esc(g), legendgroup=str(g),
            line={"color": colour, "width": 2.5},
            hovertemplate=f"<b>{esc(g)}</b><br>epsilon %{{x}}<br>mean %{{y:.4g}}"
                          "<extra></extra>"), row=1, col=col)
        fig.update_xaxes(**_eps_axis(rows["epsilon"].unique()), row=1, col=col)
    label = METRIC_AXES.get(metric, (metric,))[0]
    fig.update_xaxes(title={"text": "epsilon (log)"})
    fig.update_yaxes(type="log" if use_log else "linear",
                     **(log_axis_ticks(values) if use_log else {"rangemode": "tozero"}))
    fig.update_yaxes(title={"text": metric_axis_title(metric)
                            + (" (log scale)" if use_log else "")}, row=1, col=1)
    trials = int(rows["trials"].min())
    fig.update_layout(
        title=figure_title(f"{label.capitalize()} vs epsilon, one panel per {by}: "
                     f"{esc(level_name)}",
                     f"mean over {trials}+ trials; band: 5%-95% of trials; grey dotted: "
                     f"the other {by}s"),
        showlegend=False, hovermode="closest", margin={"t": 90})
    return fig


def relative_sweep_figure(summary: pd.DataFrame, *, metric: str, level_name: str,
                          baseline: str, by: str = "mechanism") -> go.Figure:
    """Each group's mean (and 5-95% band) divided by ``baseline``'s mean at the same
    epsilon: below 1 is better than the baseline. The baseline's own band shows its spread
    around 1. InputError when ``baseline`` is not in the summary or its mean is 0."""
    rows = level_rows(summary, level_name, by)
    base = rows[rows[by] == baseline].set_index("epsilon")["mean"]
    if base.empty:
        raise InputError(f"no {by} {baseline!r} in the summary")
    if (base.to_numpy(float) == 0).any():
        raise InputError(f"{baseline!r} has a mean of 0 at some epsilon: no ratio")
    fig = go.Figure()
    for i, g in enumerate(pd.unique(rows[by])):
        part = rows[(rows[by] == g) & rows["epsilon"].isin(base.index)].sort_values("epsilon")
        eps = part["epsilon"].to_numpy(float)
        scale = base.loc[eps].to_numpy(float)
        colour = PALETTE[i % len(PALETTE)]
        _band(fig, eps, part["low"].to_numpy(float) / scale,
              part["high"].to_numpy(float) / scale, colour, str(g))
        fig.add_trace(go.Scatter(
            x=eps, y=part["mean"].to_numpy(float) / scale, mode="lines+markers",
            name=esc(g), legendgroup=str(g), line={"color": colour, "width": 2.5},
            hovertemplate=f"<b>{esc(g)}</b><br>epsilon %{{x}}<br>%{{y:.3f}} x "
                          f"{esc(baseline)}<extra></extra>"))
    label = METRIC_AXES.get(metric, (metric,))[0]
    fig.add_hline(y=1.0, line={"color": REFERENCE_GREY, "dash": "dash", "width": 1})
    fig.update_layout(
        title=figure_title(f"{label.capitalize()} relative to {esc(baseline)}: "
                     f"{esc(level_name)}",
                     f"mean divided by {esc(baseline)}'s mean at the same epsilon (below 1: "
                     "better); band: 5%-95% of trials, divided the same way"),
        xaxis={**_eps_axis(rows["epsilon"].unique()),
               "title": {"text": "privacy budget epsilon (log scale)"}},
        yaxis={"title": {"text": f"{label} / {esc(baseline)}'s"}},
        legend={"title": {"text": esc(by)}}, hovermode="closest")
    return fig

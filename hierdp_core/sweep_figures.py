"""Sweep and trade-off figures (plotly): a metric against epsilon, and budget splits compared."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core.errors import InputError
from hierdp_core.figure_parts import PALETTE, esc, figure_title, log_axis_ticks, number_texts, rgba
from hierdp_core.metric_names import definition
from hierdp_core.viz import METRIC_AXES, metric_axis_title


def level_rows(summary: pd.DataFrame, level_name: str, by: str) -> pd.DataFrame:
    """The rows of ``level_name``; InputError when there are none or no column ``by``."""
    if by not in summary.columns:
        raise InputError(f"no column {by!r} in the summary")
    rows = summary[summary["level_name"] == level_name]
    if rows.empty:
        raise InputError(f"no rows for level {level_name!r}; levels: "
                         f"{list(pd.unique(summary['level_name']))}")
    return rows


def sweep_figure(summary: pd.DataFrame, *, metric: str, level_name: str,
                 log_y: bool = True, by: str | None = None) -> go.Figure:
    """Mean of a metric against epsilon (log x) per mechanism (or per split), with a
    shaded band from ``low`` to ``high`` (input: `experiments.summarise`; ``by`` defaults
    to its first column). With a single epsilon (e.g. `experiments.compare_splits`) it
    draws bars with low-high error bars. A log y axis falls back to linear (and says so)
    when some value is <= 0."""
    needed = {"epsilon", "level_name", "mean", "low", "high", "trials"}
    missing = needed - set(summary.columns)
    if missing:
        raise InputError(f"the summary lacks column(s) {sorted(missing)}")
    by = by or summary.columns[0]
    rows = level_rows(summary, level_name, by)
    q = summary.attrs.get("quantiles", None)
    band = f"{q[0]:.0%}-{q[1]:.0%} of trials" if q else "low-high quantiles of trials"
    trials = rows["trials"].to_numpy()
    n_trials = (f"{int(trials.min())}" if trials.min() == trials.max()
                else f"{int(trials.min())}-{int(trials.max())}")
    single_eps = rows["epsilon"].nunique() == 1
    positive = bool((rows[["mean", "low", "high"]].to_numpy(float) > 0).all())
    use_log = log_y and positive and not single_eps  # bars are read from 0: linear axis
    label = METRIC_AXES.get(metric, (metric,))[0]
    fig = go.Figure()
    groups = list(pd.unique(rows[by]))
    for i, g in enumerate(groups):
        colour = PALETTE[i % len(PALETTE)]
        part = rows[rows[by] == g].sort_values("epsilon")
        eps = part["epsilon"].to_numpy(float)
        mean, low, high = (part[c].to_numpy(float) for c in ("mean", "low", "high"))
        custom = np.column_stack([number_texts(mean), number_texts(low), number_texts(high),
                                  part["trials"].astype(str)])
        hover = (f"<b>{esc(g)}</b><br>epsilon %{{x}}<br>{esc(label)}, mean: "
                 "%{customdata[0]}<br>band: %{customdata[1]} to %{customdata[2]}"
                 f"<br>trials: %{{customdata[3]}}<br><i>{esc(definition(metric))}</i>"
                 "<extra></extra>")
        if single_eps:
            fig.add_trace(go.Bar(
                x=[esc(g)], y=mean, name=esc(g), marker_color=colour,
                error_y={"type": "data", "symmetric": False, "array": high - mean,
                         "arrayminus": mean - low},
                customdata=custom,
                hovertemplate=hover.replace("epsilon %{x}", f"epsilon {eps[0]:g}")))
            continue
        fig.add_trace(go.Scatter(
            x=np.concatenate([eps, eps[::-1]]), y=np.concatenate([high, low[::-1]]),
            mode="lines", fill="toself", fillcolor=rgba(colour, 0.18), line={"width": 0},
            hoverinfo="skip", showlegend=False, legendgroup=str(g), name=f"{g} band"))
        fig.add_trace(go.Scatter(
            x=eps, y=mean, mode="lines+markers", name=esc(g), legendgroup=str(g),
            line={"color": colour}, customdata=custom, hovertemplate=hover))
    sub = f"mean over {n_trials} trials; {'bars' if single_eps else 'band'}: {band}"
    if log_y and not use_log and not single_eps:
        sub += "; linear y axis (some values are <= 0)"
    eps_text = f" at epsilon = {rows['epsilon'].iloc[0]:g}" if single_eps else " vs epsilon"
    fig.update_layout(
        title=figure_title(f"{label.capitalize()}{eps_text}: {esc(level_name)}", sub),
        xaxis=({"title": {"text": esc(by)}, "type": "category"} if single_eps else
               {"title": {"text": "privacy budget epsilon (log scale)"}, "type": "log",
                "tickmode": "array", "tickvals": sorted(rows["epsilon"].unique()),
                "ticktext": [f"{e:g}" for e in sorted(rows["epsilon"].unique())]}),
        yaxis={"title": {"text": metric_axis_title(metric)
                         + (" (log scale)" if use_log else "")},
               "type": "log" if use_log else "linear",
               **(log_axis_ticks(rows[["low", "high", "mean"]].to_numpy()) if use_log
                  else {}),
               **({} if use_log else {"rangemode": "tozero"})},
        legend={"title": {"text": esc(by)}},
        hovermode="closest",
    )
    return fig


def split_comparison_figure(summary: pd.DataFrame, *, metric: str) -> go.Figure:
    """Grouped bars of a metric per level, one colour per budget split, with low-high error
    bars (input: `experiments.summarise(compare_splits(...), metric, by="split")`)."""
    needed = {"split", "level", "level_name", "mean", "low", "high", "trials", "epsilon"}
    missing = needed - set(summary.columns)
    if missing:
        raise InputError(f"the summary lacks column(s) {sorted(missing)}")
    label = METRIC_AXES.get(metric, (metric,))[0]
    fig = go.Figure()
    for i, (split, part) in enumerate(summary.groupby("split", sort=False)):
        part = part.sort_values("level")
        mean, low, high = (part[c].to_numpy(float) for c in ("mean", "low", "high"))
        fig.add_trace(go.Bar(
            x=[esc(v) for v in part["level_name"]], y=mean, name=esc(split),
            marker_color=PALETTE[i % len(PALETTE)],
            error_y={"type": "data", "symmetric": False, "array": high - mean,
                     "arrayminus": mean - low},
            customdata=np.column_stack([number_texts(mean), number_texts(low), number_texts(high)]),
            hovertemplate=f"<b>{esc(split)}</b> · %{{x}}<br>mean: %{{customdata[0]}}"
                          "<br>range: %{customdata[1]} to %{customdata[2]}<extra></extra>"))
    eps = summary["epsilon"].iloc[0]
    trials = int(summary["trials"].min())
    fig.update_layout(
        barmode="group",
        title=figure_title(f"{label.capitalize()} by level for two budget splits (epsilon = {eps:g})",
                     f"mean over {trials} trials; error bars: 5%-95% of trials"),
        xaxis={"title": {"text": "geography level"}, "type": "category"},
        yaxis={"title": {"text": metric_axis_title(metric)}, "rangemode": "tozero"},
        legend={"title": {"text": "split"}},
    )
    return fig

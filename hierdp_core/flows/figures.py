"""Figures of O/D releases (plotly): flow maps between area centroids, O/D matrix heat maps,
per-level error curves and the epsilon sweep, plus `level_pairs`, the true and released
values of one tree level side by side (evaluation only). Builders take arrays and frames,
never the mechanism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.experiments import summarise
from hierdp_core.figure_parts import (
    PALETTE,
    esc,
    figure_title,
    log_axis_ticks,
    number_text,
    number_texts,
    rgba,
)
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.metrics import aligned_level
from hierdp_core.flows.release import FlowRelease
from hierdp_core.map_figures import log_ticks, symlog
from hierdp_core.viz import DIVERGING_SCALE

WIDTH_CLASSES = (1.0, 2.2, 3.8, 6.0)  # line width of the value quartiles of the shown flows
OPACITY_CLASSES = (0.35, 0.45, 0.55, 0.7)
FLOW_COLOUR = "#1f5fa8"
FALSE_POSITIVE_COLOUR = "#d62728"
FALSE_POSITIVE = "false positive (released > 0, true = 0)"
EVALUATION = "evaluation only, not a DP release"


def level_pairs(data: FlowData, release: FlowRelease, level: int) -> pd.DataFrame:
    """The pairs of a tree level that are non-zero in the truth or in the release: columns
    ``origin_id, destination_id, true, released`` (0 where absent). Reads the truth: for
    evaluation only, never a DP release."""
    truth, released, _ = aligned_level(data, release, level)
    lo, ld = data.pair_levels(level)
    width = data.level_width(ld)
    keys = np.union1d(data.level_table(level)[0], release.levels[level].keys(width))
    o, d = np.divmod(keys, width)
    return pd.DataFrame({"origin_id": data.area_ids(lo)[o], "destination_id": data.area_ids(ld)[d],
                         "true": truth, "released": released})


def _check_pairs(pairs: pd.DataFrame, coords: pd.DataFrame) -> None:
    missing = {"origin_id", "destination_id", "value"} - set(pairs.columns)
    if missing:
        raise InputError(f"the flows lack column(s) {sorted(missing)}")
    if not {"latitude", "longitude"} <= set(coords.columns):
        raise InputError("coordinates need latitude and longitude columns (index = area id)")


def _lines(part: pd.DataFrame, coords: pd.DataFrame) -> tuple[list, list]:
    """Longitudes and latitudes of the segments, separated by None (one trace, many lines)."""
    ends = [coords.loc[part[col]] for col in ("origin_id", "destination_id")]
    out = []
    for axis in ("longitude", "latitude"):
        flat = np.empty(3 * len(part), dtype=object)
        flat[0::3], flat[1::3] = ends[0][axis].to_numpy(), ends[1][axis].to_numpy()
        out.append(flat.tolist())
    return out[0], out[1]


def _class_labels(edges: np.ndarray) -> list[str]:
    """Legend text of the width classes cut at ``edges`` (class i: edges[i-1] <= v < edges[i])."""
    labels = [f"< {number_text(edges[0])}"]
    labels += [f"{number_text(a)} – {number_text(b)}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return labels + [f"≥ {number_text(edges[-1])}"]


def flow_map(pairs: pd.DataFrame, coords: pd.DataFrame, *, title: str, top: int = 200,
             false_positive: np.ndarray | None = None, base: tuple | None = None,
             unit: str = "flights", height: int = 560,
             projection: str = "albers usa") -> go.Figure:
    """The ``top`` largest flows between distinct areas as lines between area centroids.
    Line width and opacity grow with the value (4 classes: quartiles of the shown flows,
    named in the legend); the lines of a class are one trace (segments separated by None);
    hover on the midpoints. ``false_positive`` (one bool per row of ``pairs``) draws those
    flows in red. ``coords`` is indexed by area id with latitude, longitude and optionally
    ``label`` (hover text); flows with an end not in ``coords`` (off the map), from an area
    to itself, or <= 0 are left out. ``base`` = (GeoJSON dict or URL, feature ids) draws
    those boundaries in grey underneath (render with ``figure_parts.plotly_config()``)."""
    _check_pairs(pairs, coords)
    known = pairs["origin_id"].isin(coords.index) & pairs["destination_id"].isin(coords.index)
    flagged = (np.zeros(len(pairs), dtype=bool) if false_positive is None
               else np.asarray(false_positive, dtype=bool))
    drawable = (pairs["origin_id"] != pairs["destination_id"]) & (pairs["value"] > 0)
    shown = pairs.assign(_fp=flagged)[known & drawable].nlargest(top, "value")
    off_map = int((drawable & ~known).sum())
    fig = go.Figure()
    if base is not None:
        geojson, ids = base
        fig.add_trace(go.Choropleth(
            geojson=geojson, featureidkey="id", locations=list(ids), z=np.zeros(len(ids)),
            colorscale=[[0, "#f0f0f0"], [1, "#f0f0f0"]], showscale=False,
            marker_line_color="#c4c4c4", marker_line_width=0.6, hoverinfo="skip"))
    if len(shown):
        edges = np.unique(np.quantile(shown["value"], [0.25, 0.5, 0.75]))
        width_class = np.searchsorted(edges, shown["value"].to_numpy(), side="right")
        labels = _class_labels(edges)
        for fp in (False, True):  # every width class in the legend, then the false positives
            for cls in range(edges.size + 1):
                part = shown[(width_class == cls) & (shown["_fp"] == fp)]
                if fp and part.empty:
                    continue
                lon, lat = _lines(part, coords)
                fig.add_trace(go.Scattergeo(
                    lon=lon, lat=lat, mode="lines", hoverinfo="skip",
                    name=FALSE_POSITIVE if fp else labels[cls],
                    legendgroup="fp" if fp else f"class{cls}",
                    showlegend=not fp or not any(t.legendgroup == "fp" for t in fig.data),
                    line={"width": WIDTH_CLASSES[cls],
                          "color": FALSE_POSITIVE_COLOUR if fp else FLOW_COLOUR},
                    opacity=max(OPACITY_CLASSES[cls], 0.6) if fp else OPACITY_CLASSES[cls]))
        ends = [coords.loc[shown[col]] for col in ("origin_id", "destination_id")]
        names = [ends[i]["label"] if "label" in coords.columns else shown[col]
                 for i, col in enumerate(("origin_id", "destination_id"))]
        text = [f"{a} → {b}: {number_text(v)} {unit}" + (" (false positive: truly 0)" if fp else "")
                for a, b, v, fp in zip(names[0], names[1], shown["value"], shown["_fp"],
                                       strict=True)]
        fig.add_trace(go.Scattergeo(
            lon=(ends[0]["longitude"].to_numpy() + ends[1]["longitude"].to_numpy()) / 2,
            lat=(ends[0]["latitude"].to_numpy() + ends[1]["latitude"].to_numpy()) / 2,
            mode="markers", marker={"size": 9, "opacity": 0},  # invisible, for hover
            text=text, hovertemplate="%{text}<extra></extra>", showlegend=False))
    areas = coords.loc[pd.unique(pd.concat([shown["origin_id"], shown["destination_id"]]))]
    fig.add_trace(go.Scattergeo(
        lon=areas["longitude"], lat=areas["latitude"], mode="markers",
        marker={"size": 4, "color": "#333"}, showlegend=False,
        text=areas["label"] if "label" in areas.columns else areas.index,
        hovertemplate="%{text}<extra></extra>"))
    sub = f"the {len(shown):,} largest flows; width and opacity by {unit}"
    if false_positive is not None:
        n_fp = int(shown["_fp"].sum())
        sub += f"; red: {n_fp:,} false positive{'' if n_fp == 1 else 's'}"
    if off_map:
        sub += f"; {off_map:,} flows to or from areas off the map left out"
    fig.update_layout(
        title=figure_title(esc(title), sub), height=height,
        margin={"l": 0, "r": 0, "t": 60, "b": 0},
        legend={"title": {"text": unit}, "x": 0.99, "xanchor": "right", "y": 0.02,
                "yanchor": "bottom", "bgcolor": palette.figure_look()["legend"]},
        geo={"projection": {"type": projection}, "visible": False,
             "bgcolor": palette.figure_look()["bgcolor"],
             "fitbounds": "locations" if base is not None else False})
    return fig


def od_matrix(pairs: pd.DataFrame, areas: list[str], *, title: str,
              signed: bool = False, height: int = 520, unit: str = "flights") -> go.Figure:
    """A heat map of the O/D matrix over ``areas`` (rows = origins, columns = destinations);
    colours on log10(1 + |value|) with the sign kept when ``signed`` (errors), hover shows
    the value."""
    index = {a: i for i, a in enumerate(areas)}
    matrix = np.zeros((len(areas), len(areas)))
    rows = pairs["origin_id"].map(index)
    cols = pairs["destination_id"].map(index)
    ok = rows.notna() & cols.notna()
    np.add.at(matrix, (rows[ok].astype(int), cols[ok].astype(int)),
              pairs.loc[ok, "value"].to_numpy(float))
    colour = symlog(matrix)
    top = float(np.abs(colour).max()) or 1.0
    tickvals, ticktext = log_ticks(-top if signed else 0.0, top)
    if top > 2:  # 1 and 0 would overlap: keep 0 and the powers from 10 on
        keep = [i for i, v in enumerate(tickvals) if v == 0 or abs(v) > 0.5]
        tickvals, ticktext = [tickvals[i] for i in keep], [ticktext[i] for i in keep]
    fig = go.Figure(go.Heatmap(
        z=colour, x=areas, y=areas, customdata=matrix,
        colorscale=DIVERGING_SCALE if signed else "Blues", zmid=0 if signed else None,
        zmin=-top if signed else 0, zmax=top,
        colorbar={"tickvals": tickvals, "ticktext": ticktext, "orientation": "h",
                  "thickness": 12, "y": -0.16, "yanchor": "top", "title": {
                      "text": f"error ({unit})" if signed else unit, "side": "top"}},
        hovertemplate="%{y} → %{x}: %{customdata:,.0f}<extra></extra>"))
    fig.update_layout(title=figure_title(esc(title)), height=height,
                      margin={"l": 40, "r": 10, "t": 40, "b": 110},
                      xaxis={"title": {"text": "destination", "standoff": 4},
                             "tickfont": {"size": 8}, "type": "category"},
                      yaxis={"title": {"text": "origin", "standoff": 4}, "tickfont": {"size": 8},
                             "autorange": "reversed", "type": "category"})
    return fig


def _level_label(level: int, name: str) -> str:
    return f"{level}: " + name.replace(">", " →<br>")


def metrics_by_level(metrics: pd.DataFrame, unit: str = "flights") -> go.Figure:
    """Line charts of the maximum absolute error and the false discovery rate per tree level
    (input: `flow_metrics`; evaluation only)."""
    x = [_level_label(lv, n) for lv, n in zip(metrics["level"], metrics["level_name"],
                                                strict=True)]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "largest |released − true|", "false discovery rate (%)"))
    for col, column, colour, hover in ((1, "max_abs_error", FLOW_COLOUR, "max |error| %{y:,.0f}"),
                                       (2, "fdr", FALSE_POSITIVE_COLOUR, "FDR %{y:.1f}%")):
        fig.add_trace(go.Scatter(x=x, y=metrics[column], mode="lines+markers",
                                 line={"color": colour}, showlegend=False,
                                 hovertemplate=f"%{{x}}<br>{hover}<extra></extra>"),
                      row=1, col=col)
    fig.update_yaxes(title_text=unit, rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="% of released pairs > 0", range=[0, 100],
                     row=1, col=2)
    fig.update_xaxes(title_text="tree level (origin → destination)", tickfont={"size": 10})
    fig.update_layout(title=figure_title("Error and false discoveries by tree level",
                                   EVALUATION),
                      height=380, margin={"l": 60, "r": 20, "t": 80, "b": 40})
    return fig


SWEEP_ERRORS = {"max_abs_error": "largest |released − true|", "rmse": "RMSE over all pairs",
                "mae": "MAE over all pairs"}


def flow_sweep_figure(runs: pd.DataFrame, *, level_name: str,
                      metric: str = "max_abs_error", unit: str = "flights") -> go.Figure:
    """Two panels against epsilon (log x), one colour per mechanism, at ``level_name``: an
    error ``metric`` (`SWEEP_ERRORS`; log y, plotted + 1 so that 0 stays drawable) and the
    false discovery rate. Lines are the means over the trials, bands the 5-95% quantiles
    (input: `experiments.flow_sweep`; evaluation only)."""
    if metric not in SWEEP_ERRORS:
        raise InputError(f"metric must be one of {list(SWEEP_ERRORS)}, got {metric!r}")
    if level_name not in set(runs["level_name"]):
        raise InputError(f"no runs for level {level_name!r}")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        SWEEP_ERRORS[metric] + " (log scale)", "false discovery rate (%)"))
    for col, column in enumerate((metric, "fdr"), start=1):
        shift = 1.0 if col == 1 else 0.0
        summary = summarise(runs, column)
        summary = summary[summary["level_name"] == level_name]
        for i, (name, part) in enumerate(summary.groupby("mechanism", sort=False)):
            colour = PALETTE[i % len(PALETTE)]
            eps = part["epsilon"].to_numpy(float)
            fig.add_trace(go.Scatter(
                x=np.concatenate([eps, eps[::-1]]), y=np.concatenate(
                    [part["high"].to_numpy(float), part["low"].to_numpy(float)[::-1]]) + shift,
                fill="toself", fillcolor=rgba(colour, 0.15), line={"width": 0},
                mode="lines", hoverinfo="skip", showlegend=False, legendgroup=name), row=1,
                col=col)
            mean = part["mean"].to_numpy(float)
            fig.add_trace(go.Scatter(
                x=eps, y=mean + shift, name=esc(name), mode="lines+markers",
                line={"color": colour}, legendgroup=name, showlegend=col == 1,
                customdata=number_texts(mean),
                hovertemplate=f"<b>{esc(name)}</b><br>ε %{{x}}<br>mean: %{{customdata}}"
                              "<extra></extra>"), row=1, col=col)
    eps_values = sorted(runs["epsilon"].unique())
    fig.update_xaxes(type="log", title_text="total ε (log scale)", tickmode="array",
                     tickvals=eps_values, ticktext=[f"{e:g}" for e in eps_values])
    errors = runs.loc[runs["level_name"] == level_name, metric].to_numpy(float) + 1
    fig.update_yaxes(type="log", title_text=f"{unit} (+1)", row=1, col=1,
                     **log_axis_ticks(errors))
    fig.update_yaxes(title_text="% of released pairs > 0", rangemode="tozero", row=1, col=2)
    trials = int(runs["trial"].nunique())
    fig.update_layout(
        title=figure_title(f"Error against ε: {esc(level_name.replace('>', ' → '))}",
                     f"mean over {trials} trial{'' if trials == 1 else 's'}; band: 5-95% of "
                     f"trials; {EVALUATION}"),
        height=440, margin={"l": 60, "r": 20, "t": 90, "b": 50},
        legend={"title": {"text": "mechanism"}, "orientation": "h", "y": -0.22})
    return fig

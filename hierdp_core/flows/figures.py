"""Figures of O/D releases (plotly): flow maps between area centroids, O/D matrix heat maps
and per-level error curves. Builders take arrays and frames, never the mechanism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core.errors import InputError

WIDTH_CLASSES = (1.0, 2.5, 4.5, 7.0)
FLOW_COLOUR = "#1f5fa8"
FALSE_POSITIVE_COLOUR = "#d62728"


def _check_pairs(pairs: pd.DataFrame, coords: pd.DataFrame) -> None:
    missing = {"origin_id", "destination_id", "value"} - set(pairs.columns)
    if missing:
        raise InputError(f"the flows lack column(s) {sorted(missing)}")
    if not {"latitude", "longitude"} <= set(coords.columns):
        raise InputError("coordinates need latitude and longitude columns (index = area id)")


def _lines(part: pd.DataFrame, coords: pd.DataFrame) -> tuple[list, list]:
    """Longitudes and latitudes of the segments, separated by None (one trace, many lines)."""
    o = coords.loc[part["origin_id"]]
    d = coords.loc[part["destination_id"]]
    n = len(part)
    lon = np.empty(3 * n, dtype=object)
    lat = np.empty(3 * n, dtype=object)
    lon[0::3], lon[1::3], lon[2::3] = o["longitude"].to_numpy(), d["longitude"].to_numpy(), None
    lat[0::3], lat[1::3], lat[2::3] = o["latitude"].to_numpy(), d["latitude"].to_numpy(), None
    return lon.tolist(), lat.tolist()


def flow_map(pairs: pd.DataFrame, coords: pd.DataFrame, *, title: str, top: int = 200,
             false_positive: np.ndarray | None = None, base: tuple | None = None,
             height: int = 520) -> go.Figure:
    """The ``top`` largest flows between distinct areas as lines between area centroids,
    line width in 4 classes by value (quartiles of the shown flows), hover on the midpoints.
    ``false_positive`` (one bool per row of ``pairs``) draws those flows in red.
    ``coords`` is indexed by area id with latitude and longitude; a flow from an area to
    itself has no line and is left out. ``base`` = (GeoJSON dict or URL, feature ids) draws
    those boundaries in grey underneath (render with ``viz.plotly_config()``: no map tiles
    or topology are fetched)."""
    _check_pairs(pairs, coords)
    known = pairs["origin_id"].isin(coords.index) & pairs["destination_id"].isin(coords.index)
    flagged = (np.zeros(len(pairs), dtype=bool) if false_positive is None
               else np.asarray(false_positive, dtype=bool))
    shown = pairs.assign(_fp=flagged)[known & (pairs["origin_id"] != pairs["destination_id"])
                                      & (pairs["value"] > 0)]
    shown = shown.nlargest(top, "value")
    fig = go.Figure()
    if base is not None:
        geojson, ids = base
        fig.add_trace(go.Choropleth(
            geojson=geojson, featureidkey="id", locations=list(ids), z=np.zeros(len(ids)),
            colorscale=[[0, "#eeeeee"], [1, "#eeeeee"]], showscale=False,
            marker_line_color="#bbbbbb", marker_line_width=0.6, hoverinfo="skip"))
    if len(shown):
        edges = np.unique(np.quantile(shown["value"], [0.25, 0.5, 0.75]))
        width_class = np.searchsorted(edges, shown["value"].to_numpy(), side="right")
        for cls, width in enumerate(WIDTH_CLASSES):
            for fp in (False, True):
                part = shown[(width_class == cls) & (shown["_fp"] == fp)]
                if part.empty:
                    continue
                lon, lat = _lines(part, coords)
                fig.add_trace(go.Scattergeo(
                    lon=lon, lat=lat, mode="lines", hoverinfo="skip",
                    line={"width": width, "color": FALSE_POSITIVE_COLOUR if fp else FLOW_COLOUR},
                    opacity=0.75 if fp else 0.45, showlegend=False))
        o = coords.loc[shown["origin_id"]]
        d = coords.loc[shown["destination_id"]]
        text = [f"{a} → {b}: {v:,.0f}" + (" (false positive: truly 0)" if fp else "")
                for a, b, v, fp in zip(shown["origin_id"], shown["destination_id"],
                                       shown["value"], shown["_fp"], strict=True)]
        fig.add_trace(go.Scattergeo(
            lon=(o["longitude"].to_numpy() + d["longitude"].to_numpy()) / 2,
            lat=(o["latitude"].to_numpy() + d["latitude"].to_numpy()) / 2,
            mode="markers", marker={"size": 5, "color": np.where(
                shown["_fp"], FALSE_POSITIVE_COLOUR, FLOW_COLOUR)},
            text=text, hovertemplate="%{text}<extra></extra>", showlegend=False))
    ends = coords.loc[pd.unique(pd.concat([shown["origin_id"], shown["destination_id"]]))]
    fig.add_trace(go.Scattergeo(lon=ends["longitude"], lat=ends["latitude"], mode="markers",
                                marker={"size": 4, "color": "#444"}, text=ends.index,
                                hovertemplate="%{text}<extra></extra>", showlegend=False))
    n_fp = int(shown["_fp"].sum())
    sub = f"{len(shown):,} largest flows; width by value"
    if false_positive is not None:
        sub += f"; red: {n_fp} false positive{'s' if n_fp != 1 else ''}"
    fig.update_layout(
        title={"text": f"{title}<br><sup>{sub}</sup>"}, height=height,
        margin={"l": 0, "r": 0, "t": 60, "b": 0},
        geo={"projection": {"type": "albers usa"}, "visible": False,
             "fitbounds": "locations" if base is not None else False})
    return fig


def od_matrix(pairs: pd.DataFrame, areas: list[str], *, title: str,
              signed: bool = False, height: int = 520) -> go.Figure:
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
    colour = np.sign(matrix) * np.log10(1 + np.abs(matrix))
    top = float(np.abs(colour).max()) or 1.0
    powers = [0.0] + [10.0 ** k for k in range(int(np.ceil(top)) + 1)
                      if np.log10(1 + 10.0 ** k) <= top + 1e-9]
    signs = (-1, 1) if signed else (1,)
    ticks = sorted({(s * np.log10(1 + v), s * v) for v in powers for s in signs})
    tickvals = [t for t, _ in ticks]
    ticktext = [("−" if v < 0 else "") + f"{abs(v):,.0f}" for _, v in ticks]
    fig = go.Figure(go.Heatmap(
        z=colour, x=areas, y=areas, customdata=matrix,
        colorscale="RdBu_r" if signed else "Blues", zmid=0 if signed else None,
        zmin=-top if signed else 0, zmax=top,
        colorbar={"tickvals": tickvals, "ticktext": ticktext,
                  "title": "error" if signed else "flows"},
        hovertemplate="%{y} → %{x}: %{customdata:,.0f}<extra></extra>"))
    fig.update_layout(title=title, height=height, margin={"l": 40, "r": 10, "t": 50, "b": 40},
                      xaxis={"title": "destination", "tickfont": {"size": 8}},
                      yaxis={"title": "origin", "tickfont": {"size": 8}, "autorange": "reversed"})
    return fig


def metrics_by_level(metrics: pd.DataFrame) -> go.Figure:
    """Maximum absolute error (log axis, left) and false discovery rate (right) per tree
    level (input: `flow_metrics`)."""
    x = [f"{lv}: {name}" for lv, name in zip(metrics["level"], metrics["level_name"],
                                              strict=True)]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=metrics["max_abs_error"] + 1, name="max |error| (+1)",
                         marker_color=FLOW_COLOUR,
                         customdata=metrics["max_abs_error"],
                         hovertemplate="%{x}<br>max |error| %{customdata:,.0f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=metrics["fdr"], name="false discovery rate %",
                             yaxis="y2", mode="lines+markers",
                             line={"color": FALSE_POSITIVE_COLOUR},
                             hovertemplate="%{x}<br>FDR %{y:.1f}%<extra></extra>"))
    fig.update_layout(
        title="Error and false discoveries by tree level",
        height=380, margin={"l": 60, "r": 60, "t": 50, "b": 60},
        yaxis={"title": "max |released − true| + 1", "type": "log"},
        yaxis2={"title": "FDR %", "overlaying": "y", "side": "right", "range": [0, 100],
                "dtick": 20},
        legend={"orientation": "h", "y": -0.25})
    return fig

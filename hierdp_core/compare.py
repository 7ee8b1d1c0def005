"""Two release configurations side by side on the same data (the Compare page's core).

`compare` releases the data twice, A and B (mechanism, epsilon, split, parameters, seed for
exploration noise), and evaluates both against the truth; `level_view` takes one level's
values of both (a category or the totals, optionally a parent's children); `comparison_maps`
draws A and B on one colour scale and the difference B - A; `error_by_level_figure` and
`by_level_table` show an error metric per level for both.

The comparison reads the truth (its metrics are confidential); the releases hold
privatised values only, like any `Release`.

Example
-------
>>> from hierdp_core.data.samples import synthetic_us_like
>>> from hierdp_core.queries.counts import count_data_from_table
>>> data = count_data_from_table(synthetic_us_like(seed=1, n_states=2, n_counties=4),
...                              ["state", "county"], count_column="count")
>>> c = compare(data, Side("topdown", 1.0, seed=1), Side("raw-laplace", 1.0, seed=1))
>>> list(by_level_table(c, "mae").columns)
['level', 'A: TopDown, ε = 1', 'B: Laplace noise, ε = 1', 'B − A']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core.errors import HierdpError, InputError, about
from hierdp_core.experiments import budget_for
from hierdp_core.figure_parts import PALETTE
from hierdp_core.map_figures import choropleth
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metric_names import axis_title, name
from hierdp_core.metrics import ALL_BIN, error_metrics
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.releases import Release

SIDES = ("A", "B")


@dataclass(frozen=True)
class Side:
    """One configuration: mechanism, total epsilon (zCDP-only mechanisms get rho =
    epsilon^2 / 2, `experiments.budget_for`) or, under zCDP, total ``rho`` (with
    ``delta`` for the (ε, δ) it implies), split (weights per level, root first, or a
    preset name), the mechanism's parameters and the exploration seed."""

    mechanism: str
    epsilon: float
    split: tuple[float, ...] | str = "uniform"
    seed: int = 0
    params: dict = field(default_factory=dict)
    rho: float | None = None
    delta: float | None = None

    def label(self) -> str:
        """The mechanism's plain name and ε (or ρ), as a reader sees them."""
        budget = f"ρ = {self.rho:g}" if self.rho is not None else f"ε = {self.epsilon:g}"
        return f"{title(self.mechanism)}, {budget}"

    def budget(self) -> PrivacyBudget:
        """The budget the side is released at."""
        if self.rho is not None:
            return PrivacyBudget.zcdp(self.rho, self.delta)
        return budget_for(self.mechanism, self.epsilon, self.params)


@dataclass(frozen=True, eq=False)
class Comparison:
    """The two sides, their releases, and their error metrics by level (``bin == 'all'``
    rows of `error_metrics`, one frame per side)."""

    sides: tuple[Side, Side]
    releases: tuple[Release, Release]
    metrics: tuple[pd.DataFrame, pd.DataFrame]

    def labels(self) -> list[str]:
        return [f"{name}: {side.label()}" for name, side in zip(SIDES, self.sides,
                                                                 strict=True)]


def release_side(data, side: Side) -> Release:
    """The seeded (exploration) release of ``data`` with one side's configuration."""
    split = list(side.split) if isinstance(side.split, tuple) else side.split
    return get_mechanism(side.mechanism).release(
        data, side.budget(), split=split, source=NoiseSource(seed=int(side.seed)),
        **side.params)


def compare(data, a: Side, b: Side) -> Comparison:
    """Release ``data`` with both sides and evaluate them against the truth; a side that
    cannot be released is named in the error."""
    releases = []
    for tag, side in zip(SIDES, (a, b), strict=True):
        try:
            releases.append(release_side(data, side))
        except HierdpError as exc:
            raise about(f"configuration {tag} ({side.label()})", exc) from exc
    releases = tuple(releases)
    truth = data.node_counts()
    categories = data.categories if data.has_categories else None
    metrics = tuple(_by_level(error_metrics(data.hierarchy, truth, r.values,
                                            categories=categories)) for r in releases)
    return Comparison((a, b), releases, metrics)


def _by_level(metrics: pd.DataFrame) -> pd.DataFrame:
    return metrics[metrics["bin"] == ALL_BIN].reset_index(drop=True)


def level_view(comparison: Comparison, data, level: int, category: str = "total",
               parent: int | None = None) -> pd.DataFrame:
    """One level's units (all, or the children of node ``parent``): ``node`` (index in the
    tree), ``code``, ``truth``, ``A``, ``B`` and ``difference`` (B - A) of a category or the
    totals (``"total"``)."""
    h = data.hierarchy
    if not 1 <= level < h.n_levels:
        raise InputError(f"level {level} is not a level below the root (1..{h.n_levels - 1})")
    sl = h.level_slice(level)
    nodes = np.arange(sl.start, sl.stop) if parent is None else h.children(parent)
    if category == "total":
        pick = np.ones(len(data.categories), dtype=bool)
    elif data.has_categories and category in data.categories:
        pick = np.asarray(data.categories) == category
    else:
        raise InputError(f"no category {category!r}; the data has {list(data.categories)}")

    def column(values: np.ndarray) -> np.ndarray:
        return values[nodes][:, pick].sum(axis=1)

    a, b = (column(r.values) for r in comparison.releases)
    return pd.DataFrame({"node": nodes,
                         "code": np.asarray(h.codes[level]).astype(str)[nodes - sl.start],
                         "truth": column(data.node_counts()), "A": a, "B": b,
                         "difference": b - a})


def comparison_maps(geojson, view: pd.DataFrame, labels: list[str], *, names=None,
                    projection: str = "mercator", height: int = 380) -> list[go.Figure]:
    """Three maps: A's and B's released values on one log colour scale (0 to the larger
    maximum), and the difference B - A on a diverging scale centred at 0."""
    top = float(max(view["A"].max(), view["B"].max(), 1.0))
    maps = [choropleth(geojson, view["code"], view[side], title=f"Released, {label}",
                       colorbar_title="count", names=names, log_scale=True,
                       value_range=(0.0, top), height=height, projection=projection,
                       colorbar_below=True)  # side by side: each map its column's width
            for side, label in zip(SIDES, labels, strict=True)]
    maps.append(choropleth(geojson, view["code"], view["difference"],
                           title="Difference B − A (released)", colorbar_title="B − A",
                           names=names, diverging=True, height=height,
                           projection=projection))
    return maps


def by_level_table(comparison: Comparison, metric: str) -> pd.DataFrame:
    """One row per level: the metric for A, for B, and B - A."""
    a, b = comparison.metrics
    if metric not in a.columns:
        raise InputError(f"no metric {metric!r}; the table has {list(a.columns)}")
    label_a, label_b = comparison.labels()
    table = pd.DataFrame({"level": a["level_name"], label_a: a[metric].to_numpy(float),
                          label_b: b[metric].to_numpy(float)})
    table["B − A"] = table[label_b] - table[label_a]
    return table


def error_by_level_figure(comparison: Comparison, metric: str) -> go.Figure:
    """Grouped bars of an error metric per level, A beside B."""
    table = by_level_table(comparison, metric)
    fig = go.Figure()
    for i, label in enumerate(comparison.labels()):
        fig.add_trace(go.Bar(x=table["level"], y=table[label], name=label,
                             marker_color=PALETTE[i],
                             hovertemplate=f"<b>%{{x}}</b><br>{label}: %{{y:.4g}}"
                                           "<extra></extra>"))
    fig.update_layout(
        barmode="group", title={"text": f"{name(metric)} by level", "x": 0.0},
        xaxis={"title": {"text": "geography level"}, "type": "category"},
        yaxis={"title": {"text": axis_title(metric)}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.25})
    return fig

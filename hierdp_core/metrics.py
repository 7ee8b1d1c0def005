"""Error metrics of a release against the truth, by level and by population-size bin.

Contract
--------
`error_metrics(hierarchy, truth, released)` takes the true and the released values of every
node (arrays of shape ``(n_nodes,)`` or ``(n_nodes, k)`` for ``k`` categories, nodes in
`Hierarchy` order, the same shape for both, finite, truth non-negative) and returns a tidy
`pandas.DataFrame` with one row per (level, size bin) that holds at least one unit, plus one
row per level with ``bin == "all"`` (after that level's bin rows). Columns:

``level, level_name, bin, units, cells`` followed by the metrics in `METRICS`.

A *unit* is a node; a *cell* is a (node, category) pair, so a level with ``n`` units has
``n * k`` cells (``k = 1`` for 1-D input). Size bins are taken on the node's TRUE total
``T_v = sum_c t_vc`` (half-open intervals ``[lo, hi)``); units whose total lies outside
``[bins[0], bins[-1])`` are only counted in their level's "all" row. Nothing in the input
is modified; no metric is computed with a Python loop over nodes.

Definitions
-----------
Over the cells ``(v, c)`` of a group (level, or level x bin), with error
``e_vc = r_vc - t_vc`` and ``P = {cells with t_vc > 0}``:

* ``mae = mean |e|``, ``rmse = sqrt(mean e^2)``, ``max_abs_error = max |e|``.
* ``mape = 100 * mean_P |e| / t`` and ``malpe = 100 * mean_P e / t`` (signed: > 0 means the
  release overstates the truth on average).
* ``tvd_accuracy = 1 - sum |e| / (2 * sum t)`` (1 - total variation distance). It lies in
  [0, 1] when the released values are non-negative with the same group total as the truth;
  otherwise it can drop below 0.
* ``false_zero_rate = #{P : r == 0} / |P|`` and
  ``ghost_rate = #{t == 0 : r > 0} / #{t == 0}`` (false positives).

Over units (node totals ``T_v``, ``R_v = sum_c r_vc``):

* ``share_over_10pct = #{T_v > 0 : |R_v - T_v| > 0.1 * T_v} / #{T_v > 0}``.
* ``consistency_violations``: per level only (on the "all" row, NaN on bin rows): the number
  of parents ``v`` of that level for which some category has
  ``|r_vc - sum_{children w} r_wc| > consistency_tol``; 0 for the leaf level.

A ratio whose denominator is empty (e.g. ``ghost_rate`` with no true zeros) is NaN.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> t = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"], "n": [3, 4, 5]})
>>> h, leaf = build_hierarchy(t, ["state", "county"])
>>> truth = h.aggregate(np.array([3, 4, 5]))
>>> released = h.aggregate(np.array([3, 5, 4]))
>>> m = error_metrics(h, truth, released)
>>> cols = ["level_name", "bin", "units", "mae", "malpe", "tvd_accuracy", "consistency_violations"]
>>> print(m[cols].round(3).to_string(index=False))
level_name   bin  units   mae  malpe  tvd_accuracy  consistency_violations
     total 10-99      1 0.000  0.000         1.000                     NaN
     total   all      1 0.000  0.000         1.000                     0.0
     state   0-9      2 1.000 -2.857         0.917                     NaN
     state   all      2 1.000 -2.857         0.917                     0.0
    county   0-9      3 0.667  1.667         0.917                     NaN
    county   all      3 0.667  1.667         0.917                     0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.metric_names import definition

DEFAULT_BINS: tuple[float, ...] = (0, 10, 100, 1000, 10000, 100000, math.inf)
ALL_BIN = "all"
METRICS: tuple[str, ...] = (
    "mae",
    "rmse",
    "mape",
    "malpe",
    "max_abs_error",
    "tvd_accuracy",
    "share_over_10pct",
    "false_zero_rate",
    "ghost_rate",
    "consistency_violations",
)
COLUMNS: tuple[str, ...] = ("level", "level_name", "bin", "units", "cells", *METRICS)


def metric_descriptions() -> dict[str, str]:
    """The exact definition of every column of `error_metrics` (e.g. for tooltips), from
    the registry of friendly names (`hierdp_core.metric_names`)."""
    return {column: definition(column) for column in COLUMNS}


def bin_labels(edges: Sequence[float]) -> list[str]:
    """Readable labels of the half-open bins ``[edges[i], edges[i + 1])``.

    Integer edges give count ranges (``0-9``, ``10-99``, ``7`` for a one-value bin), an
    infinite upper edge gives ``1000+``, other edges give ``[0.5, 2)``.

    >>> bin_labels([0, 1, 10, 100, math.inf])
    ['0', '1-9', '10-99', '100+']
    >>> bin_labels([0, 2.5, 10])
    ['[0, 2.5)', '[2.5, 10)']
    """
    edges = _check_bins(edges)
    labels = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if math.isinf(hi):
            labels.append(f"{_fmt(lo)}+")
        elif float(lo).is_integer() and float(hi).is_integer():
            lo_i, hi_i = int(lo), int(hi) - 1
            labels.append(str(lo_i) if lo_i == hi_i else f"{lo_i}-{hi_i}")
        else:
            labels.append(f"[{_fmt(lo)}, {_fmt(hi)})")
    return labels


def error_metrics(
    hierarchy: Hierarchy,
    truth: np.ndarray,
    released: np.ndarray,
    *,
    bins: Sequence[float] | None = None,
    categories: Sequence[str] | None = None,
    consistency_tol: float = 1e-6,
) -> pd.DataFrame:
    """Tidy table of error metrics by level and by size bin of the true unit total.

    ``truth`` and ``released`` hold every node's values, shape ``(n_nodes,)`` or
    ``(n_nodes, k)``. ``bins`` are increasing bin edges (default `DEFAULT_BINS`, decades);
    empty bins are dropped. ``categories`` optionally names the ``k`` columns (checked
    against the shape, kept in ``result.attrs["categories"]``). ``consistency_tol`` is the
    absolute difference tolerated between a parent and the sum of its children.
    See the module docstring for the definitions. Raises `InputError` on bad input.
    """
    t, r = _check_values(hierarchy, truth, released)
    k = t.shape[1]
    if categories is not None:
        categories = [str(c) for c in categories]
        if len(categories) != k:
            raise InputError(
                f"{len(categories)} category name(s) given for values with {k} categor"
                f"{'y' if k == 1 else 'ies'}"
            )
    edges = _check_bins(DEFAULT_BINS if bins is None else bins)
    labels = bin_labels(edges)
    consistency_tol = float(consistency_tol)
    if not consistency_tol >= 0:
        raise InputError(f"consistency_tol must be >= 0, got {consistency_tol}")

    err = r - t
    abs_err = np.abs(err)
    pos = t > 0
    rel = np.divide(err, t, out=np.zeros_like(err), where=pos)
    t_tot = t.sum(axis=1)
    r_tot = r.sum(axis=1)
    unit_pos = t_tot > 0

    bin_idx = np.searchsorted(edges, t_tot, side="right") - 1
    bin_idx[(t_tot < edges[0]) | (t_tot >= edges[-1])] = -1
    per_node = {
        "units": np.ones(hierarchy.n_nodes),
        "cells": np.full(hierarchy.n_nodes, float(k)),
        "abs_sum": abs_err.sum(axis=1),
        "sq_sum": np.square(err).sum(axis=1),
        "truth_sum": t_tot,
        "pos_cells": pos.sum(axis=1),
        "abs_rel_sum": np.abs(rel).sum(axis=1),
        "rel_sum": rel.sum(axis=1),
        "false_zero": (pos & (r == 0)).sum(axis=1),
        "zero_cells": (t == 0).sum(axis=1),
        "ghost": ((t == 0) & (r > 0)).sum(axis=1),
        "pos_units": unit_pos,
        "over10": unit_pos & (10 * np.abs(r_tot - t_tot) > t_tot),
    }
    groups, level_of, bin_of = _group_sums(hierarchy.level_of_nodes(), bin_idx, len(labels),
                                           per_node, abs_err.max(axis=1))
    out = pd.DataFrame(
        {
            "level": level_of,
            "level_name": np.asarray(hierarchy.level_names, dtype=object)[level_of],
            "bin": np.asarray([*labels, ALL_BIN], dtype=object)[bin_of],
            "units": groups["units"].astype(np.int64),
            "cells": groups["cells"].astype(np.int64),
        }
    )
    cells = groups["cells"]
    out["mae"] = groups["abs_sum"] / cells
    out["rmse"] = np.sqrt(groups["sq_sum"] / cells)
    out["mape"] = 100 * _ratio(groups["abs_rel_sum"], groups["pos_cells"])
    out["malpe"] = 100 * _ratio(groups["rel_sum"], groups["pos_cells"])
    out["max_abs_error"] = groups["max_abs"]
    out["tvd_accuracy"] = 1 - _ratio(groups["abs_sum"], 2 * groups["truth_sum"])
    out["share_over_10pct"] = _ratio(groups["over10"], groups["pos_units"])
    out["false_zero_rate"] = _ratio(groups["false_zero"], groups["pos_cells"])
    out["ghost_rate"] = _ratio(groups["ghost"], groups["zero_cells"])
    violations = _violations_per_level(hierarchy, r, consistency_tol)
    is_all = (out["bin"] == ALL_BIN).to_numpy()
    out["consistency_violations"] = np.where(
        is_all, violations[out["level"].to_numpy()], np.nan
    )
    out = out.astype({"level_name": str, "bin": str})
    out.attrs["categories"] = categories
    # JSON-safe (Streamlit serialises attrs): an infinite upper edge is written "inf"
    out.attrs["bins"] = [float(e) if np.isfinite(e) else "inf" for e in edges]
    return out


# ---- helpers ---------------------------------------------------------------------------
def _group_sums(level: np.ndarray, bin_idx: np.ndarray, n_bins: int, columns: dict,
                max_abs: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray]:
    """Per-node ``columns`` summed (and ``max_abs`` maxed) over the groups (level, size
    bin) that hold a unit, then (level, all): a node counts in its bin (``bin_idx`` >= 0)
    and in its level. Returns the sums (``max_abs`` too) and each group's level and bin
    (``n_bins`` for all), ordered by level, then bin, the "all" row last."""
    width = n_bins + 1
    binned = np.flatnonzero(bin_idx >= 0)
    nodes = np.concatenate([binned, np.arange(level.size)])
    key = np.concatenate([level[binned] * width + bin_idx[binned], level * width + n_bins])
    size = (int(level.max()) + 1) * width if level.size else 0
    present = np.flatnonzero(np.bincount(key, minlength=size))
    sums = {name: np.bincount(key, weights=np.asarray(values, float)[nodes],
                              minlength=size)[present] for name, values in columns.items()}
    most = np.full(size, -np.inf)
    np.maximum.at(most, key, max_abs[nodes])
    sums["max_abs"] = most[present]
    return sums, (present // width).astype(np.int64), present % width


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _ratio(num, den) -> np.ndarray:
    """num / den elementwise, NaN where den == 0."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den != 0)


def _check_bins(bins: Sequence[float]) -> np.ndarray:
    try:
        edges = np.asarray(list(bins), dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"bins must be a list of numeric edges, got {bins!r}") from exc
    if edges.ndim != 1 or edges.size < 2:
        raise InputError(f"bins need at least two edges, got {list(bins)!r}")
    if np.isnan(edges).any() or not np.all(np.diff(edges) > 0):
        raise InputError(f"bin edges must be strictly increasing numbers, got {list(bins)!r}")
    return edges


def _as_values(name: str, values, n_nodes: int) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric") from exc
    if arr.ndim not in (1, 2):
        raise InputError(
            f"{name} must have shape (n_nodes,) or (n_nodes, k), got shape {arr.shape}"
        )
    if arr.shape[0] != n_nodes:
        raise InputError(
            f"{name} has {arr.shape[0]} rows but the hierarchy has {n_nodes} nodes "
            f"(shape {arr.shape})"
        )
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise InputError(f"{name} has no categories (shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or infinite values")
    return arr.reshape(n_nodes, -1)


def _check_values(hierarchy: Hierarchy, truth, released) -> tuple[np.ndarray, np.ndarray]:
    n = hierarchy.n_nodes
    t_shape, r_shape = np.shape(truth), np.shape(released)
    if t_shape != r_shape:
        raise InputError(f"truth has shape {t_shape} but released has shape {r_shape}")
    t = _as_values("truth", truth, n)
    r = _as_values("released", released, n)
    if (t < 0).any():
        raise InputError(f"truth has {int((t < 0).sum())} negative value(s); counts must be >= 0")
    return t, r


def _violations_per_level(hierarchy: Hierarchy, values: np.ndarray, tol: float) -> np.ndarray:
    """Per level: parents with some category off the sum of their children by > tol."""
    out = np.zeros(hierarchy.n_levels, dtype=float)
    for level in range(hierarchy.n_levels - 1):
        sums = np.add.reduceat(
            values[hierarchy.level_slice(level + 1)], hierarchy.child_starts(level + 1), axis=0
        )
        off = np.abs(values[hierarchy.level_slice(level)] - sums) > tol
        out[level] = np.count_nonzero(off.any(axis=1))
    return out

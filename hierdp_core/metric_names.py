"""Friendly names of the metrics and table columns: one registry, read by every table and
chart (the dashboard's tables show ``name`` as the header with ``definition`` on hover, the
charts use ``name`` and ``unit`` on their axes and the definition in their hover text).

A key missing from the registry keeps a readable form of itself (``some_key`` -> "Some
key") and no definition, so a new column never breaks a table.

Example
-------
>>> name("mae"), definition("mae")[:31]
('Mean absolute error', "mean over the level's cells of ")
>>> friendly_table(pd.DataFrame({"level_name": ["state"], "mae": [1.5]}))["data"].columns.tolist()
['Level', 'Mean absolute error']
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from hierdp_core.number_text import significant


@dataclass(frozen=True)
class MetricName:
    """``name`` (a header), ``definition`` (exact, for a tooltip), ``unit`` (of an axis;
    empty for none) and ``percent`` (a fraction shown as a percentage)."""

    name: str
    definition: str
    unit: str = ""
    percent: bool = False


_M = MetricName
REGISTRY: dict[str, MetricName] = {
    # ---- table columns
    "level": _M("Depth", "depth in the geography (0 = the root)"),
    "level_name": _M("Level", "the geography level"),
    "bin": _M("Size class", "size class of the units by their true total ('all' = every "
                            "unit of the level)"),
    "units": _M("Units", "number of geographic units (nodes) in the row"),
    "regions": _M("Regions", "number of regions (nodes) of the level"),
    "pairs": _M("O/D pairs", "number of possible origin → destination pairs of the tree level"),
    "cells": _M("Cells", "number of unit × category cells in the row"),
    "interval_level": _M("Nominal", "the level the intervals claim: the share of true "
                         "values each should hold", "", True),
    "coverage": _M("Coverage", "share of the level's cells whose true value lies in the "
                   "released interval [lower, upper] (one release: one draw, its cells "
                   "correlated)", "", True),
    "estimated_mae": _M("Estimated error", "the mean |error| per released value that the "
                        "release's intervals' re-runs estimate (in its manifest, so readers "
                        "of the release see it)", "count per value"),
    "mae_per_value": _M("Measured error", "the mean |released − true| per released value of "
                        "the level", "count per value"),
    "calibrated": _M("Calibrated", "whether the intervals of this level held their nominal "
                     "level in the benchmarks (False: they may cover less; the manifest "
                     "says why)"),
    "node_id": _M("Unit id", "the unit's codes from the root down, joined by '/'"),
    "true": _M("True", "the confidential true value (shown for evaluation, never released)"),
    "noisy": _M("Noisy", "the raw noisy measurement, before the consistency step"),
    "released": _M("Released", "the released value"),
    "error": _M("Error", "released − true"),
    # ---- the budget ledger (hierdp_core.mechanisms.measure.ledger_frame), a priori
    "share": _M("Share", "the level's share of the total budget", "", True),
    "budget": _M("ε or ρ", "the level's part of the budget: ε under pure DP, ρ under zCDP"),
    "noise": _M("Noise", "the noise distribution added to each of the level's cells"),
    "noise_scale": _M("Noise scale", "the noise's scale parameter per cell: b of Laplace "
                      "(density ∝ exp(−|x|/b)), t of the geometric (P(k) ∝ exp(−|k|/t)), "
                      "σ of the (discrete) Gaussian"),
    "expected_abs_error": _M("Expected |noise| per cell", "expected |noise| added to one "
                             "cell of the level before consistency", "count per cell"),
    "noise_sd": _M("σ (noise sd)", "the standard deviation of the noise added to each of the "
                   "level's cells", "count per cell"),
    "epsilon_stage1": _M("ε partition (Stage 1)", "the part of the level's ε that DAWA's "
                         "private partition spends (0: no partition at this level)"),
    "epsilon_stage2": _M("ε queries (Stage 2)", "the part of the level's ε spent on the "
                         "range queries over the buckets"),
    "stage1_units": _M("Units partitioned (Stage 1)", "how many of the level's units DAWA's "
                       "private partition ran on (0: Stage 1 skipped at this level)"),
    "mechanism": _M("Mechanism", "the release mechanism"),
    "seconds": _M("Seconds per release", "wall time of one release (mean over the runs)"),
    "ci95_abs_error": _M("95% of errors within ±", "the 95% quantile of |noise| of one cell "
                         "of the level before consistency", "count per cell"),
    # ---- counts (hierdp_core.metrics)
    "mae": _M("Mean absolute error", "mean over the level's cells of |released − true|",
              "count per cell"),
    "rmse": _M("Root mean squared error", "square root of the mean over the level's cells "
               "of (released − true)²", "count per cell"),
    "mape": _M("Mean absolute percentage error", "mean over the cells with true > 0 of "
               "100 × |released − true| / true", "%"),
    "malpe": _M("Mean signed percentage error (bias)", "mean over the cells with true > 0 of "
                "100 × (released − true) / true; above 0: overstated on average", "%"),
    "max_abs_error": _M("Largest absolute error", "largest |released − true| of any cell "
                        "of the level", "count"),
    "tvd_accuracy": _M("1 − total variation distance", "1 − Σ|released − true| / (2 Σ true) "
                       "over the level's cells; 1 is perfect", "1 = perfect"),
    "share_over_10pct": _M("Units off by more than 10%", "share of the units with true "
                           "total > 0 whose released total differs from it by more than 10%",
                           "% of units", True),
    "false_zero_rate": _M("False-zero rate", "share of the cells with true > 0 released as 0",
                          "% of cells with true > 0", True),
    "ghost_rate": _M("Ghost rate (false positives)", "share of the cells with true = 0 "
                     "released as more than 0", "% of cells with true 0", True),
    "consistency_violations": _M("Parents ≠ sum of children", "units of the level whose "
                                 "released value differs from the sum of their children's "
                                 "(0 for the finest level)", "units"),
    # ---- group sizes (hierdp_core.groupsizes.data.group_size_metrics)
    "l1": _M("L1 error", "sum over the level's regions and sizes of |released − true| "
             "households", "groups"),
    "emd_mean": _M("Mean EMD per region", "mean over the level's regions of the earth "
                   "mover's distance: people who would have to move between households to "
                   "turn the released histogram into the true one", "people"),
    "emd_max": _M("Largest EMD", "largest earth mover's distance of any region of the level",
                  "people"),
    "faithfulness_gap": _M("|Households − G|", "|number of released households − the true "
                           "number of groups G| over the level"),
    # ---- flows (hierdp_core.flows.metrics)
    "fdr": _M("False discovery rate", "% of the O/D pairs released > 0 that are truly 0",
              "%"),
    "fnr": _M("False negative rate", "% of the truly non-zero O/D pairs released as 0 or "
              "less", "%"),
    "cpc": _M("Common part of commuters", "2 Σ min(released, true) / (Σ released + Σ true) "
              "over the O/D pairs, negative released values as 0; 1 is perfect",
              "1 = perfect"),
    "released_nonzero": _M("Released > 0", "O/D pairs released with a value above 0"),
    "true_nonzero": _M("True > 0", "O/D pairs with a true value above 0"),
    # ---- ranges (hierdp_core.ranges.evaluation.range_metrics)
    "queries": _M("Queries per unit", "number of range queries of the workload, per unit"),
    "mean_query_error": _M("Mean error per query", "mean over the level's units of the "
                           "unit's average |released − true| answer over the workload",
                           "people"),
    "max_unit_query_error": _M("Worst unit's mean error", "largest, over the level's units, "
                               "of the unit's average |released − true| answer", "people"),
    "max_query_error": _M("Largest query error", "largest |released − true| answer of any "
                          "query in any unit of the level", "people"),
    "cell_mae": _M("Mean absolute error per value", "mean over the level's cells (unit × "
                   "attribute value) of |released − true|", "people"),
}


def _entry(key: str) -> MetricName | None:
    return REGISTRY.get(key)


def name(key: str) -> str:
    """The friendly name of ``key``."""
    entry = _entry(key)
    return entry.name if entry else str(key).replace("_", " ").capitalize()


def definition(key: str) -> str:
    """The exact definition of ``key`` ('' when the registry has none)."""
    entry = _entry(key)
    return entry.definition if entry else ""


def label(key: str) -> str:
    """Name and definition in one line: 'Mean absolute error — mean over …'."""
    text = definition(key)
    return f"{name(key)} — {text}" if text else name(key)


def axis_title(key: str) -> str:
    """An axis title with the unit: 'Mean absolute error (count per cell)'."""
    entry = _entry(key)
    return f"{name(key)} ({entry.unit})" if entry and entry.unit else name(key)


def is_percent(key: str) -> bool:
    entry = _entry(key)
    return bool(entry and entry.percent)


def header(key: str) -> str:
    """A table header: the friendly name, with "(%)" for a metric in percent."""
    entry = _entry(key)
    return f"{name(key)} (%)" if entry and entry.unit == "%" else name(key)


def friendly_table(frame: pd.DataFrame, *, digits: int | None = None, **names: str) -> dict:
    """Keyword arguments for a dashboard table (``st.dataframe(**friendly_table(frame))``):
    ``data`` with the columns renamed to their headers (`header`; ``names`` overrides a
    key's, e.g. ``level_name="origin → destination"``) and ``column_config`` with each
    definition as the header's hover help and fractions the registry marks as percentages
    shown as such; the index is hidden. ``digits``: the float columns rounded to that many
    significant figures (`number_text.significant`), and every number column reaching 1,000
    shown with thousands separators."""
    renamed = {c: names.get(c, header(c)) for c in frame.columns}
    data = frame.rename(columns=renamed)
    config = {renamed[c]: {"help": definition(c)} for c in frame.columns if definition(c)}
    for c in frame.columns:
        number_format = _number_format(c, frame[c], digits)
        if number_format:
            config.setdefault(renamed[c], {})["type_config"] = {"type": "number",
                                                                "format": number_format}
        if digits and pd.api.types.is_float_dtype(frame[c]):
            data[renamed[c]] = significant(frame[c].to_numpy(), digits)
    return {"data": data, "column_config": config, "hide_index": True}


def _number_format(key: str, column: pd.Series, digits: int | None) -> str | None:
    """"percent" for a fraction shown as a percentage, "localized" (thousands separators)
    for a number column reaching 1,000 when ``digits`` is given, else None (the default)."""
    if is_percent(key):
        return "percent"
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    return "localized" if digits and numeric and column.abs().max() >= 1000 else None

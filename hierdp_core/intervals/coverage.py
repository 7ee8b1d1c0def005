"""How often a release's intervals hold the true values, per level (issue 30, item 4):
what ``hierdp evaluate`` prints beside the errors, so that a user can check the intervals'
claimed level on a test table of their own. Reads the truth: its output is confidential,
as every evaluation's.

One release gives one draw of a level's coverage, and its cells are correlated (a
parent's error moves its children): a level of few units, or one release, says little;
the benchmark (`benchmarks/bench_coverage.py`) measures over many independent releases.

`coverage_table` is the Results page's table in evaluation mode: the same per level, with
the number of units and cells, the nominal level and whether the level's intervals are
calibrated (the release's intervals record), and where the record estimates the error
(`intervals.estimated_error`) that estimate beside the error measured per value.

Example
-------
>>> import numpy as np
>>> coverage_per_level(np.array([0, 1, 1]), np.array([5, 2, 9]), np.array([4, 1, 3]),
...                    np.array([6, 3, 8]), n_levels=2).tolist()
[1.0, 0.5]
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def coverage_per_level(level_of_cells: np.ndarray, truth: np.ndarray, lower: np.ndarray,
                       upper: np.ndarray, n_levels: int) -> np.ndarray:
    """Per level (0 .. ``n_levels`` - 1), the share of its cells whose ``truth`` lies in
    [``lower``, ``upper``] (NaN for a level without cells); every array has one entry per
    cell (any shape, the same for all)."""
    level = np.broadcast_to(np.asarray(level_of_cells), np.shape(truth)).ravel()
    inside = ((np.asarray(lower) <= truth) & (truth <= np.asarray(upper))).ravel()
    cells = np.bincount(level, minlength=n_levels).astype(float)
    held = np.bincount(level, weights=inside, minlength=n_levels)
    return np.divide(held, cells, out=np.full(n_levels, np.nan), where=cells > 0)


def coverage_table(release, truth: np.ndarray) -> pd.DataFrame:
    """Per level of a table release carrying intervals (counts, group sizes): level_name,
    units, cells, interval_level (nominal), coverage (`coverage_per_level` of ``truth``,
    every node's true values shaped like ``release.values``) and calibrated (False where
    the intervals record says the level's intervals may cover less, with its reason)."""
    h = release.hierarchy
    iv = release.intervals
    cover = coverage_per_level(h.level_of_nodes()[:, None], truth, iv.lower, iv.upper,
                               h.n_levels)
    calibration = iv.record.get("calibration", {})
    width = release.values.shape[1] if release.values.ndim == 2 else 1
    units = np.array([h.level_size(lv) for lv in range(h.n_levels)])
    table = pd.DataFrame({
        "level_name": list(h.level_names), "units": units, "cells": units * width,
        "interval_level": iv.record["level"], "coverage": cover,
        "calibrated": [calibration.get(n, {}).get("calibrated", True)
                       for n in h.level_names]})
    if "estimated_error" in iv.record:  # the estimate beside the error it estimates
        by_level = iv.record["estimated_error"]["by_level"]
        error = np.abs(release.values - truth)
        table["estimated_mae"] = [np.nan if by_level[n] is None else by_level[n]
                                  for n in h.level_names]
        table["mae_per_value"] = [error[h.level_slice(lv)].mean()
                                  for lv in range(h.n_levels)]
    return table

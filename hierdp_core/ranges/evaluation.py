"""Errors of range releases: the DAWA paper's measure, the average absolute error per workload
query ``(1/m) ||W x - W x_hat||_1``, per unit and per level (confidential: reads the truth).

Example
-------
>>> from hierdp_core.ranges.workloads import prefix_ranges
>>> workload_errors(np.array([[1, 2, 3]]), np.array([[1, 3, 3]]), prefix_ranges(3)).tolist()
[0.6666666666666666]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.ranges.workloads import Workload


def workload_errors(true: np.ndarray, estimate: np.ndarray, workload: Workload) -> np.ndarray:
    """Average absolute error per query of every row: (r, n) x (r, n) -> (r,)."""
    diff = np.atleast_2d(np.asarray(estimate, dtype=float) - np.asarray(true, dtype=float))
    return np.abs(workload.answer(diff)).mean(axis=1)


def range_metrics(data, released: np.ndarray) -> pd.DataFrame:
    """Per level of ``data`` (a RangeData): units, the workload's size, the mean and largest
    per-unit average error per query, the largest error of any query, and the mean absolute
    error per cell."""
    h = data.hierarchy
    true = data.node_counts()
    rows = []
    for level in range(h.n_levels):
        sl = h.level_slice(level)
        diff = np.asarray(released[sl], dtype=float) - true[sl]
        answers = np.abs(data.workload.answer(diff))
        per_unit = answers.mean(axis=1)
        rows.append({"level": level, "level_name": h.level_names[level],
                     "units": h.level_size(level), "workload": data.workload.name,
                     "queries": data.workload.m,
                     "mean_query_error": float(per_unit.mean()),
                     "max_unit_query_error": float(per_unit.max()),
                     "max_query_error": float(answers.max()),
                     "cell_mae": float(np.abs(diff).mean())})
    return pd.DataFrame(rows)

"""Error metrics of an O/D release, per tree level (evaluation only: they use the truth).

Released and true tables of a level are aligned on the union of their non-zero pairs
(missing = 0), as Boninsegna & Silvestri do. Per tree level (`flow_metrics`) or per pair
of geography levels (`pair_metrics`, any origin level with any destination level):

* ``max_abs_error``: max |released - true|;
* ``mae`` and ``rmse``: over **all** possible pairs of the level (|P_o| x |P_d|, empty ones
  included, as the authors' code), so they are small at fine levels;
* ``fdr``: % of released-positive pairs that are truly zero (NaN when none is positive);
* ``fnr``: % of truly positive pairs released as <= 0;
* ``cpc``: common part of commuters, 2 sum min(true, released) / (sum true + sum released)
  (negative released values count as 0);
* ``released_nonzero`` and ``true_nonzero``: how many pairs are positive.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.flows.data import FlowData
from hierdp_core.flows.release import FlowRelease

FLOW_METRICS = ("max_abs_error", "mae", "rmse", "fdr", "fnr", "cpc", "released_nonzero",
                "true_nonzero")


def aligned_level(data: FlowData, release: FlowRelease, level: int):
    """(true, released) values on the union of the level's non-zero pairs, and the number
    of possible pairs of the level (pairs zero in both count for nothing in any metric)."""
    lo, ld = data.pair_levels(level)
    width = data.level_width(ld)
    true_keys, true_counts = data.level_table(level)
    rel = release.levels[level]
    truth, released = _union(true_keys, true_counts.astype(float), rel.keys(width),
                              rel.value.astype(float), data.level_width(lo) * width)
    return truth, released, data.level_width(lo) * width


def _union(keys_a, values_a, keys_b, values_b, space: int):
    """Two sparse vectors (keys, values) over ``space`` cells as aligned dense values on the
    cells where either is non-zero: by counting when the space is small next to the keys,
    else by sorting."""
    if space <= max(4 * (keys_a.size + keys_b.size), 1 << 20):
        a = np.bincount(keys_a, weights=values_a, minlength=space)
        b = np.bincount(keys_b, weights=values_b, minlength=space)
        keep = (a != 0) | (b != 0)
        return a[keep], b[keep]
    keys = np.union1d(keys_a, keys_b)
    a, b = np.zeros(keys.size), np.zeros(keys.size)
    np.add.at(a, np.searchsorted(keys, keys_a), values_a)
    np.add.at(b, np.searchsorted(keys, keys_b), values_b)
    return a, b


def flow_metrics(data: FlowData, release: FlowRelease) -> pd.DataFrame:
    """One row per tree level: level, level_name and `FLOW_METRICS`."""
    rows = []
    for level in range(data.depth + 1):
        truth, released, cells = aligned_level(data, release, level)
        rows.append({"level": level, "level_name": data.level_names[level],
                     **_metrics(truth, released, cells)})
    return pd.DataFrame(rows)


def pair_metrics(data: FlowData, release: FlowRelease) -> pd.DataFrame:
    """`FLOW_METRICS` for every (origin geo level, destination geo level), tree levels or
    not (e.g. county -> state in a destination tree): the released leaf cells and the
    truth are both summed to that pair of levels (GROUP BY origin and destination
    ancestors), the hierarchical range queries of the paper."""
    leaves = release.levels[data.depth]
    geo = data.geography.level_names
    rows = []
    for lo in range(data.geo_levels + 1):
        for ld in range(data.geo_levels + 1):
            width = data.level_width(ld)
            true_keys = data.ancestors(lo)[data.origin] * width + data.ancestors(ld)[
                data.destination]
            rel_keys = data.ancestors(lo)[leaves.origin] * width + data.ancestors(ld)[
                leaves.destination]
            truth, released = _union(true_keys, data.counts.astype(float), rel_keys,
                                     leaves.value.astype(float), data.level_width(lo) * width)
            rows.append({"origin_level": geo[lo], "destination_level": geo[ld],
                         **_metrics(truth, released, data.level_width(lo) * width)})
    return pd.DataFrame(rows)


def _metrics(truth: np.ndarray, released: np.ndarray, cells: int) -> dict:
    err = released - truth
    positive = released > 0
    true_pos = truth > 0
    total = truth.sum() + np.clip(released, 0, None).sum()
    return {
        "max_abs_error": float(np.abs(err).max()) if err.size else 0.0,
        "mae": float(np.abs(err).sum() / cells),
        "rmse": float(np.sqrt(np.square(err).sum() / cells)),
        "fdr": 100 * float(np.count_nonzero(positive & ~true_pos) / positive.sum())
        if positive.any() else float("nan"),
        "fnr": 100 * float(np.count_nonzero(true_pos & ~positive) / true_pos.sum())
        if true_pos.any() else float("nan"),
        "cpc": float(2 * np.minimum(truth, np.clip(released, 0, None)).sum() / total)
        if total > 0 else 1.0,
        "released_nonzero": int(positive.sum()),
        "true_nonzero": int(true_pos.sum()),
    }

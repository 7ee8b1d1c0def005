"""Level-wise measurement: the ledger and the noise applied per level.

The per-level budgets and noise come from the mechanism's privacy plan
(`hierdp_core.privacy.levels.derive_levels`), the split's shares from
`hierdp_core.privacy.budget.resolve_shares`; this module applies each level's noise and
writes the ledger of what was spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.levels import LevelPlan
from hierdp_core.privacy.samplers import NoiseSource


def ledger_frame(plans: Sequence[LevelPlan]) -> pd.DataFrame:
    """The ledger: level, query, share, budget, noise, scale, expected |error| and the 95%
    half-width of one cell's noise (a-priori, needs no data). A fresh copy every call: equal
    plans (frozen, compared by value) share one built frame, so a sweep or an audit that
    releases many times with the same plans builds its ledger once."""
    return _ledger_of(tuple(plans)).copy()


@lru_cache(maxsize=256)
def _ledger_of(plans: tuple[LevelPlan, ...]) -> pd.DataFrame:
    rows = []
    for p in plans:
        row = {"level": p.level, "level_name": p.level_name, "query": p.query,
               "share": p.share}
        if p.noise is None:
            row.update(definition=None, budget=0.0, noise="not measured", noise_scale=np.nan,
                       noise_sd=np.nan, expected_abs_error=np.nan, ci95_abs_error=np.nan)
        else:
            row.update(
                definition=p.budget.definition, budget=p.budget.value, noise=p.noise.name,
                noise_scale=p.noise.scale, noise_sd=float(np.sqrt(p.noise.variance)),
                expected_abs_error=p.noise.expected_abs,
                ci95_abs_error=float(p.noise.abs_quantile(0.95)),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def records_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """``pd.DataFrame(rows)`` for rows of scalars (a ledger), a fresh copy every call: equal
    rows (same keys, types and values) share one built frame (as `ledger_frame`)."""
    return _frame_of(tuple(tuple((k, type(v), v) for k, v in row.items()) for row in rows)).copy()


@lru_cache(maxsize=256)
def _frame_of(rows: tuple) -> pd.DataFrame:
    return pd.DataFrame([{k: v for k, _, v in row} for row in rows])


def measure(true_node_counts: np.ndarray, hierarchy: Hierarchy, plans: list[LevelPlan],
            source: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
    """Noisy counts (n_nodes, k), NaN on unmeasured levels, and each level's noise variance
    (inf where unmeasured)."""
    noisy = np.empty(true_node_counts.shape)  # every level written once, below
    variance = np.full(hierarchy.n_levels, np.inf)
    for p in plans:
        if p.noise is None:
            continue
        sl = hierarchy.level_slice(p.level)
        noisy[sl] = p.apply(true_node_counts[sl], source)
        variance[p.level] = p.noise.variance
    for level in np.flatnonzero(np.isinf(variance)):
        noisy[hierarchy.level_slice(level)] = np.nan
    return noisy, variance

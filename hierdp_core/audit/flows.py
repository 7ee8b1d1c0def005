"""Audit adapter for O/D flow mechanisms (the pair: `neighbours.flow_pair`, bounded or
unbounded as the mechanism's plan declares).

One release per trial, the released tree as a dense vector over all 31 nodes of the audit
O/D tree (a `FlowMechanism` grows the trials' trees together, the same trees: `trees`).
Statistics: per tree level, the shift of the pair gaining the trip minus that of
the pair losing it (where they differ), weighted by the ledger's 1/sigma_l^2 (the Gaussian
privacy loss) or 1/scale (`adapter.path_statistics`); and the two leaf cells.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.audit.adapter import (
    DEFAULT_DELTA,
    AuditAdapter,
    Setup,
    path_statistics,
    register_adapter,
)
from hierdp_core.audit.neighbours import flow_pair
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.mechanisms.flow_base import FlowMechanism
from hierdp_core.privacy.plan import SUBSTITUTE_TRIP
from hierdp_core.privacy.samplers import NoiseSource


def dense_flows(data, offsets: np.ndarray, levels, trials=None, n: int = 1) -> np.ndarray:
    """A released (or true) O/D tree as one dense vector over all pairs of all levels; with
    ``trials`` (the release of every node, per level: a `Forest`'s) ``n`` trees as rows."""
    out = np.zeros((n, offsets[-1]))
    for level, lv in enumerate(levels):
        width = data.level_width(data.pair_levels(level)[1])
        np.add.at(out, (0 if trials is None else trials[level],
                        offsets[level] + lv.origin * width + lv.destination), lv.value)
    return out if trials is not None else out[0]


@register_adapter("flows")
def flow_adapter(mechanism: Mechanism, *, epsilon: float, delta: float = DEFAULT_DELTA,
                 params: dict | None = None, split=None, batch: bool | None = None,
                 relation: str = SUBSTITUTE_TRIP) -> AuditAdapter:
    """Adapter for O/D flow mechanisms (see the module docstring)."""
    from hierdp_core.flows.tree import from_leaves

    pair = flow_pair(relation)
    d1 = pair.d1
    setup = Setup.make(mechanism, d1, d1.depth + 1, epsilon=epsilon, delta=delta,
                       params=params, split=split)
    widths = [d1.level_width(d1.pair_levels(lv)[0]) * d1.level_width(d1.pair_levels(lv)[1])
              for lv in range(d1.depth + 1)]
    offsets = np.concatenate([[0], np.cumsum(widths)])

    def dense_index(level, cell):
        lo, ld = d1.pair_levels(level)
        return int(offsets[level] + d1.ancestors(lo)[cell[0]] * d1.level_width(ld)
                   + d1.ancestors(ld)[cell[1]])

    levels = range(d1.depth + 1)
    gain = np.array([dense_index(lv, pair.details["gain"]) for lv in levels])
    unbounded = pair.details["lose"] is None
    lose = gain if unbounded else np.array([dense_index(lv, pair.details["lose"])
                                            for lv in levels])
    truth = dense_flows(d1, offsets, from_leaves(d1, d1.origin, d1.destination, d1.counts))
    differs = unbounded | (gain != lose)

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        shift = out[:, gain] - truth[gain]
        if not unbounded:
            shift = shift - (out[:, lose] - truth[lose])
        stats = path_statistics([np.where(differs, shift, 0.0)], setup.weights)
        stats["gaining leaf"] = out[:, gain[-1]]
        if not unbounded:
            stats["losing leaf"] = out[:, lose[-1]]
        return stats

    if isinstance(mechanism, FlowMechanism):  # the trials' trees grown together
        trees = setup.per_side(mechanism.trees)

        def run(data, n: int, source: NoiseSource) -> np.ndarray:
            forest = trees(data)([source] * n)
            return dense_flows(data, offsets, forest.levels, forest.trial, n)
    else:
        run = setup.per_trial(int(offsets[-1]),
                              lambda data, rel: dense_flows(data, offsets, rel.levels))
    return AuditAdapter((pair.d1, pair.d2), run, statistics, setup.budget, pair.description)

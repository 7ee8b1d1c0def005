"""Audit adapter for count mechanisms (the pair: `neighbours.count_pair`).

Trials. A mechanism that declares ``independent_columns`` (`MechanismInfo`) processes
category columns independently, so ``K`` trials are ONE release of a CountData with ``K``
identical category columns, every column an independent trial. Any other count mechanism is
run one release per trial (slow but always valid).

Statistics, over the nodes on the path root -> region -> changed leaf (``x`` the true values
under D, per-level weights ``w_l`` from the mechanism's own ledger): ``path-weighted`` and
``path-clipped`` (`adapter.path_statistics`), and the single released coordinates ``root``,
``region``, ``leaf``.
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
from hierdp_core.audit.neighbours import AUDIT_CHANGED_LEAF, AUDIT_LEAF_COUNTS, count_pair
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON
from hierdp_core.privacy.samplers import NoiseSource


@register_adapter("counts")
def count_adapter(mechanism: Mechanism, *, epsilon: float, delta: float = DEFAULT_DELTA,
                  params: dict | None = None, split=None, batch: bool | None = None,
                  relation: str = ADD_REMOVE_PERSON, leaf_counts=AUDIT_LEAF_COUNTS,
                  changed_leaf: int = AUDIT_CHANGED_LEAF) -> AuditAdapter:
    """Adapter for count mechanisms on the 2 x 2 audit tree (see the module docstring)."""
    from hierdp_core.queries.counts import CountData

    pair = count_pair(relation, leaf_counts, changed_leaf)
    h, path = pair.hierarchy, pair.path
    setup = Setup.make(mechanism, pair.d1, h.n_levels, epsilon=epsilon, delta=delta,
                       params=params, split=split)
    if batch is None:
        batch = mechanism.info.independent_columns
    x = pair.d1.node_counts()[path, 0].astype(float)

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        stats = path_statistics([out[:, path] - x], setup.weights)
        for i, name in enumerate(h.level_names):
            stats[name if i else "root"] = out[:, path[i]]
        return stats

    one_by_one = setup.per_trial(h.n_nodes,
                                 lambda data, rel: np.asarray(rel.values, dtype=float)[:, 0])

    def batched(data, n: int, source: NoiseSource) -> np.ndarray:
        wide = CountData(h, np.repeat(data.leaf_counts, n, axis=1),
                         tuple(str(i) for i in range(n)), ("trial",))
        return np.asarray(setup.release(wide, source).values, dtype=float).T

    return AuditAdapter((pair.d1, pair.d2), batched if batch else one_by_one, statistics,
                        setup.budget, pair.description, bool(batch))

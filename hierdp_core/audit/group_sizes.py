"""Audit adapter for group-size mechanisms (the pairs: `neighbours.group_size_pair`, one per
relation the mechanism declares).

One release per trial (sizes are not independent columns): the ``n`` trials of a side are
``n`` successive releases (`GroupSizeMechanism.trials`: the same values, set up once, each
trial's noise drawn in turn, the trials estimated together where the mechanism can), except
for a mechanism whose estimate takes every cell on its own (``Capabilities.estimate ==
"raw"``, e.g. gs-noisy): its ``n`` trials are measured at once, side by side
(`GroupSizeMechanism.raw_trials`). Statistics over the changed cells on the path root ->
region -> leaf (one size loses a group under D', another gains it),
weighted per level by the ledger's epsilon_l per unit: ``path-weighted`` / ``path-clipped``
(`adapter.path_statistics`); ``chain-weighted``, the level-wide chain counts (Fioretto et
al.'s size-major order) at the size that loses (or, for a new group, gains) it, whose leak
grows with the number of regions of a level; the leaf's changed cells; and, when D' creates a
group, the number of groups of every node on the path.
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
from hierdp_core.audit.neighbours import group_size_pair
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.mechanisms.group_sizes_base import GroupSizeMechanism
from hierdp_core.privacy.plan import PERSON_IN_GROUP
from hierdp_core.privacy.samplers import NoiseSource


@register_adapter("group-sizes")
def group_size_adapter(mechanism: Mechanism, *, epsilon: float, delta: float = DEFAULT_DELTA,
                       params: dict | None = None, split=None, batch: bool | None = None,
                       relation: str = PERSON_IN_GROUP) -> AuditAdapter:
    """Adapter for group-size mechanisms (see the module docstring)."""
    pair = group_size_pair(relation)
    h, path = pair.hierarchy, pair.path
    lose, gain, width = pair.details["lose"], pair.details["gain"], pair.details["width"]
    setup = Setup.make(mechanism, pair.d1, h.n_levels, epsilon=epsilon, delta=delta,
                       params=params, split=split)
    truth = pair.d1.node_counts().astype(float)
    node_weight = setup.weights[h.level_of_nodes()]
    chain_size = gain if lose is None else lose

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        released = out.reshape(len(out), h.n_nodes, width)
        cells = released[:, path]
        shifts = [cells[:, :, gain] - truth[path, gain]]  # ``gain`` gains a group under D'
        if lose is not None:
            shifts.append(truth[path, lose] - cells[:, :, lose])  # ``lose`` loses it
        # level-wide chain counts at ``chain_size`` (size-major order): every smaller-size
        # group of the level plus the ``chain_size`` groups of the regions up to this one;
        # under D' every one from the changed region onwards moves by one
        running = np.zeros((len(out), h.n_nodes))
        for level in range(h.n_levels):
            sl = h.level_slice(level)
            running[:, sl] = (released[:, sl, :chain_size].sum(axis=(1, 2))[:, None]
                              + np.cumsum(released[:, sl, chain_size], axis=1))
        stats = path_statistics(shifts, setup.weights)
        stats["chain-weighted"] = running @ node_weight
        if lose is not None:
            stats[f"leaf size {lose}"] = cells[:, -1, lose]
        stats[f"leaf size {gain}"] = cells[:, -1, gain]
        if lose is None:  # a group created: the number of groups on the path changes
            for level, node_cells in enumerate(np.moveaxis(cells, 1, 0)):
                stats[f"groups at level {level}"] = node_cells.sum(axis=1)
        return stats

    if batch is None:
        batch = (isinstance(mechanism, GroupSizeMechanism)
                 and mechanism.info.capabilities.estimate == "raw")

    def batched(data, n: int, source: NoiseSource) -> np.ndarray:
        return mechanism.raw_trials(data, setup.budget, n, source, split=split,
                                    **setup.params).reshape(n, -1).astype(float)

    def successive(data, n: int, source: NoiseSource) -> np.ndarray:
        return mechanism.trials(data, setup.budget, n, source, split=split,
                                **setup.params).reshape(n, -1).astype(float)

    one_by_one = successive if isinstance(mechanism, GroupSizeMechanism) else setup.per_trial(
        h.n_nodes * width, lambda data, rel: np.asarray(rel.values, dtype=float).ravel())
    return AuditAdapter((pair.d1, pair.d2), batched if batch else one_by_one, statistics,
                        setup.budget, pair.description, bool(batch))

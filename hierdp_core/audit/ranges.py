"""Audit adapter for range mechanisms, whole mechanism on the audit tree (the pair:
`neighbours.range_pair`); their stages on their own are audited by `stages`.

A side's trials are made together (`RangeReleaser.trials`, bit for bit the releases one by
one; a mechanism of another class: one release per trial). Output = the released histograms
of all nodes, then the changed leaf's bucket partition encoded as a bit mask of its inner
edges (-1 without a partition).
Statistics: the released value of the changed cell at every level, the changed leaf's prefix
sum up to it, and one indicator per partition of the changed leaf (what a leaky Stage 1
gives away).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.audit.adapter import DEFAULT_DELTA, AuditAdapter, Setup, register_adapter
from hierdp_core.audit.neighbours import range_pair
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.mechanisms.ranges import RangeMechanism
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON
from hierdp_core.privacy.samplers import NoiseSource


def partition_code(edges: np.ndarray | None) -> float:
    """A partition of n cells as the bit mask of its inner edges (bit e - 1 for edge e);
    -1 for no partition. Exact for n <= 53."""
    if edges is None:
        return -1.0
    inner = np.asarray(edges[1:-1], dtype=np.int64)
    return float(np.sum(2.0 ** (inner - 1)))


@register_adapter("ranges")
def range_adapter(mechanism: Mechanism, *, epsilon: float, delta: float = DEFAULT_DELTA,
                  params: dict | None = None, split=None, batch: bool | None = None,
                  relation: str = ADD_REMOVE_PERSON) -> AuditAdapter:
    """Adapter for range mechanisms (see the module docstring)."""
    pair = range_pair(relation)
    h, path = pair.hierarchy, pair.path
    n, value = pair.details["n"], pair.details["value"]
    setup = Setup.make(mechanism, pair.d1, h.n_levels, epsilon=epsilon, delta=delta,
                       params=params, split=split)
    node = int(path[-1])
    cells = path[::-1] * n + value
    leaf_cells = node * n + np.arange(value + 1)
    partitioned = "rho" in mechanism.params(**setup.params)  # a private Stage 1 to watch

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        stats = {f"cell at level {h.depth - i}": out[:, c] for i, c in enumerate(cells)}
        stats["leaf prefix"] = out[:, leaf_cells].sum(axis=1)
        if partitioned:
            for code in range(2 ** (n - 1)):
                stats[f"leaf partition {code}"] = (out[:, -1] == code).astype(float)
        return stats

    def code(edges: tuple | None) -> float:
        return partition_code(None if edges is None else edges[node])

    if isinstance(mechanism, RangeMechanism):  # the trials made together
        releaser = setup.per_side(mechanism.releaser)

        def run(data, trials: int, source: NoiseSource) -> np.ndarray:
            made = releaser(data).trials([source] * trials)
            out = np.empty((trials, h.n_nodes * n + 1))
            out[:, :-1] = made.values.reshape(trials, -1)
            out[:, -1] = -1.0 if made.edges is None else [code(e) for e in made.edges]
            return out
    else:
        run = setup.per_trial(h.n_nodes * n + 1, lambda data, rel: np.append(
            np.asarray(rel.values, dtype=float).ravel(), code(rel.edges)))
    return AuditAdapter((pair.d1, pair.d2), run, statistics, setup.budget, pair.description)

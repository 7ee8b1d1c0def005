"""A range release over a domain kept sparse (issue 32, item 2): `SparseRangeData` released
by a mechanism whose `Capabilities` say ``sparse_ranges`` (Partition+Laplace with PrivTree's
Stage 1).

Every measured level runs `sparse_partition_laplace` on its units with the level's
epsilon_l, drawing exactly what `RangeMechanism.release` draws on the dense histograms (the
same mechanism, draw for draw under a seed: `hierdp_core.ranges.sparse_privtree`), so the
privacy statement of the mechanism is unchanged. Then, instead of the domain's cells, the
release is made over the *intervals* of the common refinement of every unit's private
buckets (post-processing of private outputs): each unit's noisy bucket counts are spread
over the intervals by overlap (evenly within a bucket, as the dense release spreads them
over cells), and TopDown (`hierdp_core.consistency.topdown`, as for the workload's atoms of
a dense release) makes them consistent non-negative integers per interval. The release's
categories are those intervals ("LO-HI" of the attribute): their number follows the data
through PrivTree's partition (private), never the domain, and the manifest says so.

Memory: the units x intervals of the release (the intervals at most the buckets of all
units), never the domain (`hierdp_core.memory_sparse.sparse_ranges_plan`).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.topdown import topdown
from hierdp_core.errors import InputError
from hierdp_core.mechanisms.range_release import RangeRelease
from hierdp_core.mechanisms.range_releaser import stages_that_ran
from hierdp_core.mechanisms.range_statements import NEIGHBOURING
from hierdp_core.privacy.levels import privacy_record
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.sparse_ranges import SparseRangeData
from hierdp_core.ranges.sparse_privtree import sparse_partition_laplace


def sparse_range_release(mechanism, data: SparseRangeData, budget, *, split=None,
                         source: NoiseSource | None = None, **params):
    """The `RangeRelease` of ``data`` by ``mechanism`` (a `RangeMechanism` that keeps
    ranges sparse) over the intervals of its buckets (module doc)."""
    p = mechanism.params(**params)
    if p.get("partition", "privtree") != "privtree":
        raise InputError(f"a domain kept sparse is partitioned by PrivTree: drop partition="
                         f"{p['partition']} (or declare a domain that fits in memory)")
    source = source or NoiseSource(secure=True)
    levels, _ = mechanism._levels(data, budget, split, p)
    stages = mechanism.estimator_stages(**p)
    h = data.hierarchy
    edges: list = [None] * h.n_nodes
    counts: list = [None] * h.n_nodes
    stage1_units = [0] * h.n_levels
    for level, plan in enumerate(levels):
        if plan.budget is None:
            continue
        rho = mechanism._level_params(p, level, h.n_levels)["rho"]
        out = sparse_partition_laplace(data.level_rows(level), plan.budget.value, source,
                                       rho=rho, **stages)
        sl = h.level_slice(level)
        edges[sl], counts[sl] = out.edges, out.counts
        stage1_units[level] = h.level_size(level)
    cuts = np.unique(np.concatenate([e for e in edges if e is not None]))
    estimates = np.full((h.n_nodes, cuts.size - 1), np.nan)  # NaN: not measured
    measured = np.flatnonzero([e is not None for e in edges])
    estimates[measured] = by_overlap([edges[i] for i in measured],
                                     [counts[i] for i in measured], cuts)
    root = estimates[h.level_slice(1)].sum(axis=0) if levels[0].budget is None \
        else estimates[0]
    values = topdown(h, np.nan_to_num(estimates), np.maximum(np.rint(root), 0))
    lo = data.domain[0]
    categories = tuple(f"{lo + a}-{lo + b - 1}" for a, b in zip(cuts[:-1], cuts[1:],
                                                                strict=True))
    return RangeRelease(
        hierarchy=h, values=values, mechanism=mechanism.info.name, parameters=p,
        privacy=privacy_record(mechanism.privacy_plan(**p), levels, note=NEIGHBOURING,
                               private=mechanism.info.private),
        ledger=stages_that_ran(mechanism._ledger_rows(data, budget, split, p), stage1_units),
        randomness=source.as_dict(), categories=categories, noisy=estimates,
        edges=tuple(edges), attribute=data.attribute,
        workload={"name": "the released intervals (a range is answered by overlap)",
                  "queries": 0, "domain": list(data.domain), "kept_sparse": True})


def by_overlap(edges: list[np.ndarray], counts: list[np.ndarray],
               cuts: np.ndarray) -> np.ndarray:
    """Each unit's bucket ``counts`` (its ``edges``) spread evenly over its buckets' cells
    and summed over the intervals between ``cuts`` (every unit's edges among them): (units,
    intervals), one linear interpolation of the cumulative counts of all units at once."""
    n = int(cuts[-1])
    sizes = np.array([c.size for c in counts], dtype=np.int64)
    unit = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes + 1)
    flat = np.concatenate(counts)
    before = np.cumsum(sizes) - sizes  # each unit's first count in ``flat``
    cumulative = np.concatenate([[0.0], np.cumsum(flat)])
    starts = np.repeat(cumulative[before], sizes + 1)
    index = np.arange(unit.size) - np.repeat(np.cumsum(sizes + 1) - (sizes + 1), sizes + 1)
    at_edges = cumulative[np.repeat(before, sizes + 1) + index] - starts
    x = unit * (n + 1) + np.concatenate(edges)
    points = (np.arange(sizes.size, dtype=np.int64)[:, None] * (n + 1) + cuts[None, :])
    return np.diff(np.interp(points, x, at_edges), axis=1)

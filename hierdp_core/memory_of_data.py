"""The memory plan of a query's data object (`plan_of_data`), checked before its mechanism
runs: counts, group sizes, ranges (a declared domain, or one kept sparse) and flows."""

from __future__ import annotations

from hierdp_core.flows.data import FlowData
from hierdp_core.groupsizes.data import GroupSizeData
from hierdp_core.mechanisms.base import keeps_flows_sparse
from hierdp_core.memory_plan import (
    MemoryPlan,
    counts_plan,
    flows_plan,
    group_sizes_plan,
    ranges_plan,
)
from hierdp_core.memory_sparse import flow_tree_shape, sparse_flows_plan, sparse_ranges_plan
from hierdp_core.queries.ranges import RangeData
from hierdp_core.queries.sparse_ranges import SparseRangeData


def plan_of_data(data, mechanism: str | None) -> MemoryPlan:
    """The plan of releasing ``data`` (a counts, group-size, range or flow data object)
    with ``mechanism``: checked before the mechanism runs (its release is the largest
    allocation), so a shape read from the data is bounded too."""
    if isinstance(data, FlowData):
        g = data.geography
        if keeps_flows_sparse(mechanism):
            return sparse_flows_plan(mechanism, *flow_tree_shape(data), data.n)
        return flows_plan(mechanism, [g.level_size(lv) for lv in range(g.n_levels)])
    nodes = data.hierarchy.n_nodes
    if isinstance(data, SparseRangeData):
        return sparse_ranges_plan(mechanism, nodes, data.hierarchy.n_levels,
                                  data.nonzero_cells, data.n)
    if isinstance(data, RangeData):
        try:
            lo = int(data.values[0])
        except (ValueError, IndexError):
            lo = 0
        return ranges_plan(mechanism, nodes, (lo, lo + len(data.values) - 1))
    if isinstance(data, GroupSizeData):
        return group_sizes_plan(mechanism, nodes, data.max_size)
    k = len(data.categories)
    return counts_plan(mechanism, nodes, {"categories": k} if k > 1 else None)

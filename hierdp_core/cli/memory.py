"""``--max-memory`` on the command line (issue 32): the release's memory plan
(`hierdp_core.memory_plan`), so that a size the user typed (``--domain``, ``--max-size``,
declared categories, interval replicates, the geography's units or areas) is refused in
one line before anything grows with it. Three checks, each as soon as it can be told:

* `check_declared_memory`: from the arguments alone, with the fewest units the release can
  have (the root and one per level), before the input is read or numpy imported;
* `check_table_memory`: with the units of the declared geography or of the table, before
  the data is shaped;
* `check_data_memory`: with the shaped data, before the mechanism runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hierdp_core.cli.inputs import declared_categories, declared_geography, flow_levels
from hierdp_core.cli.limits import memory_limit
from hierdp_core.memory_plan import (
    SPARSE_RANGES,
    MemoryPlan,
    check_replicates,
    counts_plan,
    flows_plan,
    group_sizes_plan,
    level_sizes,
    ranges_plan,
    replicates_plan,
    table_nodes,
)

if TYPE_CHECKING:
    import pandas as pd


def check_declared_memory(cfg, run) -> None:
    """`MemoryLimitError` when the release of ``cfg`` (``run``: its `RunOptions`) cannot fit
    in `memory_limit` whatever the table holds: a size typed (``--domain``, ``--max-size``,
    the declared ``--category-values``, ``--interval-replicates``) times the fewest units a
    release over ``--levels`` has (the root and one unit per level). Replicates beyond
    `hierdp_core.defaults.MAX_REPLICATES` are refused whatever the memory
    (`check_replicates`). Reads no file."""
    if cfg.interval != 0.0:
        check_replicates(cfg.interval_replicates)
    levels, query, mechanism = cfg.levels, cfg.query, cfg.mechanism
    if query == "flows" or not levels:
        return
    nodes, limit = 1 + len(levels), memory_limit(run)
    plan = None
    if query == "ranges" and cfg.domain and mechanism not in SPARSE_RANGES:
        plan = ranges_plan(mechanism, nodes, cfg.domain, at_least=True)
    elif query == "group-sizes" and cfg.max_size is not None and cfg.max_size >= 0:
        plan = group_sizes_plan(mechanism, nodes, cfg.max_size, at_least=True)
    elif query == "counts":
        declared = declared_categories(cfg)[1]
        plan = counts_plan(mechanism, nodes, {c: len(v) for c, v in declared.items()},
                           at_least=True) if declared else None
    if plan is not None:
        plan.check(limit)
    replicates = cfg.interval_replicates
    if replicates is not None and replicates > 1 and cfg.interval != 0.0:
        replicates_plan(nodes, replicates, at_least=True).check(limit)


def check_table_memory(cfg, run, table: pd.DataFrame) -> None:
    """`MemoryLimitError` when the release of ``cfg`` would not fit in `memory_limit`;
    nothing when the plan cannot be known yet (a missing column or flag is the data
    builder's error to give)."""
    plan = table_plan(cfg, table)
    if plan is not None:
        plan.check(memory_limit(run))


def check_data_memory(cfg, run, data) -> MemoryPlan:
    """`MemoryLimitError` when releasing ``data`` (shaped, before the mechanism runs) with
    the mechanism, or its intervals with ``--interval-replicates``, would not fit in
    `memory_limit`: a shape read from the data is bounded too. Returns the release's plan
    (`memory_sparse.sparse_note` says when it keeps a large space sparse)."""
    from hierdp_core.memory_of_data import plan_of_data

    limit = memory_limit(run)
    plan = plan_of_data(data, cfg.mechanism)
    plan.check(limit)
    replicates = cfg.interval_replicates
    if replicates is not None and replicates > 1 and cfg.interval != 0.0:
        nodes = (data.geography.n_nodes if cfg.query == "flows" else data.hierarchy.n_nodes)
        replicates_plan(nodes, replicates).check(limit)
    return plan


def table_plan(cfg, table: pd.DataFrame) -> MemoryPlan | None:
    """The memory plan of the release of ``cfg``, from the declared structure (or the
    table's units, with --structure-from-data); None when it cannot be told yet."""
    query, mechanism = cfg.query, cfg.mechanism
    if query == "flows":
        from hierdp_core.mechanisms.base import keeps_flows_sparse  # numpy: flows only

        if keeps_flows_sparse(mechanism):
            return None  # its plan needs the trips and the tree: `check_data_memory`
        origin, destination = flow_levels(cfg)
        geography = declared_geography(cfg, origin, {}, "flows", flows=(origin, destination))
        areas = (_geography_sizes(geography) if geography is not None
                 else level_sizes(table, origin, destination))
        return flows_plan(mechanism, [1, *areas]) if areas else None
    levels = list(cfg.levels)
    if not levels:
        return None
    nodes = _nodes(cfg, table, levels, query)
    if nodes is None:
        return None
    if query == "ranges":  # a mechanism that keeps a large domain sparse: `_range_data`
        return ranges_plan(mechanism, nodes, cfg.domain) \
            if cfg.domain and mechanism not in SPARSE_RANGES else None
    if query == "group-sizes":
        return group_sizes_plan(mechanism, nodes, cfg.max_size) \
            if cfg.max_size is not None and cfg.max_size >= 0 else None
    categories, declared = declared_categories(cfg)
    if not set(categories) <= set(table.columns):
        return None
    return counts_plan(mechanism, nodes, {
        c: len(declared[c]) if c in declared else int(table[c].nunique(dropna=False))
        for c in categories}, "--category-values" if set(categories) <= set(declared)
        else "--categories")


def _nodes(cfg, table, levels, query) -> int | None:
    """The units of every level: the declared geography's, else the table's."""
    if cfg.data.get("geography") and cfg.structure != "from-data":
        geography = declared_geography(cfg, levels, dict(cfg.names), query)
        return geography.hierarchy.n_nodes
    return table_nodes(table, levels)


def _geography_sizes(geography) -> list[int]:
    """The areas of each level of a flow geography below its root."""
    return [geography.hierarchy.level_size(lv) for lv in range(1, geography.hierarchy.n_levels)]

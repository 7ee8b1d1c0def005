"""``--max-memory`` on the command line (issue 32): the release's memory plan
(`hierdp_core.memory_plan`), so that a size the user typed (``--domain``, ``--max-size``,
declared categories, interval replicates, the geography's units or areas) is refused in
one line before anything grows with it. Three checks, each as soon as it can be told:

* `check_declared_memory`: from the arguments alone, with the fewest units the release can
  have (the root and one per level), before the input is read or numpy imported;
* `check_args_memory`: with the units of the declared geography or of the table, before
  the data is shaped;
* `check_data_memory`: with the shaped data, before the mechanism runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hierdp_core.cli.inputs import csv_list, declared_categories, declared_geography, flow_levels
from hierdp_core.cli.limits import memory_limit
from hierdp_core.declared_values import parse_domain
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


def check_declared_memory(args) -> None:
    """`MemoryLimitError` when the release ``args`` ask for cannot fit in `memory_limit`
    whatever the table holds: a size typed (``--domain``, ``--max-size``, the declared
    ``--category-values``, ``--interval-replicates``) times the fewest units a release over
    ``--levels`` has (the root and one unit per level). Replicates beyond
    `hierdp_core.defaults.MAX_REPLICATES` are refused whatever the memory
    (`check_replicates`). Reads no file."""
    if getattr(args, "interval", None) != 0.0:
        check_replicates(getattr(args, "interval_replicates", None))
    levels = csv_list(getattr(args, "levels", None))
    if args.query == "flows" or not levels:
        return
    nodes, limit = 1 + len(levels), memory_limit(args)
    plan = None
    if args.query == "ranges" and args.domain and args.mechanism not in SPARSE_RANGES:
        plan = ranges_plan(args.mechanism, nodes, parse_domain(args.domain), at_least=True)
    elif args.query == "group-sizes" and args.max_size is not None and args.max_size >= 0:
        plan = group_sizes_plan(args.mechanism, nodes, args.max_size, at_least=True)
    elif args.query == "counts":
        declared = declared_categories(args)[1]
        plan = counts_plan(args.mechanism, nodes, {c: len(v) for c, v in declared.items()},
                           at_least=True) if declared else None
    if plan is not None:
        plan.check(limit)
    replicates = getattr(args, "interval_replicates", None)
    if replicates is not None and replicates > 1 and args.interval != 0.0:
        replicates_plan(nodes, replicates, at_least=True).check(limit)


def check_args_memory(args, table: pd.DataFrame) -> None:
    """`MemoryLimitError` when the release ``args`` ask for would not fit in
    `memory_limit`; nothing when the plan cannot be known yet (a missing column or flag is
    the data builder's error to give)."""
    plan = args_plan(args, table)
    if plan is not None:
        plan.check(memory_limit(args))


def check_data_memory(args, data) -> MemoryPlan:
    """`MemoryLimitError` when releasing ``data`` (shaped, before the mechanism runs) with
    the mechanism, or its intervals with ``--interval-replicates``, would not fit in
    `memory_limit`: a shape read from the data is bounded too. Returns the release's plan
    (`memory_sparse.sparse_note` says when it keeps a large space sparse)."""
    from hierdp_core.memory_of_data import plan_of_data

    limit = memory_limit(args)
    plan = plan_of_data(data, args.mechanism)
    plan.check(limit)
    replicates = getattr(args, "interval_replicates", None)
    if replicates is not None and replicates > 1 and args.interval != 0.0:
        nodes = (data.geography.n_nodes if args.query == "flows" else data.hierarchy.n_nodes)
        replicates_plan(nodes, replicates).check(limit)
    return plan


def args_plan(args, table: pd.DataFrame) -> MemoryPlan | None:
    """The memory plan of the release ``args`` ask for, from the declared structure (or
    the table's units, with --structure-from-data); None when it cannot be told yet."""
    query, mechanism = args.query, args.mechanism
    if query == "flows":
        from hierdp_core.mechanisms.base import keeps_flows_sparse  # numpy: flows only

        if keeps_flows_sparse(mechanism):
            return None  # its plan needs the trips and the tree: `check_data_memory`
        origin, destination = flow_levels(args)
        geography = declared_geography(args, origin, {}, "flows", flows=(origin, destination))
        areas = (_geography_sizes(geography) if geography is not None
                 else level_sizes(table, origin, destination))
        return flows_plan(mechanism, [1, *areas]) if areas else None
    levels = csv_list(args.levels)
    if not levels:
        return None
    nodes = _nodes(args, table, levels, query)
    if nodes is None:
        return None
    if query == "ranges":  # a mechanism that keeps a large domain sparse: `_range_data`
        return ranges_plan(mechanism, nodes, parse_domain(args.domain)) \
            if args.domain and mechanism not in SPARSE_RANGES else None
    if query == "group-sizes":
        return group_sizes_plan(mechanism, nodes, args.max_size) \
            if args.max_size is not None and args.max_size >= 0 else None
    categories, declared = declared_categories(args)
    if not set(categories) <= set(table.columns):
        return None
    return counts_plan(mechanism, nodes, {
        c: len(declared[c]) if c in declared else int(table[c].nunique(dropna=False))
        for c in categories}, "--category-values" if set(categories) <= set(declared)
        else "--categories")


def _nodes(args, table, levels, query) -> int | None:
    """The units of every level: the declared geography's, else the table's."""
    if getattr(args, "geography", None) and not getattr(args, "structure_from_data", False):
        from hierdp_core.cli.inputs import name_columns

        geography = declared_geography(args, levels, name_columns(getattr(args, "names", None)),
                                       query)
        return geography.hierarchy.n_nodes
    return table_nodes(table, levels)


def _geography_sizes(geography) -> list[int]:
    """The areas of each level of a flow geography below its root."""
    return [geography.hierarchy.level_size(lv) for lv in range(1, geography.hierarchy.n_levels)]

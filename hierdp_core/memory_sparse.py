"""The sparse memory plans (issue 32, item 2): a release that keeps a large declared
space sparse instead of refusing it, with the words its command line and manifest say of it
(`sparse_note`, `sparse_record`). Flows: the O/D space, by the mechanisms that
`memory_plan.keeps_flows_sparse`; ranges: the domain, by those in
`memory_plan.SPARSE_RANGES`. The dense plans and the refusal are in `hierdp_core.memory_plan`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hierdp_core.memory_plan import (
    BYTES_PER_CELL,
    SPARSE_FLOW_BYTES_PER_CELL,
    MemoryPlan,
    format_bytes,
)

SPARSE_RANGES_HELD = ("each unit's non-zero cells; PrivTree's buckets and their noisy counts "
                      "(the dense mechanism's draws); released per interval of the buckets' "
                      "common refinement, never per value of the domain")


def sparse_ranges_plan(mechanism: str | None, nodes: int, levels: int, nonzero: int,
                       n: int) -> MemoryPlan:
    """Ranges over a domain of ``n`` values kept sparse (`SPARSE_RANGES`): ``nodes`` units
    x the released intervals, at most the buckets of all units. PrivTree visits the buckets
    on the paths to the ``nonzero`` leaf cells (at most one per level of the bisection, for
    each of the ``levels`` measured levels) and, below a split, empty buckets that split
    again with probability 1/4 (two visits each on average): about 3 buckets a path step.
    The table's non-zero cells multiply."""
    depth = max(n - 1, 1).bit_length() + 1

    def cells_at(v: int) -> int:
        return nodes * min(n, 3 * v * levels * depth + nodes)

    return MemoryPlan("ranges", mechanism, "the table's distinct (unit, value) cells",
                      nonzero, cells_at, f"{nodes:,} units x about {cells_at(nonzero) // nodes:,}"
                      " released intervals at most", lambda v: f"{v:,} distinct cells",
                      dense_cells=nodes * n,
                      space=f"the domain of {n:,} values for {nodes:,} units ({nodes * n:,} "
                            "cells", held=SPARSE_RANGES_HELD)


def sparse_flows_plan(mechanism: str | None, dense: Sequence[int], fans: Sequence[int],
                      trips: int) -> MemoryPlan:
    """Flows with a mechanism that `keeps_flows_sparse`: tree level l (``dense[l]`` O/D pairs)
    noises the children of its released positive parents, at most ``trips`` of them (the
    released values are non-negative integers summing to the total) with at most
    ``fans[l]`` children each, and never more than its pairs. The trips multiply."""
    def cells_at(n: int) -> int:
        return sum(min(d, n * f) for d, f in zip(dense, fans, strict=True))

    space = sum(dense)
    return MemoryPlan("flows", mechanism, "the number of trips", trips, cells_at,
                      f"at most {cells_at(trips):,} O/D cells noised, the children of "
                      f"released positive pairs for {trips:,} trips",
                      lambda v: f"{v:,} trips", per_cell=SPARSE_FLOW_BYTES_PER_CELL,
                      dense_cells=space, space=f"the O/D space of {space:,} cells (areas squared per level",
                      held="only the children of released positive O/D pairs (top-down) or "
                           "the positive pairs (stability histogram), never areas x areas")


def sparse_note(plan: MemoryPlan, limit: int) -> str | None:
    """The words saying that ``plan`` keeps sparse a space that, held dense, would not fit
    in ``limit`` bytes; None otherwise (a dense plan, or a space that would fit)."""
    dense_bytes = plan.dense_cells * BYTES_PER_CELL[plan.query]
    if dense_bytes <= limit:
        return None
    return (f"{plan.space}; about "
            f"{format_bytes(dense_bytes)} held dense, above --max-memory "
            f"{format_bytes(limit)}) is held sparsely by {plan.mechanism}: {plan.what}, "
            f"about {format_bytes(plan.bytes)}")


def sparse_record(plan: MemoryPlan) -> dict | None:
    """What the manifest says of a sparse plan (public: the dense space of the declared
    structure and how it was held, never the data-derived bound), or None for a dense one."""
    if not plan.dense_cells:
        return None
    return {"representation": "sparse", "dense_cells": plan.dense_cells, "held": plan.held}


def flow_tree_shape(data) -> tuple[list[int], list[int]]:
    """Per level of ``data``'s O/D tree below the root (a `FlowData`): its O/D pairs and
    the most children a node of the level above has (the fan-out of the side it splits)."""
    import numpy as np

    g = data.geography
    dense, fans = [], []
    for level in range(1, data.depth + 1):
        lo, ld = data.pair_levels(level)
        dense.append(g.level_size(lo) * g.level_size(ld))
        split = lo if data.split_side(level) == "origin" else ld
        fans.append(int(np.diff(g.child_ptr[g.level_offsets[split - 1]:
                                            g.level_offsets[split] + 1]).max(initial=0)))
    return dense, fans

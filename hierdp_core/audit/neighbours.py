"""The audit's neighbouring datasets: one small pair (D, D') per query kind and relation.

Every pair differs as the relation (`hierdp_core.privacy.plan.RELATIONS`) allows and no
more, on a tree small enough that thousands of releases take seconds:

* counts: root > regions A, B > leaves a1, a2, b1, b2 with leaf counts (3, 0, 5, 2); D' adds
  one person to a2 (add/remove one person);
* group sizes: root > A, B > four leaves each, ten groups of sizes 0..3 per leaf (top-code
  N = 3). Person relation: D' adds one person to a size-1 group of the first leaf (it moves
  to size 2). Whole-group relation: D' adds a new group of one person there. Eight leaves
  make a level-wide (chain) leak eight times larger than a per-region one;
* flows: the counts tree, five leaf flows; D' moves one trip of a1>b1 to a1>a2 (bounded DP,
  substitution) or adds one trip a1>a2 (unbounded DP);
* ranges: the counts tree, histograms over eight ordered values; the leaf a1 is empty under D
  and D' adds one person with value 1 (the spec's case where the reference DAWA Stage 1
  shows a partition about 21 times likelier under D');
* one histogram (for stages run on their own, one unit at a time): `histogram_pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.plan import (
    ADD_REMOVE_PERSON,
    ADD_REMOVE_TRIP,
    PERSON_IN_GROUP,
    SUBSTITUTE_TRIP,
    WHOLE_GROUP,
)

AUDIT_LEAVES = (("A", "a1"), ("A", "a2"), ("B", "b1"), ("B", "b2"))
AUDIT_LEAF_COUNTS = (3, 0, 5, 2)
AUDIT_CHANGED_LEAF = 1

AUDIT_GROUP_LEAVES = tuple((r, f"{r.lower()}{i}") for r in "AB" for i in range(1, 5))
AUDIT_GROUP_SIZES = ((0, 1, 1, 1, 2, 2, 2, 3, 3, 1),) * len(AUDIT_GROUP_LEAVES)
AUDIT_GROUP_MAX_SIZE = 3

AUDIT_FLOWS = ((("A", "a1"), ("B", "b1"), 3), (("A", "a1"), ("A", "a1"), 2),
               (("A", "a2"), ("B", "b2"), 4), (("B", "b1"), ("A", "a1"), 1),
               (("B", "b2"), ("B", "b2"), 2))
AUDIT_FLOW_MOVE = (("A", "a1"), ("B", "b1")), (("A", "a1"), ("A", "a2"))

AUDIT_RANGE_HISTOGRAMS = ((0,) * 8, (3, 1, 0, 0, 2, 2, 2, 2), (0, 0, 5, 5, 5, 0, 0, 1),
                          (1,) * 8)
AUDIT_RANGE_CHANGE = (0, 1)  # (leaf, value)

#: One-unit histograms for stages run on their own: (base histogram, changed cell). The empty
#: histogram with one person at value 1 is the spec's case for DAWA's Stage 1; the mixed one
#: with a person added inside a flat run exposes a partition that merges that run.
STAGE_HISTOGRAMS = (((0,) * 8, 1), ((3, 1, 0, 0, 2, 2, 2, 2), 3))


@dataclass(frozen=True)
class Pair:
    """Neighbouring inputs D, D' with what the adapter needs to read the change: the
    hierarchy, the node path root -> changed leaf, and kind-specific details."""

    d1: Any
    d2: Any
    description: str
    hierarchy: Any = None
    path: np.ndarray | None = None
    details: dict = field(default_factory=dict)


def audit_tree(leaves=AUDIT_LEAVES):
    """The audit geography (root > regions > leaves) and the leaf of each entry of
    ``leaves``."""
    from hierdp_core.hierarchy import build_from_codes

    return build_from_codes([np.array([r for r, _ in leaves]), np.array([c for _, c in leaves])],
                            ["region", "leaf"])


def path_from_root(h, node: int) -> np.ndarray:
    """Node ids from the root down to ``node``."""
    path = [node]
    while h.parent[path[-1]] >= 0:
        path.append(int(h.parent[path[-1]]))
    return np.asarray(path[::-1])


def _check_relation(kind: str, relation: str, allowed: tuple[str, ...]) -> None:
    if relation not in allowed:
        raise MechanismError(f"the audit has no {kind} neighbours for the relation "
                             f"{relation!r}; it has {list(allowed)}")


def count_pair(relation: str = ADD_REMOVE_PERSON, leaf_counts=AUDIT_LEAF_COUNTS,
               changed_leaf: int = AUDIT_CHANGED_LEAF) -> Pair:
    """Counts: D' adds one person to one leaf."""
    from hierdp_core.queries.counts import CountData

    _check_relation("counts", relation, (ADD_REMOVE_PERSON,))
    h, row_leaf = audit_tree()
    counts = np.zeros((h.n_leaves, 1), dtype=np.int64)
    counts[row_leaf, 0] = np.asarray(leaf_counts, dtype=np.int64)
    leaf = int(row_leaf[changed_leaf])
    counts2 = counts.copy()
    counts2[leaf, 0] += 1
    node = int(h.level_offsets[h.depth]) + leaf
    ids = h.node_ids()
    leaves = dict(zip(ids[h.level_slice(h.depth)], counts[:, 0].tolist(), strict=True))
    return Pair(CountData(h, counts), CountData(h, counts2),
                f"D: leaf counts {leaves}; D' adds one person to {ids[node]}", h,
                path_from_root(h, node))


def group_size_pair(relation: str = PERSON_IN_GROUP) -> Pair:
    """Group sizes: D' adds one person to a size-1 group of the first leaf (person relation)
    or a new group of one person there (whole-group relation). ``details``: the sizes that
    lose and gain a group (``lose`` is None when a group is created)."""
    from hierdp_core.groupsizes.data import GroupSizeData

    _check_relation("group-size", relation, (PERSON_IN_GROUP, WHOLE_GROUP))
    h, row_leaf = audit_tree(AUDIT_GROUP_LEAVES)
    width = AUDIT_GROUP_MAX_SIZE + 1
    hist = np.zeros((h.n_leaves, width), dtype=np.int64)
    for row, sizes in zip(row_leaf, AUDIT_GROUP_SIZES, strict=True):
        np.add.at(hist[row], np.asarray(sizes), 1)
    first = int(row_leaf[0])
    hist2 = hist.copy()
    if relation == PERSON_IN_GROUP:
        hist2[first, 1] -= 1
        hist2[first, 2] += 1
        lose, gain, change = 1, 2, "adds one person to a size-1 group of the first leaf"
    else:
        hist2[first, 1] += 1
        lose, gain, change = None, 1, "adds a new group of one person to the first leaf"
    sizes = tuple(str(s) for s in range(width))

    def data_of(leaf_hist):
        return GroupSizeData(h, leaf_hist, sizes, ("size",), max_size=AUDIT_GROUP_MAX_SIZE)

    per_leaf = dict(zip(h.node_ids()[h.level_slice(2)], AUDIT_GROUP_SIZES, strict=True))
    description = f"D: group sizes per leaf {per_leaf}, N = {AUDIT_GROUP_MAX_SIZE}; D' {change}"
    path = path_from_root(h, int(h.level_offsets[h.depth]) + first)
    return Pair(data_of(hist), data_of(hist2), description, h, path,
                {"lose": lose, "gain": gain, "width": width})


def flow_pair(relation: str = SUBSTITUTE_TRIP) -> Pair:
    """O/D flows: D' moves one trip from a1>b1 to a1>a2 (bounded) or adds a1>a2 (unbounded).
    ``details``: the (origin, destination) leaf indices that lose (None if unbounded) and
    gain a trip."""
    from hierdp_core.flows.data import flow_data_from_leaves

    _check_relation("flow", relation, (SUBSTITUTE_TRIP, ADD_REMOVE_TRIP))
    unbounded = relation == ADD_REMOVE_TRIP
    h, _ = audit_tree()
    leaf_index = {code: i for i, code in enumerate(h.codes[h.depth])}

    def cell(pair):
        return leaf_index[pair[0][1]], leaf_index[pair[1][1]]

    flows1 = {cell((o, d)): c for o, d, c in AUDIT_FLOWS}
    lose, gain = cell(AUDIT_FLOW_MOVE[0]), cell(AUDIT_FLOW_MOVE[1])
    flows2 = dict(flows1)
    flows2[gain] = flows2.get(gain, 0) + 1
    if not unbounded:
        flows2[lose] -= 1

    def data_of(flows):
        pairs = np.array(list(flows), dtype=np.int64)
        return flow_data_from_leaves(h, pairs[:, 0], pairs[:, 1], list(flows.values()))

    flows = {f"{o[1]}>{d[1]}": c for o, d, c in AUDIT_FLOWS}
    change = "adds one trip a1>a2" if unbounded else "moves one trip from a1>b1 to a1>a2"
    return Pair(data_of(flows1), data_of(flows2), f"D: leaf flows {flows}; D' {change}", h,
                details={"lose": None if unbounded else lose, "gain": gain})


def range_pair(relation: str = ADD_REMOVE_PERSON, workload=None) -> Pair:
    """Ranges: D' adds one person with value 1 to the empty leaf a1 (``workload``: the public
    workload, prefix ranges by default). ``details``: the changed value."""
    from hierdp_core.queries.ranges import RangeData
    from hierdp_core.ranges.workloads import prefix_ranges

    _check_relation("range", relation, (ADD_REMOVE_PERSON,))
    h, row_leaf = audit_tree()
    n = len(AUDIT_RANGE_HISTOGRAMS[0])
    counts = np.zeros((h.n_leaves, n), dtype=np.int64)
    counts[row_leaf] = np.asarray(AUDIT_RANGE_HISTOGRAMS, dtype=np.int64)
    leaf, value = int(row_leaf[AUDIT_RANGE_CHANGE[0]]), AUDIT_RANGE_CHANGE[1]
    counts2 = counts.copy()
    counts2[leaf, value] += 1
    values = tuple(str(v) for v in range(n))
    workload = workload or prefix_ranges(n)
    d1, d2 = (RangeData(h, c, values, "value", workload) for c in (counts, counts2))
    node = int(h.level_offsets[h.depth]) + leaf
    leaves = dict(zip(h.node_ids()[h.level_slice(h.depth)], map(list, counts), strict=True))
    description = (f"D: leaf histograms over values 0..{n - 1} {leaves}; "
                   f"D' adds one person with value {value} to {h.node_ids()[node]}")
    return Pair(d1, d2, description, h, path_from_root(h, node), {"value": value, "n": n})


def histogram_pairs(relation: str = ADD_REMOVE_PERSON) -> list[Pair]:
    """One-unit histograms (1, n) for a stage run on its own: D' adds one person at one
    value (`STAGE_HISTOGRAMS`)."""
    _check_relation("histogram", relation, (ADD_REMOVE_PERSON,))
    pairs = []
    for base, cell in STAGE_HISTOGRAMS:
        x = np.asarray(base, dtype=np.int64)[None, :]
        x2 = x.copy()
        x2[0, cell] += 1
        pairs.append(Pair(x, x2, f"D: one histogram {list(base)}; D' adds one person with "
                                 f"value {cell}", details={"cell": cell, "n": x.shape[1]}))
    return pairs

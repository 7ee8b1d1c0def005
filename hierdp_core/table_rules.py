"""The table rules of a release, checked on its released values alone (DESIGN principle 8):
``consistent`` (every released parent equals the sum of its children, category by
category), ``non_negative`` (no value below 0) and ``integer`` (every value a whole
number). Each rule is ``{"holds": bool, "violating_cells": n, "cells": checked}``: for
``consistent`` the cells are the parents' cells, for the others every released cell.

A rule is a fact about the published table, separate from the publishable verdict
(`hierdp_core.verdict`): a least-squares release may be private and publishable while its
cells are fractional or negative, and its manifest says so.

Real-valued sums are compared with a tolerance of 1e-9 times the largest absolute value
(floating-point rounding), integers exactly.

Example
-------
>>> import numpy as np
>>> value_counts(np.array([[1.5], [-1.0], [2.0]]))  # (negative, not integer, cells)
(1, 1, 3)
>>> describe(combine((0, 1), (1, 1, 3)))
'table rules: consistent yes; non-negative NO (1 of 3 cells); integer NO (1 of 3 cells)'
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

RULE_NAMES = {"consistent": "consistent", "non_negative": "non-negative",
              "integer": "integer"}
REL_TOL = 1e-9


def rule(violating: int, cells: int) -> dict:
    """One rule's record."""
    return {"holds": int(violating) == 0, "violating_cells": int(violating),
            "cells": int(cells)}


def tolerance(values: np.ndarray) -> float:
    """0 for integers; 1e-9 times the largest absolute value (at least 1) for reals."""
    values = np.asarray(values)
    if values.dtype.kind in "iub" or values.size == 0:
        return 0.0
    return REL_TOL * max(1.0, float(np.nanmax(np.abs(values), initial=0.0)))


def value_counts(values: np.ndarray) -> tuple[int, int, int]:
    """(negative cells, non-integer cells, cells) of released values (NaN counts as not an
    integer)."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return int(np.count_nonzero(values < 0)), 0, int(values.size)
    return (int(np.count_nonzero(values < 0)), int(np.count_nonzero(values != np.rint(values))),
            int(values.size))


def tree_consistency(hierarchy, values: np.ndarray) -> tuple[int, int]:
    """(parent cells differing from their children's sum, parent cells) of a tree's
    ``values`` (n_nodes, k)."""
    values = np.asarray(values)
    values = values.reshape(values.shape[0], -1)
    parents = (hierarchy.n_nodes - hierarchy.level_size(hierarchy.depth)) * values.shape[1]
    return hierarchy.consistency_violations(values, tolerance(values)), parents


def combine(consistency: tuple[int, int], counts: tuple[int, int, int]) -> dict:
    """The rules' record from (inconsistent, parent cells) and (negative, non-integer,
    cells)."""
    negative, fractional, cells = counts
    return {"consistent": rule(*consistency), "non_negative": rule(negative, cells),
            "integer": rule(fractional, cells)}


def table_rules(release) -> dict:
    """The table rules of an in-memory release: a `Release` (counts, group sizes, ranges:
    ``values`` over ``hierarchy``) or a `FlowRelease` (its released O/D tree, absent nodes
    being zeros)."""
    if hasattr(release, "levels"):
        return combine(flow_consistency(release),
                       _summed(value_counts(lv.value) for lv in release.levels))
    return combine(tree_consistency(release.hierarchy, release.values),
                   value_counts(release.values))


def flow_consistency(release) -> tuple[int, int]:
    """(released O/D parents differing from the sum of their released children, parents)."""
    bad = cells = 0
    for level in range(1, release.depth + 1):
        parents, nodes = release.levels[level - 1], release.levels[level]
        sums = np.bincount(nodes.parent, weights=nodes.value, minlength=parents.size)
        gap = np.abs(sums - parents.value)
        bad += int(np.count_nonzero(gap > tolerance(parents.value)))
        cells += parents.size
    return bad, cells


def written_table_rules(release, folder) -> dict:
    """The table rules of a release whose parts the workers wrote
    (`hierdp_core.engine.written.WrittenRelease`), read back from its part files in
    ``folder`` one top-level unit at a time: each unit's subtree checked on its own, the
    root against the top-level units from the release's top."""
    from pathlib import Path

    from hierdp_core.engine.partitioned import part_name
    from hierdp_core.mechanisms.streams import subtree

    top, h = release.top, release.hierarchy
    k = top.values.shape[1]
    # the root's cells; the top-level units are parents in their own parts
    inconsistent, parents = top.hierarchy.consistency_violations(
        top.values, tolerance(top.values)), k
    counts = [value_counts(top.values[:1])]
    for unit in range(h.level_size(1)):
        values = pq.read_table(Path(folder) / part_name(unit + 1),
                               columns=["value"])["value"].to_numpy()
        values = values.reshape(-1, k)
        counts.append(value_counts(values))
        tree = subtree(h, unit, unit + 1)
        full = np.concatenate([values[:1], values])  # the subtree's own root: the unit
        bad, cells = tree_consistency(tree, full)
        inconsistent += bad
        parents += cells - k  # the subtree's root is the unit itself, counted once
    return combine((inconsistent, parents), _summed(counts))


def _summed(counts) -> tuple[int, ...]:
    return tuple(int(sum(column)) for column in zip(*counts, strict=True))


def describe(rules: dict) -> str:
    """One line: ``table rules: consistent yes; non-negative NO (14 cells); integer yes``."""
    parts = [f"{RULE_NAMES[name]} yes" if rules[name]["holds"] else
             f"{RULE_NAMES[name]} NO ({rules[name]['violating_cells']:,} of "
             f"{rules[name]['cells']:,} cells)" for name in RULE_NAMES]
    return "table rules: " + "; ".join(parts)

"""Range data over a huge declared domain, held by its non-zero cells (issue 32, item 2).

`hierdp_core.queries.ranges.RangeData` holds every value of the declared domain for every
unit (and one string per value): a domain of 10**8 ages on a two-row table is refused there
by the memory plan. A mechanism whose output does not grow with the domain (its
`Capabilities` say ``sparse_ranges``: PrivTree's buckets, `hierdp_core.ranges.sparse_privtree`)
needs only each unit's non-zero cells, which `SparseRangeData` holds: memory in proportion
to the table, not to the domain. The domain is still the declared one (public, DESIGN
principle 7): every value of the table must lie in it, and its size fixes the bisection.

Example
-------
>>> import pandas as pd
>>> t = pd.DataFrame({"region": ["N", "S"], "age": [34, 71], "residents": [120, 80]})
>>> d = sparse_range_data_from_table(t, ["region"], "age", domain=(0, 100_000_000),
...                                  count_column="residents")
>>> d.n, d.level_rows(0).counts.tolist(), d.level_rows(1).keys.tolist()
(100000001, [120.0, 80.0], [34, 100000072])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.memory_plan import SPARSE_RANGES, ranges_plan
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.queries.sparse_rows import SparseRows
from hierdp_core.structure import Geography


@dataclass(frozen=True, eq=False)
class SparseRangeData:
    """True per-leaf histograms (confidential) over the declared ``domain`` (LO, HI) of
    ``attribute``, held by their non-zero cells (`SparseRows`, cell = value - LO)."""

    hierarchy: Hierarchy
    leaves: SparseRows
    domain: tuple[int, int]
    attribute: str
    #: True when the units (a geography) were declared; the domain always is
    declared_structure: bool = False
    merged_rows: int = 0
    #: ranges are answered by overlap of the released intervals: no workload
    workload: None = None

    @property
    def n(self) -> int:
        """The number of values of the domain."""
        return self.leaves.n

    @property
    def nonzero_cells(self) -> int:
        return int(self.leaves.keys.size)

    def level_rows(self, level: int) -> SparseRows:
        """The histograms of the units of ``level`` (a row per unit), from the leaves'."""
        h = self.hierarchy
        node = np.arange(h.n_leaves, dtype=np.int64) + h.level_offsets[h.depth]
        for _ in range(h.depth, level, -1):
            node = h.parent[node]
        unit = (node - h.level_offsets[level]).astype(np.int64)
        keys = self.leaves.keys
        return SparseRows.from_triples(unit[keys // self.n], keys % self.n,
                                       self.leaves.counts, rows=h.level_size(level), n=self.n)


def domain_kept_sparse(mechanism: str | None, nodes: int, domain: tuple[int, int],
                       max_memory: int, max_cells: int) -> bool:
    """Whether a range release of ``nodes`` units (at least) over ``domain`` keeps it
    sparse: the mechanism can (`memory_plan.SPARSE_RANGES`) and the dense histograms would
    not fit (``max_memory`` bytes, `memory_plan.ranges_plan`, or ``max_cells``). A domain
    that fits stays dense, so a seeded release that fitted is drawn as it always was."""
    size = domain[1] - domain[0] + 1
    return mechanism in SPARSE_RANGES and (
        ranges_plan(mechanism, nodes, domain).bytes > max_memory or nodes * size > max_cells)


def sparse_range_data_from_table(table: pd.DataFrame, levels: Sequence[str], attribute: str,
                                 *, domain: tuple[int, int], count_column: str | None = None,
                                 geography: Geography | None = None,
                                 name_columns: dict[str, str] | None = None,
                                 local_codes: bool = False,
                                 max_cells: int | None = None,
                                 duplicates: str = "sum") -> SparseRangeData:
    """`SparseRangeData` from microdata or aggregated rows (as
    `hierdp_core.queries.ranges.range_data_from_table`, whose checks of the table and
    ``local_codes`` it shares): the values the table holds, each an integer of the declared
    ``domain``."""
    lo, hi = (int(v) for v in domain)
    if lo > hi:
        raise InputError(f"domain {lo}..{hi} runs backwards")
    if attribute not in table.columns:
        raise InputError(f"no column {attribute!r} in the table")
    observed = tuple(pd.unique(table[attribute].astype(str)))
    values = _domain_positions(observed, lo, hi, attribute)
    units = {"geography": geography} if geography is not None else {
        "name_columns": name_columns, "local_codes": local_codes}
    data = count_data_from_table(
        table, levels, count_column=count_column, category_columns=[attribute],
        category_values={attribute: observed}, max_cells=max_cells, duplicates=duplicates,
        duplicate_cell=f"unit and {attribute!r} value", **units)
    position = {value: i for i, value in enumerate(observed)}
    cells = values[[position[c] for c in data.categories]]
    leaf, column = np.nonzero(data.leaf_counts)
    leaves = SparseRows.from_triples(leaf, cells[column], data.leaf_counts[leaf, column],
                                     rows=data.hierarchy.n_leaves, n=hi - lo + 1)
    return SparseRangeData(data.hierarchy, leaves, (lo, hi), attribute,
                           declared_structure=geography is not None,
                           merged_rows=data.merged_rows)


def _domain_positions(observed: tuple[str, ...], lo: int, hi: int,
                      attribute: str) -> np.ndarray:
    """Each observed value's cell (value - LO); an `InputError` naming the first value that
    is no integer of the domain (as written in the domain: ``34``, not ``34.0``)."""
    numbers = pd.to_numeric(pd.Series(observed), errors="coerce")
    whole = numbers.notna() & np.isfinite(numbers) & (numbers == np.round(numbers))
    ints = np.where(whole, numbers, 0).astype(np.int64) if len(observed) else \
        np.zeros(0, dtype=np.int64)
    canonical = np.array([str(v) for v in ints], dtype=object) == np.array(observed,
                                                                           dtype=object)
    bad = ~(whole.to_numpy() & canonical & (ints >= lo) & (ints <= hi))
    if bad.any():
        raise InputError(f"{attribute!r} holds {observed[int(np.argmax(bad))]!r}, not an "
                         f"integer of the declared domain {lo}-{hi}")
    return ints - lo

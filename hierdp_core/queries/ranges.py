"""Range queries: per geographic unit, a histogram over an ordered attribute (e.g. single year
of age), answered for a public workload of ranges ("aged 18-64").

Neighbouring relation: add/remove one person. A person is in one unit per level and has one
attribute value, so a level's histograms (units x values) change in one cell by 1; the units of
a level hold disjoint populations (parallel composition: a level costs its own epsilon once,
whatever its number of units), and the levels compose sequentially.

The ordered domain is public (DESIGN principle 7): give it (``domain=(0, 100)``: every
integer from 0 to 100, a value outside is an error); a declared geography
(``geography=...``) needs it, and with both the data object says ``declared_structure``.
Without a domain (exploration) integer attributes get every integer from the smallest to the
largest value in the data (gaps filled with zero counts), other numeric attributes their
observed values ordered numerically, text values by the numbers they hold, then as text
('5-9' before '10-14', `text_order`): read from the data. A column mixing numbers and text
('99', '100+') is refused naming a text value: no order of the two is safe to guess.

Example
-------
>>> import pandas as pd
>>> t = pd.DataFrame({"region": ["N", "N", "S"], "province": ["a", "b", "c"],
...                   "age": [0, 3, 1], "residents": [5, 2, 4]})
>>> d = range_data_from_table(t, ["region", "province"], "age", count_column="residents")
>>> d.values, d.node_counts()[0].tolist()
(('0', '1', '2', '3'), [5, 4, 0, 2])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hierdp_core.data.loaders import check_cells, default_max_cells
from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.memory_plan import ranges_plan, table_nodes
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.structure import Geography, domain_values

if TYPE_CHECKING:  # the workloads' module (scipy.sparse) is imported where a range table
    from hierdp_core.ranges.workloads import Workload  # is made: not for other queries


@dataclass(frozen=True, eq=False)
class RangeData:
    """True per-leaf histograms (confidential), shape (n_leaves, n_values), over the ordered
    public ``values`` of ``attribute``; ``workload`` is the public set of ranges to answer."""

    hierarchy: Hierarchy
    leaf_counts: np.ndarray
    values: tuple[str, ...]
    attribute: str
    workload: Workload
    #: True when the units (a geography) and the domain were declared, not read from the data
    declared_structure: bool = False
    #: aggregated rows merged into another row of the same unit and value (summed)
    merged_rows: int = 0

    @property
    def categories(self) -> tuple[str, ...]:
        return self.values

    def node_counts(self) -> np.ndarray:
        """True histograms of every node, (n_nodes, n_values)."""
        return self.hierarchy.aggregate(self.leaf_counts)

    def with_workload(self, workload: Workload) -> RangeData:
        if workload.n != len(self.values):
            raise InputError(f"the workload covers {workload.n} values; {self.attribute!r} "
                             f"has {len(self.values)}")
        return replace(self, workload=workload)


def range_data_from_table(table: pd.DataFrame, levels: Sequence[str], attribute: str, *,
                          count_column: str | None = None,
                          domain: tuple[int, int] | None = None,
                          name_columns: dict[str, str] | None = None,
                          local_codes: bool = False,
                          workload: Workload | None = None,
                          geography: Geography | None = None,
                          max_cells: int | None = None,
                          max_memory: int | None = None,
                          duplicates: str = "sum") -> RangeData:
    """Histograms over ``attribute`` per leaf, from microdata (one row per person) or
    aggregated rows (``count_column``); the workload defaults to all prefixes.
    ``geography``: the declared units (then ``domain`` is required); else the units are
    read from the table, their codes unique only within their parent with ``local_codes``
    (as `count_data_from_table`'s). ``max_cells``: refuse
    (`SizeLimitError`) more cells (units x values) before allocating them; None: the
    default sized to this machine's memory (a domain read from the data can be anything).
    ``max_memory``: refuse (`MemoryLimitError`, naming the largest domain that fits) a
    ``domain`` whose release would need more bytes (`memory_plan.ranges_plan`); None: the
    default ``--max-memory``."""
    from hierdp_core.ranges.workloads import prefix_ranges

    if max_cells is None:
        max_cells = default_max_cells()
    repeats = {"duplicates": duplicates, "duplicate_cell": f"unit and {attribute!r} value"}
    if domain is not None:
        check_cells(domain[1] - domain[0] + 1, max_cells,
                    f"at least 1 unit x a domain of {domain[1] - domain[0] + 1:,} values")
        nodes = (geography.hierarchy.n_nodes if geography is not None
                 else table_nodes(table, levels) or 1)
        ranges_plan(None, nodes, domain).check(max_memory)  # before the domain's values
        values = domain_values(domain)
        units = ({"geography": geography} if geography is not None
                 else {"name_columns": name_columns, "local_codes": local_codes})
        data = count_data_from_table(
            table, levels, count_column=count_column, category_columns=[attribute],
            category_values={attribute: values}, max_cells=max_cells, **units, **repeats)
        return RangeData(data.hierarchy, data.leaf_counts, values, attribute,
                         workload or prefix_ranges(len(values)),
                         declared_structure=data.declared_structure,
                         merged_rows=data.merged_rows)
    if geography is not None:
        raise InputError(f"ranges over a declared geography need the public domain of "
                         f"{attribute!r} (its lowest and highest value, e.g. 0-100), not "
                         "one read from the data")
    data = count_data_from_table(table, levels, count_column=count_column,
                                 category_columns=[attribute], name_columns=name_columns,
                                 local_codes=local_codes, max_cells=max_cells, **repeats)
    values, positions = _ordered_domain(list(data.categories), attribute,
                                        data.hierarchy.n_leaves, max_cells)
    counts = np.zeros((data.leaf_counts.shape[0], len(values)), dtype=np.int64)
    counts[:, positions] = data.leaf_counts
    return RangeData(data.hierarchy, counts, tuple(values), attribute,
                     workload or prefix_ranges(len(values)), merged_rows=data.merged_rows)


def _ordered_domain(observed: list[str], attribute: str, n_leaves: int, max_cells: int):
    """The ordered domain read from the data, and the position in it of every observed
    value: integers span the smallest to the largest (refused beyond ``max_cells`` cells),
    other numbers are ordered numerically, text by `text_order`; numbers mixed with text
    are an `InputError` naming a text value."""
    numbers = pd.to_numeric(pd.Series(observed), errors="coerce")
    if numbers.notna().any() and numbers.isna().any():
        text = observed[int(np.flatnonzero(numbers.isna().to_numpy())[0])]
        raise InputError(f"{attribute!r} mixes numbers and text, e.g. {text!r}: a range "
                         "attribute's values are ordered, numbers by value, so write every "
                         f"value as a number (e.g. {_as_number(text)!r}) or give the "
                         "ordered values as text only (bands such as '0-4', '5-9')")
    if numbers.notna().all() and np.isfinite(numbers).all() \
            and (numbers == np.round(numbers)).all():
        ints = [int(v) for v in numbers]  # one per distinct value; may exceed 64 bits
        lo, hi = min(ints), max(ints)
        check_cells(n_leaves * (hi - lo + 1), max_cells,
                    f"{n_leaves:,} units x {attribute!r} from {lo:,} to {hi:,} in the data")
        return [str(v) for v in range(lo, hi + 1)], [v - lo for v in ints]
    if numbers.notna().all():
        order = np.argsort(numbers.to_numpy(), kind="stable")
    else:
        order = np.array(sorted(range(len(observed)), key=lambda i: text_order(observed[i])),
                         dtype=np.int64)
    positions = np.empty(order.size, dtype=np.int64)
    positions[order] = np.arange(order.size)
    return [observed[i] for i in order], positions


def text_order(value: str) -> list:
    """The sort key of an ordered text value (one per distinct value): its runs of digits
    compared as numbers, the rest as text, so bands read in order.

    >>> sorted(["85+", "10-14", "0-4", "5-9"], key=text_order)
    ['0-4', '5-9', '10-14', '85+']
    """
    parts = re.split(r"(\d+)", value)  # digits at the odd places: one type per place
    return [int(part) if i % 2 else part for i, part in enumerate(parts)]


def _as_number(text: str) -> str:
    """The first number in ``text`` ('100' of '100+'), else the text itself."""
    found = re.search(r"-?\d+(\.\d+)?", text)
    return found.group() if found else text

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
observed values ordered numerically, text values alphabetically: read from the data.

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

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.ranges.workloads import Workload, prefix_ranges
from hierdp_core.structure import Geography, domain_values


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
                          workload: Workload | None = None,
                          geography: Geography | None = None) -> RangeData:
    """Histograms over ``attribute`` per leaf, from microdata (one row per person) or
    aggregated rows (``count_column``); the workload defaults to all prefixes.
    ``geography``: the declared units (then ``domain`` is required)."""
    if domain is not None:
        values = domain_values(domain)
        data = count_data_from_table(
            table, levels, count_column=count_column, category_columns=[attribute],
            name_columns=name_columns, geography=geography,
            category_values={attribute: values})
        return RangeData(data.hierarchy, data.leaf_counts, values, attribute,
                         workload or prefix_ranges(len(values)),
                         declared_structure=data.declared_structure)
    if geography is not None:
        raise InputError(f"ranges over a declared geography need the public domain of "
                         f"{attribute!r} (e.g. domain=(0, 100)), not one read from the data")
    data = count_data_from_table(table, levels, count_column=count_column,
                                 category_columns=[attribute], name_columns=name_columns)
    observed = list(data.categories)
    values, keys = _ordered_domain(observed, attribute, domain)
    position = {key: i for i, key in enumerate(values)}
    outside = [v for v, key in zip(observed, keys, strict=True) if key not in position]
    if outside:
        raise InputError(f"attribute {attribute!r} has value(s) {outside[:5]} outside the "
                         f"domain {values[0]}..{values[-1]}")
    counts = np.zeros((data.leaf_counts.shape[0], len(values)), dtype=np.int64)
    counts[:, [position[key] for key in keys]] = data.leaf_counts
    return RangeData(data.hierarchy, counts, tuple(values), attribute,
                     workload or prefix_ranges(len(values)))


def _ordered_domain(observed: list[str], attribute: str, domain):
    """The ordered domain, and the domain entry of every observed value."""
    numbers = pd.to_numeric(pd.Series(observed), errors="coerce")
    integral = bool(numbers.notna().all() and (numbers == np.round(numbers)).all())
    if integral:
        keys = [str(int(v)) for v in numbers]
        lo, hi = (int(numbers.min()), int(numbers.max())) if domain is None else domain
        if lo > hi:
            raise InputError(f"domain {lo}..{hi} runs backwards")
        return [str(v) for v in range(int(lo), int(hi) + 1)], keys
    if domain is not None:
        raise InputError(f"an explicit domain needs integer values of {attribute!r}")
    if numbers.notna().all():
        return [observed[i] for i in np.argsort(numbers.to_numpy(), kind="stable")], observed
    return sorted(observed), observed

"""Names of the units of a hierarchy read from name columns of a table (`unit_names`),
for a declared geography (`hierdp_core.structure`) and for the query data built from a
table (`hierdp_core.queries.counts`, `hierdp_core.groupsizes.data`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.data.loaders import validate_columns
from hierdp_core.errors import InputError


def unit_names(table: pd.DataFrame, hierarchy, leaf: np.ndarray, levels: list[str],
                name_columns: dict[str, str]) -> dict[int, np.ndarray]:
    """One name per node for each level in ``name_columns``, its code where every name
    cell of the unit is empty; a unit with two different names is an error naming it, and
    so is one column for two levels."""
    unknown = set(name_columns) - set(levels)
    if unknown:
        raise InputError(f"names given for {sorted(unknown)}, which are not levels {levels}")
    for column in dict.fromkeys(name_columns.values()):
        both = [lv for lv in levels if name_columns.get(lv) == column]
        if len(both) > 1:
            raise InputError(f"name column {column!r} is chosen for the levels {both}: each "
                             "level's units need a name column of their own (or none)")
    validate_columns(table, list(name_columns.values()), "name")
    h = hierarchy
    node = leaf + h.level_offsets[h.depth]
    names = {}
    for level in range(h.depth, 0, -1):
        column = name_columns.get(levels[level - 1])
        if column is not None:
            text = table[column].astype("string")
            named = (text.str.strip().fillna("") != "").to_numpy()
            local = (node - h.level_offsets[level]).astype(np.int64)[named]
            name_id, uniques = pd.factorize(text[named].astype(str), use_na_sentinel=False)
            pairs = np.unique(local * len(uniques) + name_id)
            unit, name = pairs // len(uniques), np.asarray(uniques, dtype=object)[
                pairs % len(uniques)]
            clash = np.isin(unit, unit[1:][np.diff(unit) == 0])
            if clash.any():
                codes = np.asarray(h.codes[level]).astype(str)[unit[clash]]
                raise InputError(f"name column {column!r} gives unit(s) "
                                 f"{sorted(set(codes.tolist()))[:4]} of level "
                                 f"{levels[level - 1]!r} more than one name: "
                                 f"{name[clash][:4].tolist()}")
            out = np.asarray(h.codes[level]).astype(str).astype(object)
            out[unit] = name
            names[level] = out
        node = h.parent[node]
    return names

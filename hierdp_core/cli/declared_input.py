"""A counts release over a declared structure, its input file read straight to leaf counts.

`declared_count_input` places the rows of a delimited text file in the declared geography
and category values (`hierdp_core.data.declared_rows`: no pandas table of the rows) and
builds the same `CountData` as the careful path (`hierdp_core.cli.table.read_input`,
`prepare_input`, `hierdp_core.cli.inputs.input_data`). It applies only where that path would
change nothing: a counts release with ``--geography`` and every category column declared,
no ``--wide``, ``--ragged``, ``--names`` or ``--local-codes``, and no cell the careful path
would prepare, reject or read differently. Anything else gives None, and the careful path
reads the file and says what is wrong, in the same words and the same order.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.cli.early_read import MAX_BYTES, declared_roles
from hierdp_core.errors import HierdpError


def declared_count_input(cfg, run, path: Path):
    """(a table of the level codes some row holds, one column per level and category
    column, for `lookalike_warning` and the memory plan; the CountData) of the file at
    ``path``, or None when the careful path must read it (see the module doc; a release of
    more cells than ``--max-cells`` too: the careful path refuses it after its own
    checks)."""
    from hierdp_core.categories import category_labels
    from hierdp_core.cli.inputs import cell_limit
    from hierdp_core.cli.memory import check_table_memory
    from hierdp_core.data.declared_rows import place_rows
    from hierdp_core.data.integers import checked_total
    from hierdp_core.queries.counts import CountData, repeated_cells

    shape = _declared_shape(cfg, path)
    if shape is None:
        return None
    src, levels, categories, declared, geography = shape
    values = {c: [str(v).strip() for v in declared[c]] for c in categories}
    labels = category_labels([values[c] for c in categories], categories)
    h, k = geography.hierarchy, math.prod(len(values[c]) for c in categories)
    if h.n_leaves * k > cell_limit(cfg, run):
        return None
    rows = place_rows(src, levels, cfg.count_column, values, geography, cfg.encoding)
    if rows is None:
        return None
    codes = _codes_table(rows.present, [*levels, *categories])
    check_table_memory(cfg, run, codes)
    count = cfg.count_column
    merged = 0
    if count:
        checked_total(rows.total, f"count column {count!r}")
        merged = rows.rows - rows.distinct
        if merged and (cfg.duplicates or "error") == "error":  # its error names the rows
            repeated_cells(h, np.concatenate(rows.cells), labels, categories, "error",
                           n_distinct=rows.distinct)
    data = CountData(h, rows.sums.reshape(h.n_leaves, k), labels, tuple(categories),
                     declared_structure=True, merged_rows=merged)
    return codes, data


def _declared_shape(cfg, path: Path):
    """(the input's Source, the level columns, the category columns, their declared values,
    the declared geography) of a release this module may read (`declared_roles`), else
    None; a declaration the careful path would refuse is None too (it says so after
    reading the input)."""
    from hierdp_core.cli.inputs import declared_geography
    from hierdp_core.data.loaders import check_column_roles
    from hierdp_core.data.sources import resolve_source

    roles = declared_roles(cfg)
    if roles is None:
        return None
    levels, categories, declared = roles
    try:
        check_column_roles(cfg.count_column, levels=levels, categories=categories)
        geography = declared_geography(cfg, levels, {}, "counts")
        src = resolve_source(path, None, MAX_BYTES)
    except (HierdpError, OSError):
        return None
    return src, levels, categories, declared, geography


def _codes_table(present: dict[str, list[str]], columns: list[str]) -> pd.DataFrame:
    """One Categorical column per name in ``columns``: the codes of ``present`` (a level's
    codes some row holds), padded with missing values; no codes for the others."""
    n = max([len(v) for v in present.values()] + [1])
    out = {}
    for column in columns:
        codes = present.get(column, [])
        index = np.full(n, -1, dtype=np.int64)
        index[:len(codes)] = np.arange(len(codes))
        out[column] = pd.Categorical.from_codes(index, categories=pd.Index(codes, dtype=object))
    return pd.DataFrame(out)

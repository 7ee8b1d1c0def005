"""The declared public structure of a release: its units, category values and domain.

DESIGN principle 7: which units, categories and values a release has is public, and must
come from the publisher's declarations, never from the confidential data (a unit missing
because nobody lives in it, or a domain ending at the data's maximum, tells the reader
something). This module reads the declarations and checks the data against them:

* a **geography**: a table (CSV, Parquet, ...) with the level columns, coarse to fine, one
  row per leaf unit, and optional columns of readable names. `Geography` holds the
  `Hierarchy` built from it alone, and `Geography.leaf_of_rows` maps every data row to its
  leaf by the *tuple* of its level codes, level by level with sorted integer keys (no joined
  strings, no Python loop per row). A row outside the geography is a `StructureError`
  naming up to five offending values, their level and the number of rows;
* **category values** (``COL=V1|V2|...``): `parse_category_values` (from
  `hierdp_core.declared_values`), `hierdp_core.categories.category_index`;
* an integer **domain** (``LO-HI``): `parse_domain`, `domain_values` (from
  `hierdp_core.declared_values`).

Codes follow `hierdp_core.hierarchy.codes_of` (strings, integral floats without '.0',
surrounding spaces stripped), in the geography and in the data alike.

Example
-------
>>> geo = geography_from_table(pd.DataFrame({"state": ["A", "A", "B", "C"],
...                                          "county": ["a1", "a2", "b1", "c1"]}),
...                            ["state", "county"])
>>> geo.hierarchy.node_ids().tolist()
['root', 'A', 'B', 'C', 'A/a1', 'A/a2', 'B/b1', 'C/c1']
>>> geo.leaf_of_rows(pd.DataFrame({"state": ["B", "A"], "county": ["b1", "a2"]})).tolist()
[2, 1]
>>> geo.leaf_of_rows(pd.DataFrame({"state": ["B", "A"], "county": ["b7", "b1"]}))
Traceback (most recent call last):
...
hierdp_core.errors.StructureError: 2 data row(s) lie outside the declared geography: county 'b7' (not in the geography); county 'b1' under state 'A' (the geography has no such county there)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.data.unit_names import unit_names
from hierdp_core.declared_values import (  # noqa: F401  (re-exported)
    VALUE_SEPARATOR,
    domain_values,
    parse_category_values,
    parse_domain,
)
from hierdp_core.errors import HierarchyError, InputError, RaggedLevelError, StructureError
from hierdp_core.hierarchy import Hierarchy, build_from_codes, codes_of, level_codes

MAX_LISTED = 5
DENSE_LOOKUP_LIMIT = 8_000_000  # (parents x codes) of a level: a dense table below this
SEARCH_RATIO = 16  # a level with more keys than this many times the rows: binary search


# ---- geography -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Geography:
    """A public geography: the `Hierarchy` of its units (built from the declaration alone)
    and what is needed to place data rows in it.

    ``levels``: the geography's level columns, coarse to fine; ``source`` and ``sha256``:
    the file it was read from (empty for a table given in memory)."""

    hierarchy: Hierarchy
    levels: tuple[str, ...]
    source: str = ""
    sha256: str = ""
    _keys: list = field(default_factory=list, repr=False, compare=False)

    @property
    def n_leaves(self) -> int:
        return self.hierarchy.n_leaves

    def _level_keys(self, level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For geography level ``level`` (1-based): its sorted distinct codes, the sorted
        keys ``parent * n_codes + code`` of its nodes, and the node (within the level) of
        each sorted key."""
        if not self._keys:
            h = self.hierarchy
            built = []
            for lv in range(1, h.n_levels):
                distinct, code = np.unique(np.asarray(h.codes[lv]).astype(str),
                                           return_inverse=True)  # fixed-width text: C sort
                keys = h.segment_of_level(lv).astype(np.int64) * distinct.size + code
                order = np.argsort(keys, kind="stable")
                built.append((distinct, keys[order], order))
            # published whole (one list assignment under the GIL): a thread sharing this
            # geography (Dask workers in one process) sees no level or every level
            self._keys[:] = built
        return self._keys[level - 1]

    def leaf_of_rows(self, table: pd.DataFrame, columns: Sequence[str] | None = None,
                     ) -> np.ndarray:
        """The leaf (index within the leaf level) of every row of ``table``, whose level
        columns are ``columns`` (default: the geography's own names), coarse to fine.

        Matches the tuple of a row's codes, level by level: a code the level does not have,
        or a code under a parent the geography does not put it under, is a `StructureError`
        naming up to five such values (with their level) and the number of rows at fault."""
        columns = list(self.levels if columns is None else columns)
        if len(columns) != len(self.levels):
            raise StructureError(f"the geography has {len(self.levels)} level(s) "
                                 f"{list(self.levels)}; got {len(columns)}: {columns}")
        _check_columns(table, columns, "geography level")
        by_finest = self._leaf_by_finest_code(table, columns)
        return by_finest if by_finest is not None else self._leaf_by_levels(table, columns)

    def _leaf_by_finest_code(self, table: pd.DataFrame, columns: list[str],
                             ) -> np.ndarray | None:
        """`leaf_of_rows` of a table whose level columns are Categoricals (read by pyarrow)
        and whose finest code fixes the coarser ones (every row of a finest code has the
        same codes above it: checked): the levels are matched on one row per finest code
        and the leaves gathered back, a few passes over the rows instead of several per
        level. None when that does not hold or a row is at fault (missing code, outside
        the geography): `_leaf_by_levels` then matches every row and says what is wrong."""
        series = [table[column] for column in columns]
        if len(table) == 0 or not all(isinstance(s.dtype, pd.CategoricalDtype) for s in series):
            return None
        codes = [s.cat.codes.to_numpy() for s in series]
        finest = codes[-1]
        if any(int(c.min()) < 0 for c in codes):
            return None  # a missing code
        n_finest = len(series[-1].cat.categories)
        representative = np.full(n_finest, -1, dtype=np.int64)
        representative[finest] = np.arange(finest.size)  # any row of each finest code
        present = np.flatnonzero(representative >= 0)
        rows = representative[present]
        for coarser in codes[:-1]:
            above = np.zeros(n_finest, dtype=coarser.dtype)
            above[present] = coarser[rows]
            if not np.array_equal(above[finest], coarser):
                return None  # a finest code under two parents (codes local to their parent)
        try:
            leaf_of_present = self._leaf_by_levels(table.iloc[rows], columns)
        except StructureError:
            return None  # said, with the rows at fault counted, by `_leaf_by_levels`
        leaf = np.zeros(n_finest, dtype=np.int64)
        leaf[present] = leaf_of_present
        return leaf[finest]

    def _leaf_by_levels(self, table: pd.DataFrame, columns: list[str]) -> np.ndarray:
        """`leaf_of_rows`, matching every row level by level."""
        n_rows = len(table)
        node = np.zeros(n_rows, dtype=np.int64)  # node within the previous level (root = 0)
        outside = np.zeros(n_rows, dtype=bool)
        listed: list[str] = []
        h = self.hierarchy
        for level, column in enumerate(columns, start=1):
            row_unique, uniques = factor_codes(table[column], column)
            distinct, keys, order = self._level_keys(level)
            text = uniques.astype(str)  # fixed-width, as `distinct`: no object compares
            pos = np.minimum(np.searchsorted(distinct, text), max(distinct.size - 1, 0))
            known = (distinct[pos] == text) if distinct.size else np.zeros(0, dtype=bool)
            unique_code = np.where(known, pos, -1)
            code = unique_code[row_unique]
            key = node * distinct.size + code
            n_keys = h.level_size(level - 1) * distinct.size
            if n_keys <= DENSE_LOOKUP_LIMIT:  # one gather per row instead of a binary search
                dense = np.full(n_keys + 1, -1, dtype=np.int64)
                dense[keys] = order
                found = dense[np.where(code >= 0, key, n_keys)]
                hit = (found >= 0) & ~outside
                order_at = found
            else:  # few rows: a binary search; many: a hash (several times faster then)
                if n_rows * SEARCH_RATIO < keys.size:
                    at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
                    at[keys[at] != key] = -1
                else:
                    at = pd.Index(keys).get_indexer(key)
                hit = (at >= 0) & (code >= 0) & ~outside
                order_at = order[at]
            new = ~hit & ~outside
            if new.any():
                listed += _describe_outside(h, level, column, columns, node[new],
                                            row_unique[new], uniques, code[new],
                                            MAX_LISTED - len(listed))
                outside |= new
            node = np.where(hit, order_at, 0)
        if outside.any():
            raise StructureError(
                f"{int(outside.sum()):,} data row(s) lie outside the declared geography"
                f"{_from(self.source)}: " + "; ".join(listed)
                + ("; ..." if len(listed) >= MAX_LISTED else ""))
        return node


def _from(source: str) -> str:
    return f" ({source})" if source else ""


def _describe_outside(h: Hierarchy, level: int, column: str, columns: list[str],
                      parent: np.ndarray, row_unique: np.ndarray, uniques: np.ndarray,
                      code: np.ndarray, limit: int) -> list[str]:
    """Up to ``limit`` offending values of one level, in order of first appearance."""
    if limit <= 0:
        return []
    pair = parent * max(uniques.size, 1) + row_unique
    _, first = np.unique(pair, return_index=True)
    out = []
    for i in np.sort(first)[:limit]:
        value = str(uniques[row_unique[i]])
        if code[i] < 0:
            out.append(f"{column} {value!r} (not in the geography{_zeros_hint(h, level, value)})")
        else:
            above = str(h.codes[level - 1][parent[i]])
            out.append(f"{column} {value!r} under {columns[level - 2]} {above!r} (the "
                       f"geography has no such {column} there)")
    return out


def _zeros_hint(h: Hierarchy, level: int, value: str) -> str:
    """'; it has '01001': the leading zeros lost (e.g. by Excel)?' when a code of the level
    is ``value`` (digits) with leading zeros, or ``value`` without its own (the geography
    file lost them), else ''."""
    if not value.isdigit():
        return ""
    codes = np.asarray(h.codes[level]).astype(str)
    same = np.char.lstrip(codes, "0") == value.lstrip("0")
    padded = codes[same & (np.char.str_len(codes) > len(value))]
    if padded.size:
        return f"; it has {str(padded[0])!r}: the leading zeros lost, e.g. by Excel?"
    shorter = codes[same & (np.char.str_len(codes) < len(value))]
    return (f"; it has {str(shorter[0])!r}: the geography file lost its leading zeros, "
            "e.g. by Excel?" if shorter.size else "")


def factor_codes(series: pd.Series, column: str, role: str = "level",
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(index into ``uniques`` of every row, the distinct codes as strings); codes follow
    `codes_of`, computed on the distinct values only. Missing or blank codes are an error."""
    if isinstance(series.dtype, pd.CategoricalDtype):  # e.g. read by pyarrow: no hashing
        row_unique, raw = series.cat.codes.to_numpy(), series.cat.categories
    else:
        row_unique, raw = pd.factorize(series)
    text = np.asarray(codes_of(pd.Series(np.asarray(raw))), dtype=object)
    blank = np.append(text == "", True)  # code -1 (missing) takes the trailing True
    missing = blank[row_unique]
    if missing.any():
        rows = (np.flatnonzero(missing)[:MAX_LISTED] + 1).tolist()
        raise StructureError(f"{role} column {column!r} has {int(missing.sum()):,} missing "
                             f"value(s), e.g. in rows {rows}")
    return row_unique.astype(np.int64), text


def distinct_codes(series: pd.Series, column: str) -> list[str]:
    """The sorted distinct codes of a column (`codes_of` semantics): the structure read from
    the data, for exploration only."""
    return sorted(set(factor_codes(series, column, "category")[1].tolist()))


def _check_columns(table: pd.DataFrame, columns: Sequence[str], role: str,
                   source: str = "") -> None:
    from hierdp_core.data.loaders import validate_columns

    try:
        validate_columns(table, list(columns), role)
    except InputError as exc:
        if source:  # say it is about the geography
            raise StructureError(f"geography {source}: {exc}") from None
        raise


def geography_from_table(table: pd.DataFrame, levels: Sequence[str], *,
                         name_columns: Mapping[str, str] | None = None,
                         local_codes: bool = False, root_name: str = "total",
                         level_names: Sequence[str] | None = None, source: str = "",
                         sha256: str = "", ragged: bool = False) -> Geography:
    """A `Geography` from a table with one row per leaf unit.

    ``levels``: its level columns, coarse to fine; ``name_columns``: level -> column of
    readable names; ``local_codes``: codes unique only within their parent;
    ``level_names``: names of the levels in the hierarchy (default ``levels``);
    ``ragged``: a unit with an empty code at a level passes through it as its own child
    (`hierdp_core.data.reshape.fill_ragged`), else an empty code is an error. Raises
    `StructureError` for missing columns or codes, duplicate leaves and levels that do not
    nest, naming the values and rows (1-based) at fault; `LevelOrderError` for levels named
    finest first."""
    levels = list(levels)
    where = f"geography {source}: " if source else "geography: "
    if not levels or len(set(levels)) != len(levels):
        raise StructureError(f"{where}give distinct level columns, coarse to fine; got {levels}")
    _check_columns(table, levels, "geography level", source)
    if len(table) == 0:
        raise StructureError(f"{where}it lists no units")
    from hierdp_core.data.reshape import check_levels, fill_ragged
    from hierdp_core.errors import LevelOrderError

    try:
        if ragged:
            table, _ = fill_ragged(table, levels, names=name_columns)
        else:
            check_levels(table, levels, "code")
    except RaggedLevelError as exc:
        raise RaggedLevelError(f"{where}{exc}", f"{where}{exc.detail}", exc.skippable) from None
    arrays = [level_codes(table[column]) for column in levels]
    names = list(level_names) if level_names is not None else levels
    try:
        h, leaf = build_from_codes(arrays, names, root_name=root_name, local_codes=local_codes,
                                   row_labels=np.arange(1, len(table) + 1))
    except LevelOrderError:
        raise  # the order named, not the file
    except HierarchyError as exc:
        raise StructureError(f"{where}{exc}") from None
    repeats = np.bincount(leaf, minlength=h.n_leaves)
    if (repeats > 1).any():
        dup = np.flatnonzero(repeats[leaf] > 1)
        shown = []
        for r in dup[np.unique(leaf[dup], return_index=True)[1]][:MAX_LISTED]:
            rows = (np.flatnonzero(leaf == leaf[r]) + 1)[:3].tolist()
            shown.append(f"{tuple(str(a[r]) for a in arrays)} (rows {rows})")
        raise StructureError(f"{where}{int((repeats > 1).sum()):,} unit(s) are listed more "
                             f"than once (one row per leaf unit): " + "; ".join(shown))
    if name_columns:
        _check_columns(table, list(name_columns.values()), "name", source)
        try:
            h = h.with_names(unit_names(table, h, leaf, levels, dict(name_columns)))
        except InputError as exc:
            raise StructureError(f"{where}{exc}") from None
    return Geography(h, tuple(levels), source, sha256)


def level_columns_of(table: pd.DataFrame, name: str, levels: Sequence[str],
                     alternatives: Sequence[Sequence[str]] = ()) -> list[str]:
    """``levels`` if the geography table ``name`` has them all, else the first of
    ``alternatives`` it has; `StructureError` naming what it needs when none fits."""
    candidates = [list(levels), *[list(a) for a in alternatives]]
    chosen = next((c for c in candidates if all(col in table.columns for col in c)), None)
    if chosen is None:
        wanted = " or ".join(",".join(c) for c in candidates)
        raise StructureError(f"geography {name}: it needs the level columns {wanted}; "
                             f"it has {list(map(str, table.columns))}")
    return chosen


def read_geography(path, levels: Sequence[str], *, alternatives: Sequence[Sequence[str]] = (),
                   name_columns: Mapping[str, str] | None = None, local_codes: bool = False,
                   root_name: str = "total", level_names: Sequence[str] | None = None,
                   ragged: bool = False, encoding: str | None = None) -> Geography:
    """Read a geography file (any format of `hierdp_core.data.loaders.read_table`; text in
    its BOM's encoding, else UTF-8 when its bytes are UTF-8, else in ``encoding``, the
    input's: `hierdp_core.data.sources.own_encoding`) whose level columns are ``levels``, or else the first of ``alternatives`` it has; records the
    file's name and sha256. A file of finer units (distinct rows repeating the codes of
    ``levels``, e.g. municipalities read at region and province) is read as the units of
    ``levels`` it lists; a row repeated whole is still an error. See `geography_from_table`."""
    from hierdp_core.data.loaders import read_table
    from hierdp_core.data.sources import own_encoding

    path = Path(path)
    table = read_table(path, encoding=own_encoding(path, encoding)[0])
    chosen = level_columns_of(table, path.name, levels, alternatives)
    names = [c for c in (name_columns or {}).values() if c in table.columns]
    kept = list(dict.fromkeys([*chosen, *names]))
    # finer units: their units at the chosen levels (none to drop when the file has no
    # other column: its rows are then distinct at the chosen levels already)
    if len(kept) < len(table.columns) and not table.duplicated().any():
        table = table.drop_duplicates(subset=kept)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return geography_from_table(table, chosen, name_columns=name_columns,
                                local_codes=local_codes,
                                root_name=root_name, level_names=level_names,
                                source=path.name, sha256=digest, ragged=ragged)


# ---- category values -------------------------------------------------------------------

"""Declared (public) numbers of groups: the groups file.

The group-size mechanisms take every region's number of groups ``G_v`` (and the total
``G``) as public (Kuo et al.'s public Groups table). Counted from the confidential person
records they are not: removing the only member of a one-person household removes a group,
and an exact ``G`` would show it. A groups file declares them instead, at the finest level
of the declared geography, in one of two forms (CSV, Parquet or Excel):

* counts: the level columns (coarse to fine, as ``--levels``) and a column ``groups``, one
  row per leaf region with its number of groups (0 for none); every leaf appears once;
* ids: the level columns and a column ``group``, one row per group (its id and its leaf
  region); a leaf with no row has no group.

A region may declare more groups than have members in the data (groups with no member
count at the smallest released size); fewer is an error (the declaration contradicts the
data; said to the data holder only, never in a release).

Example
-------
>>> import pandas as pd
>>> from hierdp_core.structure import geography_from_table
>>> geo = geography_from_table(pd.DataFrame({"state": ["GA", "NY"]}), ["state"])
>>> declared_groups_from_table(pd.DataFrame({"state": ["NY", "GA"], "groups": [3, 5]}),
...                            geo, ["state"]).leaf_counts.tolist()
[5, 3]
>>> declared_groups_from_table(pd.DataFrame({"state": ["GA", "GA"], "group": ["a", "b"]}),
...                            geo, ["state"]).leaf_counts.tolist()
[2, 0]
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.errors import InputError, StructureError

GROUPS_COLUMN = "groups"
GROUP_ID_COLUMN = "group"
MAX_LISTED = 5


@dataclass(frozen=True, eq=False)
class DeclaredGroups:
    """The declared number of groups of every leaf region, in the geography's leaf order;
    ``source`` and ``sha256``: the file it was read from (empty for a table in memory)."""

    leaf_counts: np.ndarray
    form: str = "counts"
    source: str = ""
    sha256: str = ""

    def record(self) -> dict:
        """What a manifest says about the declaration (public: the file, not the counts)."""
        return {"form": self.form, "file": self.source or None, "sha256": self.sha256 or None}


def _fail(source: str, message: str) -> StructureError:
    return StructureError(f"groups file{f' {source!r}' if source else ''}: {message}")


def _check_columns(table: pd.DataFrame, levels: Sequence[str], source: str) -> str:
    """The form of ``table`` ("counts" or "ids") from its columns, or a one-line error."""
    columns = [str(c) for c in table.columns]
    missing = [c for c in levels if c not in columns]
    if missing:
        raise _fail(source, f"missing level column(s) {missing}; it needs the level columns "
                            f"{list(levels)} and a column {GROUPS_COLUMN!r} (each region's "
                            f"number of groups) or {GROUP_ID_COLUMN!r} (one row per group)")
    forms = [c for c in (GROUPS_COLUMN, GROUP_ID_COLUMN) if c in columns]
    if len(forms) != 1:
        raise _fail(source, f"give exactly one of the columns {GROUPS_COLUMN!r} (each "
                            f"region's number of groups) or {GROUP_ID_COLUMN!r} (one row per "
                            f"group id), got {forms or 'neither'}")
    extra = [c for c in columns if c not in (*levels, *forms)]
    if extra:
        raise _fail(source, f"unexpected column(s) {extra[:MAX_LISTED]}; it has the level "
                            f"columns {list(levels)} and {forms[0]!r} only")
    return "counts" if forms == [GROUPS_COLUMN] else "ids"


def _leaf_labels(hierarchy, leaves: np.ndarray) -> list[str]:
    ids = hierarchy.node_ids()[hierarchy.level_slice(hierarchy.depth)]
    return [str(v) for v in np.asarray(ids)[leaves[:MAX_LISTED]]]


def declared_groups_from_table(table: pd.DataFrame, geography, levels: Sequence[str], *,
                               source: str = "", sha256: str = "") -> DeclaredGroups:
    """The `DeclaredGroups` of a groups table (see the module docstring) over the declared
    ``geography``, whose level columns in the table are ``levels``; a `StructureError`
    (one line, naming the file) for wrong columns, a region outside the geography, a leaf
    listed twice or missing (counts form), a repeated or missing group id (ids form), or a
    count that is missing, negative or not a whole number."""
    from hierdp_core.data.loaders import validate_counts

    levels = list(levels)
    form = _check_columns(table, levels, source)
    h = geography.hierarchy
    try:
        leaf = geography.leaf_of_rows(table, levels)
    except StructureError as error:
        raise _fail(source, str(error)) from None
    if form == "ids":
        ids = table[GROUP_ID_COLUMN]
        if ids.isna().any():
            raise _fail(source, f"column {GROUP_ID_COLUMN!r} has {int(ids.isna().sum())} "
                                "missing group id(s)")
        repeated = ids[ids.astype(str).duplicated()].astype(str).unique()
        if repeated.size:
            raise _fail(source, f"group id(s) {repeated[:MAX_LISTED].tolist()} listed more "
                                "than once (a group lies in one region)")
        counts = np.bincount(leaf, minlength=h.n_leaves).astype(np.int64)
    else:
        try:
            values = validate_counts(table, GROUPS_COLUMN)
        except InputError as error:  # naming the rows and values
            raise _fail(source, str(error)) from None
        listed = np.bincount(leaf, minlength=h.n_leaves)
        for bad, what in ((listed > 1, "listed more than once"),
                          (listed == 0, "missing (every leaf region needs its number of "
                                        "groups, 0 for none)")):
            if bad.any():
                raise _fail(source, f"{int(bad.sum())} region(s) {what}: "
                                    f"{_leaf_labels(h, np.flatnonzero(bad))}")
        counts = np.zeros(h.n_leaves, dtype=np.int64)
        counts[leaf] = values
    return DeclaredGroups(counts, form, source, sha256)


def read_declared_groups(source, geography, levels: Sequence[str], *,
                         name: str | None = None) -> DeclaredGroups:
    """`declared_groups_from_table` of a groups file (a path, or an uploaded file-like
    object with its ``name``), recording its name and sha256; the codes are read as text."""
    from hierdp_core.data.loaders import read_table

    label = name or Path(getattr(source, "name", source)).name
    raw = source.getvalue() if hasattr(source, "getvalue") else Path(source).read_bytes()
    table = read_table(source, name=name, dtype_str_columns=list(levels))
    return declared_groups_from_table(table, geography, levels, source=label,
                                      sha256=hashlib.sha256(raw).hexdigest())


def leaf_group_counts(hierarchy, observed: np.ndarray, group_counts) -> tuple[np.ndarray, bool]:
    """(the number of groups of every leaf, whether every leaf's was declared).
    ``group_counts``: `DeclaredGroups`, an array of one count per leaf, or a mapping from
    leaf code to count (leaves not named keep ``observed``, their groups in the data).
    A leaf declared with fewer groups than ``observed`` is an error: the declaration
    contradicts the data (said to the data holder, never in a release)."""
    h = hierarchy
    if isinstance(group_counts, DeclaredGroups):
        group_counts = group_counts.leaf_counts
    if isinstance(group_counts, np.ndarray):
        if group_counts.shape != (h.n_leaves,) or np.any(group_counts < 0):
            raise StructureError(f"expected {h.n_leaves} non-negative declared group counts, "
                                 f"got shape {group_counts.shape}")
        total, complete = group_counts.astype(np.int64), True
    else:
        total, complete = _from_mapping(h, observed, group_counts)
    empty_groups(h, observed, total)
    return total, complete


def empty_groups(hierarchy, observed: np.ndarray, declared: np.ndarray,
                 first_leaf: int = 0) -> np.ndarray:
    """Declared groups with no member in the records, per leaf (``declared - observed``) of
    the leaves ``first_leaf..`` of ``hierarchy``; a `StructureError` naming the leaves
    declared with fewer groups than their records show (the declaration contradicts the
    data; said to the data holder, never in a release)."""
    short = np.flatnonzero(np.asarray(declared) < observed)
    if short.size:
        raise StructureError(
            f"{short.size} leaf region(s) are declared with fewer groups than their records "
            f"show, e.g. {_leaf_labels(hierarchy, short + first_leaf)}: the declared group "
            "counts contradict the data (fix the groups file; this message is for the data "
            "holder only)")
    return np.asarray(declared, dtype=np.int64) - observed


def with_block_groups(leaf_hist: np.ndarray, declared: np.ndarray, geography,
                      first_leaf: int) -> np.ndarray:
    """One block's leaf histograms (its leaves ``first_leaf..`` of ``geography``) with the
    declared groups that have no member added at the smallest released size (the Dask
    engine's step, `empty_groups`)."""
    out = np.array(leaf_hist, dtype=np.int64)
    out[:, 0] += empty_groups(geography.hierarchy, out.sum(axis=1), declared, first_leaf)
    return out


def _from_mapping(h, observed: np.ndarray, group_counts) -> tuple[np.ndarray, bool]:
    from hierdp_core.data.loaders import validate_counts

    declared = pd.Series(group_counts, dtype=object)
    leaf_of = pd.Series(np.arange(h.n_leaves), index=np.asarray(h.codes[h.depth]).astype(str))
    codes = declared.index.astype(str)
    unknown = codes[~codes.isin(leaf_of.index)]
    if unknown.size:
        raise StructureError(f"group counts name unknown leaf region(s) "
                             f"{unknown[:MAX_LISTED].tolist()}")
    counts = validate_counts(pd.DataFrame({"group_counts": declared.to_numpy()}),
                             "group_counts")
    total = observed.copy()
    total[leaf_of[codes].to_numpy()] = counts
    return total, bool(leaf_of.index.isin(codes).all())


def with_declared_groups(hierarchy, leaf_hist: np.ndarray, group_counts
                         ) -> tuple[np.ndarray, bool]:
    """(``leaf_hist`` with every leaf's declared groups that have no member added at the
    smallest released size, column 0; whether every leaf was declared). See
    `leaf_group_counts`."""
    observed = leaf_hist.sum(axis=1)
    total, complete = leaf_group_counts(hierarchy, observed, group_counts)
    out = np.array(leaf_hist, dtype=np.int64)
    out[:, 0] += total - observed
    return out, complete


def unkept_declaration(parameters: dict) -> str | None:
    """What a release with declared numbers of groups (a groups file) and these
    mechanism ``parameters`` does not keep of them, in words, or None: with
    ``groups=noisy`` (or ``estimated``) every region's number is estimated from the noisy
    histograms, so a region declared with 0 groups may be released with some (the
    front ends add how to keep them: ``groups=exact``, declared as an invariant)."""
    if parameters.get("groups") not in ("noisy", "estimated"):
        return None
    return ("the groups file's number of groups of every region is not kept: with "
            f"groups={parameters['groups']} they are estimated from the noisy histograms "
            "(a region declared with 0 groups may be released with some)")

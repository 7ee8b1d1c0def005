"""Where an uploaded table's release takes its shape from (DESIGN principle 7): a declared
public structure (a geography file listing every unit, and the values of every category
column), or the table itself (exploration only, never publishable). Bundled samples always
use their own public geography and code lists (`ui.session.count_data`).

Session-state key ``hd_structure`` (dict), reset when a new table is loaded:

``declared``          True when the user chose the declared structure for their table
``geography``         None, or the uploaded public geography file: ``name``, ``sha256`` of
                      its bytes, ``table`` (DataFrame, public: one row per leaf unit)
``category_values``   category column -> tuple of its declared values, in release order

The Geography for a set of level columns is built once per (file, levels) and kept in the
same dict under ``built``.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from hierdp_core.errors import InputError, StructureError
from hierdp_core.structure import (
    Geography,
    geography_from_table,
    level_columns_of,
    parse_category_values,
)
from hierdp_core.ui import session
from hierdp_core.ui import widget_keys as wk

FROM_DATA, DECLARED = "from-data", "declared"
CHOICES = {
    FROM_DATA: "Units, categories and domain: read from this table (exploration only, "
               "not publishable)",
    DECLARED: "Units and categories: declared (a public geography file listing every unit, "
              "and the values of each category column)",
}


def set_geography_file(uploaded) -> None:
    """Read an uploaded geography file (any format `read_table` reads) into the
    declaration; raises `InputError` naming the file when it cannot be read."""
    from hierdp_core.data.loaders import read_table

    raw = uploaded.getvalue()
    table = read_table(uploaded, name=uploaded.name)
    s = session.structure_state()
    s["geography"] = {"name": uploaded.name, "sha256": hashlib.sha256(raw).hexdigest(),
                      "table": table}
    s["built"] = {}


def set_category_values(texts: dict[str, str]) -> None:
    """The declared values of category columns from ``column -> 'V1|V2|...'`` (empty text:
    not declared); raises `StructureError` for a malformed list."""
    values = {}
    for column, text in texts.items():
        if text.strip():
            try:
                values |= parse_category_values([f"{column}={text.strip()}"])
            except StructureError:
                raise StructureError(f"the values of {column} want V1|V2|... with no empty "
                                     f"or repeated value; got {text.strip()!r}") from None
    session.structure_state()["category_values"] = values


def _unit_names(columns, levels, picked: dict | None) -> dict[str, str]:
    """Level -> the geography file's column of its unit names: ``<level>_name``, else the
    name column chosen for the level on the Data page (``picked``) when the file has it."""
    columns, picked = set(map(str, columns)), picked or {}
    out = {}
    for lv in levels:
        for name in (f"{lv}_name", picked.get(lv)):
            if name in columns:
                out[lv] = name
                break
    return out


def declared_geography(levels, *, alternatives=(), level_names=None, ragged: bool = False,
                       local_codes: bool = False, picked: dict | None = None
                       ) -> Geography | None:
    """The uploaded public geography over ``levels`` (its level columns, coarse to fine;
    else the first of ``alternatives`` it has), with its unit names (`_unit_names`:
    ``<level>_name`` columns, else the name columns ``picked`` on the Data page); None
    unless the declared structure is chosen. ``ragged``: units may skip a level
    (`geography_from_table`); ``local_codes``: codes unique only within their parent. Raises
    `StructureError` when no file was uploaded or it does not fit."""
    s = session.structure_state()
    if not s["declared"]:
        return None
    geo = s["geography"]
    if geo is None:
        raise StructureError("upload the public geography file (one row per unit, with the "
                             "level columns), or choose to read the structure from this "
                             "table for exploration")
    table = geo["table"]
    chosen = level_columns_of(table, geo["name"], levels, alternatives)
    names = _unit_names(table.columns, chosen, picked)
    cache_key = (geo["sha256"], tuple(chosen), tuple(level_names or ()), ragged, local_codes,
                 tuple(sorted(names.items())))
    if cache_key not in s["built"]:
        s["built"][cache_key] = geography_from_table(
            table[list(dict.fromkeys([*chosen, *names.values()]))], chosen, name_columns=names,
            level_names=level_names, source=geo["name"], sha256=geo["sha256"], ragged=ragged,
            local_codes=local_codes)
    return s["built"][cache_key]


def geography_name_columns(levels, picked: dict | None = None) -> dict[str, str]:
    """The uploaded geography's columns of unit names for ``levels`` (`_unit_names`);
    empty when no geography is declared."""
    s = session.structure_state()
    geo = s["geography"] if s["declared"] else None
    return _unit_names(geo["table"].columns, levels, picked) if geo else {}


def manifest_record() -> dict:
    """How an upload's structure was made, for its manifest's ``input`` (as the command
    line's ``structure_spec``): ``structure`` declared or from-data, and the declared
    geography file's name and sha256."""
    s = session.structure_state()
    if not (s["declared"] and s["geography"] is not None):
        return {"structure": "from-data"}
    geo = s["geography"]
    return {"structure": "declared", "geography": {"file": geo["name"],
                                                   "sha256": geo["sha256"]}}


def describe() -> str:
    """One line for a "your table" choice: where its structure comes from."""
    s = session.structure_state()
    if s["declared"] and s["geography"] is not None:
        return f"units declared by {s['geography']['name']}"
    if s["declared"]:
        return "declared structure chosen: upload the geography file on the Data page"
    return "structure read from this table: exploration only, not publishable"


def choose(category_columns: list[str], hints: dict[str, str] | None = None) -> None:
    """The Data page's labelled choice for an uploaded table: read the structure from the
    table (exploration), or declare it: upload the public geography file and give the
    values of each category column (``hints``: column -> what to declare, shown under its
    field). Messages for files that cannot be read."""
    s = session.structure_state()
    choice = st.radio("Where the release's units and categories come from", list(CHOICES),
                      index=1 if s["declared"] else 0, format_func=CHOICES.get,
                      key=wk.STRUCTURE_CHOICE)
    s["declared"] = choice == DECLARED
    if not s["declared"]:
        return
    geo_file = st.file_uploader(
        "Public geography file: one row per unit of the finest level, with the same level "
        "columns as your table (and optional <level>_name columns for unit names); a unit "
        "with nobody in it is released with noise like any other",
        type=["csv", "tsv", "txt", "gz", "parquet", "xlsx", "xls", "feather"],
        key=wk.STRUCTURE_GEOGRAPHY)
    if geo_file is not None and (s["geography"] is None
                                 or s["geography"]["name"] != geo_file.name
                                 or s["geography"]["sha256"]
                                 != hashlib.sha256(geo_file.getvalue()).hexdigest()):
        try:
            set_geography_file(geo_file)
        except InputError as exc:
            st.error(f"This geography file cannot be read: {exc}")
    if s["geography"] is not None:
        st.caption(f"Declared geography: {s['geography']['name']} "
                   f"({len(s['geography']['table']):,} rows).")
    texts = {}
    for column in category_columns:
        current = "|".join(s["category_values"].get(column, ()))
        texts[column] = st.text_input(
            f"Values of {column} (public), separated by |", current,
            key=wk.structure_values(column),
            placeholder="e.g. F|M; empty: read from the table (not publishable)")
        if (hints or {}).get(column):
            st.caption(hints[column])
    try:
        set_category_values(texts)
    except StructureError as exc:
        st.error(str(exc))
    missing = [c for c in category_columns if c not in s["category_values"]]
    if missing:
        st.warning(f"Values not declared for {', '.join(missing)}: they are read from the "
                   "table, so the release stays exploration only.")

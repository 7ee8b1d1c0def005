"""The count data of the dashboard's session (`ui.session`): its dataset read with its
roles (levels, count column, categories, empty cells, skipped levels, unit names) over the
declared structure (`ui.structure`) or the table's own, built once per dataset version and
roles and kept under ``session.DATA_CACHE``; a bundled sample's is built once for every
session (`sample_count_data`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from hierdp_core.data.loaders import default_max_cells
from hierdp_core.data.reshape import preparation_note, prepare
from hierdp_core.data.sample_files import sample_category_values
from hierdp_core.data.samples import SAMPLES
from hierdp_core.errors import InputError
from hierdp_core.queries.counts import CountData, count_data_from_table
from hierdp_core.ui import session, structure
from hierdp_core.ui.samples import sample_geography, sample_table


def count_data() -> CountData:
    """The CountData of the current dataset and roles (built once, then cached).
    Raises HierdpError for bad roles or values, and while an upload's levels or count
    column are not chosen on the Data page (a guess is not a choice)."""
    ds, r = session.ensure_dataset(), session.roles()
    if not r["levels"] or not r["count_confirmed"]:
        raise InputError("choose the geography levels and the count column of your table on "
                         "the Data page (or use the guessed columns there)")
    missing, ragged = r["missing"], bool(r["ragged"])
    key = (ds["version"], tuple(r["levels"]), r["count_column"], tuple(r["category_columns"]),
           r["local_codes"], missing, ragged, None if ds["sample"] else session.structure_key(),
           tuple(sorted(session.name_columns(ds, r["levels"]).items())))
    cache = st.session_state.get(session.DATA_CACHE)
    if cache is None or cache[0] != key:
        names, table = session.name_columns(ds, r["levels"]), ds["table"]
        if ds["sample"]:  # a bundled sample: built once for every session (read-only)
            st.session_state[session.DATA_CACHE] = cache = (key, *_sample_count_data(
                ds["sample"], tuple(r["levels"]), r["count_column"],
                tuple(r["category_columns"]), missing, ragged, tuple(sorted(names.items()))))
            return cache[1]
        if session.structure_state()["declared"]:  # an upload with its declared structure
            values = session.structure_state()["category_values"]
            declared = {"geography": structure.declared_geography(
                r["levels"], ragged=ragged, local_codes=r["local_codes"], picked=names),
                        "category_values": {c: values[c] for c in r["category_columns"]
                                            if c in values}}
            table = _declared_wide(table, values, r["category_columns"])
        else:  # an upload: the structure is read from the table (exploration only) but
            shape = st.session_state.get(session.INPUT) or {}  # the wide columns' order is kept
            wide = ({shape["name"]: tuple(shape["wide"])} if shape.get("wide")
                    and shape["name"] in r["category_columns"] else {})
            declared = {"local_codes": r["local_codes"], "name_columns": names,
                        "category_values": wide}
        st.session_state[session.DATA_CACHE] = cache = (key, *_prepared_count_data(
            table, r["levels"], r["count_column"], r["category_columns"], missing, ragged,
            names, declared))
    return cache[1]


@st.cache_resource(show_spinner="Preparing the sample…", max_entries=8)
def _sample_count_data(sample: str, levels: tuple[str, ...], count_column: str,
                       category_columns: tuple[str, ...], missing: str, ragged: bool,
                       names: tuple[tuple[str, str], ...]) -> tuple[CountData, str]:
    """The CountData of a bundled sample over the given roles, on its public geography and
    category values, with its preparation note; shared by every session (its counts are
    read-only), so a second visitor does not wait for it (seconds for Italy)."""
    declared = {"geography": sample_geography(sample, levels),
                "category_values": sample_category_values(sample, list(category_columns))}
    data, note = _prepared_count_data(sample_table(sample), list(levels), count_column,
                                      list(category_columns), missing, ragged, dict(names),
                                      declared)
    data.leaf_counts.setflags(write=False)
    return data, note


def sample_count_data(name: str) -> CountData:
    """The shared CountData of the bundled sample ``name`` with its own roles (what "Start
    with this sample" opens)."""
    sample = SAMPLES[name]
    names = session.name_columns({"sample": name, "table": sample_table(name)}, list(sample.levels))
    return _sample_count_data(name, tuple(sample.levels), sample.count_column,
                              tuple(sample.category_columns), "error", False,
                              tuple(sorted(names.items())))[0]


def _prepared_count_data(table, levels, count_column, category_columns, missing, ragged,
                         names, declared) -> tuple[CountData, str]:
    """The table's empty cells and skipped levels handled as the roles say (`prepare`),
    then its CountData; and the note of what preparing did."""
    table, handled, passed = prepare(table, [levels], count_column, missing=missing,
                                     ragged=ragged, names=names)
    data = count_data_from_table(table, levels, count_column=count_column,
                                 category_columns=category_columns,
                                 max_cells=default_max_cells(), **declared)
    return data, preparation_note(missing, handled, passed, flags=False)


def _declared_wide(table: pd.DataFrame, values: dict, categories: list[str]) -> pd.DataFrame:
    """The melted table of a wide upload with its category column holding the declared
    values (`wide_labels.declared_column`; the header is not a declaration), as is when the
    upload is long or that category is not declared."""
    shape = st.session_state.get(session.INPUT) or {}
    name = shape.get("name")
    if not shape.get("wide") or name not in categories or name not in values:
        return table
    from hierdp_core.data.wide_labels import declared_column

    return table.assign(**{name: declared_column(table[name], shape["wide"], values[name],
                                                 name)})


def count_data_note() -> str:
    """What preparing the table did for the current `count_data` (empty cells counted as 0
    or left out, units passing through a level), in one sentence; '' for nothing."""
    cache = st.session_state.get(session.DATA_CACHE)
    return cache[2] if cache else ""

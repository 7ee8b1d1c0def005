"""Where the group-size, flow and range pages take their data from: their bundled sample, or
the user's own table uploaded on the Data page, with the column roles of that query.

Each ``*_from_upload`` function draws the role pickers, builds the query's data with the
same functions as the CLI (so the same checks and messages), caches it in session state per
(upload version, roles, declared structure), and stops the page with a friendly message when
the table cannot be used. The units come from the geography file declared on the Data page
when the user chose the declared structure there (`ui.structure`), else from the
table (exploration only; the "your table" choice says which). Session-state keys:
``hd_src_cache`` (prefix -> (key, data)).
"""

from __future__ import annotations

import streamlit as st

from hierdp_core import column_roles
from hierdp_core.data.reshape import prepare
from hierdp_core.errors import HierdpError
from hierdp_core.ui import session, widgets
from hierdp_core.ui import structure as structure
from hierdp_core.ui.inputs import friendly

_CACHE = "hd_src_cache"
SAMPLE, UPLOAD = "sample", "upload"


def uploaded_dataset() -> dict | None:
    """The table uploaded on the Data page (the session's dataset when it is not a bundled
    sample), or None."""
    ds = st.session_state.get(session.DATASET)
    return ds if ds is not None and ds["sample"] is None else None


def choose_source(prefix: str, sample_label: str) -> dict | None:
    """A "Data" radio: the page's bundled sample (returns None) or the uploaded table
    (returns its dataset dict). Without an upload, choosing it shows how to get one and
    stops the page."""
    ds = uploaded_dataset()
    labels = {SAMPLE: sample_label,
              UPLOAD: f"your table: {ds['name']} ({structure.describe()})" if ds
              else "your table (upload it first)"}
    choice = st.radio("Data", list(labels), format_func=labels.get, horizontal=True,
                      key=f"{prefix}_source")
    if choice == SAMPLE:
        return None
    if ds is None:
        st.info("Upload your table on the Data page first (CSV, TSV, Parquet, Excel or "
                "Feather); it stays in this browser session only.")
        widgets.next_page("pages/1_Data.py", "Upload a table on the Data page")
        st.stop()
    return ds


def _columns(ds: dict) -> list[str]:
    return [str(c) for c in ds["table"].columns]


def _pick(label: str, columns: list[str], preferred: tuple[str, ...], key: str, **kwargs):
    """A column selectbox defaulting to the first preferred name the table has."""
    index = next((columns.index(p) for p in preferred if p in columns), 0)
    return st.selectbox(label, columns, index=index, key=key, **kwargs)


def _valid(label: str, candidates: list[str], what: str, needs: str):
    """``candidates`` (valid columns for a role, `column_roles`), or a friendly message
    naming what the role ``needs`` and the page stops."""
    if not candidates:
        st.error(f"Your table cannot be used for {what}: no column can be the {label} "
                 f"({needs}). Check the level columns, or the table's shape on the Data "
                 "page.")
        st.stop()
    return candidates


def _levels(ds: dict, key: str, label: str = "Geography levels, coarse to fine",
            default: list[str] | None = None) -> list[str]:
    columns = _columns(ds)
    if default is None:
        default = st.session_state.get(session.ROLES, {}).get("levels", [])
    return st.multiselect(label, columns, default=[c for c in default if c in columns],
                          key=key)


def _count_names(usual: tuple[str, ...]) -> tuple[str, ...]:
    """Likely count column names: the one chosen on the Data page first."""
    chosen = st.session_state.get(session.ROLES, {}).get("count_column")
    return ((chosen,) if chosen else ()) + usual


def _build(prefix: str, key: tuple, what: str, build):
    """``build()`` once per key (cached in session state); a HierdpError becomes a message
    naming what is wrong, and the page stops."""
    cache = st.session_state.setdefault(_CACHE, {})
    if prefix in cache and cache[prefix][0] == key:
        return cache[prefix][1]
    try:
        data = build()
    except HierdpError as exc:
        st.error(f"Your table cannot be used for {what}: {friendly(exc)}")
        st.stop()
    cache[prefix] = (key, data)
    return data


def _choices() -> tuple[str, bool]:
    """The Data page's choices for the upload: what empty count cells mean, and whether
    units may skip a level."""
    r = st.session_state.get(session.ROLES, {})
    return r.get("missing", "error"), bool(r.get("ragged", False))


def _prepared(ds: dict, level_sets: list[list[str]], count_column: str | None):
    """The uploaded table with the Data page's choices applied (`reshape.prepare`)."""
    missing, ragged = _choices()
    return prepare(ds["table"], level_sets, count_column, missing=missing, ragged=ragged)[0]


def group_sizes_from_upload(ds: dict):
    """GroupSizeData from the uploaded table: person records with a group id, or numbers of
    groups per size; levels, columns and the public top-code N chosen here. Returns (data,
    key, the input description for the manifest)."""
    from hierdp_core.groupsizes.data import (
        group_size_data_from_histograms,
        group_size_data_from_people,
    )

    left, middle, right = st.columns(3)
    with left:
        levels = _levels(ds, "gs_up_levels")
    with middle:
        layout = st.radio("One row per", ["person", "size"], horizontal=True, key="gs_up_rows",
                          format_func={"person": "person (household id)",
                                       "size": "region and size"}.get)
        table, what = ds["table"], "group sizes"
        if layout == "person":
            groups = _valid("household id", column_roles.group_candidates(table, levels),
                            what, "any column other than the levels")
            roles = (_pick("Household id column", groups, (), "gs_up_group"),)
        else:
            sizes = _valid("size column", column_roles.size_candidates(table, levels), what,
                           "whole numbers of 1 or more, not a level or a code column")
            size = _pick("Size column", sizes, (), "gs_up_size")
            counts = _valid("number of households", column_roles.count_candidates(
                table, [*levels, size]), what, "whole numbers, not a level, code or the size")
            roles = (size, _pick("Number of households column", counts,
                                 ("households", "count", "groups"), "gs_up_count"))
    with right:
        max_size = st.number_input("Largest size N (public)", min_value=1, max_value=100_000,
                                   value=64, step=1, key="gs_up_max",
                                   help="Sizes above N count as N. Choose N without looking "
                                        "at the data: it is part of the public model.")
    if not levels:
        st.info("Choose the geography level columns of your table, coarse to fine.")
        st.stop()

    def build():
        geography = structure.declared_geography(levels, ragged=_choices()[1])
        units = ({"geography": geography} if geography is not None
                 else {"name_columns": session.name_columns(ds, levels)})
        table = _prepared(ds, [levels], None if layout == "person" else roles[1])
        if layout == "person":
            return group_size_data_from_people(table, levels, roles[0],
                                               max_size=int(max_size), **units)
        return group_size_data_from_histograms(table, levels, roles[0], roles[1],
                                               max_size=int(max_size), **units)
    key = (ds["version"], tuple(levels), layout, roles, int(max_size), structure.key(),
           _choices())
    spec = {"query": "group-sizes", "levels": levels, "max_size": int(max_size), "min_size": 0,
            **({"group_column": roles[0]} if layout == "person" else
               {"size_column": roles[0], "count_column": roles[1]})}
    return _build("gs", key, "group sizes", build), key, spec


TRIP_ROWS = "(none: one row per trip)"
FLOW_COUNT_NAMES = ("count", "trips", "flows", "flights", "workers", "commuters", "n")


def flows_from_upload(ds: dict):
    """FlowData from the uploaded table: trips (one row each) or an O/D table with a count
    column; origin and destination level columns chosen here. Returns (data, key, the input
    description for the manifest)."""
    from hierdp_core.flows.data import flow_data_from_table, geography_levels

    left, middle, right = st.columns(3)
    with left:
        origin = _levels(ds, "fl_up_origin", "Origin levels, coarse to fine",
                         default=column_roles.od_candidates(ds["table"])[0])
    with middle:
        destination = _levels(ds, "fl_up_destination", "Destination levels (same geography)",
                              default=column_roles.od_candidates(ds["table"])[1])
    with right:
        counts = column_roles.count_candidates(ds["table"], [*origin, *destination])
        count = _pick("Count column", [TRIP_ROWS, *counts], _count_names(FLOW_COUNT_NAMES),
                      "fl_up_count",
                      help="The number of trips of each row, or none when every row is one "
                           "trip.")
    if not origin or not destination:
        st.info("Choose the origin and destination level columns of your table, coarse to "
                "fine (e.g. o_state, o_county and d_state, d_county).")
        st.stop()
    count_column = None if count == TRIP_ROWS else count
    key = (ds["version"], tuple(origin), tuple(destination), count_column, structure.key(),
           _choices())

    def build():
        if len(origin) != len(destination):  # the builder's message
            return flow_data_from_table(ds["table"], origin, destination, count_column)
        candidates = geography_levels(origin, destination)  # the common names come last
        geography = structure.declared_geography(candidates[0], alternatives=candidates[1:],
                                                 level_names=candidates[-1],
                                                 ragged=_choices()[1])
        return flow_data_from_table(_prepared(ds, [origin, destination], count_column),
                                    origin, destination, count_column, geography=geography)
    data = _build("fl", key, "flows", build)
    return data, key, {"query": "flows", "origin_levels": origin,
                       "destination_levels": destination, "count_column": count_column}


PERSON_ROWS = "(none: one row per person)"
RANGE_COUNT_NAMES = ("count", "residents", "population", "people", "n")


def _domain(text: str) -> tuple[int, int] | None:
    """'LO-HI' as integers (negative bounds allowed: '-5-5'), by `structure.parse_domain`,
    the parser of the command line; empty = None; anything else a `StructureError`."""
    from hierdp_core.declared_values import parse_domain

    text = text.strip()
    return parse_domain(text) if text else None


def ranges_from_upload(ds: dict):
    """RangeData (prefix workload) from the uploaded table: levels, the ordered attribute,
    the count column and the public domain chosen here. Returns (data, key, the input
    description for the manifest)."""
    from hierdp_core.queries.ranges import range_data_from_table

    left, middle, right = st.columns(3)
    with left:
        levels = _levels(ds, "rg_up_levels")
    with middle:
        attribute = _pick("Ordered attribute", _valid(
            "ordered attribute", column_roles.attribute_candidates(ds["table"], levels),
            "range queries", "integers, not a level or a code column"), (), "rg_up_attribute", help="Its values are the histogram's cells, in "
                          "order (integers: every value from the lowest to the highest).")
        counts = column_roles.count_candidates(ds["table"], [*levels, attribute])
        count = _pick("Count column", [PERSON_ROWS, *counts],
                      _count_names(RANGE_COUNT_NAMES), "rg_up_count",
                      help="The number of people of each row, or none when every row is one "
                           "person.")
    with right:
        domain_text = st.text_input("Domain LO-HI (public)", "", key="rg_up_domain",
                                    placeholder="e.g. 0-100; empty: the values in the table",
                                    help="Integer attributes: the range of values the "
                                         "histograms cover, chosen without looking at the "
                                         "data. Empty uses the lowest and highest value in "
                                         "the table, which is not private.")
    if not levels:
        st.info("Choose the geography level columns of your table, coarse to fine.")
        st.stop()
    count_column = None if count == PERSON_ROWS else count

    def build():
        domain = _domain(domain_text)
        geography = structure.declared_geography(levels, ragged=_choices()[1])
        units = ({"geography": geography} if geography is not None
                 else {"name_columns": session.name_columns(ds, levels)})
        return range_data_from_table(_prepared(ds, [levels], count_column), levels, attribute,
                                     count_column=count_column, domain=domain, **units)
    key = (ds["version"], tuple(levels), attribute, count_column, domain_text.strip(),
           structure.key(), _choices())
    data = _build("rg", key, "range queries", build)
    domain = _domain(domain_text)  # parsed without error: build() succeeded
    return data, key, {"query": "ranges", "levels": levels, "attribute": attribute,
                       "count_column": count_column, "domain": domain}


def on_data(page_key: str, upload: dict | None, data_key, stale: tuple[str, ...]) -> str:
    """Record the data a page now works on: when it changed (``data_key`` differs from the
    one stored under ``page_key``), drop the results in ``stale``. Returns the suffix for
    the keys of widgets that pick units of the data: empty for the bundled sample, one per
    uploaded-data setup otherwise (a pick made on other data is not carried over)."""
    if st.session_state.get(page_key) != data_key:
        for key in stale:
            st.session_state.pop(key, None)
        st.session_state[page_key] = data_key
    return "" if upload is None else f"_up{abs(hash(data_key)) % 10**8}"

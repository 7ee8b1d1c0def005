"""Where the group-size, flow and range pages take their data from: their bundled sample, or
the user's own table uploaded on the Data page, with the column roles of that query.

Each ``*_from_upload`` function (the group sizes': `ui.gs_upload`) draws the role pickers,
which start empty (the level columns confirmed on the Data page aside): a guess of the
roles is shown and applied only on the click "Use the guessed columns" (`suggestion`,
DESIGN principle 10). It builds the query's data with the same functions as the CLI (so
the same checks and messages), caches it in session state per (upload version, roles,
declared structure), and stops the page with a friendly message when the table cannot be
used. The units come from the geography file declared on the Data page
when the user chose the declared structure there (`ui.structure`), else from the
table (exploration only; the "your table" choice says which). Session-state keys:
``hd_src_cache`` (prefix -> (key, data)).
"""

from __future__ import annotations

import streamlit as st

from hierdp_core import column_roles, query_columns
from hierdp_core.data.reshape import prepare
from hierdp_core.errors import HierdpError
from hierdp_core.ui import session, widgets
from hierdp_core.ui import structure as structure
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.inputs import friendly
from hierdp_core.ui.session import SOURCE_CACHE as _CACHE

SAMPLE, UPLOAD = "sample", "upload"


def uploaded_dataset() -> dict | None:
    """The table uploaded on the Data page (the session's dataset when it is not a bundled
    sample), or None."""
    ds = st.session_state.get(session.DATASET)
    return ds if ds is not None and ds["sample"] is None else None


def choose_source(prefix: str, sample_label: str, query: str) -> dict | None:
    """A "Data" radio: the page's bundled sample (returns None) or the uploaded table
    (returns its dataset dict). Without an upload, choosing it shows how to get one and
    stops the page. The radio starts on the upload when its geography levels were chosen
    on the Data page and it fits the page's ``query`` (`query_columns.fits`): a user who has
    just uploaded a table of households, trips or ages comes to its page to release it, and
    a first run on the bundled sample (its release and maps) would only be thrown away. A
    choice once made is kept (`session.keep_page_settings`)."""
    ds = uploaded_dataset()
    labels = {SAMPLE: sample_label,
              UPLOAD: f"your table: {ds['name']} ({structure.describe()})" if ds
              else "your table (upload it first)"}
    key = wk.page_key(prefix, wk.SOURCE)
    levels = st.session_state.get(session.ROLES, {}).get("levels") or []
    if key not in st.session_state and ds is not None and levels \
            and query_columns.fits(ds["table"], query, levels):
        st.session_state[key] = UPLOAD
    choice = st.radio("Data", list(labels), format_func=labels.get, horizontal=True, key=key)
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


def pick_column(label: str, columns: list[str], key: str, **kwargs):
    """A column selectbox that starts empty (None until the user picks: a role is never
    preset from a guess; `suggestion` offers the guess on one click)."""
    return st.selectbox(label, columns, index=None, key=key,
                        placeholder="choose a column", **kwargs)


def suggestion(key: str, guesses: dict[str, tuple[str, object]]) -> bool:
    """The guessed roles not chosen yet (widget key -> (label, guessed value)), shown with
    what they are and a button that applies them all in one click; nothing is applied
    without it (DESIGN principle 10). Whether the button is shown."""
    open_ = {k: (label, value) for k, (label, value) in guesses.items()
             if st.session_state.get(k) in (None, []) and value not in (None, [])}
    if not open_:
        return False
    shown = "; ".join(f"{label}: {', '.join(v) if isinstance(v, list) else v}"
                      for label, v in open_.values())
    st.info(f"Guessed from the table, not applied: {shown}. Check them, then use them (or "
            "choose the columns yourself).")
    st.button("Use the guessed columns", key=key, on_click=st.session_state.update,
              args=({k: v for k, (_, v) in open_.items()},))
    return True


def confirm_roles(chosen: list, what: str, guessed: bool = True) -> None:
    """Stop the page with a message until every role in ``chosen`` is picked (``guessed``:
    a guess is offered above, `suggestion`)."""
    if any(c is None or c == [] for c in chosen):
        st.info(f"Choose {what}" + (", or use the guessed columns above." if guessed
                                     else "."))
        st.stop()


def valid_columns(label: str, candidates: list[str], what: str, needs: str):
    """``candidates`` (valid columns for a role, `column_roles`), or a friendly message
    naming what the role ``needs`` and the page stops."""
    if not candidates:
        st.error(f"Your table cannot be used for {what}: no column can be the {label} "
                 f"({needs}). Check the level columns, or the table's shape on the Data "
                 "page.")
        st.stop()
    return candidates


def level_columns(ds: dict, key: str, label: str = "Geography levels, coarse to fine", *,
                  from_roles: bool = True) -> list[str]:
    """The level columns, starting (``from_roles``) from the ones confirmed on the Data page
    (none there: empty, never a guess)."""
    columns = _columns(ds)
    default = st.session_state.get(session.ROLES, {}).get("levels", []) if from_roles else []
    return st.multiselect(label, columns, key=key,
                          default=None if key in st.session_state
                          else [c for c in default if c in columns])


def count_guess(candidates: list[str], none: str) -> str:
    """The guess for a query page's count column among ``candidates``
    (`column_roles.count_candidates`): the one chosen on the Data page, else the first
    named like a count in one of the languages the Data page's guess knows
    (`column_roles.COUNT_HINTS`: ``aantal``, ``personas``), else ``none`` (one row each)."""
    chosen = st.session_state.get(session.ROLES, {}).get("count_column")
    return chosen if chosen in candidates else next(
        (c for c in candidates if column_roles.hinted(c, column_roles.COUNT_HINTS)), none)


def build_once(prefix: str, key: tuple, what: str, build, failure: str = ""):
    """``build()`` once per key (cached in session state); a HierdpError becomes a message
    naming what is wrong (after ``failure``, by default "Your table cannot be used for
    ``what``"), and the page stops."""
    cache = st.session_state.setdefault(_CACHE, {})
    if prefix in cache and cache[prefix][0] == key:
        return cache[prefix][1]
    try:
        data = build()
    except HierdpError as exc:
        st.error(f"{failure or f'Your table cannot be used for {what}'}: {friendly(exc)}")
        st.stop()
    cache[prefix] = (key, data)
    return data


def upload_choices() -> tuple[str, bool, bool]:
    """The Data page's choices for the upload: what empty count cells mean, whether units
    may skip a level and whether codes are unique only within their parent."""
    r = session.roles()
    return r["missing"], bool(r["ragged"]), bool(r["local_codes"])


def units_read(ds: dict, levels: list[str]) -> dict:
    """How a query page reads an upload's units: the declared geography (`declared_geography`
    with the Data page's choices), else from the table, with its name columns and local
    codes."""
    _, ragged, local = upload_choices()
    geography = structure.declared_geography(levels, ragged=ragged, local_codes=local)
    return ({"geography": geography} if geography is not None
            else {"name_columns": session.name_columns(ds, levels), "local_codes": local})


def prepared(ds: dict, level_sets: list[list[str]], count_column: str | None):
    """The uploaded table with the Data page's choices applied (`reshape.prepare`)."""
    missing, ragged, _ = upload_choices()
    return prepare(ds["table"], level_sets, count_column, missing=missing, ragged=ragged)[0]


TRIP_ROWS = "(none: one row per trip)"


def flows_from_upload(ds: dict):
    """FlowData from the uploaded table: trips (one row each) or an O/D table with a count
    column; origin and destination level columns chosen here. Returns (data, key, the input
    description for the manifest)."""
    from hierdp_core.flows.data import flow_data_from_table, geography_levels

    guessed = query_columns.od_candidates(ds["table"])
    left, middle, right = st.columns(3)
    with left:
        origin = level_columns(ds, wk.FL_UP_ORIGIN, "Origin levels, coarse to fine",
                               from_roles=False)
    with middle:
        destination = level_columns(ds, wk.FL_UP_DESTINATION,
                                    "Destination levels (same geography)", from_roles=False)
    with right:
        options = [TRIP_ROWS, *column_roles.count_candidates(ds["table"],
                                                              [*origin, *destination])]
        count = pick_column("Count column", options, wk.FL_UP_COUNT,
                            help="The number of trips of each row, or none when every row "
                                 "is one trip.")
    offered = suggestion(wk.FL_UP_SUGGEST, {
        wk.FL_UP_ORIGIN: ("origin levels", guessed[0]),
        wk.FL_UP_DESTINATION: ("destination levels", guessed[1]),
        wk.FL_UP_COUNT: ("count", count_guess(column_roles.count_candidates(
            ds["table"], [*guessed[0], *guessed[1]]), TRIP_ROWS))})
    confirm_roles([origin, destination, count], "the origin and destination level columns "
                  "of your table, coarse to fine (e.g. o_state, o_county and d_state, "
                  "d_county), and the count column", offered)
    count_column = None if count == TRIP_ROWS else count
    key = (ds["version"], tuple(origin), tuple(destination), count_column, session.structure_key(),
           upload_choices())

    def build():
        if len(origin) != len(destination):  # the builder's message
            return flow_data_from_table(ds["table"], origin, destination, count_column)
        candidates = geography_levels(origin, destination)  # the common names come last
        _, ragged, local = upload_choices()
        geography = structure.declared_geography(candidates[0], alternatives=candidates[1:],
                                                 level_names=candidates[-1], ragged=ragged,
                                                 local_codes=local)
        return flow_data_from_table(prepared(ds, [origin, destination], count_column),
                                    origin, destination, count_column, geography=geography,
                                    local_codes=local)
    data = build_once(wk.FL, key, "flows", build)
    return data, key, {"query": "flows", "origin_levels": origin,
                       "destination_levels": destination, "count_column": count_column}


PERSON_ROWS = "(none: one row per person)"


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

    table = ds["table"]
    left, middle, right = st.columns(3)
    with left:
        levels = level_columns(ds, wk.RG_UP_LEVELS)
    with middle:
        attribute = pick_column("Ordered attribute", valid_columns(
            "ordered attribute", column_roles.attribute_candidates(table, levels),
            "range queries", "integers, not a level or a code column"), wk.RG_UP_ATTRIBUTE,
            help="Its values are the histogram's cells, in order (integers: every value from "
                 "the lowest to the highest).")
        options = [PERSON_ROWS, *column_roles.count_candidates(table, [*levels, attribute])]
        count = pick_column("Count column", options, wk.RG_UP_COUNT,
                            help="The number of people of each row, or none when every row "
                                 "is one person.")
    with right:
        domain_text = st.text_input("Domain LO-HI (public)", "", key=wk.RG_UP_DOMAIN,
                                    placeholder="e.g. 0-100 (needed with a declared "
                                                "structure)",
                                    help="Integer attributes: the range of values the "
                                         "histograms cover, chosen without looking at the "
                                         "data (a declared structure needs it). Empty, "
                                         "with the structure read from the table: the "
                                         "lowest and highest value in the table, which "
                                         "is not private.")
    guessed = levels or column_roles.guess_levels(table)
    attribute_guess = next((c for c in column_roles.attribute_candidates(table, guessed)
                            if not column_roles.hinted(c, column_roles.COUNT_HINTS)), None)
    offered = suggestion(wk.RG_UP_SUGGEST, {
        wk.RG_UP_LEVELS: ("levels", guessed),
        wk.RG_UP_ATTRIBUTE: ("ordered attribute", attribute_guess),
        wk.RG_UP_COUNT: ("count", count_guess(column_roles.count_candidates(
            table, [*guessed, attribute_guess]), PERSON_ROWS))})
    confirm_roles([levels, attribute, count], "the geography level columns of your table "
                  "(coarse to fine), the ordered attribute and the count column", offered)
    count_column = None if count == PERSON_ROWS else count

    def build():
        return range_data_from_table(prepared(ds, [levels], count_column), levels, attribute,
                                     count_column=count_column, domain=_domain(domain_text),
                                     **units_read(ds, levels))
    key = (ds["version"], tuple(levels), attribute, count_column, domain_text.strip(),
           session.structure_key(), upload_choices())
    data = build_once(wk.RG, key, "range queries", build)
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

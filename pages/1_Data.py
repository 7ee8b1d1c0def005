"""Data: pick a sample or upload a table, preview it, assign column roles."""

import streamlit as st

from hierdp_core.data import totals_rows
from hierdp_core.data.reshape import describe_shape
from hierdp_core.data.samples import SAMPLES
from hierdp_core.data.shape_guess import consequence, guess_wide, meltable_columns
from hierdp_core.errors import HierdpError
from hierdp_core.ui import geo as geo_ui
from hierdp_core.ui import inputs as inp
from hierdp_core.ui import release as rel
from hierdp_core.ui import session, widgets
from hierdp_core.ui import structure as structure
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.count_data import count_data, count_data_note

status_slot = widgets.page_header("Data", "Load records or aggregated counts and tell hierdp "
                                          "what each column is.")
ds = session.ensure_dataset()

source, upload = st.columns([1, 1])
with source:
    st.subheader("A bundled sample")
    names = list(SAMPLES)
    current = ds["sample"] if ds["sample"] in names else names[0]
    choice = st.selectbox("Sample", names, index=names.index(current),
                          format_func=lambda n: SAMPLES[n].title, key=wk.DATA_SAMPLE)
    st.caption(f"{SAMPLES[choice].description}  \nSource: {SAMPLES[choice].source} · "
               f"licence: {SAMPLES[choice].licence}")
    if st.button("Load this sample", type="primary", key=wk.LOAD_SAMPLE):
        session.load_sample_into_state(choice)
        st.rerun()
with upload:
    st.subheader("Your own file")
    uploaded = st.file_uploader(
        "CSV, TSV, Parquet, Excel or Feather: one row per person (microdata), or one row per "
        "unit with a count column", type=["csv", "tsv", "txt", "gz", "parquet", "xlsx",
                                          "xls", "feather"], key=wk.UPLOAD)
    encoding = st.selectbox("Text encoding", inp.ENCODINGS, key=wk.ENCODING)
    if uploaded is not None and st.button("Use this file", key=wk.USE_UPLOAD):
        try:
            table, note = inp.read_upload(uploaded, encoding)
        except HierdpError as exc:
            st.error(f"This file cannot be read: {exc}")
        else:
            session.set_dataset(uploaded.name, table)
            st.session_state[session.ROLES] = inp.default_roles(table)
            st.session_state[session.READ_NOTE] = {"name": uploaded.name, "note": note}
            st.session_state.pop(geo_ui.GEO, None)
            st.rerun()
    read = st.session_state.get(session.READ_NOTE) or {}
    if read.get("note") and read["name"] == session.ensure_dataset()["name"]:
        st.info(read["note"])

ds = session.ensure_dataset()
raw = inp.raw_table()
st.subheader(f"Preview: {ds['name']}")
st.caption(f"{len(raw):,} rows × {len(raw.columns)} columns (first 200 rows shown). "
           "This is the confidential input: it never leaves this page in a release.")
st.dataframe(raw.head(200), hide_index=True, width="stretch", height=260)

if ds["sample"] is None:
    st.subheader("Shape of the table")
    current = inp.shape()
    levels_now = session.roles()["levels"]
    guess = guess_wide(raw, levels_now)
    left_out = (f" Not offered to melt: {', '.join(guess.codes)} (they look like codes)."
                if guess.codes else "")
    st.caption(f"Detected: **{'looks ' if guess.columns else ''}"
               f"{describe_shape(guess.columns)}**. A wide table has one column per "
               "category (one per age band, sex or household size, as most census tables "
               "are); ticked, it is melted into one row per unit and category, each column "
               f"counting one category.{left_out}")
    if guess.columns and not current["wide"]:
        st.info(f"A guess, not applied: {consequence(raw, guess.columns, guess.total)} "
                "Tick the box below to melt them.")
    wide, name = [], current["name"]
    if st.checkbox("One column per category (a wide table)", value=bool(current["wide"]),
                   key=inp.upload_key(wk.SHAPE_WIDE)):
        left, right = st.columns([3, 1])
        options = meltable_columns(raw, levels_now)
        wide = left.multiselect("The columns holding the counts, one per category", options,
                                default=[c for c in current["wide"] or guess.columns
                                         if c in options],
                                key=inp.upload_key(wk.SHAPE_COLUMNS),
                                help="Only numeric columns that are not a level or a code "
                                     "are offered.")
        name = right.text_input("Name of the category they make", current["name"],
                                key=inp.upload_key(wk.SHAPE_NAME)).strip() or "category"
        if wide:
            st.caption(consequence(raw, wide, guess.total))
    try:
        inp.set_shape(wide, name)
    except HierdpError as exc:
        st.error(f"These columns cannot be melted: {exc}")
    if inp.shape()["wide"]:
        long = session.ensure_dataset()["table"]
        st.caption(f"The long table the release is made from: {len(long):,} rows "
                   f"({describe_shape(inp.shape()['wide'])} into {name!r} and "
                   f"{inp.COUNT!r}; first rows shown).")
        st.dataframe(long.head(12), hide_index=True, width="stretch", height=250)

table = session.ensure_dataset()["table"]
st.subheader("Column roles")
inp.guess_panel(table)
r = session.roles()
columns = [str(c) for c in table.columns]
levels = widgets.level_picker(inp.table_key(wk.ROLES_LEVELS))
r = session.roles()
count, count_chosen = inp.count_picker(table, levels, r["count_column"],
                                       r["count_confirmed"])
others = [c for c in columns if c not in levels and c != count]
categories = st.multiselect("Category columns (counts are released per combination)", others,
                            default=[c for c in r["category_columns"] if c in others],
                            key=inp.table_key(wk.ROLES_CATEGORIES))
local = st.checkbox("Codes are unique only within their parent (e.g. 3-digit county codes)",
                    value=r["local_codes"], key=wk.ROLES_LOCAL)
missing, ragged = "error", False
if ds["sample"] is None:
    policies = list(inp.MISSING_LABELS)
    missing = st.radio("Empty count cells", policies, format_func=inp.MISSING_LABELS.get,
                       index=policies.index(r["missing"]), horizontal=True,
                       key=inp.upload_key(wk.ROLES_MISSING))
    ragged = st.checkbox("Units may skip a level: an empty code means the unit above passes "
                         "through that level as its own child (a city outside any county "
                         "sits in its state, shown as '06 (no county)')",
                         value=bool(r["ragged"]),
                         key=inp.upload_key(wk.ROLES_RAGGED))
names = inp.name_pickers(table, levels, categories) if ds["sample"] is None else None
session.set_roles({**r, "levels": levels, "count_column": count,
                   "count_confirmed": count_chosen, "category_columns": categories,
                   "local_codes": local, "missing": missing, "ragged": ragged,
                   **({"name_columns": names} if names is not None else {})})
if ds["sample"] is None:
    st.subheader("Structure of the release")
    structure.choose(categories, inp.wide_hints())
widgets.sidebar_status(status_slot)

if not levels:
    st.warning("Choose at least one geography level.")
    st.stop()
if not count_chosen:
    st.info("Choose the count column (or none: one row per person).")
    st.stop()
try:
    data = count_data()
except HierdpError as exc:
    st.error(f"These roles do not work yet: {inp.friendly(exc)}")
    st.stop()
if count_data_note():
    st.info(f"Prepared: {count_data_note()}.")
h = data.hierarchy
declared = ds["sample"] is None and session.structure_state()["declared"]
named = (structure.geography_name_columns(levels, session.name_columns(ds, levels))
         if declared else session.name_columns(ds, levels))
where = ", from the geography file" if declared else ""
st.caption(f"Unit names (public, used as labels in the release{where}): "
           + (", ".join(f"{lv} ← {col}" for lv, col in named.items()) if named else
              "none (choose a name column per level above)."))
st.success(
    f"A tree of {h.n_nodes:,} units over {h.n_levels} levels "
    f"({' › '.join(f'{n} ({h.level_size(i):,})' for i, n in enumerate(h.level_names))}), "
    f"{len(data.categories)} categor{'y' if len(data.categories) == 1 else 'ies'}, "
    f"{int(data.leaf_counts.sum()):,} people in total."
)
rel.structure_note(data.declared_structure)
if ds["sample"] is None and not declared and (
        totals := totals_rows.totals_like_units(table, levels, local, ragged)):
    said = totals_rows.totals_text(totals)
    st.warning(said[0].upper() + said[1:] + ".")
if ds["sample"] is None:
    geo_ui.panel(h)
widgets.next_page("pages/2_Hierarchy.py", "Next: look at the hierarchy")

"""Data: pick a sample or upload a table, preview it, assign column roles."""

import streamlit as st

from hierdp_core import dashboard as ui
from hierdp_core import dashboard_release as rel
from hierdp_core import dashboard_structure as structure
from hierdp_core.data.loaders import read_table
from hierdp_core.data.samples import SAMPLES
from hierdp_core.errors import HierdpError

status_slot = ui.page_header("Data", "Load records or aggregated counts and tell hierdp what each column is.")
ds = ui.ensure_dataset()

source, upload = st.columns([1, 1])
with source:
    st.subheader("A bundled sample")
    names = list(SAMPLES)
    current = ds["sample"] if ds["sample"] in names else names[0]
    choice = st.selectbox("Sample", names, index=names.index(current),
                          format_func=lambda n: SAMPLES[n].title, key="data_sample")
    st.caption(f"{SAMPLES[choice].description}  \nSource: {SAMPLES[choice].source} · "
               f"licence: {SAMPLES[choice].licence}")
    if st.button("Load this sample", type="primary", key="load_sample"):
        ui.load_sample_into_state(choice)
        st.rerun()
with upload:
    st.subheader("Your own file")
    uploaded = st.file_uploader(
        "CSV, TSV, Parquet, Excel or Feather: one row per person (microdata), or one row per "
        "unit with a count column", type=["csv", "tsv", "txt", "gz", "parquet", "xlsx",
                                          "xls", "feather"], key="upload")
    encoding = st.selectbox("Text encoding", ["auto (UTF-8)", "latin-1", "cp1252"],
                            key="encoding")
    if uploaded is not None and st.button("Use this file", key="use_upload"):
        try:
            table = read_table(uploaded, name=uploaded.name,
                               encoding=None if encoding.startswith("auto") else encoding)
        except HierdpError as exc:
            st.error(f"This file cannot be read: {exc}")
        else:
            ui.set_dataset(uploaded.name, table)
            columns = list(table.columns)
            st.session_state[ui.ROLES] = {"levels": columns[:1], "count_column": None,
                                          "category_columns": [], "local_codes": False}
            st.rerun()

ds = ui.ensure_dataset()
table = ds["table"]
st.subheader(f"Preview: {ds['name']}")
st.caption(f"{len(table):,} rows × {len(table.columns)} columns (first 200 rows shown). "
           "This is the confidential input: it never leaves this page in a release.")
st.dataframe(table.head(200), hide_index=True, width="stretch", height=260)

st.subheader("Column roles")
r = ui.roles()
columns = [str(c) for c in table.columns]
numeric = [c for c in columns if table[c].dtype.kind in "iuf"]
levels = ui.level_picker("roles_levels")
r = ui.roles()
count_options = ["(none: one row per person)"] + numeric
count_default = r["count_column"] if r["count_column"] in numeric else count_options[0]
count = st.selectbox("Count column", count_options, index=count_options.index(count_default),
                     key="roles_count")
others = [c for c in columns if c not in levels and c != count]
categories = st.multiselect("Category columns (counts are released per combination)", others,
                            default=[c for c in r["category_columns"] if c in others],
                            key="roles_categories")
local = st.checkbox("Codes are unique only within their parent (e.g. 3-digit county codes)",
                    value=r["local_codes"], key="roles_local")
ui.set_roles({"levels": levels, "count_column": None if count == count_options[0] else count,
              "category_columns": categories, "local_codes": local})
if ds["sample"] is None:
    st.subheader("Structure of the release")
    structure.choose(categories)
ui.sidebar_status(status_slot)

if not levels:
    st.warning("Choose at least one geography level.")
    st.stop()
try:
    data = ui.count_data()
except HierdpError as exc:
    st.error(f"These roles do not work yet: {exc}")
    st.stop()
h = data.hierarchy
declared = ds["sample"] is None and structure.state()["declared"]
named = structure.geography_name_columns(levels) if declared else ui.name_columns(ds, levels)
where = ", from the geography file" if declared else ""
st.caption(f"Unit names (public, used as labels in the release{where}): "
           + (", ".join(f"{lv} ← {col}" for lv, col in named.items()) if named else
              "none found; a column called <level>_name (e.g. county_name) is used "
              "automatically."))
st.success(
    f"A tree of {h.n_nodes:,} units over {h.n_levels} levels "
    f"({' › '.join(f'{n} ({h.level_size(i):,})' for i, n in enumerate(h.level_names))}), "
    f"{len(data.categories)} categor{'y' if len(data.categories) == 1 else 'ies'}, "
    f"{int(data.leaf_counts.sum()):,} people in total."
)
rel.structure_note(data.declared_structure)
ui.next_page("pages/2_Hierarchy.py", "Next: look at the hierarchy")

"""Hierarchy: choose and order the levels; per-level summary and a picture of the tree."""

import streamlit as st

from hierdp_core.ui import inputs as inp
from hierdp_core.ui import session, widgets
from hierdp_core.ui import widget_keys as wk
from hierdp_core.viz import hierarchy_treemap

TREEMAP_NODES = 600  # nodes given to the treemap: plotly.js builds each, drawn or not

status_slot = widgets.page_header("Hierarchy", "The tree the release must add up over: every "
                                               "parent equals the sum of its children.")
session.ensure_dataset()
levels = widgets.level_picker(inp.table_key(wk.HIERARCHY_LEVELS))  # new widget per table
widgets.sidebar_status(status_slot)
if not levels:
    st.warning("Choose at least one geography level.")
    st.stop()
data = widgets.require_count_data()
h = data.hierarchy
widgets.summed_rows_note(data, bundled=session.ensure_dataset()["sample"] is not None)
totals = data.leaf_counts.sum(axis=1)

summary = h.summary(totals).rename(columns={
    "level_name": "level name", "units": "units", "min": "smallest unit",
    "median": "median unit", "max": "largest unit", "empty_units": "empty units"})
st.subheader("Units per level")
st.dataframe(summary, hide_index=True, width="stretch",
             column_config={c: st.column_config.NumberColumn(format="localized")
                            for c in ("units", "smallest unit", "median unit", "largest unit",
                                      "empty units")})
small = int((h.aggregate(totals)[h.level_slice(h.depth)] < 100).sum())
st.caption(f"{small:,} of {h.n_leaves:,} units at the finest level have fewer than 100 people: "
           "their released counts will carry the largest relative error.")
st.subheader("The tree (area = population)")
names = widgets.all_display_names(data)
root = widgets.treemap_root(h, names, inp.table_key(wk.TREEMAP_ROOT) + "/" + "/".join(levels),
                            TREEMAP_NODES)
st.plotly_chart(hierarchy_treemap(h, h.aggregate(totals), root=root, labels=names,
                                  max_nodes=TREEMAP_NODES), width="stretch", key=wk.TREEMAP)
widgets.next_page("pages/3_Mechanism_and_budget.py", "Next: choose a mechanism and a budget")

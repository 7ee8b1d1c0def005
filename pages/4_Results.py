"""Results: run the release; true, noisy, released or error on one map (a click apart); drill
down; true vs released; error metrics by level and population size; a searchable table."""

import time

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.map_figures import choropleth
from hierdp_core.metric_names import friendly_table, label, name
from hierdp_core.metrics import METRICS, error_metrics
from hierdp_core.ui import map_layers, session, widgets
from hierdp_core.ui import release as rel
from hierdp_core.ui import split as split_ui
from hierdp_core.ui.geo import label as geometry_label
from hierdp_core.viz import (
    metric_by_bin,
    metric_by_level,
    plotly_config,
    true_vs_released_scatter,
)

status_slot = widgets.page_header("Results", "What the release looks like next to the truth "
                                             "(the truth is shown here for evaluation only; it "
                                             "is never exported as a release).")
data = widgets.require_count_data()
h = data.hierarchy
s = session.settings(h.n_levels)
ds = session.ensure_dataset()

run_cols = st.columns([2, 2, 1])
with run_cols[0]:
    mode = st.radio("Randomness", ["Exploration (seeded, reproducible)",
                                   "Release (OS entropy, OpenDP samplers)"], key="rand_mode")
with run_cols[1]:
    seed = st.number_input("Seed", min_value=0, value=0, step=1, key="seed",
                           disabled=not mode.startswith("Exploration"))
with run_cols[2]:
    st.write("")
    run = st.button("Run release", type="primary", key="run_release")
budget_text = (f"ε = {s['epsilon']:g}" if s["definition"] == "pure-dp" else f"ρ = {s['rho']:g}")
st.caption(f"Mechanism **{s['mechanism']}**, {budget_text}, split "
           + split_ui.describe_shares(h, session.shares_of(s))
           + ". Change them on the Mechanism & budget page.")

release = session.current_release()
if run or release is None:
    with st.status("Running the release…", expanded=False) as status:
        started = time.perf_counter()
        try:
            release = session.run_release(data, s, int(seed) if mode.startswith("Exploration")
                                               else None)
        except Exception as exc:  # shown as a message, never a traceback
            status.update(label="The release failed", state="error")
            widgets.friendly_error(exc)
            st.stop()
        elapsed = time.perf_counter() - started
        status.update(label=f"Released {h.n_nodes:,} units in {elapsed:.2f} s", state="complete")
    widgets.sidebar_status(status_slot)
rel.verdict_box(release, data.declared_structure)

truth = data.node_counts()
metrics_key = ("metrics", rel.release_token(release))
if st.session_state.get(session.METRICS_KEY) != metrics_key:
    st.session_state[session.METRICS] = error_metrics(
        h, truth, release.values, categories=data.categories if data.has_categories else None)
    st.session_state[session.METRICS_KEY] = metrics_key
metrics = st.session_state[session.METRICS]

# ---- what to show -----------------------------------------------------------------------
pick = st.columns([1, 2, 1])
with pick[0]:
    level = st.selectbox("Level", list(range(1, h.n_levels)), index=h.n_levels - 2,
                         format_func=lambda lv: f"{h.level_names[lv]} ({h.level_size(lv):,})",
                         key="res_level")
names = widgets.node_display_names(data, level)
sl = h.level_slice(level)
with pick[1]:
    parent_names = widgets.node_display_names(data, level - 1) if level > 1 else np.array(["all"])
    options = ["all"] + (list(range(h.level_size(level - 1))) if level > 1 else [])
    default = 0 if h.level_size(level) <= 4000 or level == 1 else 1
    within = st.selectbox("Drill down: show the units inside", options, index=default,
                          format_func=lambda o: f"all of {h.level_names[0]}" if o == "all"
                          else f"{parent_names[o]}", key="res_within")
with pick[2]:
    cat_options = ["total"] + (list(data.categories) if data.has_categories else [])
    category = st.selectbox("Category", cat_options, key="res_category")

if within == "all":
    nodes = np.arange(sl.start, sl.stop)
else:
    parent = h.level_offsets[level - 1] + within
    nodes = h.children(parent)


def column(values: np.ndarray) -> np.ndarray:
    v = values[nodes]
    return v.sum(axis=1) if category == "total" else v[:, data.categories.index(category)]


true_v, noisy_v, rel_v = column(truth), column(release.noisy), column(release.values)
error = rel_v - true_v
local = nodes - sl.start
codes = np.asarray(h.codes[level]).astype(str)[local]
shown_names = names[local]

# ---- map --------------------------------------------------------------------------------
source = map_layers.map_sources(ds["sample"], h).get(level)
geojson = map_layers.map_geojson(*source, overview=within == "all") if source else None
if geojson is None:
    st.info("No map for this level (no bundled boundaries match its codes); see the charts "
            "below.")
else:
    if ds["sample"] is None:
        st.caption(f"Boundaries: {geometry_label(source[0])}, level {source[1]} (chosen on the Data "
                   "page).")
    maps = {"True": true_v, "Noisy (measured)": noisy_v, "Released": rel_v,
            "Error (released − true)": error}
    shown = st.segmented_control("Map", list(maps), default="Released", required=True,
                                 key="res_map", help="The true, noisy and released counts "
                                 "share one colour scale; the error map is centred at 0.")
    diverging = shown.startswith("Error")
    finite = np.concatenate([true_v, rel_v, noisy_v[np.isfinite(noisy_v)]])
    fig = choropleth(geojson, codes, maps[shown], title=shown, names=shown_names,
                     colorbar_title="error" if diverging else "people", diverging=diverging,
                     log_scale=not diverging,
                     value_range=None if diverging else (0.0, float(max(finite.max(), 1.0))),
                     height=520, projection=map_layers.map_projection(source[0])
                     if within == "all" else "mercator")  # albers usa cannot zoom to a unit
    st.plotly_chart(fig, width="stretch", key="res_map_figure", config=plotly_config())

# ---- charts and metrics -----------------------------------------------------------------
metric = st.selectbox("Metric", [m for m in METRICS if m != "consistency_violations"],
                      format_func=name, key="res_metric")
st.caption(label(metric))
tab_level, tab_bin, tab_scatter = st.tabs(
    ["Error by level", f"Error by population size ({h.level_names[level]})",
     "True vs released"], key="res_chart", on_change="rerun")  # only the open one is drawn
if tab_level.open:
    tab_level.plotly_chart(metric_by_level(metrics, metric), width="stretch", key="by_level")
if tab_bin.open:
    tab_bin.plotly_chart(metric_by_bin(metrics, metric, level), width="stretch", key="by_bin")
if tab_scatter.open:
    tab_scatter.plotly_chart(true_vs_released_scatter(true_v, rel_v, names=shown_names,
                                                      level_name=h.level_names[level]),
                             width="stretch", key="scatter")

st.subheader("Error metrics by level")
overall = metrics[metrics["bin"] == "all"].drop(columns=["bin"]).infer_objects()
st.dataframe(**friendly_table(overall), width="stretch")
st.caption("Hover a column name for its definition; an empty cell means the metric does not "
           "apply (e.g. no true zeros for the ghost rate).")

st.subheader("Every unit")
query = st.text_input("Search by name or code", key="res_search")
table = pd.DataFrame({"node_id": h.node_ids()[nodes], "name": shown_names, "true": true_v,
                      "noisy": noisy_v, "released": rel_v, "error": error})
if query:
    mask = (table["name"].astype(str).str.contains(query, case=False, regex=False)
            | table["node_id"].astype(str).str.contains(query, case=False, regex=False))
    table = table[mask]
st.dataframe(**friendly_table(table), width="stretch", height=320)
st.caption(f"{len(table):,} units. Noisy values are the raw measurements before consistency.")
widgets.next_page("pages/5_Trade-offs.py", "Next: explore the privacy-utility trade-off")

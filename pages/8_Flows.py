"""Flows: origin/destination counts released at every level of the geography with InfTDA
and its baselines; a flow map, O/D matrices, the error and false discoveries by level, an
epsilon sweep and the export."""

import time

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core import dashboard as ui
from hierdp_core.errors import HierdpError
from hierdp_core.experiments import summarise
from hierdp_core.export import manifest_bytes, release_table_bytes
from hierdp_core.flows.experiments import flow_sweep
from hierdp_core.flows.figures import flow_map, metrics_by_level, od_matrix
from hierdp_core.flows.metrics import aligned_level, flow_metrics
from hierdp_core.geo import level_geojson
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.viz import plotly_config, sweep_figure

DELTAS = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)

ui.page_header("Flows", "Trips between areas (origin → destination) released at every level "
                        "of the geography: state to state, state to airport, airport to "
                        "airport, all adding up, with the number of trips kept exact.")
data, coords = ui.flow_data()
geo = data.geography
infos = {i.name: i for i in list_mechanisms("flows")}
st.caption(f"Bundled sample: {data.n:,} US domestic flights of 2008 between "
           f"{geo.level_size(2):,} airports in {geo.level_size(1)} states "
           f"({data.origin.size:,} airport pairs; npm `vega-datasets`, Bureau of "
           "Transportation Statistics). One flight = one record; neighbours: one record "
           "changed (bounded DP, the total is public) unless chosen otherwise.")

left, right = st.columns([3, 2])
with left:
    name = ui.mechanism_picker(infos, ui.FLOW_DEFAULT_MECHANISM, "fl_mechanism")
    names = list(infos)
    info = infos[name]
    st.markdown(f"Privacy: {info.neighbouring}.")
    params = {}
    for p in info.parameters:
        if p.type == "choice":
            params[p.name] = st.radio(p.name.replace("_", " ").capitalize(), p.choices,
                                      horizontal=True, help=p.help, key=f"fl_{name}_{p.name}")
with right:
    epsilon = st.select_slider("Total ε (log scale)", options=list(ui.EPSILON_GRID),
                               value=1.0, key="fl_epsilon")
    delta = st.select_slider("δ", options=list(DELTAS), value=1e-8, key="fl_delta",
                             format_func=lambda d: f"{d:.0e}")
    topdown = "neighbouring" in params
    split = st.radio("Budget over tree levels", ["uniform", "geometric"], horizontal=True,
                     key="fl_split", disabled=not topdown,
                     help="geometric: finer levels (more, smaller cells) get more budget, "
                          "rho_l proportional to b^(-2/3 (T - l))")
    seed = st.number_input("Seed (exploration)", min_value=0, value=0, step=1, key="fl_seed")
    run = st.button("Run release", type="primary", key="fl_run")

key = (name, epsilon, delta, split if topdown else None, tuple(sorted(params.items())),
       int(seed))
state = st.session_state.get(ui.FLOW_RELEASE)
if run or state is None or state[0] != key:
    started = time.perf_counter()
    try:
        release = get_mechanism(name).release(
            data, PrivacyBudget.approx(epsilon, delta), split=split if topdown else None,
            source=NoiseSource(seed=int(seed)), **params)
    except HierdpError as exc:
        st.error(f"The release failed: {exc}")
        st.stop()
    state = (key, release, flow_metrics(data, release), time.perf_counter() - started)
    st.session_state[ui.FLOW_RELEASE] = state
_, release, metrics, seconds = state

privacy = release.privacy
summary = (f"Released {sum(lv.size for lv in release.levels):,} non-zero O/D pairs over "
           f"{data.depth + 1} tree levels in {seconds:.2f} s. ")
if privacy.get("definition") == "zcdp":
    summary += (f"ρ = {privacy['rho']:.5g} (zCDP), i.e. (ε = "
                f"{privacy['epsilon_tight']:.3g}, δ = {delta:.0e})-DP. ")
else:
    summary += f"(ε = {privacy['epsilon']:g}, δ = {delta:.0e})-DP. "
if release.invariants:
    summary += "Published exactly: " + ", ".join(release.invariants) + "."
st.success(summary)
with st.expander("Budget and noise per tree level (a-priori, no data)"):
    ledger = release.ledger[["level", "level_name", "share", "budget", "noise", "noise_sd"]]
    st.dataframe(ledger.rename(columns={"level_name": "level name", "budget": "rho or ε",
                                        "noise_sd": "noise sd"}),
                 hide_index=True, width="stretch")
    if release.diagnostics:
        st.dataframe(pd.DataFrame(release.diagnostics).rename(columns={
            "parents": "released parents", "noised": "children noised",
            "released": "children released non-zero"}), hide_index=True, width="stretch")
        st.caption("Only the children of released non-zero parents are noised; a child "
                   "released as 0 is pruned with its whole subtree.")

st.subheader("Error by tree level")
st.caption("Evaluation only (uses the true flows; not a DP release). Level 0 is the total; "
           "odd levels are cross-level tables (origin state → destination airport).")
c1, c2 = st.columns([3, 2])
with c1:
    st.dataframe(metrics.rename(columns={
        "level_name": "origin>destination", "max_abs_error": "max |error|", "mae": "MAE",
        "rmse": "RMSE", "fdr": "FDR %", "fnr": "FNR %", "cpc": "CPC",
        "released_nonzero": "released > 0", "true_nonzero": "true > 0"}).round(3),
        hide_index=True, width="stretch")
    st.caption("MAE and RMSE are over all possible pairs of the level. FDR: share of released "
               "non-zero pairs that are truly 0 (false positives); FNR: share of true "
               "non-zero pairs released as 0. CPC: common part of commuters (1 = perfect).")
with c2:
    st.plotly_chart(metrics_by_level(metrics), width="stretch", key="fl_levels")

st.subheader("Flow map")
m1, m2, m3 = st.columns([2, 2, 3])
with m1:
    map_level = st.selectbox("Level", [2, 4], format_func=lambda lv: data.level_names[lv],
                             key="fl_map_level")
with m2:
    shown = st.radio("Show", ["released", "true (evaluation only)"], horizontal=True,
                     key="fl_map_show")
with m3:
    top = st.slider("Largest flows shown", 20, 1000, 200, step=20, key="fl_map_top")
geo_level = data.pair_levels(map_level)[0]
area_coords = coords[geo.level_names[geo_level]]
if shown == "released":
    pairs = release.level_frame(map_level)
    lo, ld = data.pair_levels(map_level)
    true_keys = data.level_table(map_level)[0]
    lv = release.levels[map_level]
    false_positive = ~np.isin(lv.keys(data.level_width(ld)), true_keys)
    title = f"Released flows, {data.level_names[map_level]} (ε = {epsilon:g})"
else:
    keys, counts = data.level_table(map_level)
    o, d = np.divmod(keys, data.level_width(data.pair_levels(map_level)[1]))
    pairs = pd.DataFrame({"origin_id": data.area_ids(geo_level)[o],
                          "destination_id": data.area_ids(geo_level)[d], "value": counts})
    false_positive = None
    title = f"True flows, {data.level_names[map_level]} (evaluation only)"
states_fc = level_geojson(ui.FLOW_SAMPLE_GEOMETRY, "state")
base = (ui.map_geojson(ui.FLOW_SAMPLE_GEOMETRY, "state"),
        [f["id"] for f in states_fc["features"]]) if states_fc else None
st.plotly_chart(flow_map(pairs, area_coords, title=title, top=top,
                         false_positive=false_positive, base=base),
                width="stretch", key="fl_map", config=plotly_config())

st.subheader("State-to-state O/D matrices")
states = sorted(data.area_ids(1))
truth, released, _ = aligned_level(data, release, 2)
keys = np.union1d(data.level_table(2)[0], release.levels[2].keys(data.level_width(1)))
o, d = np.divmod(keys, data.level_width(1))
ids = data.area_ids(1)
frame = pd.DataFrame({"origin_id": ids[o], "destination_id": ids[d]})
h1, h2, h3 = st.columns(3)
for col, values, title, signed, k in [
        (h1, truth, "True (evaluation only)", False, "fl_true"),
        (h2, released, f"Released ({name})", False, "fl_rel"),
        (h3, released - truth, "Error: released − true", True, "fl_err")]:
    with col:
        st.plotly_chart(od_matrix(frame.assign(value=values), states, title=title,
                                  signed=signed, height=460), width="stretch", key=k)

st.divider()
chosen, eps_grid, trials, metric, clicked = ui.sweep_controls(
    "fl", names, ui.FLOW_SWEEP_DEFAULT, [0.1, 1.0, 10.0],
    {"max_abs_error": "max |error|", "fdr": "false discovery rate %",
     "fnr": "false negative rate %", "mae": "MAE"})
if clicked:
    ui.run_sweep(ui.FLOW_SWEEP, lambda progress: flow_sweep(
        data, chosen, eps_grid, trials, delta=delta, max_runs=90, progress=progress))
runs = st.session_state.get(ui.FLOW_SWEEP)
if runs is not None and len(runs):
    sweep_level = st.selectbox("Level shown", list(data.level_names), index=data.depth,
                               key="fl_sw_level")
    st.plotly_chart(sweep_figure(summarise(runs, metric), metric=metric,
                                 level_name=sweep_level, log_y=metric != "fdr"),
                    width="stretch", key="fl_sweep_fig")

st.divider()
st.subheader("Export")
e1, e2 = st.columns(2)
with e1:
    st.download_button("Release table (CSV)", release_table_bytes(release, "csv"),
                       file_name="flows_release.csv", mime="text/csv", key="fl_dl_csv")
with e2:
    st.download_button("Manifest (JSON)", manifest_bytes(release, input_spec={
        "query": "flows", "origin_levels": ["o_state", "o_airport"],
        "destination_levels": ["d_state", "d_airport"], "count_column": "flights"}),
        file_name="manifest.json", mime="application/json", key="fl_dl_manifest")
st.caption("One row per released non-zero node of the O/D tree: node_id ORIGIN>DESTINATION, "
           "parent_id, origin_id, destination_id, value. Pairs not listed are 0.")

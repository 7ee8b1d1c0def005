"""Flows: origin/destination counts released at every level of the geography with InfTDA
and its baselines; the budget and noise per tree level, the error and false discoveries by
level, a flow map, O/D matrices, an epsilon sweep and the export."""


from functools import partial

import pandas as pd
import streamlit as st

from hierdp_core.figure_parts import plotly_config
from hierdp_core.flows.experiments import flow_sweep
from hierdp_core.flows.figures import (
    EVALUATION,
    flow_map,
    flow_sweep_figure,
    level_pairs,
    metrics_by_level,
    od_matrix,
)
from hierdp_core.flows.metrics import flow_metrics
from hierdp_core.geo.maps import level_geojson
from hierdp_core.intervals import uncalibrated_warning
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.mechanism_names import titled
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.metric_names import friendly_table
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ui import map_layers, query_config, samples, session, widgets
from hierdp_core.ui import release as rel
from hierdp_core.ui import sources as sources
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.explain_panel import explain_panel
from hierdp_core.ui.ledger import page_charge
from hierdp_core.ui.query_config import FLOW_DELTAS

SPLITS = {"uniform": "uniform", "geometric": "geometric (finer levels get more)"}
MATRIX_MAX_AREAS = 300  # larger O/D heat maps are unreadable and slow
SAMPLE_SPEC = {"query": "flows", "origin_levels": ["o_state", "o_airport"],
               "destination_levels": ["d_state", "d_airport"], "count_column": "flights"}


widgets.page_header("Flows", "Trips between areas (origin → destination) released at every level "
                             "of the geography: state to state, state to airport, airport to "
                             "airport, all adding up, with the number of trips kept exact.")
upload = sources.choose_source(wk.FL, "bundled US flights (airports)", "flows")
if upload is None:
    data, data_key, spec, counted = samples.flow_data(), "sample", SAMPLE_SPEC, "flights"
    geo = data.geography
    st.caption(f"Bundled sample: {data.n:,} US domestic flights of 2008 between "
               f"{geo.level_size(2):,} airports in {geo.level_size(1)} states and territories "
               f"({data.origin.size:,} airport pairs; npm `vega-datasets` 3.2.1, Bureau of "
               "Transportation Statistics, US government work). One flight = one record; the "
               "O/D tree has levels total, total → state, state → state, state → airport, "
               "airport → airport (Boninsegna & Silvestri's InfTDA).")
else:
    data, data_key, spec = sources.flows_from_upload(upload)
    geo, counted = data.geography, "trips"
    st.caption(f"{upload['name']}: {data.n:,} trips between {geo.level_size(geo.depth):,} "
               f"areas ({data.origin.size:,} pairs with trips); the O/D tree has levels "
               + ", ".join(n.replace(">", " → ") for n in data.level_names) + ".")
widgets.summed_rows_note(data, bundled=upload is None)
view = sources.on_data(session.FLOW_DATA_KEY, upload, data_key,
                       (session.FLOW_RELEASE, session.FLOW_SWEEP))
rel.structure_note(data.declared_structure)
infos = {i.name: i for i in list_mechanisms("flows")}

left, right = st.columns([3, 2])
with left:
    name = widgets.mechanism_picker(infos, samples.FLOW_DEFAULT_MECHANISM, wk.FL_MECHANISM)
    names = list(infos)
    params = widgets.parameter_widgets(infos[name], wk.FL)
    if name == "tda-linf-milp":
        st.caption("Solves one integer program per released parent: 10-20 s on this sample.")
with right:
    epsilon = st.select_slider("Total ε (log scale)", options=list(session.EPSILON_GRID),
                               value=1.0, key=wk.FL_EPSILON)
    delta = st.selectbox("δ", FLOW_DELTAS, index=FLOW_DELTAS.index(samples.FLOW_DEFAULT_DELTA),
                         key=wk.FL_DELTA,
                         format_func=lambda d: f"{d:.0e}")
    topdown = "neighbouring" in params  # the top-down mechanisms spend a budget per level
    split = st.radio("Budget over tree levels", list(SPLITS), format_func=SPLITS.get,
                     horizontal=True, key=wk.FL_SPLIT, disabled=not topdown,
                     help="Top-down mechanisms only. geometric: level l gets a share "
                          "proportional to b^(-2/3 (T - l)), b the mean branching (the "
                          "authors' split).")
    seed = st.number_input("Seed (exploration)", min_value=0, value=0, step=1, key=wk.FL_SEED)
    run = st.button("Run release", type="primary", key=wk.FL_RUN)

cfg = query_config.page_config(wk.FL, spec, upload, name, params, epsilon, seed,
                               declared=data.declared_structure, delta=delta,
                               split=split if topdown else None,
                               merged_rows=data.merged_rows)  # the release's settings
key = (cfg.mechanism, cfg.epsilon, cfg.delta, cfg.split, tuple(sorted(cfg.params.items())),
       cfg.seed)
release_with = partial(session.release_for, data, cfg)  # noise source -> release

explain_panel(data, cfg.mechanism, cfg.budget(), cfg.split, expanded=False, **cfg.params)
query_config.config_box(wk.FL, cfg, upload)
release, metrics, seconds = rel.cached_release(
    session.FLOW_RELEASE, key, release_with, lambda r: flow_metrics(data, r), cfg.seed,
    run=run, what=f"with {name}", data=data, mechanism=cfg.mechanism)
rel.verdict_box(release, data.declared_structure)

# ---- privacy: what was spent, the noise per level, the invariants ------------------------
privacy = release.privacy
if privacy.get("definition") == "zcdp":
    spent = (f"**ρ = {privacy['rho']:.4g}** (zCDP), which implies (ε = "
             f"{privacy['epsilon_tight']:.4g}, δ = {delta:.0e})-DP")
else:
    spent = f"**(ε = {privacy['epsilon']:g}, δ = {delta:.0e})-DP**"
exact = ("Published exactly: " + ", ".join(release.invariants) + "."
         if release.invariants else "No count is published exactly.")
st.success(f"Released {sum(lv.size for lv in release.levels):,} non-zero O/D pairs over "
           f"{data.depth + 1} tree levels (computed in {seconds:.2f} s on the server) with {spent}. {exact}  \n"
           f"Neighbouring datasets: {privacy['neighbouring']}.")
ledger = release.ledger
unit = "ρ" if privacy.get("definition") == "zcdp" else "ε"
b1, b2 = st.columns([3, 2])
with b1:
    shown = ledger[["level", "level_name", "share", "budget", "noise_sd",
                    "expected_abs_error"]].round({"share": 3})
    for column in ("noise_sd", "expected_abs_error"):  # a level not measured has no noise
        shown[column] = shown[column].map(lambda v: "not measured" if pd.isna(v)
                                          else f"{v:.2f}")
    st.dataframe(**friendly_table(shown, level_name="origin → destination", budget=unit),
                 width="stretch")
    noises = sorted(set(ledger["noise"]) - {"not measured"})
    st.caption(f"Budget and noise per tree level, a priori (no data involved): "
               f"{' and '.join(noises)} noise; the levels compose to the total {unit}; "
               "share 0 = not measured.")
with b2:
    if release.diagnostics:
        st.dataframe(pd.DataFrame(release.diagnostics).rename(columns={
            "level": "Depth", "parents": "parents > 0", "noised": "children noised",
            "released": "released > 0"}), hide_index=True, width="stretch")
        st.caption("Only the children of parents released non-zero are noised; a pair "
                   "released as 0 is pruned with its whole subtree.")

# ---- error by tree level (reads the truth) -----------------------------------------------
st.subheader("Error by tree level")
st.caption(f"True values: {EVALUATION}. MAE and RMSE are over all possible pairs of the "
           "level. FDR: % of pairs released > 0 that are truly 0 (false positives); FNR: % "
           "of truly non-zero pairs released as 0; CPC: common part of commuters (1 = "
           "perfect).")
st.dataframe(**friendly_table(metrics.round(3), level_name="origin → destination"),
             width="stretch")
st.plotly_chart(metrics_by_level(metrics, counted), width="stretch", key=wk.FL_LEVELS)

# ---- flow map ----------------------------------------------------------------------------
st.subheader("Flow map")
if upload is None:  # the airports' public positions, states drawn underneath
    states_fc = level_geojson(samples.FLOW_SAMPLE_GEOMETRY, "state")
    base = (map_layers.map_geojson(samples.FLOW_SAMPLE_GEOMETRY, "state", overview=True),
            [f["id"] for f in states_fc["features"]]) if states_fc else None
    positions = samples.flow_coordinates()
    layers = {1: (positions["state"], base, "albers usa"),
              geo.depth: (positions["airport"], base, "albers usa")}
else:  # bundled centroids, when the table's codes match bundled boundaries
    layers = map_layers.matched_flow_layers(geo)
if not layers:
    st.info("No flow map: no bundled boundaries match the codes of your table's areas, so "
            "their positions are not known.")
else:
    m1, m2, m3 = st.columns([2, 3, 3])
    with m1:
        map_level = st.selectbox(
            "Level", [2 * lv for lv in layers], key=wk.FL_MAP_LEVEL + view,
            format_func=lambda lv: f"{data.level_names[lv]} ({geo.level_size(lv // 2):,} areas)")
    with m2:
        shown = st.radio("Show", ["released", "true", "false positives"], horizontal=True,
                         key=wk.FL_MAP_SHOW,
                         help="true and false positives read the true flows: " + EVALUATION)
    with m3:
        top = st.slider("Largest flows shown", 20, 1000, 200, step=20, key=wk.FL_MAP_TOP)
    pairs = level_pairs(data, release, map_level)
    false_positive = (pairs["released"] > 0) & (pairs["true"] == 0)
    level_text = data.level_names[map_level].replace(">", " → ")
    if shown == "true":
        pairs, false_positive = pairs.assign(value=pairs["true"]), None
        title = f"True {counted}, {level_text} ({EVALUATION})"
    else:
        if shown == "false positives":
            pairs, false_positive = pairs[false_positive], false_positive[false_positive]
        pairs = pairs.assign(value=pairs["released"])
        title = f"Released {counted}, {level_text} ({name}, ε = {epsilon:g})"
        if shown == "false positives":
            title = f"False positives: released > 0, truly 0 ({name}; {EVALUATION})"
    coords, base, projection = layers[map_level // 2]
    st.plotly_chart(flow_map(pairs, coords, title=title, top=top,
                             false_positive=false_positive, base=base, unit=counted,
                             projection=projection),
                    width="stretch", key=wk.FL_MAP, config=plotly_config())
    st.caption("Lines join area positions from the public airport list (a state at the mean "
               "position of its airports), hover a line's middle for its value. Flows within "
               "an area and those of Puerto Rico and the Virgin Islands (off the Albers USA "
               "projection) are not drawn; a line to Alaska or Hawaii leaves the mainland "
               "towards its true position and reappears in the inset." if upload is None else
               "Lines join the centroids of the bundled boundaries your codes match, hover a "
               "line's middle for its value. Flows within an area are not drawn.")

# ---- O/D matrices ------------------------------------------------------------------------
first = data.level_names[2].split(">")[0]
st.subheader(f"O/D matrices, {first} → {first}")
states = sorted(data.area_ids(1))
if len(states) > MATRIX_MAX_AREAS:
    st.info(f"{len(states):,} areas at the first level: too many for a readable matrix "
            f"(at most {MATRIX_MAX_AREAS}).")
else:
    matrix = level_pairs(data, release, 2)
    h1, h2, h3 = st.columns(3)
    for col, values, title, signed, k in [
            (h1, matrix["true"], f"True ({EVALUATION})", False, wk.FL_TRUE),
            (h2, matrix["released"], f"Released ({name}, ε = {epsilon:g})", False, wk.FL_REL),
            (h3, matrix["released"] - matrix["true"], "Error: released − true", True,
             wk.FL_ERR)]:
        with col:
            st.plotly_chart(od_matrix(matrix.assign(value=values), states, title=title,
                                      signed=signed, height=470, unit=counted),
                            width="stretch",
                            key=k)
    st.caption(f"Rows: origin {first}, columns: destination {first}, sorted by code; colours "
               f"on a log scale, hover for the number of {counted}.")

# ---- epsilon sweep -----------------------------------------------------------------------
st.divider()
chosen, eps_grid, trials, metric, clicked = widgets.sweep_controls(
    wk.FL, names, samples.FLOW_SWEEP_DEFAULT, [0.1, 1.0, 10.0],
    {"max_abs_error": "max |error|", "rmse": "RMSE", "mae": "MAE"})
st.caption(f"Each mechanism with its default options and the uniform split, at (ε, δ = "
           f"{delta:.0e}); trial t uses seed t for every mechanism. Right panel: false "
           "discovery rate.")
if clicked:
    widgets.run_sweep(session.FLOW_SWEEP, lambda progress: flow_sweep(
        data, chosen, eps_grid, trials, delta=delta, max_runs=90, progress=progress),
        (wk.FL, data_key, tuple(chosen), tuple(eps_grid), trials, delta),
        shared=upload is None)
runs = st.session_state.get(session.FLOW_SWEEP)
if runs is not None and len(runs):
    sweep_level = st.selectbox("Level shown", list(data.level_names), index=data.depth,
                               key=wk.FL_SWEEP_LEVEL)
    st.plotly_chart(flow_sweep_figure(titled(runs), level_name=sweep_level, metric=metric,
                                      unit=counted),
                    width="stretch", key=wk.FL_SWEEP_FIG)
    seconds_per = runs.groupby("mechanism", sort=False)["seconds"].mean()
    st.caption("Seconds per release: " + ", ".join(f"{mechanism_title(m)} {s:.2f}"
                                                   for m, s in seconds_per.items()) + ".")
    widgets.sweep_timing(session.FLOW_SWEEP)

# ---- export ------------------------------------------------------------------------------
if caveat := uncalibrated_warning(release, mechanism_title(release.mechanism)):
    st.warning(caveat)
rel.query_downloads(release, wk.FL, "flows", spec, sum(lv.size for lv in release.levels),
                    structure_declared=data.declared_structure,
                    redraw=lambda: release_with(NoiseSource(secure=True)),
                    ledger=page_charge(cfg.budget(), cfg.mechanism, upload,
                                       "us-flights", data),
                    rows_of=lambda r: sum(lv.size for lv in r.levels),
                    seconds=seconds)
st.caption("One row per released non-zero node of the O/D tree: node_id ORIGIN>DESTINATION, "
           "parent_id, origin_id, destination_id, value, lower, upper; pairs not listed "
           "are 0. The "
           "manifest holds no true value.")

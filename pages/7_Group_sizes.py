"""Group sizes: how many households of each size in every region, released with the
group-size mechanisms; histograms of one region, a map of the per-region error, the
per-level error table and an epsilon sweep."""


from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.experiments import summarise
from hierdp_core.figure_parts import plotly_config
from hierdp_core.groupsizes.data import emd, group_size_metrics
from hierdp_core.groupsizes.declared_groups import unkept_declaration
from hierdp_core.groupsizes.experiments import group_size_sweep
from hierdp_core.groupsizes.figures import size_histogram_figure
from hierdp_core.intervals import uncalibrated_warning
from hierdp_core.map_figures import choropleth
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.mechanism_names import titled
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.metric_names import friendly_table
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.reading_order import listed
from hierdp_core.sweep_figures import sweep_figure
from hierdp_core.ui import (
    gs_upload,
    map_layers,
    query_config,
    samples,
    session,
    sweep_jobs,
    widgets,
)
from hierdp_core.ui import release as rel
from hierdp_core.ui import sources as sources
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.downloads import EAGER_EXPORT_ROWS
from hierdp_core.ui.explain_panel import explain_panel
from hierdp_core.ui.ledger import page_charge

widgets.page_header("Group sizes", "How many households of each size live in every region: size "
                                   "histograms that add up over the hierarchy, with the number "
                                   "of households kept exact.")
MODEL = ("Who lives with whom is what is protected (neighbours: one person added to or "
         "removed from a household).")
upload = sources.choose_source(wk.GS, "bundled households (US counties)", "group-sizes")
if upload is None:
    data, data_key, geometry = samples.group_size_data(), "sample", samples.GS_SAMPLE_GEOMETRY
    spec = {"query": "group-sizes", "sample": "us-households", "levels": ["state", "county"],
            "size_column": "size", "count_column": "households", "max_size": data.max_size,
            "min_size": data.min_size, "groups": samples.group_size_groups_record()}
    h = data.hierarchy
    st.caption(f"Bundled sample: synthetic households on the real 2005 populations of "
               f"{h.level_size(h.depth):,} US counties ({data.total_groups:,} households, "
               f"sizes {data.min_size}..{data.max_size:,}; `hierdp_core.groupsizes.samples`). "
               "Its numbers of households are **declared**: the sample's generator fixes "
               "every county's households from its public population before it draws any "
               "size, and publishes them as the sample's groups file "
               f"({samples.GS_SAMPLE_GROUPS_FILE}, written by `hierdp sample us-households`)"
               ", as a public register of dwellings would. " + MODEL)
else:
    data, data_key, spec = gs_upload.group_sizes_from_upload(upload)
    geometry, h = None, data.hierarchy
    counted = (f"declared by the groups file {spec['groups']['file']}" if data.groups_declared
               else "**counted from your table**, not declared: a release that keeps them "
                    "exactly is exploration only (upload a groups file to publish them)")
    st.caption(f"{upload['name']}: {data.total_groups:,} households in "
               f"{h.level_size(h.depth):,} regions, sizes {data.min_size}..{data.max_size:,} "
               f"(larger households counted as {data.max_size:,}, smaller as "
               f"{data.min_size}). Numbers of households: {counted}. " + MODEL)
widgets.summed_rows_note(data, bundled=upload is None)
view = sources.on_data(session.GS_DATA_KEY, upload, data_key,
                       (session.GS_RELEASE, session.GS_SWEEP))
rel.structure_note(data.declared_structure)


SWEEP_EPSILONS = (0.1, 0.5, 1.0)


def sweep_job(mechanisms, epsilons, trials: int):
    """The key (data and settings) and the computation of a group-size sweep."""
    return ((wk.GS, data_key, tuple(mechanisms), tuple(epsilons), trials),
            lambda progress: group_size_sweep(data, mechanisms, epsilons, trials, max_runs=60,
                                              progress=progress))


if upload is None:  # the default sweep of the sample starts in the background at once
    sweep_jobs.prefetch(*sweep_job(samples.GS_SWEEP_DEFAULT, SWEEP_EPSILONS,
                                   widgets.SWEEP_TRIALS))
infos = {i.name: i for i in list_mechanisms("group-sizes")}

left, right = st.columns([3, 2])
with left:
    name = widgets.mechanism_picker(infos, samples.GS_DEFAULT_MECHANISM, wk.GS_MECHANISM)
    names = list(infos)
    params = widgets.parameter_widgets(infos[name], wk.GS, shown=())
with right:
    epsilon = st.select_slider("Total ε (log scale)", options=list(session.EPSILON_GRID),
                               value=1.0, key=wk.GS_EPSILON)
    seed = st.number_input("Seed (exploration)", min_value=0, value=0, step=1, key=wk.GS_SEED)
    run = st.button("Run release", type="primary", key=wk.GS_RUN)

cfg = query_config.page_config(wk.GS, spec, upload, name, params, epsilon, seed,
                               declared=data.declared_structure,
                               merged_rows=data.merged_rows)  # the release's settings
key = (cfg.mechanism, tuple(sorted(cfg.params.items())), cfg.epsilon, cfg.seed)
release_with = partial(session.release_for, data, cfg)  # noise source -> release

explain_panel(data, cfg.mechanism, cfg.budget(), expanded=False, **cfg.params)
query_config.config_box(wk.GS, cfg, upload)
release, metrics, seconds = rel.cached_release(
    session.GS_RELEASE, key, release_with, lambda r: group_size_metrics(data, r.values),
    cfg.seed, run=run, what="group sizes", data=data, mechanism=cfg.mechanism)
st.caption(f"Released {h.n_nodes:,} regions x {len(data.categories):,} sizes, computed in "
           f"{seconds:.2f} s on the server.")
rel.verdict_box(release, data.declared_structure)
if data.groups_declared and (unkept := unkept_declaration(release.parameters)):
    st.info(f"Note: {unkept}. Choose groups = exact above to keep every region's declared "
            "number (published exactly, as the groups file declares).")
truth = data.node_counts()

st.subheader("Error by level")
st.dataframe(**friendly_table(metrics.round({"emd_mean": 1})), width="stretch")
st.caption("L1: sum over regions and sizes of |released − true| households (the measure of "
           "Fioretto et al.). EMD (earth mover's distance): people that would have to move "
           "between households to turn the released histogram into the true one (Kuo et al.).")

pick = st.columns([1, 2])
with pick[0]:
    level = st.selectbox("Level", list(range(1, h.n_levels)), index=h.n_levels - 2,
                         format_func=lambda lv: f"{h.level_names[lv]} ({h.level_size(lv):,})",
                         key=wk.GS_LEVEL + view)
sl = h.level_slice(level)
names_level = widgets.node_display_names(data, level)
with pick[1]:
    region = st.selectbox("Region", (listed(h, np.arange(sl.start, sl.stop)) - sl.start).tolist(),
                          format_func=lambda i: names_level[i], key=wk.GS_REGION + view)

c1, c2 = st.columns(2)
with c1:
    node = sl.start + region
    st.plotly_chart(size_histogram_figure(truth[node], release.noisy[node], release.values[node],
                                          region=str(names_level[region]),
                                          min_size=data.min_size),
                    width="stretch", key=wk.GS_HIST)
with c2:
    source = map_layers.map_sources(geometry, h).get(level)
    geojson = map_layers.map_geojson(*source, overview=True) if source else None
    node_emd = emd(truth[sl], release.values[sl]).astype(float)
    if geojson is None:
        st.info("No map for this level." if geometry else
                "No map: no bundled boundaries match the codes of this level.")
    else:
        codes = np.asarray(h.codes[level]).astype(str)
        st.plotly_chart(choropleth(geojson, codes, node_emd, title="Earth mover's distance "
                                   "per region (released vs true)", colorbar_title="people",
                                   names=names_level, log_scale=True, height=420,
                                   projection=map_layers.map_projection(source[0])),
                        width="stretch", key=wk.GS_MAP, config=plotly_config())

st.divider()
chosen, eps_grid, trials, metric, clicked = widgets.sweep_controls(
    wk.GS, names, samples.GS_SWEEP_DEFAULT, SWEEP_EPSILONS,
    {"l1": "L1 error", "emd_mean": "mean EMD per region"})
st.caption("Trial t uses seed t for every mechanism. With the bundled sample, the sweep of "
           "these default settings starts in the background when the page opens; every "
           "sweep is kept, so running it again is instant.")
if clicked:
    key, compute = sweep_job(chosen, eps_grid, trials)
    widgets.run_sweep(session.GS_SWEEP, compute, key, shared=upload is None)
runs = st.session_state.get(session.GS_SWEEP)
if runs is not None and len(runs):
    sweep_level = st.selectbox("Level shown", list(h.level_names), index=h.n_levels - 1,
                               key=wk.GS_SWEEP_LEVEL)
    st.plotly_chart(sweep_figure(titled(summarise(runs, metric)), metric=metric,
                                 level_name=sweep_level), width="stretch", key=wk.GS_SWEEP_FIG)
    seconds_per = runs.groupby("mechanism", sort=False)["seconds"].mean()
    st.dataframe(**friendly_table(pd.DataFrame({"mechanism":
                                                seconds_per.index.map(mechanism_title),
                                                "seconds": seconds_per.round(3).to_numpy()})))
    widgets.sweep_timing(session.GS_SWEEP)

# ---- export -------------------------------------------------------------------------------
rows = h.n_nodes * len(data.categories)
if caveat := uncalibrated_warning(release, mechanism_title(release.mechanism)):
    st.warning(caveat)
rel.query_downloads(release, wk.GS, "group_sizes", spec, rows,
                    structure_declared=data.declared_structure,
                    redraw=lambda: release_with(NoiseSource(secure=True)),
                    ledger=page_charge(cfg.budget(), cfg.mechanism, upload,
                                       "us-households", data),
                    seconds=seconds)
st.caption(f"One row per region and size ({rows:,} rows): level, level_name, node_id, "
           "parent_id, label, category (the size), value (the number of households), "
           "lower, upper"
           + (", made when you click" if rows > EAGER_EXPORT_ROWS else "")
           + ". The manifest holds no true value.")

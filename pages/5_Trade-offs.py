"""Trade-offs: sweep epsilon x mechanisms x repeated trials and plot a metric with
uncertainty bands; compare two budget splits."""

import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.experiments import compare_splits, summarise, sweep
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.mechanism_names import titled
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.metric_names import label, name
from hierdp_core.metrics import METRICS as ALL_METRICS
from hierdp_core.sweep_figures import split_comparison_figure, sweep_figure
from hierdp_core.sweep_panels import relative_sweep_figure, sweep_panels
from hierdp_core.ui import session, widgets
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import widget_keys as wk

MAX_RUNS = 300
METRICS = [m for m in ALL_METRICS if m != "consistency_violations"]

widgets.page_header("Trade-offs", "How error falls as the budget grows, for several mechanisms, "
                                  "with the spread over repeated runs.")
data = widgets.require_count_data()
h = data.hierarchy

names = [i.name for i in list_mechanisms("counts")]
c1, c2 = st.columns([1.15, 1])  # every default chip whole at 1280 px
with c1:
    mechanisms = st.multiselect("Mechanisms", names, default=[n for n in ("raw-geometric",
                                "least-squares", "topdown") if n in names], key=wk.SW_MECHS,
                                format_func=mechanism_title)
with c2:
    epsilons = st.multiselect("ε values", list(session.EPSILON_GRID),
                              default=[0.1, 0.5, 1.0, 2.0, 5.0], key=wk.SW_EPS)
c3, c4, c5 = st.columns([1, 2, 2])
with c3:
    trials = st.slider("Trials each", 1, 20, 5, key=wk.SW_TRIALS)
with c4:
    metric = st.selectbox("Metric", METRICS, format_func=name, key=wk.SW_METRIC,
                          help="Hover a chart's points for the exact definition.")
    st.caption(label(metric))
with c5:
    level = st.selectbox("Level", list(range(h.n_levels)), index=h.n_levels - 1,
                         format_func=lambda lv: h.level_names[lv], key=wk.SW_LEVEL)
runs = len(mechanisms) * len(epsilons) * trials
st.caption(f"{runs} runs (at most {MAX_RUNS}); the split is the one set on the Mechanism & "
           "budget page. zCDP-only mechanisms get ρ = ε²/2, the zCDP level that ε-DP implies.")

if st.button("Run the sweep", type="primary", disabled=not mechanisms or not epsilons,
             key=wk.SW_RUN):
    bar = st.progress(0.0, text="Sweeping…")
    try:
        result = sweep(data, mechanisms, sorted(epsilons), trials,
                       split=session.settings(h.n_levels)["weights"], max_runs=MAX_RUNS,
                       progress=lambda done, total: bar.progress(done / total,
                                                                 text=f"{done}/{total} runs"))
    except HierdpError as exc:
        st.error(str(exc))
    else:
        st.session_state[session.SWEEP] = result
    bar.empty()

runs_df = st.session_state.get(session.SWEEP)
if runs_df is not None and len(runs_df):
    summary = titled(summarise(runs_df, metric))  # the mechanisms' plain names
    swept = list(dict.fromkeys(summary["mechanism"]))
    views = {"panels": "One panel per mechanism", "overlaid": "Overlaid",
             **({"relative": f"Relative to {swept[0]}"} if len(swept) > 1 else {})}
    view = st.segmented_control("Draw", list(views), format_func=views.get, default="panels",
                                required=True, key=wk.SWEEP_VIEW,
                                help="Close mechanisms lie on top of each other when "
                                     "overlaid: one panel each, or each one's error "
                                     "divided by the first mechanism's, tells them apart.")
    shown = {"level_name": h.level_names[level], "metric": metric}
    log_y = metric not in ("malpe", "tvd_accuracy")
    figure = (sweep_panels(summary, log_y=log_y, **shown) if view == "panels" else
              relative_sweep_figure(summary, baseline=swept[0], **shown)
              if view == "relative" else sweep_figure(summary, log_y=log_y, **shown))
    st.plotly_chart(figure, width="stretch", key=wk.SWEEP_FIG)
    st.caption("Lines: mean over trials; bands: 5th to 95th percentile.")

st.divider()
st.subheader("Compare two budget splits")
presets = [p for p in split_ui.PRESETS if p != split_ui.CUSTOM]
s1, s2, s3, s4 = st.columns(4)
with s1:
    split_a = st.selectbox("Split A", presets, index=0, format_func=split_ui.PRESETS.get,
                           key=wk.CMP_A)
with s2:
    split_b = st.selectbox("Split B", presets, index=1, format_func=split_ui.PRESETS.get,
                           key=wk.CMP_B)
with s3:
    cmp_mech = st.selectbox("Mechanism", names, index=names.index("topdown"), key=wk.CMP_MECH,
                            format_func=mechanism_title)
with s4:
    cmp_eps = st.select_slider("ε", list(session.EPSILON_GRID), value=1.0, key=wk.CMP_EPS)
if st.button("Compare", key=wk.CMP_RUN):
    try:
        st.session_state[session.SPLIT_COMPARE] = compare_splits(
            data, cmp_mech, cmp_eps, {split_a: split_a, split_b: split_b}, trials=trials)
    except HierdpError as exc:
        st.error(str(exc))
cmp = st.session_state.get(session.SPLIT_COMPARE)
if cmp is not None and len(cmp):
    st.plotly_chart(split_comparison_figure(summarise(cmp, metric, by="split"), metric=metric),
                    width="stretch", key=wk.CMP_FIG)
    table = (cmp.groupby(["split", "level_name"], sort=False)[metric].mean().unstack(0)
             .reindex(list(h.level_names)))
    st.dataframe(table.rename_axis(name("level_name")), width="stretch")
    st.caption(f"{label(metric)}. Mean per level over the trials.")

"""Mechanism & budget: choose the mechanism, the total budget and its split over levels; see
the noise and expected error per level before running anything."""

import numpy as np
import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.mechanism_names import DEFINITIONS
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.metric_names import friendly_table
from hierdp_core.privacy.budget import rho_to_epsilon
from hierdp_core.ui import budget, session, widgets
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.explain_panel import explain_panel
from hierdp_core.viz import ledger_figure

status_slot = widgets.page_header("Mechanism & budget",
               "How much privacy to spend, where, and what error it costs — known before "
               "running.")
data = widgets.require_count_data()
h = data.hierarchy
s = session.settings(h.n_levels)

infos = {i.name: i for i in list_mechanisms("counts")}
left, right = st.columns([1, 1])
with left:
    st.subheader("Mechanism")
    names = list(infos)
    s["mechanism"] = st.selectbox("Mechanism", names, index=names.index(s["mechanism"])
                                  if s["mechanism"] in names else 0, key=wk.MECH_NAME,
                                  format_func=widgets.mechanism_label(infos))
    info = infos[s["mechanism"]]
    widgets.warn_nonprivate(info)
    st.markdown(f"{info.description}  \n*{info.reference}*")
    badges = [("private" if info.private else "NOT private as published"),
              ("consistent non-negative integers" if info.consistent
               else "not consistent integers")]
    st.caption(" · ".join(badges) + f" · neighbours: {info.neighbouring}")
    params = widgets.parameter_widgets(info, wk.PARAM, s["params"])
    s["params"] = params
    if params.get("root_invariant"):
        st.warning("The root total will be published exactly: it is NOT protected by "
                   "differential privacy.")

with right:
    st.subheader("Privacy budget")
    definitions = list(info.privacy_definitions or (info.privacy,))
    if s["definition"] not in definitions:
        s["definition"] = definitions[0]
    s["definition"] = st.radio("Privacy definition", definitions, horizontal=True,
                               index=definitions.index(s["definition"]),
                               format_func=DEFINITIONS.get, key=wk.DEFINITION)
    budget.total_slider(s)
    if s["definition"] == "zcdp":
        s["delta"] = st.select_slider("δ for the equivalent (ε, δ)", options=[1e-10, 1e-8, 1e-6,
                                                                          1e-5], value=s["delta"],
                                      format_func=lambda d: f"{d:.0e}", key=wk.DELTA)
        st.caption(f"ρ = {s['rho']:g} implies (ε = {rho_to_epsilon(s['rho'], s['delta']):.4g}, "
                   f"δ = {s['delta']:.0e})-DP.")

st.subheader("Split over levels")
split_ui.preset_picker(s, h.n_levels)
split_ui.init_sliders(s)
weight_cols = st.columns(h.n_levels)
weights = []
for level, col in enumerate(weight_cols):
    with col:
        units = h.level_size(level)
        weights.append(split_ui.weight_slider(s, level, f"{h.level_names[level]} ({units:,} "
                                              f"unit{'s' if units != 1 else ''})"))
if sum(weights) <= 0:
    st.error("At least one level needs a non-zero weight.")
    st.stop()
s["weights"] = weights = split_ui.held_weights(weights)
widgets.sidebar_status(status_slot)
st.caption("Weights are normalised, so the total budget stays fixed: shares "
           + split_ui.describe_shares(h, np.asarray(weights) / sum(weights)) + ".")
with st.expander("Optimise the split", icon=":material/tune:", key=wk.SPLIT_GOAL_OPEN,
                 on_change="rerun") as optimiser:
    if optimiser.open:  # computed only when opened
        split_ui.optimiser_section(h, s, session.budget_of(s),
                                   sample=session.ensure_dataset()["sample"],
                                   declared=data.declared_structure)

st.subheader("Before running: the noise on each measured cell")
try:
    ledger = get_mechanism(s["mechanism"]).ledger(data, session.budget_of(s), split=weights,
                                                  **s["params"])
except HierdpError as exc:
    st.error(str(exc))
    st.stop()
st.plotly_chart(ledger_figure(ledger), width="stretch", key=wk.LEDGER_FIG)
show = ledger[["level_name", "share", "budget", "noise", "noise_scale", "expected_abs_error",
               "ci95_abs_error"]]
st.dataframe(**friendly_table(show, digits=3), width="stretch")
st.caption("The noise on each measured cell, before the consistency step; what the released "
           "values' error comes to is under \"In plain words\" below (up to that noise, "
           "and usually less at coarse levels).")

explain_panel(data, s["mechanism"], session.budget_of(s), weights, **s["params"])
widgets.next_page("pages/4_Results.py", "Next: run the release and look at the results")

"""Mechanism & budget: choose the mechanism, the total budget and its split over levels; see
the noise and expected error per level before running anything."""

import numpy as np
import streamlit as st

from hierdp_core import dashboard as ui
from hierdp_core import dashboard_split as split_ui
from hierdp_core.errors import HierdpError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import rho_to_epsilon, split_shares
from hierdp_core.viz import ledger_figure

status_slot = ui.page_header("Mechanism & budget",
               "How much privacy to spend, where, and what error it costs — known before "
               "running.")
data = ui.require_count_data()
h = data.hierarchy
s = ui.settings(h.n_levels)

infos = {i.name: i for i in list_mechanisms("counts")}
left, right = st.columns([1, 1])
with left:
    st.subheader("Mechanism")
    names = list(infos)
    s["mechanism"] = st.selectbox("Mechanism", names, index=names.index(s["mechanism"])
                                  if s["mechanism"] in names else 0, key="mech_name")
    info = infos[s["mechanism"]]
    ui.warn_nonprivate(info)
    st.markdown(f"{info.description}  \n*{info.reference}*")
    badges = [("private" if info.private else "NOT private as published"),
              ("consistent non-negative integers" if info.consistent
               else "not consistent integers")]
    st.caption(" · ".join(badges) + f" · neighbours: {info.neighbouring}")
    params = {}
    for p in info.parameters:
        key = f"param_{info.name}_{p.name}"
        label = p.name.replace("_", " ").capitalize()
        current = s["params"].get(p.name, p.default)
        if p.type == "choice":
            params[p.name] = st.selectbox(label, p.choices, index=list(p.choices).index(current)
                                          if current in p.choices else 0, help=p.help, key=key)
        elif p.type == "bool":
            params[p.name] = st.checkbox(label, value=bool(current), help=p.help, key=key)
        else:
            params[p.name] = st.number_input(label, value=current, help=p.help, key=key)
    s["params"] = params
    if params.get("root_invariant"):
        st.warning("The root total will be published exactly: it is NOT protected by "
                   "differential privacy.")

with right:
    st.subheader("Privacy budget")
    definitions = list(info.privacy_definitions or (info.privacy,))
    labels = {"pure-dp": "ε-differential privacy", "zcdp": "ρ-zero-concentrated DP"}
    if s["definition"] not in definitions:
        s["definition"] = definitions[0]
    s["definition"] = st.radio("Privacy definition", definitions, horizontal=True,
                               index=definitions.index(s["definition"]),
                               format_func=labels.get, key="definition")
    if s["definition"] == "pure-dp":
        s["epsilon"] = st.select_slider("Total ε (log scale; smaller = more private)",
                                        options=list(ui.EPSILON_GRID),
                                        value=s["epsilon"] if s["epsilon"] in ui.EPSILON_GRID
                                        else 1.0, key="epsilon")
    else:
        s["rho"] = st.select_slider("Total ρ (log scale; smaller = more private)",
                                    options=list(ui.RHO_GRID),
                                    value=s["rho"] if s["rho"] in ui.RHO_GRID else 0.5, key="rho")
        s["delta"] = st.select_slider("δ for the equivalent (ε, δ)", options=[1e-10, 1e-8, 1e-6,
                                                                          1e-5], value=s["delta"],
                                      format_func=lambda d: f"{d:.0e}", key="delta")
        st.caption(f"ρ = {s['rho']:g} implies (ε = {rho_to_epsilon(s['rho'], s['delta']):.3g}, "
                   f"δ = {s['delta']:.0e})-DP.")

st.subheader("Split over levels")
presets = {"uniform": "Uniform", "finer": "More to finer levels", "coarser":
           "More to coarser levels", "leaves-only": "All on the finest level"}
cols = st.columns([2, 1])
with cols[0]:
    preset = st.selectbox("Preset (then adjust the weights below)", list(presets),
                          format_func=presets.get, key="split_preset")
with cols[1]:
    st.write("")
    if st.button("Apply preset", key="apply_preset"):
        split_ui.set_split(s, split_shares(h.n_levels, preset))
split_ui.init_sliders(s)
weight_cols = st.columns(h.n_levels)
weights = []
for level, col in enumerate(weight_cols):
    with col:
        units = h.level_size(level)
        weights.append(st.slider(f"{h.level_names[level]} ({units:,} unit"
                                 f"{'s' if units != 1 else ''})",
                                 0.0, 1.0, step=0.01, key=split_ui.slider_key(level)))
if sum(weights) <= 0:
    st.error("At least one level needs a non-zero weight.")
    st.stop()
s["weights"] = weights = split_ui.held_weights(weights)
ui.sidebar_status(status_slot)
st.caption("Weights are normalised, so the total budget stays fixed: shares "
           + split_ui.describe_shares(h, np.asarray(weights) / sum(weights)) + ".")
with st.expander("Optimise the split", icon=":material/tune:", key=split_ui.OPEN,
                 on_change="rerun") as optimiser:
    if optimiser.open:  # computed only when opened
        split_ui.optimiser_section(h, s, ui.budget_of(s), sample=ui.ensure_dataset()["sample"],
                                   declared=data.declared_structure)

st.subheader("Before running: noise and expected error per cell")
try:
    ledger = get_mechanism(s["mechanism"]).ledger(data, ui.budget_of(s), split=weights,
                                                  **s["params"])
except HierdpError as exc:
    st.error(str(exc))
    st.stop()
st.plotly_chart(ledger_figure(ledger), width="stretch", key="ledger_fig")
show = ledger[["level_name", "share", "budget", "noise", "noise_scale", "expected_abs_error",
               "ci95_abs_error"]].rename(columns={
                   "level_name": "level", "budget": "ε or ρ", "noise_scale": "noise scale",
                   "expected_abs_error": "expected |error| per cell",
                   "ci95_abs_error": "95% of errors within ±"})
st.dataframe(show, hide_index=True, width="stretch",
             column_config={"share": st.column_config.NumberColumn(format="percent")})
st.caption("Raw measurement noise per cell; consistency post-processing usually reduces it at "
           "coarse levels.")
ui.next_page("pages/4_Results.py", "Next: run the release and look at the results")

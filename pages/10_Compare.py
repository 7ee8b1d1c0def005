"""Compare: two configurations (mechanism, ε, split, seed) released side by side on the same
data: maps on one colour scale, the difference map, and the error by level."""

import streamlit as st

from hierdp_core import compare as cmp
from hierdp_core.errors import HierdpError
from hierdp_core.figure_parts import plotly_config
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.metric_names import label, name
from hierdp_core.privacy.budget import SPLIT_PRESETS, ZCDP
from hierdp_core.ui import map_layers, session, widgets
from hierdp_core.ui import widget_keys as wk

CURRENT = "current"
METRICS = ["mae", "rmse", "mape", "max_abs_error", "tvd_accuracy", "share_over_10pct"]

widgets.page_header("Compare", "Two configurations released on the same data, side by side "
                               "(seeded exploration noise; the truth is shown for evaluation "
                               "only).")
data = widgets.require_count_data()
h = data.hierarchy
s = session.settings(h.n_levels)
zcdp = s["definition"] == "zcdp"  # then ρ, as on Mechanism & budget, and its mechanisms
infos = {i.name: i for i in list_mechanisms("counts")
         if not zcdp or ZCDP in (i.privacy_definitions or (i.privacy,))}
names = list(infos)
splits = [CURRENT, *SPLIT_PRESETS]
split_labels = {CURRENT: "as on Mechanism & budget", "uniform": "uniform",
                "finer": "more to finer levels", "coarser": "more to coarser levels",
                "leaves-only": "all on the finest level"}

same_seed = st.checkbox("Same seed for both (the difference is then the mechanisms', "
                        "not the noise draw's)", value=True, key=wk.CMP_SAME_SEED)
raw = "raw-discrete-gaussian" if zcdp else "raw-geometric"
first = s["mechanism"] if s["mechanism"] in infos else "topdown"
defaults = {"A": first, "B": raw if first != raw else "least-squares"}
# A's and B's controls row by row (a row per setting), so each lines up with its match
# whatever the length of the mechanisms' descriptions, which come last
heads, mechs, budgets, split_row, seeds, about = (st.columns(2) for _ in range(6))
sides = {}
for col, side in enumerate(cmp.SIDES):
    heads[col].subheader(f"Configuration {side}")
    with mechs[col]:
        mechanism = widgets.mechanism_picker(infos, defaults[side],
                                             key=wk.page_key(wk.CMP_MECH, side),
                                             about=about[col])
    if zcdp:
        rho = budgets[col].select_slider("Total ρ", list(session.RHO_GRID),
                                         key=wk.page_key(wk.CMP_RHO, side), value=s["rho"]
                                         if s["rho"] in session.RHO_GRID else 0.5)
    else:
        eps = budgets[col].select_slider("Total ε", list(session.EPSILON_GRID),
                                         key=wk.page_key(wk.CMP_EPS, side), value=s["epsilon"]
                                         if s["epsilon"] in session.EPSILON_GRID else 1.0)
    split = split_row[col].selectbox("Split over levels", splits,
                                     format_func=split_labels.get,
                                     key=wk.page_key(wk.CMP_SPLIT, side))
    if same_seed and side == "B":
        seed = sides["A"].seed
        seeds[col].caption(f"Seed {seed}: the same as A's.")
    else:
        seed = seeds[col].number_input("Seed", min_value=0, step=1,
                                       key=wk.page_key(wk.CMP_SEED, side))
    sides[side] = cmp.Side(
        mechanism, 0.0 if zcdp else float(eps),
        tuple(s["weights"]) if split == CURRENT else split, seed=int(seed),
        params={k: v for k, v in s["params"].items()
                if k in {p.name for p in infos[mechanism].parameters}},
        rho=float(rho) if zcdp else None, delta=float(s["delta"]) if zcdp else None)

key = (sides["A"], sides["B"], session.settings_key(s))
stored = st.session_state.get(session.COMPARE)
if stored is not None and stored[1].releases[0].hierarchy is not h:  # other data: redo
    stored = None
if st.button("Compare", type="primary", key=wk.CMP_RUN) or stored is None:
    try:
        with st.spinner("Releasing both configurations…"):
            stored = (key, cmp.compare(data, sides["A"], sides["B"]))
    except HierdpError as exc:
        widgets.friendly_error(exc)
        st.stop()
    st.session_state[session.COMPARE] = stored
comparison = stored[1]
if stored[0] != key:
    st.info("The configurations changed: press **Compare** to release them again.")
labels = comparison.labels()

# ---- maps -------------------------------------------------------------------------------
pick = st.columns(2)
with pick[0]:
    level = st.selectbox("Level", list(range(1, h.n_levels)), index=h.n_levels - 2,
                         format_func=lambda lv: f"{h.level_names[lv]} ({h.level_size(lv):,})",
                         key=wk.CMP_LEVEL)
with pick[1]:
    category = st.selectbox("Category", ["total", *(data.categories if data.has_categories
                                                    else [])], key=wk.CMP_CATEGORY)
view = cmp.level_view(comparison, data, level, category)
source = map_layers.map_sources(session.ensure_dataset()["sample"], h).get(level)
if source is None:
    st.info("No map for this level (no bundled boundaries match its codes).")
else:
    names_shown = widgets.node_display_names(data, level)[view["node"] - h.level_offsets[level]]
    figures = cmp.comparison_maps(map_layers.map_geojson(*source, overview=True), view, labels, names=names_shown,
                                  projection=map_layers.map_projection(source[0]))
    # A beside B, their difference under them at full width, each map as wide as its
    # column (colour bars under the maps: at 1280 px a bar beside a half-width map left
    # the map about 150 px wide)
    for column, fig, tag in zip([*st.columns(2), st.container()], figures, ("a", "b", "diff"),
                                strict=True):
        column.plotly_chart(fig, width="stretch", key=wk.page_key(wk.CMP_MAP, tag),
                            config=plotly_config())
    st.caption("A and B share one colour scale; the difference map is centred at 0 (red: "
               "B released more than A).")

# ---- error by level ---------------------------------------------------------------------
st.subheader("Error by level")
metric = st.selectbox("Metric", METRICS, key=wk.CMP_METRIC, format_func=name)
st.plotly_chart(cmp.error_by_level_figure(comparison, metric), width="stretch",
                key=wk.CMP_BY_LEVEL)
st.dataframe(cmp.by_level_table(comparison, metric), hide_index=True, width="stretch")
st.caption(label(metric))

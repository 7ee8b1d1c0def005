"""Results: run the release; true, noisy, released or error on one map (a click apart); drill
down; true vs released; noisy vs consistent vs true per level; error metrics by level and
population size; a searchable table. The ε (or ρ) slider above the map re-releases and
redraws only what the release changes (a fragment), not the page."""

import time

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.data.samples import SAMPLES
from hierdp_core.map_figures import choropleth, nice_ceiling
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.metric_names import friendly_table, label, name
from hierdp_core.metrics import METRICS, error_metrics
from hierdp_core.noisy_view import noisy_vs_released_by_level
from hierdp_core.reading_order import listed
from hierdp_core.ui import budget, map_layers, plotly_view, search, session, widgets
from hierdp_core.ui import config as config_ui
from hierdp_core.ui import coverage as coverage_ui
from hierdp_core.ui import release as rel
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.geo import label as geometry_label
from hierdp_core.viz import (
    metric_by_bin,
    metric_by_level,
    true_vs_released_scatter,
)

MAP_HEIGHT = 450  # px: with the controls above, the whole map in sight at 1280 x 800
status_slot = widgets.page_header("Results", "What the release looks like next to the truth "
                                             "(the truth is shown here for evaluation only; it "
                                             "is never exported as a release).")
data = widgets.require_count_data()
h = data.hierarchy
s = session.settings(h.n_levels)
ds = session.ensure_dataset()

# one line of controls above the pickers and the map: the map's top at 1280 x 800 is in
# sight with the whole map (issue 31); the release's description goes under the map
run_cols = st.columns([2.4, 0.5, 1.2, 1.3], vertical_alignment="center")
config_ui.randomness_widgets(run_cols[0], run_cols[2])  # the session's randomness: the seed
run_cols[1].markdown("Seed")
with run_cols[3]:
    run = st.button("Run release", type="primary", key=wk.RUN_RELEASE)


def release_now():
    """Run the release with the current settings (a spinner if it is slow) and keep its
    wall time to be said under the map; a failure stops the page with a message."""
    started = time.perf_counter()
    with st.spinner("Running the release…"):
        try:
            made = session.run_release(data, config_ui.current_config(), s)
        except Exception as exc:  # shown as a message, never a traceback
            widgets.friendly_error(exc)
            st.stop()
    st.session_state[session.RAN_IN] = time.perf_counter() - started
    return made


def units_shown() -> tuple[int, np.ndarray, str]:
    """The level, its nodes (all, or the children of the unit drilled down to) and the
    category (or 'total') picked above the map, beside the total ε (or ρ) slider."""
    pick = st.columns([1, 1.5, 1, 1.5])
    with pick[0]:
        level = st.selectbox("Level", list(range(1, h.n_levels)), index=h.n_levels - 2,
                             format_func=lambda lv: f"{h.level_names[lv]} ({h.level_size(lv):,})",
                             key=wk.RES_LEVEL)
    with pick[1]:
        parents = widgets.node_display_names(data, level - 1) if level > 1 else None
        above = h.level_slice(level - 1)
        options = ["all"] + ((listed(h, np.arange(above.start, above.stop)) - above.start)
                             .tolist() if level > 1 else [])
        default = 0 if h.level_size(level) <= map_layers.WHOLE_LEVEL_AREAS or level == 1 else 1
        whole = f"all of {SAMPLES[ds['sample']].area}" if ds["sample"] in SAMPLES \
            else f"all {widgets.plural(h.level_names[level])}"
        within = st.selectbox("Drill down: show the units inside", options, index=default,
                              format_func=lambda o: whole if o == "all" else f"{parents[o]}",
                              key=wk.RES_WITHIN)
    with pick[2]:
        category = st.selectbox("Category", ["total"] + (list(data.categories)
                                                         if data.has_categories else []),
                                key=wk.RES_CATEGORY)
    with pick[3]:
        budget.total_slider(s, prefix=wk.RES)
    if within == "all":
        sl = h.level_slice(level)
        return level, listed(h, np.arange(sl.start, sl.stop)), category
    return level, listed(h, h.children(h.level_offsets[level - 1] + within)), category


def release_map(level: int, nodes: np.ndarray, values: dict, title: str, selector_slot) -> None:
    """One map of ``values`` (map name -> value per node: true, noisy, released, error) over
    the boundaries of ``level``, the map picked in ``selector_slot``; ``title`` follows the
    map's name. A level without boundaries gets a note instead."""
    whole_level = len(nodes) == h.level_size(level)
    source = map_layers.map_sources(ds["sample"], h).get(level)
    geojson = map_layers.map_geojson(*source, overview=whole_level) if source else None
    if geojson is None:
        st.info("No map for this level (no bundled boundaries match its codes); see the charts "
                "below.")
        return
    if ds["sample"] is None:
        st.caption(f"Boundaries: {geometry_label(source[0])}, level {source[1]} (chosen on the "
                   "Data page).")
    shown = selector_slot.segmented_control(
        "Map", list(values), default="Released", required=True, key=wk.RES_MAP,
        label_visibility="collapsed")
    diverging = shown.startswith("Error")
    # colour scales ending at round numbers stay put when the slider re-releases
    same_kind = [v for k, v in values.items() if k.startswith("Error") == diverging]
    top = nice_ceiling(max(float(np.nanmax(np.abs(v), initial=1.0)) for v in same_kind))
    local = nodes - h.level_offsets[level]
    fig = choropleth(geojson, np.asarray(h.codes[level]).astype(str)[local], values[shown],
                     title=f"{shown}, {title}",
                     names=widgets.node_display_names(data, level)[local],
                     colorbar_title="error" if diverging else "people", diverging=diverging,
                     log_scale=not diverging,
                     value_range=(-top, top) if diverging else (0.0, top),
                     height=MAP_HEIGHT, projection=map_layers.map_projection(source[0])
                     if whole_level else "mercator")  # albers usa cannot zoom to a unit
    plotly_view.show(fig, key=wk.RES_MAP_FIGURE)


def charts_and_tables(release, level: int, nodes: np.ndarray, values: dict) -> None:
    """The error charts (only the open tab is drawn), the metrics by level and the table of
    every unit shown (sent only when opened)."""
    metrics_key = ("metrics", rel.release_token(release))
    if st.session_state.get(session.METRICS_KEY) != metrics_key:
        st.session_state[session.METRICS] = error_metrics(
            h, data.node_counts(), release.values,
            categories=data.categories if data.has_categories else None)
        st.session_state[session.METRICS_KEY] = metrics_key
    metrics = st.session_state[session.METRICS]
    names = widgets.node_display_names(data, level)[nodes - h.level_offsets[level]]
    true_v, rel_v = values["True"], values["Released"]

    metric = st.selectbox("Metric", [m for m in METRICS if m != "consistency_violations"],
                          format_func=name, key=wk.RES_METRIC)
    st.caption(label(metric))
    tab_level, tab_bin, tab_scatter, tab_noisy = st.tabs(
        ["Error by level", f"Error by population size ({h.level_names[level]})",
         "True vs released", "Noisy vs consistent vs true, per level"], key=wk.RES_CHART,
        on_change="rerun")  # only the open one is drawn
    if tab_level.open:
        with tab_level:
            plotly_view.show(metric_by_level(metrics, metric), key=wk.BY_LEVEL)
    if tab_bin.open:
        with tab_bin:
            plotly_view.show(metric_by_bin(metrics, metric, level), key=wk.BY_BIN)
    if tab_scatter.open:
        with tab_scatter:
            plotly_view.show(true_vs_released_scatter(true_v, rel_v, names=names,
                                                      level_name=h.level_names[level]),
                             key=wk.SCATTER)
    if tab_noisy.open:
        with tab_noisy:
            plotly_view.show(noisy_vs_released_by_level(h, data.node_counts(), release.noisy,
                                                        release.values), key=wk.NOISY_LEVELS)
            st.caption("What consistency does: the raw noisy measurements may be negative, "
                       "fractional and disagree between levels; the released values add up. "
                       "Both are compared with the truth here (evaluation only).")

    st.subheader("Error metrics by level")
    overall = metrics[metrics["bin"] == "all"].drop(columns=["bin"]).infer_objects()
    st.dataframe(**friendly_table(overall, digits=3), width="stretch")
    st.caption("Hover a column name for its definition; an empty cell means the metric does not "
               "apply (e.g. no true zeros for the ghost rate).")
    coverage_ui.coverage_section(release, data.node_counts())

    with st.expander("Every unit: true, noisy and released counts, searchable",
                     icon=":material/table_rows:", key=wk.RES_UNITS,
                     on_change="rerun") as every_unit:
        if every_unit.open:  # sent only when opened (3,141 rows for the US counties)
            within = "" if len(nodes) == h.level_size(level) else " (of the units shown)"
            query = st.text_input(f"Search by name or code{within}", key=wk.RES_SEARCH)
            table = pd.DataFrame({"node_id": h.node_ids()[nodes], "name": names,
                                  "true": true_v, "noisy": values["Noisy (measured)"],
                                  "released": rel_v, "error": values["Error (released − true)"]})
            if query:
                table = table[search.matching(table, ["name", "node_id"], query)]
            st.dataframe(**friendly_table(table), width="stretch", height=320)
            st.caption(f"{len(table):,} unit{'s' if len(table) != 1 else ''}. Noisy values "
                       "are the raw measurements before consistency.")


@st.fragment(key=wk.RES_VIEW)
def results_view() -> None:
    """What the release changes, rerun alone when the ε (or ρ) slider above the map moves
    (or a picker beside it): the release, its verdict, the map, the charts and the tables."""
    widgets.use_chosen_palette()  # a rerun of the fragment alone draws in the page's look
    level, nodes, category = units_shown()
    budget_text = (f"ε = {s['epsilon']:g}" if s["definition"] == "pure-dp"
                   else f"ρ = {s['rho']:g}")
    map_area, about = st.container(), st.container()  # the map first, what it shows under it
    with about:
        release = session.current_release() or release_now()
        ran_in = st.session_state.pop(session.RAN_IN, None)
        st.caption(f"**{mechanism_title(s['mechanism'])}**, {budget_text}, split "
                   + split_ui.describe_shares(h, session.shares_of(s))
                   + " (change them on the Mechanism & budget page). The true, noisy and "
                     "released maps share one colour scale; the error map is centred at 0."
                   + ("" if ran_in is None else f"  \n:material/check: Released "
                      f"{h.n_nodes:,} units, computed in {ran_in:.2f} s on the server"))

    def column(values: np.ndarray) -> np.ndarray:
        v = values[nodes]
        return v.sum(axis=1) if category == "total" else v[:, data.categories.index(category)]

    true_v, rel_v = column(data.node_counts()), column(release.values)
    values = {"True": true_v, "Noisy (measured)": column(release.noisy), "Released": rel_v,
              "Error (released − true)": rel_v - true_v}
    with map_area:
        selector, badge = st.columns([3, 2], vertical_alignment="center")
        with badge:
            rel.verdict_badge(release, data.declared_structure)  # the full verdict below
        release_map(level, nodes, values, f"{mechanism_title(s['mechanism'])}, {budget_text}",
                    selector)
    rel.verdict_box(release, data.declared_structure)
    charts_and_tables(release, level, nodes, values)


if run:
    release_now()
results_view()
widgets.sidebar_status(status_slot, budget_on_page=True)  # never from the fragment
widgets.next_page("pages/5_Trade-offs.py", "Next: explore the privacy-utility trade-off")

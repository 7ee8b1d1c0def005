"""hierdp dashboard: home page. Layout only; every computation lives in hierdp_core."""

import pandas as pd
import streamlit as st

from hierdp_core import __version__, palette
from hierdp_core.data.samples import SAMPLES
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.ui import map_layers, plotly_view, session, widgets
from hierdp_core.ui import widget_keys as wk

widgets.page_header("hierdp", f"Hierarchical counts under differential privacy · version "
                              f"{__version__}")
st.markdown(
    "Publish counts at every level of a geography (nation › state › county, region › "
    "province › municipality) so that **the tables add up**, **no cell is negative or "
    "fractional**, and **no individual can be singled out**. Load records or aggregated "
    "counts, choose the hierarchy, a mechanism and a privacy budget with its split over "
    "levels, compare noisy and consistent counts on maps, explore the privacy-utility "
    "trade-off, and export the release with a manifest."
)


def geography_preview(sample) -> None:
    """A small map of a bundled sample's top level, each unit shaded by how many finest-level
    units it holds (public structure, no count of people), drawn by the server (painted with
    the page); none without boundaries."""
    svg = map_layers.top_level_preview(sample.name, palette.current())
    if svg is not None:
        st.markdown(svg, unsafe_allow_html=True)


st.subheader("Start in one click")
cols = st.columns(len(SAMPLES))
for col, sample in zip(cols, SAMPLES.values(), strict=True):
    with col:
        st.markdown(f"**{sample.title}**")
        # the button before the description: all three above the fold at 1280 x 800
        if st.button("Start with this sample", key=wk.start_key(sample.name), type="primary"):
            session.load_sample_into_state(sample.name)
            st.switch_page("pages/4_Results.py")
        st.markdown(sample.description)
        st.caption(f"Levels: {' › '.join(sample.levels)} · licence: {sample.licence}")
        geography_preview(sample)

st.subheader("The steps")
STEPS = {  # what each page of `widgets.PAGES` is for
    "pages/1_Data.py": "pick a sample or upload a file; assign column roles",
    "pages/2_Hierarchy.py": "order the levels; units per level",
    "pages/3_Mechanism_and_budget.py":
        "mechanism, ε or ρ, split over levels, expected error before running",
    "pages/4_Results.py": "a map of true, noisy, released or error; metrics",
    "pages/5_Trade-offs.py": "error against ε for several mechanisms",
    "pages/6_Export.py": "release CSV / Parquet / GeoJSON with its manifest",
    "pages/7_Group_sizes.py": "households of each size per region",
    "pages/8_Flows.py": "origin/destination trips (InfTDA) on US airport flights",
    "pages/9_Ranges.py": "age ranges by region and province (DAWA)",
    "pages/10_Compare.py": "two configurations side by side on the same data",
}
for path, label, _ in widgets.PAGES:
    if path in STEPS:
        widgets.next_page(path, f"{label}: {STEPS[path]}")

st.subheader("Mechanisms")
st.dataframe(pd.DataFrame([{
    "name": i.name, "description": i.description,
    "privacy": ", ".join(i.privacy_definitions or (i.privacy,)),
    "private": "yes" if i.private else "NO (published variant)",
    "consistent integers": "yes" if i.consistent else "no", "reference": i.reference,
} for i in list_mechanisms()]), hide_index=True, width="stretch")
# plotly.js and the US county boundaries, fetched once Home is painted: Results draws at once
plotly_view.preload(key=wk.HOME_PRELOAD, prefetch=map_layers.first_results_maps())

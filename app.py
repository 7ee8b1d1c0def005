"""hierdp dashboard: home page. Layout only; every computation lives in hierdp_core."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from hierdp_core import __version__
from hierdp_core.data.samples import SAMPLES, load_sample
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.metrics import error_metrics
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table

st.set_page_config(page_title="hierdp", page_icon="🗺️", layout="wide")


@st.cache_data(show_spinner=False)
def sample_counts(name: str):
    sample = SAMPLES[name]
    return count_data_from_table(load_sample(name), sample.levels,
                                 count_column=sample.count_column)


st.title("hierdp")
st.caption(f"Hierarchical counts under differential privacy · version {__version__}")
st.markdown(
    "Publish counts at every level of a geography (nation > state > county > ...) so that "
    "**the tables add up**, **no cell is negative or fractional**, and **no individual can be "
    "singled out**. Load records or aggregated counts, choose the hierarchy, a mechanism and "
    "a privacy budget, compare noisy and consistent counts, and export the release with a "
    "manifest."
)

left, right = st.columns([1, 2])
with left:
    st.subheader("Try it on a sample")
    name = st.selectbox("Sample", list(SAMPLES), format_func=lambda n: SAMPLES[n].title)
    mechanism = st.selectbox("Mechanism", [i.name for i in list_mechanisms("counts")],
                             index=[i.name for i in list_mechanisms("counts")].index("topdown"))
    epsilon = st.select_slider("Privacy budget ε (smaller is more private)",
                               options=[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
                               value=1.0)
    st.caption(SAMPLES[name].description)
with right:
    data = sample_counts(name)
    mech = get_mechanism(mechanism)
    budget = (PrivacyBudget.zcdp(epsilon**2 / 2) if mech.info.privacy == "zcdp"
              else PrivacyBudget.pure(epsilon))
    release = mech.release(data, budget, source=NoiseSource(seed=0))
    st.subheader(f"{mechanism}: {mech.info.description}")
    metrics = error_metrics(data.hierarchy, data.node_counts(), release.values)
    table = metrics[metrics["bin"] == "all"][
        ["level_name", "units", "mae", "mape", "max_abs_error", "consistency_violations"]]
    st.markdown("**Error by level** (against the truth: for exploration, not for publication)")
    st.dataframe(table.rename(columns={"level_name": "level", "mae": "mean |error|",
                                       "mape": "mean % error", "max_abs_error": "max |error|",
                                       "consistency_violations": "parents ≠ Σ children"}),
                 hide_index=True, use_container_width=True)
    st.markdown("**Budget ledger** (known before running)")
    st.dataframe(pd.DataFrame(release.ledger)[
        ["level_name", "share", "budget", "noise", "noise_scale", "expected_abs_error"]],
        hide_index=True, use_container_width=True)

st.divider()
st.markdown(
    "**Mechanisms:** " + ", ".join(f"`{i.name}`" for i in list_mechanisms())
    + ". The command line `hierdp` does the same from scripts: `hierdp release --help`."
)

"""The bundled samples of the dashboard, loaded once and shared read-only (``st.cache_data`` /
``st.cache_resource``), and the defaults of the group-size, flow and range pages."""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from hierdp_core.cli.inputs import DEFAULT_MIN_SIZE
from hierdp_core.data.samples import ITALY_MAX_AGE, load_sample

GS_SAMPLE_GEOMETRY = "us-counties"  # the household sample lives on the US county tree


FLOW_SAMPLE_GEOMETRY = "us-counties"  # state boundaries under the airport flow map


GS_DEFAULT_MECHANISM = "gs-kuo-hierarchical"


GS_SWEEP_DEFAULT = ("gs-topdown", "gs-kuo-hierarchical")


FLOW_DEFAULT_MECHANISM = "inftda"


FLOW_DEFAULT_DELTA = 1e-8  # of the Flows page's choices (`query_config.FLOW_DELTAS`)


FLOW_SWEEP_DEFAULT = ("inftda", "tda-l2", "stability-histogram")


FLOW_OFF_MAP_STATES = ("PR", "VI")  # no place on the Albers USA projection


RANGE_SAMPLE = "italy-municipalities"


RANGE_DEFAULT_MECHANISM = "dawa"


RANGE_DEFAULT_LEVELS = ("region", "province")  # the municipalities are a checkbox away


RANGE_BASELINES = ("dawa", "greedy-h", "identity", "privelet", "h2")


RANGE_SWEEP_DEFAULT = ("dawa", "greedy-h", "identity")


@st.cache_resource(show_spinner="Loading the sample…", max_entries=4)
def sample_table(name: str) -> pd.DataFrame:
    """The bundled sample ``name``, one frame shared by every session (read it, never
    change it in place: pandas' copy-on-write keeps derived frames apart), so "Start with
    this sample" copies nothing (Italy: 1.6 million rows, about 200 MB a copy)."""
    return load_sample(name)


@st.cache_data(show_spinner=False, max_entries=4)
def units_below_top_level(name: str) -> pd.DataFrame:
    """The public geography of the bundled sample ``name`` in one row per unit of its top
    level (index: code): ``name`` (the code where the geography has no names) and
    ``units``, its number of finest-level units."""
    from hierdp_core.data.sample_files import SAMPLE_FILES
    from hierdp_core.data.samples import SAMPLES

    levels = SAMPLES[name].levels
    table = SAMPLE_FILES[name].geography()
    top = levels[0]
    names = table[f"{top}_name"] if f"{top}_name" in table.columns else table[top]
    return (table.assign(name=names.astype(str)).groupby(top)
            .agg(name=("name", "first"), units=(levels[-1], "nunique")))


@st.cache_resource(show_spinner=False, max_entries=16)
def sample_geography(sample: str, levels: tuple[str, ...]):
    """The declared public geography of a bundled sample over ``levels`` (shared,
    read-only), with the unit names its geography has (``<level>_name`` columns)."""
    from hierdp_core.data import sample_files

    return sample_files.sample_geography(sample, levels,
                                         {level: f"{level}_name" for level in levels})


GS_SAMPLE_GROUPS_FILE = "us-households-groups.csv"  # as `hierdp sample` names it


@st.cache_resource(show_spinner=False, max_entries=1)
def group_size_groups_record() -> dict:
    """The manifest record of the household sample's groups file (``{"file", "sha256"}``,
    the bytes `hierdp sample us-households` writes), as the command line's
    ``input.groups``."""
    from hierdp_core.groupsizes.samples import us_household_groups

    raw = us_household_groups().to_csv(index=False).encode()
    return {"file": GS_SAMPLE_GROUPS_FILE, "sha256": hashlib.sha256(raw).hexdigest()}


@st.cache_resource(show_spinner="Building the household sample…", max_entries=1)
def group_size_data():
    """The bundled household sample as GroupSizeData over its declared public geography
    (the US counties), sizes from `DEFAULT_MIN_SIZE` (as ``hierdp release`` of the
    sample's file), top-code and numbers of households: its groups table, which the
    sample's generator fixes before it draws the sizes (`us_household_groups`; shared,
    read-only)."""
    from hierdp_core.groupsizes.data import group_size_data_from_histograms
    from hierdp_core.groupsizes.declared_groups import declared_groups_from_table
    from hierdp_core.groupsizes.samples import us_household_groups, us_households

    levels = ("state", "county")
    geography = sample_geography("us-households", levels)
    record = group_size_groups_record()
    groups = declared_groups_from_table(us_household_groups(), geography, levels,
                                        source=record["file"], sha256=record["sha256"])
    return group_size_data_from_histograms(
        us_households(), list(levels), "size", "households", max_size=1000,
        min_size=DEFAULT_MIN_SIZE, geography=geography, group_counts=groups)


@st.cache_resource(show_spinner="Building the airport flights sample…", max_entries=1)
def flow_data():
    """The bundled US airport flights as FlowData (nation > state > airport; shared,
    read-only)."""
    from hierdp_core.flows.data import flow_data_from_table
    from hierdp_core.flows.samples import load_airport_flows

    return flow_data_from_table(load_airport_flows(), ["o_state", "o_airport"],
                                ["d_state", "d_airport"], "flights",
                                geography=sample_geography("us-flights", ("state", "airport")))


@st.cache_resource(show_spinner="Building the age histograms…", max_entries=2)
def range_data(levels: tuple[str, ...]):
    """The Italian residents by single year of age (0..100) as RangeData over ``levels`` (a
    prefix of region, province, municipality), with the prefix workload (shared, read-only;
    swap the workload with ``with_workload``)."""
    from hierdp_core.queries.ranges import range_data_from_table

    return range_data_from_table(sample_table(RANGE_SAMPLE), list(levels), "age",
                                 count_column="residents", domain=(0, ITALY_MAX_AGE),
                                 geography=sample_geography(RANGE_SAMPLE, tuple(levels)))


@st.cache_data(show_spinner=False, max_entries=1)
def flow_coordinates() -> dict[str, pd.DataFrame]:
    """Public positions of the flow sample's areas for maps, per geography level (index =
    area code; latitude, longitude, label): airports where they are, states at the plain
    mean position of their airports. Only the public airport list is used, no flight
    count; areas outside the Albers USA projection (Puerto Rico, Virgin Islands) are left
    out, so their flows are not drawn."""
    from hierdp_core.flows.samples import load_airports

    airports = load_airports()
    airports = airports[~airports["state"].isin(FLOW_OFF_MAP_STATES)].set_index("airport")
    states = airports.groupby("state")[["latitude", "longitude"]].mean()
    airports["label"] = (airports.index + " (" + airports["name"].astype(str) + ", "
                         + airports["city"].astype(str) + ")")
    return {"state": states.assign(label=states.index),
            "airport": airports[["latitude", "longitude", "label"]]}


def warm_query_pages() -> None:
    """Compute what the first visitor of Group sizes, Flows and Range queries waits for
    with the bundled samples: each sample's data and the flow map's positions (kept for
    the whole server, as the pages share them) and one release of each page's default
    mechanism, whose modules and tables it loads (the release itself is not kept: each
    session makes its own)."""
    from hierdp_core.mechanisms.base import get_mechanism
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.samplers import NoiseSource

    flow_coordinates()
    pure, approx = PrivacyBudget.pure(1.0), PrivacyBudget.approx(1.0, FLOW_DEFAULT_DELTA)
    for data, mechanism, budget in (
            (group_size_data(), GS_DEFAULT_MECHANISM, pure),
            (flow_data(), FLOW_DEFAULT_MECHANISM, approx),
            (range_data(RANGE_DEFAULT_LEVELS), RANGE_DEFAULT_MECHANISM, pure)):
        get_mechanism(mechanism).release(data, budget, source=NoiseSource(seed=0))

"""Session state and shared widgets of the Streamlit dashboard (the pages stay thin).

Session-state keys (all under ``st.session_state``):

``hd_dataset``   dict: ``name`` (shown), ``sample`` (sample name, or None for an upload),
                 ``table`` (the loaded DataFrame, confidential), ``version`` (int, bumped on
                 load and reshape), ``loaded`` (the version it was loaded as)
``hd_roles``     dict: ``levels`` (coarse to fine), ``count_column`` (None = microdata),
                 ``category_columns``, ``local_codes``; for an upload also ``missing``
                 (empty count cells: 'error' | 'zero' | 'drop') and ``ragged`` (units may
                 skip a level)
``hd_input``     an upload's shape (`dashboard_input`): ``wide`` (the columns melted into
                 long form; empty = long as uploaded) and ``name`` (their category column);
                 the upload as read is then ``hd_dataset['raw']``
``hd_settings``  dict: ``mechanism``, ``params`` (dict), ``definition`` ('pure-dp' | 'zcdp'),
                 ``epsilon``, ``rho``, ``delta``, ``weights`` (one per level, root first)
``hd_release``   the latest `Release` (privatised values only) and ``hd_release_key``, the
                 settings it was made with
``hd_sweep``     the latest trade-off sweep (DataFrame of runs)
``hd_report``    (content token of the release, HTML) of the latest confidential evaluation
                 report (Export page)
``hd_gs_release`` group sizes: (settings key, Release, metrics) of the latest release;
                 ``hd_gs_sweep`` its epsilon sweep (DataFrame of runs)
``hd_flow_release`` flows: (settings key, FlowRelease, metrics, seconds) of the latest
                 release; ``hd_flow_sweep`` its epsilon sweep (DataFrame of runs)
``hd_rg_release`` range queries: (settings key, RangeRelease, metrics, seconds) of the latest
                 release; ``hd_rg_compare`` (settings key, runs) of the comparison with the
                 baselines; ``hd_rg_sweep`` its epsilon sweep (DataFrame of runs)

``hd_gs_data_key``, ``hd_flow_data_key``, ``hd_rg_data_key`` the data the latest group-size,
                 flow and range results were made on (new data drops them);
                 ``hd_src_cache`` the query data built from an upload (`dashboard_sources`)
``hd_structure`` an upload's declared public structure (geography file, category values) or
                 the choice to read it from the table (`dashboard_structure`)
``hd_publishable`` the publishable (secure) releases, per page, of the exploration release
                 they redraw (`dashboard_release`)
``hd_split_held`` the exact weights of the split last set by a preset or the split
                 optimiser, used while the sliders show them (`dashboard_split`)
``hd_palette``   the colour palette chosen in the sidebar (`hierdp_core.palette`)

Everything expensive is cached: the CountData per (dataset version, roles) in session state,
sample tables and geometries with ``st.cache_data`` / ``lru_cache``.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
from PIL import Image

from hierdp_core import dashboard_structure as structure
from hierdp_core import palette
from hierdp_core.data.loaders import default_max_cells
from hierdp_core.data.reshape import preparation_note, prepare
from hierdp_core.data.sample_files import sample_category_values
from hierdp_core.data.samples import ITALY_MAX_AGE, SAMPLES, load_sample
from hierdp_core.errors import HierdpError
from hierdp_core.geo import level_geojson
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget, split_shares
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData, count_data_from_table
from hierdp_core.verdict import not_private_reason

DATASET, ROLES, SETTINGS = "hd_dataset", "hd_roles", "hd_settings"
RELEASE, RELEASE_KEY, SWEEP = "hd_release", "hd_release_key", "hd_sweep"
REPORT = "hd_report"
GS_RELEASE, GS_SWEEP = "hd_gs_release", "hd_gs_sweep"
GS_SAMPLE_GEOMETRY = "us-counties"  # the household sample lives on the US county tree
FLOW_SAMPLE_GEOMETRY = "us-counties"  # state boundaries under the airport flow map
GS_DEFAULT_MECHANISM = "gs-kuo-hierarchical"
GS_SWEEP_DEFAULT = ("gs-topdown", "gs-kuo-hierarchical")
FLOW_RELEASE, FLOW_SWEEP = "hd_flow_release", "hd_flow_sweep"
FLOW_DEFAULT_MECHANISM = "inftda"
FLOW_SWEEP_DEFAULT = ("inftda", "tda-l2", "stability-histogram")
FLOW_OFF_MAP_STATES = ("PR", "VI")  # no place on the Albers USA projection
RANGE_RELEASE, RANGE_COMPARE, RANGE_SWEEP = "hd_rg_release", "hd_rg_compare", "hd_rg_sweep"
RANGE_SAMPLE = "italy-municipalities"
RANGE_DEFAULT_MECHANISM = "dawa"
RANGE_BASELINES = ("dawa", "greedy-h", "identity", "privelet", "h2")
RANGE_SWEEP_DEFAULT = ("dawa", "greedy-h", "identity")
_DATA_CACHE = "hd_count_data_cache"
INPUT = "hd_input"  # an upload's shape (`dashboard_input`)
PALETTE_CHOICE = "hd_palette"
DEFAULT_SAMPLE = next(iter(SAMPLES))
EPSILON_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
RHO_GRID = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)


# ---- data -------------------------------------------------------------------------------
@st.cache_data(show_spinner="Loading the sample…", max_entries=4)
def sample_table(name: str) -> pd.DataFrame:
    return load_sample(name)


def load_sample_into_state(name: str) -> None:
    sample = SAMPLES[name]
    set_dataset(sample.title, sample_table(name), sample=name)
    st.session_state[ROLES] = {
        "levels": list(sample.levels), "count_column": sample.count_column,
        "category_columns": list(sample.category_columns), "local_codes": False,
    }


def set_dataset(name: str, table: pd.DataFrame, sample: str | None = None) -> None:
    from hierdp_core import dashboard_input

    version = st.session_state.get(DATASET, {}).get("version", 0) + 1
    st.session_state[DATASET] = {"name": name, "sample": sample, "table": table,
                                 "version": version, "loaded": version}
    _drop_results()
    structure.reset()
    dashboard_input.reset()


def replace_table(table: pd.DataFrame) -> None:
    """Make ``table`` the dataset's table (a reshape of the same upload): a new version,
    results made on the old one dropped, the declared structure kept."""
    ds = ensure_dataset()
    ds["table"], ds["version"] = table, ds["version"] + 1
    _drop_results()


def _drop_results() -> None:
    for key in (RELEASE, RELEASE_KEY, SWEEP, _DATA_CACHE):
        st.session_state.pop(key, None)


def ensure_dataset() -> dict:
    """The current dataset; the default sample is loaded on first use."""
    if DATASET not in st.session_state:
        load_sample_into_state(DEFAULT_SAMPLE)
    return st.session_state[DATASET]


def roles() -> dict:
    ensure_dataset()
    return st.session_state[ROLES]


def set_roles(new_roles: dict) -> None:
    if new_roles != st.session_state.get(ROLES):
        st.session_state[ROLES] = new_roles
        for key in (RELEASE, RELEASE_KEY, SWEEP):
            st.session_state.pop(key, None)
        settings = st.session_state.get(SETTINGS)
        if settings and len(settings.get("weights", [])) != len(new_roles["levels"]) + 1:
            settings["weights"] = [1.0] * (len(new_roles["levels"]) + 1)


def count_data() -> CountData:
    """The CountData of the current dataset and roles (built once, then cached).
    Raises HierdpError for bad roles or values."""
    ds, r = ensure_dataset(), roles()
    missing, ragged = r.get("missing", "error"), bool(r.get("ragged", False))
    key = (ds["version"], tuple(r["levels"]), r["count_column"], tuple(r["category_columns"]),
           r["local_codes"], missing, ragged, None if ds["sample"] else structure.key(),
           tuple(sorted(name_columns(ds, r["levels"]).items())))
    cache = st.session_state.get(_DATA_CACHE)
    if cache is None or cache[0] != key:
        names = name_columns(ds, r["levels"])
        if ds["sample"]:  # a bundled sample: its public geography and category values
            declared = {"geography": sample_geography(ds["sample"], tuple(r["levels"])),
                        "category_values": sample_category_values(ds["sample"],
                                                                  r["category_columns"])}
        elif structure.state()["declared"]:  # an upload with its declared structure
            values = structure.state()["category_values"]
            declared = {"geography": structure.declared_geography(r["levels"], ragged=ragged),
                        "category_values": {c: values[c] for c in r["category_columns"]
                                            if c in values}}
        else:  # an upload: the structure is read from the table (exploration only) but
            shape = st.session_state.get(INPUT) or {}  # the wide columns' order is kept
            wide = ({shape["name"]: tuple(shape["wide"])} if shape.get("wide")
                    and shape["name"] in r["category_columns"] else {})
            declared = {"local_codes": r["local_codes"], "name_columns": names,
                        "category_values": wide}
        table, handled, passed = prepare(ds["table"], [r["levels"]], r["count_column"],
                                         missing=missing, ragged=ragged, names=names)
        data = count_data_from_table(table, r["levels"], count_column=r["count_column"],
                                     category_columns=r["category_columns"],
                                     max_cells=default_max_cells(), **declared)
        note = preparation_note(missing, handled, passed, flags=False)
        st.session_state[_DATA_CACHE] = cache = (key, data, note)
    return cache[1]


def count_data_note() -> str:
    """What preparing the table did for the current `count_data` (empty cells counted as 0
    or left out, units passing through a level), in one sentence; '' for nothing."""
    cache = st.session_state.get(_DATA_CACHE)
    return cache[2] if cache else ""


@st.cache_resource(show_spinner=False, max_entries=16)
def sample_geography(sample: str, levels: tuple[str, ...]):
    """The declared public geography of a bundled sample over ``levels`` (shared,
    read-only), with the unit names its geography has (``<level>_name`` columns)."""
    from hierdp_core.data import sample_files

    return sample_files.sample_geography(sample, levels,
                                         {level: f"{level}_name" for level in levels})


def require_count_data() -> CountData:
    """CountData, or a friendly message and stop the page."""
    try:
        return count_data()
    except HierdpError as exc:
        st.error(f"The data cannot be used as set up: {exc}")
        next_page("pages/1_Data.py", "Fix the column roles on the Data page")
        st.stop()


def name_columns(ds: dict, levels: list[str]) -> dict[str, str]:
    """Columns of readable unit names for the chosen levels: a sample's own, else those
    chosen on the Data page (roles ``name_columns``), else a column called ``<level>_name``
    when the table has one."""
    sample = SAMPLES.get(ds["sample"]) if ds["sample"] else None
    known = dict(sample.label_columns) if sample else {}
    columns = set(map(str, ds["table"].columns))
    chosen = {} if sample else st.session_state.get(ROLES, {}).get("name_columns") or {}
    named = {lv: chosen.get(lv, known.get(lv, f"{lv}_name")) for lv in levels}
    return {lv: c for lv, c in named.items() if c in columns}


def plural(noun: str) -> str:
    """English plural of a level name: county -> counties, state -> states."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def node_display_names(data: CountData, level: int) -> np.ndarray:
    """Readable name of every node of a level: 'name (code)' when a name is known."""
    h = data.hierarchy
    codes = np.asarray(h.codes[level]).astype(str).astype(object)
    if level not in h.names:
        return codes
    names = np.asarray(h.names[level]).astype(object)
    return np.where(names != codes, names + " (" + codes + ")", codes)


@st.cache_resource(show_spinner="Building the household sample…", max_entries=1)
def group_size_data():
    """The bundled household sample as GroupSizeData over its declared public geography
    (the US counties) and top-code (shared, read-only)."""
    from hierdp_core.groupsizes.data import group_size_data_from_histograms
    from hierdp_core.groupsizes.samples import us_households

    return group_size_data_from_histograms(
        us_households(), ["state", "county"], "size", "households", max_size=1000,
        geography=sample_geography("us-households", ("state", "county")))


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


def matched_flow_layers(geo) -> dict[int, tuple[pd.DataFrame, tuple | None, str]]:
    """For O/D data on a user's geography ``geo`` whose codes match bundled boundaries
    (`map_sources`): per geography level, the area positions (bundled centroids: index = area
    code; latitude, longitude, label), the top level's boundaries as a base map (URL, ids)
    and the projection, for `flows.figures.flow_map`. Levels without a match are left out."""
    from hierdp_core.geo import centroids

    sources = map_sources(None, geo)
    base = None
    if 1 in sources:
        fc = level_geojson(*sources[1])
        base = (map_geojson(*sources[1]), [f["id"] for f in fc["features"]])
    layers = {}
    for level, source in sources.items():
        points = centroids(*source).set_index("id")
        coords = pd.DataFrame({"latitude": points["lat"], "longitude": points["lon"],
                               "label": points.index}, index=points.index)
        layers[level] = (coords, base, map_projection(source[0]))
    return layers


def level_picker(key: str) -> list[str]:
    """Multiselect of the geography levels (coarse to fine), written back to the roles."""
    table = ensure_dataset()["table"]
    r = roles()
    r_cols = {r["count_column"], *r["category_columns"]}
    columns = [str(c) for c in table.columns if c not in r_cols]
    levels = st.multiselect("Geography levels, coarse to fine (the order you pick is the order "
                            "of the tree)", columns,
                            default=[c for c in r["levels"] if c in columns], key=key)
    set_roles({**r, "levels": levels})
    return levels


# ---- settings and release ---------------------------------------------------------------
def settings(n_levels: int) -> dict:
    s = st.session_state.setdefault(SETTINGS, {
        "mechanism": "topdown", "params": {}, "definition": "pure-dp", "epsilon": 1.0,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0] * n_levels,
    })
    if len(s["weights"]) != n_levels:
        s["weights"] = [1.0] * n_levels
    return s


def budget_of(s: dict) -> PrivacyBudget:
    if s["definition"] == "zcdp":
        return PrivacyBudget.zcdp(s["rho"], s["delta"])
    return PrivacyBudget.pure(s["epsilon"])


def shares_of(s: dict) -> np.ndarray:
    return split_shares(len(s["weights"]), weights=s["weights"])


def settings_key(s: dict) -> tuple:
    return (s["mechanism"], tuple(sorted(s["params"].items())), s["definition"],
            s["epsilon"], s["rho"], s["delta"], tuple(s["weights"]),
            st.session_state[DATASET]["version"], tuple(sorted(roles().items(), key=str)).__repr__(),
            structure.key())


def release_for(data: CountData, s: dict, source: NoiseSource):
    """The release of ``data`` with the settings ``s`` and noise from ``source``."""
    return get_mechanism(s["mechanism"]).release(data, budget_of(s), split=list(s["weights"]),
                                                 source=source, **s["params"])


def run_release(data: CountData, s: dict, seed: int | None):
    """Run the chosen mechanism; stores and returns the Release."""
    source = NoiseSource(seed=seed) if seed is not None else NoiseSource(secure=True)
    release = release_for(data, s, source)
    st.session_state[RELEASE] = release
    st.session_state[RELEASE_KEY] = settings_key(s)
    return release


def current_release():
    """The latest release if it still matches the current settings, else None."""
    release = st.session_state.get(RELEASE)
    s = st.session_state.get(SETTINGS)
    if release is None or s is None or st.session_state.get(RELEASE_KEY) != settings_key(s):
        return None
    return release


# ---- chrome -----------------------------------------------------------------------------
PAGES = (
    ("app.py", "Home", ":material/home:"),
    ("pages/1_Data.py", "Data", ":material/table_view:"),
    ("pages/2_Hierarchy.py", "Hierarchy", ":material/account_tree:"),
    ("pages/3_Mechanism_and_budget.py", "Mechanism & budget", ":material/tune:"),
    ("pages/4_Results.py", "Results", ":material/map:"),
    ("pages/5_Trade-offs.py", "Trade-offs", ":material/query_stats:"),
    ("pages/6_Export.py", "Export", ":material/download:"),
    ("pages/7_Group_sizes.py", "Group sizes", ":material/groups:"),
    ("pages/8_Flows.py", "Flows", ":material/flight:"),
    ("pages/9_Ranges.py", "Range queries", ":material/bar_chart:"),
    ("pages/10_Compare.py", "Compare", ":material/compare:"),
)
MAP_PROJECTIONS = {"us-counties": "albers usa", "synthetic-us-like": "albers usa"}


def mechanism_label(infos: dict, not_private: str = "NOT private as published"):
    """A ``format_func`` for pickers of the mechanisms in ``infos``: the name, with
    ``(not_private)`` after those that are not private."""
    return lambda n: n + ("" if infos[n].private else f" ({not_private})")


def mechanism_picker(infos: dict, default: str, key: str, *,
                     not_private: str = "NOT private as published") -> str:
    """Select box of the mechanisms in ``infos`` (name -> MechanismInfo; non-private ones
    labelled ``not_private``), with the chosen one's description, reference and warning (an
    red box naming the flaw and the private alternative for a non-private one). Returns the
    name."""
    names = list(infos)
    name = st.selectbox("Mechanism", names, index=names.index(default) if default in names
                        else 0, format_func=mechanism_label(infos, not_private), key=key)
    info = infos[name]
    st.markdown(f"{info.description}  \n*{info.reference}*")
    warn_nonprivate(info)
    if info.warning and info.private:
        st.warning(info.warning)
    return name


def warn_nonprivate(info) -> None:
    """A red box for a mechanism that is not differentially private as published: the flaw
    and the private alternative (its registry warning); its releases are never
    publishable."""
    if not info.private:
        st.error(f"**{not_private_reason(info.name, info.warning)}.** Its releases are never "
                 "publishable; use it only to compare with the published numbers.",
                 icon=":material/gpp_bad:")


def sweep_controls(prefix: str, names: list[str], defaults, eps_default, metrics: dict,
                   format_func=str):
    """The trade-off sweep widgets (keys ``{prefix}_sw_*``): mechanisms (shown with
    ``format_func``), epsilons, trials, metric (``metrics``: column -> label) and the run
    button. Returns (mechanisms, sorted epsilons, trials, metric, clicked)."""
    st.subheader("Trade-off: error against ε")
    s1, s2, s3, s4 = st.columns([3, 2, 1, 2])
    with s1:
        chosen = st.multiselect("Mechanisms", names, default=[n for n in defaults if n in names],
                                format_func=format_func, key=f"{prefix}_sw_mechs")
    with s2:
        eps_grid = st.multiselect("ε values", list(EPSILON_GRID), default=list(eps_default),
                                  key=f"{prefix}_sw_eps")
    with s3:
        trials = st.slider("Trials", 1, 5, 2, key=f"{prefix}_sw_trials")
    with s4:
        metric = st.selectbox("Metric", list(metrics), format_func=metrics.get,
                              key=f"{prefix}_sw_metric")
    clicked = st.button("Run the sweep", key=f"{prefix}_sw_run",
                        disabled=not chosen or not eps_grid)
    return chosen, sorted(eps_grid), trials, metric, clicked


def run_sweep(state_key: str, compute) -> None:
    """Run ``compute(progress)`` under a progress bar and keep its runs in session state
    under ``state_key``; a HierdpError becomes a message."""
    bar = st.progress(0.0, text="Sweeping…")
    try:
        st.session_state[state_key] = compute(
            lambda done, total: bar.progress(done / total, text=f"{done}/{total}"))
    except HierdpError as exc:
        st.error(str(exc))
    bar.empty()


def next_page(path: str, text: str) -> None:
    """A link to the next step."""
    icon = next(icon for p, _, icon in PAGES if p == path)
    st.page_link(path, label=text, icon=icon)


@lru_cache(maxsize=1)
def page_icon():
    """The browser tab's icon, drawn here (served by the dashboard itself: a
    ``:material/...:`` or emoji icon is fetched from Google's or a CDN's servers, which
    fails offline): three bars splitting into 1, 2 and 4 parts, a tree of levels."""
    icon = np.zeros((32, 32, 4), dtype=np.uint8)
    icon[1:31, 1:31] = (47, 93, 138, 255)  # the theme's primary colour
    for row, parts in ((6, 1), (14, 2), (22, 4)):
        width = 22 // parts
        for k in range(parts):
            icon[row:row + 5, 5 + k * width + (k > 0):5 + (k + 1) * width - (parts > 1)] = 255
    return Image.fromarray(icon)


def page_header(title: str, caption: str):
    """Page config, sidebar navigation and setup summary, title. Returns the sidebar's
    summary slot: pass it to `sidebar_status` to refresh it after the page changed state."""
    st.set_page_config(page_title=f"{title} · hierdp", page_icon=page_icon(), layout="wide")
    ensure_dataset()
    with st.sidebar:
        st.markdown("## hierdp")
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)
        st.divider()
        slot = st.empty()
        st.divider()
        palette_picker()
    st.title(title)
    st.caption(caption)
    sidebar_status(slot)
    return slot


def _palette_chosen() -> None:
    st.session_state[PALETTE_CHOICE] = st.session_state["palette_pick"]


def palette_picker() -> None:
    """The colour choice in the sidebar (kept across pages in ``hd_palette``), made the
    palette of this run's figures with the browser's light or dark theme
    (`hierdp_core.palette.use`): maps and charts follow both."""
    # the widget is another one on every page: it shows the choice kept across them
    st.session_state["palette_pick"] = st.session_state.setdefault(PALETTE_CHOICE,
                                                                   palette.DEFAULT)
    choice = st.selectbox("Colours", list(palette.PALETTES), key="palette_pick",
                          format_func=lambda name: palette.PALETTES[name].label,
                          on_change=_palette_chosen,
                          help="Colour-blind safe choices keep categories, map shades and "
                               "errors above or below the truth apart in every common form "
                               "of colour blindness. The light or dark theme is the "
                               "browser's (or the ⋮ menu's Settings).")
    palette.use(choice, dark=getattr(st.context.theme, "type", None) == "dark")


STATIC_DIR = Path(__file__).resolve().parents[1] / "static"


def map_geojson(sample: str | None, level: str) -> str | None:
    """URL of a level's boundaries for Plotly maps (None without geometry).

    The boundaries are written once, uncompressed, to ``static/geo/`` (git-ignored), which
    Streamlit serves (``server.enableStaticServing``); the browser fetches each file once,
    so a map figure carries only ids and values instead of megabytes of polygons."""
    fc = level_geojson(sample, level) if sample else None
    if fc is None:
        return None
    relative = Path("geo") / sample / f"{level}.geojson"
    path = STATIC_DIR / relative
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(json.dumps(fc, separators=(",", ":")), encoding="utf-8")
        partial.replace(path)
    return f"app/static/{relative.as_posix()}"


def map_sources(sample: str | None, h) -> dict[int, tuple[str, str]]:
    """Level index -> (bundled sample, bundled level) whose boundaries draw that level of the
    hierarchy ``h``: a bundled sample's own levels, or for other data (``sample`` None) the
    boundaries chosen on the Data page (`dashboard_geo`: bundled ones only when the codes
    and parents of every level match).
    Levels without boundaries are left out."""
    if sample is None:
        from hierdp_core import dashboard_geo

        return dashboard_geo.map_sources(h)
    return {lv: (sample, name) for lv, name in enumerate(h.level_names) if lv
            and level_geojson(sample, name) is not None}


def map_projection(sample: str | None) -> str:
    return MAP_PROJECTIONS.get(sample, "mercator")


def all_display_names(data: CountData) -> np.ndarray:
    """Readable names of every node, root first."""
    parts = [np.array([data.hierarchy.level_names[0]], dtype=object)]
    parts += [node_display_names(data, level) for level in range(1, data.hierarchy.n_levels)]
    return np.concatenate(parts)


def sidebar_status(slot) -> None:
    """The count release's setup (data, levels, mechanism, release) in the sidebar slot; the
    group-size, flow and range pages keep their own data and settings."""
    ds = st.session_state.get(DATASET)
    with slot.container():
        st.markdown("**Count release** (pages Data to Export)")
        if ds is None:
            st.caption("No data loaded yet: the default sample loads on the next page.")
            return
        r = st.session_state.get(ROLES, {})
        st.markdown(f"**Data:** {ds['name']}")
        if r:
            st.markdown(f"**Levels:** {' › '.join(r['levels'])}")
            if r.get("category_columns"):
                st.markdown(f"**Categories:** {', '.join(r['category_columns'])}")
        s = st.session_state.get(SETTINGS)
        if s:
            budget = (f"ε = {s['epsilon']:g}" if s["definition"] == "pure-dp"
                      else f"ρ = {s['rho']:g}")
            st.markdown(f"**Mechanism:** {s['mechanism']} · {budget}")
        st.markdown("**Release:** " + ("ready" if current_release() is not None
                                       else "not run for these settings"))


def friendly_error(exc: Exception) -> None:
    """Show an error without a traceback."""
    if isinstance(exc, HierdpError):
        st.error(str(exc))
    else:
        st.error(f"Something went wrong ({type(exc).__name__}): {exc}")

"""Session state of the Streamlit dashboard: the documented keys, the dataset and its roles,
the count data built from them, the release settings and the latest release.

Session-state keys (all under ``st.session_state``):

``hd_dataset``   dict: ``name`` (shown), ``sample`` (sample name, or None for an upload),
                 ``table`` (the loaded DataFrame, confidential), ``version`` (int, bumped on
                 load and reshape), ``loaded`` (the version it was loaded as)
``hd_roles``     dict: ``levels`` (coarse to fine), ``count_column`` (None = microdata),
                 ``category_columns``, ``local_codes``; for an upload also ``missing``
                 (empty count cells: 'error' | 'zero' | 'drop') and ``ragged`` (units may
                 skip a level)
``hd_input``     an upload's shape (`ui.inputs`): ``wide`` (the columns melted into
                 long form; empty = long as uploaded) and ``name`` (their category column);
                 the upload as read is then ``hd_dataset['raw']``
``hd_settings``  dict: ``mechanism``, ``params`` (dict), ``definition`` ('pure-dp' | 'zcdp'),
                 ``epsilon``, ``rho``, ``delta``, ``weights`` (one per level, root first)
``hd_release``   the latest `Release` (privatised values only) and ``hd_release_key``, the
                 settings it was made with
``hd_sweep``     the latest trade-off sweep (DataFrame of runs)
``hd_metrics``   the Results page's error metrics of the release whose content token is
                 ``hd_metrics_key``
``hd_compare``   the Trade-offs page's comparison of budget splits
``hd_report``    (content token of the release, HTML) of the latest confidential evaluation
                 report (Export page); ``hd_stakeholder_report`` ((token, evaluated), HTML)
                 of the stakeholder report, ``hd_report_pdf`` its PDF, ``hd_config_loaded``
                 the configuration file last applied
``hd_compare_ab`` the Compare page's (sides, data settings key, Comparison)
``hd_gs_release`` group sizes: (settings key, Release, metrics, seconds) of the latest release;
                 ``hd_gs_sweep`` its epsilon sweep (DataFrame of runs)
``hd_flow_release`` flows: (settings key, FlowRelease, metrics, seconds) of the latest
                 release; ``hd_flow_sweep`` its epsilon sweep (DataFrame of runs)
``hd_rg_release`` range queries: (settings key, RangeRelease, metrics, seconds) of the latest
                 release; ``hd_rg_compare`` (settings key, runs) of the comparison with the
                 baselines; ``hd_rg_sweep`` its epsilon sweep (DataFrame of runs)

``hd_gs_data_key``, ``hd_flow_data_key``, ``hd_rg_data_key`` the data the latest group-size,
                 flow and range results were made on (new data drops them);
                 ``hd_src_cache`` the query data built from an upload (`ui.sources`)
``hd_structure`` an upload's declared public structure (geography file, category values) or
                 the choice to read it from the table (`ui.structure`)
``hd_publishable`` the publishable (secure) releases, per page, of the exploration release
                 they redraw (`ui.release`); ``hd_publishable_seconds`` how long each draw took
``hd_ledger_fp`` (dataset version, keyed fingerprint of its table): the dataset's key in the
                 budget ledger across releases (`ui.ledger`)
``hd_intervals`` the intervals of the latest releases, per (content token, level), which
                 every release file offered carries (`ui.downloads`)
``hd_split_held`` the exact weights of the split last set by a preset or the split
                 optimiser, used while the sliders show them (`ui.split`)
``hd_palette``   the colour palette chosen in the sidebar (`hierdp_core.palette`), shown by
                 the widget ``palette_pick``
``cfg_upload``   the Export page's configuration file loader; ``<prefix>_cfg_upload`` a
                 query page's (`config_upload_key`)
``<sweep key>_timing`` the wall time of the sweep kept under that key (`sweep_timing_key`)

``hd_kept_settings`` the values of the query pages' settings widgets (`PAGE_SETTINGS`), put
                 back when a visit to another page dropped them (`keep_page_settings`,
                 called first by every page; emptied with a new dataset)

Everything expensive is cached: the CountData per (dataset version, roles) in session state,
sample tables and geometries with ``st.cache_data`` / ``lru_cache`` (`ui.samples`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.config import ReleaseConfig
from hierdp_core.data.loaders import default_max_cells
from hierdp_core.data.reshape import preparation_note, prepare
from hierdp_core.data.sample_files import sample_category_values
from hierdp_core.data.samples import SAMPLES
from hierdp_core.errors import HierdpError, InputError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget, split_shares
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData, count_data_from_table
from hierdp_core.ui import structure
from hierdp_core.ui.samples import sample_geography, sample_table

DATASET, ROLES, SETTINGS = "hd_dataset", "hd_roles", "hd_settings"
RELEASE, RELEASE_KEY, SWEEP = "hd_release", "hd_release_key", "hd_sweep"
REPORT = "hd_report"
LOADED, STAKEHOLDER, PDF = "hd_config_loaded", "hd_stakeholder_report", "hd_report_pdf"
METRICS, METRICS_KEY = "hd_metrics", "hd_metrics_key"
SPLIT_COMPARE, COMPARE = "hd_compare", "hd_compare_ab"
GS_DATA_KEY, FLOW_DATA_KEY = "hd_gs_data_key", "hd_flow_data_key"
RANGE_DATA_KEY = "hd_rg_data_key"
GS_RELEASE, GS_SWEEP = "hd_gs_release", "hd_gs_sweep"
FLOW_RELEASE, FLOW_SWEEP = "hd_flow_release", "hd_flow_sweep"
RANGE_RELEASE, RANGE_COMPARE, RANGE_SWEEP = "hd_rg_release", "hd_rg_compare", "hd_rg_sweep"
_DATA_CACHE = "hd_count_data_cache"
INPUT = "hd_input"  # an upload's shape (`ui.inputs`)
PALETTE_CHOICE = "hd_palette"
PALETTE_PICK = "palette_pick"  # the sidebar's colour widget, showing PALETTE_CHOICE
CONFIG_UPLOAD = "cfg_upload"  # the Export page's configuration loader (query pages: prefixed)
KEPT = "hd_kept_settings"
DEFAULT_SAMPLE = next(iter(SAMPLES))
EPSILON_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
RHO_GRID = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)


def config_upload_key(prefix: str) -> str:
    """The key of the configuration loader of the query page of widget ``prefix``."""
    return f"{prefix}_{CONFIG_UPLOAD}"


def sweep_timing_key(state_key: str) -> str:
    """The key of the wall time of the sweep kept under ``state_key``."""
    return f"{state_key}_timing"


#: the settings widgets each page keeps across visits to other pages: keys, or prefixes
#: ending in '*' for keys made per view, side or level; never buttons, uploads or charts
#: (their values cannot be set); `PARAMETER_PREFIXES` adds each mechanism's parameters
PAGE_SETTINGS = {
    "Results": ("res_map", "res_metric", "res_level", "res_within", "res_category",
                "res_iv_level"),
    "Trade-offs": ("sw_mechs", "sw_eps", "sw_trials", "sw_metric", "sw_level", "sw_view",
                   "cmp_a", "cmp_b", "cmp_mech", "cmp_eps"),
    "Group sizes": ("gs_mechanism", "gs_epsilon", "gs_seed", "gs_level*", "gs_region*",
                    "gs_sw_mechs", "gs_sw_eps", "gs_sw_trials", "gs_sw_metric", "gs_sw_level",
                    "gs_iv_level", "gs_up_max", "gs_up_min", "gs_up_rows"),
    "Flows": ("fl_mechanism", "fl_epsilon", "fl_delta", "fl_split", "fl_seed", "fl_map_level*",
              "fl_map_show", "fl_map_top", "fl_sw_mechs", "fl_sw_eps", "fl_sw_trials",
              "fl_sw_metric", "fl_sw_level", "fl_iv_level"),
    "Range queries": ("rg_mechanism", "rg_epsilon", "rg_seed", "rg_workload", "rg_level*",
                      "rg_unit*", "rg_cmp_mechs", "rg_municipalities", "rg_bands",
                      "rg_up_domain", "rg_sw_mechs", "rg_sw_eps", "rg_sw_trials",
                      "rg_sw_metric", "rg_sw_level", "rg_iv_level"),
    "Compare": ("cmp_same_seed", "cmp_metric", "cmp_level", "cmp_category", "cmp_mech_*",
                "cmp_eps_*", "cmp_split_*", "cmp_seed_*"),
}
#: page -> (the prefix of its mechanism parameters' keys ``{prefix}_{mechanism}_{name}``,
#: its query kind)
PARAMETER_PREFIXES = {"Group sizes": ("gs", "group-sizes"), "Flows": ("fl", "flows"),
                      "Range queries": ("rg", "ranges")}


def _kept_keys(page: str, keys: list[str]) -> list[str]:
    """The ``keys`` that are settings of ``page`` (`PAGE_SETTINGS`, its parameters)."""
    patterns = PAGE_SETTINGS.get(page, ())
    kept = [key for key in keys if any(key == p or (p.endswith("*") and key.startswith(p[:-1]))
                                       for p in patterns)]
    if page in PARAMETER_PREFIXES:
        prefix, query = PARAMETER_PREFIXES[page]
        if any(key.startswith(f"{prefix}_") for key in keys):  # the page has run
            from hierdp_core.mechanisms.base import list_mechanisms

            starts = tuple(f"{prefix}_{i.name}_" for i in list_mechanisms(query))
            kept += [key for key in keys if key.startswith(starts) and key not in kept]
    return kept


def keep_page_settings(page: str) -> None:
    """Called first by every run of ``page``: its settings widgets keep their values across
    visits to other pages. A browser's page switch drops every widget value of the page
    left (an analyst who set ε on Group sizes, looked at Results and came back found ε
    reset), so each run of a page records its settings' values as they arrive (a change
    reruns its page: the run records it) under `KEPT`, and a run that finds them dropped
    puts them back before the widgets are drawn."""
    kept = st.session_state.setdefault(KEPT, {})
    present = [str(k) for k in st.session_state.keys()]
    for key in _kept_keys(page, present):
        kept[key] = st.session_state[key]
    for key in _kept_keys(page, list(kept)):
        if key not in st.session_state:
            st.session_state[key] = kept[key]


def load_sample_into_state(name: str) -> None:
    sample = SAMPLES[name]
    set_dataset(sample.title, sample_table(name), sample=name)
    st.session_state[ROLES] = {
        "levels": list(sample.levels), "count_column": sample.count_column,
        "category_columns": list(sample.category_columns), "local_codes": False,
    }


def set_dataset(name: str, table: pd.DataFrame, sample: str | None = None) -> None:
    version = st.session_state.get(DATASET, {}).get("version", 0) + 1
    st.session_state[DATASET] = {"name": name, "sample": sample, "table": table,
                                 "version": version, "loaded": version}
    _drop_results()
    st.session_state.pop(KEPT, None)  # levels, categories and metrics of other data
    structure.reset()
    st.session_state.pop(INPUT, None)  # the old upload's shape (`ui.inputs`)


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
    Raises HierdpError for bad roles or values, and while an upload's levels or count
    column are not chosen on the Data page (a guess is not a choice)."""
    ds, r = ensure_dataset(), roles()
    if not r["levels"] or not r.get("count_confirmed", True):
        raise InputError("choose the geography levels and the count column of your table on "
                         "the Data page (or use the guessed columns there)")
    missing, ragged = r.get("missing", "error"), bool(r.get("ragged", False))
    key = (ds["version"], tuple(r["levels"]), r["count_column"], tuple(r["category_columns"]),
           r["local_codes"], missing, ragged, None if ds["sample"] else structure.key(),
           tuple(sorted(name_columns(ds, r["levels"]).items())))
    cache = st.session_state.get(_DATA_CACHE)
    if cache is None or cache[0] != key:
        names, table = name_columns(ds, r["levels"]), ds["table"]
        if ds["sample"]:  # a bundled sample: built once for every session (read-only)
            st.session_state[_DATA_CACHE] = cache = (key, *_sample_count_data(
                ds["sample"], tuple(r["levels"]), r["count_column"],
                tuple(r["category_columns"]), missing, ragged, tuple(sorted(names.items()))))
            return cache[1]
        if structure.state()["declared"]:  # an upload with its declared structure
            values = structure.state()["category_values"]
            declared = {"geography": structure.declared_geography(r["levels"], ragged=ragged),
                        "category_values": {c: values[c] for c in r["category_columns"]
                                            if c in values}}
            table = _declared_wide(table, values, r["category_columns"])
        else:  # an upload: the structure is read from the table (exploration only) but
            shape = st.session_state.get(INPUT) or {}  # the wide columns' order is kept
            wide = ({shape["name"]: tuple(shape["wide"])} if shape.get("wide")
                    and shape["name"] in r["category_columns"] else {})
            declared = {"local_codes": r["local_codes"], "name_columns": names,
                        "category_values": wide}
        st.session_state[_DATA_CACHE] = cache = (key, *_prepared_count_data(
            table, r["levels"], r["count_column"], r["category_columns"], missing, ragged,
            names, declared))
    return cache[1]


@st.cache_resource(show_spinner="Preparing the sample…", max_entries=8)
def _sample_count_data(sample: str, levels: tuple[str, ...], count_column: str,
                       category_columns: tuple[str, ...], missing: str, ragged: bool,
                       names: tuple[tuple[str, str], ...]) -> tuple[CountData, str]:
    """The CountData of a bundled sample over the given roles, on its public geography and
    category values, with its preparation note; shared by every session (its counts are
    read-only), so a second visitor does not wait for it (seconds for Italy)."""
    declared = {"geography": sample_geography(sample, levels),
                "category_values": sample_category_values(sample, list(category_columns))}
    data, note = _prepared_count_data(sample_table(sample), list(levels), count_column,
                                      list(category_columns), missing, ragged, dict(names),
                                      declared)
    data.leaf_counts.setflags(write=False)
    return data, note


def sample_count_data(name: str) -> CountData:
    """The shared CountData of the bundled sample ``name`` with its own roles (what "Start
    with this sample" opens)."""
    sample = SAMPLES[name]
    names = name_columns({"sample": name, "table": sample_table(name)}, list(sample.levels))
    return _sample_count_data(name, tuple(sample.levels), sample.count_column,
                              tuple(sample.category_columns), "error", False,
                              tuple(sorted(names.items())))[0]


def _prepared_count_data(table, levels, count_column, category_columns, missing, ragged,
                         names, declared) -> tuple[CountData, str]:
    """The table's empty cells and skipped levels handled as the roles say (`prepare`),
    then its CountData; and the note of what preparing did."""
    table, handled, passed = prepare(table, [levels], count_column, missing=missing,
                                     ragged=ragged, names=names)
    data = count_data_from_table(table, levels, count_column=count_column,
                                 category_columns=category_columns,
                                 max_cells=default_max_cells(), **declared)
    return data, preparation_note(missing, handled, passed, flags=False)


def _declared_wide(table: pd.DataFrame, values: dict, categories: list[str]) -> pd.DataFrame:
    """The melted table of a wide upload with its category column holding the declared
    values (`wide_labels.declared_column`; the header is not a declaration), as is when the
    upload is long or that category is not declared."""
    shape = st.session_state.get(INPUT) or {}
    name = shape.get("name")
    if not shape.get("wide") or name not in categories or name not in values:
        return table
    from hierdp_core.data.wide_labels import declared_column

    return table.assign(**{name: declared_column(table[name], shape["wide"], values[name],
                                                 name)})


def count_data_note() -> str:
    """What preparing the table did for the current `count_data` (empty cells counted as 0
    or left out, units passing through a level), in one sentence; '' for nothing."""
    cache = st.session_state.get(_DATA_CACHE)
    return cache[2] if cache else ""


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


def params_of(s: dict) -> dict:
    """The mechanism's parameters as its release uses them: its declared defaults, then
    those set in ``s`` (so a page that only fills in the defaults changes nothing)."""
    try:
        defaults = get_mechanism(s["mechanism"]).params()
    except HierdpError:  # an unknown mechanism: running it says so
        defaults = {}
    return {**defaults, **s["params"]}


def settings_key(s: dict) -> tuple:
    """What a release depends on in the settings ``s`` and the session's data: a release
    made with another key is not the current one."""
    return (s["mechanism"], tuple(sorted(params_of(s).items())), s["definition"],
            s["epsilon"], s["rho"], s["delta"], tuple(s["weights"]),
            st.session_state[DATASET]["version"],
            tuple(sorted(roles().items(), key=str)).__repr__(), structure.key())


def release_for(data: CountData, cfg: ReleaseConfig, source: NoiseSource | None = None):
    """The release of ``data`` with the settings ``cfg`` (the session's `ReleaseConfig`,
    `ui.config.current_config`) and noise from ``source`` (default: ``cfg``'s seed, else
    secure noise)."""
    if source is None:
        source = (NoiseSource(seed=cfg.seed) if cfg.seed is not None
                  else NoiseSource(secure=True))
    return get_mechanism(cfg.mechanism).release(data, cfg.budget(), split=list(cfg.split),
                                                source=source, **cfg.params)


def run_release(data: CountData, cfg: ReleaseConfig, s: dict):
    """Run the release of ``cfg``, the configuration of the settings ``s``; stores and
    returns the Release."""
    release = release_for(data, cfg)
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

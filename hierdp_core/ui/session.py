"""Session state of the Streamlit dashboard: every key it keeps (this module and
`ui.widget_keys`, the keys of the widgets, name them all; no other module writes one out:
``tests/test_session_keys.py``), the dataset and its roles, an upload's declared structure,
the release settings and the latest release.

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
                 ``epsilon``, ``rho``, ``delta``, ``weights`` (one per level, root first);
                 dropped with a new dataset, as are ``hd_split_held`` and ``hd_randomness``
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
``hd_ledger_fp`` per kind of keyed fingerprint (of a table, of the counts), (the object,
                 its fingerprint): the dataset's keys in the budget ledger (`ui.ledger`)
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

Everything expensive is cached: the CountData per (dataset version, roles) in session state
(`ui.count_data`), sample tables and geometries with ``st.cache_data`` / ``lru_cache`` (`ui.samples`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.config import ReleaseConfig
from hierdp_core.data.samples import SAMPLES
from hierdp_core.errors import HierdpError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget, split_shares
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.samples import sample_table

DATASET, ROLES, SETTINGS = "hd_dataset", "hd_roles", "hd_settings"
READ_NOTE = "hd_read_note"  # how the upload was read ({"name", "note"}), when worth a word
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
DATA_CACHE = "hd_count_data_cache"  # (key, CountData, note) of `ui.count_data`
STRUCTURE = "hd_structure"  # an upload's declared structure (`structure_state`)
GEO, GEOJSON_CACHE = "hd_geo", "hd_geojson_cache"  # `ui.geo`, `ui.release`
PUBLISHABLE, DRAWN_IN = "hd_publishable", "hd_publishable_seconds"  # `ui.release`
RAN_IN = "res_ran_in"  # the seconds of the Results page's release just made, said once
RANDOMNESS = "hd_randomness"  # the Results page's {mode, seed} (`ui.config`)
GENERATION = "hd_randomness_generation"  # part of its widgets' keys; a load bumps it
INTERVALS, LEDGER_FP = "hd_intervals", "hd_ledger_fp"  # `ui.downloads`, `ui.ledger`
TABLES = "hd_table_bytes"  # `ui.downloads`: the release tables' bytes offered
SPLIT_HELD, SWEEP_JOBS = "hd_split_held", "hd_sweep_jobs"  # `ui.split`, `ui.sweep_jobs`
QUERY_CONFIGS, QUERY_CONFIG_LOADED = "hd_query_config", "hd_query_config_loaded"
SOURCE_CACHE, REPRODUCE_SHOWN = "hd_src_cache", "hd_reproduce"  # `ui.sources`, `ui.reproduce`
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
    return wk.page_key(prefix, CONFIG_UPLOAD)


def sweep_timing_key(state_key: str) -> str:
    """The key of the wall time of the sweep kept under ``state_key``."""
    return f"{state_key}_timing"


def _sweep_settings(prefix: str) -> tuple[str, ...]:
    """The keys of the sweep settings and of the intervals' level of a query page."""
    return tuple(wk.page_key(prefix, k) for k in (wk.SW_MECHS, wk.SW_EPS, wk.SW_TRIALS,
                                                  wk.SW_METRIC, wk.SW_LEVEL, wk.IV_LEVEL))


#: the settings widgets each page keeps across visits to other pages: keys, or prefixes
#: ending in '*' for keys made per view, side or level; never buttons, uploads or charts
#: (their values cannot be set); `PARAMETER_PREFIXES` adds each mechanism's parameters
PAGE_SETTINGS = {
    "Results": (wk.RES_MAP, wk.RES_METRIC, wk.RES_LEVEL, wk.RES_WITHIN, wk.RES_CATEGORY,
                wk.RES_IV_LEVEL),
    "Trade-offs": (wk.SW_MECHS, wk.SW_EPS, wk.SW_TRIALS, wk.SW_METRIC, wk.SW_LEVEL,
                   wk.SWEEP_VIEW, wk.CMP_A, wk.CMP_B, wk.CMP_MECH, wk.CMP_EPS),
    "Group sizes": (wk.page_key(wk.GS, wk.SOURCE), wk.GS_MECHANISM, wk.GS_EPSILON, wk.GS_SEED,
                    wk.GS_LEVEL + "*", wk.GS_REGION + "*", *_sweep_settings(wk.GS),
                    wk.GS_UP_MAX, wk.GS_UP_MIN, wk.GS_UP_ROWS),
    "Flows": (wk.page_key(wk.FL, wk.SOURCE), wk.FL_MECHANISM, wk.FL_EPSILON, wk.FL_DELTA,
              wk.FL_SPLIT, wk.FL_SEED, wk.FL_MAP_LEVEL + "*", wk.FL_MAP_SHOW, wk.FL_MAP_TOP,
              *_sweep_settings(wk.FL)),
    "Range queries": (wk.page_key(wk.RG, wk.SOURCE), wk.RG_MECHANISM, wk.RG_EPSILON,
                      wk.RG_SEED, wk.RG_WORKLOAD, wk.RG_LEVEL + "*", wk.RG_UNIT + "*",
                      wk.RG_CMP_MECHS, wk.RG_MUNICIPALITIES, wk.RG_BANDS, wk.RG_UP_DOMAIN,
                      *_sweep_settings(wk.RG)),
    "Compare": (wk.CMP_SAME_SEED, wk.CMP_METRIC, wk.CMP_LEVEL, wk.CMP_CATEGORY,
                *(wk.page_key(k, "*") for k in (wk.CMP_MECH, wk.CMP_EPS, wk.CMP_SPLIT,
                                                wk.CMP_SEED))),
}
#: page -> (the prefix of its mechanism parameters' keys (`widget_keys.parameter_key`), its
#: query kind)
PARAMETER_PREFIXES = {"Group sizes": (wk.GS, "group-sizes"), "Flows": (wk.FL, "flows"),
                      "Range queries": (wk.RG, "ranges")}


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
    # the settings made for other data (docs/dashboard.md: loading another dataset resets
    # them): the query pages' levels, categories and metrics; the count release's
    # mechanism, parameters, budget and split; the Results page's seed
    for key in (KEPT, SETTINGS, SPLIT_HELD, RANDOMNESS):
        st.session_state.pop(key, None)
    st.session_state.pop(STRUCTURE, None)  # the old upload's declared structure
    st.session_state.pop(INPUT, None)  # the old upload's shape (`ui.inputs`)


def replace_table(table: pd.DataFrame) -> None:
    """Make ``table`` the dataset's table (a reshape of the same upload): a new version,
    results made on the old one dropped, the declared structure kept."""
    ds = ensure_dataset()
    ds["table"], ds["version"] = table, ds["version"] + 1
    _drop_results()


def _drop_results() -> None:
    for key in (RELEASE, RELEASE_KEY, SWEEP, DATA_CACHE):
        st.session_state.pop(key, None)


def ensure_dataset() -> dict:
    """The current dataset; the default sample is loaded on first use."""
    if DATASET not in st.session_state:
        load_sample_into_state(DEFAULT_SAMPLE)
    return st.session_state[DATASET]


def roles() -> dict:
    """The Data page's roles of the current dataset, with `ROLE_DEFAULTS` filled in (a
    new dict: change them with `set_roles`)."""
    ensure_dataset()
    return _full(st.session_state[ROLES])


#: the roles a sample's or a guess's record may leave out, as the Data page writes them
ROLE_DEFAULTS = {"category_columns": [], "local_codes": False, "count_confirmed": True,
                 "missing": "error", "ragged": False}


def _full(r: dict | None) -> dict:
    """The roles ``r`` with `ROLE_DEFAULTS` filled in: the same choices, however written."""
    return {**ROLE_DEFAULTS, **(r or {})}


def set_roles(new_roles: dict) -> None:
    """The Data page's roles; a change of what they say (not of how they are written, a
    default spelled out) drops the release made with the old ones."""
    changed = _full(new_roles) != _full(st.session_state.get(ROLES))
    st.session_state[ROLES] = new_roles
    if changed:
        for key in (RELEASE, RELEASE_KEY, SWEEP):
            st.session_state.pop(key, None)
        settings = st.session_state.get(SETTINGS)
        if settings and len(settings.get("weights", [])) != len(new_roles["levels"]) + 1:
            settings["weights"] = [1.0] * (len(new_roles["levels"]) + 1)


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


def structure_state() -> dict:
    """An upload's declared structure (`ui.structure`): ``declared``, ``geography`` (the
    file's name, sha256 and bytes, or None), ``category_values`` and ``built``."""
    return st.session_state.setdefault(STRUCTURE, {"declared": False, "geography": None,
                                                   "category_values": {}, "built": {}})


def structure_key() -> tuple:
    """What the data built from an upload depends on in its declared structure."""
    s = structure_state()
    geo = s["geography"]
    return (s["declared"], geo["sha256"] if geo else None,
            tuple(sorted(s["category_values"].items())))


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
    """What a release depends on in the settings ``s`` and the session's data (the roles
    with their defaults filled, `_full`): a release made with another key is not the
    current one."""
    return (s["mechanism"], tuple(sorted(params_of(s).items())), s["definition"],
            s["epsilon"], s["rho"], s["delta"], tuple(s["weights"]),
            st.session_state[DATASET]["version"],
            tuple(sorted(roles().items(), key=str)).__repr__(), structure_key())


def release_for(data, cfg: ReleaseConfig, source: NoiseSource | None = None):
    """The release of ``data`` (a `CountData`, or a query page's group-size, flow or range
    data) with the settings ``cfg`` (the Results page's `ReleaseConfig`,
    `ui.config.current_config`, or a query page's, `ui.query_config.page_config`):
    mechanism, parameters, budget and split all read from it, and noise from ``source``
    (default: ``cfg``'s seed, else secure noise)."""
    if source is None:
        source = (NoiseSource(seed=cfg.seed) if cfg.seed is not None
                  else NoiseSource(secure=True))
    split = list(cfg.split) if isinstance(cfg.split, tuple) else cfg.split  # weights: a list
    return get_mechanism(cfg.mechanism).release(data, cfg.budget(), split=split,
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

"""Save and load the configuration (`hierdp_core.config`) of the Group sizes, Flows and Range
queries pages, whose prefixes are ``gs``, ``fl`` and ``rg``: `page_config` makes it from a
page's choices, `config_box` draws the save button and the loader, and `widget_state` turns
a loaded configuration into the values of the page's widgets, written into session state
before the page redraws, so that the page makes the same release (same seed) again.
``hierdp release --config`` takes the same file.

Session-state keys: ``hd_query_config`` (prefix -> the configuration the page shows, as it
would be saved), ``hd_query_config_loaded`` (prefix -> (ok, message) of the last load).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st

from hierdp_core.cli.inputs import DEFAULT_MIN_SIZE
from hierdp_core.config import ConfigError, ReleaseConfig, config_from_dict, config_json
from hierdp_core.errors import HierdpError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.reproduce import reproduce_box
from hierdp_core.ui.session import EPSILON_GRID, config_upload_key
from hierdp_core.ui.session import QUERY_CONFIG_LOADED as LOADED
from hierdp_core.ui.session import QUERY_CONFIGS as CONFIGS
from hierdp_core.ui.sources import PERSON_ROWS, TRIP_ROWS

FLOW_DELTAS = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)  # the Flows page's choices of delta
FLOW_SPLITS = ("uniform", "geometric")
WORKLOAD_KINDS = ("prefix", "all", "random")  # the Range page's named workloads; else bands


@dataclass(frozen=True)
class QueryPage:
    """A query page: its query kind, bundled sample and the roles that sample is released
    with (a configuration of the sample must have them)."""

    query: str
    title: str
    sample: str
    sample_roles: dict


PAGES = {
    wk.GS: QueryPage("group-sizes", "Group sizes", "us-households", {
        "levels": ("state", "county"), "size_column": "size", "count_column": "households",
        "max_size": 1000}),
    wk.FL: QueryPage("flows", "Flows", "us-flights", {
        "origin_levels": ("o_state", "o_airport"), "destination_levels": ("d_state", "d_airport"),
        "count_column": "flights"}),
    wk.RG: QueryPage("ranges", "Range queries", "italy-municipalities", {
        "attribute": "age", "count_column": "residents", "domain": (0, 100)}),
}
RANGE_SAMPLE_LEVELS = ("region", "province", "municipality")
ROLE_KEYS = ("levels", "count_column", "group_column", "size_column", "max_size",
             "min_size", "origin_levels", "destination_levels", "attribute", "domain")


def page_config(prefix: str, spec: dict, upload: dict | None, mechanism: str, params: dict,
                epsilon: float, seed: int, *, declared: bool, delta: float | None = None,
                split: str | None = None, workload: str | None = None,
                merged_rows: int = 0) -> ReleaseConfig:
    """The configuration of page ``prefix``: its data (the bundled sample, or the uploaded
    file's name), the column roles of ``spec`` (the page's input description), the
    mechanism and ``params``, (epsilon, delta), ``split``, ``workload`` and ``seed``; the
    invariants those parameters publish exactly; the groups file ``spec`` records (its
    name, as ``data.groups``); repeated rows summed (``duplicates``) when the page's data
    summed ``merged_rows`` of them, so that its reproduce script and commands declare it."""
    from hierdp_core.invariants import exact_quantities

    page = PAGES[prefix]
    roles = {k: tuple(v) if isinstance(v, list | tuple) else v
             for k, v in spec.items() if k in ROLE_KEYS and v is not None}
    m = get_mechanism(mechanism)
    data = {"sample": page.sample} if upload is None else {"file": upload["name"]}
    if spec.get("groups"):
        data["groups"] = spec["groups"]["file"]
    return ReleaseConfig(
        mechanism=mechanism, epsilon=float(epsilon), delta=delta, data=data,
        query=page.query, structure="declared" if declared else "from-data",
        params=dict(params), split=split, seed=int(seed), workload=workload,
        invariants=tuple(exact_quantities(m, page.query, m.params(**params))),
        duplicates="sum" if merged_rows else "error", **roles)


def _check(page: QueryPage, cfg: ReleaseConfig) -> list[str]:
    """What the page cannot show of ``cfg``: a `ConfigError` for what would change the
    release, notes for the rest."""
    if cfg.query != page.query:
        raise ConfigError(f"this configuration is for {cfg.query}: load it on that page")
    if cfg.mechanism not in {i.name for i in list_mechanisms(page.query)}:
        raise ConfigError(f"{cfg.mechanism!r} is not a {page.query} mechanism")
    get_mechanism(cfg.mechanism).params(**cfg.params)  # a MechanismError names a bad one
    if cfg.rho is not None or cfg.epsilon not in EPSILON_GRID:
        raise ConfigError(f"this page releases at ε in {list(EPSILON_GRID)}; use this "
                          "configuration with hierdp release --config")
    if page.query == "flows":
        if cfg.delta not in FLOW_DELTAS or cfg.split not in (None, *FLOW_SPLITS):
            raise ConfigError(f"the Flows page takes δ in {list(FLOW_DELTAS)} and the "
                              f"split {' or '.join(FLOW_SPLITS)}; got δ = {cfg.delta}, split "
                              f"{cfg.split!r}")
        if cfg.tree not in (None, "destination"):
            raise ConfigError("the Flows page refines the destination first (tree "
                              "'destination'); this configuration refines the origin")
    elif cfg.delta is not None or cfg.split not in (None, "uniform"):
        raise ConfigError(f"the {page.title} page releases under pure ε-DP with the uniform "
                          "split; use this configuration with hierdp release --config")
    if page.query == "ranges" and cfg.workload == "identity":
        raise ConfigError("the Range queries page has no identity workload")
    return ([] if cfg.seed is not None else
            ["the page explores with a seed (0 here); draw the publishable release beside the "
             "downloads for secure noise"])


def _sample_state(prefix: str, page: QueryPage, cfg: ReleaseConfig) -> dict:
    given = {k: getattr(cfg, k) for k in page.sample_roles}
    if given != page.sample_roles and not (prefix == wk.RG and cfg.domain is None
                                           and {**given, "domain": (0, 100)}
                                           == page.sample_roles):
        raise ConfigError(f"the bundled sample {page.sample} is released with "
                          f"{page.sample_roles}; this configuration has {given}")
    if prefix == wk.GS and cfg.levels != page.sample_roles["levels"]:
        raise ConfigError(f"the bundled sample {page.sample} has the levels state, county")
    if prefix == wk.RG:
        if cfg.levels not in (RANGE_SAMPLE_LEVELS[:2], RANGE_SAMPLE_LEVELS):
            raise ConfigError("the bundled Italian sample has the levels region, province "
                              "and optionally municipality")
        return {wk.RG_MUNICIPALITIES: len(cfg.levels) == 3}
    return {}


def _upload_state(prefix: str, cfg: ReleaseConfig) -> dict:
    """The role pickers of an uploaded table (`ui.sources`, `ui.gs_upload`); the smallest
    size m defaults to the command line's."""
    if prefix == wk.GS:
        person = cfg.group_column is not None
        return {wk.GS_UP_LEVELS: list(cfg.levels), wk.GS_UP_ROWS: "person" if person else "size",
                **({wk.GS_UP_GROUP: cfg.group_column} if person else
                   {wk.GS_UP_SIZE: cfg.size_column, wk.GS_UP_COUNT: cfg.count_column}),
                wk.GS_UP_MAX: int(cfg.max_size or 64),
                wk.GS_UP_MIN: int(DEFAULT_MIN_SIZE if cfg.min_size is None else cfg.min_size)}
    if prefix == wk.FL:
        return {wk.FL_UP_ORIGIN: list(cfg.origin_levels),
                wk.FL_UP_DESTINATION: list(cfg.destination_levels),
                wk.FL_UP_COUNT: cfg.count_column or TRIP_ROWS}
    return {wk.RG_UP_LEVELS: list(cfg.levels), wk.RG_UP_ATTRIBUTE: cfg.attribute,
            wk.RG_UP_COUNT: cfg.count_column or PERSON_ROWS,
            wk.RG_UP_DOMAIN: f"{cfg.domain[0]}-{cfg.domain[1]}" if cfg.domain else ""}


def _workload_state(cfg: ReleaseConfig, upload: bool) -> dict:
    kind = cfg.workload or "prefix"
    if kind in WORKLOAD_KINDS:
        return {wk.RG_WORKLOAD: kind}
    if not upload:
        return {wk.RG_WORKLOAD: "bands", wk.RG_BANDS: kind}
    if cfg.domain is None:
        raise ConfigError("bands on your table need its public domain in the configuration")
    lo, hi = cfg.domain
    return {wk.RG_WORKLOAD: "bands", wk.range_upload_bands(lo, hi): kind}


def widget_state(prefix: str, cfg: ReleaseConfig, upload_name: str | None
                 ) -> tuple[dict, list[str]]:
    """(widget key -> value, notes) that make page ``prefix`` show ``cfg``; ``upload_name``
    is the table uploaded now (None: none). Raises `ConfigError` (or the mechanism's
    `MechanismError`) for a configuration the page cannot reproduce."""
    page = PAGES[prefix]
    notes = _check(page, cfg)
    if "sample" in cfg.data:
        if cfg.data["sample"] != page.sample:
            raise ConfigError(f"the {page.title} page's sample is {page.sample}, not "
                              f"{cfg.data['sample']}")
        state = {wk.page_key(prefix, wk.SOURCE): "sample", **_sample_state(prefix, page, cfg)}
    elif cfg.data.get("file") is not None and cfg.data["file"] == upload_name:
        state = {wk.page_key(prefix, wk.SOURCE): "upload", **_upload_state(prefix, cfg)}
        if cfg.data.get("groups"):
            notes.append(f"upload the groups file {cfg.data['groups']!r} on the page: a file "
                         "is never loaded from a configuration")
    else:
        raise ConfigError(f"the configuration is for the file {cfg.data.get('file')!r}: "
                          "upload it on the Data page first, then load the configuration")
    state.update({wk.page_key(prefix, wk.MECHANISM): cfg.mechanism,
                  wk.page_key(prefix, wk.EPSILON): cfg.epsilon,
                  wk.page_key(prefix, wk.SEED): int(cfg.seed or 0)})
    state.update({wk.parameter_key(prefix, cfg.mechanism, name): value for name, value in
                  get_mechanism(cfg.mechanism).params(**cfg.params).items()})
    if prefix == wk.FL:
        state.update({wk.FL_DELTA: cfg.delta, wk.FL_SPLIT: cfg.split or "uniform"})
    if prefix == wk.RG:
        state.update(_workload_state(cfg, "file" in cfg.data))
    return state, notes


def _load(prefix: str, upload_name: str | None) -> None:
    """Apply the uploaded configuration (the loader's on_change, before the page redraws)."""
    uploaded = st.session_state.get(config_upload_key(prefix))
    if uploaded is None:
        return
    try:
        state, notes = widget_state(prefix, config_from_dict(json.loads(uploaded.getvalue())),
                                    upload_name)
    except (HierdpError, ValueError) as exc:
        outcome = (False, f"The configuration cannot be loaded: {exc}")
    else:
        st.session_state.update(state)
        outcome = (True, f"Loaded {uploaded.name}. " + " ".join(f"Note: {n}." for n in notes))
    st.session_state.setdefault(LOADED, {})[prefix] = outcome


def config_box(prefix: str, cfg: ReleaseConfig, upload: dict | None) -> None:
    """An expander to save ``cfg`` (the page's configuration) as JSON or load a saved one
    into the page's widgets."""
    st.session_state.setdefault(CONFIGS, {})[prefix] = cfg
    with st.expander("Configuration: save it, or load a saved one",
                     icon=":material/settings:"):
        st.download_button("Save the configuration (JSON)", config_json(cfg),
                           f"hierdp_{cfg.query}_config.json", "application/json",
                           key=wk.page_key(prefix, wk.CFG_SAVE))
        st.file_uploader("Load a configuration (JSON)", type=["json"],
                         key=config_upload_key(prefix), on_change=_load,
                         args=(prefix, None if upload is None else upload["name"]))
        st.caption("Data, column roles, mechanism, parameters, budget, split, workload and "
                   "seed; the same file works on the command line: `hierdp release "
                   f"--config hierdp_{cfg.query}_config.json` (a bundled sample: write it "
                   f"first with `hierdp sample {PAGES[prefix].sample} --out FILE`).")
        loaded = st.session_state.get(LOADED, {}).pop(prefix, None)
        if loaded:
            (st.success if loaded[0] else st.error)(loaded[1])
    reproduce_box(cfg, f"hierdp_{cfg.query}_config.json", prefix)

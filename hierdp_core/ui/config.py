"""The dashboard's configuration as a `hierdp_core.config.ReleaseConfig`: saved from the
session (data, column roles, mechanism, budget, split, the Results page's seed) and loaded
back into it, so the Results page redraws the same release.

Session keys written on load: ``hd_dataset`` / ``hd_roles`` (a bundled sample is loaded),
``hd_settings``, the split sliders (`ui.split.set_split`), and ``hd_randomness``: the
randomness (mode and seed) of the Results page. That plain key, not the page's widgets, holds
it: Streamlit forgets a widget's value once a run of another page completes, so the seed a
user typed (or a configuration set) would fall back to 0 on the next visit. The widgets
(`randomness_widgets`) start from it and write back to it; a load bumps their generation so
they are drawn anew with the loaded values.
"""

from __future__ import annotations

import streamlit as st

from hierdp_core.config import ConfigError, ReleaseConfig
from hierdp_core.data.sample_files import sample_category_values
from hierdp_core.data.samples import SAMPLES
from hierdp_core.invariants import exact_quantities
from hierdp_core.privacy.budget import split_shares
from hierdp_core.ui import session
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import structure as structure
from hierdp_core.ui.count_data import count_data
from hierdp_core.ui.session import GENERATION, RANDOMNESS

MODE, SEED = "mode", "seed"
#: the Results page's randomness options (short: the seed box beside them shows its +/-)
EXPLORATION = "Exploration (seeded)"
#: a preview: charged to no budget, so not publishable (Export draws the release to publish)
SECURE = "Secure noise (preview)"


def current_config(release=None) -> ReleaseConfig:
    """The configuration of the count release as the session holds it; the seed is
    ``release``'s when given (None for secure noise), else the Results page's."""
    ds, r = session.ensure_dataset(), session.roles()
    data = count_data()
    s = session.settings(data.hierarchy.n_levels)
    declared = session.structure_state()
    if ds["sample"]:
        source = {"sample": ds["sample"]}
    else:
        geography = declared.get("geography") if declared.get("declared") else None
        source = {"file": ds["name"], **({"geography": geography["name"]} if geography
                                         else {})}
    if not data.declared_structure:  # the table's own values are not public: not saved
        values = {}
    elif ds["sample"]:
        values = sample_category_values(ds["sample"], r["category_columns"])
    else:
        values = {c: declared["category_values"][c] for c in r["category_columns"]}
    zcdp = s["definition"] == "zcdp"
    randomness = randomness_held()
    if release is not None:
        seed = release.randomness.get("seed")
    elif randomness[MODE] == EXPLORATION:
        seed = int(randomness[SEED])
    else:
        seed = None
    return ReleaseConfig(
        mechanism=s["mechanism"], epsilon=None if zcdp else float(s["epsilon"]),
        rho=float(s["rho"]) if zcdp else None, delta=float(s["delta"]) if zcdp else None,
        data=source, levels=tuple(r["levels"]), count_column=r["count_column"],
        category_columns=tuple(r["category_columns"]), category_values=values,
        structure="declared" if data.declared_structure else "from-data",
        params=dict(s["params"]), split=tuple(float(w) for w in s["weights"]),
        seed=None if seed is None else int(seed),
        invariants=tuple(exact_quantities(None, "counts", s["params"],
                                          bool(r["category_columns"]))),
        names=session.name_columns(ds, list(r["levels"])),  # how the table is read: labels
        # the dashboard sums rows repeating a cell (no choice yet): said when it did
        duplicates="sum" if getattr(data, "merged_rows", 0) else "error")


def apply_config(cfg: ReleaseConfig) -> list[str]:
    """Make ``cfg`` the session's configuration (a bundled sample is loaded; an upload must
    be the one loaded now). Returns notes on what the dashboard cannot show exactly.
    Raises `ConfigError` for a configuration the dashboard cannot take."""
    if cfg.query != "counts":
        page = {"group-sizes": "Group sizes", "flows": "Flows", "ranges": "Range queries"}
        raise ConfigError(f"this configuration is for {cfg.query}: load it on the "
                          f"{page[cfg.query]} page (or use it with hierdp release --config)")
    ds = session.ensure_dataset()
    if "sample" in cfg.data:
        if cfg.data["sample"] not in SAMPLES:
            raise ConfigError(f"unknown sample {cfg.data['sample']!r}; the dashboard has "
                              f"{list(SAMPLES)}")
        if ds["sample"] != cfg.data["sample"]:
            session.load_sample_into_state(cfg.data["sample"])
    elif ds["sample"] or ds["name"] != cfg.data.get("file"):
        raise ConfigError(f"the configuration is for the file {cfg.data.get('file')!r}: "
                          "upload it on the Data page first, then load the configuration")
    roles = session.roles()
    if cfg.levels:
        session.set_roles({**roles, "levels": list(cfg.levels), "count_column": cfg.count_column,
                                "category_columns": list(cfg.category_columns)})
    n_levels = len(session.roles()["levels"]) + 1
    s = session.settings(n_levels)
    notes = []
    s.update(mechanism=cfg.mechanism, params=dict(cfg.params))
    if cfg.rho is not None:
        s.update(definition="zcdp", rho=cfg.rho, delta=cfg.delta or s["delta"])
    else:
        s.update(definition="pure-dp", epsilon=cfg.epsilon)
        if cfg.delta is not None:
            notes.append(f"δ = {cfg.delta:g} is not used: the dashboard runs pure ε-DP")
        if cfg.epsilon not in session.EPSILON_GRID:
            notes.append(f"ε = {cfg.epsilon:g} is used, but the Mechanism & budget page's "
                         "slider has no such step: moving it there changes ε")
    weights = (split_shares(n_levels, cfg.split) if isinstance(cfg.split, str)
               else cfg.split or [1.0] * n_levels)
    if len(weights) != n_levels:
        raise ConfigError(f"the split has {len(weights)} weights for {n_levels} levels "
                          "(one per level, root first)")
    split_ui.set_split(s, list(weights))
    st.session_state[RANDOMNESS] = {MODE: SECURE if cfg.seed is None else EXPLORATION,
                                    SEED: int(cfg.seed or 0)}
    st.session_state[GENERATION] = st.session_state.get(GENERATION, 0) + 1
    return notes


def randomness_held() -> dict:
    """The session's randomness, {MODE, SEED}: exploration with seed 0 until set."""
    return {MODE: EXPLORATION, SEED: 0, **st.session_state.get(RANDOMNESS, {})}


def widget_keys() -> tuple[str, str]:
    """The keys of the Results page's randomness widgets (mode, seed) in this generation."""
    generation = st.session_state.get(GENERATION, 0)
    return f"rand_mode_{generation}", f"seed_{generation}"


def randomness_widgets(mode_column, seed_column) -> int | None:
    """Draw the Results page's randomness radio and seed box in the given columns, starting
    from the session's randomness, and keep what they show as the session's. Returns the
    seed of an exploration release, None for secure noise. Their labels are hidden (one
    line above the map: the options name the randomness, the column beside the box says
    "Seed"; screen readers still read both labels)."""
    held, (mode_key, seed_key) = randomness_held(), widget_keys()
    with mode_column:
        mode = st.radio("Randomness", [EXPLORATION, SECURE], key=mode_key, horizontal=True,
                        index=[EXPLORATION, SECURE].index(held[MODE]),
                        label_visibility="collapsed")
    with seed_column:
        seed = st.number_input("Seed", min_value=0, step=1, value=int(held[SEED]),
                               key=seed_key, disabled=mode != EXPLORATION,
                               label_visibility="collapsed")
    st.session_state[RANDOMNESS] = {MODE: mode, SEED: int(seed)}
    return int(seed) if mode == EXPLORATION else None

"""Shared widgets and page chrome of the dashboard: page header and sidebar, mechanism and
sweep pickers, links to the next step, friendly errors, readable unit names."""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import streamlit as st
from PIL import Image

from hierdp_core import palette
from hierdp_core.errors import HierdpError
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.queries.counts import CountData
from hierdp_core.report.summary import plural_noun
from hierdp_core.ui import map_layers, sweep_jobs
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.count_data import count_data
from hierdp_core.ui.session import (
    DATASET,
    EPSILON_GRID,
    PALETTE_CHOICE,
    PALETTE_PICK,
    ROLES,
    SETTINGS,
    current_release,
    ensure_dataset,
    keep_page_settings,
    roles,
    set_roles,
    sweep_timing_key,
)
from hierdp_core.verdict import not_private_reason

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
SWEEP_TRIALS = 2  # the trials of a sweep unless chosen otherwise


def mechanism_label(infos: dict, not_private: str = "NOT private as published"):
    """A ``format_func`` for pickers of the mechanisms in ``infos``: the plain name, with
    ``(not_private)`` after those that are not private."""
    return lambda n: mechanism_title(n) + ("" if infos[n].private else f" ({not_private})")


def mechanism_picker(infos: dict, default: str, key: str, *,
                     not_private: str = "NOT private as published", about=None) -> str:
    """Select box of the mechanisms in ``infos`` (name -> MechanismInfo; non-private ones
    labelled ``not_private``), with the chosen one's description, reference and warning (an
    red box naming the flaw and the private alternative for a non-private one) under it or
    in the container ``about``. Returns the name (the registry's key)."""
    names = list(infos)
    name = st.selectbox("Mechanism", names, index=names.index(default) if default in names
                        else 0, format_func=mechanism_label(infos, not_private), key=key)
    info = infos[name]
    with about or st.container():
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


def parameter_widget(p, key: str, value=None):
    """The widget of one mechanism parameter ``p`` (a `Parameter`), chosen by its declared
    type: a choice as radio buttons, a bool as a checkbox, an int or float as a number input
    within its declared bounds (``value`` clipped to them). Shows ``value`` (default: the
    parameter's default) first; returns the value chosen."""
    value = p.default if value is None else value
    label = p.label or p.name.replace("_", " ").capitalize()
    if p.type == "choice":
        choices = list(p.choices)
        return st.radio(label, choices, index=choices.index(value) if value in choices else 0,
                        horizontal=True, help=p.help, key=key)
    if p.type == "bool":
        return st.checkbox(label, value=bool(value), help=p.help, key=key)
    cast = int if p.type == "int" else float
    low, high = (None if b is None else cast(b) for b in (p.minimum, p.maximum))
    value = float(np.clip(value, -np.inf if low is None else low,
                          np.inf if high is None else high))
    return st.number_input(label, low, high, cast(value), help=p.help, key=key)


def parameter_widgets(info, prefix: str, values: dict | None = None,
                      shown: tuple[str, ...] | None = None) -> dict:
    """`parameter_widget` for every parameter of the mechanism ``info`` (keys
    ``{prefix}_{mechanism}_{parameter}``, showing ``values`` where given); with ``shown``,
    the parameters not named there go under "More options". Returns name -> value."""
    values = values or {}
    first = [p for p in info.parameters if shown is None or p.name in shown]
    more = [p for p in info.parameters if p not in first]

    def draw(params):
        return {p.name: parameter_widget(p, wk.parameter_key(prefix, info.name, p.name),
                                         values.get(p.name)) for p in params}

    chosen = draw(first)
    if more:
        with st.expander("More options"):
            chosen.update(draw(more))
    return chosen


def sweep_controls(prefix: str, names: list[str], defaults, eps_default, metrics: dict,
                   format_func=mechanism_title):
    """The trade-off sweep widgets (keys ``{prefix}_sw_*``): mechanisms (shown with
    ``format_func``), epsilons, trials, metric (``metrics``: column -> label) and the run
    button. Returns (mechanisms, sorted epsilons, trials, metric, clicked)."""
    st.subheader("Trade-off: error against ε")
    s1 = st.container()  # a row of its own: every default mechanism's name whole at 1280 px
    s2, s3, s4 = st.columns([2, 1, 2])
    with s1:
        chosen = st.multiselect("Mechanisms", names, default=[n for n in defaults if n in names],
                                format_func=format_func, key=wk.page_key(prefix, wk.SW_MECHS))
    with s2:
        eps_grid = st.multiselect("ε values", list(EPSILON_GRID), default=list(eps_default),
                                  key=wk.page_key(prefix, wk.SW_EPS))
    with s3:
        trials = st.slider("Trials", 1, 5, SWEEP_TRIALS, key=wk.page_key(prefix, wk.SW_TRIALS))
    with s4:
        metric = st.selectbox("Metric", list(metrics), format_func=metrics.get,
                              key=wk.page_key(prefix, wk.SW_METRIC))
    clicked = st.button("Run the sweep", key=wk.page_key(prefix, wk.SW_RUN),
                        disabled=not chosen or not eps_grid)
    return chosen, sorted(eps_grid), trials, metric, clicked


def run_sweep(state_key: str, compute, key=None, *, shared: bool = False) -> None:
    """Run ``compute(progress)`` under a progress bar and keep its result in session state
    under ``state_key``, and what it took under ``state_key + "_timing"`` (`sweep_timing`);
    a HierdpError becomes a message. With a ``key`` (the data and the settings) the sweep is
    that of `sweep_jobs`: kept once finished, and only waited for if it started in the
    background (``shared``: the key names a bundled sample, kept for every session)."""
    pressed = time.perf_counter()
    job = sweep_jobs.job_for(key, compute, shared=shared)
    bar = st.progress(0.0, text="Sweeping…")
    try:
        st.session_state[state_key] = sweep_jobs.wait(job, lambda done, total: bar.progress(
            done / total, text=f"Release {done} of {total}") if total
            else bar.progress(0.0, text="Waiting for the sweep to start…"))
        st.session_state[sweep_timing_key(state_key)] = job.timing(pressed)
    except HierdpError as exc:
        st.error(str(exc))
    bar.empty()


def sweep_timing(state_key: str) -> None:
    """The wall time of the sweep kept under ``state_key`` (see `run_sweep`), if any."""
    if timing := st.session_state.get(sweep_timing_key(state_key)):
        st.caption(f"Sweep: {timing}")


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


# Streamlit leaves 6rem above a wide page's title; 2rem keeps the first figure of a page
# (the Results map, the Home page's Start buttons) above the fold at 1280 x 800
COMPACT_TOP = "<style>[data-testid='stMainBlockContainer']{padding-top:2rem}</style>"


def page_header(title: str, caption: str):
    """Page config, sidebar navigation and setup summary, title. Returns the sidebar's
    summary slot: pass it to `sidebar_status` to refresh it after the page changed state.
    The first page shown by a server process starts writing the bundled map files."""
    st.set_page_config(page_title=f"{title} · hierdp", page_icon=page_icon(), layout="wide")
    keep_page_settings(title)
    map_layers.prepare_bundled_maps()
    ensure_dataset()
    with st.sidebar:
        st.markdown("## hierdp")
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)
        st.divider()
        slot = st.empty()
        st.divider()
        palette_picker()
    st.html(COMPACT_TOP)
    st.title(title)
    st.caption(caption)
    sidebar_status(slot)
    return slot


def _palette_chosen() -> None:
    st.session_state[PALETTE_CHOICE] = st.session_state[PALETTE_PICK]


def palette_picker() -> None:
    """The colour choice in the sidebar (kept across pages in ``hd_palette``), made the
    palette of this run's figures with the browser's light or dark theme
    (`hierdp_core.palette.use`): maps and charts follow both."""
    # the widget is another one on every page: it shows the choice kept across them
    st.session_state[PALETTE_PICK] = st.session_state.setdefault(PALETTE_CHOICE,
                                                                   palette.DEFAULT)
    choice = st.selectbox("Colours", list(palette.PALETTES), key=PALETTE_PICK,
                          format_func=lambda name: palette.PALETTES[name].label,
                          on_change=_palette_chosen,
                          help="Colour-blind safe choices keep categories, map shades and "
                               "errors above or below the truth apart in every common form "
                               "of colour blindness. The light or dark theme is the "
                               "browser's (or the ⋮ menu's Settings).")
    use_chosen_palette(choice)


def use_chosen_palette(choice: str | None = None) -> None:
    """Make ``choice`` (default: the one kept in ``hd_palette``) and the browser's light or
    dark theme the look of the figures built from now on in this run. A fragment calls it
    first: its reruns do not run the page header that sets them (and would draw light)."""
    palette.use(choice or st.session_state.get(PALETTE_CHOICE, palette.DEFAULT),
                dark=getattr(st.context.theme, "type", None) == "dark")


def sidebar_status(slot, budget_on_page: bool = False) -> None:
    """The count release's setup (data, levels, mechanism, release) in the sidebar slot; the
    group-size, flow and range pages keep their own data and settings. With
    ``budget_on_page`` the budget is not shown but pointed to: a page whose fragment moves it
    (Results) cannot refresh the sidebar, since a fragment writing outside itself can blank
    the app in Streamlit 1.67 ("Cannot set a node at a delta path", streamlit#16281)."""
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
            if budget_on_page:
                budget = "ε or ρ: the slider above the map"
            elif s["definition"] == "pure-dp":
                budget = f"ε = {s['epsilon']:g}"
            else:
                budget = f"ρ = {s['rho']:g}"
            st.markdown(f"**Mechanism:** {mechanism_title(s['mechanism'])} · {budget}")
        st.markdown("**Release:** " + ("ready" if current_release() is not None
                                       else "not run for these settings"))


def friendly_error(exc: Exception) -> None:
    """Show an error without a traceback."""
    if isinstance(exc, HierdpError):
        st.error(str(exc))
    else:
        st.error(f"Something went wrong ({type(exc).__name__}): {exc}")


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


def require_count_data() -> CountData:
    """CountData, or a friendly message and stop the page."""
    try:
        return count_data()
    except HierdpError as exc:
        st.error(f"The data cannot be used as set up: {exc}")
        next_page("pages/1_Data.py", "Fix the column roles on the Data page")
        st.stop()


plural = plural_noun  # county -> counties (`report.summary.plural_noun`)


def node_display_names(data: CountData, level: int) -> np.ndarray:
    """Readable name of every node of a level: 'name (code)' when a name is known, the
    code its id ('9/01') where codes repeat across parents (local codes); a unit passing
    its parent through the level by its label, as the release table labels it
    ('Comunidad de Madrid (no provincia)')."""
    h = data.hierarchy
    codes = np.asarray(h.codes[level]).astype(str).astype(object)
    if np.unique(codes).size < codes.size:
        codes = h.node_ids()[h.level_slice(level)]
    shown = codes
    if level in h.names:
        names = np.asarray(h.names[level]).astype(object)
        shown = np.where(names != codes, names + " (" + codes + ")", codes)
    through = h.pass_through()[h.level_slice(level)]
    return np.where(through, h.labels()[h.level_slice(level)], shown) if through.any() \
        else shown


def all_display_names(data: CountData) -> np.ndarray:
    """Readable names of every node, root first."""
    parts = [np.array([data.hierarchy.level_names[0]], dtype=object)]
    parts += [node_display_names(data, level) for level in range(1, data.hierarchy.n_levels)]
    return np.concatenate(parts)


def treemap_root(h, names: np.ndarray, key: str, max_nodes: int) -> int:
    """The node the Hierarchy treemap shows from: the root, or, when the whole tree has
    more than ``max_nodes`` nodes (the treemap then stops above the finest levels), the
    unit chosen in "Zoom into" boxes, one per level above the finest, side by side: each
    lists the units under the one chosen in the box before it (so no box holds more than
    one unit's children, however large the tree), and a box appears once the one before it
    has a unit chosen."""
    if h.n_nodes <= max_nodes or h.depth < 2:
        return 0
    st.caption(f"The tree has {h.n_nodes:,} nodes, too many to draw at once: choose a unit "
               "to see the finest units below it.")
    root = 0
    for box, level in zip(st.columns(h.depth - 1), range(1, h.depth), strict=True):
        sl = h.level_slice(level)
        children = np.flatnonzero(h.parent[sl] == root) + sl.start
        whole = "the whole tree" if root == 0 else f"all of {names[root]}"

        def label(node: int, whole: str = whole, top: int = root) -> str:
            return whole if node == top else str(names[node])

        with box:  # a box per chosen unit: a new choice above starts the next one afresh
            chosen = st.selectbox(f"Zoom into a unit of level '{h.level_names[level]}'",
                                  [root, *children.tolist()], key=wk.treemap_zoom(key, root),
                                  format_func=label)
        if chosen == root:
            break
        root = int(chosen)
    return root


def summed_rows_note(data, bundled: bool) -> None:
    """Says, under a query's data, how many rows repeating a released cell (a unit and a
    category, size, value or O/D pair) the dashboard summed into it, and that the command
    line asks for it to be declared (``--duplicates sum``); nothing when none were, nor for
    a ``bundled`` sample, whose rows are finer than its releases by design (Italy's by
    municipality, sex and single year of age): the note asks a user to check their table."""
    merged = int(getattr(data, "merged_rows", 0) or 0)
    if merged and not bundled:
        rows = "1 row" if merged == 1 else f"{merged:,} rows"
        st.caption(f":material/functions: {rows} of the table repeat the cell of an earlier "
                   "row (the table is finer than the release, or holds a row twice) and were "
                   "summed into it. Check that this is meant: the command line refuses such "
                   "rows unless told `--duplicates sum`.")


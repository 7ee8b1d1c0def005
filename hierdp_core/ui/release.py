"""The dashboard's release widgets: the exploration release of a query page made and kept
(`cached_release`), the publishable verdict, downloads named after it with intervals on
every value (`hierdp_core.ui.downloads`), and the publishable release (the same
configuration drawn again with secure noise).

Session-state keys: ``hd_publishable`` maps a page's prefix to (token of the exploration
release it redraws, the secure release): a new exploration release (new data, settings or
seed) has a new token, so a stale secure release is never offered; ``hd_publishable_seconds``
maps it to (that token, the seconds the draw took). ``hd_geojson_cache`` holds the GeoJSON
bytes of the latest releases per (token, level, level of the intervals); ``hd_intervals``
(`hierdp_core.ui.downloads`) the intervals of the latest releases. Each publishable draw is
counted in the dataset's budget across releases (`hierdp_core.ui.ledger`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import NamedTuple

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from hierdp_core.errors import HierdpError
from hierdp_core.memory_of_data import plan_of_data
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.workloads import Workload
from hierdp_core.table_rules import RULE_NAMES, table_rules
from hierdp_core.ui import ledger as ledger_ui
from hierdp_core.ui import sweep_jobs
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.downloads import (
    attach_intervals,
    bootstrap_progress,
    download_buttons,
    interval_level,
    release_token,
)
from hierdp_core.ui.session import DRAWN_IN, GEOJSON_CACHE, PUBLISHABLE
from hierdp_core.verdict import (
    DEFAULT_MAX_DELTA,
    DEFAULT_MAX_EPSILON,
    NOT_CHARGED,
    OVER_CEILING,
    OVER_DELTA,
    SEEDED,
    describe_ceiling,
    is_charged,
    release_verdict,
)

WHAT_MAKES_IT_PUBLISHABLE = (
    "A release can be published as it is only when all five hold:\n\n"
    "1. **Secure noise**: exact integer noise from a keystream keyed by the operating "
    "system, applied to the true values. Exploration runs use a seed so that figures can be redrawn, and "
    "anyone who knows the seed can subtract the noise.\n"
    "2. **Charged to the dataset's budget**: the publishable release is drawn with the "
    "\"Draw the publishable release\" button, which counts it in the dataset's budget "
    "across releases before drawing. Secure noise drawn elsewhere (the Results page's "
    "secure preview) is counted nowhere: it could be redrawn until one draw looked good "
    "next to the truth, and its ε would no longer hold.\n"
    "3. **A private mechanism**: mechanisms that are not differentially private as "
    "published (marked in the pickers) never are.\n"
    "4. **A declared structure**: the units, categories and domain come from a public "
    "declaration (a bundled sample's unit and code lists, or for your own table the "
    "geography file and category values declared on the Data page, with the public "
    "largest size or domain), not from the confidential table: a table's own units and "
    "values would tell the reader who is in it (a unit with nobody in it would be "
    "missing).\n"
    f"5. **A budget within the public ceiling**: ε at most {DEFAULT_MAX_EPSILON:g} (the "
    "command line's `--max-epsilon`); under ρ-zCDP the ε it implies at its δ, "
    "ρ + 2√(ρ ln(1/δ)). Above it the noise barely protects anyone. δ at most "
    f"{DEFAULT_MAX_DELTA:g} (`--max-delta`).\n\n"
    "The **table rules** (every parent equals the sum of its children, no negative and no "
    "fractional value) are stated beside the verdict, counted on the released values: a "
    "private release can break them (least squares gives real values), and its manifest "
    "says so. The manifest carries its own checksum and a signature made with your local "
    "key; `hierdp verify FOLDER` checks a release folder.")


def verdict_box(release, structure_declared: bool) -> dict:
    """A green box for a publishable release, an orange one listing the reasons otherwise,
    then the public epsilon ceiling and the table rules of the released values; returns
    the verdict."""
    verdict = release_verdict(release, structure_declared=structure_declared)
    if verdict["publishable"]:
        st.success("**Publishable as it is**: secure noise charged to the dataset's budget, "
                   "a private mechanism, a declared structure, a budget within the public "
                   "ceiling.",
                   icon=":material/verified:")
    else:
        st.warning("**Not publishable as it is**:\n" + "\n".join(
            f"- {reason}" for reason in verdict["not_publishable_because"]),
            icon=":material/block:")
    st.caption(f"Privacy: {describe_ceiling(verdict['epsilon_ceiling'])} (the public "
               f"ceiling, default {DEFAULT_MAX_EPSILON:g}). " + rules_text(table_rules(release)))
    return verdict


def verdict_badge(release, structure_declared: bool) -> None:
    """The verdict in one short line (a green or an orange badge), for a page that shows
    the full `verdict_box` further down."""
    if release_verdict(release, structure_declared=structure_declared)["publishable"]:
        st.markdown(":green-badge[:material/verified: Publishable as it is]")
    else:
        st.markdown(":orange-badge[:material/block: Not publishable: why, under the map]")


def rules_text(rules: dict) -> str:
    """The table rules in a sentence, with the counts of the cells that break them."""
    parts = [f":material/check: {RULE_NAMES[name]}" if rules[name]["holds"] else
             f":material/close: **not {RULE_NAMES[name]}**: {rules[name]['violating_cells']:,}"
             f" of {rules[name]['cells']:,} cells" for name in RULE_NAMES]
    return "Table rules of the released values: " + " · ".join(parts) + "."


def cached_release(state_key: str, key: tuple, release_with: Callable[[NoiseSource], object],
                   evaluate: Callable[[object], object], seed: int, *, run: bool = False,
                   what: str = "", wait_for_click: str = "", data=None,
                   mechanism: str | None = None):
    """The exploration release of a query page for the settings ``key``: the one kept under
    ``state_key`` as (key, release, metrics, seconds), else (or when ``run``, the Run
    button) ``release_with(NoiseSource(seed=seed))`` is made under a spinner (``what``
    names it), ``evaluate(release)`` gives its metrics, and both are kept. With ``data``
    and ``mechanism`` the release's memory plan is checked first (`memory_plan`, the
    default limit). A HierdpError stops the page with a message; ``wait_for_click`` (a
    slow configuration) stops it with that message until the button is pressed. Returns
    (release, metrics, seconds)."""
    state = st.session_state.get(state_key)
    if run or state is None or state[0] != key:
        try:
            if data is not None:
                plan_of_data(data, mechanism).check(None)
        except HierdpError as exc:
            st.error(f"The release cannot run: {exc}")
            st.stop()
        if wait_for_click and not run:
            st.info(wait_for_click)
            st.stop()
        with st.spinner(f"Releasing {what}…"), sweep_jobs.foreground():
            started = time.perf_counter()
            try:
                release = release_with(NoiseSource(seed=int(seed)))
            except HierdpError as exc:
                st.error(f"The release failed: {exc}")
                st.stop()
            seconds = time.perf_counter() - started
        state = (key, release, evaluate(release), seconds)
        st.session_state[state_key] = state
    return state[1:]


class Offered(NamedTuple):
    """The releases a query page's Export section offers for download, each carrying its
    intervals: the exploration one (None until its intervals are made) and the publishable
    one (None until drawn, or while its intervals at a new level are not made)."""

    exploration: object | None
    secure: object | None


def release_downloads(release, prefix: str, stem: str, input_spec: dict, rows: int, *,
                      structure_declared: bool, redraw: Callable[[], object] | None = None,
                      rows_of: Callable[[object], int] | None = None,
                      workload: Workload | None = None, seconds: float = 0.0,
                      heading: bool = True, wait: bool = False,
                      ledger: ledger_ui.Charge | None = None) -> Offered:
    """The "Export" section of a query page (its heading unless ``heading`` is False): the
    verdict, the level of the intervals, the downloads (`download_buttons`: every file with
    intervals; ``workload``: a range release's public one; ``seconds``: the time the
    release took, to say how long a bootstrap will), and for a release not charged to the
    budget ledger (seeded, or the Results page's secure preview) the publishable one
    (`publishable_release`, with ``redraw``: the same configuration with secure noise, its
    intervals made with it; ``rows_of`` counts a release's table rows; ``ledger``: its
    `hierdp_core.ui.ledger.Charge`, needed with ``redraw``). With ``wait`` the files come
    without a click (their intervals made as the page opens: `downloads.prepared`).
    Returns the releases offered (`Offered`)."""
    if heading:
        st.divider()
        st.subheader("Export")
    verdict_slot = st.empty()  # the exploration release's verdict, unless a secure one is
    verdict = release_verdict(release, structure_declared=structure_declared)  # drawn
    level = interval_level(prefix)
    exploration = download_buttons(release, prefix, stem, input_spec, rows,
                                   structure_declared=structure_declared, verdict=verdict,
                                   level=level, workload=workload, seconds=seconds,
                                   wait=wait)
    secure = None
    if redraw is not None and not is_charged(release.randomness):
        drawn = publishable_release(
            release, prefix, lambda: attach_intervals(redraw(), level, workload), verdict,
            ledger)
        if drawn is not None:  # one box: the verdict of the release offered for publishing
            verdict_slot.caption(":material/info: These first files hold the exploration "
                                 "release (seeded noise, or secure noise charged to no "
                                 "budget: not publishable; NOT-PUBLISHABLE in their names). "
                                 "The verdict of the publishable release is below.")
            verdict = verdict_box(drawn, structure_declared)
            secure = download_buttons(drawn, f"{prefix}_pub", stem, input_spec,
                                      rows_of(drawn) if rows_of else rows,
                                      structure_declared=structure_declared,
                                      verdict=verdict, level=level, workload=workload,
                                      label="Secure: ", seconds=seconds, wait=wait)
    if secure is None:
        with verdict_slot.container():
            verdict_box(release, structure_declared)
    with st.expander("What makes a release publishable?"):
        st.markdown(WHAT_MAKES_IT_PUBLISHABLE)
    return Offered(exploration, secure)


@st.fragment
def query_downloads(release, prefix: str, stem: str, input_spec: dict, rows: int,
                    **options) -> None:
    """`release_downloads` of a query page (Group sizes, Flows, Range queries) as a
    fragment: its buttons (the publishable draw above all) run this section again, not the
    whole page above it (its figures and tables: 0.3-1 s before the draw starts and again
    after it, on the Group sizes page). For a page that uses what is offered (Export's
    report) call `release_downloads` itself."""
    release_downloads(release, prefix, stem, input_spec, rows, **options)


def publishable_release(release, prefix: str, redraw: Callable[[], object],
                        verdict: dict | None, ledger: ledger_ui.Charge):
    """A button that draws the configuration of the exploration ``release`` again with
    secure noise; returns that secure release once drawn (kept in session state for this
    exploration release only), else None. ``verdict``: the exploration release's, to say
    what secure noise alone does not fix. ``ledger`` (a `hierdp_core.ui.ledger.Charge`):
    the draw is counted in the dataset's budget across releases (without it, it would not
    be publishable), shown beside the button, confirmed before a second draw and refused
    beyond the total. The button is off while something besides the noise keeps the
    release from being publishable (the structure read from the data, ...): the draw would
    spend the dataset's budget on a release that cannot be published."""
    st.markdown("**The publishable release**: the same data, mechanism, budget and settings, "
                "drawn again with secure noise (no seed).")
    others = [r for r in (verdict or {}).get("not_publishable_because", [])
              if r not in (SEEDED, NOT_CHARGED)
              and not r.startswith((OVER_CEILING, OVER_DELTA))]  # the gate says why
    if others:
        st.caption(":material/info: Secure noise alone will not make this one publishable: "
                   + "; ".join(others) + ". The draw is offered once that is fixed: it "
                   "would spend the dataset's budget on a release that cannot be published.")
    token = release_token(release)
    drawn = st.session_state.setdefault(PUBLISHABLE, {})
    allowed = ledger_ui.gate(ledger, prefix)
    took = st.session_state.setdefault(DRAWN_IN, {})
    if st.button("Draw the publishable release (secure noise)", key=wk.page_key(prefix, wk.SECURE),
                 icon=":material/lock:", disabled=not allowed or bool(others)) \
            and allowed and not others:
        started = time.perf_counter()
        try:
            # a still bar until the re-runs move it, not a spinner (drawn all along)
            with sweep_jobs.foreground(), bootstrap_progress(
                    "Intervals of the secure release", start="Drawing secure noise…"):
                drawn[prefix] = (token, ledger_ui.counted(ledger, prefix, redraw))
        except HierdpError as exc:
            st.error(f"The secure release failed: {exc}")
            return None
        took[prefix] = (token, time.perf_counter() - started)
        _show_the_draw()
    if took.get(prefix, (None,))[0] == token:
        st.caption(f"Drawn with secure noise in {took[prefix][1]:.1f} s.")
    stored = drawn.get(prefix)
    return stored[1] if stored is not None and stored[0] == token else None


def _show_the_draw() -> None:
    """Run again what shows the draw (the running total, the confirmation, the secure
    files): the fragment alone when the draw ran in a rerun of its own (`query_downloads`),
    else the page."""
    ctx = get_script_run_ctx()
    st.rerun(scope="fragment" if ctx is not None and ctx.fragment_ids_this_run else "app")


def geojson_bytes(release, geometry: dict, level: int) -> tuple[bytes, list]:
    """The release's values (and intervals) at ``level`` on the features of ``geometry`` as
    GeoJSON bytes, and the units without geometry; kept per (content token, level, level of
    the intervals) for the last four."""
    from hierdp_core.export import release_geojson

    cache = st.session_state.setdefault(GEOJSON_CACHE, {})
    key = (release_token(release), level,
           release.intervals and release.intervals.record["level"])
    if key not in cache:
        collection = release_geojson(release, geometry, level)
        while len(cache) >= 4:
            cache.pop(next(iter(cache)))
        cache[key] = (json.dumps(collection).encode(), collection.get("missing_geometry", []))
    return cache[key]


def structure_note(declared: bool) -> None:
    """Where the release's shape comes from: a declared public structure, or (an uploaded
    table) the confidential data itself, which is for exploration only."""
    if declared:
        st.caption(":material/verified: **Structure: declared public.** The units and "
                   "category values come from public unit and code lists (a bundled "
                   "sample's own, or the geography file and values declared on the Data "
                   "page); a unit with nobody in it is released with noise like any other.")
    else:
        st.warning("**Structure: read from this table (exploration only, not "
                   "publishable).** Its units, categories and domain come from the "
                   "confidential data, so a release's shape could tell who is in it. To "
                   "publish, declare them: a public geography file and the values of each "
                   "category column on the Data page (and the public largest size or domain "
                   "on the group-size and range pages), or on the command line with "
                   "`--geography FILE` and `--category-values COL=V1|V2`",
                   icon=":material/visibility:")

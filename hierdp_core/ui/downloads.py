"""The dashboard's release downloads, every file with intervals (issue 17): the CSV and
Parquet tables carry ``lower`` and ``upper`` at the level the user picks (90% by default)
and the manifest their ``intervals`` record. No file without them is offered.

Intervals in closed form (`hierdp_core.intervals.closed_form`) are made as the page is
drawn; a bootstrap takes seconds: on the Export page (``wait``) it is made as the page
opens, under a spinner, and the buttons follow without a click; the query pages, where the
release is made on the same page, wait for a "Prepare the downloads" click. The buttons
offer bytes already made (tables above `EAGER_EXPORT_ROWS` rows are made on click: Streamlit's deferred download
occasionally never starts in headless Chromium).

The manifest offered lists the sha256 of the CSV and Parquet bytes offered beside it under
their download names (`offered_manifest`), so the three downloads saved into one folder
pass ``hierdp verify``.

Session-state keys: ``hd_intervals`` maps (content token of a release, level) to (its
`CellIntervals`, the seconds they took), for the last `KEPT`, so each is computed once;
``hd_table_bytes`` maps (token, level, format) to the table's bytes (`table_bytes`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import numpy as np
import streamlit as st

from hierdp_core.export import bytes_sha256, manifest_bytes, release_table_bytes
from hierdp_core.intervals import (
    DEFAULT_LEVEL,
    closed_form,
    expected_seconds,
    with_intervals,
)
from hierdp_core.intervals.bootstrap import reporting
from hierdp_core.intervals.estimated_error import describe as describe_estimate
from hierdp_core.ranges.workloads import Workload
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import INTERVALS, TABLES
from hierdp_core.verdict import short_reason_tag

KEPT = 6
LEVELS = (0.8, 0.9, 0.95)
EAGER_EXPORT_ROWS = 200_000  # larger release tables are made only when a download is clicked
#: a bootstrap's progress bar moves at most this often: each move costs the browser a render
#: of the page, taken from the cores the re-runs use (Chromium during the Group sizes draw:
#: 0.2-0.3 of a core with a move per re-run or every 0.5 s, 0.13 every second, 0.05-0.1
#: without a bar)
PROGRESS_S = 1.0

#: release object -> its `release_token`, while the object lives (releases are frozen
#: dataclasses whose arrays nothing writes once made; equality is identity)
_TOKENS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def release_token(release) -> str:
    """A content key of a release: its mechanism, parameters, privacy record, randomness
    and values (the values of every level for an O/D release). Hashed once per release
    object (`_TOKENS`): a run of a query page asks for it up to seven times, and the
    Group sizes release, 3,193 regions x 1,001 sizes, takes 0.05 s of CPU to hash."""
    token = _TOKENS.get(release)
    if token is None:
        digest = hashlib.blake2b(digest_size=16)
        digest.update(json.dumps([release.mechanism, release.parameters, release.privacy,
                                  release.randomness], sort_keys=True, default=str).encode())
        arrays = ([release.values] if hasattr(release, "values") else
                  [a for lv in release.levels for a in (lv.origin, lv.destination, lv.value)])
        for array in arrays:
            digest.update(np.ascontiguousarray(array))  # its buffer: no copy
        token = _TOKENS[release] = digest.hexdigest()
    return token


def interval_level(prefix: str) -> float:
    """The level of the intervals in a page's files, picked by the user (default 90%)."""
    return st.radio("Intervals in the files", LEVELS, index=LEVELS.index(DEFAULT_LEVEL),
                    format_func=lambda level: f"{level:.0%}", horizontal=True,
                    key=wk.page_key(prefix, wk.IV_LEVEL),
                    help="Every released value gets a `lower` and an `upper` column: an "
                         "interval at this level, computed from the release alone (its "
                         "values and public parameters; no privacy cost). The manifest says "
                         "how, per level.")


@contextmanager
def bootstrap_progress(what: str, start: str = "") -> Iterator[None]:
    """A progress bar of the re-runs of any bootstrap made within (``what`` names it),
    moved at most every `PROGRESS_S`, removed once done; with ``start``, shown at once at 0
    with that text (what runs before the re-runs, without a spinner's animation)."""
    bar, shown = st.empty(), [-math.inf]
    if start:
        bar.progress(0.0, text=start)

    def show(done: int, total: int) -> None:
        if time.monotonic() - shown[0] >= PROGRESS_S:
            bar.progress(done / total, text=f"{what}: re-run {done} of {total}")
            shown[0] = time.monotonic()

    try:
        with reporting(show):
            yield
    finally:
        bar.empty()


def attach_intervals(release, level: float, workload: Workload | None = None):
    """``release`` carrying its intervals at ``level`` (``workload``: a range release's
    public one), computed (and timed) unless it already has them or they are kept in
    session state."""
    if _has(release, level):
        return release
    kept = st.session_state.setdefault(INTERVALS, {})
    key = (release_token(release), level)
    if key not in kept:
        started = time.perf_counter()
        intervals = with_intervals(release, level, workload=workload).intervals
        while len(kept) >= KEPT:
            kept.pop(next(iter(kept)))
        kept[key] = (intervals, time.perf_counter() - started)
    offered = dataclasses.replace(release, intervals=kept[key][0])
    _TOKENS[offered] = key[0]  # the same values: the same token
    return offered


def prepared(release, prefix: str, level: float, workload: Workload | None = None,
             label: str = "", seconds: float = 0.0, wait: bool = False):
    """``release`` with its intervals at ``level`` when they are in closed form or already
    made (a caption says how); with ``wait``, a bootstrap too (made now, under a spinner);
    else a button that makes them (a bootstrap, under a spinner, then the page is drawn
    again; its label says about how long, from ``seconds``, the time the release took:
    `expected_seconds`); None until it is clicked."""
    key = (release_token(release), level)
    kept = st.session_state.setdefault(INTERVALS, {})
    expected = expected_seconds(release, seconds)
    about = f"about {expected:.0f} s" if expected >= 3 else "a few seconds"
    if wait and not (_has(release, level) or key in kept or closed_form(release)):
        with st.spinner(f"Making the files with {level:.0%} intervals (a bootstrap: "
                        f"{about})…"), bootstrap_progress(f"{level:.0%} intervals"):
            release = attach_intervals(release, level, workload)
    if not (_has(release, level) or key in kept or closed_form(release)):
        if st.button(f"{label}Prepare the downloads with {level:.0%} intervals (a bootstrap: "
                     f"{about})",
                     key=wk.page_key(prefix, wk.PREPARE), icon=":material/calculate:"):
            with st.spinner(f"Computing the {level:.0%} intervals (a bootstrap)…"), \
                    bootstrap_progress(f"{level:.0%} intervals"):
                attach_intervals(release, level, workload)
            st.rerun()
        st.caption("Each file carries `lower` and `upper` for every released value; here "
                   "they come from a parametric bootstrap (the mechanism re-run on the "
                   "released values with a public seed), made when you ask.")
        return None
    release = attach_intervals(release, level, workload)
    record = release.intervals.record
    replicates = f", {record['replicates']} replicates" if record["replicates"] else ""
    seconds = kept.get(key, (None, None))[1]
    st.caption(f"{label}Every file carries `lower` and `upper`: {level:.0%} intervals by "
               + methods_by_level(record["method"]) + replicates
               + (f", made in {seconds:.1f}\u00a0s" if seconds is not None else "") + ".")
    return release


def methods_by_level(methods: dict) -> str:
    """The interval methods of a record (level -> method), each once, naming its levels
    when they differ: ``parametric bootstrap (total); parametric bootstrap, inverted near 0
    (state, county)``."""
    levels: dict[str, list[str]] = {}
    for level, method in methods.items():
        levels.setdefault(method, []).append(str(level))
    if len(levels) == 1:
        return next(iter(levels))
    return "; ".join(f"{method} ({', '.join(names)})" for method, names in levels.items())


def _has(release, level: float) -> bool:
    """Whether ``release`` carries intervals at ``level``."""
    return release.intervals is not None and release.intervals.record["level"] == level


def tagged(stem: str, verdict: dict) -> str:
    """A file-name stem carrying the reason a release is not publishable
    (`short_reason_tag`); unchanged for a publishable one."""
    tag = short_reason_tag(verdict)
    return f"{stem}_{tag}" if tag else stem


def kept_tables() -> dict:
    """The session's kept table bytes (``hd_table_bytes``), bound at the page's run: a
    download made on click runs outside it."""
    return st.session_state.setdefault(TABLES, {})


def table_bytes(kept: dict, release, fmt: str) -> bytes:
    """`release_table_bytes` of ``release`` (with its intervals), made once per content,
    interval level and format while among the last `KEPT` pairs of formats in ``kept``
    (`kept_tables`)."""
    level = release.intervals.record["level"] if release.intervals is not None else None
    key = (release_token(release), level, fmt)
    if key not in kept:
        while len(kept) >= 2 * KEPT:
            kept.pop(next(iter(kept)))
        kept[key] = release_table_bytes(release, fmt)
    return kept[key]


def table_name(stem: str, fmt: str) -> str:
    """The download name of a release table (``fmt`` "csv" or "parquet")."""
    return f"{stem}_release.{fmt}"


def offered_manifest(kept: dict, release, stem: str, *, structure_declared: bool,
                     input_spec: dict) -> bytes:
    """The manifest offered beside the tables of ``release``: it lists the sha256 of each
    table's bytes (`table_bytes` in ``kept``) under its download name (`table_name`, ``stem`` already
    `tagged`), so that the downloads saved into one folder pass ``hierdp verify``. Its input
    fingerprint is null: the dashboard does not key the input's bytes."""
    files = {table_name(stem, fmt): bytes_sha256(table_bytes(kept, release, fmt))
             for fmt in ("csv", "parquet")}
    return manifest_bytes(release, structure_declared=structure_declared,
                          input_spec=input_spec, files=files)


def download_buttons(release, prefix: str, stem: str, input_spec: dict, rows: int, *,
                     structure_declared: bool, verdict: dict, level: float,
                     workload: Workload | None = None, label: str = "", seconds: float = 0.0,
                     wait: bool = False):
    """CSV, Parquet and manifest downloads of ``release`` with intervals at ``level``
    (`prepared`: perhaps after a click unless ``wait``; ``seconds``: the time the release
    took); a release that is not publishable carries the reason in its file names
    (`tagged`); ``label`` starts the buttons' labels, which are primary for a publishable
    release. Returns the release offered (with its intervals),
    or None while they are not made."""
    release = prepared(release, prefix, level, workload, label, seconds, wait)
    if release is None:
        return None
    stem = tagged(stem, verdict)
    kind = "primary" if verdict["publishable"] else "secondary"
    on_click, kept = rows > EAGER_EXPORT_ROWS, kept_tables()
    columns = st.columns(3)
    for column, fmt, mime in zip(columns, ("csv", "parquet"),
                                 ("text/csv", "application/octet-stream"), strict=False):
        data = partial(table_bytes, kept, release, fmt)
        data = data if on_click else data()
        column.download_button(f"{label}Release table "
                               f"({fmt.upper() if fmt == 'csv' else 'Parquet'})",
                               data, file_name=table_name(stem, fmt), mime=mime,
                               key=wk.page_key(prefix, wk.DL, fmt), type=kind)
    manifest = partial(offered_manifest, kept, release, stem, structure_declared=structure_declared,
                       input_spec=input_spec)
    columns[2].download_button(f"{label}Manifest (JSON)",
                               manifest if on_click else manifest(),
                               file_name=f"{stem}_manifest.json",
                               mime="application/json", type=kind,
                               key=wk.page_key(prefix, wk.DL_MANIFEST))
    if said := describe_estimate(release.intervals.record if release.intervals else None):
        st.caption(f"{label}{said[0].upper()}{said[1:]}; the manifest gives it "
                   "(`intervals.estimated_error`).")
    return release

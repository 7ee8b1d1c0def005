"""The one-click report of a counts release for stakeholders: one self-contained HTML file
(plotly.js inlined once, maps drawn from GeoJSON embedded in the figures, the offline plotly
config of `hierdp_core.viz`), readable without a network, and printable (`report.pdf`).

Sections, for a reader with a minute first: a five-line summary (`report.summary`: what was
published, where, how private against a yardstick, the typical error, the verdict), the
verdict, the error by level (typical error in people and relative to a typical released
number, the intervals), the maps (every level, or why not: `report.figures`), figures with
intervals, a plain-language explanation, and an appendix with the configuration (as saved by
`hierdp_core.config`), the mechanism, the budget, the budget ledger and the a priori error
per level and epsilon. All of these come
from the release and public parameters only. Only a publishable release (its verdict:
secure noise, private mechanism, declared structure) gets the green banner saying so; any
other release says `EXPLORATION_BANNER` in red (`NOT_PUBLISHABLE` for one drawn with secure
noise), in its title and (`report_file_stem`) in its file name. A report of a secure release shows no
seed, even if the configuration given holds one (the exploration's).
With ``evaluation=True`` it also holds the error against the TRUE data (tables, a true vs
released plot, and the Trade-offs page's sweep when given): it then carries the red
CONFIDENTIAL banner of `hierdp_core.report.evaluation`.

Example
-------
>>> from hierdp_core.data.samples import synthetic_us_like
>>> from hierdp_core.queries.counts import count_data_from_table
>>> from hierdp_core.compare import Side, release_side
>>> data = count_data_from_table(synthetic_us_like(seed=1, n_states=2, n_counties=4),
...                              ["state", "county"], count_column="count")
>>> rel = release_side(data, Side("topdown", 1.0, seed=0))
>>> page = report_html(rel, data, {"mechanism": "topdown"}, structure_declared=False)
>>> EXPLORATION in page, PUBLIC_BANNER in page, CONFIDENTIAL_BANNER in page
(True, False, False)
>>> report_file_stem(rel, structure_declared=False, evaluation=False)
'EXPLORATION-NOT-FOR-PUBLICATION_hierdp_release_report'
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pandas as pd

from hierdp_core import __version__
from hierdp_core.experiments import budget_for, summarise
from hierdp_core.intervals import with_intervals
from hierdp_core.mechanism_names import titled
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import ALL_BIN, error_metrics
from hierdp_core.report.evaluation import (
    CONFIDENTIAL_BANNER,
    budget_summary,
    document,
    escape,
    figures_html,
    frame_table,
    glossary_html,
    invariants_html,
    kv_table,
    mechanism_summary,
)
from hierdp_core.report.figures import release_maps, small_numbers_with_intervals, tradeoff_figure
from hierdp_core.report.summary import (
    error_by_level,
    format_error_table,
    release_explanation,
    summary_lines,
)
from hierdp_core.sweep_figures import sweep_figure
from hierdp_core.verdict import is_charged, release_verdict
from hierdp_core.viz import ledger_figure, true_vs_released_scatter

PUBLIC_BANNER = ("Released values and public parameters only: no true count is in this "
                 "report.")
EXPLORATION = "EXPLORATION - NOT FOR PUBLICATION"
EXPLORATION_FILE_TAG = "EXPLORATION-NOT-FOR-PUBLICATION"
EXPLORATION_BANNER = (f"{EXPLORATION}: this release is not publishable as it is (see the "
                      "verdict).")
#: the marks of a release drawn with secure noise that is still not publishable (e.g. its
#: structure read from the data): it is no exploration release
NOT_PUBLISHABLE = "NOT PUBLISHABLE - NOT FOR PUBLICATION"
NOT_PUBLISHABLE_FILE_TAG = "NOT-PUBLISHABLE-NOT-FOR-PUBLICATION"
TRADEOFF_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
ERROR_COLUMNS = ["level_name", "units", "cells", "mae", "rmse", "mape", "max_abs_error",
                 "tvd_accuracy", "share_over_10pct"]


def a_priori_tradeoff(data, mechanism: str, params: dict, split,
                      epsilons=TRADEOFF_EPSILONS) -> pd.DataFrame:
    """The ledger's expected |error| per measured cell of every level at each epsilon (the
    tree's shape and the budget only; no count is read): columns epsilon, level_name,
    expected_abs_error."""
    m = get_mechanism(mechanism)
    rows = [m.ledger(data, budget_for(mechanism, eps, params), split=split, **params)
            .assign(epsilon=eps) for eps in epsilons]
    return pd.concat(rows, ignore_index=True)[["epsilon", "level_name",
                                               "expected_abs_error"]]


def _inline(text: str) -> str:
    """Escaped text with the explanation's inline Markdown (**bold**, *italic*) as HTML."""
    text = escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)


def explanation_html(release, data, explanation=None) -> str:
    """`hierdp_core.explain`'s plain-language explanation of the release's configuration
    (public parameters and the tree's shape only), with the release's own noise marked."""
    e = explanation or release_explanation(release, data)
    secure = release.randomness.get("mode") == "secure" and is_charged(release.randomness)
    marks = {True: '<b class="met">met</b>', False: '<b class="unmet">not met</b>'}
    items = "".join(f"<li>{marks[secure if met is None else met]}: {_inline(text)}</li>"
                    for text, met in e.conditions)
    return f"""<div class="explain">
<p><b>Who is protected.</b> {_inline(e.neighbour_text)}</p>
<p><b>What ε guarantees.</b> {_inline(e.guarantee_text)}</p>
<p><b>Expected error.</b> {_inline(e.error_text)}</p>
<p><b>When it is publishable.</b> A release is publishable only when all of these hold:</p>
<ul>{items}</ul>
</div>"""


def _evaluation(release, data, sweep: pd.DataFrame | None) -> tuple[str, dict]:
    """The error against the truth (HTML) and its figures."""
    h = release.hierarchy
    metrics = error_metrics(h, data.node_counts(), release.values,
                            categories=data.categories if data.has_categories else None)
    overall = metrics[metrics["bin"] == ALL_BIN]
    leaf = h.level_slice(h.depth)
    figures = {"True vs released (finest level)": true_vs_released_scatter(
        data.node_counts()[leaf].sum(axis=1), release.totals()[leaf],
        level_name=h.level_names[h.depth])}
    if sweep is not None and len(sweep):
        figures["Trade-off over repeated releases (Trade-offs page)"] = sweep_figure(
            titled(summarise(sweep, "mae")), metric="mae",  # the mechanisms' plain names
            level_name=h.level_names[h.depth])
    html = (f"<h2>Error against the true data (CONFIDENTIAL)</h2>"
            f"{frame_table(overall[[c for c in ERROR_COLUMNS if c in overall]])}"
            f"{glossary_html(ERROR_COLUMNS)}")
    return html, figures


def report_file_stem(release, *, structure_declared: bool, evaluation: bool) -> str:
    """The report's file name without extension: ``hierdp_release_report``, prefixed with
    ``EXPLORATION-NOT-FOR-PUBLICATION_`` when the release is not publishable and with
    ``CONFIDENTIAL_`` when the report holds the evaluation."""
    verdict = release_verdict(release, structure_declared=structure_declared)
    stem = "hierdp_release_report"
    if not verdict["publishable"]:
        stem = f"{_mark(release)[1]}_{stem}"
    return f"CONFIDENTIAL_{stem}" if evaluation else stem


def _mark(release) -> tuple[str, str]:
    """The mark of a release that is not publishable (text, file tag): `EXPLORATION` for
    seeded noise, `NOT_PUBLISHABLE` for secure noise."""
    if release.randomness.get("mode") == "secure":
        return NOT_PUBLISHABLE, NOT_PUBLISHABLE_FILE_TAG
    return EXPLORATION, EXPLORATION_FILE_TAG


def _banner(release, publishable: bool, evaluation: bool) -> tuple[str, str]:
    """The report's banner text and class: red CONFIDENTIAL with the evaluation, red
    `EXPLORATION_BANNER` (or its `NOT_PUBLISHABLE` form) for a release that is not
    publishable (both when both hold), green `PUBLIC_BANNER` only for a publishable
    release without the evaluation."""
    mark = _mark(release)[0]
    if evaluation:
        return (CONFIDENTIAL_BANNER + ("" if publishable else f" {mark}."), "")
    banner = EXPLORATION_BANNER.replace(EXPLORATION, mark, 1)
    return (PUBLIC_BANNER, "public") if publishable else (banner, "")


def _shown_config(release, config: dict) -> dict:
    """The configuration as the report shows it: a secure release's has no seed (a seed
    given is the exploration release's, and the report describes this one)."""
    if release.randomness.get("mode") == "secure":
        return {**config, "seed": None}
    return config


def _source(config: dict) -> str | None:
    """The data's name for the summary: a bundled sample's title, else the file's name."""
    from hierdp_core.data.samples import SAMPLES

    data = config.get("data") or {}
    if data.get("sample") in SAMPLES:
        return SAMPLES[data["sample"]].title
    return data.get("sample") or data.get("file")


def summary_html(lines: list[tuple[str, str]]) -> str:
    """The summary lines as a definition list (escaped)."""
    items = "".join(f"<dt>{escape(title)}</dt><dd>{escape(text)}</dd>" for title, text in lines)
    return f'<dl class="summary">{items}</dl>'


def _with_intervals(release):
    """``release`` with intervals at the default level (post-processing of the release
    alone, no privacy cost) unless it has some."""
    return release if release.intervals is not None else with_intervals(release)


def report_html(release, data, config: dict, *, structure_declared: bool,
                geometries: dict | None = None, evaluation: bool = False,
                sweep: pd.DataFrame | None = None,
                title: str = "hierdp release report") -> str:
    """The report as one HTML string (see the module doc). ``config``: the configuration
    as saved (`ReleaseConfig.to_dict`); ``geometries``: level -> (GeoJSON dict, projection)
    for the maps; ``evaluation``: add the error against the truth of ``data`` (and the
    ``sweep`` runs of `experiments.sweep`), making the report CONFIDENTIAL. A release
    without intervals gets them (`hierdp_core.intervals`, from the release alone)."""
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    release = _with_intervals(release)
    verdict = release_verdict(release, structure_declared=structure_declared)
    config = _shown_config(release, config)
    explanation = release_explanation(release, data)
    levels = error_by_level(release, explanation)
    split = release.ledger["share"].to_numpy(float).tolist()
    tradeoff = a_priori_tradeoff(data, release.mechanism, release.parameters, split)
    eps = release.privacy.get("epsilon")
    maps, map_notes = release_maps(release, geometries or {})
    figures = {"Small released numbers with their intervals":
               small_numbers_with_intervals(release),
               "Noise per measured cell, by level (a priori, before the consistency step)":
               ledger_figure(release.ledger),
               "Trade-off: error against ε": tradeoff_figure(tradeoff, eps)}
    evaluation_html, truth_figures = ("", {})
    if evaluation:
        evaluation_html, truth_figures = _evaluation(release, data, sweep)
    box = "ok" if verdict["publishable"] else "warning"
    reasons = "".join(f"<li>{escape(r)}</li>" for r in verdict["not_publishable_because"])
    expected = tradeoff.pivot(index="level_name", columns="epsilon",
                              values="expected_abs_error").reindex(
                                  list(release.hierarchy.level_names)).reset_index()
    expected.columns = ["Level"] + [f"ε = {e:g}" for e in expected.columns[1:]]
    if evaluation:
        audience = "This report also compares the release with the true data: do not publish it."
    elif verdict["publishable"]:
        audience = ("Everything in this report may be shown to anyone the release may be "
                    "shown to.")
    else:
        kind = "an exploration release" if _mark(release)[0] == EXPLORATION else "a release"
        audience = (f"This report is of {kind}, which is not publishable as it is (see the "
                    "verdict): do not publish it.")
    banner, banner_class = _banner(release, verdict["publishable"], evaluation)
    missing = "".join(f"<li>{escape(note)}.</li>" for note in map_notes)
    ledger = release.ledger.drop(columns=[c for c in ("level",) if c in release.ledger])
    body = f"""<p>Created {escape(created)} with hierdp {escape(__version__)}.
{escape(audience)}</p>
<h2>Summary</h2>
{summary_html(summary_lines(release, data, structure_declared=structure_declared,
                            source=_source(config), explanation=explanation, table=levels))}
<h2>Verdict</h2>
<p class="{box}"><b>{"Publishable as it is" if verdict["publishable"]
                     else "Not publishable as it is"}</b></p>
{f"<ul>{reasons}</ul>" if reasons else ""}
<h2>Error by level</h2>
<p>Expected before the release, from the mechanism and the budget (no true count is read);
the relative error is the typical error over the typical released number of the level; the
intervals are computed from the released values alone, and so is the estimated mean error
where it is given (re-running the mechanism on the released table).</p>
{frame_table(format_error_table(levels))}
<h2>Maps</h2>
{figures_html(maps, prefix="map") if maps else "<p>No map.</p>"}
{f"<p>Levels without a map:</p><ul>{missing}</ul>" if missing else ""}
<h2>Figures</h2>
{figures_html(figures, first=not maps)}
<h2>In plain words</h2>
{explanation_html(release, data, explanation)}
{evaluation_html}
{figures_html(truth_figures, first=False, prefix="truth") if truth_figures else ""}
<h2>Appendix: configuration, budget ledger and details</h2>
<h3>Configuration</h3>
{kv_table({k: v for k, v in config.items() if v not in (None, [], {})})}
<details><summary>As JSON (load it on the Export page, or
<code>hierdp release --config FILE</code>)</summary>
<pre>{escape(json.dumps(config, indent=2))}</pre></details>
<h3>Mechanism</h3>
{kv_table(mechanism_summary(release.mechanism))}
<h3>Privacy budget</h3>
{kv_table(budget_summary(release.privacy))}
{invariants_html(release)}
<h3>Budget ledger (expected before the release, no true data)</h3>
{frame_table(ledger)}
<h3>Expected error per released number by level and ε</h3>
{frame_table(expected)}"""
    if not verdict["publishable"]:
        title = f"{_mark(release)[0]}: {title}"
    return document(title, body, created, banner=banner, banner_class=banner_class)

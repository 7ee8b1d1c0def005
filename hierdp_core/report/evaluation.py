"""A self-contained HTML evaluation report of one release against the truth.

The report holds numbers derived from the TRUE data (error metrics, and whatever the given
figures show), so it opens with a banner saying it is confidential. It works offline:
plotly.js is inlined once, and maps get the offline config of `hierdp_core.figure_parts`. All text
that comes from the data or the caller is HTML-escaped; figure JSON is escaped by plotly.

Example
-------
>>> from hierdp_core.data.samples import synthetic_us_like
>>> from hierdp_core.mechanisms.base import get_mechanism
>>> from hierdp_core.metrics import error_metrics
>>> from hierdp_core.privacy.budget import PrivacyBudget
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> from hierdp_core.queries.counts import count_data_from_table
>>> data = count_data_from_table(synthetic_us_like(seed=1, n_states=2, n_counties=4),
...                              ["state", "county"], count_column="count")
>>> rel = get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
...                                        source=NoiseSource(seed=0))
>>> page = evaluation_report_html(rel, data, error_metrics(
...     data.hierarchy, data.node_counts(), rel.values), [])
>>> CONFIDENTIAL_BANNER in page
True
"""

from __future__ import annotations

import datetime as dt
import html
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hierdp_core import __version__, metric_names
from hierdp_core.errors import InputError, MechanismError
from hierdp_core.figure_parts import plotly_config
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import metric_descriptions

CONFIDENTIAL_BANNER = ("CONFIDENTIAL \u2014 contains numbers derived from the true data; "
                       "do not publish.")

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2933; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 0 1.5rem 3rem; }
.banner { background: #b00020; color: #fff; font-weight: 700; font-size: 1.15rem;
          padding: 0.9rem 1.5rem; text-align: center; letter-spacing: 0.02em; }
.banner.top { position: sticky; top: 0; z-index: 10; }
.banner.public { background: #1b6e3a; }
h1 { margin-top: 1.5rem; }
h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 0.2rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f3f5f7; }
td.text, th.text { text-align: left; }
.kv td:first-child { font-weight: 600; text-align: left; }
.kv td { text-align: left; }
.met { color: #1b6e3a; } .unmet { color: #b00020; }
.ok { background: #e6f4ea; border-left: 4px solid #1b6e3a; padding: 0.5rem 0.8rem; }
.warning { background: #fff4e5; border-left: 4px solid #e67700; padding: 0.5rem 0.8rem; }
.scroll { overflow-x: auto; }
.figure { margin: 1rem 0 2rem; }
dl.metrics dt { font-weight: 600; } dl.metrics dd { margin: 0 0 0.4rem 1rem; }
dl.summary { display: grid; grid-template-columns: 11rem 1fr; gap: 0.45rem 1rem;
             font-size: 1.05rem; margin: 0.5rem 0 1rem; }
dl.summary dt { font-weight: 700; } dl.summary dd { margin: 0; }
@media print { dl.summary { break-inside: avoid; } h2, h3 { break-after: avoid; } }
footer { color: #5f6b7a; font-size: 0.8rem; margin-top: 2rem; }
"""


def escape(text) -> str:
    """HTML-escaped text (quotes too)."""
    return html.escape(str(text), quote=True)


def _value(v) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v) if v else "none"
    if isinstance(v, dict):
        return json.dumps(v, default=str)
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, np.generic):
        return _value(v.item())
    return str(v)


def kv_table(d: dict) -> str:
    """A two-column table of keys and values (escaped)."""
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(_value(v))}</td></tr>" for k, v in d.items())
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def frame_table(df: pd.DataFrame) -> str:
    """An escaped HTML table, its columns named in words (`metric_names.name`; a column the
    registry does not know keeps its name unless it is a lower-case key); floats with 4 significant digits, NaN as a
    dash."""
    def fmt(x):
        return f"{x:,.4g}" if abs(x) < 1e6 else f"{x:,.0f}"

    table = df.rename(columns=lambda c: metric_names.name(c) if c in metric_names.REGISTRY
                      or (c.isidentifier() and c.islower()) else c).to_html(index=False, escape=True, na_rep="\u2013", float_format=fmt,
                       border=0, classes="data")
    return f'<div class="scroll">{table}</div>'


def budget_summary(privacy: dict) -> dict:
    """The privacy record, its main keys first."""
    keys = ("definition", "epsilon", "rho", "delta", "epsilon_tight", "epsilon_simple",
            "noise", "neighbouring", "invariants")
    return {k: privacy[k] for k in keys if k in privacy} | {
        k: v for k, v in privacy.items() if k not in keys}


def figures_html(figures, *, first: bool = True, prefix: str = "figure") -> str:
    """The figures (a list, or a dict giving each a heading) as HTML sections, with
    plotly.js inlined once (in the first, when ``first``: the first call of a document)
    and the offline config of `plotly_config`; their ids start with ``prefix``."""
    if isinstance(figures, dict):
        items = [(str(k), f) for k, f in figures.items()]
    else:
        items = [(None, f) for f in figures]
    parts = []
    config = plotly_config()
    for i, (name, fig) in enumerate(items):
        if not isinstance(fig, go.Figure):
            raise InputError(f"figure {name or i} is a {type(fig).__name__}, not a plotly "
                             "Figure")
        body = fig.to_html(full_html=False, include_plotlyjs=first and i == 0, config=config,
                           div_id=f"hierdp-{prefix}-{i}")
        heading = f"<h3>{escape(name)}</h3>" if name is not None else ""
        parts.append(f'<section class="figure">{heading}{body}</section>')
    return "\n".join(parts)


def evaluation_report_html(
    release,
    data,
    metrics: pd.DataFrame,
    figures: list[go.Figure] | dict[str, go.Figure],
    *,
    title: str = "hierdp evaluation report",
) -> str:
    """The report as one HTML string (open it in a browser; no internet needed).

    Sections: the confidentiality banner, the mechanism and its parameters, the privacy
    budget and randomness, the hierarchy and categories, the budget ledger (a priori
    error), the error metrics against the truth (``metrics``, as from
    `hierdp_core.metrics.error_metrics`, with a glossary), and the ``figures`` (a dict
    gives each a heading). plotly.js is inlined once, with the first figure.
    """
    h = release.hierarchy
    if data.hierarchy.n_nodes != h.n_nodes:
        raise InputError(f"the release has {h.n_nodes} nodes but the data has "
                         f"{data.hierarchy.n_nodes}: they do not describe the same tree")
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    hierarchy = h.summary()[["level", "level_name", "units"]]
    categories = list(data.categories) if data.has_categories else ["(totals only)"]
    body = f"""<p>Created {escape(created)} with hierdp {escape(__version__)}. This report compares
a release with the true data; the error metrics and figures below are computed from the truth
and must not be published. Only the release files and manifest are meant for publication.</p>

<h2>Mechanism</h2>
{kv_table(mechanism_summary(release.mechanism))}
<h3>Parameters</h3>
{kv_table(release.parameters) if release.parameters else "<p>none</p>"}

<h2>Privacy budget</h2>
{kv_table(budget_summary(release.privacy))}
{invariants_html(release)}
<h3>Randomness</h3>
{kv_table(release.randomness)}

<h2>Data</h2>
<p>Categories: {escape(", ".join(map(str, categories)))}.
Values released as {"integers" if release.is_integer else "real numbers"}.</p>
{frame_table(hierarchy)}

<h2>Budget ledger (a priori, no true data)</h2>
{frame_table(release.ledger)}

<h2>Error against the truth</h2>
{frame_table(metrics)}
{glossary_html(metrics.columns)}

<h2>Figures</h2>
{figures_html(figures) or "<p>No figures.</p>"}"""
    return document(title, body, created, banner=CONFIDENTIAL_BANNER)


def mechanism_summary(name: str) -> dict:
    """The registry's facts about a mechanism: its plain name, its key (as in the files and
    the configuration), ... (only the name and key for an unregistered one)."""
    summary = {"name": title(name), "key": name}
    try:
        info = get_mechanism(name).info
    except MechanismError:  # an unregistered name still gets a report
        return summary
    summary.update(description=info.description, reference=info.reference,
                   privacy=info.privacy, consistent=info.consistent)
    if info.warning:
        summary["warning"] = info.warning
    return summary


def invariants_html(release) -> str:
    """A warning naming what the release publishes exactly ('' when nothing)."""
    if not release.invariants:
        return ""
    return (f'<p class="warning">Published exactly (NOT protected by differential '
            f'privacy): {escape(", ".join(release.invariants))}.</p>')


def glossary_html(columns) -> str:
    """Definitions of the metric columns among ``columns``."""
    descriptions = metric_descriptions()
    items = "".join(f"<dt>{escape(c)}</dt><dd>{escape(descriptions[c])}</dd>"
                    for c in columns if c in descriptions)
    return f'<dl class="metrics">{items}</dl>'


def document(title: str, body: str, created: str, *, banner: str | None,
             banner_class: str = "") -> str:
    """A whole HTML page around ``body`` (HTML): the title, the ``banner`` (text) at the
    top and the bottom when given (confidential: red; ``banner_class`` "public": green)."""
    bar = (f'<div class="banner {banner_class}" role="alert">{escape(banner)}</div>'
           if banner else "")
    top = bar.replace('class="banner', 'class="banner top', 1)
    prefix = "CONFIDENTIAL: " if banner and banner.startswith(CONFIDENTIAL_BANNER) else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>{escape(prefix + title)}</title>
<style>{STYLE}</style>
</head>
<body>
{top}
<main>
<h1>{escape(title)}</h1>
{body}
<footer>hierdp {escape(__version__)}; {escape(created)}</footer>
</main>
{bar}
</body>
</html>
"""

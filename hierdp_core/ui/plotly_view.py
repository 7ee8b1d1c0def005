"""Plotly figures that stay drawn across reruns: `show` draws a figure in one plotly.js div
that Streamlit keeps mounted, so a new figure under the same key updates the drawn one
instead of replacing it (``st.plotly_chart`` makes a new plot whenever its figure changes).

A map whose new figure differs only in its colour values and title (a new release over the
same areas and the same colour scale) is recoloured in place in about 40 ms for 3,000 areas;
any other change goes through ``Plotly.react``. The browser loads plotly.js once: the bundle
of the dashboard's traces (`plotly_bundle`, built at set-up) for a figure it can draw, else
the copy that ships with the plotly package; both served from ``static/js/`` (git-ignored),
so no page fetches anything from the internet.

The figure travels as its JSON (numeric arrays base64-encoded) in the page's look
(`palette.figure_template`); tests read it back (``tests.test_app.figure_specs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit as st
from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

from hierdp_core import palette
from hierdp_core.figure_parts import plotly_config
from hierdp_core.ui import plotly_bundle
from hierdp_core.ui.map_layers import static_url

COMPONENT_NAME = "hierdp_plotly_view"
_JS = (Path(__file__).with_name("plotly_view.js")).read_text(encoding="utf-8")
_mount = st.components.v2.component(COMPONENT_NAME, js=_JS, isolate_styles=False)


def plotly_js_url(trace_types: Sequence[str] = plotly_bundle.TRACES) -> str:
    """The URL of a plotly.js that draws ``trace_types``: the dashboard's bundle when it is
    built and holds them all (`plotly_bundle`), else the full plotly.js of this plotly
    version (written to ``static/js/`` once)."""
    if plotly_bundle.covers(trace_types):
        return f"app/static/js/{plotly_bundle.bundle_name()}"
    return static_url(Path("js") / f"plotly-{plotly.__version__}.min.js", get_plotlyjs)


def show(fig: go.Figure, *, key: str, config: dict | None = None,
         prefetch: Sequence[str] = ()) -> None:
    """Draw ``fig`` (its layout's height, the container's width) under ``key``: the same key
    at the next rerun updates this drawing. ``config``: plotly's, `figure_parts.plotly_config` by
    default (offline maps). ``prefetch``: URLs of boundaries the browser fetches and parses
    now, for a map the user is likely to open next."""
    spec = fig.to_plotly_json()
    spec["layout"]["template"] = palette.figure_template()  # the page's look, not plotly's
    plotly_js = plotly_js_url([trace.get("type", "scatter") for trace in spec["data"]])
    _mount(key=key, data={"figure": to_json_plotly(spec), "config": config or plotly_config(),
                          "plotly": plotly_js, "prefetch": list(prefetch), "key": key},
           height=int(fig.layout.height or 450))


def preload(*, key: str, prefetch: Sequence[str] = ()) -> None:
    """Draw nothing; once the page is painted, the browser loads plotly.js and fetches and
    parses the boundaries at the URLs ``prefetch``, so the next page's map draws at once
    (a page of static figures, such as Home's, stays light)."""
    _mount(key=key, data={"figure": None, "plotly": plotly_js_url(),
                          "prefetch": list(prefetch), "key": key}, height=0)

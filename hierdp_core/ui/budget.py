"""The total privacy budget control of the count release: one value in the session settings
(``hd_settings``: ``epsilon`` under pure DP, ``rho`` under zCDP), moved from the Mechanism &
budget page or from the Results page beside the map."""

from __future__ import annotations

import streamlit as st

from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import EPSILON_GRID, RHO_GRID

DEFAULTS = {"epsilon": 1.0, "rho": 0.5}


def total_slider(s: dict, prefix: str | None = None) -> float:
    """The log-scale slider of the settings ``s``'s total budget (ε for pure DP, ρ for zCDP;
    widget key ``epsilon`` or ``rho``, or ``{prefix}_epsilon`` ...), showing the value kept in
    ``s`` (a step of its own when it is not on the grid, e.g. from a loaded configuration,
    so that drawing the slider never changes it) and writing the one chosen back there.
    Returns the value."""
    name, grid = ("epsilon", EPSILON_GRID) if s["definition"] == "pure-dp" else ("rho", RHO_GRID)
    value = s.get(name) or DEFAULTS[name]
    symbol = "ε" if name == "epsilon" else "ρ"
    s[name] = st.select_slider(f"Total {symbol} (log scale)",
                               options=sorted({*grid, value}), value=value,
                               key=name if prefix is None else wk.page_key(prefix, name),
                               help="The privacy budget of the whole release: smaller is "
                                    "more private (more noise).")
    return s[name]

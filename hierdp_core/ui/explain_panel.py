"""The plain-language panel ("In plain words") of every page that configures a release:
who is protected, what epsilon guarantees, the a priori error per level and what the
publishable verdict depends on, all from `hierdp_core.explain` (public parameters only)."""

from __future__ import annotations

import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.explain import ERROR_NAMES, explain
from hierdp_core.metric_names import friendly_table
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.inputs import friendly


def explain_panel(data, mechanism: str, budget, split=None, *, expanded: bool = True,
                  **params) -> None:
    """The panel for releasing ``data`` with ``mechanism`` at ``budget`` split by ``split``
    with ``params`` (as `explain` takes them), in a bordered container; collapsed in an
    expander when not ``expanded``. Settings the mechanism refuses become a message in the
    panel."""
    with st.container(border=True, key=wk.EXPLAIN_PANEL):
        if expanded:
            st.subheader("In plain words", anchor="in-plain-words")
            _body(data, mechanism, budget, split, params)
        else:
            with st.expander("In plain words: who is protected, what ε means, the expected "
                             "error", icon=":material/help:"):
                _body(data, mechanism, budget, split, params)


def _body(data, mechanism: str, budget, split, params: dict) -> None:
    try:
        explanation = explain(data, mechanism, budget, split, **params)
    except HierdpError as exc:
        st.warning(f"No explanation for these settings: {friendly(exc)}")
        return
    st.markdown(explanation.markdown())
    st.dataframe(**friendly_table(explanation.error_table(), digits=3, **ERROR_NAMES),
                 width="stretch")

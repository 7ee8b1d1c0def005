"""The Results page's interval coverage per level in evaluation mode (issue 30 item 4):
how often the release's intervals hold the true values, beside the errors, so that a user
can check the claimed level on their own table. The intervals are those the downloads
carry (`downloads.attach_intervals`, kept per release and level, made once); in closed form
they are made as the page is drawn, a bootstrap (TopDown) when the user asks.

Session-state keys: ``res_iv_level`` (the level picked), ``res_iv_make`` (the button).
"""

from __future__ import annotations

import streamlit as st

from hierdp_core.intervals import DEFAULT_LEVEL, closed_form, expected_seconds
from hierdp_core.intervals.coverage import coverage_table
from hierdp_core.metric_names import friendly_table
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.downloads import INTERVALS, LEVELS, attach_intervals, release_token


def coverage_section(release, truth) -> None:
    """The subheader, a level picker and the coverage table of ``release`` against
    ``truth`` (every node's true values), or the button that makes its bootstrap."""
    st.subheader("Interval coverage by level")
    level = st.radio("Interval level", LEVELS, index=LEVELS.index(DEFAULT_LEVEL),
                     format_func=lambda x: f"{x:.0%}", horizontal=True, key=wk.RES_IV_LEVEL,
                     help="The intervals every downloaded file carries (lower, upper): "
                          "each should hold the true value this often.")
    made = (release_token(release), level) in st.session_state.get(INTERVALS, {})
    if not (made or closed_form(release)):
        seconds = expected_seconds(release, 0.0)
        about = f"about {seconds:.0f} s" if seconds >= 3 else "a few seconds"
        if not st.button(f"Check the {level:.0%} intervals against the truth (a bootstrap: "
                         f"{about})", key=wk.RES_IV_MAKE, icon=":material/rule:"):
            return
        with st.spinner(f"Computing the {level:.0%} intervals (a bootstrap)…"):
            with_iv = attach_intervals(release, level)
    else:
        with_iv = attach_intervals(release, level)
    table = coverage_table(with_iv, truth)
    st.dataframe(**friendly_table(table), width="stretch")
    flagged = table.loc[~table["calibrated"], "level_name"].tolist()
    st.caption("One release is one draw: a level of few units says little, and the cells "
               "of a level move together (a parent's error moves its children). "
               "`benchmarks/bench_coverage.py` measures coverage over many releases."
               + (" Estimated error: what the release's manifest tells its readers, from "
                  "the bootstrap alone; measured error: against the truth."
                  if "estimated_mae" in table else "")
               + (f" Not calibrated (they may cover less): {', '.join(flagged)}; the "
                  "manifest says why." if flagged else ""))

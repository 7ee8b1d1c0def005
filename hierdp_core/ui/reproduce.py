"""The "Reproduce it outside the app" box of the Export and query pages: the release's
configuration as the ``hierdp release`` commands and as a runnable Python script
(`hierdp_core.reproduce`), with the script to download.

Session-state key: ``hd_reproduce`` (widget-key prefix -> the configuration the box shows).
"""

from __future__ import annotations

import streamlit as st

from hierdp_core.config import ReleaseConfig
from hierdp_core.reproduce import release_commands, release_script
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import REPRODUCE_SHOWN as SHOWN


def reproduce_box(cfg: ReleaseConfig, config_file: str, key: str) -> None:
    """An expander with the commands and the Python script that make ``cfg``'s release
    from ``config_file`` (the name the page saves the configuration under); ``key``
    prefixes the widget keys."""
    st.session_state.setdefault(SHOWN, {})[key] = cfg
    with st.expander("Reproduce it outside the app: the command line or a Python script",
                     icon=":material/terminal:"):
        seeded = (f"With the seed {cfg.seed} both give the values shown here."
                  if cfg.seed is not None else
                  "Without a seed both draw secure noise: a new draw each run.")
        st.caption(f"Save the configuration as `{config_file}` (above), then run these "
                   f"commands in its folder. {seeded} The command writes the release with "
                   "its signed manifest; with `\"seed\": null` in the file it draws secure "
                   "noise, a publishable release charged to the budget ledger.")
        st.code("\n".join(release_commands(cfg, config_file)), language="bash")
        script = release_script(cfg, config_file)
        st.download_button("Download the Python script", script, "hierdp_release.py",
                           "text/x-python", key=wk.page_key(key, wk.SCRIPT))
        st.code(script, language="python")

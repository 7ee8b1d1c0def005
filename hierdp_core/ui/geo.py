"""Which boundaries draw the maps of an uploaded table: a bundled geometry whose codes AND
parents match every level (`geo.match_bundled`), the user's own boundary file
(`geo.upload`), or none; the Data page shows the match and lets the user change it.

Session state ``hd_geo``: ``choice`` ('auto', 'none' or a source name), ``boundaries``
(the validated file, `geo.upload.Boundaries`), ``geometry`` (`geo.upload.UserGeometry`
built from it, ``built`` the file and choices it was built with) and ``matches`` (content key -> list of `GeoMatch`, `matches`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.geo import maps as geo
from hierdp_core.geo.match import GeoMatch, hierarchy_units, match_units, percent
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import GEO

AUTO, NONE = "auto", "none"
DISSOLVE = "(build by merging the level below)"
NO_PROPERTY = "(no boundaries for this level)"
SHOWN_CODES = 12  # unmatched codes listed per level and side
KEEP_MATCHES = 4  # hierarchies whose matches are kept (count, group-size, flow, range data)

#: the share of a table's codes a bundled boundary set must match to be named the
#: "closest" when none fits (a Spanish table's 2-digit codes matched 24% of the US
#: counties' and were offered them)
CLOSEST_SHOWN = 0.5


def state() -> dict:
    return st.session_state.setdefault(GEO, {"choice": AUTO})


def user_geometry():
    """The user's boundaries, registered for `geo` readers (the registry is per process and
    bounded, so they are registered again on every use), or None."""
    g = state().get("geometry")
    if g is not None:
        from hierdp_core.geo.upload import register_geometry

        register_geometry(g)
    return g


def _content_key(h, g) -> tuple:
    """What the matches of ``h`` depend on: its levels' names and codes (hashed), and the
    user's geometry."""
    codes = np.concatenate([np.asarray(c).astype(str) for c in h.codes[1:]] or [[]])
    return (tuple(h.level_names), tuple(int(n) for n in h.level_offsets),
            int(pd.util.hash_array(codes.astype(object)).sum()) if codes.size else 0,
            None if g is None else g.source)


def matches(h) -> list[GeoMatch]:
    """The hierarchy ``h`` against every geometry: the user's first, then the bundled ones
    (usable first, then by rate). Kept per content (`_content_key`): the last few."""
    g = user_geometry()
    key = _content_key(h, g)
    cache = state().setdefault("matches", {})
    if key not in cache:
        units = hierarchy_units(h)
        own = [match_units(units, g.reference, g.source)] if g is not None else []
        cache[key] = own + geo.match_bundled(units)
        while len(cache) > KEEP_MATCHES:
            cache.pop(next(iter(cache)))
    return cache[key]


def chosen_match(h) -> GeoMatch | None:
    """The match that draws ``h``'s maps: the chosen source's (any rate: the user asked for
    it), or in 'auto' the user's boundaries when they fit, else the best usable bundled one."""
    choice = state()["choice"]
    if choice == NONE:
        return None
    found = matches(h)
    if choice != AUTO:
        return next((m for m in found if m.source == choice), None)
    return next((m for m in found if m.ok), None)


def map_sources(h) -> dict[int, tuple[str, str]]:
    """Level index -> (source, level of the source) drawing that level of ``h``."""
    m = chosen_match(h)
    if m is None:
        return {}
    index = {name: lv for lv, name in enumerate(h.level_names)}
    return {index[lm.level]: (m.source, lm.target) for lm in m.levels
            if lm.target is not None and lm.coverage > 0}


def label(source: str) -> str:
    """A source's name for people."""
    if source.startswith(geo.USER_PREFIX):
        g = state().get("boundaries")
        return f"your boundaries ({g.name})" if g is not None else "your boundaries"
    from hierdp_core.data.samples import SAMPLES

    sample = SAMPLES.get(source)
    return f"bundled: {sample.title}" if sample else f"bundled: {source}"


def unmatched_table(m: GeoMatch) -> pd.DataFrame:
    """Per level: rates, and the first unmatched codes of each side."""
    def first(codes):
        more = f" … (+{len(codes) - SHOWN_CODES:,})" if len(codes) > SHOWN_CODES else ""
        return ", ".join(codes[:SHOWN_CODES]) + more
    return pd.DataFrame({
        "level": [lm.level for lm in m.levels],
        "boundaries level": [lm.target or "—" for lm in m.levels],
        "your codes found": [percent(lm.coverage) for lm in m.levels],
        "parents agree": [percent(lm.parents_agree) for lm in m.levels],
        "boundaries used": [percent(lm.feature_coverage) for lm in m.levels],
        "your codes without a boundary": [first(lm.unmatched_codes) for lm in m.levels],
        "boundaries without a unit": [first(lm.unmatched_features) for lm in m.levels]})


def _guess(b, h):
    """The property guess (`geo.guess.guess_properties`) of the boundaries ``b`` for
    ``h``, computed once per file and table."""
    from hierdp_core.geo.guess import guess_properties

    s = state()
    key = (b.digest, _content_key(h, None))
    if s.get("guess_key") != key:
        s["guess"], s["guess_key"] = guess_properties(b.frame, b.properties,
                                                      hierarchy_units(h)), key
    return s["guess"]


def _upload_panel(h) -> None:
    """Upload a boundary file, pick the property holding each level's codes (preset from
    the guess by codes AND parents, shown with what it gives) and draw the maps on one
    click: nothing is drawn from a guess that was not accepted."""
    from hierdp_core.geo.upload import build_geometry, read_boundaries

    s = state()
    upload = st.file_uploader("GeoJSON, zipped Shapefile (.zip) or GeoPackage (.gpkg)",
                              type=["geojson", "json", "zip", "gpkg"], key=wk.GEO_UPLOAD)
    if upload is not None and st.button("Use these boundaries", key=wk.GEO_USE):
        try:
            s["boundaries"] = read_boundaries(upload.getvalue(), upload.name)
        except HierdpError as exc:
            st.error(f"These boundaries cannot be used: {exc}")
        for stale in ("geometry", "built"):
            s.pop(stale, None)
    b = s.get("boundaries")
    if b is None:
        return
    st.caption(f"{b.name}: {len(b.frame):,} areas, properties {', '.join(b.properties)}"
               + (f". {'; '.join(b.notes)}." if b.notes else "."))
    levels = list(h.level_names[1:])
    guess = _guess(b, h)
    chosen = {}
    for i, (col, level) in enumerate(zip(st.columns(len(levels)), levels, strict=True)):
        options = [NO_PROPERTY] + ([DISSOLVE] if i < len(levels) - 1 else []) + b.properties
        default = DISSOLVE if level in guess.merged else guess.properties.get(level)
        chosen[level] = col.selectbox(f"Codes of {level}", options,
                                      index=options.index(default) if default else 0,
                                      key=wk.geo_property(b.digest, level),
                                      help="The property holding this level's codes (preset "
                                           "from the codes AND their parents), or merge the "
                                           "areas of the level below.")
    st.caption(f"Guessed from the codes and their parents: {guess.describe(levels)}.")
    properties = {lv: p for lv, p in chosen.items() if p not in (NO_PROPERTY, DISSOLVE)}
    key = (b.digest, tuple(levels), tuple(chosen.items()),
           _content_key(h, None) if DISSOLVE in chosen.values() else None)
    if not properties:
        st.info("Choose the property holding the codes of at least one level.")
        return
    if s.get("built") == key:
        return
    if not st.button("Draw the maps with these properties", key=wk.GEO_ACCEPT,
                     type="primary"):
        st.info("Check the properties above, then draw the maps with them: a guess is "
                "used only once you accept it.")
        return
    try:
        g = build_geometry(b, levels, properties,
                           _ancestors(h) if DISSOLVE in chosen.values() else None)
    except HierdpError as exc:
        st.error(f"These boundaries cannot be used: {exc}")
        return
    s["built"], s["geometry"] = key, g
    s["choice"] = st.session_state[wk.GEO_CHOICE] = g.source  # new boundaries: drawn at once


def _ancestors(h) -> pd.DataFrame:
    """The table's units, one column per level (codes as text), one row per leaf."""
    units = hierarchy_units(h)
    names = list(units)
    frame = pd.DataFrame({names[-1]: units[names[-1]][0]})
    for i in range(len(names) - 1, 0, -1):
        codes, parents = units[names[i]]
        frame[names[i - 1]] = frame[names[i]].map(dict(zip(codes, parents, strict=True)))
    return frame


def panel(h) -> None:
    """The Data page's "Maps" section for an uploaded table."""
    st.subheader("Maps")
    with st.expander("Your own boundaries", expanded=state().get("boundaries") is not None):
        _upload_panel(h)
    found = matches(h)
    sources = [m.source for m in found]
    options = [AUTO, *sources, NONE]
    if state()["choice"] not in options:
        state()["choice"] = AUTO
    if st.session_state.get(wk.GEO_CHOICE, AUTO) not in options:  # a source of another table
        st.session_state[wk.GEO_CHOICE] = state()["choice"]
    auto = next((m for m in found if m.ok), None)
    names = {AUTO: "automatic: " + (label(auto.source) if auto else "no map (nothing fits)"),
             NONE: "no maps", **{m.source: f"{label(m.source)} ({percent(m.rate)} matched)"
                                 for m in found}}
    choice = st.selectbox("Boundaries for the maps", options, format_func=names.get,
                          index=options.index(state()["choice"]), key=wk.GEO_CHOICE,
                          help="A geometry is matched automatically only when the codes of "
                               "every level are in it AND each unit's parent code is its "
                               "parent there, so a table from another country is not drawn "
                               "on the bundled ones.")
    state()["choice"] = choice
    m = chosen_match(h)
    if m is None:
        best = found[0] if found and found[0].rate >= CLOSEST_SHOWN else None
        st.info("No maps: " + ("you chose none." if choice == NONE else
                               "no boundaries match every level of your table"
                               + (f" (closest: {label(best.source)}, {percent(best.rate)})"
                                  if best else "") + ". Upload your own boundaries above."))
        return
    (st.success if m.ok else st.warning)(
        f"Maps drawn on {label(m.source)}: {m.describe()}"
        + ("" if m.ok else ". Not every level matches: some units have no area on the map."))
    st.dataframe(unmatched_table(m), hide_index=True, width="stretch")
    padded = [lm.level for lm in m.levels if lm.zeros_differ]
    if padded:
        st.warning(f"The codes of {', '.join(padded)} differ from the boundaries' only by "
                   "leading zeros ('6037' vs '06037'): one side was stored as numbers. Save "
                   "the codes as text with their zeros, in the table or the boundary file.")

"""Map boundaries for the dashboard's Plotly maps: which boundaries draw each level, the URL
they are served from (``static/geo/``), the projection, and the flow maps' layers."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from hierdp_core import palette
from hierdp_core.geo.maps import available_levels, level_geojson
from hierdp_core.geo.overview import overview_geojson

WHOLE_LEVEL_AREAS = 4000  # Results first shows a whole level of at most this many areas
MAP_PROJECTIONS = {"us-counties": "albers usa", "synthetic-us-like": "albers usa"}


STATIC_DIR = Path(__file__).resolve().parents[2] / "static"


def map_geojson(sample: str | None, level: str, *, overview: bool = False) -> str | None:
    """URL of a level's boundaries for Plotly maps (None without geometry); with
    ``overview`` the lighter ones for a map of the whole level (`geo.overview`), else the
    full detail (for a drill-down to a few units).

    The boundaries are written once, uncompressed, to ``static/geo/`` (git-ignored), which
    Streamlit serves (``server.enableStaticServing``); the browser fetches each file once,
    so a map figure carries only ids and values instead of megabytes of polygons."""
    fc = level_geojson(sample, level) if sample else None
    if fc is None:
        return None
    relative = Path("geo") / sample / f"{level}{'.overview' if overview else ''}.geojson"
    return static_url(relative, lambda: json.dumps(overview_geojson(fc) if overview else fc,
                                                   separators=(",", ":")))


def static_url(relative: Path, text: Callable[[], str]) -> str:
    """The URL Streamlit serves ``static/<relative>`` from, the file written first with
    ``text()`` if it is not there (whole or not at all: a reader never sees part of it)."""
    path = STATIC_DIR / relative
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.part")
        partial.write_text(text(), encoding="utf-8")
        partial.replace(path)
    return f"app/static/{relative.as_posix()}"


_MAP_WRITER: list[threading.Thread] = []  # the one writer thread of this process
_MAP_WRITER_LOCK = threading.Lock()


def prepare_bundled_maps() -> threading.Thread:
    """Write the map files of every bundled sample's levels (full detail and overview) in a
    background thread, once per process (the first page shown, or `ui.serve` before the
    server starts), so that no user waits for them (the municipalities' overview takes
    seconds); files already written are kept."""
    with _MAP_WRITER_LOCK:
        if not _MAP_WRITER:
            _MAP_WRITER.append(_start_map_writer())
        return _MAP_WRITER[0]


def _start_map_writer() -> threading.Thread:
    from hierdp_core.data.samples import SAMPLES

    def write_all() -> None:
        for sample in SAMPLES:
            for level in available_levels(sample):
                map_geojson(sample, level)
                map_geojson(sample, level, overview=True)

    thread = threading.Thread(target=write_all, name="hierdp-map-files", daemon=True)
    thread.start()
    return thread


@st.cache_data(show_spinner=False, max_entries=16)
def top_level_preview(sample: str, look: tuple[str, bool]) -> str | None:
    """An SVG map (`geo.svg_map`) of the bundled sample's top level, each unit shaded by
    how many finest-level units it holds (public structure, no count of people), in the
    palette and theme ``look`` (`palette.current`); None without boundaries."""
    from hierdp_core.data.samples import SAMPLES
    from hierdp_core.geo.svg_map import choropleth_svg
    from hierdp_core.report.summary import plural, plural_noun
    from hierdp_core.ui.samples import units_below_top_level

    top, finest = SAMPLES[sample].levels[0], SAMPLES[sample].levels[-1]
    fc = level_geojson(sample, top)
    if fc is None:
        return None
    palette.use(*look)
    units = units_below_top_level(sample)
    return choropleth_svg(overview_geojson(fc), units.index, units["units"],
                          names=units["name"], title=plural(len(units), top),
                          colorbar_title=plural_noun(finest), projection=map_projection(sample))


def warm_bundled_samples() -> None:
    """Compute what a first visitor of Home and Results would wait for, for every bundled
    sample (each kept for the whole server): Home's previews in the default palette, light
    and dark, and each sample's prepared counts (`ui.count_data.sample_count_data`)."""
    from hierdp_core.data.samples import SAMPLES
    from hierdp_core.ui import count_data

    for dark in (False, True):
        for sample in SAMPLES:
            top_level_preview(sample, (palette.DEFAULT, dark))
    first_results_maps()
    for sample in SAMPLES:
        count_data.sample_count_data(sample)


def first_results_maps() -> list[str]:
    """The boundaries (URLs) of the maps Results first shows for the bundled samples: the
    whole finest level, where it has at most `WHOLE_LEVEL_AREAS` areas."""
    from hierdp_core.data.samples import SAMPLES
    from hierdp_core.ui.samples import units_below_top_level

    urls = []
    for sample in SAMPLES.values():
        if units_below_top_level(sample.name)["units"].sum() <= WHOLE_LEVEL_AREAS:
            url = map_geojson(sample.name, sample.levels[-1], overview=True)
            urls += [url] if url else []
    return urls


def map_sources(sample: str | None, h) -> dict[int, tuple[str, str]]:
    """Level index -> (bundled sample, bundled level) whose boundaries draw that level of the
    hierarchy ``h``: a bundled sample's own levels, or for other data (``sample`` None) the
    boundaries chosen on the Data page (`ui.geo`: bundled ones only when the codes
    and parents of every level match).
    Levels without boundaries are left out."""
    if sample is None:
        from hierdp_core.ui import geo

        return geo.map_sources(h)
    return {lv: (sample, name) for lv, name in enumerate(h.level_names) if lv
            and level_geojson(sample, name) is not None}


def map_projection(sample: str | None) -> str:
    return MAP_PROJECTIONS.get(sample, "mercator")


def matched_flow_layers(geo) -> dict[int, tuple[pd.DataFrame, tuple | None, str]]:
    """For O/D data on a user's geography ``geo`` whose codes match bundled boundaries
    (`map_sources`): per geography level, the area positions (bundled centroids: index = area
    code; latitude, longitude, label), the top level's boundaries as a base map (URL, ids)
    and the projection, for `flows.figures.flow_map`. Levels without a match are left out."""
    from hierdp_core.geo.maps import centroids

    sources = map_sources(None, geo)
    base = None
    if 1 in sources:
        fc = level_geojson(*sources[1])
        base = (map_geojson(*sources[1], overview=True), [f["id"] for f in fc["features"]])
    layers = {}
    for level, source in sources.items():
        points = centroids(*source).set_index("id")
        coords = pd.DataFrame({"latitude": points["lat"], "longitude": points["lon"],
                               "label": points.index}, index=points.index)
        layers[level] = (coords, base, map_projection(source[0]))
    return layers

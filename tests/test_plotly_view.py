"""Figures drawn by one kept plotly.js div (hierdp_core.ui.plotly_view): plotly.js is served
from the plotly package's own copy, written once; figures carry the page's look; the
Results map's colour scale does not move when the ε slider re-releases (so the browser can
recolour it in place; that it does, with plotly's own colours, is checked in a real browser
in test_browser_results.py)."""

from __future__ import annotations

import json

import plotly
import pytest
from plotly.offline import get_plotlyjs

from hierdp_core.ui import map_layers, plotly_bundle, plotly_view
from tests.test_app import assert_clean, figure_specs, page


def test_plotly_js_is_the_packages_own_copy_written_once(tmp_path, monkeypatch):
    monkeypatch.setattr(map_layers, "STATIC_DIR", tmp_path)
    url = plotly_view.plotly_js_url()
    assert url == f"app/static/js/plotly-{plotly.__version__}.min.js"
    written = tmp_path / "js" / f"plotly-{plotly.__version__}.min.js"
    assert written.read_text(encoding="utf-8") == get_plotlyjs()
    written.write_text("kept", encoding="utf-8")
    assert plotly_view.plotly_js_url() == url and written.read_text() == "kept"
    assert [p.name for p in written.parent.iterdir()] == [written.name]  # no partial file


def test_a_figure_of_the_bundles_traces_gets_the_bundle_and_any_other_the_full_copy(
        tmp_path, monkeypatch):
    monkeypatch.setattr(map_layers, "STATIC_DIR", tmp_path)
    full = f"app/static/js/plotly-{plotly.__version__}.min.js"
    assert plotly_view.plotly_js_url(["choropleth", "bar"]) == full  # not built: full
    bundle = tmp_path / "js" / plotly_bundle.bundle_name()
    bundle.write_text("built", encoding="utf-8")
    ours = f"app/static/js/{bundle.name}"
    assert plotly_view.plotly_js_url(["choropleth", "bar"]) == ours
    assert plotly_view.plotly_js_url(["scatter", "box", "scattergeo"]) == ours
    assert plotly_view.plotly_js_url() == ours  # a preload: the bundle
    for other in (["scattergl"], ["treemap"], ["choropleth", "heatmap"]):
        assert plotly_view.plotly_js_url(other) == full


def test_the_bundle_registers_every_trace_and_is_named_after_them(monkeypatch):
    source = plotly_bundle.entry_source()
    assert source.startswith("var Plotly = require('plotly.js/lib/core');")
    for trace in plotly_bundle.TRACES:  # scatter is in plotly.js's core
        assert trace == "scatter" or f"require('plotly.js/lib/{trace}')" in source
    name = plotly_bundle.bundle_name()
    monkeypatch.setattr(plotly_bundle, "TRACES", (*plotly_bundle.TRACES, "treemap"))
    assert plotly_bundle.bundle_name() != name  # a new trace list is built anew


def test_without_npm_the_bundle_is_not_built_and_set_up_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(map_layers, "STATIC_DIR", tmp_path)
    monkeypatch.setattr(plotly_bundle.shutil, "which", lambda name: None)
    assert plotly_bundle.build(cache=tmp_path) == (
        "plotly.js bundle: npm not found, the dashboard uses the full plotly.js")
    assert not plotly_bundle.bundle_path().exists()
    plotly_bundle.bundle_path().parent.mkdir(parents=True)
    plotly_bundle.bundle_path().write_text("built", encoding="utf-8")
    assert plotly_bundle.build(cache=tmp_path).startswith("plotly.js bundle: kept")


def test_a_failed_npm_install_is_one_line_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(map_layers, "STATIC_DIR", tmp_path)
    monkeypatch.setattr(plotly_bundle.shutil, "which", lambda name: "/bin/false")
    said = plotly_bundle.build(cache=tmp_path)
    assert said.startswith("plotly.js bundle: not built (") and "\n" not in said
    assert not (tmp_path / "js").exists() or not any((tmp_path / "js").iterdir())


def results_map(at) -> dict:
    (spec,) = [json.loads(s) for s in figure_specs(at) if '"choropleth"' in s]
    return spec


def test_the_results_map_keeps_its_colour_scale_and_the_page_look_across_releases():
    at = page("pages/4_Results.py", "us-counties").run()
    assert_clean(at)
    before = results_map(at)
    at.select_slider(key="res_epsilon").set_value(0.1).run()
    assert_clean(at)
    after = results_map(at)
    assert after["layout"]["title"]["text"] == "Released, TopDown, ε = 0.1"
    assert after["data"][0]["z"] != before["data"][0]["z"]  # a new release
    for spec in (before, after):
        trace = spec["data"][0]
        top = 10 ** trace["zmax"] - 1  # the colour scale is log10(1 + count)
        assert trace["zmin"] == 0.0 and any(top == pytest.approx(t) for t in (1e7, 2e7, 5e7))
        assert spec["layout"]["template"]["layout"]["paper_bgcolor"] == "rgba(0,0,0,0)"
    unchanged = ("zmin", "zmax", "colorscale", "colorbar", "locations", "geojson")
    assert all(after["data"][0][k] == before["data"][0][k] for k in unchanged)


def test_home_draws_its_maps_as_svg_and_preloads_what_results_opens_with():
    at = page("app.py").run()
    assert_clean(at)
    maps = [m.value for m in at.markdown if m.value.startswith("<svg")]
    assert len(maps) == 2  # the third sample has no boundaries
    assert maps[0].count("<path") == 51 and "<title>Texas: 254 counties</title>" in maps[0]
    assert maps[1].count("<path") == 20 and ">20 regions</text>" in maps[1]
    (preload,) = [json.loads(e.proto.json) for e in at.get("bidi_component")]
    assert preload["figure"] is None and preload["plotly"] == plotly_view.plotly_js_url()
    us = map_layers.map_geojson("us-counties", "county", overview=True)
    assert preload["prefetch"] == [us]  # Italy opens drilled down

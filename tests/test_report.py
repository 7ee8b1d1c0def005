"""The confidential evaluation report (HTML), and the in-memory exports for downloads
(release table bytes, manifest bytes, release GeoJSON)."""

from __future__ import annotations

import dataclasses
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import square_geojson

from hierdp_core import viz
from hierdp_core.data.samples import synthetic_us_like
from hierdp_core.errors import InputError
from hierdp_core.export import (
    build_manifest,
    manifest_bytes,
    release_geojson,
    release_table_bytes,
    write_release,
)
from hierdp_core.map_figures import choropleth
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import error_metrics
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.releases import CellIntervals
from hierdp_core.report.evaluation import CONFIDENTIAL_BANNER, evaluation_report_html

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def table():
    return synthetic_us_like(seed=1, n_states=6, n_counties=60)


@pytest.fixture(scope="module")
def data(table):
    t = table.copy()
    t.loc[t["county"] == t["county"].iloc[0], "county"] = EVIL  # a hostile label
    return count_data_from_table(t, ["state", "county"], count_column="count")


@pytest.fixture(scope="module")
def release(data):
    return get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                            source=NoiseSource(seed=2))


@pytest.fixture(scope="module")
def cat_release(table):
    d = count_data_from_table(table, ["state", "county"], count_column="count",
                              category_columns=["sex"])
    return get_mechanism("topdown").release(d, PrivacyBudget.pure(1.0),
                                            source=NoiseSource(seed=4))


# ---- report ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(data, release):
    h = data.hierarchy
    metrics = error_metrics(h, data.node_counts(), release.values)
    sl = h.level_slice(2)
    codes = [str(c) for c in h.codes[2]]
    figures = {
        "Map of " + EVIL: choropleth(square_geojson(codes), codes, release.totals()[sl],
                                     title="Released", colorbar_title="count",
                                     names=h.labels()[sl]),
        "Tree": viz.hierarchy_treemap(h, release.values),
        "Ledger": viz.ledger_figure(release.ledger),
    }
    return evaluation_report_html(release, data, metrics, figures,
                                  title="Report " + EVIL)


def test_report_has_banner_and_sections(page):
    assert page.startswith("<!DOCTYPE html>")
    assert page.count(CONFIDENTIAL_BANNER) == 2  # top and bottom
    assert "CONFIDENTIAL" in re.search(r"<title>(.*)</title>", page).group(1)
    for text in ("topdown", "Parameters", "root_invariant", "pure-dp", "epsilon",
                 "Budget ledger", "Expected |noise| per cell", "Error against the truth",
                 "tvd_accuracy", "cells of |released − true|", "seed"):
        assert text in page, text


def test_report_embeds_figures_with_plotlyjs_once_inline(page):
    assert len(re.findall(r'id="hierdp-figure-\d"', page)) == 3
    assert page.count("Plotly.newPlot") == 3
    assert len(re.findall(r"\* plotly\.js v\d", page)) == 1  # the library, inlined once
    assert not re.search(r"<script[^>]*\bsrc=", page)  # nothing loaded from elsewhere
    assert "data:application/json," in page  # offline topology for the map


def test_report_escapes_all_text(page):
    assert EVIL not in page
    assert "alert(1)</script>" not in page
    assert "Report &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<h3>Map of &lt;script&gt;" in page
    # every <script> tag is ours: the plotly config, the library, one per figure
    assert page.count("<script") == 2 + 3


def test_report_without_figures(data, release):
    metrics = error_metrics(data.hierarchy, data.node_counts(), release.values)
    page = evaluation_report_html(release, data, metrics, [])
    assert CONFIDENTIAL_BANNER in page and "No figures." in page
    assert "plotly.js v" not in page
    with pytest.raises(InputError):
        evaluation_report_html(release, data, metrics, ["not a figure"])


# ---- export: bytes ---------------------------------------------------------------------
def test_table_bytes_match_write_release(tmp_path, release):
    paths = write_release(release, tmp_path, formats=("csv", "parquet"),
                          structure_declared=False)
    assert release_table_bytes(release, "csv") == paths["csv"].read_bytes()
    from_bytes = pd.read_parquet(io.BytesIO(release_table_bytes(release, "parquet")))
    pd.testing.assert_frame_equal(from_bytes, pd.read_parquet(paths["parquet"]))
    pd.testing.assert_frame_equal(from_bytes, release.to_frame())
    with pytest.raises(InputError):
        release_table_bytes(release, "xlsx")


def test_manifest_bytes(release):
    from hierdp_core.export import local_key
    from hierdp_core.manifest_seal import check_seal

    spec = {"levels": ["state", "county"]}
    manifest = json.loads(manifest_bytes(release, structure_declared=False, input_spec=spec))
    expected = build_manifest(release, structure_declared=False, input_spec=spec)
    assert check_seal(manifest, local_key()) == "signature"  # sealed and signed
    for field in ("created_utc", "checksum", "signature"):
        manifest.pop(field), expected.pop(field, None)
    assert manifest == expected
    assert manifest["mechanism"]["name"] == "topdown"
    assert manifest["input"]["levels"] == ["state", "county"]


# ---- export: GeoJSON -------------------------------------------------------------------
def test_release_geojson_properties_and_missing_geometry(cat_release):
    h = cat_release.hierarchy
    codes = [str(c) for c in h.codes[2]]
    geo = square_geojson(codes[3:])  # the first three counties have no geometry
    out = release_geojson(cat_release, geo, 2)
    assert out["type"] == "FeatureCollection"
    assert out["missing_geometry"] == list(h.node_ids()[h.level_slice(2)][:3])
    assert len(out["features"]) == len(codes) - 3
    first = out["features"][0]
    assert first["id"] == codes[3]
    assert first["geometry"] == geo["features"][0]["geometry"]
    props = first["properties"]
    node = h.level_offsets[2] + 3
    assert set(props) == {"node_id", "label", "level_name", "value", "F", "M"}
    assert props["node_id"] == h.node_ids()[node] and props["level_name"] == "county"
    assert props["value"] == int(cat_release.values[node].sum())
    assert [props["F"], props["M"]] == cat_release.values[node].tolist()
    json.dumps(out)  # serialisable as is
    with_bounds = dataclasses.replace(cat_release, intervals=CellIntervals(
        cat_release.values - 1, cat_release.values + 2, {"level": 0.9}))
    props = release_geojson(with_bounds, geo, 2)["features"][0]["properties"]
    assert [props["lower F"], props["upper M"]] == [cat_release.values[node, 0] - 1,
                                                    cat_release.values[node, 1] + 2]
    assert "lower" not in props  # a total of categories has no interval


def test_release_geojson_states_and_node_id_fallback(release):
    h = release.hierarchy
    state_codes = [str(c) for c in h.codes[1]]
    out = release_geojson(release, square_geojson(state_codes), 1)
    assert out["missing_geometry"] == [] and len(out["features"]) == len(state_codes)
    props = out["features"][0]["properties"]
    assert set(props) == {"node_id", "label", "level_name", "value"}  # no categories
    with_bounds = dataclasses.replace(release, intervals=CellIntervals(
        release.values // 2, release.values * 2, {"level": 0.9}))
    props = release_geojson(with_bounds, square_geojson(state_codes), 1)["features"][0][
        "properties"]
    assert (props["lower"], props["upper"]) == (props["value"] // 2, props["value"] * 2)
    np.testing.assert_array_equal([f["properties"]["value"] for f in out["features"]],
                                  release.totals()[h.level_slice(1)])
    # features keyed by path id (e.g. "01/01001") match too
    ids = list(h.node_ids()[h.level_slice(2)])
    out = release_geojson(release, square_geojson(ids), 2)
    assert out["missing_geometry"] == [] and out["features"][0]["id"] == ids[0]
    with pytest.raises(InputError):
        release_geojson(release, square_geojson(ids), 5)
    with pytest.raises(InputError):
        release_geojson(release, {"type": "Feature"}, 1)

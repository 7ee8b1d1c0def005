"""Map figures: ids, colour ranges (shared, diverging about 0, log), the hover (escaped name
and the value at full precision), the light figure (typed arrays, no text per area)."""

from __future__ import annotations

import base64
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from conftest import square_geojson
from hypothesis import given
from hypothesis import strategies as st

from hierdp_core.errors import InputError
from hierdp_core.map_figures import HOVER_FORMAT, choropleth, nice_ceiling


def test_choropleth_basics():
    ids = ["a", "b", "c"]
    fig = choropleth(square_geojson(ids), ids, [1, 5, 9], title="True counts",
                     colorbar_title="persons", names=["A <1>", "B", "C"])
    assert isinstance(fig, go.Figure)
    (trace,) = fig.data
    assert isinstance(trace, go.Choropleth)
    assert trace.featureidkey == "id" and trace.geojson["type"] == "FeatureCollection"
    assert list(trace.locations) == ids
    assert fig.layout.title.text == "True counts"
    assert trace.colorbar.title.text == "persons"
    assert fig.layout.geo.visible is False and fig.layout.geo.fitbounds == "locations"
    assert (trace.zmin, trace.zmax) == (1, 9)
    # hover: the escaped name and the value, formatted by the browser
    assert list(trace.text) == ["A &lt;1&gt;", "B", "C"]
    assert list(trace.customdata) == [1, 5, 9]
    assert trace.hovertemplate == ("<b>%{text}</b><br>persons: %{customdata:" + HOVER_FORMAT
                                   + "}<extra></extra>")
    assert "mapbox" not in fig.to_json()


def test_choropleth_numbers_travel_as_typed_arrays_at_full_precision():
    ids = [f"{i:05d}" for i in range(500)]
    values = np.arange(500) * 100_003.0 + 39_538_223  # beyond single precision
    trace = json.loads(pio.to_json(choropleth("geo.json", ids, values, title="t",
                                              colorbar_title="c", log_scale=True)))["data"][0]
    assert trace["z"]["dtype"] == "f4" and trace["customdata"]["dtype"] == "f8"
    decoded = np.frombuffer(base64.b64decode(trace["customdata"]["bdata"]), dtype="<f8")
    np.testing.assert_array_equal(decoded, values)  # the hover shows the exact count


def test_choropleth_diverging_is_symmetric_about_zero():
    ids = ["a", "b", "c"]
    fig = choropleth(square_geojson(ids), ids, [-3.0, 1.0, 7.5], title="Error",
                     colorbar_title="released - true", diverging=True)
    trace = fig.data[0]
    assert trace.zmin == -7.5 and trace.zmax == 7.5 and trace.zmid == 0
    colours = [c for _, c in trace.colorscale]
    assert colours[0] != colours[-1]  # a two-sided scale (RdBu_r)
    # an asymmetric shared range is widened to stay centred at 0
    fig = choropleth(square_geojson(ids), ids, [-3.0, 1.0, 7.5], title="Error",
                     colorbar_title="e", diverging=True, value_range=(-2, 10))
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-10, 10)


def test_choropleth_value_range_is_honoured():
    ids = ["a", "b"]
    fig = choropleth(square_geojson(ids), ids, [10, 20], title="t", colorbar_title="c",
                     value_range=(0, 100))
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, 100)
    with pytest.raises(InputError):
        choropleth(square_geojson(ids), ids, [10, 20], title="t", colorbar_title="c",
                   value_range=(5, 1))


def test_choropleth_log_scale_handles_zeros_and_labels_original_units():
    ids = ["a", "b", "c", "d"]
    values = [0, 9, 99, 99999]
    fig = choropleth(square_geojson(ids), ids, values, title="t", colorbar_title="persons",
                     log_scale=True, value_range=(0, 100_000))
    trace = fig.data[0]
    np.testing.assert_allclose(trace.z, np.log10(1 + np.asarray(values)), rtol=1e-6)
    assert trace.zmin == 0 and trace.zmax == pytest.approx(5)
    assert list(trace.colorbar.ticktext) == ["0", "1", "10", "100", "1k", "10k", "100k"]
    np.testing.assert_allclose(trace.colorbar.tickvals,
                               np.log10(1 + np.array([0, 1, 10, 100, 1e3, 1e4, 1e5])))
    assert "log scale" in trace.colorbar.title.text
    assert list(trace.customdata) == values  # hover: the original values


def test_choropleth_nan_and_bad_input():
    ids = ["a", "b"]
    fig = choropleth(square_geojson(ids), ids, [np.nan, 2], title="t", colorbar_title="c")
    assert np.isnan(fig.data[0].z[0]) and (fig.data[0].zmin, fig.data[0].zmax) == (2, 3)
    with pytest.raises(InputError):
        choropleth(square_geojson(ids), ids, [1, 2, 3], title="t", colorbar_title="c")
    with pytest.raises(InputError):
        choropleth(42, ids, [1, 2], title="t", colorbar_title="c")


@pytest.mark.parametrize(("value", "ceiling"), [
    (1.0, 1.0), (1.2, 2.0), (2.0, 2.0), (2.01, 5.0), (7.0, 10.0), (0.03, 0.05),
    (9.8e6, 1e7), (1e7, 1e7), (3e-9, 5e-9)])
def test_nice_ceiling(value, ceiling):
    assert nice_ceiling(value) == pytest.approx(ceiling, rel=1e-12)


@given(st.floats(min_value=1e-300, max_value=1e300))
def test_nice_ceiling_is_above_and_close(value):
    top = nice_ceiling(value)
    assert value * (1 - 1e-12) <= top <= 2.5 * value * (1 + 1e-12)
    assert nice_ceiling(top) == top  # a round number stays


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_nice_ceiling_refuses_what_has_no_ceiling(bad):
    with pytest.raises(InputError, match="finite positive"):
        nice_ceiling(bad)

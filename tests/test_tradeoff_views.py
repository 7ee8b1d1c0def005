"""Figures that tell close mechanisms apart (issue 31, item 6): small multiples and the
error relative to a baseline on the Trade-offs page (`hierdp_core.sweep_panels`), and the
noisy measurements beside the consistent release, per level, on Results
(`hierdp_core.noisy_view`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.noisy_view import noisy_vs_released_by_level
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.sweep_panels import relative_sweep_figure, sweep_panels


def summary_of(means: dict[str, list[float]], eps=(0.5, 1.0, 2.0)) -> pd.DataFrame:
    """A `summarise`-shaped table at level 'county': band = mean x 0.8 .. mean x 1.25."""
    rows = [{"mechanism": m, "epsilon": e, "level": 2, "level_name": "county", "mean": v,
             "low": 0.8 * v, "high": 1.25 * v, "trials": 5}
            for m, values in means.items() for e, v in zip(eps, values, strict=True)]
    return pd.DataFrame(rows)


MEANS = {"raw-geometric": [4.0, 2.0, 1.0], "least-squares": [3.8, 1.9, 0.95],
         "topdown": [3.9, 1.95, 0.975]}


def test_panels_draw_one_panel_per_mechanism_with_its_band_and_the_others_in_grey():
    fig = sweep_panels(summary_of(MEANS), metric="mae", level_name="county")
    assert [a.text for a in fig.layout.annotations][:3] == list(MEANS)  # panel titles
    for k, mechanism in enumerate(MEANS, start=1):
        axis = "x" if k == 1 else f"x{k}"
        mine = [t for t in fig.data if t.xaxis == axis]
        band = [t for t in mine if t.fill == "toself"]
        line = [t for t in mine if t.name == mechanism and t.fill != "toself"]
        grey = [t for t in mine if t.line.dash == "dot"]
        assert len(band) == 1 and len(line) == 1 and len(grey) == 2
        mean = np.array(MEANS[mechanism])  # the band: highs out, lows back
        np.testing.assert_allclose(band[0].y, np.r_[1.25 * mean, 0.8 * mean[::-1]])
        assert band[0].fillcolor.endswith("0.3)")  # visible, not the faint overlay's 0.18
    assert fig.layout.yaxis.type == "log" and fig.layout.xaxis.type == "log"
    linear = sweep_panels(summary_of({"a": [1.0, 0.0, -1.0]}), metric="malpe",
                          level_name="county")
    assert linear.layout.yaxis.type == "linear"  # a value <= 0: no log axis


def test_relative_view_divides_by_the_baseline_at_each_epsilon():
    fig = relative_sweep_figure(summary_of(MEANS), metric="mae", level_name="county",
                                baseline="raw-geometric")
    lines = {t.name: np.asarray(t.y) for t in fig.data if t.fill != "toself"}
    np.testing.assert_allclose(lines["raw-geometric"], 1.0)
    np.testing.assert_allclose(lines["least-squares"], 0.95)  # 5% better: told apart
    np.testing.assert_allclose(lines["topdown"], 0.975)
    bands = [t for t in fig.data if t.fill == "toself"]
    np.testing.assert_allclose(bands[0].y, [1.25] * 3 + [0.8] * 3)  # the baseline's
    with pytest.raises(InputError):
        relative_sweep_figure(summary_of(MEANS), metric="mae", level_name="county",
                              baseline="nope")
    with pytest.raises(InputError):
        relative_sweep_figure(summary_of({"a": [1.0, 0.0, 1.0]}), metric="mae",
                              level_name="county", baseline="a")
    with pytest.raises(InputError):
        sweep_panels(summary_of(MEANS), metric="mae", level_name="tract")


def test_noisy_vs_released_per_level(small_county_data):
    data = small_county_data
    h = data.hierarchy
    release = get_mechanism("least-squares").release(
        data, PrivacyBudget.pure(0.5), split=[0, 1, 1], source=NoiseSource(seed=3))
    fig = noisy_vs_released_by_level(h, data.node_counts(), release.noisy, release.values)
    noisy, released = fig.data
    assert noisy.name.startswith("noisy") and released.name.startswith("consistent")
    truth = data.node_counts().sum(axis=1)
    np.testing.assert_allclose(np.sort(released.y),
                               np.sort(release.values.sum(axis=1) - truth))
    measured = np.isfinite(np.asarray(release.noisy, float)).any(axis=1)
    assert len(noisy.y) == measured.sum() < h.n_nodes  # the root is not measured (split 0)
    ticks = list(fig.layout.xaxis.ticktext)
    assert "not measured" in ticks[0] and "MAE noisy" in ticks[-1]
    with pytest.raises(InputError):
        noisy_vs_released_by_level(h, truth[:-1], None, release.values)

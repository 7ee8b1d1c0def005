"""The error per level estimated from a release's own re-runs (issue 30 item 3,
`hierdp_core.intervals.estimated_error`): the mean |redraw - plug-in| of the intervals'
bootstrap, in the record of every bootstrapped release (TopDown counts, group sizes,
ranges, flows), none where the re-runs cannot see the bias (shares of a band or bucket,
stability-histogram's suppression), and near the measured error over independent
releases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from hierdp_core.intervals import bootstrap, intervals_for
from hierdp_core.intervals.estimated_error import describe
from hierdp_core.intervals.flows import UNSEEN_SUPPRESSED
from hierdp_core.intervals.ranges import UNSEEN_SHARE_BIAS
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from tests.test_intervals_kinds import ages, flows, group_sizes, release_of


def test_the_estimate_is_the_mean_absolute_error_of_the_redraws():
    """Per cell, the mean over the replicates of |redraw - plug-in| (not of the signed
    error, not of the half-widths)."""
    plugin, drawn = np.full(300, 2.0), []

    def rerun(source):
        values = source.rng.integers(0, 5, plugin.size)
        drawn.append(values)
        return dataclasses.make_dataclass("Made", ["values", "ledger"])(values, pd.DataFrame())

    made = bootstrap.rerun_bootstrap(rerun, lambda r: r.values, plugin, pd.DataFrame(), 0.9,
                                     20, integer=True)
    np.testing.assert_allclose(made.mean_abs, np.abs(np.array(drawn) - plugin).mean(axis=0))
    assert made.draws == 20 and made.mean_abs.mean() == pytest.approx(1.2, abs=0.1)


@pytest.mark.parametrize("name", ["gs-topdown", "gs-mc-chain", "gs-kuo-hierarchical"])
def test_group_size_releases_carry_an_estimate_per_level(name):
    data = group_sizes()
    record = intervals_for(release_of(name, data), 0.9, 20).record
    by_level = record["estimated_error"]["by_level"]
    assert list(by_level) == list(data.hierarchy.level_names)
    assert all(v > 0 for v in by_level.values()) and "not_estimated" not in \
        record["estimated_error"]


def test_closed_form_intervals_need_no_estimate():
    """gs-noisy's error is its noise, which the a priori figure gives exactly."""
    assert "estimated_error" not in intervals_for(release_of("gs-noisy", group_sizes()),
                                                  0.9).record


def test_levels_of_shares_of_a_band_or_bucket_get_no_estimate():
    """Uniform's cells share their unit's total evenly and bands share theirs: how unevenly
    the truth fills them does not show in re-runs on the even plug-in (None, and why);
    H2 without bands estimates every level."""
    for name, data in (("uniform", ages()), ("h2", ages(workload="0-3,4-7"))):
        record = intervals_for(release_of(name, data), 0.9, 20, workload=data.workload
                               ).record["estimated_error"]
        assert set(record["by_level"].values()) == {None}
        assert record["not_estimated"] == UNSEEN_SHARE_BIAS
    record = intervals_for(release_of("h2", ages()), 0.9, 20).record["estimated_error"]
    assert None not in record["by_level"].values()


def test_flow_releases_estimate_per_released_row_except_stability_histogram():
    """InfTDA's rows get an estimate per level; stability-histogram's re-runs suppress cells
    the release shows and never see what it suppressed: none, and why."""
    data = flows()
    release = release_of("inftda", data)
    by_level = intervals_for(release, 0.9, 20).record["estimated_error"]["by_level"]
    assert list(by_level) == list(release.level_names) and by_level[release.level_names[-1]] > 0
    record = intervals_for(release_of("stability-histogram", data), 0.9, 20).record
    assert set(record["estimated_error"]["by_level"].values()) == {None}
    assert record["estimated_error"]["not_estimated"] == UNSEEN_SUPPRESSED
    assert describe(record) is None  # no line of levels all "not estimated"


def test_the_estimate_is_near_the_error_measured_over_independent_releases():
    """gs-topdown on dense regions (30-60 groups of each size) at epsilon 1, 24 releases:
    the mean estimate per level within 10% (+ 3 paired standard errors) of the mean
    |released - true| measured; a biased estimate (the signed mean error, or the
    half-widths) would not be."""
    data = group_sizes()
    truth, h = data.node_counts(), data.hierarchy
    source = NoiseSource(seed=5)
    runs = 24
    estimated, measured = np.empty((h.n_levels, runs)), np.empty((h.n_levels, runs))
    for run in range(runs):
        release = get_mechanism("gs-topdown").release(data, PrivacyBudget.pure(1.0),
                                                      source=source)
        by_level = intervals_for(release, 0.9, 20).record["estimated_error"]["by_level"]
        estimated[:, run] = list(by_level.values())
        error = np.abs(release.values - truth)
        measured[:, run] = [error[h.level_slice(lv)].mean() for lv in range(h.n_levels)]
    for lv in range(h.n_levels):
        se = (estimated[lv] - measured[lv]).std(ddof=1) / np.sqrt(runs) / measured[lv].mean()
        ratio = estimated[lv].mean() / measured[lv].mean()
        assert abs(ratio - 1) <= 0.1 + 3 * se, (h.level_names[lv], ratio, se)

"""The a priori errors the explanation quotes for group sizes, flows and ranges
(`hierdp_core.explain_errors`) against the errors of seeded releases: the noise each level
actually gets (recorded where the mechanism applies it) or, for ranges, the error of the
estimates before the consistency step. The tolerance is five standard errors of the
empirical mean: for mean |noise| from the noise's own law (var |X| = sd² − (E|X|)²), for
squared errors from their sample variance over independent units."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.explain import explain
from hierdp_core.explain_errors import ROUNDING
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.levels import LevelPlan
from hierdp_core.privacy.samplers import Noise, NoiseSource
from hierdp_core.ranges.workloads import bands, prefix_ranges

Z = 5.0  # standard errors allowed


@pytest.fixture(scope="module")
def households():
    from hierdp_core.groupsizes.data import group_size_data_from_histograms
    from hierdp_core.groupsizes.samples import us_households

    return group_size_data_from_histograms(us_households(), ["state", "county"], "size",
                                           "households", max_size=30)


@pytest.fixture(scope="module")
def flights():
    from hierdp_core.flows.data import flow_data_from_table
    from hierdp_core.flows.samples import load_airport_flows

    return flow_data_from_table(load_airport_flows(), ["o_state", "o_airport"],
                                ["d_state", "d_airport"], "flights")


@pytest.fixture(scope="module")
def residents():
    from hierdp_core.data.samples import load_sample
    from hierdp_core.queries.ranges import range_data_from_table

    return range_data_from_table(load_sample("italy-municipalities"), ["region", "province"],
                                 "age", count_column="residents", domain=(0, 100))


@pytest.fixture
def recorded(monkeypatch):
    """Level -> the noise every `LevelPlan.apply` of the test added at that level."""
    noise: dict[int, list[np.ndarray]] = {}
    apply = LevelPlan.apply

    def recording(self, values, source):
        noisy = apply(self, values, source)
        noise.setdefault(self.level, []).append(np.ravel(noisy - values))
        return noisy
    monkeypatch.setattr(LevelPlan, "apply", recording)
    return noise


def assert_noise_as_explained(errors: pd.DataFrame, noise: dict, levels) -> None:
    for level in levels:
        draws = np.concatenate(noise[level]).astype(float)
        mae, sd = errors["mae"].iloc[level], errors["rmse"].iloc[level]
        se = np.sqrt((sd ** 2 - mae ** 2) / draws.size)
        assert abs(np.abs(draws).mean() - mae) < Z * se, (level, np.abs(draws).mean(), mae)
        squares = draws ** 2
        assert abs(squares.mean() - sd ** 2) < Z * squares.std() / np.sqrt(draws.size)


@pytest.mark.parametrize("mechanism", ["gs-noisy", "gs-mc-dp"])  # plain, cumulative
def test_group_size_errors_are_the_noise_each_cell_gets(households, recorded, mechanism):
    budget = PrivacyBudget.pure(0.5)
    e = explain(households, mechanism, budget)
    assert list(e.errors["regions"]) == [households.hierarchy.level_size(lv) for lv in
                                         range(3)]
    for seed in range(3):
        get_mechanism(mechanism).release(households, budget, source=NoiseSource(seed=seed))
    assert_noise_as_explained(e.errors, recorded, range(3))


@pytest.mark.parametrize("mechanism", ["gs-kuo-hc", "gs-kuo-hierarchical"])
def test_kuos_own_calibration_gives_the_explained_noise(households, monkeypatch, mechanism):
    """Kuo's estimators draw their noise themselves (`groupsizes.kuo_estimators`): every
    draw is recorded at the sampler; with the uniform split every level has the same."""
    draws = []
    apply = Noise.apply

    def recording(self, values, source, **kwargs):
        noisy = apply(self, values, source, **kwargs)
        draws.append(np.ravel(noisy - values))
        return noisy
    monkeypatch.setattr(Noise, "apply", recording)
    budget = PrivacyBudget.pure(0.5)
    e = explain(households, mechanism, budget)
    assert e.errors["mae"].nunique() == 1
    for seed in range(2):
        get_mechanism(mechanism).release(households, budget, source=NoiseSource(seed=seed))
    assert_noise_as_explained(e.errors, {0: draws}, [0])


@pytest.mark.parametrize(("mechanism", "split"), [("inftda", "geometric"),
                                                   ("tda-l2", None),
                                                   ("vanilla-gauss", None)])
def test_flow_errors_are_the_noise_each_pair_gets(flights, recorded, mechanism, split):
    budget = PrivacyBudget.approx(1.0, 1e-8)
    e = explain(flights, mechanism, budget, split)
    for seed in range(3):
        get_mechanism(mechanism).release(flights, budget, split=split,
                                         source=NoiseSource(seed=seed))
    measured = [lv for lv in range(flights.depth + 1) if lv in recorded]
    assert measured == ([flights.depth] if mechanism == "vanilla-gauss"
                        else list(range(1, flights.depth + 1)))
    noise = e.errors
    if mechanism != "vanilla-gauss":  # the top-down ones show a bound: the noise's sd + 0.5
        ledger = get_mechanism(mechanism).ledger(flights, budget, split=split)
        noise = noise.assign(mae=ledger["expected_abs_error"].to_numpy(float),
                             rmse=ledger["noise_sd"].to_numpy(float))
        largest = np.maximum.accumulate(noise["rmse"].fillna(0).to_numpy())  # down to it
        for column in ("mae", "rmse", "mae_high"):
            np.testing.assert_allclose(e.errors[column][1:], largest[1:] + ROUNDING)
    assert_noise_as_explained(noise, recorded, measured)
    root = e.errors.iloc[0]
    assert (root["mae"] == 0) == (mechanism != "vanilla-gauss")  # n exact in the top-down
    assert e.errors["pairs"].iloc[-1] == flights.level_width(2) ** 2


@pytest.mark.parametrize(("eps", "split"), [(0.1, None), (1.0, None), (10.0, None),
                                           (1.0, [0.2, 0.3, 0.5])])
def test_the_group_size_topdowns_figure_bounds_the_released_error(households, eps, split):
    """gs-topdown's figure is an upper bound of a released count's mean |error|
    (`explain_errors.GROUP_SIZE_BOUND_BASIS`): on the households, five releases, every
    level's measured error lies under it (within five standard errors), at epsilon 10
    too, where the rounding is most of it, and with a split giving the finer levels more
    budget (their bound is then the coarser levels' larger noise: a single child, as the
    District of Columbia's county, takes its parent's error). (M_H^dp's root, 1.9 times
    it at epsilon 0.1, is why the whole-tree fits keep the noise's figure.)"""
    budget, mechanism = PrivacyBudget.pure(eps), "gs-topdown"
    e = explain(households, mechanism, budget, split)
    assert (e.errors["mae_low"] == 0).all()
    assert e.error_text.startswith("Per released number") and " up to " in e.error_text
    noise = get_mechanism(mechanism).ledger(households, budget, split=split)["noise_sd"]
    np.testing.assert_allclose(e.errors["mae_high"],
                               np.maximum.accumulate(noise.to_numpy(float)) + ROUNDING)
    truth, h = households.node_counts(), households.hierarchy
    error = np.stack([np.abs(get_mechanism(mechanism).release(
        households, budget, split=split, source=NoiseSource(seed=seed)).values - truth)
        for seed in range(5)])
    for lv in range(h.n_levels):
        level = error[:, h.level_slice(lv)].ravel()
        se = level.std() / np.sqrt(level.size)
        assert level.mean() <= e.errors["mae_high"].iloc[lv] + Z * se, (lv, level.mean())


@pytest.mark.parametrize("mechanism", ["inftda", "tda-l2"])
def test_top_down_flow_figures_bound_the_released_pairs_error(flights, mechanism):
    """The top-down mechanisms' figure is an upper bound of a released pair's mean |error|
    (`explain_errors.FLOW_TOPDOWN_BASIS`): on the flights, five releases, every level's
    measured error lies under it (within three standard errors) and the text says "up to"
    per released number."""
    budget = PrivacyBudget.approx(1.0, 1e-8)
    e = explain(flights, mechanism, budget)
    assert (e.errors["mae_low"] == 0).all()
    assert e.error_text.startswith("Per released number") and " up to " in e.error_text
    errors: dict[int, list[np.ndarray]] = {}
    for seed in range(5):
        release = get_mechanism(mechanism).release(flights, budget,
                                                   source=NoiseSource(seed=seed))
        for t, lv in enumerate(release.levels):
            truth = flights.lookup(t, lv.origin, lv.destination)
            errors.setdefault(t, []).append(np.abs(lv.value - truth))
    for t, parts in errors.items():
        error = np.concatenate(parts)
        se = error.std() / np.sqrt(error.size) if error.size > 1 else 0.0
        assert error.mean() <= e.errors["mae_high"].iloc[t] + Z * se, (t, error.mean())


def test_the_leaf_baselines_coarser_levels_sum_the_leaf_noise(flights):
    """vanilla-gauss: the RMSE of a coarser pair is that of its leaf pairs' noise summed."""
    budget = PrivacyBudget.approx(1.0, 1e-8)
    e = explain(flights, "vanilla-gauss", budget)
    squares = {level: [] for level in range(flights.depth)}
    for seed in range(20):
        release = get_mechanism("vanilla-gauss").release(flights, budget,
                                                         source=NoiseSource(seed=seed))
        for level, found in squares.items():
            lo, ld = flights.pair_levels(level)
            width = flights.level_width(ld)
            released = np.zeros(flights.level_width(lo) * width)
            released[release.levels[level].keys(width)] = release.levels[level].value
            keys, counts = flights.level_table(level)
            released[keys] -= counts
            found.append(released ** 2)
    for level, found in squares.items():
        found = np.concatenate(found)
        expected = e.errors["rmse"].iloc[level] ** 2
        assert abs(found.mean() - expected) < Z * found.std() / np.sqrt(found.size), level
    assert "total " in e.error_text and "(RMSE)" in e.error_text


@pytest.mark.parametrize(("mechanism", "workload"), [
    ("greedy-h", prefix_ranges(101)), ("identity", prefix_ranges(101)),
    ("h2", prefix_ranges(101)), ("hb", prefix_ranges(101)), ("privelet", prefix_ranges(101)),
    ("dawa", bands([str(a) for a in range(101)], "0-14,15-24,25-44,45-64,65-79,80-100"))])
def test_range_errors_are_those_of_the_estimates_before_consistency(residents, mechanism,
                                                                     workload):
    """Levels without a data-dependent partition: the explained RMSE per query is the
    error of the released estimates before the top-down step (DAWA with disjoint bands
    skips its partition: it cannot pay)."""
    data = residents.with_workload(workload)
    budget = PrivacyBudget.pure(1.0)
    e = explain(data, mechanism, budget)
    assert e.errors["mae"].isna().all() and (e.errors["rmse"] > 0).all()
    h = data.hierarchy
    truth = data.node_counts()
    per_unit = {lv: [] for lv in (1, 2)}
    for seed in range(4):
        release = get_mechanism(mechanism).release(data, budget, source=NoiseSource(seed=seed))
        for level in per_unit:
            for node in range(h.level_slice(level).start, h.level_slice(level).stop):
                errors = data.workload.answer(release.noisy[node] - truth[node])
                per_unit[level].append(np.mean(errors ** 2))
    for level, squares in per_unit.items():
        squares = np.asarray(squares)
        expected = e.errors["rmse"].iloc[level] ** 2
        se = squares.std() / np.sqrt(squares.size)
        assert abs(squares.mean() - expected) < Z * se, (level, squares.mean(), expected)


def test_range_methods_without_a_model_say_so(residents):
    e = explain(residents, "uniform", PrivacyBudget.pure(1.0))
    assert e.errors["rmse"].isna().all() and "not modelled for uniform" in e.error_text


def test_the_levels_with_a_data_dependent_partition_are_named(residents):
    e = explain(residents, "dawa", PrivacyBudget.pure(1.0))  # prefixes: it can pay
    assert "DAWA's private partition (province)" in e.error_text
    assert "private partition" not in explain(residents, "greedy-h",
                                              PrivacyBudget.pure(1.0)).error_text


def test_range_errors_are_kept_by_content(residents):
    """A page redraw rebuilds its workload: an equal one reuses the strategy's errors."""
    from hierdp_core import explain_errors

    explain_errors._UNIT_ERRORS.clear()
    first = explain(residents.with_workload(prefix_ranges(101)), "greedy-h",
                    PrivacyBudget.pure(1.0))
    assert len(explain_errors._UNIT_ERRORS) == 1  # one strategy for every level
    again = explain(residents.with_workload(prefix_ranges(101)), "greedy-h",
                    PrivacyBudget.pure(2.0))
    assert len(explain_errors._UNIT_ERRORS) == 1
    np.testing.assert_allclose(again.errors["rmse"], first.errors["rmse"] / 2)


def test_the_text_says_the_noise_is_not_the_released_error(households, flights):
    """For group sizes and flows the figures are the noise on each measurement, before a
    consistency step whose effect depends on the data (the coverage benchmark measured
    the released error at 0-18 times the figure for group sizes): the text says so
    instead of calling them the released numbers' error."""
    from hierdp_core.explain import NOT_THE_RELEASED_ERROR

    for data, name, budget in ((households, "gs-mc-chain", PrivacyBudget.pure(1.0)),
                               (households, "gs-kuo-hierarchical", PrivacyBudget.pure(1.0)),
                               (households, "gs-mh-dp", PrivacyBudget.pure(1.0)),
                               (flights, "stability-histogram",
                                PrivacyBudget.approx(1.0, 1e-8))):
        text = explain(data, name, budget).error_text
        assert text.startswith("Per number before the consistency step"), text
        assert NOT_THE_RELEASED_ERROR in text and "A released number" not in text
    leaves_summed = explain(flights, "vanilla-gauss", PrivacyBudget.approx(1.0, 1e-8))
    assert leaves_summed.error_text.startswith("Per released number")  # summed noise

"""A small version of the shape-varied coverage benchmark (`benchmarks/bench_coverage.py`,
issue 30 item 2) in CI: its shapes are unlike each other as it claims, and on three of
them (one of tiny sparse units at a small budget, where TopDown's plain bootstrap held
0.60 of the leaves) every level's coverage over independent releases is within 4 of its
standard errors of nominal (0.90 and 0.95) or above it, the release's manifest marks no
counts level ``calibrated: false``, and the error forecast holds (issue 30 item 3)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_coverage  # noqa: E402
from coverage_flows import release_source  # noqa: E402
from coverage_shapes import SHAPES, make_counts, make_ranges  # noqa: E402

from hierdp_core.intervals import intervals_for, uncalibrated_warning  # noqa: E402
from hierdp_core.mechanisms.base import get_mechanism  # noqa: E402
from hierdp_core.privacy.budget import PrivacyBudget  # noqa: E402
from hierdp_core.privacy.samplers import NoiseSource  # noqa: E402

SMALL = ("flat-tiny", "tiny-units", "ragged-5")


def run_benchmark(argv: list[str]) -> dict:
    """`bench_coverage.main` on ``argv``: its printed JSON (its progress lines dropped)."""
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out), redirect_stderr(StringIO()):
        assert bench_coverage.main(argv) == 0
    return json.loads(out.getvalue())


def test_shapes_cover_the_asked_range():
    assert len(SHAPES) >= 20
    levels, fanouts, empty, ragged, sizes = set(), [], [], [], []
    for index, shape in enumerate(SHAPES):
        data = make_counts(shape, index)
        h = data.hierarchy
        levels.add(h.n_levels)
        fanouts += list(np.diff(h.child_ptr)[: h.n_nodes - h.n_leaves])
        empty.append(float((data.leaf_counts == 0).mean()))
        ragged.append(shape.ragged)
        sizes.append(data.leaf_counts.max())
    assert levels == {2, 3, 4, 5, 6}
    assert min(fanouts) == 1 and max(fanouts) >= 450
    assert min(empty) == 0 and max(empty) >= 0.55
    assert max(ragged) > 0 and max(sizes) >= 1_000_000


@pytest.fixture(scope="module", params=[0.9, 0.95])
def small_run(request):
    return run_benchmark(["--shapes", ",".join(SMALL), "--eps", "0.1",
                          "--runs", "120", "--replicates", "20",
                          "--level", str(request.param)])


def test_small_benchmark_json(small_run):
    assert set(small_run["results"]) == set(SMALL)
    assert {"worst_coverage", "worst_cell", "uncalibrated", "unresolved",
            "worst_forecast_ratio", "forecast_misses"} <= set(small_run)
    cell = small_run["worst_cell"]
    assert cell["coverage"] == small_run["worst_coverage"]
    assert {"shape", "case", "level", "releases", "se", "calibrated"} <= set(cell)


def test_small_benchmark_holds_every_level(small_run):
    for shape, entry in small_run["results"].items():
        for case, result in entry["cases"].items():
            for level in result["levels"]:
                assert level["releases"] == 120
                nominal = small_run["level"]
                assert level["coverage"] >= nominal - 4 * level["se"], (shape, case, level)
                assert level["forecast"]["holds"], (shape, case, level)
                estimated = level.get("estimated_error")  # TopDown's, from its bootstrap
                assert (estimated is not None) == case.startswith("topdown")
                assert estimated is None or estimated["holds"], (shape, case, level)
    assert not small_run["under_not_flagged"]
    assert not small_run["flagged_in_manifest"]  # no counts level is left uncalibrated


def test_small_benchmark_says_why_a_level_covers_too_much(small_run):
    """Each level gives the share of values released exactly and the better one-step
    narrower interval's coverage (never above its own); a level over nominal says why."""
    nominal = small_run["level"]
    for entry in small_run["results"].values():
        for result in entry["cases"].values():
            for level in result["levels"]:
                assert 0 <= level["released_exact"] <= level["coverage"]
                assert level["narrowed_coverage"] <= level["coverage"]
                assert ("over_reason" in level) == (level["verdict"] == "over")
                if level["verdict"] == "over":
                    assert level["over_reason"] == bench_coverage.over_reason(
                        level["released_exact"], level["narrowed_coverage"], nominal,
                        level["near_zero"])


def test_secure_releases_are_measured_as_published(monkeypatch):
    """``--secure`` makes every release with the exact sampler and no seed (what a user
    publishes) and says so; the intervals computed on them hold."""
    made = []

    def spy(seed, secure):
        made.append(release_source(seed, secure))
        return made[-1]

    monkeypatch.setattr(bench_coverage, "release_source", spy)
    out = run_benchmark(["--shapes", "tiny-units", "--mechanisms", "topdown,gs-topdown",
                         "--eps", "1", "--runs", "60", "--replicates", "20", "--secure"])
    assert out["secure"] is True
    assert len(made) == 2 and all(s.secure and s.backend == "hierdp" for s in made)
    for result in out["results"]["tiny-units"]["cases"].values():
        for level in result["levels"]:
            assert level["coverage"] >= 0.9 - 4 * level["se"], level


def test_interval_hits_narrow_towards_the_released_value():
    """An integer interval narrows by one at an end, never past the released value; a
    real one loses its ends; the reasons split forced, step and wider than needed."""
    values, truth = np.array([5, 5, 5, 0]), np.array([3, 5, 7, 1])
    lower, upper = np.array([3, 5, 4, 0]), np.array([7, 5, 7, 2])
    hits = bench_coverage.interval_hits(values, truth, lower, upper, integer=True)
    assert hits["hit"].tolist() == [True, True, True, True]
    assert hits["exact"].tolist() == [False, True, False, False]
    assert hits["raised"].tolist() == [False, True, True, True]  # [4, 7] [5, 5] [5, 7] [0, 2]
    assert hits["lowered"].tolist() == [True, True, False, True]  # [3, 6] [5, 5] [4, 6] [0, 1]
    real = bench_coverage.interval_hits(values * 1.0, truth, lower * 1.0, upper * 1.0,
                                        integer=False)
    assert real["raised"].tolist() == [False, False, False, True]
    assert bench_coverage.over_reason(0.97, 0.97, 0.9).startswith("forced")
    assert bench_coverage.over_reason(0.5, 0.8, 0.9).startswith("step")
    assert bench_coverage.over_reason(0.5, 0.95, 0.9).startswith("wider than needed")
    near = bench_coverage.near_zero_truths(np.array([True, True, False, True]),
                                           np.array([0, 9, 1, 20]), np.array([4, 4, 4, 4]))
    assert near == {"share": 0.5, "near": 0.5, "others": 1.0}  # truths below 2 are near 0
    held = {"share": 0.6, "near": 1.0, "others": 0.91}
    assert bench_coverage.over_reason(0.5, 0.95, 0.9, held).startswith("near 0")
    assert bench_coverage.over_reason(0.5, 0.95, 0.9, {**held, "others": 0.94}
                                      ).startswith("wider than needed")
    assert bench_coverage.near_zero_truths(hits["hit"], truth, np.zeros(4)) is None
    every = bench_coverage.near_zero_truths(hits["hit"], truth, np.full(4, 100))
    assert every == {"share": 1.0, "near": 1.0, "others": None}  # all near 0: the boundary
    assert bench_coverage.over_reason(0.5, 0.99, 0.9, every).startswith("near 0: every")


def test_worst_category_finds_the_size_a_level_average_hides():
    """A level of 2 units x 3 sizes x 100 releases that covers 0.9 on average, with the
    third size at 0.7: the level is within nominal, the size is under."""
    rng = np.random.default_rng(0)
    hit = np.ones((2, 3, 100), dtype=bool)
    hit[:, 2, :] = rng.random((2, 100)) < 0.7
    hit[:, 0, :] = rng.random((2, 100)) < 0.95
    worst = bench_coverage.worst_category(hit, 0.9)
    assert worst["category"] == 2 and worst["coverage"] == pytest.approx(hit[:, 2].mean())
    assert worst["verdict"] == "under" and worst["se"] >= np.sqrt(0.7 * 0.3 / 200) - 0.01
    assert bench_coverage.worst_category(hit[:, :1], 0.9) is None  # one category
    assert bench_coverage.worst_category(hit[:, :, 0], 0.9) is None  # counts' batches


def test_group_sizes_are_measured_on_request():
    """``--mechanisms gs-topdown``: releases of groups of 1-4 people per shape, one after
    the other, coverage per level over regions x sizes x releases, and `explain()`'s a
    priori figure (the noise per measured cell) beside the error measured."""
    run = run_benchmark(["--shapes", "flat-few", "--mechanisms", "gs-topdown",
                         "--eps", "1", "--runs", "6", "--replicates", "20"])
    levels = run["results"]["flat-few"]["cases"]["gs-topdown eps=1"]["levels"]
    assert [lv["releases"] for lv in levels] == [6, 6]
    assert all(0 <= lv["coverage"] <= 1 for lv in levels)
    assert all(lv["worst_category"]["coverage"] <= lv["coverage"] for lv in levels)
    assert "under_in_a_category" in run
    for lv in levels:
        forecast = lv["forecast"]
        assert forecast["measure"] == "mean |error|" and forecast["measured"] > 0
        assert forecast["ratio"] == pytest.approx(forecast["mae"] / forecast["measured"],
                                                  rel=1e-3)
    with pytest.raises(SystemExit):
        bench_coverage.main(["--mechanisms", "gs-nothing"])


def test_the_error_estimated_from_each_release_is_put_beside_the_measured():
    """Each re-run level carries ``estimated_error``: the mean over the releases of the
    error their own re-runs estimate against the mean |error| measured, their ratio, its
    paired standard error and whether it holds; the summary counts the levels held."""
    run = run_benchmark(["--shapes", "ragged-3", "--mechanisms", "gs-topdown,uniform",
                         "--eps", "1", "--runs", "6", "--replicates", "20"])
    cases = run["results"]["ragged-3"]["cases"]
    for lv in cases["gs-topdown eps=1"]["levels"]:
        e = lv["estimated_error"]
        assert e["measured"] == pytest.approx(lv["forecast"]["measured"], rel=1e-3)
        assert e["ratio"] == pytest.approx(e["estimated"] / e["measured"], rel=1e-2)
        assert e["release_ratios"][0] <= e["release_ratios"][1] and e["se"] > 0
    assert all(lv["estimated_error"]["estimated"] is None  # shares of one bucket
               for lv in cases["uniform eps=1"]["levels"])
    held, measured = map(int, run["estimated_error_held"].split(" of "))
    assert measured == 4 and held == measured - len(run["estimated_error_misses"])
    assert run["estimated_error_not_estimated"] == 4


def test_forecast_errors_are_what_the_forecast_is_of():
    """A range release's errors become its workload's answers' (prefix sums here), a
    cumulative group-size mechanism's its cumulative counts' (sizes at most k), the last
    (every region's number of groups, published exactly) left out."""
    from coverage_shapes import make_group_sizes, make_ranges

    shape = SHAPES[0]
    ranges = make_ranges(shape, 0)
    error = np.random.default_rng(1).integers(-3, 4, (*ranges.node_counts().shape, 2))
    answers = bench_coverage.forecast_errors(ranges, "identity", error)
    assert answers.shape == (error.shape[0], ranges.workload.m, 2)
    np.testing.assert_array_equal(answers, np.cumsum(error, axis=1))  # prefix workload
    sizes = make_group_sizes(shape, 0)
    error = error[:, :4]
    np.testing.assert_array_equal(bench_coverage.forecast_errors(sizes, "gs-mc-chain", error),
                                  np.cumsum(error, axis=1)[:, :-1])
    assert bench_coverage.forecast_errors(sizes, "gs-topdown", error) is error


def test_a_forecast_not_modelled_is_listed_not_judged():
    """Uniform's error is not modelled by `explain()` (NaN: its bias depends on the data):
    the benchmark lists its levels under ``forecast_not_modelled`` and judges nothing
    (``holds`` None)."""
    run = run_benchmark(["--shapes", "flat-few", "--mechanisms", "uniform", "--eps", "1",
                         "--runs", "3", "--forecast-only"])
    levels = run["results"]["flat-few"]["cases"]["uniform eps=1"]["levels"]
    assert all(lv["forecast"]["holds"] is None and lv["forecast"]["measure"] == "RMSE"
               for lv in levels)
    assert len(run["forecast_not_modelled"]) == len(levels)
    assert not run["forecast_misses"]


def test_ranges_are_measured_on_request_and_uniform_bounds_its_cells():
    """``--mechanisms uniform,identity``: range releases (32 values, prefix workload) per
    shape. Uniform spreads each unit's noisy total evenly, so its cells are biased wherever
    the profile is not flat; its intervals bound each cell by its unit's total (one bucket)
    and cover (they covered 0.00-0.09 of chain-top's cells as a plain bootstrap)."""
    run = run_benchmark(["--shapes", "chain-top", "--mechanisms",
                         "uniform,identity", "--eps", "1", "--runs", "8",
                         "--replicates", "20"])
    cases = run["results"]["chain-top"]["cases"]
    uniform = cases["uniform eps=1"]["levels"]
    assert [lv["releases"] for lv in uniform] == [8] * 4
    assert all(lv["coverage"] >= 0.9 for lv in uniform), uniform
    assert all(lv["method"] == "share-of-bucket bound" for lv in uniform)
    assert all(lv["method"].startswith("parametric bootstrap")
               for lv in cases["identity eps=1"]["levels"])


def test_range_leaves_released_near_zero_are_inverted():
    """H2 on chain-top's leaves (50 units of ~500 people over 32 values) at epsilon 0.1:
    TopDown clips its cells at 0, so a plain bootstrap around cells released near 0 covered
    0.58 of them; inverted near 0 they hold their level."""
    run = run_benchmark(["--shapes", "chain-top", "--mechanisms", "h2", "--eps", "0.1",
                         "--runs", "6", "--replicates", "20"])
    leaves = run["results"]["chain-top"]["cases"]["h2 eps=0.1"]["levels"][-1]
    assert leaves["coverage"] >= 0.9 - 4 * leaves["se"], leaves
    assert leaves["method"] == "parametric bootstrap, inverted near 0"


@pytest.mark.parametrize("nominal", [0.9, 0.95])
def test_least_squares_root_holds_over_enough_releases(nominal):
    """The least-squares root of ``chain-top`` (one value per release; 0.8475 over the
    benchmark's former 400 releases, 0.878 over 2,000 with the former 1,000 simulation
    draws): over the benchmark's default releases its coverage is within 0.03 of nominal,
    beyond two of its standard errors (a binomial tolerance <= 0.02, issue 30 item 2)."""
    run = run_benchmark(["--shapes", "chain-top", "--mechanisms",
                         "least-squares", "--eps", "1", "--seed", "3",
                         "--level", str(nominal)])
    root = run["results"]["chain-top"]["cases"]["least-squares eps=1"]["levels"][0]
    assert 2 * root["se"] <= 0.02, root
    assert root["coverage"] - 2 * root["se"] >= nominal - bench_coverage.TARGET, root


def test_uniform_flags_its_levels_below_the_root():
    """Uniform's units below the root get their share of the root's even spread, rounded
    by TopDown to 0 or 1 per value: their totals are biased and the re-runs on the even
    plug-in do not show it, so its intervals there held 0.909 at nominal 0.95 (the
    benchmark's tiny-units, epsilon 10; reproduced here over 20 releases). The manifest
    marks those levels `calibrated: false` with that reason, the root calibrated."""
    index = [s.name for s in SHAPES].index("tiny-units")
    data = make_ranges(SHAPES[index], index)
    source, held = NoiseSource(seed=11), []
    at = data.hierarchy.level_slice(1)
    truth = data.node_counts()[at]
    for _ in range(20):
        release = get_mechanism("uniform").release(data, PrivacyBudget.pure(10.0),
                                                   source=source)
        iv = intervals_for(release, 0.95, 20)
        held.append(((iv.lower[at] <= truth) & (truth <= iv.upper[at])).mean())
    assert np.mean(held) < 0.93
    root, *below = release.hierarchy.level_names
    assert iv.record["calibration"][root]["calibrated"]
    assert all(not iv.record["calibration"][n]["calibrated"] and
               "0.909" in iv.record["calibration"][n]["reason"] for n in below)
    assert below[0] in uncalibrated_warning(dataclasses.replace(release, intervals=iv))

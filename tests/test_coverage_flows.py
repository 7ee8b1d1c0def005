"""A small version of the flow part of the coverage benchmark
(`benchmarks/coverage_flows.py`, issue 30 item 2) in CI: the stability histogram's levels
above the leaves, whose bootstrap held 0.00-0.84 of them (the suppressed cells), hold at
least their level with the suppression bound, on a deep sparse O/D tree at two levels;
the bound's Chernoff tail holds by simulation; the benchmark's ``--flows`` output puts
the flow cells into ``worst_coverage``/``worst_cell``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_coverage  # noqa: E402
from coverage_flows import flow_case, make_flows  # noqa: E402

from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.intervals.flows import SUPPRESSION_BOUND, half_laplace_sum_bound


@pytest.mark.parametrize("nominal", [0.9, 0.95])
def test_stability_histogram_levels_above_the_leaves_hold_their_level(nominal):
    data = make_flows("flows-deep-binary", 1)
    case = flow_case(data, "stability-histogram", 1.0, 8, nominal, 7, 20,
                     bench_coverage.TARGET)
    above = case["levels"][:-1]
    assert len(above) == 8
    for lv in above:  # the bound holds per cell with >= nominal: not below by 2 se + target
        assert lv["verdict"] != "under", lv
        assert lv["method"] == SUPPRESSION_BOUND and lv["manifest_calibrated"]


def test_half_laplace_chernoff_tail_holds_by_simulation():
    rng = np.random.default_rng(3)
    n, scale, p = np.array([1, 4, 30]), 2.0, 0.05
    bound = half_laplace_sum_bound(n, scale, p)
    draws = 40_000
    for k, t in zip(n, bound, strict=True):
        sums = np.maximum(rng.laplace(0, scale, (draws, k)), 0).sum(axis=1)
        tail = (sums >= t).mean()
        assert tail <= p + 3 * np.sqrt(p * (1 - p) / draws), (k, tail)
        assert tail > p / 20  # a bound, yet not absurdly loose


def test_flow_cells_enter_the_benchmark_summary(capsys):
    assert bench_coverage.main(["--flows-only", "--flows", "stability-histogram",
                                "--flow-runs", "2", "--eps", "10", "--replicates",
                                "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["results"]) == {"flows-few-units", "flows-deep-binary",
                                   "flows-unequal-fanout", "flows-sparse"}
    assert out["worst_cell"]["shape"].startswith("flows-")
    assert out["worst_coverage"] == min(lv["coverage"] for e in out["results"].values()
                                        for c in e["cases"].values() for lv in c["levels"])


def test_the_flow_forecast_is_measured_beside_the_coverage(capsys):
    """Each flow level carries the figure `explain()` shows against the released error
    (issue 30 item 3): the leaf noise of the stability histogram holds (its leaves are the
    noisy counts), its coarser levels, sums of leaves it may suppress, have no figure (not
    modelled), InfTDA's total, published exactly, is 0 and measured 0, and its figure
    below is an upper bound (a range from 0) that holds."""
    assert bench_coverage.main(["--flows-only", "--flows", "stability-histogram,inftda",
                                "--flow-runs", "30", "--eps", "1", "--replicates",
                                "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    for shape, entry in out["results"].items():
        histogram = entry["cases"]["stability-histogram eps=1"]["levels"]
        assert histogram[-1]["forecast"]["holds"], (shape, histogram[-1])
        assert all(lv["forecast"]["holds"] is None for lv in histogram[:-1])
        total, *below = (lv["forecast"] for lv in entry["cases"]["inftda eps=1"]["levels"])
        assert total["mae"] == total["measured"] == 0.0 and total["holds"]
        for fc in below:
            assert fc["range"] and fc["low"] == 0 < fc["measured"] < fc["high"], (shape, fc)
            assert fc["holds"]
    assert any(f.startswith("flows-") for f in out["forecast_not_modelled"])


def test_a_release_with_every_leaf_suppressed_still_bounds_its_coarse_nodes():
    """At epsilon 0.1 the threshold (about 300 trips) suppresses every leaf of a table of
    at most 5 trips per pair: the coarse nodes, released as 0, get the bound (they got
    [0, 0] before)."""
    data = synthetic_flows(1, 3, 0.0, 5, seed=2)
    case = flow_case(data, "stability-histogram", 0.1, 3, 0.9, 1, 20, bench_coverage.TARGET)
    assert all(lv["coverage"] == 1.0 for lv in case["levels"])

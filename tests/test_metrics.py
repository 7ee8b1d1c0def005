"""Tests for hierdp_core.metrics: hand-computed values on tiny trees, edge cases, properties."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.metrics as metrics_module
from hierdp_core.errors import InputError
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.metrics import (
    COLUMNS,
    METRICS,
    bin_labels,
    error_metrics,
    metric_descriptions,
)


# ---- fixtures --------------------------------------------------------------------------
def _tree():
    """root(0) -> A(1), B(2); A -> A/a1(3), A/a2(4); B -> B/b1(5), B/b2(6)."""
    t = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b2"]})
    h, _ = build_hierarchy(t, ["state", "county"])
    assert h.node_ids().tolist() == ["root", "A", "B", "A/a1", "A/a2", "B/b1", "B/b2"]
    return h


# leaves a1=0, a2=5, b1=20, b2=200, aggregated
TRUTH = np.array([225, 5, 220, 0, 5, 20, 200])
# deliberately inconsistent: root 230 != 5 + 230, A 5 != 2 + 0, B 230 != 25 + 200
RELEASED = np.array([230, 5, 230, 2, 0, 25, 200])


def _row(df, level, bin_="all"):
    rows = df[(df["level"] == level) & (df["bin"] == bin_)]
    assert len(rows) == 1, f"expected one row for level {level}, bin {bin_!r}, got {len(rows)}"
    return rows.iloc[0]


@pytest.fixture
def example():
    return error_metrics(_tree(), TRUTH, RELEASED)


# ---- structure -------------------------------------------------------------------------
def test_columns_and_row_order(example):
    assert list(example.columns) == list(COLUMNS)
    assert list(zip(example["level"], example["bin"], strict=True)) == [
        (0, "100-999"), (0, "all"),
        (1, "0-9"), (1, "100-999"), (1, "all"),
        (2, "0-9"), (2, "10-99"), (2, "100-999"), (2, "all"),
    ]
    assert example["level_name"].tolist() == ["total"] * 2 + ["state"] * 3 + ["county"] * 4
    assert example["units"].tolist() == [1, 1, 1, 1, 2, 2, 1, 1, 4]
    assert example["cells"].tolist() == example["units"].tolist()


def test_descriptions_cover_every_column():
    desc = metric_descriptions()
    assert set(desc) == set(COLUMNS)
    assert all(isinstance(v, str) and v and "\n" not in v for v in desc.values())
    desc["mae"] = "changed"  # a copy: callers cannot alter the module's table
    assert metric_descriptions()["mae"] != "changed"


def test_module_doctests_pass():
    result = doctest.testmod(metrics_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


# ---- hand-computed values --------------------------------------------------------------
def test_root_level(example):
    r = _row(example, 0)
    assert r["mae"] == 5 and r["rmse"] == 5 and r["max_abs_error"] == 5
    assert r["mape"] == pytest.approx(100 * 5 / 225)
    assert r["malpe"] == pytest.approx(100 * 5 / 225)
    assert r["tvd_accuracy"] == pytest.approx(1 - 5 / 450)
    assert r["share_over_10pct"] == 0
    assert r["false_zero_rate"] == 0
    assert math.isnan(r["ghost_rate"])  # no true zeros at the root
    assert r["consistency_violations"] == 1


def test_state_level(example):
    r = _row(example, 1)  # errors: A 0 (truth 5), B +10 (truth 220)
    assert r["mae"] == pytest.approx(5)
    assert r["rmse"] == pytest.approx(math.sqrt(50))
    assert r["max_abs_error"] == 10
    assert r["mape"] == pytest.approx(100 * (0 + 10 / 220) / 2)
    assert r["malpe"] == pytest.approx(100 * (0 + 10 / 220) / 2)
    assert r["tvd_accuracy"] == pytest.approx(1 - 10 / 450)
    assert r["share_over_10pct"] == 0
    assert r["consistency_violations"] == 2

    small = _row(example, 1, "0-9")  # A alone, perfect
    assert (small["units"], small["mae"], small["tvd_accuracy"]) == (1, 0, 1)
    big = _row(example, 1, "100-999")  # B alone
    assert big["mae"] == 10
    assert big["mape"] == pytest.approx(100 * 10 / 220)
    assert big["tvd_accuracy"] == pytest.approx(1 - 10 / 440)
    assert math.isnan(big["consistency_violations"])


def test_county_level(example):
    # a1: 0 -> 2 (ghost); a2: 5 -> 0 (false zero, -100%); b1: 20 -> 25 (+25%); b2: exact
    r = _row(example, 2)
    assert r["mae"] == pytest.approx(12 / 4)
    assert r["rmse"] == pytest.approx(math.sqrt(54 / 4))
    assert r["max_abs_error"] == 5
    assert r["mape"] == pytest.approx((100 + 25 + 0) / 3)
    assert r["malpe"] == pytest.approx((-100 + 25 + 0) / 3)
    assert r["tvd_accuracy"] == pytest.approx(1 - 12 / 450)
    assert r["share_over_10pct"] == pytest.approx(2 / 3)
    assert r["false_zero_rate"] == pytest.approx(1 / 3)
    assert r["ghost_rate"] == 1
    assert r["consistency_violations"] == 0  # leaves have no children

    small = _row(example, 2, "0-9")  # a1 and a2
    assert small["units"] == 2
    assert small["mae"] == pytest.approx(3.5)
    assert small["rmse"] == pytest.approx(math.sqrt(29 / 2))
    assert small["mape"] == 100 and small["malpe"] == -100
    assert small["tvd_accuracy"] == pytest.approx(1 - 7 / 10)
    assert small["share_over_10pct"] == 1
    assert small["false_zero_rate"] == 1 and small["ghost_rate"] == 1
    mid = _row(example, 2, "10-99")  # b1
    assert mid["malpe"] == pytest.approx(25)
    assert math.isnan(mid["ghost_rate"])
    assert mid["false_zero_rate"] == 0


def test_consistency_only_on_all_rows(example):
    is_all = example["bin"] == "all"
    assert example.loc[~is_all, "consistency_violations"].isna().all()
    assert example.loc[is_all, "consistency_violations"].tolist() == [1, 2, 0]


def test_consistency_tolerance():
    h = _tree()
    released = h.aggregate(np.array([1.0, 2.0, 3.0, 4.0]))
    released[0] += 1e-9  # float rounding: tolerated by default
    assert _row(error_metrics(h, TRUTH, released), 0)["consistency_violations"] == 0
    strict = error_metrics(h, TRUTH, released, consistency_tol=0.0)
    assert _row(strict, 0)["consistency_violations"] == 1
    with pytest.raises(InputError, match="consistency_tol"):
        error_metrics(h, TRUTH, released, consistency_tol=-1)


def test_perfect_release():
    h = _tree()
    df = error_metrics(h, TRUTH, TRUTH.copy())
    for col in ("mae", "rmse", "mape", "malpe", "max_abs_error", "share_over_10pct",
                "false_zero_rate"):
        assert (df[col] == 0).all(), col
    assert (df["tvd_accuracy"] == 1).all()
    # a1 is a true zero: ghost rate defined (0) on its rows, NaN where no true zeros
    assert _row(df, 2)["ghost_rate"] == 0
    assert math.isnan(_row(df, 1)["ghost_rate"])
    assert df.loc[df["bin"] == "all", "consistency_violations"].tolist() == [0, 0, 0]


def test_malpe_sign_shows_bias():
    h = _tree()
    truth = h.aggregate(np.array([10, 20, 30, 40]))
    over = error_metrics(h, truth, truth * 1.2)
    under = error_metrics(h, truth, truth * 0.8)
    assert over["malpe"].to_numpy() == pytest.approx(20)
    assert under["malpe"].to_numpy() == pytest.approx(-20)
    # mape is unsigned: the same for both
    assert over["mape"].to_numpy() == pytest.approx(under["mape"].to_numpy())
    assert over["mape"].to_numpy() == pytest.approx(20)


def test_share_over_10pct_is_strict():
    h = _tree()
    truth = h.aggregate(np.array([10, 30, 100, 1000]))
    # exactly 10% off (a1, a2 totals 11, 27) is not "over"; 11% (b1) and 10.1% (b2) are
    released = h.aggregate(np.array([11, 27, 111, 1101]))
    r = _row(error_metrics(h, truth, released), 2)
    assert r["share_over_10pct"] == pytest.approx(2 / 4)


def test_false_zero_and_ghost():
    h = _tree()
    truth = h.aggregate(np.array([0, 0, 7, 9]))
    released = h.aggregate(np.array([0, 3, 0, 9]))  # a1 right zero, a2 ghost, b1 false zero
    r = _row(error_metrics(h, truth, released), 2)
    assert r["false_zero_rate"] == pytest.approx(1 / 2)  # of b1, b2
    assert r["ghost_rate"] == pytest.approx(1 / 2)  # of a1, a2
    # negative releases are not ghosts, and not false zeros either
    released2 = h.aggregate(np.array([-1, 0, -2, 9]))
    r2 = _row(error_metrics(h, truth, released2), 2)
    assert r2["ghost_rate"] == 0 and r2["false_zero_rate"] == 0


# ---- categories ------------------------------------------------------------------------
def _state_tree():
    h, _ = build_hierarchy(pd.DataFrame({"state": ["A", "B"]}), ["state"])
    return h


def test_categories_cells_vs_units():
    h = _state_tree()
    truth = np.array([[2, 18], [2, 8], [0, 10]])
    # root [3, 25] != [2, 21] in both categories: still ONE inconsistent parent
    released = np.array([[3, 25], [1, 9], [1, 12]])
    df = error_metrics(h, truth, released, categories=["young", "old"])
    assert df.attrs["categories"] == ["young", "old"]
    r = _row(df, 1)  # cell errors: A -1, +1; B +1, +2
    assert (r["units"], r["cells"]) == (2, 4)
    assert r["mae"] == pytest.approx(5 / 4)
    assert r["rmse"] == pytest.approx(math.sqrt(7 / 4))
    assert r["max_abs_error"] == 2
    assert r["mape"] == pytest.approx((50 + 12.5 + 20) / 3)
    assert r["malpe"] == pytest.approx((-50 + 12.5 + 20) / 3)
    assert r["tvd_accuracy"] == pytest.approx(1 - 5 / 40)
    # units use totals: A 10 -> 10 (exact although its cells are off), B 10 -> 13 (30%)
    assert r["share_over_10pct"] == pytest.approx(1 / 2)
    assert r["false_zero_rate"] == 0
    assert r["ghost_rate"] == 1  # B's first category
    root = _row(df, 0)
    assert root["consistency_violations"] == 1
    assert root["cells"] == 2 and root["mae"] == pytest.approx(4)
    # bins follow the true unit total (10 each), not the cells (0, 2, 8, 10)
    assert df.loc[df["level"] == 1, "bin"].tolist() == ["10-99", "all"]


def test_single_column_2d_equals_1d():
    h = _tree()
    a = error_metrics(h, TRUTH, RELEASED)
    b = error_metrics(h, TRUTH[:, None], RELEASED[:, None])
    pd.testing.assert_frame_equal(a, b)


def test_ints_and_floats_agree():
    h = _tree()
    a = error_metrics(h, TRUTH, RELEASED)
    b = error_metrics(h, TRUTH.astype(np.float32), RELEASED.astype(float) + 0.0)
    pd.testing.assert_frame_equal(a, b)


# ---- bins ------------------------------------------------------------------------------
def test_bin_labels():
    assert bin_labels(metrics_module.DEFAULT_BINS) == [
        "0-9", "10-99", "100-999", "1000-9999", "10000-99999", "100000+"
    ]
    assert bin_labels([0, 1, 2, 5, math.inf]) == ["0", "1", "2-4", "5+"]
    assert bin_labels([0, 0.5, 3]) == ["[0, 0.5)", "[0.5, 3)"]


def test_custom_bins_and_empty_bins_dropped():
    h = _tree()
    df = error_metrics(h, TRUTH, RELEASED, bins=[0, 1, 50, 1000, 10**6])
    county = df[df["level"] == 2]
    assert county["bin"].tolist() == ["0", "1-49", "50-999", "all"]
    assert county["units"].tolist() == [1, 2, 1, 4]
    assert df.attrs["bins"] == [0, 1, 50, 1000, 10**6]
    # no bin row for "1000-999999": no unit has a total that large
    assert "1000-999999" not in set(df["bin"])


def test_units_outside_bins_only_in_all_row():
    h = _tree()
    df = error_metrics(h, TRUTH, RELEASED, bins=[1, 100])
    county = df[df["level"] == 2]
    # a1 (0) is below, b2 (200) above: only a2 and b1 are binned
    assert county["bin"].tolist() == ["1-99", "all"]
    assert county["units"].tolist() == [2, 4]
    assert _row(df, 0)["units"] == 1 and (df["level"] == 0).sum() == 1


@pytest.mark.parametrize("bins", [[10], [0, 10, 10], [10, 0], [0, float("nan")], ["a", "b"]])
def test_bad_bins(bins):
    with pytest.raises(InputError, match="bin"):
        error_metrics(_tree(), TRUTH, RELEASED, bins=bins)


# ---- input errors ----------------------------------------------------------------------
def test_shape_mismatch_between_truth_and_released():
    with pytest.raises(InputError, match=r"truth has shape \(7,\) but released has shape"):
        error_metrics(_tree(), TRUTH, RELEASED[:-1])


def test_wrong_number_of_nodes():
    with pytest.raises(InputError, match="6 rows but the hierarchy has 7 nodes"):
        error_metrics(_tree(), TRUTH[:-1], RELEASED[:-1])


@pytest.mark.parametrize(
    ("truth", "released", "match"),
    [
        (np.zeros((7, 2, 2)), np.zeros((7, 2, 2)), "shape"),
        (np.zeros((7, 0)), np.zeros((7, 0)), "no categories"),
        (np.full(7, np.nan), np.zeros(7), "NaN"),
        (np.zeros(7), np.full(7, np.inf), "infinite"),
        (-np.ones(7), np.zeros(7), "negative"),
        (np.array(list("abcdefg")), np.zeros(7), "numeric"),
    ],
)
def test_bad_values(truth, released, match):
    with pytest.raises(InputError, match=match):
        error_metrics(_tree(), truth, released)


def test_category_names_must_match():
    with pytest.raises(InputError, match="3 category name"):
        error_metrics(_state_tree(), np.ones((3, 2)), np.ones((3, 2)), categories=["a", "b", "c"])


def test_inputs_not_modified():
    t, r = TRUTH.copy(), RELEASED.copy()
    error_metrics(_tree(), t, r)
    assert (t == TRUTH).all() and (r == RELEASED).all()


# ---- against a per-node reference, and properties --------------------------------------
def _reference(h, truth, released, edges):
    """Slow, obvious per-level / per-bin computation to check the vectorised one."""
    labels = bin_labels(edges)
    truth = np.asarray(truth, float).reshape(h.n_nodes, -1)
    released = np.asarray(released, float).reshape(h.n_nodes, -1)
    rows = []
    for level in range(h.n_levels):
        nodes = list(range(h.level_slice(level).start, h.level_slice(level).stop))
        groups = []
        for b, label in enumerate(labels):
            members = [v for v in nodes if edges[b] <= truth[v].sum() < edges[b + 1]]
            if members:
                groups.append((label, members))
        groups.append(("all", nodes))
        for label, members in groups:
            t, r = truth[members], released[members]
            e = r - t
            pos = t > 0
            tt, rt = t.sum(axis=1), r.sum(axis=1)
            rows.append({
                "level": level, "bin": label, "units": len(members), "cells": t.size,
                "mae": np.abs(e).mean(), "rmse": np.sqrt((e**2).mean()),
                "mape": 100 * np.mean(np.abs(e[pos]) / t[pos]) if pos.any() else np.nan,
                "malpe": 100 * np.mean(e[pos] / t[pos]) if pos.any() else np.nan,
                "max_abs_error": np.abs(e).max(),
                "tvd_accuracy": 1 - np.abs(e).sum() / (2 * t.sum()) if t.sum() else np.nan,
                "share_over_10pct": (
                    np.mean(np.abs(rt - tt)[tt > 0] / tt[tt > 0] > 0.1 + 1e-12)
                    if (tt > 0).any() else np.nan
                ),
                "false_zero_rate": np.mean(r[pos] == 0) if pos.any() else np.nan,
                "ghost_rate": np.mean(r[~pos] > 0) if (~pos).any() else np.nan,
            })
    return pd.DataFrame(rows)


_leaf_counts = st.lists(st.integers(1, 3), min_size=1, max_size=4)  # counties per state


@st.composite
def _trees_with_values(draw, k=None):
    per_state = draw(_leaf_counts)
    states = [f"S{i}" for i, n in enumerate(per_state) for _ in range(n)]
    counties = [f"c{j}" for j in range(len(states))]
    h, _ = build_hierarchy(pd.DataFrame({"s": states, "c": counties}), ["s", "c"])
    k = draw(st.integers(1, 3)) if k is None else k
    n = h.n_leaves * k
    leaves = np.array(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n)))
    noise = np.array(draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n)))
    truth_leaves = leaves.reshape(h.n_leaves, k)
    return h, truth_leaves, noise.reshape(h.n_leaves, k)


@settings(max_examples=60, deadline=None)
@given(_trees_with_values())
def test_matches_per_node_reference(data):
    h, truth_leaves, noise = data
    truth = h.aggregate(truth_leaves)
    released = truth + np.vstack([np.zeros((h.n_nodes - h.n_leaves, noise.shape[1])), noise])
    edges = np.array(metrics_module.DEFAULT_BINS)
    got = error_metrics(h, truth, released)
    want = _reference(h, truth, released, edges)
    pd.testing.assert_frame_equal(
        got[list(want.columns)].reset_index(drop=True), want,
        check_dtype=False, rtol=1e-9, atol=1e-12,
    )


@settings(max_examples=80, deadline=None)
@given(_trees_with_values(), st.randoms(use_true_random=False))
def test_properties(data, rnd):
    h, truth_leaves, noise = data
    truth = h.aggregate(truth_leaves)
    # noisy, possibly inconsistent and negative: mae <= rmse <= max_abs_error everywhere
    df = error_metrics(h, truth, truth + rnd.choice([-3, 0, 5]) * np.ones_like(truth)
                       + h.aggregate(noise))
    assert (df["mae"] <= df["rmse"] + 1e-9).all()
    assert (df["rmse"] <= df["max_abs_error"] + 1e-9).all()
    for col in ("share_over_10pct", "false_zero_rate", "ghost_rate"):
        v = df[col].dropna()
        assert ((v >= 0) & (v <= 1)).all(), col
    # the "all" row of each level counts every node of that level exactly once
    all_rows = df[df["bin"] == "all"]
    assert all_rows["units"].tolist() == [h.level_size(lv) for lv in range(h.n_levels)]
    assert (df[df["bin"] != "all"].groupby("level")["units"].sum().to_numpy()
            == all_rows["units"].to_numpy()).all()

    # a non-negative consistent release with the same grand total (leaves shuffled):
    # every level keeps the total, so 0 <= tvd_accuracy <= 1 on every "all" row
    flat = truth_leaves.ravel().copy()
    rnd.shuffle(flat)
    released = h.aggregate(flat.reshape(truth_leaves.shape))
    shuffled = error_metrics(h, truth, released)
    tvd = shuffled.loc[shuffled["bin"] == "all", "tvd_accuracy"].dropna()
    assert ((tvd >= -1e-12) & (tvd <= 1 + 1e-12)).all()
    assert (shuffled.loc[shuffled["bin"] == "all", "consistency_violations"] == 0).all()


def test_metrics_constant_lists_metric_columns(example):
    assert list(example.columns[-len(METRICS):]) == list(METRICS)
    assert example[list(METRICS)].dtypes.map(lambda d: d.kind == "f").all()

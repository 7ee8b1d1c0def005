"""Tests for hierdp_core.mechanisms: registry, parameters, budget ledger, and the releases of
every count mechanism (shapes, consistency, invariants, reproducibility, accuracy)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.consistency.topdown import topdown
from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.mechanisms.base import (
    Parameter,
    get_mechanism,
    list_mechanisms,
    register,
)
from hierdp_core.privacy.budget import PrivacyBudget, split_shares
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData, count_data_from_table
from hierdp_core.releases import RELEASE_COLUMNS

NAMES = ("raw-laplace", "raw-geometric", "raw-discrete-gaussian", "least-squares", "topdown")
ZCDP_ONLY = ("raw-discrete-gaussian",)


def budget_for(name: str, scale: float = 1.0) -> PrivacyBudget:
    """A budget that fits the mechanism: rho for (discrete) Gaussian, epsilon otherwise."""
    return PrivacyBudget.zcdp(0.5 * scale) if name in ZCDP_ONLY else PrivacyBudget.pure(scale)


def make_data(n_states=4, n_counties=5, n_tracts=6, categories=True, seed=0) -> CountData:
    """A regular 3-level tree (state / county / tract) with random counts."""
    rng = np.random.default_rng(seed)
    rows = [(f"S{s}", f"S{s}C{c}", f"S{s}C{c}T{t}")
            for s in range(n_states) for c in range(n_counties) for t in range(n_tracts)]
    t = pd.DataFrame(rows * 2, columns=["state", "county", "tract"])
    t["n"] = rng.integers(0, 60, len(t))
    t["sex"] = rng.choice(["F", "M"], len(t))
    t["age"] = rng.choice(["young", "old", "mid"], len(t))
    return count_data_from_table(t, ["state", "county", "tract"], count_column="n",
                                 category_columns=["sex", "age"] if categories else ())


@pytest.fixture(scope="module")
def data() -> CountData:
    return make_data()


def run(name, data, budget=None, seed=1, **kw):
    return get_mechanism(name).release(data, budget or budget_for(name), source=NoiseSource(seed),
                                       **kw)


def scaled_tol(values, rel=1e-9):
    return rel * max(1.0, float(np.abs(values).max()))


# ---- registry --------------------------------------------------------------------------
def test_registry_lists_the_count_mechanisms():
    infos = {i.name: i for i in list_mechanisms()}
    assert set(NAMES) <= set(infos)
    assert set(NAMES) <= {i.name for i in list_mechanisms("counts")}
    for name in NAMES:
        assert get_mechanism(name).info is infos[name]
        d = infos[name].as_dict()
        for key in ("name", "description", "reference", "queries", "privacy", "private",
                    "consistent", "parameters"):
            assert key in d, (name, key)
        assert d["name"] == name and d["queries"] == ["counts"] and d["private"] is True
        assert d["description"] and d["reference"]
        assert all({"name", "type", "default", "help"} <= set(p) for p in d["parameters"])
        assert d["privacy"] in d["privacy_definitions"]
    # `consistent` promises exactly consistent, non-negative integers
    assert infos["topdown"].consistent and not infos["least-squares"].consistent
    assert not infos["raw-laplace"].consistent
    noise = next(p for p in infos["topdown"].as_dict()["parameters"] if p["name"] == "noise")
    assert list(noise["choices"]) == ["auto", "laplace", "geometric", "gaussian", "discrete-gaussian"]


def test_registry_errors():
    with pytest.raises(MechanismError, match="unknown mechanism 'nope'.*topdown"):
        get_mechanism("nope")
    ls = get_mechanism("least-squares")
    with pytest.raises(MechanismError, match="registered twice"):
        register(ls)
    bogus = dataclasses.replace(ls, fixed_noise=None)
    object.__setattr__(bogus, "info",
                       dataclasses.replace(ls.info, name="test-bogus", queries=("bogus",)))
    with pytest.raises(MechanismError, match="unknown query kinds"):
        register(bogus)
    assert "test-bogus" not in {i.name for i in list_mechanisms()}


# ---- parameters ------------------------------------------------------------------------
def test_params_defaults_and_validation():
    td = get_mechanism("topdown")
    assert td.params() == {"noise": "auto", "root_invariant": False, "estimate": "least-squares"}
    assert td.params(root_invariant="yes", noise="laplace")["root_invariant"] is True
    assert td.params(root_invariant="false")["root_invariant"] is False
    with pytest.raises(MechanismError, match=r"no parameter\(s\) \['bogus'\]"):
        td.params(bogus=1)
    with pytest.raises(MechanismError, match="'noise' must be one of"):
        td.params(noise="cauchy")
    with pytest.raises(MechanismError, match="'estimate' must be one of"):
        td.params(estimate="median")
    with pytest.raises(MechanismError, match="true or false"):
        td.params(root_invariant="maybe")
    with pytest.raises(MechanismError, match="no parameter"):
        get_mechanism("raw-laplace").params(noise="laplace")
    p = Parameter("x", "float", 1.0, "", minimum=0.0, maximum=2.0)
    assert p.validate("1.5") == 1.5
    for bad, msg in ((3, "<= 2.0"), (-1, ">= 0.0"), ("abc", "must be a float")):
        with pytest.raises(MechanismError, match=msg):
            p.validate(bad)
    assert Parameter("k", "int", 1, "").validate("7") == 7


def test_release_rejects_unknown_params(data):
    with pytest.raises(MechanismError):
        run("topdown", data, noise="cauchy")
    with pytest.raises(MechanismError):
        run("raw-laplace", data, root_invariant=True)


# ---- releases of every mechanism -------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_release_shapes_and_frame(name, data):
    h = data.hierarchy
    r = run(name, data)
    assert r.values.shape == (h.n_nodes, len(data.categories)) == (h.n_nodes, 6)
    assert r.noisy.shape == r.values.shape
    assert r.mechanism == name and r.categories == data.categories
    frame = r.to_frame()
    assert frame.columns.tolist() == list(RELEASE_COLUMNS[:-2]) == [
        "level", "level_name", "node_id", "parent_id", "label", "category", "value"]
    assert len(frame) == h.n_nodes * 6
    assert frame["value"].tolist() == r.values.ravel().tolist()
    assert frame["category"].iloc[:6].tolist() == list(data.categories)
    assert frame["node_id"].iloc[6 * h.n_nodes - 1] == h.node_ids()[-1]
    assert frame["level"].tolist() == np.repeat(h.level_of_nodes(), 6).tolist()
    assert r.randomness == {"mode": "exploration", "source": "numpy-pcg64", "seed": 1}
    # totals only: no category column
    plain = make_data(2, 2, 2, categories=False)
    r = run(name, plain)
    assert r.values.shape == (plain.hierarchy.n_nodes, 1) and r.categories is None
    frame = r.to_frame()
    assert frame.columns.tolist() == ["level", "level_name", "node_id", "parent_id", "label",
                                      "value"]
    assert len(frame) == plain.hierarchy.n_nodes


@pytest.mark.parametrize("name", NAMES)
def test_consistent_flag_matches_the_release(name, data):
    """`consistent` means exactly consistent, non-negative and integer; least squares is
    exactly consistent but real-valued; the raw mechanisms are not consistent."""
    r = run(name, data)
    violations = data.hierarchy.consistency_violations(r.values, tol=scaled_tol(r.values, 1e-6))
    if get_mechanism(name).info.consistent:
        assert violations == 0 and r.is_integer and (r.values >= 0).all()
    elif name == "least-squares":
        assert violations == 0 and not r.is_integer
    else:
        assert violations > 0


@pytest.mark.parametrize("name", NAMES)
def test_seeds_reproducible(name, data):
    a, b, c = run(name, data, seed=5), run(name, data, seed=5), run(name, data, seed=6)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.noisy, b.noisy,
                                                                   equal_nan=True)
    assert not np.array_equal(a.values, c.values)


def _walk(obj, seen=None):
    """Every object reachable through dataclass fields, __dict__, dicts, lists and tuples."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        children = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        children = list(obj)
    elif isinstance(obj, pd.DataFrame):
        children = [obj[c].to_numpy() for c in obj.columns]
    else:
        children = list(getattr(obj, "__dict__", {}).values())
    for child in children:
        yield from _walk(child, seen)


@pytest.mark.parametrize("name", NAMES)
def test_release_does_not_hold_the_truth(name, data):
    truth = data.node_counts()
    r = run(name, data, budget=budget_for(name, 1.0))
    found = list(_walk(r))
    assert not any(isinstance(o, CountData) for o in found)
    arrays = [o for o in found if isinstance(o, np.ndarray) and o.shape == truth.shape]
    assert arrays, "the release should hold its values"
    for a in arrays:
        assert not np.array_equal(a, truth)
        assert not np.array_equal(a[data.hierarchy.level_slice(3)], truth[
            data.hierarchy.level_slice(3)])
    leaves = data.leaf_counts
    assert not any(isinstance(o, np.ndarray) and o.shape == leaves.shape
                   and np.array_equal(o, leaves) for o in found)


# ---- topdown and least squares properties ----------------------------------------------
NOISE_BUDGETS = {
    "laplace": lambda e: PrivacyBudget.pure(e),
    "geometric": lambda e: PrivacyBudget.pure(e),
    "gaussian": lambda e: PrivacyBudget.zcdp(e * e / 2),
    "discrete-gaussian": lambda e: PrivacyBudget.zcdp(e * e / 2),
}


@settings(max_examples=100, deadline=None)
@given(tree_tables(max_depth=3, max_children=3, categories=(("F", "M"),)),
       st.sampled_from([0.05, 0.5, 1.0, 5.0]), st.sampled_from(sorted(NOISE_BUDGETS)),
       st.sampled_from(["least-squares", "noisy"]), st.booleans(),
       st.sampled_from(["uniform", "finer", "coarser"]), st.integers(0, 2**16))
def test_topdown_consistent_nonnegative_integer(tt, eps, noise, estimate, root_inv, split,
                                                seed):
    d = count_data_from_table(tt.table, tt.levels, count_column="n",
                              category_columns=tt.categories)
    r = get_mechanism("topdown").release(
        d, NOISE_BUDGETS[noise](eps), split=split, source=NoiseSource(seed), noise=noise,
        estimate=estimate, root_invariant=root_inv)
    h = d.hierarchy
    assert r.values.dtype == np.int64 and r.is_integer
    assert r.values.shape == (h.n_nodes, len(d.categories))
    assert np.all(r.values >= 0)
    assert h.consistency_violations(r.values) == 0
    assert r.privacy["noise"] == noise
    if root_inv:
        assert np.array_equal(r.values[0], d.node_counts()[0])


@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=3, categories=(("a", "b", "c"),)),
       st.sampled_from([0.1, 1.0]), st.sampled_from(sorted(NOISE_BUDGETS)),
       st.booleans(), st.integers(0, 2**16))
def test_least_squares_consistent(tt, eps, noise, root_inv, seed):
    d = count_data_from_table(tt.table, tt.levels, count_column="n",
                              category_columns=tt.categories)
    r = get_mechanism("least-squares").release(
        d, NOISE_BUDGETS[noise](eps), source=NoiseSource(seed), noise=noise,
        root_invariant=root_inv)
    assert r.values.dtype.kind == "f"
    assert d.hierarchy.consistency_violations(r.values, tol=scaled_tol(r.values, 1e-6)) == 0
    if root_inv:
        np.testing.assert_array_equal(r.values[0], d.node_counts()[0])


@pytest.mark.parametrize("name, kw", [("topdown", {"estimate": "least-squares"}),
                                      ("topdown", {"estimate": "noisy"}),
                                      ("least-squares", {})])
def test_root_invariant(name, kw, data):
    truth = data.node_counts()
    r = run(name, data, root_invariant=True, **kw)
    assert np.array_equal(r.values[0], truth[0])
    # the root's cells are kept as they are: with categories, each one's count is exact
    exact = ["root total"] + (["root count of every category"] if truth.shape[1] > 1 else [])
    assert list(r.invariants) == exact and r.privacy["invariants"] == exact
    assert r.ledger["share"].iloc[0] == 0 and r.ledger["noise"].iloc[0] == "not measured"
    assert math.isclose(r.ledger["share"].sum(), 1.0)
    assert np.isnan(r.noisy[0]).all()
    plain = run(name, data, **kw)
    assert plain.invariants == () and plain.privacy["invariants"] == []


def test_topdown_noisy_with_unmeasured_root(data):
    """estimate='noisy' with a zero root share: the root comes from its children."""
    truth = data.node_counts()
    r = run("topdown", data, split=[0, 1, 1, 1], estimate="noisy")
    assert np.all(r.values >= 0) and data.hierarchy.consistency_violations(r.values) == 0
    assert np.all(np.abs(r.values[0] - truth[0]) < 200)
    r = run("topdown", data, budget=PrivacyBudget.pure(1e6), split=[0, 1, 1, 1],
            estimate="noisy")
    assert np.array_equal(r.values, truth)


@pytest.mark.parametrize("split", ["uniform", "finer", [0, 1, 3, 2]])
def test_estimates_are_post_processing_of_the_noisy_measurements(split, data):
    """least-squares = GLS of the published noisy values with the ledger's variances;
    topdown = TopDown of that estimate."""
    h = data.hierarchy
    budget = PrivacyBudget.pure(1.0)
    ls = run("least-squares", data, budget=budget, split=split, noise="laplace")
    variance = (ls.ledger["noise_sd"] ** 2).fillna(np.inf).to_numpy()
    assert np.all(np.isnan(ls.noisy[h.level_slice(0)]) == np.isinf(variance[0]))
    np.testing.assert_allclose(ls.values, tree_least_squares(h, ls.noisy, variance),
                               rtol=1e-12, atol=1e-9)
    td = run("topdown", data, budget=budget, split=split, noise="laplace")
    assert np.array_equal(td.noisy, ls.noisy, equal_nan=True)  # same seed, same noise
    root = np.maximum(np.rint(ls.values[0]), 0)
    assert np.array_equal(td.values, topdown(h, ls.values, root))


# ---- budget ledger ---------------------------------------------------------------------
@pytest.mark.parametrize("split", ["uniform", "finer", "coarser", [1, 2, 0.5, 3]])
def test_ledger_laplace(split, data):
    budget = PrivacyBudget.pure(2.0)
    for name in ("raw-laplace", "topdown", "least-squares"):
        kw = {} if name == "raw-laplace" else {"noise": "laplace"}
        led = get_mechanism(name).ledger(data, budget, split=split, **kw)
        shares = split_shares(4, split) if isinstance(split, str) else \
            np.asarray(split) / np.sum(split)
        np.testing.assert_allclose(led["share"], shares, rtol=1e-12)
        assert math.isclose(led["share"].sum(), 1.0, rel_tol=1e-12)
        assert math.isclose(led["budget"].sum(), 2.0, rel_tol=1e-12)
        np.testing.assert_allclose(led["noise_scale"], 1 / led["budget"], rtol=1e-12)
        np.testing.assert_allclose(led["expected_abs_error"], led["noise_scale"], rtol=1e-12)
        np.testing.assert_allclose(led["noise_sd"], np.sqrt(2) * led["noise_scale"], rtol=1e-12)
        # 95% of |Laplace(b)| lies below b ln 20
        np.testing.assert_allclose(led["ci95_abs_error"], led["noise_scale"] * np.log(20),
                                   rtol=1e-9)
        assert led["noise"].eq("laplace").all() and led["definition"].eq("pure-dp").all()
        assert led["level_name"].tolist() == ["total", "state", "county", "tract"]
    # release ledger = pre-run ledger; the privacy record sums the spend
    r = run("topdown", data, budget=budget, split=split, noise="laplace")
    pd.testing.assert_frame_equal(r.ledger, get_mechanism("topdown").ledger(
        data, budget, split=split, noise="laplace"))
    assert math.isclose(r.privacy["epsilon"], 2.0) and r.privacy["definition"] == "pure-dp"


def test_every_ledger_is_its_own_copy(data):
    """Equal plans share one built ledger (`measure.ledger_frame`); every release still gets
    its own frame: editing one changes neither the next nor the pre-run ledger."""
    budget = PrivacyBudget.pure(1.0)
    first = run("topdown", data, budget=budget, split="finer")
    first.ledger.loc[0, "noise_scale"] = -1.0
    first.ledger["share"] = 0.0
    second = run("topdown", data, budget=budget, split="finer")
    pre = get_mechanism("topdown").ledger(data, budget, split="finer")
    pd.testing.assert_frame_equal(second.ledger, pre)
    assert (pre["noise_scale"] > 0).all() and math.isclose(pre["share"].sum(), 1.0)
    other = get_mechanism("topdown").ledger(data, budget, split="coarser")
    assert not np.allclose(other["share"], pre["share"])


def test_ledger_discrete_gaussian(data):
    rho = 0.3
    led = get_mechanism("raw-discrete-gaussian").ledger(data, PrivacyBudget.zcdp(rho),
                                                        split="finer")
    np.testing.assert_allclose(led["share"], [0.1, 0.2, 0.3, 0.4])
    assert math.isclose(led["budget"].sum(), rho, rel_tol=1e-12)
    assert led["definition"].eq("zcdp").all() and led["noise"].eq("discrete-gaussian").all()
    np.testing.assert_allclose(led["noise_sd"] ** 2, 1 / (2 * led["budget"]), rtol=1e-3)
    np.testing.assert_allclose(led["noise_scale"], np.sqrt(1 / (2 * led["budget"])), rtol=1e-12)
    assert (led["ci95_abs_error"] > 1.5 * led["noise_sd"]).all()
    assert (led["ci95_abs_error"] < 2.5 * led["noise_sd"]).all()
    r = run("raw-discrete-gaussian", data, budget=PrivacyBudget.zcdp(rho))
    assert math.isclose(r.privacy["rho"], rho) and r.privacy["definition"] == "zcdp"


def test_auto_noise_and_approx_budget(data):
    td = get_mechanism("topdown")
    assert td.ledger(data, PrivacyBudget.pure(1))["noise"].eq("geometric").all()
    assert td.ledger(data, PrivacyBudget.zcdp(1))["noise"].eq("discrete-gaussian").all()
    led = td.ledger(data, PrivacyBudget.approx(1.0, 1e-6), noise="gaussian")
    assert led["definition"].eq("zcdp").all()
    r = run("topdown", data, budget=PrivacyBudget.approx(1.0, 1e-6), noise="gaussian")
    assert r.privacy["definition"] == "zcdp" and r.privacy["epsilon_tight"] <= 1.0 + 1e-6


@pytest.mark.parametrize("preset", ["uniform", "finer", "coarser", "leaves-only"])
def test_split_presets(preset, data):
    led = get_mechanism("least-squares").ledger(data, PrivacyBudget.pure(1.0), split=preset)
    np.testing.assert_allclose(led["share"], split_shares(4, preset))
    if preset == "leaves-only":
        assert led["noise"].tolist()[:3] == ["not measured"] * 3
        with pytest.raises(BudgetError, match="every level"):
            run("raw-laplace", data, split=preset)
        with pytest.raises(BudgetError, match="needs every level"):
            run("topdown", data, split=preset, estimate="noisy")
    for name in ("least-squares", "topdown"):
        r = run(name, data, split=preset)
        assert data.hierarchy.consistency_violations(r.values, tol=scaled_tol(r.values, 1e-6)) \
            == 0


def test_budget_errors(data):
    with pytest.raises(BudgetError, match="epsilon budget"):
        run("raw-laplace", data, budget=PrivacyBudget.zcdp(0.5))
    with pytest.raises(BudgetError, match="epsilon budget"):
        run("topdown", data, budget=PrivacyBudget.zcdp(0.5), noise="laplace")
    with pytest.raises(BudgetError, match="zCDP"):
        run("raw-discrete-gaussian", data, budget=PrivacyBudget.pure(1.0))
    with pytest.raises(BudgetError, match="finest level"):
        run("least-squares", data, split=[1, 1, 1, 0])
    with pytest.raises(BudgetError, match="finest level"):
        run("topdown", data, split=[1, 1, 1, 0])
    with pytest.raises(BudgetError, match="4 weights"):
        run("topdown", data, split=[1, 1])
    with pytest.raises(BudgetError, match="unknown split preset"):
        run("topdown", data, split="middle")
    with pytest.raises(BudgetError, match="invariant root"):
        run("topdown", data, split=[1, 0, 0, 0], root_invariant=True)


# ---- accuracy --------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["geometric", "laplace", "discrete-gaussian"])
def test_huge_epsilon_returns_the_truth(noise, data):
    budget = PrivacyBudget.zcdp(1e12) if noise == "discrete-gaussian" else PrivacyBudget.pure(1e6)
    r = run("topdown", data, budget=budget, noise=noise)
    assert np.array_equal(r.values, data.node_counts())
    r = run("least-squares", data, budget=budget, noise=noise)
    np.testing.assert_allclose(r.values, data.node_counts(), atol=1e-3)


def test_raw_laplace_error_matches_scale():
    d = make_data(5, 20, 30, categories=False, seed=3)  # 3,000 leaves
    h = d.hierarchy
    assert h.n_leaves == 3000
    eps = 2.0
    r = run("raw-laplace", d, budget=PrivacyBudget.pure(eps), seed=11)
    err = np.abs(r.values - d.node_counts())[:, 0]
    b = 1 / (eps / 4)  # uniform split over 4 levels
    assert np.allclose(r.ledger["noise_scale"], b)
    for level in range(h.n_levels):
        e = err[h.level_slice(level)]
        # |Laplace(b)| is exponential with mean b and standard deviation b
        assert abs(e.mean() - b) <= 4.5 * b / math.sqrt(e.size), (level, e.mean(), b)
    # signed errors centre on zero, and raw values are not rounded
    leaf_err = (r.values - d.node_counts())[h.level_slice(3), 0]
    assert abs(leaf_err.mean()) <= 4.5 * math.sqrt(2) * b / math.sqrt(leaf_err.size)
    assert r.values.dtype.kind == "f" and not np.all(r.values == np.rint(r.values))


def test_raw_discrete_gaussian_variance_and_round_clamp():
    d = make_data(5, 20, 30, categories=False, seed=4)
    rho = 0.4
    r = run("raw-discrete-gaussian", d, budget=PrivacyBudget.zcdp(rho), seed=12)
    assert r.values.dtype == np.int64
    leaves = d.hierarchy.level_slice(3)
    noise = (r.values - d.node_counts())[leaves, 0].astype(float)
    var = 1 / (2 * rho / 4)
    assert abs(noise.var() - var) <= 5 * var * math.sqrt(2 / noise.size)
    r = run("raw-laplace", d, budget=PrivacyBudget.pure(0.1), seed=12, round_clamp=True)
    assert r.values.dtype == np.int64 and r.values.min() == 0


def test_topdown_beats_raw_at_the_leaves():
    d = make_data(5, 20, 30, categories=False, seed=5)
    truth = d.node_counts()
    leaves = d.hierarchy.level_slice(3)
    budget = PrivacyBudget.pure(1.0)
    raw = np.abs(run("raw-laplace", d, budget=budget, seed=3).values - truth)[leaves].mean()
    ls = np.abs(run("least-squares", d, budget=budget, seed=3, noise="laplace").values
                - truth)[leaves].mean()
    assert ls < raw



@pytest.mark.parametrize("mechanism", ["topdown", "least-squares", "raw-geometric"])
def test_the_recorded_epsilon_of_a_uniform_split_is_the_budget(mechanism):
    """Six levels of 1/6 each: the manifest's total is the correctly rounded sum, 1.0 (a
    plain float sum gives 0.9999999999999999)."""
    codes = [np.arange(64) % m for m in (2, 4, 8, 16, 64)]  # each level nests in the last
    h, leaf = build_from_codes(codes, [f"l{i}" for i in range(len(codes))])
    counts = np.zeros((h.n_leaves, 1), dtype=np.int64)
    counts[leaf, 0] = 3
    release = get_mechanism(mechanism).release(CountData(h, counts), PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=1))
    assert release.privacy["epsilon"] == 1.0

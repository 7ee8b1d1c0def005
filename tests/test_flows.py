"""O/D flows: data model and tree, mechanisms (consistency, exact totals, privacy budget),
metrics, synthetic generator."""

import doctest
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.flows.data as flow_data_module
import hierdp_core.flows.metrics as metrics_module
import hierdp_core.flows.synthetic as synthetic_module
import hierdp_core.flows.tree as tree_module
from hierdp_core.errors import BudgetError, HierarchyError, InputError, MechanismError
from hierdp_core.flows import projections
from hierdp_core.flows.data import flow_data_from_table, flow_data_from_trips
from hierdp_core.flows.level_split import mean_branching
from hierdp_core.flows.metrics import flow_metrics, pair_metrics
from hierdp_core.flows.synthetic import gravity_flows, synthetic_flows, synthetic_shape
from hierdp_core.flows.tree import topdown
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.mechanisms.flows import StabilityHistogram
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import DiscreteGaussian, Laplace, NoiseSource

TOPDOWN = ("inftda", "tda-l2", "tda-linf-milp")
RHO = PrivacyBudget.zcdp(0.05, 1e-8)


def trips_table():
    return pd.DataFrame({
        "o_state": ["A", "A", "A", "B", "B", "A"],
        "o_city": ["a1", "a2", "a1", "b1", "b2", "a1"],
        "d_state": ["B", "A", "A", "B", "A", "B"],
        "d_city": ["b1", "a1", "a1", "b2", "a2", "b1"],
    })


def test_module_doctests_pass():
    assert doctest.testmod(flow_data_module).failed == 0
    assert doctest.testmod(synthetic_module).failed == 0


def test_every_level_of_both_trees_partitions_the_trips():
    for tree in ("destination", "origin"):
        d = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"],
                                 tree=tree)
        assert d.depth == 4
        for level in range(5):
            assert d.level_table(level)[1].sum() == 6
        assert d.pair_levels(1) == ((0, 1) if tree == "destination" else (1, 0))


def test_aggregated_table_equals_trip_records():
    agg = trips_table().value_counts().rename("n").reset_index()
    a = flow_data_from_table(agg, ["o_state", "o_city"], ["d_state", "d_city"], "n")
    b = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"])
    for level in range(5):
        np.testing.assert_array_equal(a.level_table(level)[0], b.level_table(level)[0])
        np.testing.assert_array_equal(a.level_table(level)[1], b.level_table(level)[1])


def test_children_come_from_the_public_geography_zeros_included():
    d = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"])
    # level 3 (state -> city) splits the destination: A -> B has children A -> b1, A -> b2
    a, b = 0, 1
    o, dest, n = d.children(3, np.array([a]), np.array([b]))
    assert n.tolist() == [2] and o.tolist() == [0, 0]
    assert d.lookup(3, o, dest).tolist() == [2, 0]  # A -> b2 has no trip but is a child


def test_one_geography_for_both_ends():
    d = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"])
    assert d.geography.level_names == ("total", "state", "city")
    assert sorted(d.area_ids(2)) == ["a1", "a2", "b1", "b2"]


@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop(columns="d_city"), "destination level column 'd_city' not found"),
    (lambda t: t.assign(o_city=[None, "a2", "a1", "b1", "b2", "a1"]), "missing value"),
    (lambda t: t.assign(o_state=["A", "A", "B", "B", "B", "A"]), "do not nest"),
    (lambda t: t.iloc[:0], "no rows"),
])
def test_bad_input_is_named(change, message):
    with pytest.raises((InputError, HierarchyError), match=message):
        flow_data_from_trips(change(trips_table()), ["o_state", "o_city"],
                             ["d_state", "d_city"])


def test_bad_levels_and_counts_are_named():
    t = trips_table()
    with pytest.raises(InputError, match="same number"):
        flow_data_from_trips(t, ["o_state"], ["d_state", "d_city"])
    with pytest.raises(InputError, match="negative"):
        flow_data_from_table(t.assign(n=[1, -2, 1, 1, 1, 1]), ["o_state"], ["d_state"], "n")
    with pytest.raises(InputError, match="all zero"):
        flow_data_from_table(t.assign(n=0), ["o_state"], ["d_state"], "n")


def test_registry_entries():
    infos = {i.name: i for i in list_mechanisms("flows")}
    assert set(infos) == {*TOPDOWN, "vanilla-gauss", "stability-histogram"}
    for name in TOPDOWN:
        assert infos[name].consistent and infos[name].private
    assert not infos["vanilla-gauss"].consistent
    for info in infos.values():
        assert "flows" in info.queries and info.neighbouring


def assert_consistent(release, n=None):
    for level in range(1, release.depth + 1):
        parents, nodes = release.levels[level - 1], release.levels[level]
        sums = np.bincount(nodes.parent, weights=nodes.value, minlength=parents.size)
        np.testing.assert_array_equal(sums, parents.value)
    assert release.consistency_violations() == 0
    if n is not None:
        assert release.total() == n


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(2, 3), st.floats(0.0, 0.95), st.integers(0, 2**16),
       st.sampled_from(TOPDOWN), st.sampled_from(["destination", "origin"]))
def test_topdown_releases_are_consistent_non_negative_integers_with_exact_n(
        levels, branching, zero, seed, name, tree):
    d = synthetic_flows(levels, branching, zero, max_flow=50, seed=seed, tree=tree)
    r = get_mechanism(name).release(d, RHO, source=NoiseSource(seed=seed))
    assert r.is_integer
    assert all(lv.value.min() > 0 for lv in r.levels)
    assert_consistent(r, d.n)


@pytest.mark.parametrize("name", TOPDOWN)
def test_unbounded_variant_noises_the_root_and_stays_consistent(name):
    d = synthetic_flows(3, 2, 0.5, seed=2)
    roots = {get_mechanism(name).release(d, RHO, source=NoiseSource(seed=s),
                                         neighbouring="unbounded").total() for s in range(5)}
    assert len(roots) > 1  # the total is noised
    r = get_mechanism(name).release(d, RHO, source=NoiseSource(seed=1), neighbouring="unbounded")
    assert_consistent(r)
    assert r.invariants == ()


def test_budget_split_and_noise_per_level():
    d = synthetic_flows(3, 2, 0.5, seed=2)
    ledger = get_mechanism("inftda").ledger(d, RHO)
    assert ledger["budget"].iloc[0] == 0 and ledger["noise"].iloc[0] == "not measured"
    # uniform over T = 6 levels: sigma^2 = T / rho (the paper's Alg. 1)
    sd = ledger["noise_sd"].iloc[1:].to_numpy()
    np.testing.assert_allclose(sd**2, d.depth / RHO.value, rtol=1e-3)
    assert math.isclose(ledger["budget"].sum(), RHO.value)
    half = get_mechanism("inftda").ledger(d, RHO, authors_budget=True)
    assert math.isclose(half["budget"].sum(), RHO.value / 2)
    geo = get_mechanism("inftda").ledger(d, RHO, split="geometric")
    b = mean_branching(d)
    ratio = geo["budget"].iloc[2] / geo["budget"].iloc[1]
    assert math.isclose(ratio, b ** (2 / 3)) and math.isclose(geo["budget"].sum(), RHO.value)
    unb = get_mechanism("inftda").ledger(d, RHO, neighbouring="unbounded")
    assert unb["budget"].iloc[0] > 0 and math.isclose(unb["budget"].sum(), RHO.value)
    np.testing.assert_allclose(unb["noise_sd"] ** 2, 1 / (2 * unb["budget"]), rtol=1e-3)


def test_epsilon_delta_budget_is_converted_and_overspending_refused():
    d = synthetic_flows(2, 2, 0.0, seed=2)
    r = get_mechanism("inftda").release(d, PrivacyBudget.approx(1.0, 1e-8),
                                        source=NoiseSource(seed=0))
    assert r.privacy["definition"] == "zcdp"
    assert r.privacy["epsilon_tight"] <= 1.0 + 1e-6
    with pytest.raises(BudgetError, match="split needs 5 weights"):
        get_mechanism("inftda").release(d, RHO, split=[1, 1])
    with pytest.raises(BudgetError, match="positive"):
        PrivacyBudget.zcdp(0.0)
    with pytest.raises(BudgetError):
        get_mechanism("inftda").release(d, PrivacyBudget.pure(1.0))
    with pytest.raises(MechanismError, match="flows"):
        get_mechanism("inftda").release(object(), RHO)


def test_vanilla_noise_has_the_calibrated_variance():
    # all of rho on the 4,096 leaf cells: noise sd 1/sqrt(rho); the sample variance of n
    # draws has sd about sigma^2 sqrt(2 / (n - 1)): allow 5 of them
    d = synthetic_flows(6, 2, 0.5, seed=5)
    r = get_mechanism("vanilla-gauss").release(d, RHO, source=NoiseSource(seed=11))
    assert r.total() != d.n  # the total is noisy
    leaves = r.levels[-1]
    dense = np.zeros(64 * 64)
    dense[leaves.keys(64)] = leaves.value
    truth = np.zeros(64 * 64)
    keys, counts = d.level_table(d.depth)
    truth[keys] = counts
    sigma2 = 1 / RHO.value
    assert abs(np.var(dense - truth) - sigma2) < 5 * sigma2 * math.sqrt(2 / (dense.size - 1))
    assert_consistent(r)


def test_stability_histogram_has_no_false_positives_and_suppresses_small_cells():
    d = synthetic_flows(4, 2, 0.9, max_flow=200, seed=3)
    budget = PrivacyBudget.approx(1.0, 1e-6)
    r = get_mechanism("stability-histogram").release(d, budget, source=NoiseSource(seed=3))
    m = flow_metrics(d, r)
    assert (m["fdr"].fillna(0) == 0).all()
    t = StabilityHistogram.threshold(1.0, 1e-6)
    assert math.isclose(t, 1 + 2 * math.log(2e6))
    assert r.levels[-1].value.min() >= math.floor(t)
    assert_consistent(r)
    with pytest.raises(BudgetError, match="epsilon and delta"):
        get_mechanism("stability-histogram").release(d, RHO)


def test_secure_stability_histogram_draws_exact_noise_above_the_drawn_threshold():
    d = synthetic_flows(4, 2, 0.9, max_flow=200, seed=3)
    budget = PrivacyBudget.approx(1.0, 1e-6)
    source = NoiseSource(secure=True)
    r = get_mechanism("stability-histogram").release(d, budget, source=source)
    (leaf,) = source.measurements
    assert leaf["sampler"] == "hierdp-exact" and "discrete-laplace" in leaf["drawn_as"]
    leaf_plan = SimpleNamespace(noise=Laplace(leaf["scale"]))
    paper = StabilityHistogram.threshold(1.0, 1e-6)
    drawn = StabilityHistogram().drawn_threshold(budget, leaf_plan, source)
    # the threshold of the scale drawn (2/epsilon rounded up): never below the paper's
    assert paper <= drawn <= paper * (1 + 2.0**-16)
    assert drawn == StabilityHistogram().drawn_threshold(budget, leaf_plan, source)
    assert StabilityHistogram().drawn_threshold(budget, leaf_plan, NoiseSource(seed=1)) == paper
    kept = r.levels[-1].value
    assert kept[kept > 0].min() >= math.floor(drawn)
    assert_consistent(r)


def test_release_frame_ids_and_parents():
    d = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"])
    r = get_mechanism("inftda").release(d, PrivacyBudget.zcdp(50.0), source=NoiseSource(seed=1))
    f = r.to_frame()
    assert list(f.columns) == ["level", "level_name", "node_id", "parent_id", "label",
                               "origin_id", "destination_id", "value"]
    root = f[f.level == 0].iloc[0]
    assert root.node_id == "total>total" and root.value == 6 and root.parent_id == ""
    assert (f.node_id == f.origin_id + ">" + f.destination_id).all()
    sums = f[f.level > 0].groupby("parent_id")["value"].sum()
    parents = f.set_index("node_id")["value"]
    assert (parents.loc[sums.index].to_numpy() == sums.to_numpy()).all()
    assert set(f[f.level == 3].node_id) <= {"A>a1", "A>a2", "A>b1", "A>b2", "B>a1", "B>a2",
                                            "B>b1", "B>b2"}


def test_metrics_on_a_hand_example():
    d = flow_data_from_trips(trips_table(), ["o_state", "o_city"], ["d_state", "d_city"])
    r = get_mechanism("inftda").release(d, PrivacyBudget.zcdp(1e6), source=NoiseSource(seed=1))
    m = flow_metrics(d, r)  # near-noiseless: exact
    assert m["max_abs_error"].max() == 0 and m["cpc"].min() == 1.0
    assert (m["fdr"] == 0).all() and (m["fnr"] == 0).all()
    assert m["true_nonzero"].tolist() == [1, 2, 4, 4, 5]
    tiny = get_mechanism("vanilla-gauss").release(d, PrivacyBudget.zcdp(1e-4),
                                                  source=NoiseSource(seed=1))
    mt = flow_metrics(d, tiny)
    assert mt["fdr"].iloc[-1] > 0 and mt["mae"].iloc[-1] > 0


def test_topdown_error_is_zero_at_the_root_and_grows_with_depth():
    d = synthetic_shape("binary6")
    r = get_mechanism("inftda").release(d, RHO, source=NoiseSource(seed=4))
    err = flow_metrics(d, r)["max_abs_error"].to_numpy()
    assert err[0] == 0 and err[1] > 0 and err[-1] > err[1]


def test_synthetic_generator_matches_the_paper_settings():
    d = synthetic_flows(8, 2, 0.5, seed=42)
    assert d.geography.level_size(8) == 256 and d.origin.size == 32_768
    assert d.counts.min() >= 1 and d.counts.max() == 1000
    r = synthetic_flows(4, (2, 10), 0.99, seed=42)
    sizes = np.diff(r.geography.child_ptr[:r.geography.level_offsets[-2]])
    assert sizes.min() >= 2 and sizes.max() <= 10
    with pytest.raises(InputError, match="unknown synthetic shape"):
        synthetic_shape("hexagonal")


def test_pair_metrics_cover_every_pair_of_levels_and_agree_with_tree_levels():
    d = synthetic_flows(3, 2, 0.5, seed=8)
    r = get_mechanism("inftda").release(d, RHO, source=NoiseSource(seed=8))
    pairs = pair_metrics(d, r)
    assert len(pairs) == 16  # (0..3) x (0..3)
    tree = flow_metrics(d, r)
    geo = d.geography.level_names
    for level in range(d.depth + 1):
        lo, ld = d.pair_levels(level)
        row = pairs[(pairs.origin_level == geo[lo]) & (pairs.destination_level == geo[ld])]
        for column in ("max_abs_error", "mae", "released_nonzero", "true_nonzero"):
            assert row[column].item() == tree.loc[level, column]
    # a pair that is not a tree level of the destination tree: fine origin, coarse destination
    fine_to_coarse = pairs[(pairs.origin_level == geo[3]) & (pairs.destination_level == geo[1])]
    assert fine_to_coarse["true_nonzero"].item() > 0


@pytest.mark.parametrize("project", [projections.intopt, projections.l2_rounded,
                                     projections.linf_milp])
def test_a_zero_root_releases_an_empty_table(project):
    # unbounded DP clamps a negative noisy total to 0: nothing below it is released
    d = synthetic_flows(2, 2, 0.5, seed=1)
    levels, diagnostics = topdown(d, 0, [DiscreteGaussian(3.0)] * d.depth, project,
                                  NoiseSource(seed=1))
    assert [lv.size for lv in levels] == [1, 0, 0, 0, 0]
    assert diagnostics[-1]["noised"] == 0


def test_gravity_flows_stay_mostly_local_on_a_real_like_geography():
    areas = pd.DataFrame({"region": ["R1"] * 4 + ["R2"] * 4,
                          "province": ["P1", "P1", "P2", "P2", "P3", "P3", "P4", "P4"],
                          "town": [f"t{i}" for i in range(8)]})
    d = gravity_flows(areas, np.arange(1, 9), pairs=4000, trips=100_000,
                      local_share=(0.7, 0.2), seed=3)
    assert abs(d.n - 100_000) < 2_000 and d.counts.min() >= 1
    same_province = d.ancestors(2)[d.origin] == d.ancestors(2)[d.destination]
    share = d.counts[same_province].sum() / d.n
    assert share > 0.6  # 70% drawn within the province, plus chance hits
    with pytest.raises(InputError, match="positive total"):
        gravity_flows(areas, np.zeros(8), pairs=10, trips=10)


def test_both_ways_of_summing_by_key_agree():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 5000, size=3000)
    values = rng.integers(-5, 6, size=3000)
    dense = tree_module._sum_by_key(keys, values, 5000)  # counting
    sparse = tree_module._sum_by_key(keys, values, 10**9)  # sorting (same keys, huge space)
    np.testing.assert_array_equal(dense[0], sparse[0])
    np.testing.assert_array_equal(dense[1], sparse[1])
    assert set(dense[0].tolist()) == set(keys.tolist())  # zero sums are kept


def test_both_ways_of_aligning_releases_agree():
    rng = np.random.default_rng(1)
    a_keys = np.unique(rng.integers(0, 4000, size=500))
    b_keys = np.unique(rng.integers(0, 4000, size=700))
    a_vals, b_vals = rng.integers(1, 9, a_keys.size) * 1.0, rng.integers(-3, 9, b_keys.size) * 1.0
    dense = metrics_module._union(a_keys, a_vals, b_keys, b_vals, 4000)
    sparse = metrics_module._union(a_keys, a_vals, b_keys, b_vals, 10**9)
    keep = (sparse[0] != 0) | (sparse[1] != 0)  # sorting keeps released zeros too
    np.testing.assert_array_equal(dense[0], sparse[0][keep])
    np.testing.assert_array_equal(dense[1], sparse[1][keep])


def test_sparse_large_trees_aggregate_by_sorting_and_stay_consistent():
    # 2,048 leaf areas: the finer levels have millions of possible pairs but few non-zero
    # ones, so from_leaves sums and links parents by sorting rather than by counting
    d = synthetic_flows(11, 2, 0.9999, max_flow=500, seed=4)
    r = get_mechanism("stability-histogram").release(d, PrivacyBudget.approx(50.0, 1e-6),
                                                    source=NoiseSource(seed=4))
    assert d.level_width(11) ** 2 > 4 * d.origin.size and r.levels[-1].size > 100
    assert_consistent(r)


def test_origin_and_destination_codes_written_two_ways_are_refused():
    """Work places saved through Excel lost their zeros ('1001' for '01001'): one commune
    became two areas, and people living and working in it were moving between them."""
    from hierdp_core.errors import InputError

    table = pd.DataFrame({"dep_res": ["01", "01"], "com_res": ["01001", "01002"],
                          "dep_tra": [1, 1], "com_tra": [1001, 1001], "n": [136, 198]})
    with pytest.raises(InputError, match="origin dep_res '01' and destination dep_tra '1' "
                                         "differ only by leading zeros"):
        flow_data_from_table(table, ["dep_res", "com_res"], ["dep_tra", "com_tra"], "n")
    alike = table.assign(dep_tra="01", com_tra="01001")
    data = flow_data_from_table(alike, ["dep_res", "com_res"], ["dep_tra", "com_tra"], "n")
    assert data.counts.sum() == 334

"""Range releases inside the hierarchy: every registered range mechanism gives consistent
non-negative integer histograms at every level (hypothesis), DAWA with the identity workload
equals Partition + Laplace, the CLI contract (`--query ranges --attribute age`), evaluate,
the manifest, bad input, and the privacy audit of every entry (the reference mode's failure is
shown on Stage 1 alone in test_ranges_partition.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run
from hypothesis import given, settings
from hypothesis import strategies as st
from release_inputs import PRIVTREE_PARTITION, UNIT_MEASUREMENT

from hierdp_core.audit import audit_mechanism
from hierdp_core.errors import BudgetError, InputError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.dawa import dawa
from hierdp_core.ranges.workloads import identity, prefix_ranges

NAMES = [i.name for i in list_mechanisms("ranges")]


def test_registry_contract():
    infos = {i.name: i for i in list_mechanisms("ranges")}
    expected = {"dawa", "dawa-reference", "greedy-h", "partition-laplace", "identity",
                "uniform", "h2", "hb", "privelet"}
    assert expected <= set(infos)
    assert infos["dawa-reference"].private is False and infos["dawa-reference"].warning
    assert all(i.private for n, i in infos.items() if n != "dawa-reference")
    assert all("ranges" in i.queries and i.neighbouring for i in infos.values())


def age_table(seed: int, regions: int = 2, provinces: int = 3, ages: int = 20):
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(regions):
        for p in range(provinces):
            scale = rng.integers(0, 40)
            for a in range(ages):
                rows.append((f"R{r}", f"R{r}P{p}", a, int(rng.poisson(scale * (1 + a % 5)))))
    return pd.DataFrame(rows, columns=["region", "province", "age", "residents"])


def check_consistent(data, values):
    h = data.hierarchy
    assert values.dtype.kind == "i" and (values >= 0).all()
    for level in range(1, h.n_levels):
        sl = h.level_slice(level)
        parents = h.parent[np.arange(sl.start, sl.stop)]
        sums = np.zeros((h.n_nodes, values.shape[1]), dtype=np.int64)
        np.add.at(sums, parents, values[sl])
        parent_rows = np.unique(parents)
        assert np.array_equal(sums[parent_rows], values[parent_rows])


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(NAMES), st.sampled_from([0.1, 1.0, 10.0]))
def test_every_mechanism_is_consistent_non_negative_integer(seed, name, epsilon):
    data = range_data_from_table(age_table(seed), ["region", "province"], "age",
                                 count_column="residents")
    rel = get_mechanism(name).release(data, PrivacyBudget.pure(epsilon),
                                      source=NoiseSource(seed=seed))
    check_consistent(data, rel.values)
    assert rel.values.shape == (data.hierarchy.n_nodes, 20)
    assert np.isfinite(rel.noisy).all()


def test_identity_workload_makes_dawa_partition_laplace():
    """Spec 4.6 item 5: on the identity workload the greedy weights are all 0 above the
    buckets, so DAWA is Partition + Laplace (same noise draws)."""
    x = np.random.default_rng(1).poisson(30, size=(3, 64)).astype(float)
    w = identity(64)
    a = dawa(x, w, 1.0, NoiseSource(seed=9), stage=UNIT_MEASUREMENT,
             partition_stage=PRIVTREE_PARTITION).values
    b = dawa(x, w, 1.0, NoiseSource(seed=9), stage2="laplace", stage=UNIT_MEASUREMENT,
             partition_stage=PRIVTREE_PARTITION).values
    assert np.allclose(a, b, atol=1e-9)


@pytest.mark.parametrize("stage2", ["greedy", "uniform", "geometric", "laplace"])
def test_rows_with_different_partitions_get_their_own_buckets(stage2):
    """Many rows, partitions of many sizes (some shared): with negligible noise every row's
    estimate is its own true bucket totals spread evenly over its own buckets."""
    rng = np.random.default_rng(3)
    steps = [np.sort(rng.choice(np.arange(1, 32), rng.integers(0, 6), replace=False))
             for _ in range(30)]
    x = np.stack([np.repeat(rng.integers(0, 90, s.size + 1), np.diff(np.r_[0, s, 32]))
                  for s in steps]).astype(float)
    x[20:] = x[0]  # ten rows share their data, hence (mostly) their partition
    est = dawa(x, prefix_ranges(32), 1e9, NoiseSource(seed=2), stage2=stage2, rho=1e-7,
               stage=UNIT_MEASUREMENT, partition_stage=PRIVTREE_PARTITION)
    assert len({e.size for e in est.edges}) > 3 and est.stage2 == (stage2,) * 30
    for i, edges in enumerate(est.edges):
        totals = np.add.reduceat(x[i], edges[:-1])
        expected = np.repeat(totals / np.diff(edges), np.diff(edges))
        assert np.allclose(est.values[i], expected, atol=1e-3)


def test_stage2_batches_route_every_row_to_its_own_partitions_strategy(monkeypatch):
    """Distinct partitions solved in several batches: each row is released with the strategy
    made for its own partition (a stub strategy answers with the partition it was made for)."""
    from hierdp_core.ranges import dawa as module

    class Stub:
        def __init__(self, bounds):
            self.bounds = bounds

    def measure_and_fit(batch, counts, which, epsilon, source, stage, releases=1):
        return batch.bounds[which, 1:].astype(float)

    monkeypatch.setattr(module, "stage2_strategies", lambda w, bounds, kind, b: Stub(bounds))
    monkeypatch.setattr(module, "_measure_and_fit", measure_and_fit)
    monkeypatch.setattr(module, "BATCH_CELLS", 3 * 4 * 16)  # three partitions per batch
    rng = np.random.default_rng(0)
    bounds = np.stack([np.r_[0, np.sort(rng.choice(np.arange(1, 16), 3, replace=False)), 16]
                       for _ in range(25)])
    bounds = bounds[rng.integers(0, 25, 60)]  # 60 rows, shared partitions in any order
    estimate, used = module._stage2(prefix_ranges(16), bounds, np.zeros((60, 4)), "greedy", 2,
                                    1.0, NoiseSource(seed=0), UNIT_MEASUREMENT)
    assert used == "greedy" and np.array_equal(estimate, bounds[:, 1:])


def test_budget_rules():
    data = range_data_from_table(age_table(1), ["region", "province"], "age",
                                 count_column="residents")
    mech = get_mechanism("dawa")
    with pytest.raises(BudgetError, match="share"):
        mech.release(data, PrivacyBudget.pure(1.0), split=[1, 0, 1], source=NoiseSource(seed=1))
    with pytest.raises(BudgetError, match="epsilon"):
        mech.release(data, PrivacyBudget.zcdp(0.5), source=NoiseSource(seed=1))
    ledger = mech.ledger(data, PrivacyBudget.pure(1.5))
    assert ledger["budget"].sum() == pytest.approx(1.5)
    assert np.allclose(ledger["epsilon_stage1"], [0, 0, 0.125])  # the finest level only
    ledger = mech.ledger(data, PrivacyBudget.pure(1.5), partition_from=0)
    assert np.allclose(ledger["epsilon_stage1"], 0.25 * ledger["budget"])
    rel = mech.release(data, PrivacyBudget.pure(1.5), split=[0, 1, 1], source=NoiseSource(seed=1))
    check_consistent(data, rel.values)
    assert rel.privacy["epsilon"] == pytest.approx(1.5)


def test_domain_and_bad_input():
    t = pd.DataFrame({"region": ["N", "N"], "province": ["a", "b"], "age": [2, 5],
                      "residents": [3, 4]})
    d = range_data_from_table(t, ["region", "province"], "age", count_column="residents",
                              domain=(0, 9))
    assert d.values == tuple(str(v) for v in range(10))
    assert d.node_counts()[0].tolist() == [0, 0, 3, 0, 0, 4, 0, 0, 0, 0]
    with pytest.raises(InputError, match="outside the domain"):
        range_data_from_table(t, ["region", "province"], "age", count_column="residents",
                              domain=(0, 3))
    with pytest.raises(InputError, match="workload covers"):
        d.with_workload(identity(3))


def test_a_domain_read_from_the_data_is_in_reading_order_and_never_mixed(capsys, tmp_path):
    """Age bands read in order ('5-9' before '10-14'; they were alphabetical, so every
    prefix range summed the wrong bands); numbers mixed with text ('99', '100+') were
    ordered as text ('0', '100+', '3', '99'): refused naming the text value."""
    bands = pd.DataFrame({"region": ["N"] * 4, "band": ["85+", "10-14", "0-4", "5-9"],
                          "n": [1, 2, 3, 4]})
    d = range_data_from_table(bands, ["region"], "band", count_column="n")
    assert d.values == ("0-4", "5-9", "10-14", "85+")
    assert d.node_counts()[0].tolist() == [3, 4, 2, 1]
    mixed = pd.DataFrame({"region": ["N"] * 3, "age": ["0", "99", "100+"], "n": [1, 2, 3]})
    mixed.to_csv(tmp_path / "ages.csv", index=False)
    code, _, err = run(capsys, "release", tmp_path / "ages.csv", "--query", "ranges",
                       "--levels", "region", "--attribute", "age", "--count-column", "n",
                       "--structure-from-data", "--mechanism", "h2", "--epsilon", 1,
                       "--seed", 1, "--out", tmp_path / "r")
    assert code == 2 and err.count("\n") == 1, err
    assert "'age' mixes numbers and text, e.g. '100+'" in err and "(e.g. '100')" in err
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def ages_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("ranges") / "ages.csv"
    age_table(7).to_csv(path, index=False)
    # the public geography: the six provinces and R1P3, where nobody lives
    provinces = [f"R{r}P{p}" for r in range(2) for p in range(3)] + ["R1P3"]
    pd.DataFrame({"region": [p[:2] for p in provinces], "province": provinces}).to_csv(
        path.parent / "geography.csv", index=False)
    return path


def contract(capsys, path, out_dir, mechanism="dawa", *extra):
    return run(capsys, "release", path, "--levels", "region,province", "--count-column",
               "residents", "--query", "ranges", "--attribute", "age", "--mechanism", mechanism,
               "--epsilon", 1, "--seed", 5, "--out", out_dir, "--geography",
               path.parent / "geography.csv", "--domain", "0-19", *extra)


@pytest.mark.parametrize("mechanism", ["dawa", "privelet"])
def test_cli_contract(capsys, tmp_path, ages_csv, mechanism):
    code, out, err = contract(capsys, ages_csv, tmp_path, mechanism)
    assert code == 0, err
    table = pd.read_csv(tmp_path / "release.csv", dtype={"node_id": str, "parent_id": str,
                                                          "category": str})
    assert {"level", "node_id", "parent_id", "category", "value"} <= set(table.columns)
    assert len(table) == (1 + 2 + 7) * 20  # one row per node x age 0..19
    assert "R1/R1P3" in set(table["node_id"])  # declared, nobody there, released
    assert (table["value"] >= 0).all() and table["value"].dtype.kind == "i"
    children = table[table["level"] > 0].groupby(["parent_id", "category"])["value"].sum()
    parents = table.set_index(["node_id", "category"])["value"]
    assert (children == parents.loc[children.index]).all()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["attribute"] == "age" and manifest["workload"]["name"] == "prefix"
    assert manifest["categories"] == [str(a) for a in range(20)]
    assert manifest["input"]["domain"] == "0-19" and manifest["input"]["structure"] == "declared"
    assert manifest["mechanism"]["private"] is (mechanism != "dawa-reference")
    code, out, err = run(capsys, "evaluate", ages_csv, tmp_path)
    assert code == 0, err
    assert "mean_query_error" in out and "province" in out


def test_cli_workloads_and_errors(capsys, tmp_path, ages_csv):
    code, _, err = contract(capsys, ages_csv, tmp_path / "a", "dawa", "--workload", "0-4,5-19")
    assert code == 0, err
    code, _, err = contract(capsys, ages_csv, tmp_path / "b", "dawa", "--workload", "0-40")
    assert code == 2 and "'40' is not a value" in err
    code, _, err = run(capsys, "release", ages_csv, "--levels", "region,province",
                       "--count-column", "residents", "--query", "ranges", "--mechanism",
                       "dawa", "--epsilon", 1, "--out", tmp_path / "c")
    assert code == 2 and "--attribute" in err
    code, _, err = contract(capsys, ages_csv, tmp_path / "d", "dawa", "--epsilon", 0)
    assert code == 2 and "epsilon" in err
    code, _, err = contract(capsys, ages_csv, tmp_path / "e", "dawa", "--domain", "0-9")
    assert code == 2 and err.count("\n") == 1
    assert "row(s) have 'age' value(s) outside the domain 0..9: '10', '11'" in err
    code, _, err = run(capsys, "release", ages_csv, "--levels", "region,province",
                       "--count-column", "residents", "--query", "ranges", "--attribute", "age",
                       "--mechanism", "dawa", "--epsilon", 1, "--geography",
                       ages_csv.parent / "geography.csv", "--out", tmp_path / "f")
    assert code == 2 and "--domain LO-HI" in err and "--structure-from-data" in err


AUDIT_TRIALS = 1500
#: dawa's and partition-laplace's passes are test_audit_stages.test_private_dawa_passes_every_stage,
#: the same stage-by-stage audit at 4,000 trials (the reference DAWA's failure is there too)
STAGE_AUDITED = ("dawa", "dawa-reference", "partition-laplace")


@pytest.mark.parametrize("name", [n for n in NAMES if n not in STAGE_AUDITED])
def test_private_range_mechanisms_pass_the_audit(name):
    r = audit_mechanism(name, 1.0, trials=AUDIT_TRIALS, seed=4)
    assert r.passed and r.epsilon_lower_bound <= 1.0, r.summary()


@pytest.mark.parametrize("partition_from, partitioned", [(-1, [2]), (0, [0, 1, 2]), (1, [1, 2]),
                                                          (-2, [1, 2]), (3, [])])
def test_partition_levels(partition_from, partitioned):
    """Stage 1 runs at the chosen levels only (negative: counted from the finest); the other
    levels give their whole epsilon to Stage 2, so their estimates are greedy-h's."""
    data = range_data_from_table(age_table(2), ["region", "province"], "age",
                                 count_column="residents")
    h = data.hierarchy
    rel = get_mechanism("dawa").release(data, PrivacyBudget.pure(3.0), source=NoiseSource(seed=4),
                                        partition_from=partition_from, partition_if="always")
    check_consistent(data, rel.values)
    ledger = rel.ledger
    assert [lv for lv in range(h.n_levels) if ledger["epsilon_stage1"][lv] > 0] == partitioned
    has_edges = [lv for lv in range(h.n_levels) if rel.edges is not None
                 and all(rel.edges[i] is not None for i in range(h.level_slice(lv).start,
                                                                 h.level_slice(lv).stop))]
    assert has_edges == partitioned
    greedy = get_mechanism("greedy-h").release(data, PrivacyBudget.pure(3.0),
                                               source=NoiseSource(seed=4))
    if not partitioned:  # no Stage 1 anywhere: the same draws as greedy-h
        assert np.array_equal(rel.values, greedy.values)

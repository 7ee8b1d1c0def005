"""Group sizes on Dask (`hierdp_core.engine.dask_group_sizes`): person records whose
households span the files of a dataset, released on a 2-process `distributed.LocalCluster`,
equal the in-memory release with the same seed (a declared region without households
included); bad input is a typed error, and one line with exit status 2 in the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from hierdp_core.engine import dask_group_sizes  # noqa: E402
from hierdp_core.errors import InputError  # noqa: E402
from hierdp_core.export import read_release  # noqa: E402
from hierdp_core.groupsizes.data import group_size_data_from_people  # noqa: E402
from hierdp_core.mechanisms.base import get_mechanism  # noqa: E402
from hierdp_core.privacy.budget import PrivacyBudget  # noqa: E402
from hierdp_core.privacy.samplers import NoiseSource  # noqa: E402
from hierdp_core.structure import geography_from_table  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.test_engine_blockwise_group_sizes import LEVELS, people  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """(folder of 4 Parquet files, folder of 3 CSV files, the whole CSV, the geography CSV
    with a state without households): the persons shuffled, so households span files."""
    root = tmp_path_factory.mktemp("households")
    t = people(2_000)
    shuffled = t.iloc[np.random.default_rng(2).permutation(len(t))]
    for kind, n in (("parquet", 4), ("csv", 3)):
        (root / kind).mkdir()
        for i, part in enumerate(np.array_split(np.arange(len(t)), n)):
            rows = shuffled.iloc[part]
            if kind == "parquet":
                rows.to_parquet(root / kind / f"p{i}.parquet", index=False)
            else:
                rows.to_csv(root / kind / f"p{i}.csv", index=False)
    t.to_csv(root / "all.csv", index=False)
    pd.concat([t[LEVELS].drop_duplicates(),
               pd.DataFrame({"s": ["9"], "c": ["9-0"], "b": ["9-0-0"]})]
              ).to_csv(root / "geo.csv", index=False)
    return root


@pytest.fixture
def client(shared_dask_cluster):
    """Two single-threaded worker processes (what a cluster does: everything pickled): the
    test process's shared cluster (conftest)."""
    return shared_dask_cluster


def geography(dataset):
    return geography_from_table(pd.read_csv(dataset / "geo.csv", dtype=str), LEVELS)


@pytest.mark.parametrize("params", [{}, {"groups": "exact"}])
def test_local_cluster_release_equals_the_in_memory_release(dataset, client, params):
    geo, budget = geography(dataset), PrivacyBudget.pure(1.0)
    release, data = dask_group_sizes.release_group_sizes_dataset(
        dataset / "parquet", LEVELS, "hh", "gs-topdown", budget, max_size=5, geography=geo,
        source=NoiseSource(seed=11), client=client, **params)
    truth = group_size_data_from_people(people(2_000), LEVELS, "hh", max_size=5,
                                        geography=geo)
    in_memory = get_mechanism("gs-topdown").release(truth, budget,
                                                    source=NoiseSource(seed=11), **params)
    assert data.declared_structure and release.hierarchy.level_size(1) == 8  # state 9 too
    assert release.categories == in_memory.categories == tuple("012345")
    assert np.array_equal(release.values, in_memory.values)
    assert np.array_equal(release.noisy, in_memory.noisy)
    assert release.values[0].sum() == truth.total_groups  # G kept


@pytest.mark.parametrize("min_size", [0, 1])
def test_declared_group_counts_on_the_cluster_equal_the_in_memory_release(dataset, client,
                                                                         min_size):
    """The groups file's counts (3 more groups in the first leaf, 2 in the empty state's
    leaf) reach the blocks on the workers: the release keeps them, equal to the in-memory
    release bit for bit; a leaf declared with fewer groups than its records is refused."""
    from hierdp_core.groupsizes.declared_groups import DeclaredGroups

    geo, budget = geography(dataset), PrivacyBudget.pure(1.0)
    truth = group_size_data_from_people(people(2_000), LEVELS, "hh", max_size=5,
                                        geography=geo)
    counts = truth.leaf_counts.sum(axis=1)
    counts[0] += 3
    counts[-1] += 2
    declared = DeclaredGroups(counts)
    release, _ = dask_group_sizes.release_group_sizes_dataset(
        dataset / "parquet", LEVELS, "hh", "gs-topdown", budget, max_size=5,
        min_size=min_size, geography=geo, group_counts=declared, source=NoiseSource(seed=4),
        client=client, groups="exact")
    memory = group_size_data_from_people(people(2_000), LEVELS, "hh", max_size=5,
                                         min_size=min_size, geography=geo,
                                         group_counts=declared)
    in_memory = get_mechanism("gs-topdown").release(memory, budget, source=NoiseSource(seed=4),
                                                    groups="exact")
    assert release.categories == in_memory.categories == tuple("012345"[min_size:])
    assert np.array_equal(release.values, in_memory.values)
    assert np.array_equal(release.values[h_leaves(release)].sum(axis=1), counts)
    assert release.privacy["group_counts"] == "declared"
    counts[1] = 0
    with pytest.raises(InputError, match="contradict the data"):
        dask_group_sizes.release_group_sizes_dataset(
            dataset / "parquet", LEVELS, "hh", "gs-noisy", budget, max_size=5,
            geography=geo, group_counts=DeclaredGroups(counts), source=NoiseSource(seed=4),
            client=client)


def h_leaves(release) -> slice:
    return release.hierarchy.level_slice(release.hierarchy.depth)


def test_a_group_in_two_leaves_and_a_missing_group_column_are_typed_errors(
        dataset, client, tmp_path):
    t = people(300)
    big = t["hh"].value_counts().index[0]  # a household of several persons
    first = t.index[t["hh"] == big][0]
    other = t.index[t["b"] != t.loc[first, "b"]][0]
    t.loc[first, LEVELS] = t.loc[other, LEVELS]  # one of them lives in another block
    t.iloc[:150].to_csv(tmp_path / "a.csv", index=False)
    t.iloc[150:].to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(InputError, match=rf"group\(s\) \['{big}'\] have people in more than"):
        dask_group_sizes.release_group_sizes_dataset(
            tmp_path, LEVELS, "hh", "gs-noisy", PrivacyBudget.pure(1.0), max_size=5,
            source=NoiseSource(seed=1), client=client)
    with pytest.raises(InputError, match="household"):
        dask_group_sizes.release_group_sizes_dataset(
            dataset / "parquet", LEVELS, "household", "gs-noisy", PrivacyBudget.pure(1.0),
            max_size=5, geography=geography(dataset), client=client)


def release_args(dataset, out, scheduler, *extra):
    return [dataset / "csv", "--engine", "dask", "--scheduler", scheduler, "--query",
            "group-sizes",
            "--levels", ",".join(LEVELS), "--group-column", "hh", "--max-size", "5",
            "--geography", dataset / "geo.csv", "--mechanism", "gs-topdown",
            "--invariant", "total", "--epsilon", "1", "--seed", "3", "--out", out,
            "--key-file", out.parent / "key", "--interval", "none", *extra]


def assert_engines_agree(capsys, args, whole_file, tmp_path, keys) -> None:
    """The CLI release of ``args(out, *extra)`` (``--engine dask``, its first five
    arguments the input and the engine) equals the in-memory release of ``whole_file``
    (the same records in one file): the table, and the manifest's ``keys``. (Give
    ``--interval none``: the bootstrap intervals of group sizes and flows re-run as many
    replicates as fit in a time, so they vary with the machine's load.)"""
    code, _, err = run_cli(capsys, "release", *args(tmp_path / "dask"))
    assert code == 0, err
    memory = args(tmp_path / "mem", "--format", "parquet")
    memory[:5] = [whole_file]
    assert run_cli(capsys, "release", *memory)[0] == 0
    table, manifest = read_release(tmp_path / "dask", tmp_path / "key")
    expected, expected_manifest = read_release(tmp_path / "mem", tmp_path / "key")
    pd.testing.assert_frame_equal(table, expected)
    for key in keys:
        assert manifest.get(key) == expected_manifest.get(key)


def test_cli_dask_group_sizes_equal_the_in_memory_release(dataset, client, tmp_path, capsys):
    address = client.scheduler.address  # the module's cluster, as a running scheduler
    assert_engines_agree(capsys, lambda out, *extra: release_args(dataset, out, address, *extra),
                         dataset / "all.csv", tmp_path,
                         ("privacy", "ledger", "randomness", "categories", "hierarchy",
                          "verdict"))


def test_cli_dask_group_sizes_with_a_groups_file(dataset, client, tmp_path, capsys):
    """``--groups`` and ``--min-size`` on the cluster: the in-memory engine's release."""
    geo = pd.read_csv(dataset / "geo.csv", dtype=str)
    counts = people(2_000).groupby(LEVELS)["hh"].nunique()
    groups = geo.join(counts.rename("groups"), on=LEVELS).fillna({"groups": 4})
    groups.to_csv(tmp_path / "groups.csv", index=False)
    address = client.scheduler.address
    assert_engines_agree(capsys, lambda out, *extra: release_args(
        dataset, out, address, "--groups", tmp_path / "groups.csv", "--min-size", "2",
        *extra), dataset / "all.csv", tmp_path, ("privacy", "categories", "verdict"))
    table, manifest = read_release(tmp_path / "dask", tmp_path / "key")
    assert manifest["privacy"]["group_counts"] == "declared"
    assert manifest["categories"] == list("2345")
    assert table.loc[table["level"] == 0, "value"].sum() == counts.sum() + 4


@pytest.mark.parametrize(("extra", "message"), [
    (["--mechanism", "gs-mh-dp"], "'gs-mh-dp' cannot run block by block"),
    (["--size-column", "size", "--count-column", "n", "--group-column", ""],
     "size histograms (--size-column) need the in-memory engine"),
    (["--max-size", "0"], "max_size (the public top-code N) must be an integer"),
])
def test_cli_refusals_are_one_line_and_exit_2(dataset, tmp_path, capsys, extra, message):
    argv = release_args(dataset, tmp_path / "x", "tcp://127.0.0.1:1", *extra)
    code, _, err = run_cli(capsys, "release", *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_cli_a_bad_split_on_the_cluster_spends_nothing(dataset, client, tmp_path, capsys):
    """The secure release's split is asked for with the public shape once the data's size is
    checked, and checked against the levels before the spend (it was charged first)."""
    from hierdp_core.privacy.ledger import Ledger

    argv = release_args(dataset, tmp_path / "x", client.scheduler.address, "--split",
                        "1,1,1,1,1,1,1,1,1")
    at = argv.index("--seed")
    del argv[at:at + 2]
    code, _, err = run_cli(capsys, "release", *argv)
    assert code == 2 and err.count("\n") == 1 and "the split needs" in err, err
    assert not Ledger().path.exists() or Ledger().datasets() == []

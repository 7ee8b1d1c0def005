"""The Dask engine (`hierdp_core.engine.dask_engine`): a dataset of CSV or Parquet files
released on a `distributed.LocalCluster` equals the in-memory release with the same seed,
declared units without records included; the partitioned Parquet release is read back,
the same whether the client or the workers wrote its parts; blocks are placed largest
first; bad input is one line and exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from hierdp_core.engine import dask_engine  # noqa: E402
from hierdp_core.export import read_release  # noqa: E402
from hierdp_core.mechanisms.base import get_mechanism  # noqa: E402
from hierdp_core.privacy.budget import PrivacyBudget  # noqa: E402
from hierdp_core.privacy.samplers import NoiseSource  # noqa: E402
from hierdp_core.queries.counts import count_data_from_table  # noqa: E402
from hierdp_core.structure import geography_from_table  # noqa: E402
from hierdp_core.table_rules import table_rules  # noqa: E402
from tests.conftest import run_cli  # noqa: E402

LEVELS = ["state", "county", "tract"]
VALUES = {"sex": ("F", "M"), "age": ("0-17", "18-64", "65+")}


def persons(n: int = 30_000) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    t = pd.DataFrame({"state": rng.choice(["01", "02", "04"], n)})
    t["county"] = t["state"] + rng.choice(["001", "003", "005"], n)
    t["tract"] = t["county"] + rng.choice(["0100", "0200"], n)
    t["sex"] = rng.choice(VALUES["sex"], n)
    t["age"] = rng.choice(VALUES["age"], n)
    return t


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """(folder of 4 Parquet files, folder of 3 CSV files, the whole CSV, the geography CSV
    with a state without records)."""
    root = tmp_path_factory.mktemp("dataset")
    t = persons()
    (root / "parquet").mkdir()
    (root / "csv").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(t)), 4)):
        t.iloc[part].to_parquet(root / "parquet" / f"part{i}.parquet", index=False)
    for i, part in enumerate(np.array_split(np.arange(len(t)), 3)):
        t.iloc[part].to_csv(root / "csv" / f"p{i}.csv", index=False)
    t.to_csv(root / "all.csv", index=False)
    geo = pd.concat([t[LEVELS].drop_duplicates(),
                     pd.DataFrame({"state": ["05"], "county": ["05001"],
                                   "tract": ["050010100"]})])
    geo.to_csv(root / "geo.csv", index=False)
    return root


@pytest.fixture(scope="module")
def client():
    """Two workers in this process (threads: a process cluster takes longer to start)."""
    c = dask_engine.open_client(workers=2, processes=False)
    yield c
    dask_engine.close_client(c)


def test_local_cluster_release_equals_the_in_memory_release(dataset, client):
    geography = geography_from_table(pd.read_csv(dataset / "geo.csv", dtype=str), LEVELS)
    budget, mechanism = PrivacyBudget.pure(1.0), get_mechanism("topdown")
    release, data = dask_engine.release_dataset(
        dataset / "parquet", LEVELS, "topdown", budget, geography=geography,
        categories=["sex", "age"], category_values=VALUES, source=NoiseSource(seed=11),
        client=client)
    truth = count_data_from_table(persons(), LEVELS, category_columns=["sex", "age"],
                                  geography=geography, category_values=VALUES)
    in_memory = mechanism.release(truth, budget, source=NoiseSource(seed=11))
    assert data.declared_structure and release.hierarchy.level_size(1) == 4  # state 05 too
    assert np.array_equal(release.values, in_memory.values)
    assert release.values[release.hierarchy.node_ids() == "05"].sum() >= 0
    assert np.array_equal(release.noisy, in_memory.noisy)


def test_rows_outside_the_geography_are_a_typed_error(dataset, client):
    from hierdp_core.errors import StructureError

    geography = geography_from_table(pd.read_csv(dataset / "geo.csv", dtype=str)
                                     .query("state != '04'"), LEVELS)
    with pytest.raises(StructureError, match="outside the declared geography"):
        dask_engine.release_dataset(dataset / "parquet", LEVELS, "topdown",
                                    PrivacyBudget.pure(1.0), geography=geography,
                                    source=NoiseSource(seed=1), client=client)


def release_args(dataset, out, *extra, cluster=None):
    """The CLI's Dask release of ``dataset`` into ``out``: on a cluster of 2 workers it starts
    itself, or on the running ``cluster`` (a client of it: ``--scheduler``)."""
    where = ["--scheduler", cluster.scheduler.address] if cluster else ["--workers", "2"]
    return [dataset / "csv", "--engine", "dask", *where, "--levels",
            ",".join(LEVELS), "--categories", "sex,age", "--category-values", "sex=F|M",
            "--category-values", "age=0-17|18-64|65+", "--geography", dataset / "geo.csv",
            "--mechanism", "topdown", "--epsilon", "1", "--seed", "3", "--out", out,
            "--key-file", out.parent / "key", *extra]


def test_cli_dask_release_is_a_partitioned_parquet_dataset_equal_to_in_memory(
        dataset, tmp_path, capsys):
    code, out, err = run_cli(capsys, "release", *release_args(dataset, tmp_path / "dask"))
    assert code == 0, err
    memory = release_args(dataset, tmp_path / "mem", "--format", "parquet")
    memory[:5] = [dataset / "all.csv"]  # the same records in one file, in-memory engine
    assert run_cli(capsys, "release", *memory)[0] == 0
    table, manifest = read_release(tmp_path / "dask", tmp_path / "key")
    expected, expected_manifest = read_release(tmp_path / "mem", tmp_path / "key")
    pd.testing.assert_frame_equal(table, expected)
    parts = sorted(manifest["files"])
    assert parts == [f"release.parquet/part-{i:05d}.parquet" for i in range(5)]  # root + 4
    for key in ("privacy", "ledger", "randomness", "categories", "hierarchy", "verdict"):
        assert manifest.get(key) == expected_manifest.get(key)


def test_a_changed_or_unlisted_part_is_refused(dataset, tmp_path, capsys, shared_dask_cluster):
    from hierdp_core.errors import InputError, ManifestError

    args = release_args(dataset, tmp_path / "r", cluster=shared_dask_cluster)
    assert run_cli(capsys, "release", *args)[0] == 0
    folder, key = tmp_path / "r", tmp_path / "key"
    extra = folder / "release.parquet" / "part-99999.parquet"
    extra.write_bytes((folder / "release.parquet" / "part-00001.parquet").read_bytes())
    with pytest.raises(InputError, match="not listed"):
        read_release(folder, key)
    extra.unlink()
    part = folder / "release.parquet" / "part-00002.parquet"
    original = part.read_bytes()
    part.write_bytes(original[:-1])
    with pytest.raises(InputError, match="does not match the sha256"):
        read_release(folder, key)
    part.write_bytes(original)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["release.parquet/part-00002.parquet"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ManifestError, match="edited after it was written"):
        read_release(folder, key)


@pytest.mark.parametrize(("extra", "message"), [
    (["--scheduler", "tcp://127.0.0.1:1"], "cannot reach the Dask scheduler"),
    (["--scheduler", "nonsense"], "cannot reach the Dask scheduler"),
    (["--query", "ranges", "--mechanism", "identity"],
     "--engine dask releases counts (with or without categories), group sizes and flows, not "
     "ranges"),
    (["--wide", "a,b"], "--wide needs the in-memory engine"),
])
def test_cli_refusals_are_one_line_and_exit_2(dataset, tmp_path, capsys, monkeypatch, extra,
                                              message):
    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT", "1s")
    argv = [a for a in release_args(dataset, tmp_path / "x") if a != "--workers" and a != "2"]
    if "ranges" in extra:  # categories are options of counts, refused for ranges first
        argv = [a for i, a in enumerate(argv) if not str(a).startswith("--categor")
                and not str(argv[i - 1]).startswith("--categor")]
    code, _, err = run_cli(capsys, "release", *argv, *extra)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_parts_written_by_the_workers_are_the_gathered_release(dataset, client, tmp_path):
    """With a parts folder the workers write the parts; moved into a release folder, they
    read back as the in-memory release's parquet-dataset, and the folder is gone."""
    from hierdp_core.export import write_release

    geography = geography_from_table(pd.read_csv(dataset / "geo.csv", dtype=str), LEVELS)
    args = (dataset / "parquet", LEVELS, "topdown", PrivacyBudget.pure(1.0))
    options = {"geography": geography, "categories": ["sex", "age"],
               "category_values": VALUES, "client": client}
    gathered, _ = dask_engine.release_dataset(*args, source=NoiseSource(seed=4), **options)
    written, _ = dask_engine.release_dataset(*args, source=NoiseSource(seed=4),
                                             parts_folder=tmp_path / "parts", **options)
    assert written.rows == gathered.values.size and len(written.files) == 5
    for release, out in ((gathered, tmp_path / "a"), (written, tmp_path / "b")):
        write_release(release, out, formats=("parquet-dataset",), structure_declared=True)
    assert not (tmp_path / "parts").exists()
    (a, ma), (b, mb) = read_release(tmp_path / "a"), read_release(tmp_path / "b")
    pd.testing.assert_frame_equal(a, b)
    assert ma["files"] == mb["files"]  # the same bytes, hashed by the workers
    for key in ("privacy", "ledger", "randomness", "categories", "hierarchy",
                "integer_values", "table_rules", "epsilon_ceiling"):
        assert ma[key] == mb[key]
    # the parts' table rules, read back one unit at a time, are those of the whole table
    assert mb["table_rules"] == table_rules(gathered)


def test_cli_interval_none_has_the_workers_write_the_release(dataset, tmp_path, capsys,
                                                             shared_dask_cluster):
    code, _, err = run_cli(capsys, "release", *release_args(
        dataset, tmp_path / "dask", "--interval", "none", cluster=shared_dask_cluster))
    assert code == 0, err
    memory = release_args(dataset, tmp_path / "mem", "--format", "parquet", "--interval",
                          "none")
    memory[:5] = [dataset / "all.csv"]
    assert run_cli(capsys, "release", *memory)[0] == 0
    table, manifest = read_release(tmp_path / "dask", tmp_path / "key")
    pd.testing.assert_frame_equal(table, read_release(tmp_path / "mem", tmp_path / "key")[0])
    assert len(manifest["files"]) == 5
    assert [p.name for p in tmp_path.iterdir() if "parts" in p.name] == []


def test_a_secure_dask_release_is_marked_with_its_ledger_entry(dataset, tmp_path, capsys,
                                                              shared_dask_cluster):
    """The workers write a secure release; the client's charge marks it: publishable."""
    from hierdp_core.privacy.ledger import Ledger
    from hierdp_core.verdict import LEDGER_ENTRY

    args = release_args(dataset, tmp_path / "dask", "--interval", "none",
                        cluster=shared_dask_cluster)
    seed = args.index("--seed")
    code, out, err = run_cli(capsys, "release", *args[:seed], *args[seed + 2:])
    assert code == 0, err
    _, manifest = read_release(tmp_path / "dask", tmp_path / "key")
    [spend] = Ledger().datasets()[0].spends
    assert manifest["randomness"][LEDGER_ENTRY] == spend.release_id
    assert manifest["publishable"] is True and "publishable: yes" in out


def test_blocks_are_placed_largest_first_on_the_least_loaded_worker():
    from hierdp_core.engine.blockwise import balanced_placement

    # 9 to a; 5 to b; 4 to b (5 < 9); 3 to a (a tie: the first); 1 to b: loads 12 and 10
    assert balanced_placement([5, 9, 1, 4, 3], ["a", "b"]) == ["b", "a", "b", "b", "a"]


def test_the_whole_datasets_total_is_checked_not_only_each_partition(tmp_path, client):
    """Two files of 2^52 people each: each partition passes the 2^53 - 1 check alone, the
    dataset does not (issue 27): a one-line typed error, no release."""
    from hierdp_core.errors import InputError

    for i, state in enumerate(["01", "02"]):
        pd.DataFrame({"state": [state], "county": [state + "001"], "n": [2**52]}).to_csv(
            tmp_path / f"p{i}.csv", index=False)
    geography = geography_from_table(pd.DataFrame({"state": ["01", "02"],
                                                   "county": ["01001", "02001"]}),
                                     ["state", "county"])
    with pytest.raises(InputError, match=r"\(all partitions\) sums to 9,007,199,254,740,992"):
        dask_engine.release_dataset(tmp_path, ["state", "county"], "topdown",
                                    PrivacyBudget.pure(1.0), geography=geography,
                                    count_column="n", source=NoiseSource(seed=1),
                                    client=client)
    pd.DataFrame({"state": ["02"], "county": ["02001"], "n": [2**52 - 1]}).to_csv(
        tmp_path / "p1.csv", index=False)  # 2^53 - 1 in all: the limit itself passes
    release, _ = dask_engine.release_dataset(
        tmp_path, ["state", "county"], "topdown", PrivacyBudget.pure(1.0),
        geography=geography, count_column="n", source=NoiseSource(seed=1), client=client)
    assert release.values.shape[0] == 5


def test_a_release_refused_by_its_size_spends_no_budget(dataset, tmp_path, capsys,
                                                        shared_dask_cluster):
    """The write-ahead spend of a secure Dask release comes after the size checks: a
    release refused for its cells leaves the ledger as it was, so the next one (under the
    implicit total of one release) is not refused for an earlier spend."""
    args = [a for a in release_args(dataset, tmp_path / "r", cluster=shared_dask_cluster)
            if a not in ("--seed", "3")]
    code, _, err = run_cli(capsys, "release", *args, "--secure", "--max-cells", "10")
    assert code == 2 and "cells" in err and "budget" not in err
    code, out, err = run_cli(capsys, "release", *args, "--secure")
    assert code == 0, err
    assert "this release spent epsilon 1" in out


def test_the_dask_cell_limit_is_the_clients_share_only_when_it_gathers(tmp_path):
    """The workers writing the release hold the cells, not the client: no client-side cap
    (the README's 64M-cell release); a gathered release is capped by --max-memory."""
    from hierdp_core.cli.config_file import settings_of_args
    from hierdp_core.cli.dask import dask_cell_limit
    from hierdp_core.cli.parser import build_parser
    from hierdp_core.memory_plan import DASK_CLIENT_BYTES_PER_CELL

    def limit(*extra):
        return dask_cell_limit(*settings_of_args(build_parser().parse_args(
            ["release", "persons/", "--engine", "dask", "--levels", "state", "--mechanism",
             "topdown", "--epsilon", "1", "--out", str(tmp_path / "r"), *extra])))

    assert limit("--interval", "none") is None
    assert limit("--interval", "none", "--max-cells", "5") == 5
    assert limit("--max-memory", "1GB") == 2**30 // DASK_CLIENT_BYTES_PER_CELL
    assert limit("--interval", "none", "--format", "csv", "--max-memory", "1GB") \
        == 2**30 // DASK_CLIENT_BYTES_PER_CELL

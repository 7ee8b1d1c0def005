"""O/D flows on Dask (`hierdp_core.engine.dask_flows`): trips in a dataset of several files,
released on a 2-process `distributed.LocalCluster` over a declared geography, equal the
in-memory InfTDA release with the same seed (both trees), through the CLI too; bad input is
a typed error, and one line with exit status 2 in the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from hierdp_core.engine import dask_flows  # noqa: E402
from hierdp_core.errors import InputError, StructureError  # noqa: E402
from hierdp_core.flows.data import flow_data_from_table  # noqa: E402
from hierdp_core.mechanisms.base import get_mechanism  # noqa: E402
from hierdp_core.privacy.budget import PrivacyBudget  # noqa: E402
from hierdp_core.privacy.samplers import NoiseSource  # noqa: E402
from hierdp_core.structure import geography_from_table  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.test_engine_dask_group_sizes import assert_engines_agree, client  # noqa: E402, F401

ORIGIN, DESTINATION = ["o_region", "o_area"], ["d_region", "d_area"]
RHO = PrivacyBudget.zcdp(0.5)


def trips(n: int = 6_000) -> pd.DataFrame:
    """Trips between 30 areas of 5 regions (skewed), one row per trip."""
    rng = np.random.default_rng(4)
    areas = np.array([f"{r}{a}" for r in "ABCDE" for a in range(6)])
    weights = rng.pareto(1.5, areas.size) + 0.01
    pick = [rng.choice(areas.size, n, p=weights / weights.sum()) for _ in range(2)]
    return pd.DataFrame({"o_region": [areas[i][0] for i in pick[0]], "o_area": areas[pick[0]],
                         "d_region": [areas[i][0] for i in pick[1]], "d_area": areas[pick[1]]})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """(folder of 3 Parquet files of trips, the declared geography with a region F that has
    no trip)."""
    root = tmp_path_factory.mktemp("trips")
    t = trips()
    (root / "parts").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(t)), 3)):
        t.iloc[part].to_parquet(root / "parts" / f"p{i}.parquet", index=False)
    t.to_csv(root / "all.csv", index=False)
    areas = t[["o_region", "o_area"]].drop_duplicates().set_axis(["region", "area"], axis=1)
    geo = pd.concat([areas, pd.DataFrame({"region": ["F"], "area": ["F0"]})])
    geo.to_csv(root / "geo.csv", index=False)
    return root, geography_from_table(geo, ["region", "area"])


@pytest.mark.parametrize(("tree", "neighbouring"), [("destination", "bounded"),
                                                    ("origin", "unbounded")])
def test_local_cluster_flows_equal_the_in_memory_release(dataset, client, tree,  # noqa: F811
                                                         neighbouring):
    folder, geography = dataset[0] / "parts", dataset[1]
    release, shape = dask_flows.release_flows_dataset(
        folder, ORIGIN, DESTINATION, "inftda", RHO, geography=geography, tree=tree,
        source=NoiseSource(seed=3), client=client, neighbouring=neighbouring)
    data = flow_data_from_table(trips(), ORIGIN, DESTINATION, geography=geography, tree=tree)
    in_memory = get_mechanism("inftda").release(data, RHO, source=NoiseSource(seed=3),
                                                neighbouring=neighbouring)
    pd.testing.assert_frame_equal(release.to_frame(), in_memory.to_frame())
    assert release.diagnostics == in_memory.diagnostics
    assert release.randomness == in_memory.randomness
    assert shape.geography.level_size(1) == 6 and release.levels[-1].size > 100


def test_bad_flow_input_is_a_typed_error(dataset, client):  # noqa: F811
    folder, geography = dataset[0] / "parts", dataset[1]
    with pytest.raises(InputError, match="cannot run block by block"):
        dask_flows.release_flows_dataset(folder, ORIGIN, DESTINATION, "vanilla-gauss", RHO,
                                         geography=geography, client=client)
    with pytest.raises(StructureError, match="outside the declared geography|not in"):
        dask_flows.release_flows_dataset(
            folder, ORIGIN, DESTINATION, "inftda", RHO, client=client,
            geography=geography_from_table(pd.DataFrame({"region": ["A"], "area": ["A0"]}),
                                           ["region", "area"]))


def release_args(root, out, scheduler, *extra):
    return [root / "parts", "--engine", "dask", "--scheduler", scheduler, "--query", "flows",
            "--origin-levels", ",".join(ORIGIN), "--destination-levels", ",".join(DESTINATION),
            "--geography", root / "geo.csv", "--mechanism", "inftda", "--tree", "origin",
            "--invariant", "total", "--rho", "0.5", "--seed", "3", "--out", out,
            "--key-file", out.parent / "key", "--interval", "none", *extra]


def test_cli_dask_flows_equal_the_in_memory_release(dataset, client, tmp_path,  # noqa: F811
                                                    capsys):
    address = client.scheduler.address
    assert_engines_agree(
        capsys, lambda out, *extra: release_args(dataset[0], out, address, *extra),
        dataset[0] / "all.csv", tmp_path,
        ("privacy", "ledger", "randomness", "tree", "hierarchy", "verdict"))


@pytest.mark.parametrize(("extra", "message"), [
    (["--mechanism", "vanilla-gauss"], "'vanilla-gauss' cannot run block by block"),
    (["--format", "parquet-dataset"], "a flow release is one table"),
    (["--structure-from-data", "--geography", ""], "flows on Dask need the declared areas"),
])
def test_cli_flow_refusals_are_one_line_and_exit_2(dataset, tmp_path, capsys, extra, message):
    argv = release_args(dataset[0], tmp_path / "x", "tcp://127.0.0.1:1", *extra)
    if "vanilla-gauss" in extra:  # it keeps no total exactly
        at = argv.index("--invariant")
        del argv[at:at + 2]
    code, _, err = run_cli(capsys, "release", *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err

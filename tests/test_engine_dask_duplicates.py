"""Repeated aggregated rows on the Dask engine: rows of a count column that repeat a unit and
category (an O/D pair), in one partition or in two, are refused in one line naming the first
(rows counted within its partition, or the two partitions), before the budget is charged
(a secure release leaves the ledger empty); ``--duplicates sum`` sums them, as in memory."""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("distributed")

from hierdp_core.privacy.ledger import Ledger  # noqa: E402
from tests.conftest import run_cli  # noqa: E402

GEO = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"]})
COUNTS = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"],
                       "count": [1203, 877, 40]})
REPEAT = COUNTS.iloc[[0]]  # the first row exported twice
TRIPS = pd.DataFrame({"o_state": ["01", "01", "02"], "o_county": ["01001", "01003", "02013"],
                      "d_state": ["02", "02", "01"], "d_county": ["02013", "02013", "01001"],
                      "count": [5, 3, 2]})
FLOWS = ["--query", "flows", "--origin-levels", "o_state,o_county", "--destination-levels",
         "d_state,d_county", "--mechanism", "inftda", "--rho", "0.5", "--invariant", "total"]
COUNT_FLAGS = ["--levels", "state,county", "--mechanism", "topdown", "--epsilon", "1"]


def _files(folder, parts: list[pd.DataFrame]):
    folder.mkdir()
    for i, part in enumerate(parts):
        part.to_csv(folder / f"p{i}.csv", index=False)
    GEO.to_csv(folder.parent / "geo.csv", index=False)
    return folder


def _release(capsys, client, data, out, *flags):
    return run_cli(capsys, "release", data, "--engine", "dask", "--scheduler",
                   client.scheduler.address, "--count-column", "count", "--geography",
                   data.parent / "geo.csv", "--format", "parquet", "--interval", "none",
                   "--out", out, "--key-file", out.parent / "key", *flags)


@pytest.mark.parametrize(("parts", "flags", "words"), [
    ([pd.concat([COUNTS, REPEAT])], COUNT_FLAGS,
     "the first repeated, unit 01/01001, is on rows 1 and 4 of the dataset's partition 1"),
    ([COUNTS, REPEAT], COUNT_FLAGS,
     "rows of the dataset's partitions 1 and 2 repeat the unit and category, unit 01/01001"),
    ([TRIPS, TRIPS.iloc[[1]]], FLOWS,
     "partitions 1 and 2 repeat the origin and destination, origin 01/01003 to destination "
     "02/02013"),
    ([pd.concat([TRIPS, TRIPS.iloc[[1]]])], FLOWS,
     "origin 01/01003 to destination 02/02013, is on rows 2 and 4 of the dataset's partition "
     "1"),
])
def test_repeated_rows_are_refused_before_the_budget(capsys, tmp_path, shared_dask_cluster,
                                                     parts, flags, words):
    data = _files(tmp_path / "data", parts)
    code, _, err = _release(capsys, shared_dask_cluster, data, tmp_path / "out", *flags)
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert "--duplicates sum" in err and not (tmp_path / "out").exists()
    assert not Ledger().path.exists() or Ledger().datasets() == []  # nothing charged


def test_declared_summed_they_are_summed(capsys, tmp_path, shared_dask_cluster):
    data = _files(tmp_path / "data", [COUNTS, REPEAT])
    code, _, err = _release(capsys, shared_dask_cluster, data, tmp_path / "out",
                            *COUNT_FLAGS, "--duplicates", "sum", "--seed", "1")
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["structure"] == "declared"


def test_a_count_with_a_dot_thousands_separator_is_refused_on_dask(tmp_path, capsys,
                                                                   shared_dask_cluster):
    """'3.000' was read by dask as the float 3.0 and released as 3; as in memory, it is
    refused with both readings."""
    data = _files(tmp_path / "parts", [COUNTS, pd.DataFrame(
        {"state": ["02"], "county": ["02013"], "count": ["3.000"]})])
    code, _, err = _release(capsys, shared_dask_cluster, data, tmp_path / "out", *COUNT_FLAGS,
                            "--seed", "1", "--duplicates", "sum")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "'.' between groups of three digits" in err and "3000" in err

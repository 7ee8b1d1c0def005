"""The API refuses aggregated rows that repeat a unit and category (principle 10: summing
them is a guess about the table) with a typed error naming the first and its rows, before
any budget is charged; ``duplicates="sum"`` declares them summed."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

import hierdp_core
from hierdp_core.errors import DuplicateRowsError
from hierdp_core.privacy.ledger import Ledger

GEO = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"]})
TABLE = pd.DataFrame({"state": ["01", "01", "01", "02"],
                      "county": ["01001", "01001", "01003", "02013"],
                      "count": [1203, 1203, 877, 40]})  # the first row exported twice


def test_repeated_rows_are_a_typed_error_before_the_budget(tmp_path):
    assert inspect.signature(hierdp_core.release).parameters["duplicates"].default == "error"
    with pytest.raises(DuplicateRowsError, match="the first repeated, unit 01/01001, is on "
                                                 "rows 1 and 2"):
        hierdp_core.release(TABLE, ["state", "county"], "count", geography=GEO,
                            out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not Ledger().path.exists() or Ledger().datasets() == []


def test_declared_summed_they_are_summed():
    summed = hierdp_core.release(TABLE, ["state", "county"], "count", geography=GEO, seed=1,
                                 duplicates="sum")
    once = TABLE.groupby(["state", "county"], as_index=False)["count"].sum()
    assert once["count"].tolist() == [2406, 877, 40]
    alike = hierdp_core.release(once, ["state", "county"], "count", geography=GEO, seed=1)
    pd.testing.assert_frame_equal(summed.to_frame(), alike.to_frame())
    with pytest.raises(DuplicateRowsError):
        hierdp_core.release(TABLE, ["state", "county"], "count", geography=GEO, seed=1)

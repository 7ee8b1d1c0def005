"""Records to leaf counts on the workers (`hierdp_core.engine.leaf_counts`): the sparse
cells of a partition, looked up once per distinct tuple of codes, are the bincount of the
rows' leaves x categories; a Categorical column (dictionary-encoded Parquet) gives the same;
a row outside the geography is the whole partition's error, its rows counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.engine.leaf_counts import block_leaf_counts, distinct_tuples, partition_cells
from hierdp_core.errors import StructureError
from hierdp_core.structure import geography_from_table

LEVELS = ["s", "c"]


@pytest.fixture(scope="module")
def geography():
    units = pd.DataFrame({"s": ["A"] * 3 + ["B"] * 2, "c": ["1", "2", "3", "4", "5"]})
    return geography_from_table(units, LEVELS)


def records(n: int = 5_000, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.integers(1, 6, n)
    return pd.DataFrame({"s": np.where(c <= 3, "A", "B"), "c": c.astype(str),
                         "sex": rng.choice(["F", "M"], n), "n": rng.integers(0, 4, n)})


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("count_column", [None, "n"])
def test_partition_cells_are_the_bincount_of_leaves_and_categories(geography, categorical,
                                                                   count_column):
    rows = records()
    frame = rows.astype("category") if categorical else rows.copy()
    if categorical:
        frame["n"] = rows["n"]
    cells = partition_cells(frame, geography, LEVELS, ["sex"], {"sex": ("F", "M")},
                            count_column, 2, np.array([0, 3]))
    leaf = geography.leaf_of_rows(rows, LEVELS) * 2 + (rows["sex"] == "M").to_numpy()
    weights = None if count_column is None else rows["n"].to_numpy()
    expected = np.bincount(leaf, weights, minlength=10).astype(np.int64).reshape(5, 2)
    dense = np.vstack([block_leaf_counts(0, 0, 3, 2, cells[0]),
                       block_leaf_counts(1, 3, 2, 2, cells[1])])
    assert np.array_equal(dense, expected)
    assert all((s > 0).all() and (np.diff(c) > 0).all() for c, s in cells.values())


@pytest.mark.parametrize(("a", "key", "first"), [
    (["x", "x", "x", "y", "x"], [0, 0, 0, 1, 0], [0, 3]),  # b fixes the tuple
    (["x", "y", "x", "x", "y"], [0, 1, 0, 2, 1], [0, 1, 3]),  # b = 1 under x and y
    (["x", None, "x", "y", None], [0, 1, 0, 2, 1], [0, 1, 3]),  # a missing value too
])
def test_distinct_tuples_give_the_first_row_of_each_tuple(a, key, first):
    frame = pd.DataFrame({"a": a, "b": [1, 1, 1, 2, 1]})
    for table in (frame, frame.astype("category")):
        got_key, got_first = distinct_tuples(table, ["a", "b"])
        assert got_key.tolist() == key and got_first.tolist() == first


def test_rows_outside_the_geography_are_counted_row_by_row(geography):
    rows = pd.DataFrame({"s": ["A", "A", "A", "B"], "c": ["9", "9", "9", "4"],
                         "sex": ["F"] * 4})
    with pytest.raises(StructureError, match=r"^3 data row\(s\) lie outside .*c '9'"):
        partition_cells(rows, geography, LEVELS, ["sex"], {"sex": ("F", "M")}, None, 2,
                        np.array([0, 3]))

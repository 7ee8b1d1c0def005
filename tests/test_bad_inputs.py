"""Bad inputs of issue 16: a count column given another role, duplicate aggregated rows,
look-alike codes, releases too large for memory and malformed domains. Each is a typed error
in the core and, on the command line, one line on stderr with exit status 2 (or one
warning / note line), nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.data.loaders import check_cells, default_max_cells, lookalike_codes
from hierdp_core.errors import (
    ColumnRoleError,
    DuplicateRowsError,
    SizeLimitError,
    StructureError,
)
from hierdp_core.flows.data import flow_data_from_table, flow_data_from_trips
from hierdp_core.groupsizes.data import (
    group_size_data_from_histograms,
    group_size_data_from_people,
)
from hierdp_core.ids import unescape_code
from hierdp_core.privacy.ledger import Ledger
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.structure import parse_domain

ROWS = pd.DataFrame({"state": ["A", "A", "A", "B"], "county": ["a1", "a1", "a2", "b1"],
                     "sex": ["F", "F", "M", "F"], "age": [3, 3, 40, 7], "n": [2, 5, 1, 4]})


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "rows.csv"
    ROWS.to_csv(path, index=False)
    return path


def release(capsys, data, out, *extra):
    return run(capsys, "release", data, "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
               "--structure-from-data", "--out", out, *extra)


def one_error(code, err, *words):
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


# ---- 1. the count column given another role ---------------------------------------------

@pytest.mark.parametrize("role", ["levels", "categories"])
def test_core_refuses_count_column_as_level_or_category(role):
    kwargs = ({"category_columns": ["n"]} if role == "categories" else {})
    levels = ["state", "n"] if role == "levels" else ["state", "county"]
    with pytest.raises(ColumnRoleError, match="'n'"):
        count_data_from_table(ROWS, levels, count_column="n", **kwargs)


@pytest.mark.parametrize(("flags", "noun"), [
    (["--levels", "state,n"], "level"),
    (["--levels", "state,county", "--categories", "n"], "category")])
def test_cli_refuses_count_column_as_level_or_category(capsys, data, tmp_path, flags, noun):
    out = tmp_path / "out"
    code, _, err = release(capsys, data, out, "--count-column", "n", *flags)
    one_error(code, err, "'n'", "count column", noun)
    assert not out.exists()


def test_cli_refuses_count_column_as_flow_level(capsys, data, tmp_path):
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--query", "flows", "--origin-levels", "n",
                       "--destination-levels", "county", "--count-column", "n",
                       "--mechanism", "stability-histogram", "--epsilon", 1, "--delta", 1e-6,
                       "--seed", 1, "--structure-from-data", "--out", out)
    one_error(code, err, "'n'", "origin level")
    assert not out.exists()


# ---- 2. duplicate rows of aggregated input ------------------------------------------------

def test_core_sums_duplicates_or_refuses_them_naming_the_first():
    d = count_data_from_table(ROWS, ["state", "county"], count_column="n",
                              category_columns=["sex"], duplicates="sum")
    assert d.merged_rows == 1 and int(d.leaf_counts.sum()) == 12
    with pytest.raises(DuplicateRowsError, match="the first repeated, unit A/a1, sex F, is on "
                                                 "rows 1 and 2"):
        count_data_from_table(ROWS, ["state", "county"], count_column="n",
                              category_columns=["sex"], duplicates="error")
    people = count_data_from_table(ROWS, ["state", "county"])  # microdata: rows are people
    assert people.merged_rows == 0


def test_cli_refuses_duplicates_before_the_budget_or_notes_them_when_declared_summed(
        capsys, data, tmp_path):
    """Refused in one line, exit 2, nothing written and nothing charged to the budget
    (a secure release); ``--duplicates sum`` sums them with a note."""
    flags = ["--levels", "state,county", "--categories", "sex", "--count-column", "n"]
    out = tmp_path / "b"
    code, _, err = run(capsys, "release", data, "--mechanism", "topdown", "--epsilon", 1,
                       "--structure-from-data", "--out", out, *flags)
    one_error(code, err, "1 row(s)", "unit A/a1, sex F", "rows 1 and 2", "--duplicates sum")
    assert not out.exists()
    assert not Ledger().path.exists() or Ledger().datasets() == []
    code, _, err = release(capsys, data, tmp_path / "a", *flags, "--duplicates", "sum")
    assert code == 0, err
    assert "note: 1 row(s) repeating the cell of an earlier row" in err


def test_flows_ranges_and_group_sizes_count_or_refuse_repeated_cells():
    od = pd.DataFrame({"o": ["A", "A", "B"], "d": ["B", "B", "A"], "n": [3, 4, 2]})
    flows = flow_data_from_table(od, ["o"], ["d"], "n", duplicates="sum")
    assert flows.merged_rows == 1 and int(flows.counts.sum()) == 9
    assert flow_data_from_trips(od, ["o"], ["d"]).merged_rows == 0  # trips repeat by nature
    with pytest.raises(DuplicateRowsError, match="origin and destination .* origin A to "
                                                 "destination B, is on rows 1 and 2"):
        flow_data_from_table(od, ["o"], ["d"], "n", duplicates="error")
    ages = pd.DataFrame({"st": ["A", "B", "A"], "age": [3, 4, 3], "n": [2, 1, 5]})
    ranges = range_data_from_table(ages, ["st"], "age", count_column="n", domain=(0, 9),
                                   duplicates="sum")
    assert ranges.merged_rows == 1 and int(ranges.leaf_counts.sum()) == 8
    with pytest.raises(DuplicateRowsError, match="'age' value .*, unit A, age 3, is on rows 1 "
                                                 "and 3"):
        range_data_from_table(ages, ["st"], "age", count_column="n", duplicates="error")
    sizes = ages.rename(columns={"age": "size"})
    groups = group_size_data_from_histograms(sizes, ["st"], "size", "n", max_size=3,
                                             duplicates="sum")
    assert groups.merged_rows == 1
    top = sizes.assign(size=[3, 4, 9])  # 3 and 9 are one size at the top-code 3: declared
    coded = group_size_data_from_histograms(top, ["st"], "size", "n", max_size=3,
                                            duplicates="error")
    assert coded.merged_rows == 0 and coded.leaf_counts[0, -1] == 7
    with pytest.raises(DuplicateRowsError, match="unit and size .* unit A, size 3, is on "
                                                 "rows 1 and 3"):
        group_size_data_from_histograms(sizes, ["st"], "size", "n", max_size=3,
                                        duplicates="error")
    huge = pd.DataFrame({"st": ["A", "A", "A"], "size": [10**12, 0, 10**12], "n": [0, 0, 1]})
    with pytest.raises(DuplicateRowsError, match="size 1000000000000, is on rows 1 and 3"):
        group_size_data_from_histograms(huge, ["st"], "size", "n", max_size=20,
                                        duplicates="error")  # sizes as written: never dense


def test_group_sizes_are_sized_before_allocating():
    people = pd.DataFrame({"st": ["A", "B"], "hh": [1, 2]})
    with pytest.raises(SizeLimitError, match="2 units x 10 sizes"):
        group_size_data_from_people(people, ["st"], "hh", max_size=9, max_cells=19)
    assert group_size_data_from_people(people, ["st"], "hh", max_size=9,
                                       max_cells=20).leaf_counts.shape == (2, 10)


# ---- 3. codes that differ only by leading zeros or whitespace -----------------------------

def test_lookalike_codes_are_named_not_merged(capsys, tmp_path):
    table = pd.DataFrame({"state": ["1", "01", "2", "2"], "county": ["06 ", "06", "7", "8"],
                          "n": [1, 2, 3, 4]})
    pairs = lookalike_codes(table, ["state", "county"])
    assert ("state", "01", "1") in pairs and ("county", "06", "06 ") in pairs
    assert lookalike_codes(table, ["state"], limit=1) == [("state", "01", "1")]
    path = tmp_path / "codes.csv"
    table.to_csv(path, index=False)
    code, _, err = release(capsys, path, tmp_path / "out", "--levels", "state",
                           "--count-column", "n", "--duplicates", "sum")  # state 2 twice
    warnings = [line for line in err.splitlines() if line.startswith("warning: codes")]
    assert code == 0 and len(warnings) == 1 and "'01' and '1'" in warnings[0]
    many = pd.DataFrame({"state": [f"{i}" for i in range(1, 9)] + [f"0{i}" for i in range(1, 9)]})
    assert len(lookalike_codes(many, ["state"])) == 5


# ---- 4. size guards and domains -----------------------------------------------------------

def test_check_cells_and_default():
    check_cells(10, 10, "x")
    with pytest.raises(SizeLimitError, match="11 cells"):
        check_cells(11, 10, "x")
    assert default_max_cells() > 1000


def test_core_refuses_too_many_cells():
    with pytest.raises(SizeLimitError, match="3 units x 2 categories"):
        count_data_from_table(ROWS, ["state", "county"], category_columns=["sex"], max_cells=5)


@pytest.mark.parametrize("domain", ["0-100000000", "0-1000000000000"])
def test_cli_refuses_a_huge_domain_before_allocating(capsys, data, tmp_path, domain):
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--query", "ranges", "--levels", "state",
                       "--attribute", "age", "--domain", domain, "--mechanism", "dawa",
                       "--epsilon", 1, "--seed", 1, "--structure-from-data",
                       "--max-cells", 1_000_000, "--out", out)
    one_error(code, err, "cells", "--domain is too large", "domain of", "--max-memory")
    assert not out.exists()


def test_cli_max_cells_still_caps_a_domain(capsys, data, tmp_path):
    out = tmp_path / "out"
    code, _, err = run(capsys, "release", data, "--query", "ranges", "--levels", "state",
                       "--attribute", "age", "--domain", "0-1000", "--mechanism", "identity",
                       "--epsilon", 1, "--seed", 1, "--structure-from-data",
                       "--max-cells", 100, "--out", out)
    one_error(code, err, "1,001 values", "--max-cells")
    assert not out.exists()


def test_cli_refuses_too_many_count_cells(capsys, data, tmp_path):
    code, _, err = release(capsys, data, tmp_path / "out", "--levels", "state,county",
                           "--categories", "sex", "--max-cells", 5)
    one_error(code, err, "6 cells", "3 units x 2 categories")


@pytest.mark.parametrize("text", ["0-1e8", "0-1.5", "a-b", "100"])
def test_domain_wants_integers(capsys, data, tmp_path, text):
    with pytest.raises(StructureError, match="LO-HI integers"):
        parse_domain(text)
    code, _, err = run(capsys, "release", data, "--query", "ranges", "--levels", "state",
                       "--attribute", "age", "--domain", text, "--mechanism", "dawa",
                       "--epsilon", 1, "--seed", 1, "--structure-from-data",
                       "--out", tmp_path / "out")
    one_error(code, err, "LO-HI integers", repr(text))


def test_dashboard_domain_uses_the_shared_parser():
    from hierdp_core.ui.sources import _domain

    assert _domain("") is None and _domain("  ") is None
    assert _domain(" -5 - 5 ") == (-5, 5) == parse_domain("-5-5")
    with pytest.raises(StructureError, match="LO-HI integers"):
        _domain("0-1e8")


# ---- 5. codes containing the id separators ------------------------------------------------

@pytest.mark.parametrize("query", ["counts", "ranges"])
def test_codes_with_slashes_release_and_evaluate(capsys, tmp_path, query):
    """'A/B' > 'x' and 'A' > 'B/x' once had the same node id 'A/B/x', and evaluate crashed."""
    from hierdp_core.export import read_release

    path = tmp_path / "slashes.csv"
    pd.DataFrame({"a": ["A/B", "A", "C%", "root"], "b": ["x", "B/x", "y>z", "r"],
                  "age": [1, 2, 3, 4], "n": [3, 4, 5, 6]}).to_csv(path, index=False)
    out = tmp_path / "R"
    extra = ["--query", "ranges", "--attribute", "age", "--mechanism", "dawa"] \
        if query == "ranges" else []
    code, _, err = release(capsys, path, out, "--levels", "a,b", "--count-column", "n", *extra)
    assert code == 0, err
    table, _ = read_release(out)
    per_cell = table.groupby(["node_id"] + (["category"] if query == "ranges" else [])).size()
    assert per_cell.max() == 1 and table["node_id"].nunique() == 9
    assert {"A%2FB/x", "A/B%2Fx", "C%25/y%3Ez", "%72oot/r"} <= set(table["node_id"])
    code, printed, err = run(capsys, "evaluate", path, out, "--json")
    assert code == 0, err
    assert "Traceback" not in err and '"level"' in printed


def test_flow_codes_with_separators_release_and_evaluate(capsys, tmp_path):
    from hierdp_core.export import read_release

    path = tmp_path / "trips.csv"
    pd.DataFrame({"o": ["a>b", "a", "a/b", "a"], "d": ["a", "a>b", "a", "a/b"],
                  "n": [5, 6, 7, 8]}).to_csv(path, index=False)
    out = tmp_path / "R"
    code, _, err = run(capsys, "release", path, "--query", "flows", "--origin-levels", "o",
                       "--destination-levels", "d", "--count-column", "n",
                       "--mechanism", "tda-l2", "--invariant", "total", "--epsilon", 1,
                       "--delta", 1e-6, "--seed", 1, "--structure-from-data", "--out", out)
    assert code == 0, err
    table, _ = read_release(out)
    assert table.groupby("level")["node_id"].apply(lambda s: s.is_unique).all()
    pairs = [tuple(unescape_code(p) for p in i.split(">")) for i in table["node_id"]]
    assert pairs == list(zip(table["origin_id"], table["destination_id"], strict=True))
    code, _, err = run(capsys, "evaluate", path, out)
    assert code == 0, err


# ---- 6. counts whose sums would wrap 64 bits or lose their noise in float64 ------------------

BIG = 2**52
HUGE = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                     "o": ["a1", "a2", "b1"], "d": ["b1", "a1", "b1"], "size": [1, 2, 3],
                     "age": [1, 2, 3], "n": [BIG, BIG, 1]})


def test_exact_total_does_not_wrap():
    from hierdp_core.data.integers import exact_total, sum_by_cell

    assert exact_total(np.array([2**53 + 1, 2**60 + 3, 5])) == 2**53 + 2**60 + 9
    assert exact_total(np.full(3, 2**63 - 1)) == 3 * (2**63 - 1)
    assert sum_by_cell(np.array([1, 1, 0]), np.array([2**52 + 1, 2**51, 5]), 3).tolist() == [
        5, 2**52 + 2**51 + 1, 0]


@pytest.mark.parametrize("column", [[2**62, 2**62], [2**62 - 1, 2**62 - 1, 2],
                                    [str(2**52), str(2**52)], [2**53, 0]])
def test_validate_counts_refuses_a_total_above_2_53(column):
    from hierdp_core.data.loaders import validate_counts
    from hierdp_core.errors import InputError

    with pytest.raises(InputError, match=r"count column 'n' sums to [\d,]+, more than 2\^53"):
        validate_counts(pd.DataFrame({"n": column}), "n")
    with pytest.raises(InputError, match=r"^f.csv: count column 'n' sums to"):
        validate_counts(pd.DataFrame({"n": column}), "n", file_name="f.csv")
    assert validate_counts(pd.DataFrame({"n": [2**53 - 2, 1]}), "n").tolist() == [2**53 - 2, 1]
    with pytest.raises(InputError, match=r"too large for a 64-bit count: row 1"):
        validate_counts(pd.DataFrame({"n": pd.array([2**64 - 1], dtype="uint64")}), "n")


def test_every_query_refuses_a_total_above_2_53():
    from hierdp_core.errors import InputError
    from hierdp_core.flows.data import flow_data_from_leaves

    calls = [
        lambda: count_data_from_table(HUGE, ["state", "county"], count_column="n"),
        lambda: group_size_data_from_histograms(HUGE, ["state", "county"], "size", "n",
                                                max_size=4),
        lambda: flow_data_from_table(HUGE, ["o"], ["d"], "n"),
        lambda: range_data_from_table(HUGE, ["state"], "age", count_column="n"),
    ]
    for call in calls:
        with pytest.raises(InputError, match="more than 2\\^53 - 1"):
            call()
    geo = flow_data_from_table(HUGE.iloc[:1], ["o"], ["d"], "n").geography
    with pytest.raises(InputError, match="flow counts sums to"):  # leaves not from a table
        flow_data_from_leaves(geo, np.array([0, 0, 0]), np.array([1, 1, 1]),
                              np.array([2**62, 2**62, 2**62]))


def test_every_query_keeps_large_counts_exact():

    table = HUGE.assign(n=[2**51 + 1, 2**51 + 3, 7])
    counts = count_data_from_table(table, ["state", "county"], count_column="n")
    assert counts.node_totals().tolist()[:3] == [2**52 + 11, 2**52 + 4, 7]
    sizes = group_size_data_from_histograms(table.assign(size=1), ["state", "county"], "size",
                                            "n", max_size=2)
    assert sizes.leaf_counts[:, 1].tolist() == [2**51 + 1, 2**51 + 3, 7]
    flows = flow_data_from_table(table, ["o"], ["d"], "n")
    assert flows.n == 2**52 + 11 and sorted(flows.level_table(2)[1].tolist()) == [
        7, 2**51 + 1, 2**51 + 3]


def test_cli_refuses_counts_whose_noise_would_round_away(capsys, tmp_path):
    path = tmp_path / "big.csv"
    path.write_text(f"a,b,n\nA,x,{2**62}\nA,y,{2**62 - 1}\n")
    out = tmp_path / "out"
    code, _, err = release(capsys, path, out, "--levels", "a,b", "--count-column", "n")
    one_error(code, err, "count column 'n' sums to 9,223,372,036,854,775,807", "2^53 - 1")
    assert not out.exists()


def test_a_huge_attribute_range_in_the_data_is_refused_before_allocating():

    wide = ROWS.assign(age=[0, 1, 2, 10**15])
    with pytest.raises(SizeLimitError, match="'age' from 0 to 1,000,000,000,000,000"):
        range_data_from_table(wide, ["state"], "age", count_column="n")
    with pytest.raises(SizeLimitError, match="76 cells \\(2 units x 'age' from 3 to 40"):
        range_data_from_table(ROWS, ["state"], "age", count_column="n", max_cells=50)
    odd = range_data_from_table(ROWS.assign(age=[0.5, np.inf, 2.5, -1.5]), ["state"], "age",
                                count_column="n")
    assert odd.values == ("-1.5", "0.5", "2.5", "inf")

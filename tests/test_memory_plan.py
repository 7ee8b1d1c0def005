"""One memory estimate per release plan (issue 32): the plans' cells match the releases,
the largest value that fits is the largest, a plan over the limit is refused in one line
naming its parameter (library, command line, dashboard), and the default limit follows
the memory this process may use."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from conftest import run_cli as run
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.data.reshape import melt_wide
from hierdp_core.errors import MemoryLimitError
from hierdp_core.export import read_release
from hierdp_core.groupsizes.data import group_size_data_from_histograms
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.memory_of_data import plan_of_data
from hierdp_core.memory_plan import (
    counts_plan,
    default_max_memory,
    flows_plan,
    group_sizes_plan,
    parse_memory_size,
    ranges_plan,
)
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.queries.ranges import range_data_from_table

ROWS = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                     "sex": ["F", "M", "F"], "age": [3, 7, 40], "n": [5, 2, 4]})


@pytest.mark.parametrize(("text", "size"), [("4GB", 4 * 2**30), ("512 MB", 512 * 2**20),
                                            ("1.5g", int(1.5 * 2**30)), ("1000", 1000),
                                            ("2KiB", 2048)])
def test_memory_sizes_are_read(text, size):
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-5GB", "nan", "1e999GB", "4 parsecs", "GB", "0.1"])
def test_bad_memory_sizes_are_refused(text):
    with pytest.raises(ValueError, match="size"):
        parse_memory_size(text)


@settings(deadline=None)
@given(nodes=st.integers(1, 10**4), value=st.integers(1, 10**12),
       limit=st.integers(1, 2**45))
def test_the_largest_fit_fits_and_one_more_does_not(nodes, value, limit):
    for plan in (ranges_plan("dawa", nodes, (0, value - 1)),
                 group_sizes_plan("gs-noisy", nodes, value),
                 counts_plan("topdown", nodes, {"sex": value}),
                 flows_plan("vanilla-gauss", [1, nodes, value])):
        fit = plan.largest_fit(limit)
        assert 0 <= fit <= plan.value
        if fit > 0:
            assert plan.cells_at(fit) * plan.cell_bytes <= limit
        if fit < plan.value:
            assert plan.cells_at(fit + 1) * plan.cell_bytes > limit


def test_a_plan_over_the_limit_names_its_parameter_and_the_fit():
    plan = ranges_plan("identity", 3, (0, 100_000_000))
    with pytest.raises(MemoryLimitError) as caught:
        plan.check(2**30)
    text = str(caught.value)
    fit = plan.largest_fit(2**30)
    assert "--domain is too large" in text and f"a domain of {fit:,} values" in text
    assert "300,000,003 cells" in text and "\n" not in text
    plan.check(plan.bytes)  # exactly at the limit: allowed
    group_sizes_plan(None, 10, 7).check(None)  # small: allowed under the default


def _release(data, name, **kwargs):
    budget = PrivacyBudget.pure(1.0)
    return get_mechanism(name).release(data, budget, source=NoiseSource(seed=1), **kwargs)


def test_the_planned_cells_are_the_released_cells():
    counts = count_data_from_table(ROWS, ["state", "county"], count_column="n",
                                   category_columns=["sex"])
    ranges = range_data_from_table(ROWS, ["state", "county"], "age", count_column="n",
                                   domain=(0, 50))
    sizes = group_size_data_from_histograms(ROWS.assign(size=[1, 2, 3]), ["state"], "size",
                                            "n", max_size=9)
    for data, name in ((counts, "topdown"), (ranges, "identity"), (sizes, "gs-noisy")):
        release = _release(data, name)
        assert plan_of_data(data, name).cells == release.values.size == len(release.to_frame())


def test_the_library_refuses_a_huge_domain_before_making_its_values():
    with pytest.raises(MemoryLimitError, match="--domain is too large"):
        range_data_from_table(ROWS, ["state"], "age", count_column="n",
                              domain=(0, 10**15), max_cells=10**18)
    with pytest.raises(MemoryLimitError, match="6 units x a domain of 1,000,001 values"):
        range_data_from_table(ROWS, ["state", "county"], "age", count_column="n",
                              domain=(0, 10**6), max_memory=2**20)


def test_melting_too_wide_a_table_is_refused_before_the_long_form():
    wide = pd.DataFrame({"state": ["A"] * 4, **{f"age_{i}": [1] * 4 for i in range(5)}})
    assert len(melt_wide(wide, "age_*")) == 20
    huge = pd.DataFrame(0, index=range(20_000), columns=[f"c{i}" for i in range(3_000)])
    huge["state"] = "A"
    with pytest.raises(MemoryLimitError, match="--wide is too large"):
        melt_wide(huge.assign(**{f"id{i}": 0 for i in range(400)}), "c*")


def test_the_default_follows_an_address_space_limit():
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30));"
            "from hierdp_core.memory_plan import default_max_memory as d; print(d())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert int(out.stdout) == int(3 * 2**30 * 0.5) <= default_max_memory()


# ---- the command line -------------------------------------------------------------------
@pytest.fixture
def ages(tmp_path):
    path = tmp_path / "ages.csv"
    path.write_text("region,age,residents\nA,3,5\nB,7,2\n")
    return path


def _ranges(capsys, ages, out, *extra):
    return run(capsys, "release", ages, "--structure-from-data", "--levels", "region",
               "--query", "ranges", "--attribute", "age", "--count-column", "residents",
               "--mechanism", "identity", "--epsilon", 1, "--seed", 1, "--out", out, *extra)


def test_cli_refuses_over_max_memory_and_records_the_limit(capsys, ages, tmp_path):
    out = tmp_path / "out"
    code, _, err = _ranges(capsys, ages, out, "--domain", "0-100000", "--max-memory", "1MB")
    assert code == 2 and err.count("\n") == 1 and not out.exists()
    assert "above --max-memory 1.0 MB: --domain is too large; at most a domain of " in err
    code, _, err = _ranges(capsys, ages, out, "--domain", "0-100", "--max-memory", "64MB")
    assert code == 0, err
    assert read_release(out)[1]["input"]["max_memory"] == 64 * 2**20


@pytest.mark.parametrize("size", ["0", "lots", "-1GB"])
def test_cli_refuses_a_bad_max_memory(capsys, ages, tmp_path, size):
    code, _, err = _ranges(capsys, ages, tmp_path / "out", "--domain", "0-9",
                           "--max-memory", size)
    assert code == 2 and err.count("\n") == 1 and "--max-memory" in err


def test_cli_refuses_a_domain_read_from_the_data_over_the_limit(capsys, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("region,age,residents\nA,0,5\nB,3000000,2\n")
    code, _, err = run(capsys, "release", path, "--structure-from-data", "--levels", "region",
                       "--query", "ranges", "--attribute", "age", "--count-column",
                       "residents", "--mechanism", "identity", "--epsilon", 1, "--seed", 1,
                       "--max-memory", "100MB", "--out", tmp_path / "out")
    assert code == 2 and err.count("\n") == 1 and "--max-memory" in err, err


def test_cli_refuses_absurd_interval_replicates(capsys, ages, tmp_path):
    code, _, err = _ranges(capsys, ages, tmp_path / "out", "--domain", "0-9",
                           "--interval-replicates", 10**12)
    assert code == 2 and "--interval-replicates is too large" in err, err


def test_cli_names_the_parameter_of_each_query_kind(capsys, tmp_path):
    sizes = tmp_path / "sizes.csv"
    sizes.write_text("region,size,n\nA,1,3\nB,2,4\n")
    code, _, err = run(capsys, "release", sizes, "--query", "group-sizes", "--levels", "region",
                       "--size-column", "size", "--count-column", "n", "--max-size", 10**15,
                       "--structure-from-data", "--mechanism", "gs-noisy", "--epsilon", 1,
                       "--seed", 1, "--out", tmp_path / "o1")
    assert code == 2 and "--max-size is too large; at most --max-size " in err, err
    counts = tmp_path / "counts.csv"
    counts.write_text("region,sex,n\nA,F,3\nB,M,4\n")
    values = "sex=" + "|".join(f"v{i}" for i in range(100_000))
    code, _, err = run(capsys, "release", counts, "--levels", "region", "--count-column", "n",
                       "--category-values", values, "--structure-from-data", "--mechanism",
                       "topdown", "--epsilon", 1, "--seed", 1, "--max-memory", "10MB",
                       "--out", tmp_path / "o2")
    assert code == 2 and "--category-values is too large" in err, err

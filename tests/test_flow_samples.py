"""The bundled flight sample (npm vega-datasets 3.2.1): shipped files, nesting, trip records."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from hierdp_core.errors import InputError
from hierdp_core.flows import samples
from hierdp_core.flows.samples import airport_trip_records, load_airport_flows, load_airports

PAIR = ["o_state", "o_airport", "d_state", "d_airport"]
# exact for the shipped files (sample_data/flights/derivation_report.json)
EXPECTED = {"airports": 301, "states": 51, "pairs": 5348, "flights": 7_000_179}


@pytest.fixture(scope="module")
def flows():
    return load_airport_flows()


@pytest.fixture(scope="module")
def airports():
    return load_airports()


def test_columns_and_dtypes(flows, airports):
    assert list(flows.columns) == [*PAIR, "flights"]
    assert list(airports.columns) == ["airport", "name", "city", "state", "latitude",
                                      "longitude"]
    assert flows["flights"].dtype == "int64"
    for table, columns in ((flows, PAIR), (airports, ["airport", "name", "city", "state"])):
        for col in columns:
            assert pd.api.types.is_string_dtype(table[col]), col
            assert table[col].notna().all(), col
    assert airports[["latitude", "longitude"]].dtypes.eq("float64").all()


def test_counts_match_the_derivation_report(flows, airports):
    report = json.loads((samples.FLIGHTS_DIR / "derivation_report.json").read_text())
    sample = report["sample"]
    assert {k: sample[k] for k in EXPECTED} == EXPECTED
    assert len(airports) == EXPECTED["airports"]
    assert airports["state"].nunique() == EXPECTED["states"]
    assert len(flows) == EXPECTED["pairs"]
    assert flows["flights"].sum() == EXPECTED["flights"]
    excluded = report["excluded"]
    assert report["source"]["flights"] == EXPECTED["flights"] + excluded["flights"]
    assert report["source"]["pairs"] == EXPECTED["pairs"] + excluded["pairs"]


def test_flights_positive_pairs_unique_and_sorted(flows, airports):
    assert (flows["flights"] > 0).all()
    assert not flows.duplicated(["o_airport", "d_airport"]).any()
    assert flows.equals(flows.sort_values(PAIR, ignore_index=True))
    assert airports.equals(airports.sort_values(["state", "airport"], ignore_index=True))


def test_airports_are_the_flow_ends_with_a_state(flows, airports):
    assert airports["airport"].is_unique
    assert set(airports["airport"]) == set(flows["o_airport"]) | set(flows["d_airport"])
    assert airports["state"].str.fullmatch("[A-Z]{2}").all()
    assert airports["airport"].str.fullmatch("[A-Z0-9]{3}").all()


def test_each_airport_nests_in_one_state(flows, airports):
    state_of = airports.set_index("airport")["state"]
    for end in ("o", "d"):
        ends = flows[[f"{end}_airport", f"{end}_state"]].drop_duplicates()
        assert ends[f"{end}_airport"].is_unique
        assert (ends[f"{end}_airport"].map(state_of) == ends[f"{end}_state"]).all()


def test_loaders_return_fresh_copies():
    first = load_airport_flows()
    first["flights"] = 0
    assert (load_airport_flows()["flights"] > 0).all()
    assert load_airports() is not load_airports()


def test_trip_records_expand_every_flight(flows):
    trips = airport_trip_records()
    assert list(trips.columns) == PAIR
    assert len(trips) == flows["flights"].sum()
    per_pair = trips.groupby(PAIR, sort=False).size().to_numpy()
    assert (per_pair == flows["flights"].to_numpy()).all()


def test_trip_records_subsample(flows):
    trips = airport_trip_records(max_rows=20_000, seed=3)
    assert list(trips.columns) == PAIR
    assert len(trips) == 20_000
    assert trips.equals(airport_trip_records(max_rows=20_000, seed=3))
    assert not trips.equals(airport_trip_records(max_rows=20_000, seed=4))
    counts = trips.value_counts(PAIR).rename("drawn").reset_index()
    merged = counts.merge(flows, on=PAIR, how="left", validate="one_to_one")
    assert (merged["drawn"] <= merged["flights"]).all()
    assert len(airport_trip_records(max_rows=0)) == 0


def test_negative_max_rows_is_an_input_error():
    with pytest.raises(InputError, match="max_rows"):
        airport_trip_records(max_rows=-1)


def test_missing_files_are_a_clear_error(monkeypatch, tmp_path):
    samples._read.cache_clear()
    monkeypatch.setattr(samples, "FLIGHTS_DIR", tmp_path)
    try:
        with pytest.raises(InputError, match="airport_flows.parquet is missing"):
            load_airport_flows()
        with pytest.raises(InputError, match="airports.parquet is missing"):
            load_airports()
    finally:
        samples._read.cache_clear()

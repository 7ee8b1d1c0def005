"""Bundled origin/destination sample: flights between US airports in 2008.

Geography at both ends: state > airport (two-letter state codes as in the source, including
the territories PR and VI; airports by IATA code). One record is one flight.

Source: npm package ``vega-datasets`` 3.2.1 (package licence BSD-3-Clause, author Vega),
files ``data/flights-airport.csv`` (US Bureau of Transportation Statistics) and
``data/airports.csv`` (data.gov), both marked as US government works in the package's
``datapackage.json``. Derived by ``scripts/derive_flight_sample.py`` into
``sample_data/flights/``; what was derived and excluded is in ``sample_data/README.md``.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from hierdp_core.data.samples import SAMPLE_DATA_DIR
from hierdp_core.errors import InputError

FLIGHTS_DIR = SAMPLE_DATA_DIR / "flights"


@functools.lru_cache(maxsize=2)
def _read(name: str) -> pd.DataFrame:
    path = FLIGHTS_DIR / name
    if not path.is_file():
        raise InputError(f"flight sample file {path} is missing; it ships with the repository "
                         "(re-create it with `python scripts/derive_flight_sample.py`)")
    return pd.read_parquet(path)


def load_airport_flows() -> pd.DataFrame:
    """Flights per airport pair: columns o_state, o_airport, d_state, d_airport, flights
    (int64 > 0), one row per pair, sorted. A fresh copy on every call."""
    return _read("airport_flows.parquet").copy()


def load_airports() -> pd.DataFrame:
    """Every airport of the flows: columns airport, name, city, state, latitude,
    longitude, one row per airport, sorted by state and airport. A fresh copy."""
    return _read("airports.parquet").copy()


def airport_trip_records(max_rows: int | None = None, seed: int = 0) -> pd.DataFrame:
    """One row per flight: columns o_state, o_airport, d_state, d_airport, in the order of
    `load_airport_flows`. With ``max_rows`` below the number of flights, a uniform random
    subset of ``max_rows`` flights (without replacement), the same for the same ``seed``."""
    flows = load_airport_flows()
    counts = flows["flights"].to_numpy()
    if max_rows is not None:
        if max_rows < 0:
            raise InputError(f"max_rows must be >= 0, got {max_rows}")
        if max_rows < counts.sum():
            rng = np.random.default_rng(seed)
            counts = rng.multivariate_hypergeometric(counts, max_rows)
    rows = np.repeat(np.arange(len(flows)), counts)
    return flows.drop(columns="flights").iloc[rows].reset_index(drop=True)

#!/usr/bin/env python
"""Derive the origin/destination flight sample in ``sample_data/flights/`` from npm
``vega-datasets``.

Re-runnable end to end::

    python scripts/derive_flight_sample.py

Source: npm ``vega-datasets`` (pinned by version and sha512 integrity, see ``VERSION`` and
``INTEGRITY``), package licence BSD-3-Clause. Its ``data/flights-airport.csv`` (origin,
destination, count: flights between US airports in 2008, US Bureau of Transportation
Statistics) and ``data/airports.csv`` (iata, name, city, state, country, latitude,
longitude) become:

- ``sample_data/flights/airport_flows.parquet``: ``o_state``, ``o_airport``, ``d_state``,
  ``d_airport``, int64 ``flights``; one row per airport pair with flights > 0, sorted.
- ``sample_data/flights/airports.parquet``: ``airport``, ``name``, ``city``, ``state``,
  ``latitude``, ``longitude`` for every airport of the flows table, sorted.
- ``sample_data/flights/derivation_report.json``: package, hash, dataset descriptions and
  licences, counts, and the pairs excluded because an end is not in ``airports.csv`` or has
  no state there (``NA`` in the source).

The tarball is fetched with ``npm pack`` into a temporary directory and read in memory.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "sample_data" / "flights"

PACKAGE = "vega-datasets"
VERSION = "3.2.1"
# `npm view vega-datasets@3.2.1 dist.integrity`
INTEGRITY = ("sha512-lTSwZA6yq6qSU2YZm+6bqILiIvTPPxn4itir7jPGFmHIdPvUfQ9pCzzcrklYywMJgLUbaIeSk"
             "ZQdiJd6wBxPug==")
FLIGHTS_CSV = "data/flights-airport.csv"
AIRPORTS_CSV = "data/airports.csv"
PARQUET = {"index": False, "compression": "zstd", "compression_level": 19}


def fetch(tmp: Path) -> Path:
    """The package tarball in ``tmp``, checked against the pinned sha512 integrity."""
    subprocess.run(["npm", "pack", f"{PACKAGE}@{VERSION}", "--silent"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL)
    tarball = tmp / f"{PACKAGE}-{VERSION}.tgz"
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    integrity = "sha512-" + base64.b64encode(digest).decode("ascii")
    if integrity != INTEGRITY:
        raise SystemExit(f"error: {tarball.name} has integrity {integrity}, expected {INTEGRITY}")
    print(f"npm {PACKAGE}@{VERSION}: {tarball.name} integrity ok", flush=True)
    return tarball


def read_member(tar: tarfile.TarFile, name: str) -> bytes:
    return tar.extractfile(f"package/{name}").read()


def read_tables(tarball: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """flights-airport.csv, airports.csv (state ``NA`` or empty = missing) and the
    provenance of both files from package.json and datapackage.json."""
    with tarfile.open(tarball) as tar:
        package = json.loads(read_member(tar, "package.json"))
        datapackage = json.loads(read_member(tar, "datapackage.json"))
        flights = pd.read_csv(io.BytesIO(read_member(tar, FLIGHTS_CSV)), keep_default_na=False,
                              dtype={"origin": str, "destination": str, "count": "int64"})
        airports = pd.read_csv(io.BytesIO(read_member(tar, AIRPORTS_CSV)),
                               keep_default_na=False, na_values={"state": ["", "NA"]},
                               dtype={"iata": str, "name": str, "city": str, "state": str,
                                      "country": str})
    if package["version"] != VERSION:
        raise SystemExit(f"error: package.json has version {package['version']}")
    resources = {r["path"]: r for r in datapackage["resources"]}
    provenance = {
        "package": f"npm {PACKAGE}@{VERSION}",
        "integrity": INTEGRITY,
        "package_licence": package["license"],
        "package_author": package["author"],
        "datapackage_note": datapackage["description"].strip(),
        "files": {name: {key: resources[Path(name).name][key]
                         for key in ("description", "licenses", "sources", "hash")}
                  for name in (FLIGHTS_CSV, AIRPORTS_CSV)},
    }
    return flights, airports, provenance


def derive(flights: pd.DataFrame, airports: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                   pd.DataFrame, dict]:
    """The flows and airport tables and the report of what was excluded."""
    if (flights["count"] < 0).any():
        raise SystemExit(f"error: {FLIGHTS_CSV} has negative counts")
    if flights.duplicated(["origin", "destination"]).any():
        raise SystemExit(f"error: {FLIGHTS_CSV} has repeated origin/destination pairs")
    if airports["iata"].duplicated().any():
        raise SystemExit(f"error: {AIRPORTS_CSV} has repeated IATA codes")
    zero = flights["count"] == 0
    flights = flights[~zero]
    state_of = airports.dropna(subset=["state"]).set_index("iata")["state"]
    known = airports.set_index("iata")
    ends = pd.concat([flights["origin"], flights["destination"]]).unique()
    unusable = sorted(a for a in ends if a not in state_of.index)
    bad = flights["origin"].isin(unusable) | flights["destination"].isin(unusable)

    def touching(code: str) -> dict:
        rows = flights[(flights["origin"] == code) | (flights["destination"] == code)]
        entry = {"airport": code, "pairs": len(rows), "flights": int(rows["count"].sum())}
        if code in known.index:
            entry["name"] = known.at[code, "name"]
            entry["reason"] = f"no state in {AIRPORTS_CSV}"
        else:
            entry["reason"] = f"not in {AIRPORTS_CSV}"
        return entry

    kept = flights[~bad]
    flows = pd.DataFrame({
        "o_state": kept["origin"].map(state_of), "o_airport": kept["origin"],
        "d_state": kept["destination"].map(state_of), "d_airport": kept["destination"],
        "flights": kept["count"].astype("int64"),
    }).sort_values(["o_state", "o_airport", "d_state", "d_airport"], ignore_index=True)
    codes = sorted(set(flows["o_airport"]) | set(flows["d_airport"]))
    table = (known.loc[codes, ["name", "city", "state", "latitude", "longitude"]]
             .rename_axis("airport").reset_index()
             .sort_values(["state", "airport"], ignore_index=True))
    report = {
        "source": {"pairs": len(flights) + int(zero.sum()), "pairs_with_zero_flights_dropped":
                   int(zero.sum()), "flights": int(flights["count"].sum()),
                   "airports": len(ends), "airports_csv_rows": len(airports)},
        "excluded": {
            "rule": "pairs with an origin or destination that is not in airports.csv or has "
                    "no state there (NA) are left out of both tables",
            "airports": [touching(code) for code in unusable],
            "pairs": int(bad.sum()),
            "flights": int(flights.loc[bad, "count"].sum()),
        },
        "sample": {
            "airports": len(table), "states": int(table["state"].nunique()),
            "state_codes": sorted(table["state"].unique()), "pairs": len(flows),
            "pairs_within_a_state": int((flows["o_state"] == flows["d_state"]).sum()),
            "flights": int(flows["flights"].sum()),
        },
    }
    return flows, table, report


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hierdp-flights-") as tmpname:
        flights, airports, provenance = read_tables(fetch(Path(tmpname)))
    flows, table, report = derive(flights, airports)
    OUT.mkdir(parents=True, exist_ok=True)
    flows.to_parquet(OUT / "airport_flows.parquet", **PARQUET)
    table.to_parquet(OUT / "airports.parquet", **PARQUET)
    report = {"provenance": provenance, **report}
    (OUT / "derivation_report.json").write_text(
        json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    for path in sorted(OUT.iterdir()):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size:,} B")
    print(json.dumps({k: report[k] for k in ("excluded", "sample")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

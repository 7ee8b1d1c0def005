"""A publishable manifest tells nothing a neighbouring dataset would change: the secure
manifests of two neighbouring datasets (one trip moved onto an empty O/D pair; one person
added) are equal in every field, but the fields that are outputs of noise, time or the keyed
fingerprint (`NOISE_OUTPUTS`). The stability histogram's log counted the non-zero leaf pairs
it drew noise on, a number the moved trip changes by exactly 1."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from hierdp_core.errors import MechanismError
from hierdp_core.export import MANIFEST
from hierdp_core.privacy.noise_source import SUBSET_DRAWN
from hierdp_core.privacy.opendp_noise import opendp_privacy_loss
from hierdp_core.privacy.samplers import Laplace, NoiseSource

GEO = pd.DataFrame({"state": ["A"] * 3 + ["B"] * 3,
                    "county": ["a1", "a2", "a3", "b1", "b2", "b3"]})
PEOPLE = pd.DataFrame(
    [("A", "a1", "h1", 3), ("A", "a1", "h1", 40), ("A", "a2", "h2", 7), ("A", "a3", "h3", 15),
     ("A", "a3", "h4", 61), ("B", "b1", "h5", 22), ("B", "b1", "h5", 23), ("B", "b2", "h6", 5),
     ("B", "b3", "h7", 80), ("B", "b3", "h8", 31)],
    columns=["state", "county", "household", "age"])
#: one person added, in a household that exists, at an age nobody had
PEOPLE_ADDED = pd.concat([PEOPLE, pd.DataFrame([("A", "a2", "h2", 99)],
                                               columns=PEOPLE.columns)])
TRIPS = pd.DataFrame([("A", "a1", "B", "b1")] * 6 + [("A", "a2", "B", "b2")] * 3
                     + [("B", "b1", "A", "a1")] * 2,
                     columns=["o_state", "o_county", "d_state", "d_county"])
#: one a1 -> b1 trip moved onto the pair b3 -> a3, empty before
TRIPS_MOVED = pd.concat([TRIPS.iloc[1:], pd.DataFrame([("B", "b3", "A", "a3")],
                                                      columns=TRIPS.columns)])

#: fields that are outputs of the noise (the released cells counted by the table rules, the
#: released O/D nodes, an interval method's "inverted near 0" when released values are, the
#: error the intervals' re-runs estimate from the released values (and whether a level's
#: cells share a bucket of DAWA's noisy partition, which decides if it is estimated); the
#: cells measured below a noisy partition or released parents: `KINDS`), of the clock, the
#: seal, the files' hashes, the input's fingerprint (keyed by the publisher's secret) and the
#: release's entry in the budget ledger (a random id)
NOISE_OUTPUTS = (r"^created_utc$", r"^checksum\b", r"^signature\.value$", r"^files\.",
                 r"^input\.fingerprint\.value$", r"^table_rules\.", r"^tree\.released_nodes",
                 r"^intervals\.method\.", r"^intervals\.estimated_error\.(by_level|not_est)",
                 r"^randomness\.budget_ledger_entry$")
PEOPLE_FLAGS = ("--levels", "state,county", "--geography", "geo.csv")
FLOW_FLAGS = ("--query", "flows", "--origin-levels", "o_state,o_county",
              "--destination-levels", "d_state,d_county", "--geography", "geo.csv")
#: (query kind, mechanism, input, its neighbour, flags, measurements whose cells the noise
#: decides: DAWA's by its noisy partition, InfTDA's below level 1 by the released parents)
KINDS = {
    "counts-topdown": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--mechanism", "topdown", "--epsilon", "1"), ()),
    "counts-raw-laplace": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--mechanism", "raw-laplace", "--epsilon", "1"), ()),
    "group-sizes-topdown": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--query", "group-sizes", "--group-column", "household", "--max-size", "6",
        "--groups", "groups.csv", "--mechanism", "gs-topdown", "--epsilon", "1",
        "--invariant", "total"), ()),
    "group-sizes-kuo": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--query", "group-sizes", "--group-column", "household", "--max-size", "6",
        "--groups", "groups.csv", "--mechanism", "gs-kuo-hierarchical", "--epsilon", "1",
        "--invariant", "groups"), ()),
    "flows-stability-histogram": ("trips.csv", TRIPS_MOVED, FLOW_FLAGS + (
        "--mechanism", "stability-histogram", "--epsilon", "1", "--delta", "1e-6"), ()),
    "flows-inftda": ("trips.csv", TRIPS_MOVED, FLOW_FLAGS + (
        "--mechanism", "inftda", "--rho", "0.5", "--invariant", "total"),
        (r"flows: level [2-9]",)),
    "flows-vanilla-gauss": ("trips.csv", TRIPS_MOVED, FLOW_FLAGS + (
        "--mechanism", "vanilla-gauss", "--rho", "0.5"), ()),
    "ranges-dawa": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--query", "ranges", "--attribute", "age", "--domain", "0-99", "--mechanism", "dawa",
        "--epsilon", "1"), (r"^ranges: ",)),
    "ranges-identity": ("people.csv", PEOPLE_ADDED, PEOPLE_FLAGS + (
        "--query", "ranges", "--attribute", "age", "--domain", "0-99", "--mechanism",
        "identity", "--epsilon", "1"), ()),
}


def flat(value, path=""):
    """``{dotted path: leaf value}`` of a JSON value (list items as ``[i]``)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items()
                for k, v in flat(item, f"{path}.{key}" if path else key).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value)
                for k, v in flat(item, f"{path}[{i}]").items()}
    return {path: value}


def public_fields(manifest: dict, noisy_cells: tuple[str, ...]) -> dict:
    """The manifest's fields but `NOISE_OUTPUTS` and the ``cells`` of the measurements
    matching ``noisy_cells``."""
    measured = manifest["randomness"].get("measurements", [])
    skip = {f"randomness.measurements[{i}].cells" for i, m in enumerate(measured)
            if any(re.search(p, m["measurement"]) for p in noisy_cells)}
    return {k: v for k, v in flat(manifest).items()
            if k not in skip and not any(re.search(p, k) for p in NOISE_OUTPUTS)}


def _secure_manifest(capsys, folder, name: str, table: pd.DataFrame, flags) -> dict:
    folder.mkdir()
    GEO.to_csv(folder / "geo.csv", index=False)
    table.to_csv(folder / name, index=False)
    if "household" in table:
        groups = table.groupby(["state", "county"]).household.nunique().rename("groups")
        groups.reset_index().to_csv(folder / "groups.csv", index=False)
    argv = [a if not a.endswith(".csv") else folder / a for a in flags]
    code, _, err = run_cli(capsys, "release", folder / name, *argv, "--interval-replicates",
                           "2", "--budget-total", "100" if "--rho" not in flags else "rho=100",
                           "--out", folder / "out")
    assert code == 0, err
    manifest = json.loads((folder / "out" / MANIFEST).read_text())
    assert manifest["publishable"] is True, manifest["not_publishable_because"]
    return manifest


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_neighbouring_datasets_give_the_same_public_manifest_fields(capsys, tmp_path, kind):
    name, neighbour, flags, noisy_cells = KINDS[kind]
    tables = {"people.csv": PEOPLE, "trips.csv": TRIPS}
    one, other = (public_fields(_secure_manifest(capsys, tmp_path / d, name, t, flags),
                                noisy_cells)
                  for d, t in (("d", tables[name]), ("d2", neighbour)))
    differ = {k: (one.get(k), other.get(k)) for k in one.keys() | other.keys()
              if one.get(k) != other.get(k)}
    assert not differ, differ


def test_a_measurement_of_the_non_zero_cells_logs_the_public_cells_and_their_loss():
    """Noise drawn on a data-dependent subset of a million public cells: the log and
    OpenDP's privacy map (whose float rounding term grows with the vector's length) read the
    million, never the 3 values noised; more values than public cells are refused."""
    source = NoiseSource(secure=True, backend="opendp")
    Laplace(2.0).apply(np.array([4.0, 1.0, 9.0]), source, sensitivity=2.0, budget=1.0,
                       label="leaves", cells=10**6)
    (entry,) = source.measurements
    assert entry["cells"] == 10**6 and entry["drawn_on"] == SUBSET_DRAWN
    assert entry["privacy_loss"] == opendp_privacy_loss("laplace", 2.0, False, 2.0, 10**6)
    assert entry["privacy_loss"] > opendp_privacy_loss("laplace", 2.0, False, 2.0, 3)
    exact = NoiseSource(secure=True)  # hierdp: exact noise, its loss from the rational alone
    Laplace(2.0).apply(np.array([4.0, 1.0, 9.0]), exact, sensitivity=2.0, budget=1.0,
                       label="leaves", cells=10**6)
    (entry,) = exact.measurements
    assert (entry["cells"], entry["drawn_on"], entry["privacy_loss"]) == (10**6, SUBSET_DRAWN, 1.0)
    with pytest.raises(MechanismError, match="more than the 2 public cells"):
        Laplace(2.0).apply(np.zeros(3), source, sensitivity=2.0, budget=1.0, cells=2)

"""DAWA against every data-independent baseline inside a hierarchy, with bands (issue 17).

Real histograms, each released at every level of its geography through the registry (the
same path as ``hierdp release --query ranges``; uniform split of epsilon over the levels;
consistency over the workload's atoms):

* ``italy-ages``: the bundled Italian residents by single year of age 0..100, region >
  province > municipality (7,901 units; needs no external data);
* ``us-tract-ages``: the ACS age histograms of the 6,642 tracts of 8 US states (18 five-year
  groups, counts = total population x the published percentage, rounded), state > county >
  tract, from ``../shared/data/counts/tract_acs_8states.csv.gz``;
* ``oregon-taz-income``, ``oregon-taz-size``: households by income class (4) and by size
  (1, 2, 3, 4+) in 930 traffic zones of Oregon, tract > zone, from
  ``../shared/data/households/calm_oregon_taz_household_controls.csv``.

The shared files are skipped (and listed under ``skipped``) when absent. Workloads: the user
bands of each histogram (e.g. ages 0-17, 18-64, 65-100) and all prefixes. Error: the mean
absolute error per workload query at every level (``range_metrics``), averaged over
``--runs`` seeded releases, with its standard error over the runs. Verdict per histogram,
workload and epsilon: ``within_10pct`` when DAWA's error at every level is at most 1.1 x the
best baseline's (identity, h2, hb, privelet, greedy-h) at that level;
``within_10pct_up_to_noise`` when the excess over 1.1 x the best is at most two standard
errors of the difference at every level (levels of one or a few units, where every
method's error is a handful of noise draws, cannot tell 10% apart in a few runs).

    python benchmarks/bench_dawa_hierarchy.py [--epsilons 0.1,1] [--runs 10] [--seed 0]
        [--datasets italy-ages,us-tract-ages,oregon-taz-income,oregon-taz-size]
        [--workloads bands,prefix] [--top 0]

``--top K`` releases only the top K levels (the total included), each with its share of the
full hierarchy's epsilon and, for DAWA, no partition (as above the finest level): their errors
are those of the full release (TopDown runs from the root down; same seeds, same draws), so
many runs on the upper levels are cheap. ``ratio_se`` is the standard error of the ratio
(delta method, releases paired by seed).

Prints one JSON object: ``results`` dataset -> workload -> epsilon -> {errors: method ->
level -> mean error, se: same, ratio: level -> DAWA / best baseline, best: level ->
method, within_10pct}, and ``setup``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from machine import machine_info

from hierdp_core.data.samples import load_sample
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.evaluation import range_metrics
from hierdp_core.ranges.workloads import bands, prefix_ranges

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACTS = SHARED / "counts" / "tract_acs_8states.csv.gz"
OREGON = SHARED / "households" / "calm_oregon_taz_household_controls.csv"
BASELINES = ("greedy-h", "identity", "h2", "hb", "privelet")
TOLERANCE = 1.10


def italy_ages(depth: int):
    table = load_sample("italy-municipalities")
    data = range_data_from_table(table, ["region", "province", "municipality"][:depth], "age",
                                 count_column="residents", domain=(0, 100))
    return data, "0-17,18-64,65-100"


def us_tract_ages(depth: int):
    tracts = pd.read_csv(TRACTS, dtype={"GEOID": str})
    groups = [c for c in tracts.columns
              if c.endswith("Years - Total") or c == "85 Years and Over - Total"]
    counts = np.rint(tracts[groups].to_numpy() * tracts[["Total Population"]].to_numpy() / 100)
    long = pd.DataFrame({
        "state": np.repeat(tracts["GEOID"].str[:2].to_numpy(), len(groups)),
        "county": np.repeat(tracts["GEOID"].str[:5].to_numpy(), len(groups)),
        "tract": np.repeat(tracts["GEOID"].to_numpy(), len(groups)),
        "age_group": np.tile(np.arange(len(groups)), len(tracts)),
        "people": counts.ravel().astype(np.int64)})
    data = range_data_from_table(long, ["state", "county", "tract"][:depth], "age_group",
                                 count_column="people", domain=(0, len(groups) - 1))
    return data, "0-3,4-12,13-17"  # under 20, 20-64, 65 and over


def oregon(prefix: str):
    def load(depth: int):
        zones = pd.read_csv(OREGON, dtype={"TRACTGEOID": str, "TAZ": str})
        cols = [f"{prefix}{i}" for i in range(1, 5)]
        long = zones.melt(id_vars=["TRACTGEOID", "TAZ"], value_vars=cols, var_name="cls",
                          value_name="households")
        long["cls"] = long["cls"].str[-1].astype(int)
        data = range_data_from_table(long, ["TRACTGEOID", "TAZ"][:depth], "cls",
                                     count_column="households", domain=(1, 4))
        return data, "1-2,3-4"
    return load


#: name -> (loader of the histogram with its first ``depth`` geographic levels, the shared
#: file it needs, the number of geographic levels below the total)
DATASETS = {"italy-ages": (italy_ages, None, 3), "us-tract-ages": (us_tract_ages, TRACTS, 3),
            "oregon-taz-income": (oregon("HHINC"), OREGON, 2),
            "oregon-taz-size": (oregon("HHSIZE"), OREGON, 2)}


@dataclass(frozen=True)
class Top:
    """The top ``levels`` of a hierarchy of ``full`` levels, released as inside the full one:
    each level keeps its share epsilon / full, and DAWA partitions none of them (as at the
    levels above the finest, the default ``partition_from``). The errors of these levels do
    not depend on the levels below (TopDown runs from the root down), so many runs are cheap."""

    levels: int
    full: int

    def epsilon(self, epsilon: float) -> float:
        return epsilon * self.levels / self.full

    def params(self, method: str) -> dict:
        truncated = method == "dawa" and self.levels < self.full
        return {"partition_from": self.full - 1} if truncated else {}


def level_errors(data, method: str, epsilon: float, runs: int, seed: int,
                 top: Top) -> np.ndarray:
    """Mean error per query at every level, one row per seeded release: (runs, levels)."""
    mechanism = get_mechanism(method)
    rows = []
    for run in range(runs):
        release = mechanism.release(data, PrivacyBudget.pure(top.epsilon(epsilon)),
                                    source=NoiseSource(seed=seed + run), **top.params(method))
        rows.append(range_metrics(data, release.values)["mean_query_error"].to_numpy())
    return np.array(rows)


def ratio_se(dawa: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Standard error of r = mean(dawa) / mean(best) per level, from the per-run errors
    (runs, levels) of releases paired by seed (delta method: the spread of dawa - r best over
    the runs, which counts shared draws, e.g. DAWA is greedy-h where it makes no partition)."""
    runs = len(dawa)
    if runs < 2:
        return np.zeros(dawa.shape[1])
    ratio = dawa.mean(axis=0) / best.mean(axis=0)
    return (dawa - ratio * best).std(axis=0, ddof=1) / np.sqrt(runs) / best.mean(axis=0)


def compare(data, epsilon: float, runs: int, seed: int, top: Top) -> dict:
    levels = list(data.hierarchy.level_names)
    raw = {m: level_errors(data, m, epsilon, runs, seed, top) for m in ("dawa", *BASELINES)}
    mean = {m: e.mean(axis=0) for m, e in raw.items()}
    se = {m: e.std(axis=0, ddof=1) / np.sqrt(runs) if runs > 1 else 0 * e[0]
          for m, e in raw.items()}
    table = np.array([mean[m] for m in BASELINES])
    best = table.min(axis=0)
    ratio = mean["dawa"] / np.where(best > 0, best, np.nan)
    best_se = np.array([se[BASELINES[i]][j] for j, i in enumerate(table.argmin(axis=0))])
    excess = mean["dawa"] - TOLERANCE * best - 2 * np.hypot(se["dawa"], best_se)
    best_raw = np.stack([raw[BASELINES[i]][:, j] for j, i in enumerate(table.argmin(axis=0))],
                        axis=1)
    return {"errors": {m: dict(zip(levels, v.round(3).tolist(), strict=True))
                       for m, v in mean.items()},
            "se": {m: dict(zip(levels, np.round(v, 3).tolist(), strict=True))
                   for m, v in se.items()},
            "best": dict(zip(levels, [BASELINES[i] for i in table.argmin(axis=0)],
                             strict=True)),
            "ratio": dict(zip(levels, np.round(ratio, 3).tolist(), strict=True)),
            "ratio_se": dict(zip(levels, np.round(ratio_se(raw["dawa"], best_raw), 4).tolist(),
                                 strict=True)),
            "within_10pct": bool(np.nanmax(ratio) <= TOLERANCE),
            "within_10pct_up_to_noise": bool((excess <= 0).all())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workloads", default="bands,prefix",
                        help="of bands, prefix")
    parser.add_argument("--top", type=int, default=0,
                        help="release only the top TOP levels (total included), each with "
                        "its share of the full hierarchy's epsilon: many runs on the upper "
                        "levels at little cost; 0 = every level")
    args = parser.parse_args()
    if args.top == 1:
        parser.error("--top: at least 2 levels (the total and the level below it)")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    out = {"setup": {"epsilons": epsilons, "runs": args.runs, "seed": args.seed,
                     "baselines": list(BASELINES), "tolerance": TOLERANCE,
                     "split": "uniform over the levels", "top": args.top or "all",
                     "workloads": args.workloads, "machine": machine_info()},
           "results": {}, "skipped": []}
    for name in [d for d in args.datasets.split(",") if d]:
        load, needs, depth = DATASETS[name]
        if needs is not None and not needs.exists():
            out["skipped"].append(f"{name}: {needs} is absent")
            continue
        top = Top(min(args.top or depth + 1, depth + 1), depth + 1)
        data, band_text = load(top.levels - 1)
        workloads = {f"bands {band_text}": bands(data.values, band_text),
                     "prefix": prefix_ranges(len(data.values))}
        chosen = args.workloads.split(",")
        out["results"][name] = {
            label: {str(eps): compare(data.with_workload(w), eps, args.runs, args.seed, top)
                    for eps in epsilons}
            for label, w in workloads.items() if label.split()[0] in chosen}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

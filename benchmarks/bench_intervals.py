"""Intervals on every query kind (issue 17, item 1): their coverage per level and per
population bin, and the seconds one interval computation takes.

Counts: for every data set (the bundled count samples; with ``/work/shared/data`` present,
also US counties by sex x non-Hispanic-White-alone (2012 estimates) and the tracts of 8
states by sex (ACS 2011-2015), skipped when absent) and every counts mechanism
configuration, seeded releases of about ``--cells`` cells are made at once (copies of the
table as category columns, which the count mechanisms treat independently, as the privacy
audit does) and `count_intervals` computed on them; ``seconds`` times `count_intervals` on
one release (not batched).

Group sizes, flows, ranges (`RERUN_CONFIGS`, on `rerun_datasets`): ``--runs`` seeded
releases per configuration, each with its default intervals (`intervals_for`, a bootstrap
re-running the mechanism, replicates by time); ``seconds`` is their mean time.

Coverage is the share of released cells (a flow release's released nodes) whose true value
lies in [lower, upper], per level and, below the root, per quartile bin of the level's true
values (public bins would do: they only group the cells). A range release whose cells get
a share-of-band or share-of-bucket bound also reports ``group_upper_ends``: how often the
upper end a band's or bucket's cells share holds the group's true total. Each rerun
configuration lists its levels' ``calibrated`` flags (`hierdp_core.intervals.calibration`)
and ``under_and_not_flagged`` lists every level under-covering beyond the target without
a ``calibrated: false`` flag (should be empty).

Prints ONE JSON object. Example::

    python benchmarks/bench_intervals.py --kinds counts,flows --runs 10
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from machine import machine_info

from hierdp_core.data.samples import SAMPLES
from hierdp_core.intervals import bootstrap_replicates, count_intervals, intervals_for
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData, count_data_from_table

SHARED = Path("/work/shared/data/counts")
TARGET = 0.03  # points of coverage from nominal
#: name -> (mechanism, parameters, budget kind)
CONFIGS = {
    "raw-laplace": ("raw-laplace", {}, "epsilon"),
    "raw-geometric": ("raw-geometric", {}, "epsilon"),
    "raw-discrete-gaussian": ("raw-discrete-gaussian", {}, "rho"),
    "least-squares geometric": ("least-squares", {}, "epsilon"),
    "least-squares gaussian": ("least-squares", {"noise": "gaussian"}, "rho"),
    "topdown geometric": ("topdown", {}, "epsilon"),
    "topdown discrete-gaussian": ("topdown", {}, "rho"),
}


def sample_data(name: str) -> CountData:
    s = SAMPLES[name]
    return count_data_from_table(s.loader(), list(s.levels), count_column=s.count_column,
                                 category_columns=s.category_columns)


def census_counties() -> CountData:
    """State > county, sex x (non-Hispanic White alone, other), 2012 estimates."""
    t = pd.read_csv(SHARED / "county_pop_sex_race_2012_plotly_minoritymajority.csv",
                    dtype={"FIPS": str})
    cells = {("M", "nhwa"): t["NHWA_MALE"], ("F", "nhwa"): t["NHWA_FEMALE"],
             ("M", "other"): t["TOT_MALE"] - t["NHWA_MALE"],
             ("F", "other"): t["TOT_FEMALE"] - t["NHWA_FEMALE"]}
    long = pd.concat([pd.DataFrame({"state": t["FIPS"].str[:2], "county": t["FIPS"],
                                    "sex": sex, "race": race, "n": n})
                      for (sex, race), n in cells.items()])
    return count_data_from_table(long, ["state", "county"], count_column="n",
                                 category_columns=["sex", "race"])


def census_tracts() -> CountData:
    """State > county > tract of 8 states, by sex (ACS 2011-2015)."""
    t = pd.read_csv(SHARED / "tract_acs_8states.csv.gz", dtype={"GEOID": str},
                    usecols=["GEOID", "Male Population", "Female Population"])
    long = pd.concat([pd.DataFrame({"state": t["GEOID"].str[:2], "county": t["GEOID"].str[:5],
                                    "tract": t["GEOID"], "sex": sex, "n": t[col]})
                      for sex, col in (("M", "Male Population"), ("F", "Female Population"))])
    return count_data_from_table(long, ["state", "county", "tract"], count_column="n",
                                 category_columns=["sex"])


def datasets(names: list[str]) -> dict[str, CountData]:
    out = {name: sample_data(name) for name in names}
    if SHARED.is_dir():
        out["census-counties-sex-race"] = census_counties()
        out["census-tracts-8-states"] = census_tracts()
    else:
        print(f"{SHARED} absent: real data skipped", file=sys.stderr)
    return out


def batched(data: CountData, runs: int) -> CountData:
    k = data.leaf_counts.shape[1] * runs
    return CountData(data.hierarchy, np.tile(data.leaf_counts, runs),
                     categories=tuple(map(str, range(k))), category_columns=("run x category",))


def entry(hit: np.ndarray, level: float) -> dict:
    """Coverage of a set of cells, its count and binomial standard error, and a verdict:
    ``within`` `TARGET` of nominal, ``outside`` (by more than 2 standard errors beyond it),
    or ``unresolved`` (outside, but within the sampling error of too few cells)."""
    cov = float(hit.mean())
    se = math.sqrt(level * (1 - level) / hit.size)
    off = abs(cov - level)
    verdict = "within" if off <= TARGET else "outside" if off > TARGET + 2 * se \
        else "unresolved"
    return {"coverage": round(cov, 4), "cells": int(hit.size), "se": round(se, 4),
            "verdict": verdict}


def coverage(data: CountData, name: str, budgets: dict, runs: int, level: float,
             seed: int) -> dict:
    mechanism, params, kind = CONFIGS[name]
    h = data.hierarchy
    k = data.leaf_counts.shape[1]
    batch = batched(data, runs)
    release = get_mechanism(mechanism).release(batch, budgets[kind], source=NoiseSource(seed),
                                               **params)
    # the replicates one release of the table would get (the batch has more cells)
    draws = bootstrap_replicates(h.n_nodes * k)
    iv = count_intervals(release, level, draws if mechanism == "topdown" else None)
    truth = batch.node_counts()
    hit = (iv.lower <= truth) & (truth <= iv.upper)
    single = get_mechanism(mechanism).release(data, budgets[kind], source=NoiseSource(seed),
                                              **params)
    t = time.perf_counter()
    count_intervals(single, level)
    rows = np.repeat(h.level_of_nodes(), batch.leaf_counts.shape[1])
    own = np.tile(np.arange(batch.leaf_counts.shape[1]) < k, h.n_nodes)  # one copy's bins
    return {"seconds": round(time.perf_counter() - t, 3), "method": iv.record["method"],
            "replicates": iv.record["replicates"],
            **summary(hit.ravel(), truth.ravel(), rows, h.level_names, level, own)}


def summary(hit: np.ndarray, truth: np.ndarray, rows: np.ndarray, names, level: float,
            own: np.ndarray | None = None) -> dict:
    """Coverage per level (``rows``: each cell's level) and, below the root, per quartile
    bin of the level's true values (the bins' edges from the ``own`` cells)."""
    out = {"levels": {}, "bins": {}}
    for lv, name_lv in enumerate(names):
        at = rows == lv
        if not at.any():
            continue
        out["levels"][name_lv] = entry(hit[at], level)
        if lv == 0:
            continue
        t = truth[at]
        edges = np.quantile(t[own[at]] if own is not None else t, [0.25, 0.5, 0.75])
        bins = np.searchsorted(edges, t, side="right")
        lows = np.concatenate([[t.min()], edges])
        highs = np.concatenate([edges, [t.max()]])
        out["bins"][name_lv] = [{"bin": f"{lows[b]:.0f}-{highs[b]:.0f}",
                                 **entry(hit[at][bins == b], level)}
                                for b in range(4) if (bins == b).any()]
    return out


# ---- group sizes, flows, ranges: every release re-run by the bootstrap ------------------
#: kind -> name -> (mechanism, parameters, budget kind)
RERUN_CONFIGS = {
    "group-sizes": {m: (m, {}, "epsilon") for m in (
        "gs-noisy", "gs-topdown", "gs-mh-dp", "gs-mc-dp", "gs-kuo-hierarchical")},
    "flows": {"vanilla-gauss": ("vanilla-gauss", {}, "rho"), "inftda": ("inftda", {}, "rho"),
              "tda-l2": ("tda-l2", {}, "rho"),
              "stability-histogram": ("stability-histogram", {}, "epsilon-delta")},
    "ranges": {m: (m, {}, "epsilon") for m in (
        "identity", "h2", "hb", "privelet", "greedy-h", "dawa", "partition-laplace")},
}
NEW_ENGLAND = ("09", "23", "25", "33", "44", "50")  # 67 counties
UMBRIA = "10"  # 2 provinces, 92 municipalities


def rerun_datasets(kind: str) -> dict:
    """The bundled data of a kind (cut to what a bootstrap per release can afford), and
    the shared real data when present."""
    from hierdp_core.data.sample_files import SAMPLE_FILES
    from hierdp_core.flows.data import flow_data_from_table
    from hierdp_core.groupsizes.data import group_size_data_from_histograms
    from hierdp_core.queries.ranges import range_data_from_table
    from hierdp_core.ranges.workloads import bands

    out = {}
    shared = SHARED.parent
    if kind == "group-sizes":
        t = SAMPLE_FILES["us-households"].loader()
        out["us-households new england, sizes 0-7+"] = group_size_data_from_histograms(
            t[t["state"].isin(NEW_ENGLAND)], ["state", "county"], "size", "households",
            max_size=7)
        path = shared / "households" / "calm_oregon_taz_household_controls.csv"
        if path.exists():
            t = pd.read_csv(path)
            long = pd.concat([pd.DataFrame({"county": t["COUNTYFP"].astype(str),
                                            "tract": t["TRACTGEOID"].astype(str),
                                            "taz": t["TAZ"].astype(str), "size": k,
                                            "n": t[f"HHSIZE{k}"]}) for k in range(1, 5)])
            out["oregon taz households, sizes 0-4+"] = group_size_data_from_histograms(
                long, ["county", "tract", "taz"], "size", "n", max_size=4)
    elif kind == "flows":
        t = SAMPLE_FILES["us-flights"].loader()
        out["us-flights"] = flow_data_from_table(t, ["o_state", "o_airport"],
                                                 ["d_state", "d_airport"], "flights")
        path = shared / "flows" / "ny_county_commuting_flows_2011.csv"
        if path.exists():
            t = pd.read_csv(path, dtype={"origin": str, "destination": str})
            t = t.assign(o_state=t["origin"].str[:2], d_state=t["destination"].str[:2])
            out["ny county commuting 2011"] = flow_data_from_table(
                t, ["o_state", "origin"], ["d_state", "destination"], "flow")
    else:
        t = SAMPLES["italy-municipalities"].loader()
        d = range_data_from_table(t[t["region"] == UMBRIA], ["region", "province",
                                                              "municipality"], "age",
                                  count_column="residents", domain=(0, 100))
        out["italy umbria ages 0-100, all prefixes"] = d  # atoms: every single age
        out["italy umbria ages 0-100, bands 0-17,18-64,65-100"] = d.with_workload(
            bands(d.values, "0-17,18-64,65-100"))
    return out


def truth_rows(data, release) -> tuple[np.ndarray, np.ndarray]:
    """The true value of every released row, and its level."""
    if hasattr(release, "levels"):  # flows: the released nodes
        truth = [data.lookup(t, lv.origin, lv.destination)
                 for t, lv in enumerate(release.levels)]
        return (np.concatenate(truth),
                np.concatenate([np.full(x.size, t) for t, x in enumerate(truth)]))
    k = release.values.shape[1]
    return data.node_counts().ravel(), np.repeat(release.hierarchy.level_of_nodes(), k)


def rerun_coverage(data, config: tuple, budgets: dict, runs: int, level: float,
                   seed: int) -> dict:
    """``runs`` seeded releases, each with its intervals (replicates by time)."""
    mechanism, params, kind = config
    hits, truths, rows, seconds, totals = [], [], [], [], []
    for run in range(runs):
        release = get_mechanism(mechanism).release(data, budgets[kind],
                                                   source=NoiseSource(seed + run), **params)
        t = time.perf_counter()
        iv = intervals_for(release, level, workload=getattr(data, "workload", None))
        seconds.append(time.perf_counter() - t)
        truth, row = truth_rows(data, release)
        hits.append((iv.lower.ravel() <= truth) & (truth <= iv.upper.ravel()))
        truths.append(truth)
        rows.append(row)
        if "share_bound" in iv.record:
            totals.append(group_totals(data, release, iv, truth, row))
    names = getattr(release, "level_names", None) or release.hierarchy.level_names
    out = {"seconds": round(float(np.mean(seconds)), 2), "method": iv.record["method"],
           "replicates": iv.record["replicates"], "runs": runs,
           "calibrated": {k: c["calibrated"] for k, c in iv.record["calibration"].items()},
           **summary(np.concatenate(hits), np.concatenate(truths), np.concatenate(rows),
                     names, level)}
    if totals:
        hit, row = (np.concatenate(x) for x in zip(*totals, strict=True))
        out["group_upper_ends"] = {names[lv]: entry(hit[row == lv], level)
                                   for lv in np.unique(row)}
    return out


def group_totals(data, release, iv, truth, row) -> tuple[np.ndarray, np.ndarray]:
    """A range release's bands or buckets of several cells (`share_groups`): whether the
    upper end their cells share holds the group's true total, and the group's level."""
    from hierdp_core.intervals.ranges import share_groups

    group, size = share_groups(release, data.workload)
    first = (size[group] > 1) & np.r_[True, group[1:] != group[:-1]]
    hit = np.bincount(group, weights=truth)[group] <= iv.upper.ravel()
    return hit[first], row[first]


def unflagged(results: dict, level: float) -> list[str]:
    """Every level under-covering beyond the target (verdict ``outside``, below ``level``)
    that its intervals record does not flag ``calibrated: false``
    (`hierdp_core.intervals.calibration`): should be none."""
    return [f"{ds} {config} {lv}: {e['coverage']}" for ds, per in results.items()
            for config, r in per["mechanisms"].items() for lv, e in r["levels"].items()
            if e["verdict"] == "outside" and e["coverage"] < level
            and r.get("calibrated", {}).get(lv, True)]


def verdicts(results: dict, verdict: str) -> list[str]:
    """Every level or bin of that ``verdict``, as a line."""
    out = []
    for ds, per in results.items():
        for config, r in per["mechanisms"].items():
            groups = list(r["levels"].items())
            groups += [(f"{lv} bin {b['bin']}", b) for lv, bins in r["bins"].items()
                       for b in bins]
            out += [f"{ds} {config} {where}: {e['coverage']} ({e['cells']} cells)"
                    for where, e in groups if e["verdict"] == verdict]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", default=",".join(SAMPLES))
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--rho", type=float, default=0.5)
    p.add_argument("--level", type=float, default=0.9)
    p.add_argument("--cells", type=int, default=60_000,
                   help="about this many cells per configuration (runs = cells / table)")
    p.add_argument("--seed", type=int, default=0, help="the first case's; then +1 per case")
    p.add_argument("--kinds", default="counts," + ",".join(RERUN_CONFIGS))
    p.add_argument("--runs", type=int, default=10,
                   help="group sizes, flows, ranges: releases per configuration")
    p.add_argument("--delta", type=float, default=1e-6, help="stability-histogram's")
    args = p.parse_args(argv)
    budgets = {"epsilon": PrivacyBudget.pure(args.epsilon), "rho": PrivacyBudget.zcdp(args.rho),
               "epsilon-delta": PrivacyBudget.approx(args.epsilon, args.delta)}
    start = time.perf_counter()
    results = {}
    seeds = iter(range(args.seed, args.seed + 10_000))  # a noise stream per case
    kinds = args.kinds.split(",")
    for kind in (k for k in kinds if k in RERUN_CONFIGS):
        for ds, data in rerun_datasets(kind).items():
            results[ds] = {"kind": kind, "runs": args.runs, "mechanisms": {}}
            for name, config in RERUN_CONFIGS[kind].items():
                results[ds]["mechanisms"][name] = rerun_coverage(
                    data, config, budgets, args.runs, args.level, next(seeds) * 1000)
                print(f"{ds} {name}: {results[ds]['mechanisms'][name]['levels']}",
                      file=sys.stderr)
    for ds, data in (datasets(args.samples.split(",")) if "counts" in kinds else {}).items():
        cells = data.hierarchy.n_nodes * data.leaf_counts.shape[1]
        runs = max(2, math.ceil(args.cells / cells))
        results[ds] = {"kind": "counts", "nodes": data.hierarchy.n_nodes,
                       "categories": data.leaf_counts.shape[1], "runs": runs,
                       "mechanisms": {}}
        for name in args.configs.split(","):
            results[ds]["mechanisms"][name] = coverage(data, name, budgets, runs, args.level,
                                                       next(seeds))
            print(f"{ds} {name}: {results[ds]['mechanisms'][name]['levels']}", file=sys.stderr)
    print(json.dumps({
        "benchmark": "intervals", "level": args.level, "epsilon": args.epsilon,
        "rho": args.rho, "delta": args.delta, "seed": args.seed, "results": results,
        "outside_3_points": verdicts(results, "outside"),
        "unresolved": verdicts(results, "unresolved"),
        "under_and_not_flagged": unflagged(results, args.level),
        "seconds": round(time.perf_counter() - start, 1), "machine": machine_info(),
    }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""DAWA and its baselines on the DPBench histograms (Li, Hay, Miklau & Wang 2014 design).

1-D: ADULT, HEPTH, INCOME, MEDCOST, PATENT (n = 4,096) from ``../shared/data/dpbench/1D``;
``--datasets synthetic`` is a generated stand-in (a smooth bump with empty runs) when that
folder is absent. 2-D (``--two-d``): the 256 x 256 sets of ``../shared/data/dpbench/2D``,
Hilbert-ordered, random rectangles of 1/16 x 1/16 and 1/4 x 1/4 of the grid.

``dawa`` is the registry default (PrivTree-style Stage 1); ``dawa-least-cost`` is the paper's
Stage 1 with the noise its proof needs, ``dawa-least-cost-penalty-3`` the same with a
data-independent extra cost of 3 noise scales per bucket (spec 2.2.7), ``dawa-reference`` the
authors' code's Stage 1 (privacy not established).

Error: the paper's average absolute error per query, ``(1/m) ||W x - W x_hat||_1``, for
``--workloads`` random workloads (2,000 ranges from two uniform end points, fixed per seed and
shared by every method and epsilon) x ``--runs`` noise draws each. Every method is the
1-D estimator of its registry entry (the same code the hierarchical release runs per unit).

    python benchmarks/bench_dawa.py [--datasets ADULT,HEPTH,...] [--methods dawa,...]
        [--epsilons 0.01,0.05,0.1,0.5] [--workloads 5] [--runs 5] [--queries 2000] [--two-d]
    python benchmarks/bench_dawa.py --datasets "" --two-d     # the 2-D sets only
    python benchmarks/bench_dawa.py --methods "" --optimum    # Table 1's noiseless buckets
    python benchmarks/bench_dawa.py --datasets "" --hierarchy --methods dawa,greedy-h \
        --epsilons 0.1,1,10                                   # releases inside the geography

``--hierarchy`` times the release of the bundled Italian residents by single year of age
(0..100) through the registry, every unit of every level, levels region > province and region
> province > municipality (7,901 units), and reports the mean error per query (prefix
workload) per level; it needs no external data. There ``dawa`` partitions the finest level
only (its default) and ``dawa-every-level`` every level, as the paper's DAWA per level.

Prints one JSON object: ``seconds`` maps each method to its mean seconds per run at n = 4,096
(over all runs), ``errors`` maps dataset -> method -> epsilon -> mean error per query (with
``error_sd`` the standard deviation over runs), ``buckets`` the mean number of DAWA buckets,
``optimum_buckets`` (``--optimum``) the buckets of the noiseless all-intervals optimum at
epsilon2 = 0.05 (the paper's Table 1), ``two_d`` the same for the 2-D sets, ``hierarchy`` levels -> method -> epsilon -> seconds
and error per level.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
from machine import machine_info

from hierdp_core.data.samples import load_sample
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.evaluation import range_metrics, workload_errors
from hierdp_core.ranges.hilbert import rectangles, to_hilbert
from hierdp_core.ranges.partition import Candidates, bucket_costs, least_cost_edges_batch
from hierdp_core.ranges.workloads import random_ranges

DPBENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "dpbench"
DATASETS_1D = ("ADULT", "HEPTH", "INCOME", "MEDCOST", "PATENT")
FILES_1D = {"ADULT": "ADULTFRANK.n4096.npy"}
METHODS = ("dawa", "dawa-reference", "greedy-h", "partition-laplace", "identity", "uniform",
           "h2", "hb", "privelet")
METHODS_2D = ("dawa", "dawa-reference", "identity", "hb", "privelet")
#: Variants measured next to the registry entries: name -> (registry entry, parameters).
VARIANTS = {"dawa-every-level": ("dawa", {"partition_from": 0}),  # --hierarchy: as the paper
            "dawa-least-cost": ("dawa", {"partition": "least-cost"}),
            "dawa-least-cost-penalty-3": ("dawa", {"partition": "least-cost", "penalty": 3.0})}


def load_1d(name: str) -> np.ndarray:
    if name == "synthetic":
        cells = np.arange(4096)
        bump = 2000 * np.exp(-0.5 * ((cells - 1500) / 200.0) ** 2)
        return np.where((cells // 512) % 3 == 2, 0, np.rint(bump + 5)).astype(float)
    path = DPBENCH / "1D" / FILES_1D.get(name, f"{name}.n4096.npy")
    if not path.exists():
        raise SystemExit(f"{path} is missing: run with --datasets synthetic")
    return np.load(path).astype(float)


def load_2d(path: Path) -> np.ndarray:
    with gzip.open(path) as f:
        return np.load(f).astype(float)


def estimator(method: str):
    entry, params = VARIANTS.get(method, (method, {}))
    run = get_mechanism(entry).histogram_estimator(**params)
    return lambda x, w, eps, src: run(x[None], w, eps, src)


def run_method(method: str, x: np.ndarray, workloads, epsilons, runs: int, seed: int) -> dict:
    run = estimator(method)
    errors, seconds, buckets = {}, [], []
    for eps in epsilons:
        per_run = []
        for w_index, workload in enumerate(workloads):
            source = NoiseSource(seed=seed + 1000 * w_index + int(eps * 1e4))
            for _ in range(runs):
                start = time.perf_counter()
                est = run(x, workload, eps, source)
                seconds.append(time.perf_counter() - start)
                per_run.append(float(workload_errors(x[None], est.values, workload)[0]))
                if est.edges is not None:
                    buckets.append(est.edges[0].size - 1)
        errors[str(eps)] = {"error": float(np.mean(per_run)), "error_sd": float(np.std(per_run))}
    return {"errors": errors, "seconds": float(np.mean(seconds)),
            "buckets": float(np.mean(buckets)) if buckets else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS_1D))
    parser.add_argument("--methods", default=",".join(  # dawa-every-level = dawa in 1-D
        METHODS + tuple(v for v in VARIANTS if v != "dawa-every-level")))
    parser.add_argument("--epsilons", default="0.01,0.05,0.1,0.5")
    parser.add_argument("--workloads", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--two-d", action="store_true", help="also the 2-D sets")
    parser.add_argument("--hierarchy", action="store_true",
                        help="also releases of the bundled Italian ages inside the geography")
    parser.add_argument("--optimum", action="store_true",
                        help="also the noiseless least-cost optimum's number of buckets")
    args = parser.parse_args()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    methods = [m for m in args.methods.split(",") if m]
    out = {"setup": {"epsilons": epsilons, "workloads": args.workloads, "runs": args.runs,
                     "queries": args.queries, "machine": machine_info(),
                     "workload": "random ranges, two uniform end points, sorted"},
           "seconds": {}, "errors": {}, "buckets": {}}
    seconds: dict[str, list] = {}
    for name in [d for d in args.datasets.split(",") if d]:
        x = load_1d(name)
        workloads = [random_ranges(x.size, args.queries, seed=args.seed + i)
                     for i in range(args.workloads)]
        out["errors"][name], out["buckets"][name] = {}, {}
        for method in methods:
            result = run_method(method, x, workloads, epsilons, args.runs, args.seed)
            out["errors"][name][method] = result["errors"]
            out["buckets"][name][method] = result["buckets"]
            seconds.setdefault(method, []).append(result["seconds"])
    out["seconds"] = {m: float(np.mean(s)) for m, s in seconds.items()}
    if args.optimum:
        out["optimum_buckets"] = {name: optimum_buckets(load_1d(name))
                                  for name in args.datasets.split(",") if name}
    if args.two_d:
        out["two_d"] = two_d(epsilons, args)
    if args.hierarchy:
        out["hierarchy"] = hierarchy(methods, epsilons, args.seed)
    print(json.dumps(out, indent=1))


def optimum_buckets(x: np.ndarray, epsilon2: float = 0.05) -> int:
    """Buckets of the noiseless optimum of the paper's Problem 1 over all intervals (as its
    Table 1; NOT private, DPBench's public histograms only): O(n^2) costs, about 30 s and
    0.2 GB at n = 4,096."""
    every_length = Candidates(x.size, np.arange(x.size, 0, -1, dtype=np.int64))
    costs = bucket_costs(x[None], every_length, epsilon2)
    return int(least_cost_edges_batch(costs, every_length)[0].size - 1)


def two_d(epsilons, args) -> dict:
    results = {}
    for path in sorted((DPBENCH / "2D").glob("*.npy.gz")):
        grid = load_2d(path)
        x = to_hilbert(grid)
        side = grid.shape[0]
        workloads = [rectangles(side, args.queries, side // d, side // d, seed=args.seed + d)
                     for d in (16, 4)]
        name = path.name.split(".")[0]
        results[name] = {m: run_method(m, x, workloads, epsilons, 1, args.seed)
                         for m in METHODS_2D}
    return results


def hierarchy(methods, epsilons, seed: int) -> dict:
    """Seconds per release and mean error per query by level, Italian ages, two depths."""
    table = load_sample("italy-municipalities")
    results = {}
    for levels in (["region", "province"], ["region", "province", "municipality"]):
        data = range_data_from_table(table, levels, "age", count_column="residents")
        runs = results[" > ".join(levels)] = {}
        for method in methods:
            entry, params = VARIANTS.get(method, (method, {}))
            mechanism = get_mechanism(entry)
            runs[method] = {}
            for eps in epsilons:
                start = time.perf_counter()
                release = mechanism.release(data, PrivacyBudget.pure(eps),
                                            source=NoiseSource(seed=seed), **params)
                seconds = time.perf_counter() - start
                metrics = range_metrics(data, release.values)
                runs[method][str(eps)] = {
                    "seconds": seconds,
                    "error_by_level": dict(zip(metrics["level_name"],
                                               metrics["mean_query_error"].astype(float),
                                               strict=True))}
    return results


if __name__ == "__main__":
    main()

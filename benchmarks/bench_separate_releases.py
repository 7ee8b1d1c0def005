"""Counts intervals on separate releases, as a user makes them (issue 30): each release of
one table drawn with a seed of its own and given its own default intervals
(`intervals_for`, replicates by time), not a batch of copies as `bench_intervals.py`
makes; the coverage per level over the releases.

Data: the ACS tracts of 8 states by sex (``bench_intervals.census_tracts``: 8 states > 86
counties > 6,642 tracts) when ``/work/shared/data`` is present, else the bundled sample
``--sample``. Cases ``mechanism:epsilon:releases``, seeds ``--seed``, ``--seed`` + 1, ...
in each. Every level reports its coverage, its cells (values x releases) and the binomial
standard error at nominal, sqrt(level (1 - level) / cells).

Prints ONE JSON object. Example::

    python benchmarks/bench_separate_releases.py --cases topdown:1:30,least-squares:1:200
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from bench_intervals import SHARED, census_tracts, sample_data
from machine import machine_info

from hierdp_core.intervals import intervals_for
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

DEFAULT_CASES = "topdown:1:30,topdown:0.25:30,least-squares:1:200"


def coverage(data, mechanism: str, epsilon: float, releases: int, level: float,
             seed: int) -> dict:
    """Coverage per level of ``releases`` separate seeded releases, each with its default
    intervals at ``level``."""
    h, truth = data.hierarchy, data.node_counts()
    hits = np.zeros(h.n_levels, dtype=np.int64)
    releaser, budget = get_mechanism(mechanism), PrivacyBudget.pure(epsilon)
    start = time.perf_counter()
    for run in range(releases):
        release = releaser.release(data, budget, source=NoiseSource(seed=seed + run))
        iv = intervals_for(release, level)
        hit = (iv.lower <= truth) & (truth <= iv.upper)
        hits += [np.count_nonzero(hit[h.level_slice(lv)]) for lv in range(h.n_levels)]
    cells = [h.level_size(lv) * truth.shape[1] * releases for lv in range(h.n_levels)]
    return {"levels": [{"level": h.level_names[lv], "coverage": round(int(hits[lv]) / n, 4),
                        "cells": n, "se": round(math.sqrt(level * (1 - level) / n), 4)}
                       for lv, n in enumerate(cells)],
            "seconds": round(time.perf_counter() - start, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=DEFAULT_CASES,
                   help="comma-separated mechanism:epsilon:releases")
    p.add_argument("--level", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--sample", default="us-counties",
                   help="the bundled sample used when the shared data is absent")
    args = p.parse_args(argv)
    real = SHARED.is_dir()
    data = census_tracts() if real else sample_data(args.sample)
    results = {}
    for case in args.cases.split(","):
        mechanism, epsilon, releases = case.split(":")
        results[case] = coverage(data, mechanism, float(epsilon), int(releases), args.level,
                                 args.seed)
        print(case, [lv["coverage"] for lv in results[case]["levels"]], file=sys.stderr)
    json.dump({"benchmark": "bench_separate_releases", "level": args.level,
               "data": "census-tracts-8-states" if real else args.sample,
               "seed": args.seed, "machine": machine_info(), "results": results},
              sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Group sizes page's publishable draw, in parts (issue 31, item 4): the dashboard's
default mechanism (gs-kuo-hierarchical, epsilon 1) on its bundled sample (the US households
over their declared geography, nation > 51 states > 3,141 counties, sizes 1..1,000, declared
numbers of households), as the page makes it:

- ``hc_county_level_s``: Kuo et al.'s Hc estimator on the county level (noise, isotonic
  regression, rounding: `kuo_estimators.hc_level`), numpy noise;
- ``rerun_s``: one re-run of the intervals' bootstrap (the release API on the plug-in of a
  seeded release, numpy noise from the bootstrap's stream: `bootstrap.rerun_bootstrap`);
- ``secure_release_s``: the publishable release (the exact sampler's noise);
- ``intervals_s``: its 90% intervals (`intervals_for`: the bootstrap, ``replicates``
  re-runs on `bootstrap.RERUN_THREADS` threads), and ``expected_intervals_s``, what the
  page's button announces for them (`intervals.expected_seconds` of the release's time).

Each time is the median of ``--repeats`` (wall seconds; ``*_cpu_s`` the process's CPU
seconds, every thread's, less moved by other work on a shared machine); the secure release
and its intervals are timed once. ``digests`` hash the seeded
release's values and the intervals of that release (both must not change with speed-ups).
Prints one JSON object:

    python benchmarks/bench_kuo_rerun.py [--repeats 5] [--skip-intervals]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time

from machine import machine_info

from hierdp_core.data.sample_files import sample_geography
from hierdp_core.groupsizes.data import SIZE_COLUMN, GroupSizeData, group_size_data_from_histograms
from hierdp_core.groupsizes.declared_groups import declared_groups_from_table
from hierdp_core.groupsizes.kuo_estimators import hc_level
from hierdp_core.groupsizes.samples import us_household_groups, us_households
from hierdp_core.intervals import bootstrap, expected_seconds, intervals_for
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

MECHANISM = "gs-kuo-hierarchical"  # the page's default (`ui.samples.GS_DEFAULT_MECHANISM`)
LEVELS = ("state", "county")
EPSILON = 1.0


def page_data() -> GroupSizeData:
    """The page's sample (`ui.samples.group_size_data`, without Streamlit)."""
    geography = sample_geography("us-households", LEVELS,
                                 {level: f"{level}_name" for level in LEVELS})
    groups = declared_groups_from_table(us_household_groups(), geography, LEVELS,
                                        source="us-households-groups.csv")
    return group_size_data_from_histograms(us_households(), list(LEVELS), "size",
                                           "households", max_size=1000, geography=geography,
                                           group_counts=groups)


def timed(task, repeats: int) -> dict:
    """Median wall and CPU seconds of ``task()`` over ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        task()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return {"s": round(statistics.median(wall), 3), "cpu_s": round(statistics.median(cpu), 3)}


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-intervals", action="store_true")
    args = parser.parse_args()
    data = page_data()
    mechanism = get_mechanism(MECHANISM)
    budget = PrivacyBudget.pure(EPSILON)
    seeded = mechanism.release(data, budget, source=NoiseSource(seed=0))
    out = {"machine": machine_info(), "mechanism": MECHANISM, "epsilon": EPSILON,
           "cells": int(seeded.values.size), "threads": bootstrap.RERUN_THREADS,
           "digests": {"seeded_release": digest(seeded.values, seeded.noisy)}}

    h = data.hierarchy
    county = h.level_slice(h.depth)
    stage = mechanism.privacy_plan(**seeded.parameters).stages[0]
    share = float(seeded.ledger["budget"].iloc[-1])
    sources = iter(range(1 << 30))
    for name, value in timed(lambda: hc_level(
            data.node_counts()[county], data.groups()[county], share,
            NoiseSource(seed=next(sources)), stage=stage), args.repeats).items():
        out[f"hc_county_level_{name}"] = value

    plugin = GroupSizeData(h, bootstrap.released_leaves(seeded), seeded.categories,
                           (SIZE_COLUMN,), max_size=data.max_size, min_size=data.min_size)
    rerun = mechanism.releaser(plugin, budget, split=list(seeded.ledger["share"]),
                               **seeded.parameters)
    stream = bootstrap.plugin_stream(plugin.node_counts().ravel())
    for name, value in timed(lambda: rerun(bootstrap.replicate_source(
            stream, next(sources))), args.repeats).items():
        out[f"rerun_{name}"] = value

    if not args.skip_intervals:
        start, cpu = time.perf_counter(), time.process_time()
        secure = mechanism.release(data, budget, source=NoiseSource(secure=True))
        out["secure_release_s"] = round(time.perf_counter() - start, 3)
        out["secure_release_cpu_s"] = round(time.process_time() - cpu, 3)
        out["expected_intervals_s"] = round(expected_seconds(secure, out["secure_release_s"]), 1)
        start, cpu = time.perf_counter(), time.process_time()
        iv = intervals_for(secure, 0.9)
        out["intervals_s"] = round(time.perf_counter() - start, 3)
        out["intervals_cpu_s"] = round(time.process_time() - cpu, 3)  # every thread's
        out["replicates"] = iv.record["replicates"]
        iv = intervals_for(seeded, 0.9)
        out["digests"]["seeded_intervals"] = digest(iv.lower, iv.upper)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Scaling benchmark for hierarchical count releases (build, aggregate, measure, least squares,
TopDown) on a synthetic national-style geography.

The tree is nation > ~52 states > ~3,200 counties > tracts > block groups > blocks (5
geography levels by default; ``--depth`` changes the number of geography levels). Each
parent's number of children is skewed (lognormal weights), leaf populations are skewed
(lognormal, with ~30% empty blocks when the leaf level is the 5th level or deeper), and the
per-leaf code arrays are generated vectorised (no Python loop per node).

Prints ONE JSON object to stdout (progress, if any, goes to stderr). See benchmarks/README.md.

Examples::

    python benchmarks/bench_counts.py                      # 8,000,000 blocks, 5 geo levels
    python benchmarks/bench_counts.py --county             # 3,200 counties (state > county)
    python benchmarks/bench_counts.py --leaves 100000 --depth 4 --seed 3 --epsilon 0.5
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import sys
import time

import numpy as np
from machine import machine_info

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.consistency.topdown import topdown
from hierdp_core.engine.streams import measure_in_blocks
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.mechanisms.measure import plan_levels
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource, _opendp_apply
from hierdp_core.queries.counts import CountData

GEO_NAMES = ("state", "county", "tract", "block_group", "block")
N_STATES = 52
N_COUNTIES = 3200
# Where tracts and block groups sit between counties and blocks on a log scale, from 2020
# Census counts (~3,200 counties, ~85,000 tracts, ~242,000 block groups, ~8.1M blocks).
CENSUS_LOG_POSITIONS = (math.log(85_000 / 3_200) / math.log(8_100_000 / 3_200),
                        math.log(242_000 / 3_200) / math.log(8_100_000 / 3_200))
# Lognormal sigma of the weights spreading a level's nodes over their parents: how skewed
# the number of children per parent is (counties per state, tracts per county, ...).
BRANCH_SIGMA = (0.0, 0.9, 1.3, 0.4, 0.6)
DEFAULT_BRANCH_SIGMA = 0.7
US_POPULATION = 331_000_000

PRESETS = {
    "national": {"leaves": 8_000_000, "depth": 5, "repeat": 1,
                 "targets": {"release_seconds": 30.0, "peak_rss_mb": 6144.0}},
    "county": {"leaves": 3_200, "depth": 2, "repeat": 7,
               "targets": {"release_seconds": 0.1}},
}


# ---- synthetic geography -------------------------------------------------------------------
def level_names(depth: int) -> list[str]:
    return [GEO_NAMES[g] if g < len(GEO_NAMES) else f"level{g + 1}" for g in range(depth)]


def level_sizes(n_leaves: int, depth: int) -> list[int]:
    """Nodes per geography level (coarse to fine): 52 states, 3,200 counties, then sizes
    growing geometrically to ``n_leaves`` (at census positions for 5 levels)."""
    if depth == 1:
        return [n_leaves]
    sizes = [N_STATES]
    if depth >= 3:
        sizes.append(N_COUNTIES)
        inner = depth - 3  # levels strictly between counties and leaves
        if inner == 2:
            positions = CENSUS_LOG_POSITIONS
        else:
            positions = [(i + 1) / (inner + 1) for i in range(inner)]
        ratio = max(n_leaves / N_COUNTIES, 1.0)
        sizes += [int(round(N_COUNTIES * ratio**p)) for p in positions]
    sizes.append(n_leaves)
    # every parent needs a child: sizes must not decrease; clamp from the leaves up
    for g in range(len(sizes) - 2, -1, -1):
        sizes[g] = max(1, min(sizes[g], sizes[g + 1]))
    return sizes


def spread_children(n_parents: int, n_children: int, sigma: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Children per parent: one each, the rest spread by lognormal(0, sigma) weights."""
    counts = np.ones(n_parents, dtype=np.int64)
    extra = n_children - n_parents
    if extra > 0:
        w = rng.lognormal(0.0, sigma, n_parents) if sigma > 0 else np.ones(n_parents)
        counts += rng.multinomial(extra, w / w.sum())
    return counts


def synthetic_geography(n_leaves: int, depth: int, rng: np.random.Generator,
                        population: int = US_POPULATION, shuffle_rows: bool = False):
    """Per-leaf code arrays (one int64 array per geography level, one entry per leaf row)
    and per-leaf populations. Codes are the node's index within its level (unique across
    the level, i.e. not local codes)."""
    sizes = level_sizes(n_leaves, depth)
    parents = [None]  # parents[g][i]: index (within level g-1) of the parent of node i
    for g in range(1, depth):
        sigma = BRANCH_SIGMA[g] if g < len(BRANCH_SIGMA) else DEFAULT_BRANCH_SIGMA
        counts = spread_children(sizes[g - 1], sizes[g], sigma, rng)
        parents.append(np.repeat(np.arange(sizes[g - 1], dtype=np.int64), counts))
    codes = [None] * depth
    anc = np.arange(n_leaves, dtype=np.int64)
    codes[depth - 1] = anc
    for g in range(depth - 1, 0, -1):
        anc = parents[g][anc]
        codes[g - 1] = anc
    del parents, anc
    # populations: lognormal per leaf, ~30% empty blocks at block level and below
    w = rng.lognormal(0.0, 1.2, n_leaves)
    if depth >= len(GEO_NAMES):
        w[rng.random(n_leaves) < 0.3] = 0.0
    w *= population / w.sum()
    pop = rng.poisson(w).astype(np.int64)
    del w
    if shuffle_rows:
        perm = rng.permutation(n_leaves)
        codes = [c[perm] for c in codes]
        pop = pop[perm]
    return codes, pop, sizes


# ---- measurement helpers -------------------------------------------------------------------
def rss_mb() -> float:
    """Peak RSS of this process so far (ru_maxrss is KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def _status_kb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM), Linux only."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def timed(fn, repeat: int):
    """(result of the last call, list of wall-clock seconds)."""
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, times


def check_release(h, values) -> dict:
    values = np.asarray(values)
    return {
        "consistency_violations": int(h.consistency_violations(values)),
        "min_value": int(values.min()) if values.dtype.kind in "iu" else float(values.min()),
        "integer_dtype": bool(values.dtype.kind in "iu"),
        "dtype": str(values.dtype),
    }


def _ok(c: dict) -> bool:
    return c["consistency_violations"] == 0 and c["min_value"] >= 0 and c["integer_dtype"]


# ---- the benchmark -------------------------------------------------------------------------
SECURE_KEYS = ("opendp_sampling", "secure_release")


def time_secure(mech, data: CountData, budget: PrivacyBudget) -> dict[str, list[float]]:
    """Seconds of OpenDP's sampler alone for the draws a secure TopDown release makes (one
    per measured node, through the same chunked parallel calls the release uses) and of the
    secure release itself; once each (OpenDP draws from OS entropy: slow and unseeded)."""
    sensitivity = mech.privacy_plan(noise="geometric").stages[0].sensitivity
    plans = plan_levels(data.hierarchy, budget, "geometric", sensitivity=sensitivity)
    draws = sum(data.hierarchy.level_size(p.level) for p in plans if p.noise is not None)
    scales = {p.noise.scale for p in plans if p.noise is not None}
    zeros = np.zeros(draws, dtype=np.int64)
    _, sampling = timed(lambda: _opendp_apply(zeros, "laplace", scales.pop(), True), 1)
    _, release = timed(lambda: mech.release(data, budget, source=NoiseSource(secure=True),
                                            noise="geometric"), 1)
    return {"opendp_sampling": sampling, "secure_release": release}


def run(n_leaves: int, depth: int, seed: int, epsilon: float, repeat: int,
        shuffle_rows: bool, targets: dict | None, preset: str | None,
        secure: bool = True) -> dict:
    t_start = time.perf_counter()
    get_mechanism("topdown")  # import every mechanism before timing anything
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    codes, pop, sizes = synthetic_geography(n_leaves, depth, rng, shuffle_rows=shuffle_rows)
    generate_seconds = time.perf_counter() - t0
    names = level_names(depth)
    timings: dict[str, list[float]] = {}

    # build: the tree, then the per-leaf count column in leaf order
    def build():
        h, leaf = build_from_codes(codes, names, root_name="nation")
        leaf_counts = np.zeros((h.n_leaves, 1), dtype=np.int64)
        leaf_counts[leaf, 0] = pop
        return h, leaf_counts

    (h, leaf_counts), timings["build"] = timed(build, repeat)
    codes = pop = None  # free the row arrays (closures above are not called again)
    data = CountData(h, leaf_counts)
    budget = PrivacyBudget.pure(epsilon)

    truth, timings["aggregate"] = timed(data.node_counts, repeat)

    sensitivity = get_mechanism("topdown").privacy_plan().stages[0].sensitivity

    def do_measure():
        plans = plan_levels(h, budget, "geometric", sensitivity=sensitivity)
        return measure_in_blocks(truth, h, plans, NoiseSource(seed=seed))

    (noisy, variance), timings["measure"] = timed(do_measure, repeat)

    est, timings["least_squares"] = timed(
        lambda: tree_least_squares(h, noisy, variance, None), repeat)

    def do_topdown():  # projection + rounding only, as TopDown.estimate does after LS
        return topdown(h, est, np.maximum(np.rint(est[0]), 0))

    steps_values, timings["topdown"] = timed(do_topdown, repeat)
    steps_checks = check_release(h, steps_values)
    steps_checks["root_total_true"] = int(truth[0, 0])
    truth = noisy = est = None  # free the step arrays before the release
    gc.collect()

    # the complete release through the public API, from the data alone
    mech = get_mechanism("topdown")
    hwm_reset = reset_peak_rss()
    rss_before_release = _status_kb("VmRSS")
    rel, timings["release"] = timed(
        lambda: mech.release(data, budget, source=NoiseSource(seed=seed), noise="geometric"),
        repeat)
    release_hwm = _status_kb("VmHWM") if hwm_reset else None
    release_checks = check_release(h, rel.values)
    release_checks["root_total_released"] = int(rel.values[0, 0])
    release_checks["matches_step_pipeline"] = bool(np.array_equal(rel.values, steps_values))
    rel = None
    if secure:
        secure_timings = time_secure(mech, data, budget)
        timings.update(secure_timings)

    step_keys = ("build", "aggregate", "measure", "least_squares", "topdown")
    out = {
        "benchmark": "bench_counts",
        "preset": preset,
        "n_nodes": h.n_nodes,
        "n_leaves": h.n_leaves,
        "levels": h.n_levels,
        "geography_levels": depth,
        "level_names": list(h.level_names),
        "level_sizes": [h.level_size(level) for level in range(h.n_levels)],
        "seed": seed,
        "epsilon": epsilon,
        "noise": "geometric",
        "shuffle_rows": shuffle_rows,
        "repeat": repeat,
        "generate_seconds": round(generate_seconds, 4),
    }
    for key in step_keys + ("release",) + (SECURE_KEYS if secure else ()):
        out[f"{key}_seconds"] = round(min(timings[key]), 4)
    if secure:
        out["secure_over_opendp_sampling"] = round(
            min(timings["secure_release"]) / min(timings["opendp_sampling"]), 3)
    out["pipeline_seconds"] = round(sum(min(timings[k]) for k in step_keys), 4)
    if repeat > 1:
        out["all_seconds"] = {k: [round(t, 4) for t in v] for k, v in timings.items()}
    out["total_seconds"] = round(time.perf_counter() - t_start, 4)
    out["peak_rss_mb"] = round(rss_mb(), 1)
    if release_hwm is not None:
        out["release_peak_rss_mb"] = round(release_hwm / 1024.0, 1)
        out["rss_before_release_mb"] = round(rss_before_release / 1024.0, 1)
    out["checks"] = {"steps": steps_checks, "release": release_checks}
    out["ok"] = bool(_ok(steps_checks) and _ok(release_checks)
                     and release_checks["matches_step_pipeline"])
    if targets:
        met = {k: bool(out[k] <= v) for k, v in targets.items()}
        out["targets"] = {"limits": targets, "met": met, "all_met": all(met.values())}
    out["machine"] = machine_info()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default=None,
                    help="national (default sizes: 8,000,000 leaves, 5 geography levels) or "
                         "county (3,200 leaves, state > county); explicit flags override")
    ap.add_argument("--county", action="store_true",
                    help="shorthand for --preset county (--leaves 3200 --depth 2)")
    ap.add_argument("--leaves", type=int, default=None, help="number of leaves (default 8000000)")
    ap.add_argument("--depth", type=int, default=None,
                    help="geography levels below the root (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of data and noise (default 0)")
    ap.add_argument("--epsilon", type=float, default=1.0,
                    help="total epsilon, split uniformly over levels (default 1.0)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="time every step this many times and report the fastest "
                         "(default 1; 7 for the county preset)")
    ap.add_argument("--no-secure", action="store_true",
                    help="skip the secure release (OpenDP noise from OS entropy) and the "
                         "timing of OpenDP's sampler alone for the same draws")
    ap.add_argument("--shuffle-rows", action="store_true",
                    help="shuffle the leaf rows before building (default: rows in geography order)")
    args = ap.parse_args(argv)
    if args.county:
        if args.preset not in (None, "county"):
            ap.error("--county conflicts with --preset " + args.preset)
        args.preset = "county"
    preset = PRESETS[args.preset or "national"]
    leaves = args.leaves if args.leaves is not None else preset["leaves"]
    depth = args.depth if args.depth is not None else preset["depth"]
    repeat = args.repeat if args.repeat is not None else preset["repeat"]
    if leaves < 1 or depth < 1 or repeat < 1:
        ap.error("--leaves, --depth and --repeat must be >= 1")
    if not args.epsilon > 0:
        ap.error("--epsilon must be positive")
    # targets only apply when the run matches the preset's sizes
    name = args.preset or "national"
    targets = (preset["targets"]
               if (leaves, depth) == (preset["leaves"], preset["depth"]) else None)
    result = run(leaves, depth, args.seed, args.epsilon, repeat, args.shuffle_rows, targets,
                 name if targets else None, secure=not args.no_secure)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

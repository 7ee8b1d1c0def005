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
import hashlib
import json
import resource
import subprocess
import sys
import time

import numpy as np
from machine import machine_info
from synthetic_geography import level_names, synthetic_geography

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.consistency.topdown import topdown
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.mechanisms.streams import measure_in_blocks
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.opendp_noise import opendp_apply
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData

#: issue 19 point 5, one core close to the floor (`floor_work`), in CPU seconds: for runs of
#: at least `FLOOR_TARGET_LEAVES` leaves; the peak memory for runs of at most `PEAK_LEAVES`
FLOOR_TARGETS = {"release_over_floor": 3.0, "build_plus_release_over_floor": 6.0}
FLOOR_TARGET_LEAVES = 1_000_000
PEAK_TARGET = {"peak_rss_mb": 1024.0}
PEAK_LEAVES = 8_000_000
#: a sweep (--sizes) has a flat time per leaf when its largest is at most this times its least,
#: over trees of one shape (`sweep`)
PER_LEAF_SPREAD = 1.3
SWEEP_SIZES = "1000000,2000000,4000000,8000000,16000000"
PRESETS = {
    "national": {"leaves": 8_000_000, "depth": 5, "repeat": 3},
    "county": {"leaves": 3_200, "depth": 2, "repeat": 7, "targets": {"release_seconds": 0.1}},
}


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


def reset_peak_rss(peaks: list[float]) -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM), Linux only, after appending its value
    so far (MB) to ``peaks`` (ru_maxrss loses what a reset clears)."""
    hwm = _status_kb("VmHWM")
    if hwm is not None:
        peaks.append(hwm / 1024.0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _user_seconds() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def timed(fn, repeat: int, cpu: list[tuple[float, float]] | None = None):
    """(result of the last call, list of wall-clock seconds); with ``cpu``, the CPU seconds
    of this process (``time.process_time``: user + system, all its threads) and its user
    seconds of every call are appended to it as a pair (robust to other jobs on the
    machine, unlike wall time; the system part is mostly the kernel faulting in new
    memory)."""
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        c0, u0, t0 = time.process_time(), _user_seconds(), time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append((time.process_time() - c0, _user_seconds() - u0))
    return result, times


def floor_work(h, leaf_counts: np.ndarray, plans, seed: int):
    """The floor: what any release of these counts must at least do, as a function to time.

    One ``np.bincount`` per level summing the (single) count column of the level below into
    its parents (the child -> parent index arrays are taken from the hierarchy beforehand,
    not timed), then one draw of the release's noise per measured node through the same
    sampler as the seeded release (``plan.noise.sample`` with ``NoiseSource(seed)``: numpy
    PCG64, two geometric draws per node for geometric noise), not added to anything."""
    parents = [None] + [h.segment_of_level(level) for level in range(1, h.n_levels)]
    sizes = [h.level_size(level) for level in range(h.n_levels)]

    def floor():
        values = leaf_counts[:, 0]
        for level in range(h.depth, 0, -1):
            values = np.bincount(parents[level], weights=values, minlength=sizes[level - 1])
        source = NoiseSource(seed=seed)
        for plan in plans:
            if plan.noise is not None:
                plan.noise.sample(sizes[plan.level], source)
        return values

    return floor


def digest(values: np.ndarray) -> str:
    """SHA-256 of an array's bytes (C order) and its dtype and shape."""
    values = np.ascontiguousarray(values)
    return hashlib.sha256(values.data).hexdigest() + f"/{values.dtype}/{values.shape}"


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


def time_secure(mech, data: CountData, budget: PrivacyBudget, repeat: int,
                cpu: list[tuple[float, float]], opendp: bool = True) -> dict[str, list[float]]:
    """Seconds of the secure release (hierdp's exact sampler, the default backend), fastest
    of ``repeat`` with its CPU seconds appended to ``cpu``, and with ``opendp`` of OpenDP's
    sampler alone for the draws a secure TopDown release makes (one per measured node,
    through the same chunked parallel calls OpenDP's backend uses; once: it is slow)."""
    _, release = timed(lambda: mech.release(data, budget, source=NoiseSource(secure=True),
                                            noise="geometric"), repeat, cpu)
    if not opendp:
        return {"secure_release": release}
    plans = mech.level_plans(data.hierarchy, budget, None, mech.params(noise="geometric"))[1]
    draws = sum(data.hierarchy.level_size(p.level) for p in plans if p.noise is not None)
    scales = {p.noise.scale for p in plans if p.noise is not None}
    zeros = np.zeros(draws, dtype=np.int64)
    _, sampling = timed(lambda: opendp_apply(zeros, "laplace", scales.pop(), True), 1)
    return {"opendp_sampling": sampling, "secure_release": release}


def _peak_mb(hwm_reset: bool) -> float | None:
    """The kernel's RSS high-water mark since the last reset, MB (None if it was not reset)."""
    hwm = _status_kb("VmHWM") if hwm_reset else None
    return None if hwm is None else round(hwm / 1024.0, 1)


def over_floor(cpu: dict[str, float]) -> dict[str, float]:
    """Issue 19 point 5 (one core close to the floor), from CPU seconds: the release and the
    build plus release as multiples of the floor (`floor_work`)."""
    return {"release_over_floor": round(cpu["release"] / cpu["floor"], 2),
            "build_plus_release_over_floor": round((cpu["build"] + cpu["release"])
                                                   / cpu["floor"], 2)}


def run(n_leaves: int, depth: int, seed: int, epsilon: float, repeat: int,
        shuffle_rows: bool, targets: dict | None, preset: str | None,
        secure: bool = True, shape_of: int | None = None, opendp: bool = True) -> dict:
    t_start = time.perf_counter()
    get_mechanism("topdown")  # import every mechanism before timing anything
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    codes, pop, sizes = synthetic_geography(n_leaves, depth, rng, shuffle_rows=shuffle_rows,
                                            shape_of=shape_of)
    generate_seconds = time.perf_counter() - t0
    names = level_names(depth)
    timings: dict[str, list[float]] = {}
    cpu: dict[str, list[tuple[float, float]]] = {k: [] for k in ("build", "floor", "release")}
    secure_cpu: list[tuple[float, float]] = []

    # build: the tree, then the per-leaf count column in leaf order
    def build():
        h, leaf = build_from_codes(codes, names, root_name="nation")
        leaf_counts = np.zeros((h.n_leaves, 1), dtype=np.int64)
        leaf_counts[leaf, 0] = pop
        return h, leaf_counts

    peaks: list[float] = []  # VmHWM before every reset, MB
    hwm_reset = reset_peak_rss(peaks)
    (h, leaf_counts), timings["build"] = timed(build, repeat, cpu["build"])
    build_peak = _peak_mb(hwm_reset)
    codes = pop = None  # free the row arrays (closures above are not called again)
    data = CountData(h, leaf_counts)
    budget = PrivacyBudget.pure(epsilon)
    mech = get_mechanism("topdown")

    def level_plans():
        return mech.level_plans(h, budget, None, mech.params(noise="geometric"))[1]

    plans = level_plans()

    _, timings["floor"] = timed(floor_work(h, leaf_counts, plans, seed), repeat, cpu["floor"])

    truth, timings["aggregate"] = timed(data.node_counts, repeat)

    def do_measure():
        return measure_in_blocks(truth, h, level_plans(), NoiseSource(seed=seed))

    (noisy, variance), timings["measure"] = timed(do_measure, repeat)

    est, timings["least_squares"] = timed(
        lambda: tree_least_squares(h, noisy, variance, None), repeat)

    def do_topdown():  # projection + rounding only, as TopDown.estimate does after LS
        return topdown(h, est, np.maximum(np.rint(est[0]), 0))

    steps_values, timings["topdown"] = timed(do_topdown, repeat)
    steps_checks = check_release(h, steps_values)
    steps_digest = digest(steps_values)  # the release is compared with it, not with the array
    steps_checks["root_total_true"] = int(truth[0, 0])
    truth = noisy = est = steps_values = None  # free the step arrays before the release
    gc.collect()

    # the complete release through the public API, from the data alone
    mech = get_mechanism("topdown")
    hwm_reset = reset_peak_rss(peaks)
    rss_before_release = _status_kb("VmRSS")
    rel, timings["release"] = timed(
        lambda: mech.release(data, budget, source=NoiseSource(seed=seed), noise="geometric"),
        repeat, cpu["release"])
    release_peak = _peak_mb(hwm_reset)
    release_checks = check_release(h, rel.values)
    release_checks["root_total_released"] = int(rel.values[0, 0])
    release_checks["matches_step_pipeline"] = digest(rel.values) == steps_digest
    rel = None
    if secure:
        timings.update(time_secure(mech, data, budget, repeat, secure_cpu, opendp))

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
        "shape_of": shape_of,
        "repeat": repeat,
        "generate_seconds": round(generate_seconds, 4),
    }
    for key in step_keys + ("floor", "release") + (SECURE_KEYS if secure else ()):
        if key in timings:
            out[f"{key}_seconds"] = round(min(timings[key]), 4)
    best = {k: min(t for t, _ in v) for k, v in cpu.items()}
    best_user = {k: min(u for _, u in v) for k, v in cpu.items()}
    out["cpu_seconds"] = {k: round(v, 4) for k, v in best.items()}
    out["user_seconds"] = {k: round(v, 4) for k, v in best_user.items()}
    out.update(over_floor(best))
    out["seconds_per_leaf"] = {k: float(f"{v / h.n_leaves:.4g}") for k, v in best.items()}
    out["user_seconds_per_leaf"] = {k: float(f"{v / h.n_leaves:.4g}")
                                    for k, v in best_user.items()}
    if secure and opendp:
        out["secure_over_opendp_sampling"] = round(
            min(timings["secure_release"]) / min(timings["opendp_sampling"]), 3)
    if secure:
        # the secure release (hierdp's exact sampler, the default backend) over the seeded
        # one, same run: wall seconds, and CPU seconds (robust to other jobs)
        out["secure_over_seeded"] = round(
            min(timings["secure_release"]) / min(timings["release"]), 3)
        out["secure_cpu_seconds"] = round(min(c for c, _ in secure_cpu), 4)
        out["secure_over_seeded_cpu"] = round(out["secure_cpu_seconds"] / best["release"], 3)
    out["pipeline_seconds"] = round(sum(min(timings[k]) for k in step_keys), 4)
    if repeat > 1:
        out["all_seconds"] = {k: [round(t, 4) for t in v] for k, v in timings.items()}
        out["all_cpu_seconds"] = {k: [[round(t, 4), round(u, 4)] for t, u in v]
                                  for k, v in cpu.items()}
    out["total_seconds"] = round(time.perf_counter() - t_start, 4)
    reset_peak_rss(peaks)
    out["peak_rss_mb"] = round(max([rss_mb(), *peaks]), 1)
    out["build_peak_rss_mb"] = build_peak
    out["release_peak_rss_mb"] = release_peak
    if rss_before_release is not None:
        out["rss_before_release_mb"] = round(rss_before_release / 1024.0, 1)
    out["checks"] = {"steps": steps_checks, "release": release_checks}
    out["ok"] = bool(_ok(steps_checks) and _ok(release_checks)
                     and release_checks["matches_step_pipeline"])
    out["targets"] = None
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
                         "(default 3; 7 for the county preset)")
    ap.add_argument("--no-secure", action="store_true",
                    help="skip the secure release (exact noise from a ChaCha20 keystream "
                         "keyed from the OS) and the timing of OpenDP's sampler alone for "
                         "the same draws")
    ap.add_argument("--no-opendp", action="store_true",
                    help="time the secure release but not OpenDP's sampler alone (about "
                         "10 us a draw: minutes at 8M leaves)")
    ap.add_argument("--sizes", nargs="?", const=SWEEP_SIZES, default=None,
                    help="run once per number of leaves in this comma-separated list, each "
                         "in a fresh process, and report the CPU seconds per leaf (without "
                         f"a list: {SWEEP_SIZES}); --leaves is then ignored")
    ap.add_argument("--shape-of", type=int, default=None, metavar="N",
                    help="give the tree the branching of the tree of N leaves (every level "
                         "the same nodes per leaf, like a few of its states; default: the "
                         "census-interpolated tree of --leaves; with --sizes, the shape of "
                         "the one-shape series, by default the largest size's)")
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
    if leaves < 1 or depth < 1 or repeat < 1 or (args.shape_of is not None
                                                  and args.shape_of < 1):
        ap.error("--leaves, --depth, --repeat and --shape-of must be >= 1")
    if not args.epsilon > 0:
        ap.error("--epsilon must be positive")
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
        passed = ["--depth", str(depth), "--seed", str(args.seed), "--epsilon",
                  str(args.epsilon), "--repeat", str(repeat), "--no-secure"]
        result = sweep(sizes, passed + (["--shuffle-rows"] if args.shuffle_rows else []),
                       args.shape_of)
    else:
        targets = {**(FLOOR_TARGETS if leaves >= FLOOR_TARGET_LEAVES else {}),
                   **(PEAK_TARGET if FLOOR_TARGET_LEAVES <= leaves <= PEAK_LEAVES else {})}
        name = args.preset or "national"
        preset_run = (leaves, depth) == (preset["leaves"], preset["depth"])
        if preset_run:
            targets.update(preset.get("targets", {}))
        result = run(leaves, depth, args.seed, args.epsilon, repeat, args.shuffle_rows,
                     targets, name if preset_run else None, secure=not args.no_secure,
                     shape_of=args.shape_of, opendp=not args.no_opendp)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


SWEPT = ("n_leaves", "n_nodes", "shape_of", "cpu_seconds", "user_seconds", "seconds_per_leaf",
         "user_seconds_per_leaf", "build_seconds",
         "floor_seconds", "release_seconds", "release_over_floor",
         "build_plus_release_over_floor", "peak_rss_mb", "build_peak_rss_mb",
         "release_peak_rss_mb", "ok", "targets")


def sweep(sizes: list[int], passed: list[str], shape_of: int | None = None) -> dict:
    """Two series of runs, one fresh process of this script per size (so each peak RSS is
    that size's alone): trees of one shape (the branching of the tree of ``shape_of``
    leaves, by default the largest size's, like some of its states), on which the time per
    leaf must be flat (`PER_LEAF_SPREAD`); and the census-interpolated trees of every size
    (shown only: the smaller the tree, the more internal nodes per leaf it has, 1.115 at 1M
    against 1.029 at 16M); and `shape_fit` over both."""
    shape_of = shape_of or max(sizes)
    same = [_sweep_run(n, [*passed, "--shape-of", str(shape_of)]) for n in sizes]
    census = [_sweep_run(n, passed) for n in sizes]
    spread, met = _spreads(same)
    met["every_size"] = all(r["targets"] is None or r["targets"]["all_met"] for r in same)
    census_spread, _ = _spreads(census)
    return {"benchmark": "bench_counts", "shape_of": shape_of, "sweep": same,
            "per_leaf_spread": spread,
            "targets": {"per_leaf_spread_limit": PER_LEAF_SPREAD, "met": met,
                        "all_met": all(met.values())},
            "census_interpolated": {
                "sweep": census, "per_leaf_spread": census_spread,
                "nodes_per_leaf": [round(r["n_nodes"] / r["n_leaves"], 4) for r in census]},
            "shape_fit": shape_fit(same + census),
            "ok": all(r["ok"] for r in same + census), "machine": machine_info()}


def _sweep_run(n: int, passed: list[str]) -> dict:
    """The main figures of one run of this script with ``n`` leaves."""
    done = subprocess.run([sys.executable, __file__, "--leaves", str(n), *passed],
                          capture_output=True, text=True, check=False)
    if not done.stdout.strip():
        raise SystemExit(f"the run with {n} leaves failed: {done.stderr[-2000:]}")
    printed = json.loads(done.stdout)
    return {k: printed.get(k) for k in SWEPT}


def shape_fit(runs: list[dict]) -> dict:
    """Least squares of the release's CPU ns per leaf on the internal nodes per leaf over
    ``runs`` (both series): a fixed cost per leaf, a cost per internal node (its noise
    draw, its family's sum and projection), and the largest residual in ns per leaf. With
    no term in the size, small residuals say the time is linear in leaves and nodes."""
    internal = np.array([(r["n_nodes"] - r["n_leaves"]) / r["n_leaves"] for r in runs])
    ns = np.array([r["seconds_per_leaf"]["release"] * 1e9 for r in runs])
    design = np.c_[np.ones_like(internal), internal]
    (per_leaf, per_node), *_ = np.linalg.lstsq(design, ns, rcond=None)
    return {"ns_per_leaf": round(float(per_leaf), 1),
            "ns_per_internal_node": round(float(per_node), 1),
            "largest_residual_ns": round(float(np.abs(ns - design @ [per_leaf, per_node]).max()),
                                         1)}


def _spreads(runs: list[dict]) -> tuple[dict, dict]:
    """Largest over smallest CPU seconds per leaf over ``runs`` (release, build + release,
    and, shown only, the release's user seconds), and whether each target spread is met."""
    per_leaf = {"release": [r["seconds_per_leaf"]["release"] for r in runs],
                "build_plus_release": [(r["cpu_seconds"]["build"] + r["cpu_seconds"]["release"])
                                       / r["n_leaves"] for r in runs]}
    spread = {k: round(max(v) / min(v), 3) for k, v in per_leaf.items()}
    met = {k: bool(v <= PER_LEAF_SPREAD) for k, v in spread.items()}
    user = [r["user_seconds_per_leaf"]["release"] for r in runs]
    spread["release_user_only"] = round(max(user) / min(user), 3)
    return spread, met


if __name__ == "__main__":
    sys.exit(main())

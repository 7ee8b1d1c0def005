"""Consistent group-size mechanisms compared (issue 17, item 4): earth mover's distance per
level, with and without the ``groups`` invariant (every region's number of groups kept
exactly), the number of regions whose number of groups is lost, and the national count of
groups of size 0 (none is true).

Data: the bundled synthetic-from-real US households (nation > states > counties,
`hierdp_core.groupsizes.samples`; sizes top-coded at ``--max-size``), and the shared taxi
data if ``/work/shared/data`` has any (its README lists none today: skipped, with the reason).

    python benchmarks/bench_group_size_consistency.py [--epsilons 0.5,1] [--trials 5]
        [--max-size 50] [--seed 0] [--markdown]

Prints one JSON object: per dataset and epsilon, per mechanism variant (``name`` or ``name
groups=exact``): ``emd_by_level`` (mean per region, mean over trials), ``lost_group_counts``
(regions whose number of groups differs from the truth), ``national_size_0`` and
``seconds``; ``best``: the variant with the smallest EMD per level, and overall the one
best at the most levels (ties: the smallest EMD summed over every region). ``--markdown``
prints the README table instead (the smallest EMD per level in bold, ties included).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from machine import machine_info
from markdown import grouped, table

from hierdp_core.groupsizes.data import group_size_data_from_histograms, group_size_metrics
from hierdp_core.groupsizes.samples import us_households
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

SHARED_DATA = Path("/work/shared/data")


def variants() -> list[tuple[str, dict]]:
    """Every consistent private group-size mechanism, with each value of its ``groups``."""
    out = []
    for info in list_mechanisms("group-sizes"):
        if info.consistent and info.private:
            groups = next((p for p in info.parameters if p.name == "groups"), None)
            out += ([(info.name, {"groups": g}) for g in groups.choices] if groups
                    else [(info.name, {})])
    return out


def run(data, name: str, params: dict, epsilon: float, trials: int, seed: int) -> dict:
    mechanism, truth = get_mechanism(name), data.groups()
    emd, lost, size0, seconds = [], [], [], []
    for trial in range(trials):
        started = time.perf_counter()
        release = mechanism.release(data, PrivacyBudget.pure(epsilon),
                                    source=NoiseSource(seed=seed + trial), **params)
        seconds.append(time.perf_counter() - started)
        values = np.asarray(release.values)
        emd.append(group_size_metrics(data, values)["emd_mean"].to_numpy())
        lost.append(int(np.count_nonzero(values.sum(axis=1) != truth)))
        size0.append(int(values[0, 0]))
    names = data.hierarchy.level_names
    return {"emd_by_level": dict(zip(names, np.mean(emd, axis=0).round(1).tolist(), strict=True)),
            "lost_group_counts": float(np.mean(lost)), "regions": data.hierarchy.n_nodes,
            "national_size_0": float(np.mean(size0)), "seconds": round(float(np.mean(seconds)), 3)}


def best(results: dict, level_sizes: list[int]) -> dict:
    """The variant with the smallest EMD at each level, and overall the one best at the most
    levels (ties: the smallest EMD summed over every region)."""
    levels = list(next(iter(results.values()))["emd_by_level"])
    by_level = {lv: min(results, key=lambda k: results[k]["emd_by_level"][lv]) for lv in levels}

    def key(k):
        emd = results[k]["emd_by_level"].values()
        return (-list(by_level.values()).count(k),
                sum(e * n for e, n in zip(emd, level_sizes, strict=True)))
    return {"by_level": by_level, "overall": min(results, key=key)}


def compare(data, epsilons: list[float], trials: int, seed: int) -> dict:
    h = data.hierarchy
    sizes = [h.level_size(lv) for lv in range(h.n_levels)]
    out = {"level_sizes": sizes, "groups": data.total_groups}
    for epsilon in epsilons:
        results = {}
        for name, params in variants():
            label = " ".join([name, *(f"{k}={v}" for k, v in params.items())])
            results[label] = run(data, name, params, epsilon, trials, seed)
        out[f"epsilon={epsilon:g}"] = {"mechanisms": results, "best": best(results, sizes)}
    return out


def markdown(out: dict) -> str:
    """The README table: per epsilon and variant, EMD per level (the smallest in bold), lost
    group counts and the national number of groups of size 0."""
    rows = []
    for key, entry in out.items():
        if not key.startswith("epsilon="):
            continue
        results = entry["mechanisms"].values()
        least = {lv: min(r["emd_by_level"][lv] for r in results) for lv in entry["best"]["by_level"]}
        for label, r in entry["mechanisms"].items():
            name, *params = label.split(" ")
            emd = [f"**{grouped(e)}**" if e == least[lv] else grouped(e)
                   for lv, e in r["emd_by_level"].items()]
            rows.append([key.removeprefix("epsilon="), " ".join([f"`{name}`", *params]), *emd,
                         grouped(r["lost_group_counts"]), f"{r['national_size_0']:.1f}"])
    return table(["epsilon", "mechanism", *least, "lost G_v", "national size 0"], rows)


def taxi_files() -> list[Path]:
    return sorted(p for p in SHARED_DATA.rglob("*") if "taxi" in p.name.lower()) \
        if SHARED_DATA.is_dir() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="0.5,1")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--max-size", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the README table instead")
    args = parser.parse_args()
    data = group_size_data_from_histograms(us_households(max_size=args.max_size),
                                           ["state", "county"], "size", "households",
                                           max_size=args.max_size)
    found = taxi_files()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    out = {"epsilons": epsilons, "trials": args.trials, "max_size": args.max_size,
           "us-households": compare(data, epsilons, args.trials, args.seed),
           "taxi": {"skipped": "found files but no loader for them: "
                               + ", ".join(map(str, found))} if found else
                   {"skipped": f"no taxi data under {SHARED_DATA} (its README lists none)"},
           "machine": machine_info()}
    print(markdown(out["us-households"]) if args.markdown else json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

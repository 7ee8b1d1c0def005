"""Group-size release on Census-style data: every registered group-size mechanism, timed,
with the paper's per-level L1 error (Fioretto et al., Table 7 design), earth mover's
distance and constraint violations, averaged over trials.

Data: the bundled synthetic-from-real US households (nation > 51 states > 3,141 counties,
about 116 million households, sizes top-coded at N = 1000; `hierdp_core.groupsizes.samples`).

    python benchmarks/bench_group_sizes.py [--epsilons 0.1,0.5,1] [--trials 3]
        [--mechanisms gs-topdown,...] [--max-size 1000] [--seed 0] [--markdown]

Prints one JSON object: ``mechanisms`` maps each name to ``seconds`` (mean per release),
``l1_by_level``, ``emd_by_level``, ``violations`` (mean number of (parent, size) cells that
differ from the sum of their children) at the first epsilon, and ``by_epsilon`` with the
same for every epsilon. ``--markdown`` prints the README table instead (L1 in thousands of
households; seconds are timings, every other number is seeded).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from machine import machine_info
from markdown import table

from hierdp_core.groupsizes.data import group_size_data_from_histograms, group_size_metrics
from hierdp_core.groupsizes.samples import us_households
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource


def run(data, name: str, epsilon: float, trials: int, seed: int) -> dict:
    mechanism = get_mechanism(name)
    seconds, tables = [], []
    for trial in range(trials):
        source = NoiseSource(seed=seed + trial)
        started = time.perf_counter()
        release = mechanism.release(data, PrivacyBudget.pure(epsilon), source=source)
        seconds.append(time.perf_counter() - started)
        tables.append(group_size_metrics(data, release.values))
    levels = tables[0]["level_name"].tolist()

    def mean(column: str) -> dict:
        return dict(zip(levels, np.mean([t[column] for t in tables], axis=0).round(1).tolist(),
                        strict=True))

    return {"seconds": round(float(np.mean(seconds)), 3),
            "seconds_all": [round(s, 3) for s in seconds],
            "l1_by_level": mean("l1"), "emd_by_level": mean("emd_mean"),
            "violations": float(np.mean([t["consistency_violations"].sum() for t in tables])),
            "faithfulness_gap": mean("faithfulness_gap")}


def markdown(out: dict) -> str:
    """The README table: per mechanism and epsilon, seconds, L1 per level / 1,000, #CV."""
    rows = [[f"`{name}`", eps, out["trials"], f"{r['seconds']:.2f}",
             *(f"{v / 1000:.1f}" for v in r["l1_by_level"].values()), f"{r['violations']:g}"]
            for name, m in out["mechanisms"].items() for eps, r in m["by_epsilon"].items()]
    levels = next(iter(out["mechanisms"].values()))["l1_by_level"]
    return table(["mechanism", "epsilon", "trials", "s / release",
                  *(f"L1 {lv}" for lv in levels), "#CV"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="0.1,0.5,1")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--mechanisms", default="")
    parser.add_argument("--max-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the README table instead")
    args = parser.parse_args()
    names = [n for n in args.mechanisms.split(",") if n] or [
        i.name for i in list_mechanisms("group-sizes")]
    epsilons = [float(e) for e in args.epsilons.split(",")]
    table = us_households(max_size=args.max_size)
    started = time.perf_counter()
    data = group_size_data_from_histograms(table, ["state", "county"], "size", "households",
                                           max_size=args.max_size)
    build = time.perf_counter() - started
    h = data.hierarchy
    out = {"data": {"regions": h.n_nodes, "level_sizes": [h.level_size(lv)
                                                          for lv in range(h.n_levels)],
                    "sizes": args.max_size + 1, "groups": data.total_groups,
                    "build_seconds": round(build, 3)},
           "epsilons": epsilons, "trials": args.trials, "mechanisms": {},
           "machine": machine_info()}
    for name in names:
        results = {e: run(data, name, e, args.trials, args.seed) for e in epsilons}
        first = results[epsilons[0]]
        out["mechanisms"][name] = {**first, "epsilon": epsilons[0],
                                   "by_epsilon": {str(e): r for e, r in results.items()}}
    print(markdown(out) if args.markdown else json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

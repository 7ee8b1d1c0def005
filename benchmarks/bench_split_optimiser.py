"""Budget-split optimiser (issue 17): the stated error of the uniform split against the
optimised one on the bundled samples, a priori and measured by running the real mechanism.

For every sample (us-counties, italy-municipalities), family (raw, least-squares, topdown),
privacy definition (pure epsilon with Laplace noise; zCDP rho with Gaussian noise, discrete
Gaussian for raw) and goal, `optimise_split` chooses the split from public parameters alone;
then the real mechanism runs ``--runs`` times with the uniform split and with the optimised
one (seeded; the runs are batched as copies of the category columns, which the count
mechanisms treat independently, as the privacy audit does) and the goal is evaluated on the
measured per-level errors (mean over the level's cells and runs of e^2 or |e|).

Goals: ``weighted-mse`` (w = 1 on every level), ``weighted-mse-cells`` (w_l = units at level
l: every released cell counts once) and ``worst-relative`` (max over levels of the mean |e|
divided by a public population bin of a typical unit at the level, round figures stated
below, not read from the data).

Prints ONE JSON object, or with ``--markdown`` the rows of the README table. Example::

    python benchmarks/bench_split_optimiser.py --runs 30
    python benchmarks/bench_split_optimiser.py --samples us-counties --families raw --markdown
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from machine import machine_info
from markdown import table

from hierdp_core.data.samples import SAMPLES
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.privacy.split_optimiser import FAMILIES, Goal, optimise_split
from hierdp_core.queries.counts import CountData, count_data_from_table

#: a typical unit's population per level, root first (public round figures)
POPULATION_BINS = {
    "us-counties": (3e8, 4e6, 2.5e4),  # nation, median state, median county
    "italy-municipalities": (6e7, 2e6, 4e5, 2.5e3),  # nation, region, province, municipality
}
#: (mechanism, noise parameter) per family and definition
MECHANISMS = {
    ("raw", "pure-dp"): ("raw-laplace", {}),
    ("raw", "zcdp"): ("raw-discrete-gaussian", {}),
    ("least-squares", "pure-dp"): ("least-squares", {"noise": "laplace"}),
    ("least-squares", "zcdp"): ("least-squares", {"noise": "gaussian"}),
    ("topdown", "pure-dp"): ("topdown", {"noise": "laplace"}),
    ("topdown", "zcdp"): ("topdown", {"noise": "gaussian"}),
}


def goals(sample: str, level_sizes: np.ndarray) -> dict[str, Goal]:
    return {"weighted-mse": Goal.weighted(),
            "weighted-mse-cells": Goal.weighted(level_sizes),
            "worst-relative": Goal.worst_relative(POPULATION_BINS[sample])}


def measured_errors(data: CountData, mechanism: str, params: dict, budget: PrivacyBudget,
                    shares: np.ndarray, runs: int, seed: int) -> dict[str, np.ndarray]:
    """Per level, mean e^2 and mean |e| over the level's cells in ``runs`` releases."""
    h = data.hierarchy
    k = data.leaf_counts.shape[1] * runs
    batch = CountData(h, np.tile(data.leaf_counts, runs), categories=tuple(map(str, range(k))),
                      category_columns=("run x category",))
    release = get_mechanism(mechanism).release(batch, budget, split=shares,
                                               source=NoiseSource(seed=seed), **params)
    errors = release.values - batch.node_counts()
    levels = [errors[h.level_slice(lv)] for lv in range(h.n_levels)]
    return {"mse": np.array([(e**2).mean() for e in levels]),
            "mae": np.array([np.abs(e).mean() for e in levels])}


def run(sample: str, budgets: dict[str, PrivacyBudget], runs: int, seed: int,
        families: tuple[str, ...] = FAMILIES) -> list[dict]:
    s = SAMPLES[sample]
    data = count_data_from_table(s.loader(), list(s.levels), count_column=s.count_column,
                                 category_columns=s.category_columns)
    h = data.hierarchy
    rows = []
    for family in families:
        for definition, budget in budgets.items():
            mechanism, params = MECHANISMS[(family, definition)]
            noise = params.get("noise", mechanism.removeprefix("raw-"))
            measured = {}  # by split, shared between goals

            def measure(shares, mechanism=mechanism, params=params, budget=budget,
                        measured=measured):
                key = tuple(np.round(shares, 12))
                if key not in measured:
                    measured[key] = measured_errors(data, mechanism, params, budget, shares,
                                                    runs, seed)
                return measured[key]

            for goal_name, goal in goals(sample, np.diff(h.level_offsets)).items():
                t = time.perf_counter()
                choice = optimise_split(h, family, budget, goal, noise=noise)
                seconds = time.perf_counter() - t
                uniform = choice.uniform_errors["share"].to_numpy()
                empirical = {name: goal.objective(measure(sh)[goal.metric])
                             for name, sh in (("uniform", uniform), ("optimised", choice.shares))}
                rows.append({
                    "sample": sample, "family": family, "mechanism": mechanism,
                    "definition": definition, "goal": goal_name, "metric": goal.metric,
                    "method": choice.method, "optimise_seconds": round(seconds, 3),
                    "split": [float(f"{x:.6g}") for x in choice.shares],
                    "a_priori": {"uniform": choice.uniform_objective,
                                 "optimised": choice.objective,
                                 "ratio": round(choice.objective / choice.uniform_objective, 4)},
                    "measured": {**empirical,
                                 "ratio": round(empirical["optimised"] / empirical["uniform"], 4)},
                })
                print(f"{sample} {family} {definition} {goal_name}: a priori "
                      f"{rows[-1]['a_priori']['ratio']}, measured {rows[-1]['measured']['ratio']}",
                      file=sys.stderr)
    return rows


def markdown(rows: list[dict]) -> str:
    """The README table: values uniform -> optimised (ratio), 4 significant digits."""
    label = {"us-counties": "US", "italy-municipalities": "Italy"}

    def pair(d: dict) -> str:
        return f"{d['uniform']:.4g} → {d['optimised']:.4g} ({d['ratio']})"
    return table(["sample", "family", "definition", "goal", "optimised split (root first)",
                  "a priori", "measured"],
                 [[label[r["sample"]], r["family"], r["definition"], r["goal"],
                   ", ".join(f"{x:.3g}" for x in r["split"]), pair(r["a_priori"]),
                   pair(r["measured"])] for r in rows])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", default="us-counties,italy-municipalities")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--rho", type=float, default=0.5)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--markdown", action="store_true", help="print the README table instead")
    args = p.parse_args(argv)
    families = tuple(args.families.split(","))
    budgets = {"pure-dp": PrivacyBudget.pure(args.epsilon), "zcdp": PrivacyBudget.zcdp(args.rho)}
    t = time.perf_counter()
    rows = [r for name in args.samples.split(",")
            for r in run(name, budgets, args.runs, args.seed, families)]
    if args.markdown:
        print(markdown(rows))
        return 0
    out = {
        "benchmark": "split_optimiser", "runs": args.runs, "seed": args.seed,
        "epsilon": args.epsilon, "rho": args.rho, "population_bins": POPULATION_BINS,
        "results": rows,
        "a_priori_never_higher": all(r["a_priori"]["ratio"] <= 1 for r in rows),
        "measured_lower_or_equal": sum(r["measured"]["ratio"] <= 1 + 1e-9 for r in rows),
        "cases": len(rows), "seconds": round(time.perf_counter() - t, 1),
        "machine": machine_info(),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

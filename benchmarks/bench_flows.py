"""O/D flow release (Boninsegna & Silvestri): every registered flow mechanism, timed, with
the paper's per-level maximum absolute error and false discovery rate (plus FNR and MAE),
averaged over runs, with min-max bands.

Shapes: the paper's synthetic datasets (``binary-complete``, ``binary-dense``,
``binary-sparse``: g = 8, branching 2, T = 16; ``random-*``: g = 4, branching 2-10, T = 8),
``binary6`` (the authors' generator defaults: final level 6, branching 2, zero probability
0.5, 2,048 non-zero leaf cells; the shape of their runtime figures), ``us-counties``
(ACS 2009-2013 county-to-county commuting, state > county) and ``lodes-tracts`` (LODES 2018
tract flows within 86 counties of 8 states, state > county > tract), both from
``../shared/data/flows/`` and skipped with a note when absent; ``italy-gravity``: the
bundled real Italian geography (region > province > municipality) with synthetic
gravity-like commuting flows the size of the paper's ISTAT data (its scale test).

    python benchmarks/bench_flows.py --shape binary6 [--epsilons 0.1,1,10] [--runs 5]
        [--delta 1e-8] [--mechanisms inftda,...] [--conversion paper|tight] [--seed 0]
        [--markdown]

Budget: with ``--conversion paper`` (default) rho = (sqrt(ln(1/delta) + eps) -
sqrt(ln(1/delta)))^2, the paper's conversion, so the numbers compare with its figures;
``tight`` uses the largest rho that implies (eps, delta)-DP. The stability histogram gets
(eps, delta) directly. Prints one JSON object: ``mechanisms`` maps each name to
``seconds`` (mean per release), ``max_error_by_level`` and ``fdr_by_level`` (means over runs,
levels 0..T) at epsilon 1 (or the first epsilon), and ``by_epsilon`` the same, with
``fnr_by_level``, ``mae_by_level`` and min/max bands, for every epsilon. ``--markdown``
prints the README table instead (seconds are timings; every other number is seeded).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from machine import machine_info
from markdown import grouped, table

from hierdp_core.flows.data import flow_data_from_table
from hierdp_core.flows.metrics import flow_metrics
from hierdp_core.flows.synthetic import SHAPES, synthetic_shape
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

SHARED_FLOWS = Path(__file__).resolve().parents[2] / "shared" / "data" / "flows"
US_FLOWS = SHARED_FLOWS / "us_county_commuting_acs2009_2013.csv.gz"
LODES_FLOWS = SHARED_FLOWS / "tract_od_lodes2018_8states.csv.gz"
REAL = {"us-counties": US_FLOWS, "lodes-tracts": LODES_FLOWS}
#: One run of the authors' code on binary6 (their paper / README, 8-core Xeon W-2245).
AUTHORS_SECONDS_BINARY6 = {"tda-l2": 52.0, "tda-linf-milp": 35.0, "inftda": 13.0}


def us_counties():
    table = pd.read_csv(US_FLOWS, dtype={"res_fips": str, "work_fips": str})
    abroad = table["work_fips"].isna()
    table = table[~abroad]
    trips = pd.DataFrame({"o_state": table["res_fips"].str[:2], "o_county": table["res_fips"],
                          "d_state": table["work_fips"].str[:2],
                          "d_county": table["work_fips"], "workers": table["workers"]})
    note = f"{int(abroad.sum())} rows with a workplace abroad left out"
    return flow_data_from_table(trips, ["o_state", "o_county"], ["d_state", "d_county"],
                                "workers"), note


def lodes_tracts():
    table = pd.read_csv(LODES_FLOWS, dtype={"home_tract": str, "work_tract": str})
    home, work = table["home_tract"], table["work_tract"]
    trips = pd.DataFrame({"o_state": home.str[:2], "o_county": home.str[:5], "o_tract": home,
                          "d_state": work.str[:2], "d_county": work.str[:5], "d_tract": work,
                          "workers": table["workers"]})
    note = "LODES 2018 tract flows of 86 counties in 8 states (flows within a county only)"
    return flow_data_from_table(trips, ["o_state", "o_county", "o_tract"],
                                ["d_state", "d_county", "d_tract"], "workers"), note


def italy_gravity():
    from hierdp_core.data.samples import load_sample
    from hierdp_core.flows.synthetic import gravity_flows

    people = load_sample("italy-municipalities")
    areas = people.groupby(["region", "province", "municipality"], as_index=False)[
        "residents"].sum()
    data = gravity_flows(areas[["region", "province", "municipality"]], areas["residents"],
                         pairs=1_600_000, trips=28_805_440, seed=1)
    note = ("synthetic-from-real: the bundled ISTAT geography (20 regions, 107 provinces, "
            "7,901 municipalities) and residents, gravity-like commuting flows sized like "
            "the paper's Italy data (28.8 million trips, about 550 thousand pairs)")
    return data, note


def paper_rho(epsilon: float, delta: float) -> float:
    log_inv = math.log(1 / delta)
    return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2


def budget_for(name: str, epsilon: float, delta: float, conversion: str) -> PrivacyBudget:
    if name == "stability-histogram" or conversion == "tight":
        return PrivacyBudget.approx(epsilon, delta)
    return PrivacyBudget.zcdp(paper_rho(epsilon, delta), delta)


def run(data, name: str, budget: PrivacyBudget, runs: int, seed: int) -> dict:
    mechanism = get_mechanism(name)
    seconds, tables = [], []
    for i in range(runs):
        started = time.perf_counter()
        release = mechanism.release(data, budget, source=NoiseSource(seed=seed + i))
        seconds.append(time.perf_counter() - started)
        tables.append(flow_metrics(data, release))

    def stat(column: str, how) -> list:
        return np.round(how([t[column].to_numpy() for t in tables], axis=0), 3).tolist()

    return {"seconds": round(float(np.mean(seconds)), 4),
            "seconds_all": [round(s, 4) for s in seconds],
            "max_error_by_level": stat("max_abs_error", np.mean),
            "max_error_min": stat("max_abs_error", np.min),
            "max_error_max": stat("max_abs_error", np.max),
            "fdr_by_level": stat("fdr", np.mean), "fnr_by_level": stat("fnr", np.mean),
            "mae_by_level": stat("mae", np.mean),
            "released_nonzero_by_level": stat("released_nonzero", np.mean)}


def error(x: float) -> str:
    """A maximum error as the README writes it: 1 decimal below 100, else a whole number."""
    return f"{x:.1f}" if x < 99.95 else grouped(x)


def markdown(out: dict) -> str:
    """The README heading line and table of one shape: per mechanism and epsilon, seconds,
    max error at levels 1, T/2 and T, FDR at T/2 and T, FNR at T."""
    d = out["data"]
    t = d["depth_T"]
    levels = (1, t // 2, t)
    head = (f"**`{out['shape']}`**: n = {d['n']:,}, {d['nonzero_leaf_pairs']:,} non-zero leaf "
            f"pairs, {d['leaf_areas']:,} leaf areas, T = {t}."
            + (f" {d['note']}." if d["note"] else ""))
    rows = [[f"`{name}`", f"{float(eps):g}", out["runs"], f"{r['seconds']:.3f}",
             *(error(r["max_error_by_level"][lv]) for lv in levels),
             *(f"{r['fdr_by_level'][lv]:.1f}" for lv in levels[1:]),
             f"{r['fnr_by_level'][t]:.1f}"]
            for name, m in out["mechanisms"].items() for eps, r in m["by_epsilon"].items()]
    header = ["mechanism", "ε", "runs", "s / run", *(f"max err L{lv}" for lv in levels),
              *(f"FDR L{lv} %" for lv in levels[1:]), f"FNR L{t} %"]
    return head + "\n\n" + table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="binary6",
                        choices=sorted(SHAPES) + sorted(REAL) + ["italy-gravity"])
    parser.add_argument("--epsilons", default="0.1,1,10")
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mechanisms", default="")
    parser.add_argument("--conversion", default="paper", choices=("paper", "tight"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the README table instead")
    args = parser.parse_args()
    names = [n for n in args.mechanisms.split(",") if n] or [
        i.name for i in list_mechanisms("flows")]
    epsilons = [float(e) for e in args.epsilons.split(",")]
    out = {"shape": args.shape, "epsilons": epsilons, "delta": args.delta, "runs": args.runs,
           "conversion": args.conversion, "mechanisms": {},
           "machine": machine_info()}
    note = ""
    if args.shape in REAL:
        if not REAL[args.shape].exists():
            out["skipped"] = f"{REAL[args.shape]} not found"
            print(json.dumps(out, indent=2))
            return
        data, note = us_counties() if args.shape == "us-counties" else lodes_tracts()
    elif args.shape == "italy-gravity":
        data, note = italy_gravity()
    else:
        data = synthetic_shape(args.shape, seed=args.seed + 42)
    g = data.geography
    out["data"] = {"n": data.n, "nonzero_leaf_pairs": int(data.origin.size),
                   "leaf_areas": g.level_size(g.depth), "depth_T": data.depth,
                   "levels": list(data.level_names), "note": note}
    primary = 1.0 if 1.0 in epsilons else epsilons[0]
    for name in names:
        results = {e: run(data, name, budget_for(name, e, args.delta, args.conversion),
                          args.runs, args.seed) for e in epsilons}
        entry = {**results[primary], "epsilon": primary,
                 "by_epsilon": {str(e): r for e, r in results.items()}}
        if args.shape == "binary6" and name in AUTHORS_SECONDS_BINARY6:
            entry["authors_seconds"] = AUTHORS_SECONDS_BINARY6[name]
            entry["speedup_vs_authors"] = round(AUTHORS_SECONDS_BINARY6[name]
                                                / results[primary]["seconds"], 1)
        out["mechanisms"][name] = entry
    print(markdown(out) if args.markdown else json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

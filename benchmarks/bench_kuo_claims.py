"""Kuo et al.'s claim, checked on data: their Hc estimator (noisy cumulative histogram) wins on
dense size histograms, Hg (noisy sorted group sizes) on sparse, gappy ones.

Two synthetic-from-real datasets on the US county tree (`hierdp_core.groupsizes.samples`):
- sparse: households with group quarters up to 10,000 people, N = 10,000 (Kuo et al.'s
  "partially synthetic housing" design: sizes 1..12, then rare large groups);
- dense: blocks with a negative-binomial number of members, N = 3,000 (many distinct sizes,
  zeros included, like their race data).

    python benchmarks/bench_kuo_claims.py [--epsilons 0.1,1] [--trials 3] [--seed 0]
        [--markdown]

Prints one JSON object: per dataset, epsilon and estimator (per-region Hc and Hg, levels
not reconciled), the mean earth mover's distance per region at every level, and which wins;
with ``--markdown`` the README table instead (Hc / Hg per level, the winner in bold).
"""

from __future__ import annotations

import argparse
import json

from bench_group_sizes import run
from markdown import grouped, table

from hierdp_core.groupsizes.data import group_size_data_from_histograms
from hierdp_core.groupsizes.samples import us_blocks, us_households

DATASETS = {
    "sparse households (N = 10,000)": (lambda: us_households(max_size=10_000,
                                                             largest_group=10_000), 10_000),
    "dense blocks (N = 3,000)": (us_blocks, 3_000),
}


def markdown(out: dict) -> str:
    """The README table: per dataset and epsilon, Hc / Hg per level, the smaller in bold."""
    rows = []
    for label, entry in out.items():
        for eps, r in entry["by_epsilon"].items():
            emd, cells = r["emd_by_level"], []
            for level, winner in r["better"].items():
                cells.append(" / ".join(f"**{grouped(emd[n][level])}**" if n == winner
                                        else grouped(emd[n][level])
                                        for n in ("gs-kuo-hc", "gs-kuo-hg")))
            rows.append([label, f"{float(eps):g}", *cells])
    levels = next(iter(next(iter(out.values()))["by_epsilon"].values()))["better"]
    return table(["data", "epsilon", *(f"{lv} Hc / Hg" for lv in levels)], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the README table instead")
    args = parser.parse_args()
    out = {}
    for label, (make, max_size) in DATASETS.items():
        data = group_size_data_from_histograms(make(), ["state", "county"], "size",
                                               "households", max_size=max_size)
        per_eps = {}
        for eps in (float(e) for e in args.epsilons.split(",")):
            emd = {name: run(data, name, eps, args.trials, args.seed)["emd_by_level"]
                   for name in ("gs-kuo-hc", "gs-kuo-hg")}
            winner = {level: min(emd, key=lambda n, lv=level: emd[n][lv])
                      for level in emd["gs-kuo-hc"]}
            per_eps[str(eps)] = {"emd_by_level": emd, "better": winner}
        out[label] = {"groups": data.total_groups, "distinct_sizes_nationally":
                      int((data.node_counts()[0] > 0).sum()), "by_epsilon": per_eps}
    print(markdown(out) if args.markdown else json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

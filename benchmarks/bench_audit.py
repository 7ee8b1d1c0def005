"""Privacy audit of registered mechanisms at the CLI's settings, with times (JSON).

Runs `hierdp_core.audit.audit_mechanism` on every registered mechanism (or those named) at
one epsilon with the CLI's defaults (20,000 trials per side, seed 0; stages of composite
mechanisms 5 times as many), one after the other, and prints one JSON record per
mechanism: whether it is registered as private, whether the audit passed, the claim and
lower bound (of the worst stage for composite mechanisms, with every stage listed), the
event and the seconds taken. The summary says whether every private mechanism passed, every
non-private one failed, and the longest run. Exit status 0 when both hold, 1 otherwise.

Usage (from the repository root; the full run takes about an hour on 2 cores):

    .venv/bin/python benchmarks/bench_audit.py                      # everything
    .venv/bin/python benchmarks/bench_audit.py dawa-reference gs-mc-chain-paper dawa
    .venv/bin/python benchmarks/bench_audit.py --trials 4000 --query ranges
    .venv/bin/python benchmarks/bench_audit.py gs-mh-dp gs-topdown --trials 5000 --param groups=exact
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from machine import machine_info

from hierdp_core.audit import DEFAULT_TRIALS, audit_mechanism
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms


def record(name: str, epsilon: float, trials: int, seed: int, params: dict) -> dict:
    start = time.perf_counter()
    r = audit_mechanism(name, epsilon, trials=trials, seed=seed, **params)
    return {
        "mechanism": name, "parameters": params, "private": get_mechanism(name).info.private,
        "passed": r.passed, "claimed_epsilon": r.claimed_epsilon,
        "epsilon_estimate": round(r.epsilon_estimate, 4),
        "epsilon_lower_bound": round(r.epsilon_lower_bound, 4),
        "stage": r.stage, "event": r.event,
        "stages": [{"stage": s.stage, "claimed_epsilon": s.claimed_epsilon,
                    "epsilon_lower_bound": round(s.epsilon_lower_bound, 4), "passed": s.passed,
                    "trials": s.trials, "seconds": s.seconds} for s in r.stages],
        "trials": r.trials, "seconds": round(time.perf_counter() - start, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mechanisms", nargs="*", help="names (default: every registered one)")
    parser.add_argument("--query", help="only the mechanisms answering this query kind")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a mechanism parameter for every mechanism named (repeatable)")
    args = parser.parse_args()
    params = dict(p.split("=", 1) for p in args.param)
    names = args.mechanisms or [i.name for i in list_mechanisms(args.query)]
    results = []
    for name in names:
        results.append(record(name, args.epsilon, args.trials, args.seed, params))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # progress
    ok = all(r["passed"] == r["private"] for r in results)
    print(json.dumps({
        "epsilon": args.epsilon, "trials": args.trials, "seed": args.seed,
        "private_all_pass": all(r["passed"] for r in results if r["private"]),
        "non_private_all_fail": not any(r["passed"] for r in results if not r["private"]),
        "longest_seconds": max(r["seconds"] for r in results),
        "results": results, "machine": machine_info(),
    }, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

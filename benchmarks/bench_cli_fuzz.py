"""The fuzzed command line, long run (issue 32): ``--cases`` cases drawn by hypothesis
(`tests/cli_fuzz.py`: every query kind and mechanism, small tables, absurd numbers), each
released through ``hierdp release`` in a subprocess under a 2 GB address-space limit and a
timeout. Prints ONE JSON object: the cases run, the count of each outcome (released,
refused, timeout, signal, failed), the problems found (a crash, a traceback, a refusal of
more than one line, a half-written folder; at most 20 listed with their flags) and the
seconds taken. Each case runs in a child forked from this process after it imported the
release's modules once (`cli_fuzz.run_case_forked`: seconds of imports saved per case, so
thousands of cases fit in an hour), or with ``--fresh`` in a new interpreter as in CI.
Example::

    nice -n 19 python benchmarks/bench_cli_fuzz.py --cases 500 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cli_fuzz import (  # noqa: E402
    fuzz_cases,
    outcome,
    problem,
    run_case,
    run_case_forked,
    warm_up,
)
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop drawing cases after this long (the run still reports)")
    parser.add_argument("--fresh", action="store_true",
                        help="a fresh interpreter per case (python -m hierdp_core, as in CI) "
                             "instead of a child forked from this warmed-up process")
    args = parser.parse_args(argv)
    runner = run_case if args.fresh else run_case_forked
    if not args.fresh:
        warm_up()
    counts: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    problems: list[dict] = []
    started = time.perf_counter()
    deadline = None if args.minutes is None else started + 60 * args.minutes
    with tempfile.TemporaryDirectory() as tmp:
        @seed(args.seed)
        @settings(max_examples=args.cases, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=fuzz_cases())
        def run(case):
            if deadline is not None and time.perf_counter() > deadline:
                return  # out of time: the remaining draws are skipped, not run
            folder = Path(tmp) / f"c{sum(counts.values())}"
            code, err, out = runner(case, folder, timeout=args.timeout)
            counts[outcome(code, err)] += 1
            kinds[case.query] += 1
            found = problem(code, err, out)
            if found:
                problems.append({"flags": case.flags, "problem": found})
                print(json.dumps(problems[-1]), file=sys.stderr, flush=True)

        run()
    result = {"cases": sum(counts.values()), "outcomes": dict(counts),
              "query_kinds": dict(kinds), "problems": len(problems),
              "problem_examples": problems[:20],
              "seconds": round(time.perf_counter() - started, 1),
              "runner": "fresh interpreter" if args.fresh else "forked from a warm process"}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()

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
import math
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
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


class _OutOfTime(Exception):
    """Raised by the first example after ``--minutes``, before it draws its case: the run
    stops (no shrinking phase)."""


def _out_of_time(exc: BaseException | None) -> bool:
    """``exc`` is `_OutOfTime`, or an error hypothesis raised while handling it (a draw
    that stops early looks to hypothesis like inconsistent data generation)."""
    while exc is not None:
        if isinstance(exc, _OutOfTime):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop after this long: no case is drawn after it and the case "
                             "running then is cut at it (counted as 'cut at the deadline', "
                             "not a problem); the JSON is printed at once")
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
    deadline = math.inf if args.minutes is None else started + 60 * args.minutes
    stopped, at_deadline = "all cases drawn", f"the deadline of {args.minutes} minute(s)"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            @seed(args.seed)
            @settings(max_examples=args.cases, deadline=None, database=None,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
            @given(data=st.data())
            def run(data):
                nonlocal stopped
                if time.perf_counter() >= deadline:
                    raise _OutOfTime  # before drawing: drawing a case takes time too
                case = data.draw(fuzz_cases())
                left = deadline - time.perf_counter()
                folder = Path(tmp) / f"c{sum(counts.values())}"
                code, err, out = runner(case, folder, timeout=min(args.timeout, left))
                if code is None and args.timeout > left:
                    counts["cut at the deadline"] += 1
                    stopped = at_deadline
                    return  # the next example stops the run
                counts[outcome(code, err)] += 1
                kinds[case.query] += 1
                found = problem(code, err, out)
                if found:
                    problems.append({"flags": case.flags, "problem": found})
                    print(json.dumps(problems[-1]), file=sys.stderr, flush=True)

            run()
    except BaseException as exc:
        if not _out_of_time(exc):  # interrupted or broken: the counts so far still print
            stopped = f"{type(exc).__name__}: {exc}"
            raise
        stopped = at_deadline
    finally:
        result = {"cases": sum(counts.values()), "outcomes": dict(counts),
                  "query_kinds": dict(kinds), "problems": len(problems),
                  "problem_examples": problems[:20], "stopped_by": stopped,
                  "seconds": round(time.perf_counter() - started, 1),
                  "runner": "fresh interpreter" if args.fresh else "forked from a warm process"}
        print(json.dumps(result, indent=2), flush=True)
    return result


if __name__ == "__main__":
    main()

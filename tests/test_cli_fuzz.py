"""The fuzzed command line (issue 32), short version: hypothesis draws the arguments and a
small table of every query kind and mechanism, absurd numbers included (`cli_fuzz`), runs
`hierdp release` in a subprocess under a 2 GB address-space limit, and every run either
releases (exit 0, a complete folder) or refuses with exit 2 and one ``error:`` line,
never a signal, a traceback, a MemoryError or a half-written folder. Derandomised, so CI
draws the same ten cases every time (each a fresh interpreter: the start-up imports are
most of its cost); the long run, thousands of cases, is benchmarks/bench_cli_fuzz.py."""

from __future__ import annotations

import itertools
import time

import pytest
from cli_fuzz import Case, fuzz_cases, outcome, problem, run_case
from hypothesis import HealthCheck, given, settings

FUZZ = settings(max_examples=10, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])
_counter = itertools.count()


@pytest.mark.slow
@FUZZ
@given(case=fuzz_cases())
def test_every_run_releases_or_refuses_in_one_line(case, tmp_path):
    code, err, out = run_case(case, tmp_path / f"c{next(_counter)}")
    assert problem(code, err, out) is None, (case.flags, err)


def test_the_known_oom_is_refused_fast_naming_the_domain(tmp_path):
    """The case of the issue: a two-row table with a domain of 10^8 values was killed by
    the kernel; now exit 2 at once, naming --domain and the largest domain that fits."""
    case = Case("ranges", {"input": "region,age,residents\nA,3,5\nB,7,2\n"},
                ["{input}", "--structure-from-data", "--levels", "region", "--query",
                 "ranges", "--attribute", "age", "--count-column", "residents", "--domain",
                 "0-100000000", "--mechanism", "identity", "--epsilon", "1", "--seed", "1"])
    started = time.perf_counter()
    code, err, out = run_case(case, tmp_path)
    assert outcome(code, err) == "refused" and problem(code, err, out) is None, err
    assert "--domain is too large" in err and "would fit" in err
    assert time.perf_counter() - started < 60  # was minutes, then a kill; mostly imports

"""The long fuzz run (`benchmarks/bench_cli_fuzz.py`) stops at ``--minutes``: no case is
drawn after the deadline, the case running then is cut at it, and the JSON summary is
printed at once (hypothesis kept drawing, and the last case ran its full timeout, so the
summary came minutes late). The cases here are stand-ins that sleep: no release runs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_cli_fuzz  # noqa: E402


@pytest.fixture
def sleeping_cases(monkeypatch):
    """Every case 'runs' for 0.2 s (or until its timeout, for a hung one) and refuses."""
    ran = []

    def runner(case, folder, timeout):
        ran.append(timeout)
        hung = len(ran) == 2
        time.sleep(min(timeout, 30.0) if hung else 0.2)
        return (None if hung else 2), ("" if hung else "error: refused\n"), folder / "release"

    monkeypatch.setattr(bench_cli_fuzz, "run_case_forked", runner)
    monkeypatch.setattr(bench_cli_fuzz, "warm_up", lambda: None)
    return ran


def test_the_run_stops_at_the_deadline_and_prints_its_json(sleeping_cases, capsys):
    started = time.perf_counter()
    result = bench_cli_fuzz.main(["--minutes", "0.05", "--cases", "100000", "--seed", "101"])
    took = time.perf_counter() - started
    assert took < 3.0 + 1.0, took  # the deadline (3 s) and the drawing of a case
    printed = json.loads(capsys.readouterr().out)
    assert printed == result and printed["stopped_by"] == "the deadline of 0.05 minute(s)"
    # the second case hung: cut at the deadline, not reported as a problem, and no third
    assert printed["outcomes"] == {"refused": 1, "cut at the deadline": 1}
    assert printed["problems"] == 0 and printed["cases"] == 2
    assert sleeping_cases[-1] < 3.0  # its timeout was what was left of the run


def test_without_a_deadline_every_case_runs(sleeping_cases, capsys, monkeypatch):
    monkeypatch.setattr(bench_cli_fuzz, "run_case_forked",
                        lambda case, folder, timeout: (2, "error: no\n", folder / "x"))
    result = bench_cli_fuzz.main(["--cases", "5", "--seed", "202"])
    assert result["cases"] == 5 and result["stopped_by"] == "all cases drawn"
    assert json.loads(capsys.readouterr().out) == result

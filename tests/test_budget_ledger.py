"""The budget of a dataset across releases (`hierdp_core.privacy.ledger`): totals declared
once, spends composed by the declared unit, refusals before any noise, and a write-ahead
record that survives a killed process with no lost and no double-counted spend."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.ledger import COMMITTED, RESERVED, Ledger, default_ledger_path

FP = "f" * 64
ROOT = Path(__file__).resolve().parents[1]


def reserve(ledger: Ledger, budget: PrivacyBudget, fingerprint: str = FP, **kw):
    return ledger.reserve(fingerprint, budget, label="people.csv", destination="out",
                          mechanism="topdown", **kw)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


def test_the_ledger_lives_in_hierdp_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path / "home"))
    assert default_ledger_path() == tmp_path / "home" / "ledger.sqlite"
    monkeypatch.delenv("HIERDP_HOME")
    assert default_ledger_path() == Path.home() / ".hierdp" / "ledger.sqlite"
    ledger = Ledger(tmp_path / "home" / "ledger.sqlite")
    ledger.status(FP)
    assert ledger.path.stat().st_mode & 0o077 == 0  # the owner's only
    assert ledger.path.parent.stat().st_mode & 0o077 == 0


def test_the_release_that_would_exceed_the_total_is_refused(ledger):
    ledger.declare_total(FP, 2.0, unit="epsilon", label="people.csv")
    first = reserve(ledger, PrivacyBudget.pure(1.5))
    ledger.commit(first.release_id)
    with pytest.raises(BudgetError) as refused:
        reserve(ledger, PrivacyBudget.pure(0.6))
    assert "epsilon 1.5 of 2 spent" in str(refused.value) and "asks 0.6" in str(refused.value)
    assert "\n" not in str(refused.value)
    now = ledger.status(FP)
    assert len(now.spends) == 1 and now.spent == 1.5  # a refusal records nothing
    reserve(ledger, PrivacyBudget.pure(0.5))  # exactly up to the total is allowed
    assert ledger.status(FP).remaining == 0


def test_float_sums_within_the_total_are_not_refused(ledger):
    ledger.declare_total(FP, 0.3, unit="epsilon", label="people.csv")
    reserve(ledger, PrivacyBudget.pure(0.1))
    reserve(ledger, PrivacyBudget.pure(0.2))  # 0.1 + 0.2 > 0.3 in floating point
    with pytest.raises(BudgetError):
        reserve(ledger, PrivacyBudget.pure(1e-6))


def test_without_a_declared_total_the_first_release_is_the_total(ledger):
    first = reserve(ledger, PrivacyBudget.pure(1.0))
    now = ledger.status(FP)
    assert (now.total, now.unit, now.declared, now.spends[0].status) == (1.0, "epsilon", False,
                                                                         RESERVED)
    with pytest.raises(BudgetError, match="not declared.*--budget-total.*at least 2"):
        reserve(ledger, PrivacyBudget.pure(1.0))
    ledger.declare_total(FP, 3.0, unit="epsilon", label="people.csv")  # declared once: allowed
    reserve(ledger, PrivacyBudget.pure(1.0))
    ledger.commit(first.release_id)
    assert ledger.status(FP).spent == 2.0


def test_a_declared_total_changes_only_on_request_and_never_below_the_spend(ledger):
    ledger.declare_total(FP, 2.0, unit="epsilon", label="people.csv")
    ledger.declare_total(FP, 2.0, unit="epsilon", label="people.csv")  # the same: a no-op
    with pytest.raises(BudgetError, match="already declared as epsilon 2.*--change-budget-total"):
        ledger.declare_total(FP, 5.0, unit="epsilon", label="people.csv")
    reserve(ledger, PrivacyBudget.pure(1.5))
    with pytest.raises(BudgetError, match="below it"):
        ledger.declare_total(FP, 1.0, unit="epsilon", label="people.csv", change=True)
    with pytest.raises(BudgetError, match="not rho"):
        ledger.declare_total(FP, 1.0, unit="rho", label="people.csv", change=True)
    ledger.declare_total(FP, 5.0, unit="epsilon", label="people.csv", change=True)
    assert ledger.status(FP).total == 5.0
    for bad in (0, -1.0, math.inf, math.nan, "2"):
        with pytest.raises(BudgetError):
            ledger.declare_total("e" * 64, bad, unit="epsilon", label="x")
    with pytest.raises(BudgetError, match="epsilon or rho"):
        ledger.declare_total("e" * 64, 1.0, unit="delta", label="x")


def test_composition_by_the_declared_unit(ledger):
    """epsilon: pure and approximate DP add epsilons (deltas add too), zCDP is refused;
    rho: zCDP rhos add and a pure epsilon counts as epsilon^2 / 2, approximate DP is
    refused."""
    ledger.declare_total(FP, 3.0, unit="epsilon", label="e.csv")
    reserve(ledger, PrivacyBudget.pure(1.0))
    reserve(ledger, PrivacyBudget.approx(0.5, 1e-7))
    reserve(ledger, PrivacyBudget.approx(0.5, 2e-7))
    with pytest.raises(BudgetError, match="zcdp release cannot be counted"):
        reserve(ledger, PrivacyBudget.zcdp(0.01))
    now = ledger.status(FP)
    assert now.spent == 2.0 and now.delta_spent == pytest.approx(3e-7)
    rho = "a" * 64
    ledger.declare_total(rho, 1.0, unit="rho", label="r.csv")
    reserve(ledger, PrivacyBudget.zcdp(0.25, 1e-6), fingerprint=rho)
    reserve(ledger, PrivacyBudget.pure(1.0), fingerprint=rho)  # 1-DP is 0.5-zCDP
    assert ledger.status(rho).spent == pytest.approx(0.75)
    with pytest.raises(BudgetError, match="approx-dp release cannot be counted"):
        reserve(ledger, PrivacyBudget.approx(0.1, 1e-6), fingerprint=rho)
    with pytest.raises(BudgetError, match="rho 0.75 of 1 spent.*asks 0.5"):
        reserve(ledger, PrivacyBudget.zcdp(0.5), fingerprint=rho)
    first_rho = "b" * 64  # a first zCDP release sets a total in rho
    reserve(ledger, PrivacyBudget.zcdp(0.1), fingerprint=first_rho)
    assert (ledger.status(first_rho).unit, ledger.status(first_rho).total) == ("rho", 0.1)


def test_datasets_are_kept_apart(ledger):
    ledger.declare_total(FP, 1.0, unit="epsilon", label="a.csv")
    reserve(ledger, PrivacyBudget.pure(1.0))
    reserve(ledger, PrivacyBudget.pure(1.0), fingerprint="0" * 64)
    assert [d.spent for d in ledger.datasets()] == [1.0, 1.0]


def test_a_replayed_reserve_or_commit_counts_nothing_twice(ledger):
    ledger.declare_total(FP, 2.0, unit="epsilon", label="people.csv")
    spend = reserve(ledger, PrivacyBudget.pure(1.0), release_id="r1")
    ledger.commit("r1", manifest_sha256="ab")
    again = reserve(ledger, PrivacyBudget.pure(1.0), release_id="r1")
    ledger.commit("r1", manifest_sha256="cd")
    now = ledger.status(FP)
    assert again.release_id == spend.release_id == "r1" and again.status == COMMITTED
    assert len(now.spends) == 1 and now.spent == 1.0
    assert now.spends[0].manifest_sha256 == "ab"  # the first commit stands
    with pytest.raises(BudgetError, match="no reservation"):
        ledger.commit("never-reserved")


@settings(max_examples=60, deadline=None)
@given(total=st.floats(0.1, 10.0), asks=st.lists(st.floats(0.01, 4.0), max_size=25))
def test_a_sequence_of_spends_never_exceeds_the_total(tmp_path_factory, total, asks):
    ledger = Ledger(tmp_path_factory.mktemp("ledger") / "ledger.sqlite")
    ledger.declare_total(FP, total, unit="epsilon", label="people.csv")
    accepted = []
    for ask in asks:
        spent_before = ledger.status(FP).spent
        try:
            reserve(ledger, PrivacyBudget.pure(ask))
        except BudgetError:
            assert spent_before + ask > total  # refused only when it would not fit
            continue
        accepted.append(ask)
    now = ledger.status(FP)
    assert now.spent == pytest.approx(math.fsum(accepted))
    assert now.spent <= total * (1 + 1e-9)


# ---- other processes: concurrent and killed ------------------------------------------------
CHILD = textwrap.dedent("""
    import sys, time
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        try:
            spend = ledger.reserve("f" * 64, PrivacyBudget.pure(1.0), label="people.csv",
                                   destination="out", mechanism="topdown")
        except Exception as exc:
            print("refused", type(exc).__name__, flush=True)
            continue
        print("reserved", spend.release_id, flush=True)
        if sys.argv[3] == "hang":  # killed here: after reserving, before committing
            time.sleep(600)
        ledger.commit(spend.release_id)
""")


def child(path: Path, count: int, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(count), mode],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_process_killed_after_reserving_leaves_a_spend_that_counts(ledger):
    ledger.declare_total(FP, 2.0, unit="epsilon", label="people.csv")
    proc = child(ledger.path, 1, "hang")
    line = proc.stdout.readline().split()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert line[0] == "reserved"
    now = ledger.status(FP)
    assert [(s.release_id, s.status) for s in now.spends] == [(line[1], RESERVED)]
    assert now.spent == 1.0  # the unfinished release counts: its noise may have been drawn
    reserve(ledger, PrivacyBudget.pure(1.0))
    with pytest.raises(BudgetError, match="epsilon 2 of 2 spent"):
        reserve(ledger, PrivacyBudget.pure(0.5))


def test_concurrent_processes_never_spend_beyond_the_total(ledger):
    ledger.declare_total(FP, 5.0, unit="epsilon", label="people.csv")
    procs = [child(ledger.path, 4, "commit") for _ in range(3)]
    outputs = [p.communicate(timeout=120)[0].split("\n") for p in procs]
    reserved = [line for out in outputs for line in out if line.startswith("reserved")]
    refused = [line for out in outputs for line in out if line.startswith("refused")]
    assert len(reserved) == 5 and refused == ["refused BudgetError"] * 7
    now = ledger.status(FP)
    assert now.spent == 5.0 and all(s.status == COMMITTED for s in now.spends)
    assert sorted(s.release_id for s in now.spends) == sorted(r.split()[1] for r in reserved)


def test_a_process_killed_at_any_moment_loses_no_acknowledged_spend(ledger):
    """A child reserving and committing as fast as it can is killed at an arbitrary moment:
    every reservation it acknowledged is in the ledger, the ledger opens, and at most one
    more (reserved in the ledger, killed before it said so) is there."""
    ledger.declare_total(FP, 10_000.0, unit="epsilon", label="people.csv")
    proc = child(ledger.path, 10_000, "commit")
    said = []
    deadline = time.monotonic() + 60
    while len(said) < 25 and time.monotonic() < deadline:
        said.append(proc.stdout.readline().split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    said += [line.split()[1] for line in proc.stdout.read().splitlines() if line]
    proc.wait(timeout=30)
    recorded = [s.release_id for s in ledger.status(FP).spends]
    assert len(said) >= 25 and set(said) <= set(recorded)
    assert len(recorded) - len(said) <= 1
    assert ledger.status(FP).spent == len(recorded)


def test_an_unreadable_ledger_is_refused_never_skipped(tmp_path):
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="cannot be used"):
        reserve(Ledger(path), PrivacyBudget.pure(1.0))
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(InputError, match="cannot open the budget ledger"):
        Ledger(blocked / "ledger.sqlite").status(FP)

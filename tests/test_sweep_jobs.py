"""hierdp_core.ui.sweep_jobs: sweeps kept per key, started once, restarted after a failure,
the oldest finished dropped beyond KEEP, progress followed while they run; a prefetch paused
while foreground work runs and for a grace after it, until someone asks for it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hierdp_core.errors import InputError
from hierdp_core.ui import sweep_jobs


@pytest.fixture
def jobs():
    with ThreadPoolExecutor(2) as worker:
        yield sweep_jobs._Jobs(worker)


def test_a_key_is_computed_once_and_kept(jobs):
    calls = []

    def compute(progress):
        calls.append(1)
        progress(1, 1)
        return len(calls)

    first = jobs.job("k", compute)
    assert sweep_jobs.wait(first, lambda done, total: None) == 1
    again = jobs.job("k", compute)
    assert again is first and sweep_jobs.wait(again, lambda d, t: None) == 1
    assert calls == [1]
    assert again.timing(pressed=again.finished + 1).endswith("(kept).")
    assert "1 releases in" in again.timing(pressed=again.finished + 1)


def test_a_failed_sweep_is_started_again(jobs):
    outcomes = iter([InputError("too many runs"), 7])

    def compute(progress):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(InputError, match="too many runs"):
        sweep_jobs.wait(jobs.job("k", compute), lambda d, t: None)
    assert sweep_jobs.wait(jobs.job("k", compute), lambda d, t: None) == 7


def test_progress_is_followed_and_the_wait_is_timed(jobs):
    gate, seen = threading.Event(), []

    def compute(progress):
        progress(1, 4)
        gate.wait(5)
        progress(4, 4)
        return "done"

    job = jobs.job("slow", compute)
    threading.Timer(3 * sweep_jobs.POLL_S, gate.set).start()
    assert sweep_jobs.wait(job, lambda done, total: seen.append((done, total))) == "done"
    assert seen and seen[0] == (1, 4)
    assert "you waited" in job.timing(pressed=job.started + 1e-9)
    assert job.timing(pressed=job.started - 1).endswith("(wall time).")


def test_only_the_last_keep_finished_sweeps_are_kept(jobs, monkeypatch):
    monkeypatch.setattr(sweep_jobs, "KEEP", 2)
    for key in range(4):
        sweep_jobs.wait(jobs.job(key, lambda progress, key=key: key), lambda d, t: None)
    assert list(jobs.jobs) == [2, 3]



def _steps(steps: list):
    """A sweep of 3 releases that records each one."""
    def compute(progress):
        for done in range(1, 4):
            steps.append(done)
            progress(done, 3)
        return "done"
    return compute


def test_a_background_sweep_pauses_while_foreground_work_runs(jobs):
    steps = []
    with sweep_jobs.foreground():
        job = jobs.job("prefetch", _steps(steps), background=True)
        time.sleep(0.5)
        assert steps == [1] and not job.future.done()  # paused after its first release
    assert sweep_jobs.wait(job, lambda d, t: None) == "done" and steps == [1, 2, 3]


def test_a_background_sweep_waits_for_the_grace_after_foreground_work(jobs, monkeypatch):
    monkeypatch.setattr(sweep_jobs, "GRACE_S", 1.0)
    steps = []
    with sweep_jobs.foreground():
        job = jobs.job("prefetch", _steps(steps), background=True)
        time.sleep(0.2)
        leaving = time.monotonic()  # the work's end is stamped after this, on leaving
    time.sleep(0.5)
    assert steps == [1]  # the page's run after the work and its painting: still paused
    assert job.future.result(timeout=5) == "done" and steps == [1, 2, 3]
    assert time.monotonic() - leaving >= 1.0
    steps.clear()
    with sweep_jobs.foreground():
        job = jobs.job("asked", _steps(steps), background=True)
        time.sleep(0.2)
    assert jobs.job("asked", _steps([])) is job  # "Run the sweep" pressed in the grace
    assert job.future.result(timeout=0.5) == "done" and steps == [1, 2, 3]


def test_a_sweep_asked_for_no_longer_pauses(jobs):
    steps = []
    with sweep_jobs.foreground():
        job = jobs.job("prefetch", _steps(steps), background=True)
        time.sleep(0.3)
        assert steps == [1]
        assert jobs.job("prefetch", _steps([])) is job  # "Run the sweep" pressed
        assert job.future.result(timeout=5) == "done" and steps == [1, 2, 3]  # woken
        assert not job.background


def test_a_sweep_pressed_does_not_pause(jobs):
    steps = []
    with sweep_jobs.foreground():
        job = jobs.job("pressed", _steps(steps))
        assert job.future.result(timeout=5) == "done" and steps == [1, 2, 3]

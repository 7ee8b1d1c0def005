"""Sweeps run in background threads and kept per (data, settings).

A page starts the sweep of its default settings on a bundled sample when it opens
(`prefetch`), so that "Run the sweep" with them only waits for what is left; every sweep
with a key is kept once finished (the last `KEEP` of the bundled samples for the whole
server, those of uploaded data in the session that uploaded them), so running it again is
instant. `wait` follows a job's progress; `SweepJob.timing` says what the wait really was.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass

import streamlit as st

Progress = Callable[[int, int], None]
Compute = Callable[[Progress], object]

KEEP = 16  # finished sweeps kept per registry
WORKERS = 2  # sweeps computed at once (a prefetch and one pressed for other settings)
POLL_S = 0.1  # how often the progress bar is redrawn
_SESSION_JOBS = "hd_sweep_jobs"


@dataclass
class SweepJob:
    """One sweep: its result (a future), its progress (releases done of total) and its
    wall-clock times (`time.perf_counter`)."""

    future: Future | None = None
    done: int = 0
    total: int = 0
    started: float | None = None
    finished: float | None = None
    cpu: float = 0.0  # seconds of CPU of the worker thread

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def run(self, compute: Compute):
        self.started, cpu = time.perf_counter(), time.thread_time()
        try:
            return compute(self.progress)
        finally:
            self.finished, self.cpu = time.perf_counter(), time.thread_time() - cpu

    def timing(self, pressed: float) -> str:
        """What the sweep took, for a press of "Run the sweep" at ``pressed``."""
        took = (f"{self.total} releases in {self.finished - self.started:.1f} s "
                f"({self.cpu:.1f} s of CPU)")
        if self.finished <= pressed:
            return f"{took}, computed before you pressed Run the sweep (kept)."
        if self.started < pressed:
            return (f"{took}, started in the background when the page opened; you waited "
                    f"{self.finished - pressed:.1f} s.")
        return f"{took} (wall time)."


class _Jobs:
    """Sweep jobs by key, the oldest finished ones dropped beyond `KEEP`."""

    def __init__(self, worker: ThreadPoolExecutor):
        self.worker = worker
        self.lock = threading.Lock()
        self.jobs: OrderedDict[Hashable, SweepJob] = OrderedDict()

    def job(self, key: Hashable, compute: Compute) -> SweepJob:
        """The job of ``key``, started with ``compute`` unless one runs or succeeded."""
        with self.lock:
            job = self.jobs.get(key)
            if job is None or (job.future.done() and job.future.exception() is not None):
                job = self.jobs[key] = _start(self.worker, compute)
            self.jobs.move_to_end(key)
            finished = [k for k, j in self.jobs.items() if j.future.done()]
            for old in finished[:max(0, len(self.jobs) - KEEP)]:
                del self.jobs[old]
            return job


def _start(worker: ThreadPoolExecutor, compute: Compute) -> SweepJob:
    job = SweepJob()
    job.future = worker.submit(job.run, compute)
    return job


@st.cache_resource(show_spinner=False)
def _server_jobs() -> _Jobs:
    """The jobs of the bundled samples, shared by every session, and the worker threads."""
    return _Jobs(ThreadPoolExecutor(WORKERS, thread_name_prefix="hierdp-sweep"))


def job_for(key: Hashable | None, compute: Compute, *, shared: bool) -> SweepJob:
    """The sweep job of ``key`` (None: a new job, not kept), started if needed. ``shared``:
    the key names the data for the whole server (a bundled sample), not just this session's
    upload."""
    server = _server_jobs()
    if key is None:
        return _start(server.worker, compute)
    if shared:
        return server.job(key, compute)
    mine = st.session_state.setdefault(_SESSION_JOBS, _Jobs(server.worker))
    return mine.job(key, compute)


def prefetch(key: Hashable, compute: Compute) -> None:
    """Start the sweep of a bundled sample's default settings in the background (once)."""
    job_for(key, compute, shared=True)


def wait(job: SweepJob, progress: Progress):
    """The job's result (its exception raised), calling ``progress(done, total)`` at every
    poll while it runs, also before it starts (total 0): each call is a Streamlit command,
    where a rerun or a page change can interrupt the waiting script."""
    while not job.future.done():
        progress(job.done, job.total)
        wait_futures([job.future], timeout=POLL_S, return_when=FIRST_COMPLETED)
    return job.future.result()

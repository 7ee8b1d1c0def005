"""Sweeps run in background threads and kept per (data, settings).

A page starts the sweep of its default settings on a bundled sample when it opens
(`prefetch`), so that "Run the sweep" with them only waits for what is left; every sweep
with a key is kept once finished (the last `KEEP` of the bundled samples for the whole
server, those of uploaded data in the session that uploaded them), so running it again is
instant. `wait` follows a job's progress; `SweepJob.timing` says what the wait really was.

A prefetch nobody has asked for yet runs in the background: while the server does work a
user waits for (`foreground`: a release, a publishable draw) and for `GRACE_S` after it, it
pauses between its releases, so that on a machine of two cores it does not halve the speed
of that work (the Group sizes page starts its sweep, 12 releases of 0.14-0.66 s of CPU each,
3.6 s in all, as it opens, just before its "Draw the publishable release" is pressed). The
grace covers what follows the work on the same page: the run that shows its result (a
query page's draw ends in a rerun of its Export section alone) and the browser painting it.
Once "Run the sweep" asks for it, it no longer pauses.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

from hierdp_core.ui.session import SWEEP_JOBS as _SESSION_JOBS

Progress = Callable[[int, int], None]
Compute = Callable[[Progress], object]

KEEP = 16  # finished sweeps kept per registry
WORKERS = 2  # sweeps computed at once (a prefetch and one pressed for other settings)
POLL_S = 0.1  # how often the progress bar is redrawn
PAUSE_S = 60.0  # the longest a background sweep waits for foreground work at once
#: a background sweep also waits this long after foreground work ends: the run that shows
#: the result and the browser's painting
GRACE_S = 1.5


class _Foreground:
    """How many computations a user waits for run on this server now, and when the last
    one ended (`time.monotonic`)."""

    def __init__(self):
        self.idle = threading.Condition()
        self.running = 0
        self.ended = -math.inf

    @contextmanager
    def running_now(self) -> Iterator[None]:
        with self.idle:
            self.running += 1
        try:
            yield
        finally:
            with self.idle:
                self.running -= 1
                self.ended = time.monotonic()
                self.idle.notify_all()

    def pause(self, job: SweepJob) -> None:
        """Wait while foreground work runs or ended less than `GRACE_S` ago, and ``job`` is
        in the background (at most `PAUSE_S`)."""
        give_up = time.monotonic() + PAUSE_S
        with self.idle:
            while job.background and (now := time.monotonic()) < give_up:
                busy = math.inf if self.running else self.ended + GRACE_S - now
                if busy <= 0:
                    return
                self.idle.wait(min(busy, give_up - now))

    def ask_for(self, job: SweepJob) -> None:
        """Someone waits for ``job`` now: it no longer pauses."""
        with self.idle:
            job.background = False
            self.idle.notify_all()


_FOREGROUND = _Foreground()
foreground = _FOREGROUND.running_now  # `with foreground():` around work a user waits for


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
    background: bool = False  # a prefetch nobody waits for: pauses for foreground work

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if self.background:
            _FOREGROUND.pause(self)

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

    def job(self, key: Hashable, compute: Compute, background: bool = False) -> SweepJob:
        """The job of ``key``, started with ``compute`` unless one runs or succeeded; in
        the ``background`` only until a caller asks for it without."""
        with self.lock:
            job = self.jobs.get(key)
            if job is None or (job.future.done() and job.future.exception() is not None):
                job = self.jobs[key] = _start(self.worker, compute, background)
            if job.background and not background:
                _FOREGROUND.ask_for(job)
            self.jobs.move_to_end(key)
            finished = [k for k, j in self.jobs.items() if j.future.done()]
            for old in finished[:max(0, len(self.jobs) - KEEP)]:
                del self.jobs[old]
            return job


def _start(worker: ThreadPoolExecutor, compute: Compute, background: bool = False) -> SweepJob:
    job = SweepJob(background=background)
    job.future = worker.submit(job.run, compute)
    return job


@st.cache_resource(show_spinner=False)
def _server_jobs() -> _Jobs:
    """The jobs of the bundled samples, shared by every session, and the worker threads."""
    return _Jobs(ThreadPoolExecutor(WORKERS, thread_name_prefix="hierdp-sweep"))


def job_for(key: Hashable | None, compute: Compute, *, shared: bool,
            background: bool = False) -> SweepJob:
    """The sweep job of ``key`` (None: a new job, not kept), started if needed. ``shared``:
    the key names the data for the whole server (a bundled sample), not just this session's
    upload; ``background``: nobody waits for it yet (see the module)."""
    server = _server_jobs()
    if key is None:
        return _start(server.worker, compute, background)
    if shared:
        return server.job(key, compute, background)
    mine = st.session_state.setdefault(_SESSION_JOBS, _Jobs(server.worker))
    return mine.job(key, compute, background)


def prefetch(key: Hashable, compute: Compute) -> None:
    """Start the sweep of a bundled sample's default settings in the background (once)."""
    job_for(key, compute, shared=True, background=True)


def wait(job: SweepJob, progress: Progress):
    """The job's result (its exception raised), calling ``progress(done, total)`` at every
    poll while it runs, also before it starts (total 0): each call is a Streamlit command,
    where a rerun or a page change can interrupt the waiting script."""
    while not job.future.done():
        progress(job.done, job.total)
        wait_futures([job.future], timeout=POLL_S, return_when=FIRST_COMPLETED)
    return job.future.result()

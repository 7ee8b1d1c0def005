"""What the intervals of every query kind share (`hierdp_core.intervals`): the level check,
the manifest record, order statistics (the symmetric half-widths of bootstrap errors are in
`hierdp_core.intervals.symmetric`), and
the parametric bootstrap that re-runs a mechanism's public release API on a plug-in truth
made from the released values.

Contract: only released values and public parameters (the mechanism, its parameters, the
budget and split the ledger records, public workloads and geographies) enter; the numpy
noise of the re-runs comes from the public seed `SEED` and the plug-in (re-run j from its
own stream, `replicate_source`), so computing an interval is post-processing, costs no
privacy and is reproducible from the release. Private data-dependent stages of a mechanism
(DAWA's partition) are re-run on the plug-in too, with that seed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np

from hierdp_core.defaults import DEFAULT_LEVEL  # noqa: F401  (re-exported)
from hierdp_core.errors import InputError
from hierdp_core.intervals.quantiles import rank
from hierdp_core.intervals.symmetric import RERUN_STEP, pooled_trim, symmetric_sizes
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.memory_plan import check_replicates
from hierdp_core.privacy.budget import APPROX_DP, PURE_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.releases import CellIntervals

SEED = 17  # public: the intervals' simulations draw noise only, around released values
INPUTS = "released values and public parameters only"
MIN_REPLICATES = 20  # the least any simulation or bootstrap gets by default
#: re-run bootstraps (group sizes, flows, ranges): at most this many replicates, as many as
#: fit in `RERUN_SECONDS` of the first re-run's time, never below `MIN_REPLICATES`; 2 s
#: leaves room in the 5 s the dashboard's publishable draw may take (its secure release,
#: the files and the page drawn again): a flow release re-run in 0.05 s gets 40 replicates
RERUN_REPLICATES = 200
RERUN_SECONDS = 2.0
#: re-runs at once (``HIERDP_RERUN_THREADS``, else the cores, at most 4) when one takes at
#: least `THREADED_RERUN_SECONDS` or at most `VECTORISED_CELL_SECONDS` a cell (`threaded`):
#: numpy's generators and array loops let threads share the cores (the dashboard's
#: group-size draw, 3,193 regions x 1,001 sizes, 0.45 s a re-run: 13.1 -> 10.8 s on 2
#: cores), while short re-runs, mostly Python, only contend for the interpreter (the range
#: draw, DAWA: 4.1 -> 5.6 s; flows 3.2 -> 3.7 s); the numbers do not depend on it (each
#: re-run has its own stream)
RERUN_THREADS = max(1, int(os.environ.get("HIERDP_RERUN_THREADS", 0))
                    or min(4, len(os.sched_getaffinity(0))))
THREADED_RERUN_SECONDS = 0.25
#: a shorter re-run shares the threads when it took at most this long per cell of the
#: plug-in: numpy's kernels over whole arrays, which run at once on two threads (the Group
#: sizes page's Kuo re-run, 3,246 x 1,001 cells in 0.15-0.3 s, 50-90 ns a cell: 3.0 -> 2.4 s
#: on 2 threads at load 3), where the interpreter's work per cell is 50 times more (DAWA on
#: Italy's 38,784 range cells, 0.21 s: 5.5 us; the flows' 13,430 cells, 0.06 s: 4.6 us).
#: Per cell, not the cores two re-runs kept busy side by side: a machine busy with other
#: work kept Kuo's pair at 0.6-0.9 of the 1.5 cores asked, and it ran on one thread
VECTORISED_CELL_SECONDS = 1e-6
MAX_DRAWS = 1 << 24  # bootstrap errors held at once (float32: 64 MB)
#: re-runs made at once (`rerun_bootstrap`'s ``redraws``) hold at most this many cells
REDRAW_CELLS = 1 << 16
#: `integer_ends`: a float end within this share of its size of an integer is that integer
INTEGER_SLACK = 1e-9
#: `rerun_bootstrap`'s stream of `pooled_trim`'s uniform draws (beside the re-runs' 0, 1, ...)
TRIM_STREAM = 2**32 - 1
BIAS_WIDENED = "bias-widened bootstrap"  # the methods' names in the manifest (``widen``)
BIAS_SIDED = "bias-sided bootstrap"
WIDENINGS = (BIAS_WIDENED, BIAS_SIDED)
#: the ledger's public columns a re-run must reproduce (else the plug-in is not the release's)
LEDGER_CHECKED = ("noise_scale", "budget")


_PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("bootstrap_progress",
                                                                     default=None)


@contextmanager
def reporting(progress: Callable[[int, int], None]) -> Iterator[None]:
    """Within it (in this thread), every `rerun_bootstrap` calls ``progress(done, total)``
    after each re-run: a page's progress bar, with no argument passed down the layers."""
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def check_level(level: float, replicates: int | None) -> float:
    """``level`` as a float strictly between 0 and 1 and 2 to `MAX_REPLICATES`
    ``replicates`` (None: chosen by time), else an `InputError` (`check_replicates`)."""
    level = float(level)
    if not 0 < level < 1:
        raise InputError(f"an interval level must lie strictly between 0 and 1, got {level}")
    check_replicates(replicates)
    return level


def by_time(size: int, most: int, draws: int) -> int:
    """``most`` replicates of ``size`` values each, fewer when that passes ``draws``
    values, never below `MIN_REPLICATES`."""
    return int(np.clip(draws // max(size, 1), MIN_REPLICATES, most))


def interval_record(level: float, methods: dict, draws: int | None, **extra) -> dict:
    """The manifest's ``intervals`` record (the same format for every query kind)."""
    return {"level": level, "method": methods, "replicates": draws,
            "seed": SEED if draws else None, "inputs": INPUTS,
            "privacy_cost": "none: post-processing of the release",
            "clipped_at_zero": True, "columns": ["lower", "upper"], **extra}


def feasible(lower: np.ndarray, upper: np.ndarray, record: dict,
             cap: np.ndarray | None = None, integer: bool = False) -> CellIntervals:
    """The intervals intersected with the feasible set [0, inf), or [0, cap] with a public
    ``cap`` broadcast to the cells (an exact total no cell can pass); an interval wholly
    outside becomes its nearest end. ``integer`` (a release of integers; every true value
    is a count): the ends move inward to the nearest integers, as integers (no integer
    truth leaves the interval; a float end such as 275.0 or 12.7 reads as 275 or 12)."""
    lower, upper = np.maximum(lower, 0), np.maximum(upper, 0)
    if cap is not None:
        lower, upper = np.minimum(lower, cap), np.minimum(upper, cap)
        record = {**record, "capped_by": "a public exact total"}
    if integer:
        lower, upper = integer_ends(lower), integer_ends(upper, up=False)
    return CellIntervals(lower, upper, record)


def integer_ends(ends: np.ndarray, up: bool = True) -> np.ndarray:
    """``ends`` moved to the nearest integer above (``up``) or below, as int64 where every
    end is finite (a float's rounding error of `INTEGER_SLACK` of the end is not a step),
    else unchanged."""
    ends = np.asarray(ends)
    if ends.dtype.kind in "iu" or not np.isfinite(ends).all():
        return ends
    slack = INTEGER_SLACK * (1 + np.abs(ends))
    moved = np.ceil(ends - slack) if up else np.floor(ends + slack)
    return moved.astype(np.int64)


def release_budget(privacy: dict) -> PrivacyBudget:
    """The budget a release spent, as its privacy record states it (public)."""
    definition = privacy.get("definition")
    if definition == ZCDP:
        return PrivacyBudget.zcdp(privacy["rho"], privacy.get("delta"))
    if definition == APPROX_DP:
        return PrivacyBudget.approx(privacy["epsilon"], privacy["delta"])
    if definition == PURE_DP:
        return PrivacyBudget.pure(privacy["epsilon"])
    raise InputError(f"the release's privacy record names no budget ({definition!r}): "
                     "its intervals cannot be re-run")


def rerun_bootstrap(rerun: Callable[[NoiseSource], object], cells: Callable[[object],
                    np.ndarray], plugin: np.ndarray, ledger, level: float,
                    replicates: int | None, integer: bool, widen: str | None = None,
                    redraws: Callable[[list[NoiseSource]], np.ndarray] | None = None,
                    groups: np.ndarray | None = None):
    """Parametric bootstrap by re-running a mechanism: ``rerun(source)`` releases the
    plug-in truth once (public budget, split and parameters), ``cells(release)`` its values
    aligned with ``plugin`` (flat). The first re-run is timed: without ``replicates``, as
    many as fit in `RERUN_SECONDS` (`RERUN_REPLICATES` at most, `MIN_REPLICATES` at least),
    fewer when `MAX_DRAWS` errors would not fit. The first re-run's ledger must reproduce
    ``ledger``'s noise (`LEDGER_CHECKED`), else the plug-in is not the release's. With
    ``widen`` `BIAS_WIDENED` both half-widths grow by the cell's |mean(redraw - plug-in)|
    (rounded to the nearest integer for integers; rounded up, gs-kuo-hierarchical's levels
    covered 0.975 or more at nominal 0.95 and epsilon 10): the mechanism's bias at the
    plug-in, a stand-in for its unseen bias at the truth; with `BIAS_SIDED` only the
    half-width on the side the truth then lies grows (the one below the value where the
    re-runs overshoot their plug-in, above where they fall short). The re-runs after the first share `RERUN_THREADS` threads when
    the first took `THREADED_RERUN_SECONDS` or more, or little per cell (`threaded`); so do
    the quantiles' blocks of cells; progress goes to `reporting`'s callback. ``redraws(sources)``: the ``cells`` of the re-runs with
    these sources at once, a row each (then made `REDRAW_CELLS` cells at a time, a job
    each). With integer values and ``groups`` (per cell, a group: a level's cells of one
    category; -1 for none) a cell whose own draws do not take the step (the narrower
    interval holds fewer than r + 1 of them) may still take it: pooled over such cells of
    its group with its half-width, in the share that makes their draws hold the level on
    average (`symmetric.pooled_trim`, uniform draws from the public seed). With 20 redraws
    at 0.95 a pool of every cell trimmed almost nothing (it holds 20/21 of its draws),
    fewer cells than each cell's own draws did. A cell whose lower end lies at or below 0
    either way stays out (its step changes nothing once clipped at 0). Returns the
    half-widths (below, above) per cell, the replicates drawn and each cell's mean
    |redraw - plug-in| (`Redrawn`)."""
    stream = plugin_stream(plugin)
    start = time.perf_counter()
    first = rerun(replicate_source(stream, 0))
    took = time.perf_counter() - start
    _check_ledger(ledger, first.ledger)
    if replicates is None:
        replicates = int(np.clip(RERUN_SECONDS / max(took, 1e-6), MIN_REPLICATES,
                                 RERUN_REPLICATES))
    replicates = min(replicates, max(MAX_DRAWS // max(plugin.size, 1), MIN_REPLICATES))
    # a replicate per row: each is written at once (a column of (cells, replicates) is
    # strided), and a block of cells is read back as (cells, replicates), contiguous
    d = np.empty((replicates, plugin.size), dtype=np.float32)
    np.subtract(cells(first), plugin, out=d[0], casting="unsafe")  # = d[0] = ..., no temporary
    report = _PROGRESS.get() or (lambda done, total: None)
    report(1, replicates)
    per_job = 1 if redraws is None else max(1, REDRAW_CELLS // max(plugin.size, 1))

    def redraw(j: int) -> None:  # replicates j, j + 1, ..., per_job of them
        js = range(j, min(j + per_job, replicates))
        if redraws is None:  # one vectorised release per replicate
            rows = cells(rerun(replicate_source(stream, j)))
        else:
            rows = redraws([replicate_source(stream, i) for i in js])
        np.subtract(rows, plugin, out=d[js.start:js.stop], casting="unsafe")

    reported = [1]

    def progress(finished: int) -> None:  # jobs finished: every re-run reported, in turn
        now = 1 + min(finished * per_job, replicates - 1)
        for done in range(reported[0] + 1, now + 1):
            report(done, replicates)
        reported[0] = now

    threads = RERUN_THREADS if threaded(took, plugin.size) else 1
    _in_threads(redraw, range(1, replicates, per_job), progress, threads)
    below, above, mean_abs = (np.zeros(plugin.size) for _ in range(3))
    bias = np.zeros(plugin.size if widen else 0)
    pooled = integer and groups is not None
    inside, held = (np.zeros(plugin.size if pooled else 0, np.int32) for _ in range(2))
    block = max(1, MAX_DRAWS // 8 // replicates)  # the quantiles' temporaries stay small
    r = rank(level, replicates)

    def half_widths(row: int) -> None:  # a block of cells (on the re-runs' threads)
        part = d[:, row:row + block]
        # a cell every redraw left at its plug-in keeps 0 and 0 (no bias): most sizes of a
        # sparse group-size table, whose quantiles then cost nothing (found along the
        # replicates' rows; only the cells that moved are turned to a row per cell)
        at = row + np.flatnonzero(part.any(axis=0))
        errors = np.ascontiguousarray(part[:, at - row].T)
        a, narrow, wide, mean_abs[at] = symmetric_sizes(errors, r, integer)
        above[at], below[at] = a, a if narrow is None else a - ((a > 0) & (narrow > r))
        if pooled:
            inside[at], held[at] = narrow, wide
        if widen:
            mean = errors.mean(axis=1, dtype=np.float64)
            bias[at] = np.rint(mean) if integer else mean

    _in_threads(half_widths, range(0, plugin.size, block), lambda done: None, threads)
    if pooled:  # the cells not stepped by their own draws nor clipped at 0 either way
        at = np.flatnonzero((groups >= 0) & (below == above) & (plugin - above + 1 > 0))
        uniform = np.random.default_rng([SEED, stream, TRIM_STREAM]).random(at.size)
        below[at] = above[at] - pooled_trim(above[at], inside[at], held[at], replicates,
                                            level, uniform, groups[at])
    if widen == BIAS_SIDED:  # re-runs above their plug-in: the truth below the value
        below, above = below + np.maximum(bias, 0), above + np.maximum(-bias, 0)
    elif widen:
        below, above = below + np.abs(bias), above + np.abs(bias)
    return Redrawn(below, above, replicates, mean_abs)


def step_record(integer: bool) -> dict:
    """The intervals record's word on `rerun_bootstrap`'s integer step (none for reals)."""
    return {"integer_step": RERUN_STEP} if integer else {}


class Redrawn(NamedTuple):
    """`rerun_bootstrap`'s half-widths (below, above) per cell, the replicates drawn and
    each cell's mean |redraw - plug-in| over them: the release's mean |error| estimated by
    its re-runs on the plug-in (`intervals.estimated_error`)."""

    below: np.ndarray
    above: np.ndarray
    draws: int
    mean_abs: np.ndarray


def threaded(seconds: float, cells: int) -> bool:
    """Whether the re-runs of a plug-in of ``cells`` cells, the first of which took
    ``seconds``, share `RERUN_THREADS` threads: long ones (`THREADED_RERUN_SECONDS`) and
    those of numpy's kernels (`VECTORISED_CELL_SECONDS` a cell)."""
    return seconds >= THREADED_RERUN_SECONDS or seconds <= VECTORISED_CELL_SECONDS * cells


def plugin_stream(plugin: np.ndarray) -> int:
    """The re-runs' stream of a plug-in: a digest of its values (public, from the release).
    Releases of one table then get re-runs of their own: with one stream for all, a cell
    whose few re-runs happened to miss it stayed missed in every release (a size of a
    small group-size table held 0.2 of 40 releases at 0.9, another 0.6, by the stream)."""
    plugin = np.ascontiguousarray(plugin, dtype=np.float64)
    return int.from_bytes(hashlib.blake2b(plugin.tobytes(), digest_size=8).digest(), "big")


def replicate_source(stream: int, j: int) -> NoiseSource:
    """The noise of re-run ``j`` of ``stream`` (`plugin_stream`): its own numpy stream from
    the public `SEED`, the same whichever thread draws it and in whichever order."""
    return NoiseSource(generator=np.random.default_rng([SEED, stream, j]))


def _in_threads(task: Callable[[int], None], jobs, done: Callable[[int], None],
                threads: int) -> None:
    """``task(j)`` for every j of ``jobs`` on ``threads`` threads, ``done(count)`` in this
    thread after each; the first error is raised here once the running tasks end (the
    others are cancelled), as is an interrupt."""
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hierdp-rerun")
    try:
        futures = [pool.submit(task, j) for j in jobs]
        for count, future in enumerate(as_completed(futures), 1):
            future.result()
            done(count)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def released_leaves(release) -> np.ndarray:
    """A table release's leaf rows as a plug-in truth: rounded, clipped at 0, int64."""
    h = release.hierarchy
    return np.maximum(np.rint(release.values[h.level_slice(h.depth)]), 0).astype(np.int64)


class TableBootstrap(NamedTuple):
    """`table_bootstrap`'s half-widths (below, above) shaped like the values, the replicates
    drawn, the half-widths above the ``sums`` (None without) and above the re-runs'
    estimates before consistency (None unless asked), and each value's mean
    |redraw - plug-in| (`Redrawn`)."""

    below: np.ndarray
    above: np.ndarray
    draws: int
    sums_above: np.ndarray | None
    unclipped_above: np.ndarray | None
    mean_abs: np.ndarray


def table_bootstrap(release, plugin, level: float, replicates: int | None, sums=None,
                    widen: str | None = None, unclipped: bool = False) -> TableBootstrap:
    """`rerun_bootstrap` of a table release (values (n_nodes, k)) whose mechanism re-runs
    on ``plugin`` (data over the same tree) with the release's budget, split (the ledger's
    shares) and parameters, with ``sums`` (a sparse matrix over the flat cells: aggregates
    such as bands or buckets) and, with ``unclipped``, the re-runs' estimates before their
    consistency clipped them at 0 (``noisy``; a level not measured: no error), all from the
    same redraws; ``widen``: see `rerun_bootstrap`. An integer value's step is pooled over
    its level's values of its category (``groups`` of `rerun_bootstrap`)."""
    mechanism = get_mechanism(release.mechanism)
    budget, split = release_budget(release.privacy), list(release.ledger["share"])
    truth = plugin.node_counts().ravel()

    rerun = mechanism.releaser(plugin, budget, split=split, **release.parameters)

    def cells(flat: np.ndarray, noisy: np.ndarray | None) -> np.ndarray:
        parts = [flat] + ([] if sums is None else [sums @ flat])
        if unclipped:
            parts.append(truth if noisy is None else np.where(np.isnan(noisy), truth, noisy))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    redraws, trials = None, getattr(rerun, "trials", None)
    if trials is not None:  # the re-runs made together, bit for bit (`RangeReleaser.trials`)

        def redraws(sources):
            made = trials(sources)
            return np.stack([cells(v.ravel(), u.ravel() if unclipped else None)
                             for v, u in zip(made.values, made.noisy, strict=True)])

    shape, n = release.values.shape, release.values.size
    m = n + (0 if sums is None else sums.shape[0])
    groups = np.full(m + (n if unclipped else 0), -1, dtype=np.int64)  # the values' only
    groups[:n] = (release.hierarchy.level_of_nodes()[:, None] * shape[1]
                  + np.arange(shape[1])).ravel()  # a level's cells of one category
    below, above, draws, mean_abs = rerun_bootstrap(
        rerun, lambda r: cells(r.values.ravel(), r.noisy.ravel() if unclipped else None),
        cells(truth, None), release.ledger, level, replicates, release.is_integer, widen,
        redraws, groups)
    return TableBootstrap(below[:n].reshape(shape), above[:n].reshape(shape), draws,
                          None if sums is None else above[n:m],
                          above[m:].reshape(shape) if unclipped else None,
                          mean_abs[:n].reshape(shape))


def _check_ledger(original, rerun) -> None:
    for column in LEDGER_CHECKED:
        if column in original and column in rerun:
            a = original[column].to_numpy(dtype=float)
            b = rerun[column].to_numpy(dtype=float)
            if a.shape != b.shape or not np.allclose(a, b, equal_nan=True):
                raise InputError(f"the intervals' re-run does not reproduce the release's "
                                 f"{column} per level ({a.tolist()} vs {b.tolist()}): not computed")

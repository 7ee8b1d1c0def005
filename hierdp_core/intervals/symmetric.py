"""Per-cell symmetric half-widths from bootstrap draws (the errors redraw - plug-in, replicates
on the last axis): the level's order statistic of |error| (`symmetric_sizes`), and for
integer errors the step that drops the lower end by one where the narrower interval still
holds the level, pooled over a group of cells (`pooled_trim`); the manifest's words on these
randomised steps and on least squares' (`TIE_STEP`, `counts.count_intervals`).
"""

from __future__ import annotations

import numpy as np

_DIRECT_KEYS = 1 << 22  # (group, a) keys counted directly below this many, else hashed
#: the manifest's word on `pooled_trim` (``intervals.integer_step``)
RANDOMISED_STEP = ("randomised: in a share of each level's cells of one category and one "
                   "half-width, drawn from the public seed, the lower end is one higher, the "
                   "share with which their pooled bootstrap draws hold the level on average")
#: the manifest's word on the re-run bootstraps' step (`bootstrap.rerun_bootstrap`)
RERUN_STEP = ("randomised: the lower end is one higher where a cell's own bootstrap draws "
              "still hold the level with it, and in a share of the other cells of each "
              "level, category and half-width, drawn from the public seed, with which their "
              "pooled draws hold the level on average (not where it is 0 either way)")
#: the manifest's word on least squares' tie step (``intervals.tie_step``,
#: `quantiles.tied_quantile`)
TIE_STEP = ("randomised: where least squares' simulated errors tie at a level's quantile "
            "(integer noise at a large budget), a share of the level's cells, drawn from the "
            "public seed, takes the next smaller half-width, the share with which the "
            "simulation's draws hold the level on average")


def symmetric_sizes(d: np.ndarray, r: int, integer: bool):
    """Per cell, from its bootstrap errors ``d`` (replicates on the last axis): a, the
    rank-``r`` order statistic of |d|, with ``integer`` errors how many draws lie in
    [-a, a - 1] and in [-a, a] (else None, None), and the mean of |d|."""
    a, mean_abs = _half_width(d, r)
    if not integer:
        return a, None, None, mean_abs
    return a, _within(d, a, -1), _within(d, a, 0), mean_abs


def _half_width(d: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The rank-``r`` order statistic of |d| over the last axis, and the mean of |d| (the
    release's error the bootstrap estimates, `intervals.estimated_error`)."""
    size = np.abs(d)
    size.partition(r, axis=-1)  # in place: no copy of the errors' sizes (nor of the sum)
    return size[..., r], size.mean(axis=-1, dtype=np.float64)


def _within(d: np.ndarray, a: np.ndarray, top: int) -> np.ndarray:
    """How many of each cell's draws lie in [-a, a + top]."""
    return ((d >= -a[..., None]) & (d <= a[..., None] + top)).sum(axis=-1)


def pooled_trim(a: np.ndarray, inside: np.ndarray, held: np.ndarray, draws: int,
                level: float, uniform: np.ndarray, group: np.ndarray | None = None
                ) -> np.ndarray:
    """Per cell whether its integer interval [v - a, v + a] drops its lower end by one.
    Integer errors take few values, so neither interval may hold the level closely: over
    the cells of one ``group`` (default: one column, a level's category) with the same a,
    their ``draws`` each pooled, [-a, a] holds a share P of them (``held`` per cell; k of
    m draws count k / (m + 1), `rank`'s chance that a new one falls there) and
    [-a, a - 1] a share Q (``inside``); a share (P - level) / (P - Q) of those cells,
    clipped to [0, 1], is narrowed, those whose ``uniform`` (public uniform draws per
    cell) falls below it, so that the group holds the level on average (a randomised
    interval: the level where no fixed interval reaches it). Before, each cell decided by
    its own draws, by luck: TopDown at epsilon 10 covered 0.93-0.98 at nominal 0.9 where
    the narrower intervals held 0.88-0.92."""
    if group is None:
        group = np.broadcast_to(np.arange(a.shape[-1]), a.shape)
    width = a.ravel().astype(np.int64)
    span, groups = int(width.max(initial=0)) + 1, int(group.max(initial=-1)) + 1
    key = group.ravel().astype(np.int64) * span + width  # (group, a)
    if groups * span <= _DIRECT_KEYS:
        pool, size = key, groups * span
    else:
        _, pool = np.unique(key, return_inverse=True)
        size = int(pool.max(initial=-1)) + 1
    total = np.bincount(pool, minlength=size) * (draws + 1.0)
    wide = np.bincount(pool, weights=held.ravel(), minlength=size)
    narrow = np.bincount(pool, weights=inside.ravel(), minlength=size)
    gap = wide - narrow
    share = np.clip((wide - level * total) / np.where(gap > 0, gap, 1), 0, 1) * (gap > 0)
    share[narrow >= level * total] = 1.0
    return ((width > 0) & (uniform.ravel() < share[pool])).reshape(a.shape)


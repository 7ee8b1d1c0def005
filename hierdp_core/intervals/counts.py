"""Intervals on counts releases (issue 17): per cell a (lower, upper) at a confidence
level, computed from the release alone: its released values and public parameters (the
mechanism and its parameters, the tree, each level's noise as the ledger records it). No
true value and no noisy measurement enters, so this is post-processing: the seeded numpy
noise drawn here (public seed `SEED`) costs no privacy.

Methods, by mechanism (the level's method is recorded in the manifest):

* ``raw-*`` (``exact``): value -/+ a_l, a_l the level's noise ``abs_quantile(level)``; with
  ``round_clamp`` the quantile of the rounded noise (truth is an integer).
* ``least-squares``: value -/+ c_l sqrt(P_v), P_v the exact variance of the node's GLS
  estimate (`gls_variances`). Gaussian noise (``normal``): c_l = z. Laplace or geometric
  noise (``simulated``): the estimator is linear, so its error does not depend on the
  truth; noise alone is drawn (``replicates`` times), passed through the estimator, and
  c_l is the level's quantile of |error_v| / sqrt(P_v) pooled over its nodes, read with
  90% confidence (`confident_order_statistic`: the draws come from a public seed, so every
  release of a tree shares them and an unlucky sample would under-cover every time at a
  level of few nodes, such as the root). Both grow
  by `FLOAT_SLACK` of the value: with integer noise of a large budget the error is exactly
  0 more often than the level, c_l is 0, and the value's rounding error in floating point
  alone would leave its truth outside (measured: coverage 0.0 at epsilon 10). Where the
  draws tie at c_l (errors exactly 0 or a few values), a share of the level's cells drawn
  from the public seed takes the next smaller half-width, so the level holds on average
  (`quantiles.tied_quantile`; ``intervals.tie_step``).
* ``topdown`` (non-negative, integral: not linear): parametric bootstrap, inverted near 0
  (`near_zero_inversion`). The released
  table is the plug-in truth; the mechanism's measuring and estimation are re-run
  ``replicates`` times on it (by default chosen by time, `bootstrap_replicates`; each
  call's noise from its own stream of the public `SEED`, a digest of the released values,
  `plugin_stream`, and the call's place, so releases of one table do not share their
  replicates' luck and the calls draw and estimate on both cores), the replicates stacked
  as extra category columns of a few calls (the count mechanisms treat categories
  independently). Per cell, d_c is the level-quantile (an order statistic) of
  |redraw - plug-in| and the interval is value -/+ d_c. The symmetric form is chosen
  because clipping at 0 makes the redraws of a small plug-in one-sided: the basic bootstrap [value - d_hi, value - d_lo] then shrinks to
  [0, 0] and covered only about 2 in 3 cells of counts below 5 in our tests.
  Near 0 the bootstrap's spread is the clipped one, narrower than the spread at a truth
  further from 0 that was released low: a cell released v below u_v, the level's quantile
  of |error| of the estimate TopDown projects before clipping (least squares' c_l
  sqrt(P_v) above, or the raw noise's with ``estimate="noisy"``), gets [max(0, v - w_v),
  v + max(d_c, u_v)], w_v that error's one-sided quantile (P(error <= w_v) >= level:
  the |error| quantile at 2 level - 1), the inversion of a test at each candidate truth
  t: v is released that low with probability about (1 - level) / 2 or less when
  t > v + u_v (clipping only moves low values up to 0), and that high with probability
  about 1 - level or less when t < v - w_v (a truth near 0 is missed only by a release
  too high; with the lower end at 0 such truths held about 1 - (1 - level) / 2). Before:
  0.858 at nominal 0.9 at 1,000 leaves of about 100 people, 1.9 noise standard deviations
  (epsilon 0.1), 0.60-0.86 at sparse leaves of a few people (then bounded by their
  parent, as group sizes' were until 2026-12-01, 3-4 times wider);
  `benchmarks/bench_coverage.py`.
  The same redraws give each level's error estimated from the release
  (``estimated_error``).

Integer errors (integer noise for raw; TopDown) make the smallest symmetric interval cover
more than the level, e.g. 0.96 for a 0.9 interval under discrete Gaussian noise of
sigma 1.7: its lower end then moves up by one when the interval still holds the level (by
the noise's pmf for raw). For TopDown, whose errors at a large budget take a few values
(often neither interval is near the level: 0.88 or 0.98), the lower end moves up in a share
of the cells of each level and category with the same half-width, drawn from the public
seed, that makes their draws pooled hold the level on average (`pooled_trim`: a randomised
interval; at nominal 0.9 at epsilon 10 on the 25 shapes of
`benchmarks/bench_coverage.py` 0.89-0.95, higher only where most values are released
exactly; 0.93-0.98 when each cell decided by its own draws).

Every interval is then intersected with [0, inf) (counts are non-negative; an interval
wholly below 0 becomes [0, 0]). An invariant root gets [value, value].

Example
-------
>>> import pandas as pd
>>> from hierdp_core.mechanisms.base import get_mechanism
>>> from hierdp_core.privacy.budget import PrivacyBudget
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> from hierdp_core.queries.counts import count_data_from_table
>>> t = pd.DataFrame({"s": ["A", "A", "B"], "c": ["a", "b", "c"], "n": [30, 40, 50]})
>>> d = count_data_from_table(t, ["s", "c"], count_column="n")
>>> r = get_mechanism("raw-geometric").release(d, PrivacyBudget.pure(1.0),
...                                            source=NoiseSource(seed=1))
>>> iv = count_intervals(r, 0.9)
>>> bool((iv.lower <= r.values).all() and (r.values <= iv.upper).all())
True
>>> iv.record["method"]
{'total': 'exact', 's': 'exact', 'c': 'exact'}
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hierdp_core.errors import InputError
from hierdp_core.intervals.bootstrap import (
    DEFAULT_LEVEL,
    MIN_REPLICATES,
    SEED,
    by_time,
    check_level,
    feasible,
    interval_record,
    plugin_stream,
)
from hierdp_core.intervals.estimated_error import estimated_error, tree_levels
from hierdp_core.intervals.quantiles import one_sided, rank, tied_quantile
from hierdp_core.intervals.symmetric import (
    RANDOMISED_STEP,
    TIE_STEP,
    pooled_trim,
    symmetric_sizes,
)
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.samplers import Gaussian, Noise, NoiseSource
from hierdp_core.privacy.split_optimiser import gls_variances
from hierdp_core.queries.counts import CountData
from hierdp_core.releases import CellIntervals, Release

#: least-squares simulation draws at most (noise only, one float column each), fewer when
#: nodes x draws would pass `SIMULATION_DRAWS`: 1,252 for the 3,193 US nodes (0.2 s). A
#: root's c_l is the quantile of its draws alone: from 1,000 it covered 0.878-0.888 at
#: nominal 0.90 on four shapes of `benchmarks/bench_coverage.py` (chain-top,
#: swiss-small-eps, one-child-level, levels-5; 20,000 fresh draws each), 0.887-0.895 from
#: as many draws as `SIMULATION_DRAWS` allows (2,715-20,000)
LS_REPLICATES = 20_000
SIMULATION_DRAWS = 4_000_000
#: TopDown bootstrap replicates at most, fewer when cells x replicates would pass
#: `BOOTSTRAP_CELL_DRAWS` (`bootstrap_replicates`): 200 for the 3,141 US counties x 4 age
#: groups (about 0.9 s of CPU)
TOPDOWN_REPLICATES = 200
BOOTSTRAP_CELL_DRAWS = 3_000_000
_CHUNK_CELLS = 1 << 17  # bootstrap cells per call of the estimator (cache-sized: fastest)
_MAX_DRAWS = 1 << 24  # bootstrap redraws held at once (128 MB, twice that at peak)
#: least squares' half-widths grow by this share of |value| + 1 (module doc): far below
#: the distance between integers, far above the estimator's floating-point error
FLOAT_SLACK = 1e-9
NEAR_ZERO_INVERTED = ", inverted near 0"
GAUSSIAN_NOISES = ("gaussian", "discrete-gaussian")
TRIM_STREAM = 1  # `_bootstrap`'s stream of the uniform draws of `pooled_trim`
TIE_STREAM = 2  # the stream of least squares' tie step's uniform draws


def count_intervals(release: Release, level: float = DEFAULT_LEVEL,
                    replicates: int | None = None) -> CellIntervals:
    """Per-cell intervals at confidence ``level`` (0 < level < 1) of a counts release, from
    its released values and public parameters only (module doc). ``replicates``: draws of
    the simulation or bootstrap (default chosen by time, see the constants)."""
    level = check_level(level, replicates)
    noises = release.level_noises()
    name = release.mechanism
    info = get_mechanism(name).info  # a counts mechanism's estimate's shape says how
    shape = info.capabilities.estimate if "counts" in info.queries else None
    extra = {}
    if shape == "raw":
        methods, draws = ["exact"] * len(noises), None
        below, above = (per_node(release, h) for h in raw_half_widths(
            noises, level, release.parameters.get("round_clamp", False)))
        lower, upper = release.values - below, release.values + above
    elif shape == "least-squares":
        draws = replicates or by_time(release.hierarchy.n_nodes, LS_REPLICATES,
                                       SIMULATION_DRAWS)
        (half,), methods, draws, ties = _least_squares(release, noises, (level,), draws)
        if ties is not None and (ties[1] < 1).any():
            uniform = np.random.default_rng([SEED, plugin_stream(release.values), TIE_STREAM])
            smaller, share = ties  # the smaller half-width in 1 - share of the cells
            half = np.where(uniform.random(release.values.shape) < share, half, smaller)
            extra = {"tie_step": TIE_STEP}
        half = half + FLOAT_SLACK * (1 + np.abs(release.values))
        lower, upper = release.values - half, release.values + half
    elif shape == "topdown":  # the simulation beside the bootstrap: numpy shares the cores
        with ThreadPoolExecutor(1) as pool:
            unclipped = pool.submit(unclipped_half_widths, release, noises, level)
            below, above, draws, mean_abs = _bootstrap(
                release, noises, level, replicates or bootstrap_replicates(release.values.size))
            lower, upper, inverted = near_zero_inversion(release.values, below, above,
                                                         *unclipped.result())
        h = release.hierarchy
        methods = ["parametric bootstrap" + (NEAR_ZERO_INVERTED if inverted[at].any() else "")
                   for at in map(h.level_slice, range(h.n_levels))]
        extra = {"estimated_error": estimated_error(tree_levels(h), mean_abs)}
    else:
        raise InputError(f"intervals are computed for counts releases of a raw, least-squares "
                         f"or topdown estimate, not for {name!r}")
    if release.invariants:  # the root, published exactly
        methods[0] = "exact (invariant)"
        lower[0] = upper[0] = release.values[0]
    names = release.hierarchy.level_names
    if shape == "topdown" and release.is_integer:
        extra["integer_step"] = RANDOMISED_STEP
    record = interval_record(level, dict(zip(names, methods, strict=True)), draws, **extra)
    return feasible(lower, upper, record, integer=release.is_integer)


def bootstrap_replicates(cells: int) -> int:
    """TopDown's default replicates for a release of ``cells`` cells, chosen by time:
    `TOPDOWN_REPLICATES`, fewer when cells x replicates would pass `BOOTSTRAP_CELL_DRAWS`
    (the bootstrap's cost), never below `MIN_REPLICATES`."""
    return by_time(cells, TOPDOWN_REPLICATES, BOOTSTRAP_CELL_DRAWS)


def raw_half_widths(noises: list[Noise | None], level: float,
                     rounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """The half-widths below and above the value per level for the raw mechanisms: a_l,
    the noise's ``abs_quantile`` (rounded continuous noise e has P(|rint e| <= k) =
    P(|e| < k + 1/2)); for integer noise a_l - 1 below when P(-a_l <= X <= a_l - 1) still
    reaches the level (module doc)."""
    above = np.array([n.abs_quantile(level) for n in noises])
    if rounded and not noises[-1].integer:
        above = np.maximum(np.ceil(above - 0.5), 0).astype(np.int64)
    below = above.copy()
    if noises[-1].integer:
        for lv, (noise, a) in enumerate(zip(noises, above, strict=True)):
            inside = noise.mass_below(int(a))  # -a .. a - 1
            below[lv] -= int(a > 0 and inside >= level)
    return below, above


def per_node(release: Release, per_level: np.ndarray) -> np.ndarray:
    """A per-level array (n_levels,) spread over the nodes, as a column (n_nodes, 1)."""
    return per_level[release.hierarchy.level_of_nodes()][:, None]


def near_zero_inversion(values: np.ndarray, below: np.ndarray, above: np.ndarray,
                        unclipped: np.ndarray, one_sided: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (lower, upper) from the bootstrap's half-widths ``below``/``above``, except
    where a released value lies within its ``unclipped`` half-width (per node, a column)
    of 0: there [0, value + max(above, unclipped)], or with ``one_sided`` (the error's
    one-sided quantile, per node) [max(0, value - one_sided), value + max(above,
    unclipped)] (module doc). Also returns where that was so."""
    near = values < unclipped
    floor = 0 if one_sided is None else np.maximum(values - one_sided, 0)
    lower = np.where(near, floor, values - below)
    upper = values + np.where(near, np.maximum(above, unclipped), above)
    return lower, upper, near


def noise_quantiles(release: Release, noises: list[Noise | None],
                    level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per node (columns), its level's quantile of |noise| at ``level`` and its one-sided
    quantile (P(noise <= it) >= level: the size's quantile at 2 level - 1); 0 where the
    level is not measured."""
    per_level = np.array([[0 if n is None else n.abs_quantile(q) for n in noises]
                          for q in (level, one_sided(level))], dtype=float)
    return per_node(release, per_level[0]), per_node(release, per_level[1])


def unclipped_half_widths(release: Release, noises: list[Noise | None],
                          level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per node (columns), TopDown's half-widths before clipping: the level's quantile of
    the size of the error of the estimate it projects (least squares' ``c_l sqrt(P_v)``,
    simulated; the raw noise's with ``estimate="noisy"``, 0 where a level is not
    measured), and its one-sided quantile: P(error <= it) >= level, the error being
    symmetric (the size's quantile at 2 level - 1)."""
    if release.parameters.get("estimate") == "noisy":
        return noise_quantiles(release, noises, level)
    as_least_squares = dataclasses.replace(release, mechanism="least-squares")
    draws = by_time(release.hierarchy.n_nodes, LS_REPLICATES, SIMULATION_DRAWS)
    (two_sided, below), *_ = _least_squares(as_least_squares, noises,
                                            (level, one_sided(level)), draws)
    return two_sided, below


def _least_squares(release: Release, noises: list[Noise | None], levels: tuple[float, ...],
                   replicates: int):
    """Least squares' half-widths c_l sqrt(P_v) per node (a column; module doc) at each of
    the ``levels``, from the same draws; methods per level, draws (None for normal) and,
    simulated, the first level's `tied_quantile` per level (the next smaller half-width
    per node and the share that takes the larger one), else None."""
    h = release.hierarchy
    variance = _variances(noises)
    root_invariant = bool(release.parameters.get("root_invariant"))
    sd = np.sqrt(np.concatenate(gls_variances(h, variance, root_invariant)))
    measured = [n for n in noises if n is not None]
    if all(n.name in GAUSSIAN_NOISES for n in measured):
        cs = [np.full(h.n_levels, Gaussian(1.0).abs_quantile(q)) for q in levels]
        return [per_node(release, c) * sd[:, None] for c in cs], ["normal"] * h.n_levels, \
            None, None
    errors = _redraw(release, noises, np.zeros((h.n_nodes, replicates)), variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.nan_to_num(np.abs(errors) / sd[:, None])
    tied = np.array([[tied_quantile(t[h.level_slice(lv)].ravel(), q)
                      for lv in range(h.n_levels)] for q in levels])  # (levels, n_levels, 3)
    halves = [per_node(release, c) * sd[:, None] for c in tied[:, :, 0]]
    ties = (per_node(release, tied[0, :, 1]) * sd[:, None], per_node(release, tied[0, :, 2]))
    return halves, ["simulated"] * h.n_levels, replicates, ties


def _variances(noises: list[Noise | None]) -> np.ndarray:
    return np.array([np.inf if n is None else n.variance for n in noises])


def _redraw(release: Release, noises: list[Noise | None], base: np.ndarray,
            variance: np.ndarray, source: NoiseSource | None = None) -> np.ndarray:
    """The mechanism's estimate from fresh noisy measurements of ``base`` (n_nodes, m):
    each level's noise drawn from ``source`` (default seeded by `SEED`), NaN where not
    measured, estimated column by column; an invariant root keeps ``base``'s."""
    return _estimate(release, _measured(release, noises, base, source), base, variance)


def _measured(release: Release, noises: list[Noise | None], base: np.ndarray,
              source: NoiseSource | None = None) -> np.ndarray:
    """Fresh noisy measurements of ``base``: each level's noise drawn from ``source``
    (default seeded by `SEED`), NaN where the level is not measured."""
    h = release.hierarchy
    source = source or NoiseSource(seed=SEED)
    noisy = np.full(base.shape, np.nan)
    for lv, noise in enumerate(noises):
        if noise is not None:
            sl = h.level_slice(lv)
            noisy[sl] = base[sl] + noise.sample(base[sl].shape, source)
    return noisy


def _estimate(release: Release, noisy: np.ndarray, base: np.ndarray,
              variance: np.ndarray) -> np.ndarray:
    """The release's mechanism's estimate from the measurements ``noisy`` of ``base``; an
    invariant root keeps ``base``'s."""
    h = release.hierarchy
    root = base[0] if release.invariants else None
    data = CountData(h, base[h.level_slice(h.depth)])
    return get_mechanism(release.mechanism).estimate(data, noisy, variance, root,
                                                     release.parameters)


def _redraw_errors(release: Release, noises: list[Noise | None], cols: np.ndarray,
                   replicates: int, per_chunk: int, variance: np.ndarray,
                   stream: tuple[int, ...]) -> np.ndarray:
    """The bootstrap's errors (redraw - value) of the categories ``cols`` (n_nodes, width),
    shaped (n_nodes, width, replicates), ``per_chunk`` replicates per call of the
    estimator. Each call draws its noise from a stream of its own (``stream`` and its first
    replicate: the same numbers on every run, whichever thread makes them); the calls run
    on both cores (numpy releases the GIL), two at a time and a third waiting."""
    n, width = cols.shape
    d = np.empty((n, width, replicates), dtype=cols.dtype)

    def redraw_into(start: int, m: int) -> None:
        base = np.tile(cols, m)  # column j: replicate j // width, category j % width
        source = NoiseSource(generator=np.random.default_rng([*stream, start]))
        redraw = _estimate(release, _measured(release, noises, base, source), base, variance)
        d[:, :, start:start + m] = (redraw - base).reshape(n, m, width).transpose(0, 2, 1)

    with ThreadPoolExecutor(2) as pool:
        pending = []
        for start in range(0, replicates, per_chunk):
            pending.append(pool.submit(redraw_into, start, min(per_chunk, replicates - start)))
            if len(pending) > 2:
                pending.pop(0).result()
        for job in pending:
            job.result()
    return d


def _bootstrap(release: Release, noises: list[Noise | None], level: float,
               replicates: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Per cell, the half-widths below and above the value from the parametric bootstrap
    (module doc), shaped like the values, the number of replicates (fewer than asked
    when a single category's would hold more than `_MAX_DRAWS` values) and the mean
    |redraw - value| (`intervals.estimated_error`). Categories run in
    blocks of that many values, the replicates of a block in chunks of about
    `_CHUNK_CELLS` cells per call of the estimator."""
    values = release.values
    n, k = values.shape
    replicates = min(replicates, max(_MAX_DRAWS // n, MIN_REPLICATES))
    variance = _variances(noises)
    stream = (SEED, plugin_stream(values))
    r = rank(level, replicates)
    above = np.empty_like(values)
    mean_abs = np.empty(values.shape)
    inside = np.empty(values.shape, np.int32) if release.is_integer else None
    held = np.empty(values.shape, np.int32) if release.is_integer else None
    block = max(1, _MAX_DRAWS // (n * replicates))
    for first in range(0, k, block):
        cols = values[:, first:first + block]
        width = cols.shape[1]
        per_chunk = max(1, min(replicates, _CHUNK_CELLS // (n * width)))
        d = _redraw_errors(release, noises, cols, replicates, per_chunk, variance,
                           (*stream, first))
        halves = np.array_split(np.arange(n), 2)  # each cell's own: on both cores

        def sizes(rows: np.ndarray, first: int = first, d: np.ndarray = d) -> None:
            at = slice(rows[0], rows[-1] + 1) if rows.size else slice(0, 0)
            cells = (at, slice(first, first + block))
            above[cells], narrow, wide, mean_abs[cells] = symmetric_sizes(
                d[at], r, release.is_integer)
            if narrow is not None:
                inside[cells], held[cells] = narrow, wide

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(sizes, halves))
    if inside is None:
        return above, above, replicates, mean_abs
    h, below = release.hierarchy, above.copy()
    uniform = np.random.default_rng([*stream, TRIM_STREAM])
    for lv in range(h.n_levels):  # one group per level, category and half-width
        at = h.level_slice(lv)
        below[at] -= pooled_trim(above[at], inside[at], held[at], replicates, level,
                                 uniform.random(above[at].shape))
    return below, above, replicates, mean_abs

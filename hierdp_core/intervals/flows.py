"""Intervals on origin/destination flow releases: per released row (every released node of
the O/D tree, level after level in the release's ``levels``; `FlowRelease.to_frame` lists
them in reading order), a (lower, upper) at a confidence level,
from the release alone. Nodes that are not released (released as 0) get no row.

* ``vanilla-gauss`` (``exact`` at the leaves, ``normal`` above): a leaf cell is its count
  plus one discrete Gaussian draw (the ledger's leaf noise), so value -/+ the noise's
  quantile (`counts.raw_half_widths`); a coarser node sums the noise of its m leaf pairs
  (m from the public geography: leaves under the origin times leaves under the
  destination), so value -/+ floor(z sqrt(m) sigma) (truth and value are integers).
* ``stability-histogram`` at the leaves (``parametric bootstrap``; ``inftda``,
  ``tda-*``: next): the released leaf cells are the plug-in truth (its number of trips the released n); the
  mechanism's public release API is re-run on it with the release's budget, split and
  parameters and the public seed (`bootstrap.rerun_bootstrap`); per row, value -/+ the
  level-quantile of |redraw - plug-in| (a node the redraw does not release counts as 0),
  the lower end one higher where the row's own redraws allow it, or pooled with the other
  rows of its level and half-width (`bootstrap.rerun_bootstrap`).
  The authors' half-budget option is re-run as the levels' budgets it spent. A release
  with no leaf cell (all suppressed) has nothing to redraw: its rows get [value, value] (0
  replicates).
* ``stability-histogram`` above the leaves (``suppression bound``): a node's value V sums
  its k released leaf cells, each rint(c + Z) with Z ~ Laplace(b) (the ledger's leaf
  scale); the other noised cells under it were suppressed (c + Z < tau, the ledger's
  threshold) and count 0; untouched pairs have c = 0. Of its m leaf pairs (public
  geography) at most m are noised, so with S+ and S- the sums of max(Z, 0) and max(-Z, 0)
  over them: truth >= V - k/2 - S+ (released cells only, rint(Z) <= max(Z, 0) + 1/2) and
  truth <= V + k/2 + S- + (m - k) tau (a suppressed cell is below tau - Z; tau - 1 would
  need integer noise and an integer tau, and tau = 1 + 2 ln(2/delta)/epsilon is not).
  S+ and S- are each bounded at probability (1 - level)/2 by Chernoff's bound on m
  i.i.d. half-Laplace terms (E exp(lambda max(Z, 0)) = 1/2 + 1/(2 (1 - lambda b)),
  minimised over lambda in (0, 1/b)): the interval holds with probability >= level from
  public parameters only (b, tau, the geography) and released values (V, k); it is wide
  where many pairs are suppressed (the unknown mass is up to tau each). Measured at
  or above nominal on every shape of `benchmarks/coverage_flows.py`.
* ``inftda``, ``tda-*`` (``bias-widened bootstrap``): the same, but their top-down loop
  prunes small cells and keeps false positives, a bias at the truth the plug-in's redraws
  do not show (the plain bootstrap covered 0.75-0.86 of the US flights' two finest levels
  at nominal 0.9, 0.43-0.71 of the smallest quartile): both half-widths grow by the cell's
  mean error over the redraws, |mean(redraw - plug-in)|, rounded to the nearest integer
  (the "bias" of the plug-in). Measured 0.94-0.97 at the flights' levels below the total,
  0.94 or more in their smallest quartiles (0.95-0.98 rounded up; benchmarks/README.md).

The bootstrap's record holds each level's mean |error| per released row estimated from
the same re-runs (``estimated_error``, `intervals.estimated_error`; a node a redraw does
not release counts 0; none for stability-histogram, whose suppression the re-runs do not
reproduce as the release has it). It is the error of the rows released, not of the pairs
left out.

Under bounded DP the root (n) is an invariant: [n, n], and no node can pass it. All
intersected with [0, inf) (and [0, n]).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.flows.data import flow_data_from_leaves
from hierdp_core.flows.release import FlowRelease
from hierdp_core.flows.tree import TreeLevel
from hierdp_core.intervals.bootstrap import (
    WIDENINGS,
    check_level,
    feasible,
    interval_record,
    release_budget,
    rerun_bootstrap,
    step_record,
)
from hierdp_core.intervals.counts import raw_half_widths
from hierdp_core.intervals.estimated_error import estimated_error
from hierdp_core.mechanisms.base import capabilities, get_mechanism
from hierdp_core.mechanisms.flow_base import FlowMechanism
from hierdp_core.mechanisms.flow_baselines import StabilityHistogram
from hierdp_core.privacy.samplers import NOISES, Gaussian
from hierdp_core.releases import CellIntervals


def flow_intervals(release: FlowRelease, level: float,
                   replicates: int | None = None) -> CellIntervals:
    """Per released row, intervals at ``level`` (module doc); ``replicates``: the
    bootstrap's (default chosen by time)."""
    level = check_level(level, replicates)
    values = np.concatenate([lv.value for lv in release.levels]).astype(np.float64)
    how = capabilities(release.mechanism).intervals
    if how == "closed-form":
        below, above = _leaf_sums(release, level)
        methods = ["normal"] * release.depth + ["exact"]
        draws, extra = None, {}
    else:
        below, above, draws, mean_abs = _bootstrap(release, level, replicates)
        methods = [how if how in WIDENINGS else "parametric bootstrap"] * (release.depth + 1)
        extra = {"plug_in": "the released leaf O/D cells", **step_record(release.is_integer)}
        suppressed = release.mechanism == "stability-histogram"
        if suppressed:
            coarse = slice(0, below.size - release.levels[-1].size)  # none may be released
            below[coarse], above[coarse] = _suppression_bound(release, level)
            methods[:-1] = [SUPPRESSION_BOUND] * release.depth
        if draws:
            unseen = np.full(values.size, suppressed)
            ends = np.cumsum([0] + [lv.size for lv in release.levels])
            extra["estimated_error"] = estimated_error(
                [(name, slice(a, b)) for name, a, b in zip(release.level_names, ends[:-1],
                                                           ends[1:], strict=True)],
                mean_abs, unseen, UNSEEN_SUPPRESSED)
    lower, upper = values - below, values + above
    if release.invariants:  # bounded DP: n published exactly
        methods[0] = "exact (invariant)"
        lower[0] = upper[0] = values[0]
    record = interval_record(level, dict(zip(release.level_names, methods, strict=True)),
                             draws, rows="released nodes (absent nodes are 0, no row)",
                             **extra)
    return feasible(lower, upper, record, values[0] if release.invariants else None,
                    integer=release.is_integer)


SUPPRESSION_BOUND = "suppression bound"
UNSEEN_SUPPRESSED = ("stability-histogram: re-runs on the released cells suppress some of "
                     "them (counted as errors of their whole value, which the release's "
                     "rows do not have: 1.3-1.6 of the measured at the leaves) and never "
                     "see the mass it suppressed under the coarser nodes")
threshold = StabilityHistogram.threshold


def _suppression_bound(release: FlowRelease, level: float) -> tuple[np.ndarray, np.ndarray]:
    """stability-histogram's half-widths (below, above) per row above the leaves
    (module doc)."""
    last = release.ledger.iloc[-1]
    budget = release_budget(release.privacy)
    scale, tau = float(last["noise_scale"]), threshold(budget.value, budget.delta)
    geo = release.geography
    leaves_under = geo.aggregate(np.ones((geo.n_leaves, 1)))[:, 0]
    leaf = release.levels[-1]
    released = leaf.value > 0
    below, above = [], []
    for lv, (lo, ld) in zip(release.levels[:-1], release.pair_levels[:-1], strict=True):
        m = (leaves_under[geo.level_offsets[lo] + lv.origin]
             * leaves_under[geo.level_offsets[ld] + lv.destination])
        width = geo.level_size(ld)
        under = (_ancestor(geo, leaf.origin[released], lo) * width
                 + _ancestor(geo, leaf.destination[released], ld))
        keys = lv.keys(width)
        k = np.bincount(np.searchsorted(np.unique(keys), under[np.isin(under, keys)]),
                        minlength=np.unique(keys).size)[np.searchsorted(np.unique(keys),
                                                                         keys)]
        tail = half_laplace_sum_bound(m, scale, (1 - level) / 2)
        below.append(np.floor(k / 2 + tail))
        above.append(np.ceil(k / 2 + tail + (m - k) * max(tau, 0)))
    return np.concatenate(below), np.concatenate(above)


def _ancestor(geo, leaves: np.ndarray, level: int) -> np.ndarray:
    """The leaves' (local indices) ancestors at ``level``, as local indices there."""
    node = leaves + geo.level_offsets[geo.depth]
    for _ in range(geo.depth - level):
        node = geo.parent[node]
    return node - geo.level_offsets[level]


def half_laplace_sum_bound(n: np.ndarray, scale: float, p: float) -> np.ndarray:
    """t with P(sum of n i.i.d. max(Z, 0), Z ~ Laplace(scale), >= t) <= p, per n:
    Chernoff's bound min over lambda of (n log M(lambda) - log p) / lambda, M the
    moment generating function 1/2 + 1/(2 (1 - lambda scale))."""
    lam = np.linspace(0.01, 0.99, 99)[None, :] / scale
    log_m = np.log(0.5 + 0.5 / (1 - lam * scale))
    n = np.asarray(n, dtype=np.float64)[:, None]
    return ((n * log_m - np.log(p)) / lam).min(axis=1)


def _leaf_sums(release: FlowRelease, level: float) -> tuple[np.ndarray, np.ndarray]:
    """vanilla-gauss's half-widths per row: exact at the leaves, normal for sums."""
    last = release.ledger.iloc[-1]
    noise = NOISES[last["noise"]](float(last["noise_scale"]))
    below_leaf, above_leaf = (w[0] for w in raw_half_widths([noise], level, rounded=False))
    geo = release.geography
    leaves = geo.aggregate(np.ones((geo.n_leaves, 1)))[:, 0]
    z = Gaussian(1.0).abs_quantile(level)
    below, above = [], []
    for lv, (lo, ld) in zip(release.levels, release.pair_levels, strict=True):
        m = (leaves[geo.level_offsets[lo] + lv.origin]
             * leaves[geo.level_offsets[ld] + lv.destination])
        wide = np.floor(z * np.sqrt(m * noise.variance))
        below.append(np.where(m == 1, below_leaf, wide))
        above.append(np.where(m == 1, above_leaf, wide))
    return np.concatenate(below), np.concatenate(above)


def _bootstrap(release: FlowRelease, level: float, replicates: int | None):
    leaf = release.levels[-1]
    keep = leaf.value > 0
    if not keep.any():  # nothing released below the root: nothing to redraw
        zeros = np.zeros(sum(lv.size for lv in release.levels))
        return zeros, zeros, 0, zeros
    plugin = flow_data_from_leaves(release.geography, leaf.origin[keep],
                                   leaf.destination[keep], leaf.value[keep],
                                   tree=release.tree)
    widths = [release.geography.level_size(ld) for _, ld in release.pair_levels]
    wanted = [_sorted_keys(lv.keys(w)) for lv, w in zip(release.levels, widths, strict=True)]
    truth = np.concatenate([plugin.lookup(t, lv.origin, lv.destination)
                            for t, lv in enumerate(release.levels)]).astype(np.float64)
    mechanism = get_mechanism(release.mechanism)
    params = dict(release.parameters)
    if params.get("authors_budget"):  # the ledger's shares are of what was spent
        params["authors_budget"] = False
    budget, split = release_budget(release.privacy), list(release.ledger["share"])

    rerun = mechanism.releaser(plugin, budget, split=split, **params)
    redraws = None
    if isinstance(mechanism, FlowMechanism):  # the re-runs' trees grown together
        trees = mechanism.trees(plugin, budget, split=split, **params)

        def redraws(sources):
            forest = trees(sources)
            return _values_at(forest.levels, widths, wanted, forest.trial, len(sources))

    how = capabilities(release.mechanism).intervals
    widen = how if how in WIDENINGS else None
    groups = np.repeat(np.arange(len(wanted)), [keys.size for _, keys in wanted])
    return rerun_bootstrap(rerun, lambda r: _values_at(r.levels, widths, wanted), truth,
                           release.ledger, level, replicates, release.is_integer,
                           widen=widen, redraws=redraws, groups=groups)


def _sorted_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the order that sorts ``keys``, the keys sorted): a level's wanted pair keys, sorted
    once for every redraw `_values_at` reads."""
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


def _values_at(levels: list[TreeLevel], widths: list[int], wanted: list[tuple],
               trials=None, n: int = 1) -> np.ndarray:
    """A redrawn tree's values at the wanted pair keys of every level (``wanted``: each
    level's `_sorted_keys`; 0 where not released), one vector; with ``trials`` (a
    `Forest`'s) ``n`` trees' as rows."""
    out = np.zeros((n, sum(keys.size for _, keys in wanted)))
    column = 0
    for level, (lv, width, (order, keys)) in enumerate(zip(levels, widths, wanted,
                                                           strict=True)):
        own = lv.keys(width)
        pos = np.minimum(np.searchsorted(keys, own), max(keys.size - 1, 0))
        hit = keys[pos] == own if keys.size else np.zeros(own.size, dtype=bool)
        rows = 0 if trials is None else trials[level][hit]
        out[rows, column + order[pos[hit]]] = lv.value[hit]
        column += keys.size
    return out if trials is not None else out[0]

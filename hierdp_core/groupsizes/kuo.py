"""Kuo, Chiu, Kifer, Hay & Machanavajjhala (2018), "Differentially private hierarchical
group size estimation": Algorithm 1, "top-down consistency" (paper sec. 5, spec
``shared/specs/group-sizes-kuo.md`` sec. 2.4), as functions on whole levels of a `Hierarchy`.

`kuo_release` runs the algorithm end to end (`kuo_release_trials`: many successive releases
of one table at once, as the privacy audit makes them); each phase lives in its own module:

* Phase 1, private measurement: the per-node estimators Naive, Hg and Hc (paper sec. 4),
  `hierdp_core.groupsizes.kuo_estimators`, with the isotonic regression of
  `hierdp_core.groupsizes.isotonic`;
* Phase 2, variance estimation (paper sec. 5.1): `hierdp_core.groupsizes.kuo_variance`;
* Phase 3, the optimal matching (Algorithm 2) and the merge (paper sec. 5.2-5.3):
  `hierdp_core.groupsizes.kuo_matching`, run top-down over the levels by `kuo_hierarchical`
  here, followed by the back-substitution from the leaves.

Privacy (spec 1.3-1.5; the caller does the accounting): Phase 1 is the only step that
reads the data, level by level; its neighbouring relation and sensitivities are set out in
`kuo_estimators`. The levels compose sequentially: a release with ``epsilon_per_level``
costs ``sum(epsilon_per_level)``. Phases 2 and 3 are post-processing.

Arrays: histograms have shape (n_nodes, N + 1) over sizes 0..N (N = the public top-code).
Between the phases, ranked group sizes are kept run-length encoded in `kuo_runs.Runs` (one
run = a number of groups of one node sharing a value and a variance), so everything after
the noise costs O(runs), not O(groups).

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> from hierdp_core.privacy.plan import PERSON_IN_GROUP, Stage
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> h, _ = build_hierarchy(pd.DataFrame({"state": ["A", "B"]}), ["state"])
>>> leaves = np.array([[0, 5, 3, 1], [2, 0, 4, 0]])
>>> hist = h.aggregate(leaves)
>>> stage = Stage("levels", PERSON_IN_GROUP, 1.0, "geometric", 1.0)  # the plan's
>>> out, phase1 = kuo_release(h, hist, hist.sum(1), [1e9, 1e9], ("hg", "hc"),
...                           NoiseSource(seed=0), stage=stage)
>>> out.tolist()  # no noise at this budget: the truth comes back
[[2, 5, 7, 1], [0, 5, 3, 1], [2, 0, 4, 0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes.kuo_estimators import (
    METHODS,
    Phase1Info,
    _isotonic_level,
    hc_draws,
    hc_estimate,
    hc_fit,
    hc_truth,
    hg_blocks,
    hg_draws,
    hg_fit,
    hg_level,
)
from hierdp_core.groupsizes.kuo_matching import MERGES, match_level, merge_level
from hierdp_core.groupsizes.kuo_runs import (
    Runs,
    _check_choice,
    _coalesce,
    add_counts,
    side_by_side,
)
from hierdp_core.groupsizes.kuo_variance import estimate_variances
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Noise, NoiseSource


def kuo_hierarchical(
    h: Hierarchy,
    level_estimates: Sequence[np.ndarray],
    level_variances: Sequence[Runs],
    groups: np.ndarray,
    *,
    merge: str = "weighted",
    tie_split: str = "proportional",
) -> np.ndarray:
    """Algorithm 1, phases 2-3 (spec 2.4): consistent release from Phase-1 estimates.

    ``level_estimates[l]``: the Phase-1 histograms of level l (n_l, N + 1);
    ``level_variances[l]``: their ranked groups with variances (`estimate_variances`), the
    same histograms run-length encoded; ``groups``: G_v of every node (public).

    Top-down, for each level l at once: match each parent's *current* (already merged)
    groups, ordered by (value, variance), with its children's *original* Phase-1 groups
    (`match_level`), merge each pair
    into the child (`merge_level`: weighted or simple, rounded after each merge, re-sorted
    with the variances); ``tie_split`` as in `match_level`. The leaves' final groups are counted (bincount) and every internal
    node is the sum of its leaves (back-substitution): the merged internal values are never
    output (pitfall 12). Post-processing only: no privacy cost.

    Returns (n_nodes, N + 1) int64: integers >= 0, rows summing to G_v, every parent equal
    to the sum of its children at every size.
    """
    _check_choice("merge", merge, MERGES)
    if len(level_estimates) != h.n_levels or len(level_variances) != h.n_levels:
        raise InputError(f"expected one estimate and one variance set per level "
                         f"({h.n_levels})")
    groups = np.asarray(groups).astype(np.int64).reshape(-1)
    if groups.shape != (h.n_nodes,):
        raise InputError(f"expected {h.n_nodes} group counts, got {groups.shape}")
    if np.any(h.aggregate(groups[h.level_slice(h.depth)]) != groups):
        raise InputError("G_v must equal the sum of the children's G_c at every node")
    max_size = np.asarray(level_estimates[0]).shape[1] - 1
    for level in range(h.n_levels):
        _check_phase1(h, level, level_estimates[level], level_variances[level],
                      groups, max_size)
    return _consistent(h, level_variances, max_size, merge, tie_split)[0]


def _consistent(h: Hierarchy, level_variances: Sequence[Runs], max_size: int, merge: str,
                tie_split: str, trials: int = 1) -> np.ndarray:
    """Phases 2-3 on Phase-1 runs (checked, or made by `kuo_release`) of ``trials``
    releases side by side (level l's runs over ``trials * n_l`` nodes, trial t's nodes
    ``t n_l .. (t + 1) n_l - 1``): their consistent histograms (trials, n_nodes, N + 1).
    Every match and merge stays within one parent and its children, so each trial's are
    the ones it gets alone."""
    current = _canonical(level_variances[0])
    for level in range(1, h.n_levels):
        child = level_variances[level]
        parents = side_by_side(h.segment_of_level(level), h.level_size(level - 1), trials)
        pairs = match_level(current, child, parents, tie_split=tie_split)
        current = merge_level(current, child, pairs, merge=merge)
    return _back_substitute(h, current, max_size, trials)


def _back_substitute(h: Hierarchy, leaves: Runs, max_size: int, trials: int) -> np.ndarray:
    """The histograms (trials, n_nodes, N + 1) of the leaves' final groups (``leaves``, the
    leaf level's runs of every trial) and of every internal node, the sum of its leaves':
    each run counted at its leaf and at every ancestor, one level at a time (O(runs) a
    level, where summing the leaves' full histograms up the tree reads every cell)."""
    out = np.zeros((trials, h.n_nodes, max_size + 1), dtype=np.int64)
    trial, leaf = np.divmod(leaves.node, h.n_leaves)
    node = leaf + h.level_offsets[h.depth]
    value = leaves.value.astype(np.int64)
    for _level in range(h.depth, -1, -1):
        add_counts(out.reshape(trials * h.n_nodes, -1), trial * h.n_nodes + node, value,
                   leaves.count)
        node = h.parent[node]
    return out


def _canonical(runs: Runs) -> Runs:
    """Runs sorted by (node, value, variance), equal neighbours merged: the order in which
    a parent's tied groups are matched (the same order `merge_level` leaves children in)."""
    order = np.lexsort((runs.var, runs.value, runs.node))
    return _coalesce(runs.node[order], runs.value[order], runs.var[order], runs.count[order],
                     runs.n_nodes)


def _check_phase1(h, level, est, runs, groups, max_size):
    est = np.asarray(est)
    n = h.level_size(level)
    if est.shape != (n, max_size + 1) or runs.n_nodes != n:
        raise InputError(f"level {level}: expected estimates of shape {(n, max_size + 1)}")
    if np.any(runs.count <= 0) or np.any(~(runs.var >= 0)) or np.any(~np.isfinite(runs.var)):
        raise InputError(f"level {level}: runs need positive counts and finite variances "
                         f">= 0")
    if np.any(runs.to_hist(max_size) != est):
        raise InputError(f"level {level}: the variance runs do not match the estimates")
    if np.any(runs.groups() != groups[h.level_slice(level)]):
        raise InputError(f"level {level}: estimates must have G_v groups per node")


def kuo_release(
    h: Hierarchy,
    hist: np.ndarray,
    groups: np.ndarray,
    epsilon_per_level: Sequence[float],
    methods: Sequence[str],
    source: NoiseSource,
    *,
    p: int = 2,
    hg_p: int = 2,
    merge: str = "weighted",
    hg_count: str = "equal",
    hc_divisor: str = "count",
    noise_variance: str = "laplace",
    tie_split: str = "proportional",
    stage: Stage,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 end to end: Phase 1 per level, variances, top-down match and merge.

    ``hist``: true histograms (n_nodes, N + 1) of every node (or of the leaves only);
    ``groups``: public G_v (n_nodes,); ``epsilon_per_level``: one budget per level, root
    first (the paper's uniform split is eps / L each); ``methods``: one of "hc"/"hg" per
    level, e.g. ("hg", "hc", "hc"); ``p``: isotonic loss of the Hc levels (1 or 2; the
    spec's guess is that the paper found p = 1 better for Hc), ``hg_p``: of the Hg levels
    (the paper used 2). The other switches are those of `hc_level`/`hg_level`,
    `estimate_variances` and `kuo_hierarchical`.

    Privacy: level l is eps_l-DP for the add/remove-one-person neighbour with public G_v
    (L1 sensitivity 1 for Hc and Hg, parallel within the level: ``stage``, the measuring
    stage of the mechanism's privacy plan, gives the noise of both at its exact scale,
    `Stage.noise_for`); the release is
    sum(epsilon_per_level)-DP by sequential composition. The caller accounts for it.

    Returns ``(released, phase1)``: the consistent release (see `kuo_hierarchical`), and
    the independent Phase-1 estimates of every node (the "no consistency" baseline), both
    (n_nodes, N + 1) int64.
    """
    return kuo_releaser(h, hist, groups, epsilon_per_level, methods, p=p, hg_p=hg_p,
                        merge=merge, hg_count=hg_count, hc_divisor=hc_divisor,
                        noise_variance=noise_variance, tie_split=tie_split,
                        stage=stage)(source)


class _Level(NamedTuple):
    """A checked level of `kuo_release`'s input, what each of its releases measures."""

    method: str  # "hc" or "hg"
    hist: np.ndarray
    groups: np.ndarray
    gen: Noise  # the noise at the level's exact scale
    epsilon: float
    p: int  # the loss of its isotonic fit
    truth: np.ndarray | None  # Hc's measured cells (`hc_truth`)


def _levels(h: Hierarchy, hist: np.ndarray, groups, eps, methods, p: int, hg_p: int,
            stage: Stage) -> list[_Level]:
    """Every level of checked inputs (`_checked`) checked and its measurement prepared."""
    out = []
    for lv, method in enumerate(methods):
        loss = p if method == "hc" else hg_p
        sl = h.level_slice(lv)
        level_hist, level_groups, gen = _isotonic_level(hist[sl], np.asarray(groups)[sl],
                                                        eps[lv], p=loss, stage=stage)
        out.append(_Level(method, level_hist, level_groups, gen, eps[lv], loss,
                          hc_truth(level_hist) if method == "hc" else None))
    return out


def kuo_releaser(h: Hierarchy, hist: np.ndarray, groups: np.ndarray,
                 epsilon_per_level: Sequence[float], methods: Sequence[str], *, p: int = 2,
                 hg_p: int = 2, merge: str = "weighted", hg_count: str = "equal",
                 hc_divisor: str = "count", noise_variance: str = "laplace",
                 tie_split: str = "proportional",
                 stage: Stage) -> Callable[[NoiseSource], tuple[np.ndarray, np.ndarray]]:
    """`kuo_release` of one table as a function of the noise source, its inputs checked
    and what every release measures made once (the levels' checks, Hc's cumulative cells):
    a bootstrap re-runs it many times. The same values as `kuo_release`."""
    hist, eps, methods = _checked(h, hist, epsilon_per_level, methods)
    _check_choice("merge", merge, MERGES)
    levels = _levels(h, hist, groups, eps, methods, p, hg_p, stage)

    def release(source: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
        phase1 = np.zeros(hist.shape, dtype=np.int64)
        variances = []
        for lv, level in enumerate(levels):
            est = phase1[h.level_slice(lv)]
            if level.method == "hc":
                info = hc_estimate(est, level.truth, level.groups, level.gen, source,
                                   level.epsilon, level.p, stage)
            else:
                est[:], info = hg_level(level.hist, level.groups, level.epsilon, source,
                                        p=level.p, stage=stage)
            variances.append(estimate_variances(est, info, hg_count=hg_count,
                                                hc_divisor=hc_divisor,
                                                noise_variance=noise_variance))
        return _consistent(h, variances, hist.shape[1] - 1, merge, tie_split)[0], phase1

    return release


def kuo_release_trials(h: Hierarchy, hist: np.ndarray, groups: np.ndarray,
                       epsilon_per_level: Sequence[float], methods: Sequence[str],
                       source: NoiseSource, n: int, *, p: int = 2, merge: str = "weighted",
                       stage: Stage) -> tuple[np.ndarray, np.ndarray]:
    """``n`` successive `kuo_release` calls with ``source`` (its other switches at their
    defaults): ``(released, phase1)``, each (n, n_nodes, N + 1), bit for bit theirs. Every
    trial's noise is drawn in turn, level by level, as its release draws it; then each
    level's fits, variances, matchings and merges are made for the n trials at once, side
    by side (trial t's nodes of level l are ``t n_l .. (t + 1) n_l - 1``). A fit never
    pools two nodes, and with integer noise (the geometric) the shifted rows of the
    isotonic fits are exact whatever sits before them; Laplace noise is estimated one
    trial at a time."""
    hist, eps, methods = _checked(h, hist, epsilon_per_level, methods)
    _check_choice("merge", merge, MERGES)
    groups = np.asarray(groups)
    levels = _levels(h, hist, groups, eps, methods, p, 2, stage)
    if not all(level.gen.integer for level in levels):
        release = kuo_releaser(h, hist, groups, eps, methods, p=p, merge=merge, stage=stage)
        return tuple(np.stack(x) for x in zip(*(release(source) for _ in range(n)),
                                              strict=True))
    drawn = [[_draws(level, source, stage) for level in levels] for _ in range(n)]
    phase1 = np.empty((n, *hist.shape), dtype=np.int64)
    variances = []
    for lv, level in enumerate(levels):
        est = np.zeros((n * len(level.hist), hist.shape[1]), dtype=np.int64)
        info = _fits(est, np.tile(level.groups, n), [trial[lv] for trial in drawn],
                     level.method, p, Phase1Info(level.method, level.epsilon, stage, 2))
        phase1[:, h.level_slice(lv)] = est.reshape(n, len(level.hist), -1)
        variances.append(estimate_variances(est, info))
    return _consistent(h, variances, hist.shape[1] - 1, merge, "proportional", n), phase1


def _draws(level: _Level, source: NoiseSource, stage: Stage) -> list:
    """One trial's measurement of a checked ``level``, as `hc_level` or `hg_level` draws
    it: its batches, drawn now."""
    if level.method == "hc":
        return [noisy for _, _, noisy in hc_draws(level.truth, level.gen, source,
                                                  level.epsilon, stage)]
    return list(hg_draws(level.hist, level.groups, level.gen, source, level.epsilon, stage))


def _fits(est: np.ndarray, groups: np.ndarray, drawn: list, method: str, p: int,
          info: Phase1Info) -> Phase1Info:
    """Into ``est`` (the trials' rows of one level side by side, ``groups`` their G_v):
    the Hc or Hg estimates of the trials' batches ``drawn`` (`_draws`, one list a trial),
    all fitted at once; returns the level's `Phase1Info` (``info`` with Hc's loss ``p``,
    or Hg's blocks)."""
    rows = len(est) // len(drawn)
    if method == "hc":
        est[:, -1] = groups
        if est.shape[1] == 1:
            return replace(info, p=p)
        return replace(info, p=p, cells=hc_fit(
            est, np.concatenate([y for batches in drawn for y in batches]), groups, p))
    nodes = [t * rows + nodes for t, batches in enumerate(drawn) for nodes, _ in batches]
    if not nodes:
        return replace(info, blocks=hg_blocks([], len(est)))
    nodes = np.concatenate(nodes)
    y = np.concatenate([y for batches in drawn for _, y in batches])
    return replace(info, blocks=hg_blocks([hg_fit(est, nodes, groups[nodes], y, 2)], len(est)))


def _checked(h: Hierarchy, hist, epsilon_per_level, methods):
    """`kuo_release`'s inputs checked: (hist of every node, epsilons, methods)."""
    hist = np.asarray(hist)
    if hist.ndim == 2 and hist.shape[0] == h.n_leaves and h.n_leaves != h.n_nodes:
        hist = h.aggregate(hist)
    if hist.ndim != 2 or hist.shape[0] != h.n_nodes:
        raise InputError(f"hist must have shape (n_nodes={h.n_nodes}, N + 1)")
    eps = [float(e) for e in epsilon_per_level]
    methods = [str(m).lower() for m in methods]
    if len(eps) != h.n_levels or len(methods) != h.n_levels:
        raise MechanismError(f"give one epsilon and one method per level ({h.n_levels})")
    for m in methods:
        _check_choice("method", m, METHODS)
    return hist, eps, methods

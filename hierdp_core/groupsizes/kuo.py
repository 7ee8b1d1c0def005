"""Kuo, Chiu, Kifer, Hay & Machanavajjhala (2018), "Differentially private hierarchical
group size estimation": Algorithm 1, "top-down consistency" (paper sec. 5, spec
``shared/specs/group-sizes-kuo.md`` sec. 2.4), as functions on whole levels of a `Hierarchy`.

`kuo_release` runs the algorithm end to end; each phase lives in its own module:

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

from collections.abc import Sequence

import numpy as np

from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes.kuo_estimators import METHODS, hc_level, hg_level
from hierdp_core.groupsizes.kuo_matching import MERGES, match_level, merge_level
from hierdp_core.groupsizes.kuo_runs import Runs, _check_choice, _coalesce, add_counts
from hierdp_core.groupsizes.kuo_variance import estimate_variances
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import NoiseSource


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
    current = _canonical(level_variances[0])
    for level in range(1, h.n_levels):
        child = level_variances[level]
        pairs = match_level(current, child, h.segment_of_level(level), tie_split=tie_split)
        current = merge_level(current, child, pairs, merge=merge)
    return _back_substitute(h, current, max_size)


def _back_substitute(h: Hierarchy, leaves: Runs, max_size: int) -> np.ndarray:
    """The histograms (n_nodes, N + 1) of the leaves' final groups (``leaves``, the leaf
    level's runs) and of every internal node, the sum of its leaves': each run counted at
    its leaf and at every ancestor, one level at a time (O(runs) a level, where summing
    the leaves' full histograms up the tree reads every cell)."""
    out = np.zeros((h.n_nodes, max_size + 1), dtype=np.int64)
    node = leaves.node + h.level_offsets[h.depth]
    value = leaves.value.astype(np.int64)
    for _level in range(h.depth, -1, -1):
        add_counts(out, node, value, leaves.count)
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
    phase1 = np.empty(hist.shape, dtype=np.int64)
    estimates, variances = [], []
    for level in range(h.n_levels):
        sl = h.level_slice(level)
        if methods[level] == "hc":
            est, info = hc_level(hist[sl], np.asarray(groups)[sl], eps[level], source, p=p,
                                 stage=stage)
        else:
            est, info = hg_level(hist[sl], np.asarray(groups)[sl], eps[level], source,
                                 p=hg_p, stage=stage)
        phase1[sl] = est
        estimates.append(est)
        variances.append(estimate_variances(est, info, hg_count=hg_count,
                                            hc_divisor=hc_divisor,
                                            noise_variance=noise_variance))
    released = kuo_hierarchical(h, estimates, variances, groups, merge=merge,
                                tie_split=tie_split)
    return released, phase1

"""The group-size release mechanisms, registered: the noisy baseline, TopDown, Fioretto et
al.'s dynamic programs and relaxed QPs, the paper's chain and Kuo et al.'s estimators. Their
privacy claim and shared machinery are in `hierdp_core.mechanisms.group_sizes_base`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.consistency.segments import project_segments, round_segments
from hierdp_core.consistency.topdown import topdown
from hierdp_core.groupsizes.data import GroupSizeData
from hierdp_core.groupsizes.group_counts import keep_group_counts, keep_group_counts_trials
from hierdp_core.mechanisms.base import Capabilities, Parameter, register
from hierdp_core.mechanisms.group_sizes_base import (
    FIORETTO,
    G_V_PUBLIC,
    KUO,
    NOISE_PARAM,
    TOPDOWN_REF,
    GroupSizeMechanism,
    groups_parameter,
    gs_info,
    total_groups,
)
from hierdp_core.mechanisms.measure import measure

#: measured with `benchmarks/bench_coverage.py` (2026-11-29, 120 releases, 20 replicates):
#: the plain bootstrap held 0.81 and 0.87 at middle levels of ragged trees (ragged-3's
#: second level at epsilon 0.1, ragged-5's third at 1; 0.90-0.96 on trees without
#: pass-through units), the bias-widened one 0.85 and 0.92
CHAIN_UNCALIBRATED = (
    "above the leaves",
    "measured 0.85 at nominal 0.9 at a middle level of a ragged tree (30% of its units with "
    "a single child), epsilon 0.1, 120 releases: the chain program's bias there is larger "
    "than the bootstrap's widening")

#: measured on `benchmarks/bench_coverage.py`'s shapes (docs/benchmarks.md)
KUO_ROOT_UNCALIBRATED = (
    "the root",
    "measured 0.865 at nominal 0.9 at the root of a tree whose one unit below the root has "
    "500 children, epsilon 0.1, 600 releases (standard error 0.008; its groups of 4 people "
    "0.742): the matching pulls the root's sum of many leaves toward their parents "
    "differently at the plug-in than at the truth, beyond the bootstrap's widening")


@dataclass
class NoisyBaseline(GroupSizeMechanism):
    """B0: every region's size histogram with noise, rounded and clamped at 0; nothing
    adds up (the reference the optimisation mechanisms improve on)."""

    invariants: tuple[str, ...] = ()

    def __post_init__(self):
        self.info = gs_info("gs-noisy", "Geometric noise on every region's size histogram at "
                            "every level, rounded and clamped at 0; no consistency (baseline).",
                            FIORETTO + " (step 1 of M_H)", consistent=False,
                            capabilities=Capabilities(estimate="raw", blockwise=True,
                                                    intervals="closed-form"))

    def estimate(self, data, noisy, variance, p):
        return np.maximum(np.rint(noisy), 0).astype(np.int64)


@dataclass
class GroupSizeTopDown(GroupSizeMechanism):
    """TopDown for group sizes: the root's noisy histogram projected onto non-negative
    values summing to G and rounded keeping the sum; then level by level every parent's
    children projected onto its released histogram (size by size) and rounded."""

    def __post_init__(self):
        self.info = gs_info("gs-topdown", "Census-style TopDown on size histograms: root "
                            "projected to sum G, then children onto their parent, size by "
                            "size, with sum-keeping rounding. Consistent integers.",
                            TOPDOWN_REF, consistent=True,
                            parameters=(NOISE_PARAM, groups_parameter("noisy")),
                            capabilities=Capabilities(estimate="topdown", blockwise=True))

    def estimate(self, data, noisy, variance, p):
        return self.estimate_trials(data, noisy[None], variance, p)[0]

    def estimate_trials(self, data, noisy, variance, p):
        """The K trials' roots projected at once and their levels handed down at once, the
        trials' sizes side by side as columns (`consistency.topdown.topdown` takes every
        column on its own): each trial's values as alone."""
        h, (trials, _, width) = data.hierarchy, noisy.shape
        roots = roots_on_simplex([total_groups(data, y[0], p) for y in noisy], noisy[:, 0])
        released = topdown(h, noisy.transpose(1, 0, 2).reshape(h.n_nodes, -1), roots.ravel())
        released = released.reshape(h.n_nodes, trials, width).transpose(1, 0, 2)
        if p.get("groups") != "exact":
            return released
        return keep_group_counts_trials(h, np.concatenate([roots[:, None], released[:, 1:]],
                                                          axis=1), data.groups())


def root_on_simplex(total_groups: int, noisy_root: np.ndarray) -> np.ndarray:
    """The root's noisy histogram projected onto non-negative values summing to G, rounded."""
    return roots_on_simplex([total_groups], np.asarray(noisy_root)[None])[0]


def roots_on_simplex(totals, noisy_roots: np.ndarray) -> np.ndarray:
    """`root_on_simplex` of K roots (K, N + 1) with their G (K,) at once (one segment each:
    each as alone)."""
    noisy_roots = np.asarray(noisy_roots, dtype=float)
    g = np.asarray(totals)
    start = np.arange(len(noisy_roots)) * noisy_roots.shape[1]
    flat = round_segments(project_segments(noisy_roots.ravel(), start, g), start, g)
    return flat.reshape(noisy_roots.shape)


def _groups_kept(data: GroupSizeData, released: np.ndarray, root: np.ndarray,
                 p: dict) -> np.ndarray:
    """``released`` (consistent), or with ``groups="exact"`` handed down from ``root`` keeping
    every region's G_v (`group_counts.keep_group_counts`; ``released`` ranks the groups)."""
    if p.get("groups") != "exact":
        return released
    return keep_group_counts(data.hierarchy, np.vstack([root[None, :], released[1:]]),
                             data.groups())


def _level_weights(variance: np.ndarray) -> np.ndarray:
    """Inverse noise variance per level, scaled so that a uniform split gives ones."""
    w = 1.0 / np.asarray(variance, dtype=float)
    return w / w.max()


@dataclass
class FiorettoDP(GroupSizeMechanism):
    """The exact dynamic programs of Fioretto, Van Hentenryck & Zhu:

    * ``mh``: M_H^dp, the exact integer optimum of Model 1 (weighted least squares to the
      noisy plain histograms of every level, consistent, non-negative, root summing to G);
    * ``mc``: M_c^dp, per-region isotonic regression of noisy cumulative histograms, the
      same exact program, reconciled top down from the root's own fit (no invented size-0
      groups; `fioretto.mc_dp`);
    * ``chain``: M_c^ch with the private variant S1 (noise on per-region cumulative
      histograms, sensitivity 1; the level-wide chain values derived from them by
      post-processing), then the exact chain program (Model 3 with the missing "<=" links),
      reconciled the same way keeping every G_v.

    ``groups="exact"`` (``mh``, ``mc``) keeps every region's G_v (`_groups_kept`).
    """

    variant: str = "mh"

    def __post_init__(self):
        if self.variant == "mh":
            self.info = gs_info("gs-mh-dp", "M_H^dp: noisy size histograms at every level, then "
                                "the exact integer least-squares hierarchy (cost tables merged "
                                "by sorted slopes). Consistent integers summing to G.",
                                FIORETTO, consistent=True,
                                parameters=(NOISE_PARAM, groups_parameter("noisy")))
        elif self.variant == "mc":
            self.representation = "cumulative"
            self.invariants = (G_V_PUBLIC,)  # the last cumulative cell of a region is G_v
            self.info = gs_info("gs-mc-dp", "M_c^dp: noisy cumulative histograms per region "
                                "(sensitivity 1), isotonic regression, the exact integer "
                                "hierarchy of M_H^dp, reconciled top down from the root's own "
                                "fit. Consistent integers summing to G.", FIORETTO,
                                consistent=True,
                                parameters=(NOISE_PARAM,
                                          groups_parameter("exact", estimated=False)))
        else:
            self.representation = "cumulative"
            self.invariants = (G_V_PUBLIC,)
            self.info = gs_info("gs-mc-chain", "M_c^ch made private (variant S1): noisy "
                                "cumulative histograms per region, level-wide chain values "
                                "derived from them, then the exact chain program. Consistent "
                                "integers summing to G.", FIORETTO + " (corrected: as published "
                                "the chain mechanism is not epsilon-DP)", consistent=True,
                                capabilities=Capabilities(intervals="bias-widened bootstrap",
                                                          uncalibrated=CHAIN_UNCALIBRATED))

    def estimate(self, data, noisy, variance, p):
        return self.estimate_trials(data, noisy[None], variance, p)[0]

    def estimate_trials(self, data, noisy, variance, p):
        """The K trials' programs solved and reconciled at once (`fioretto.mh_dp_trials`,
        `fioretto.mc_dp_trials`, `fioretto_chain.chain_dp_trials`,
        `group_counts.keep_group_counts_trials`: each trial's values as alone)."""
        from hierdp_core.groupsizes import fioretto
        from hierdp_core.groupsizes.fioretto_chain import (
            chain_dp_trials,
            chain_from_region_cumulative,
        )

        h, g, weights = data.hierarchy, data.total_groups, _level_weights(variance)
        if self.variant == "mc":
            groups = data.groups() if p["groups"] == "exact" else None
            return fioretto.mc_dp_trials(h, noisy, g, groups=groups, level_weights=weights)
        if self.variant == "chain":  # the root's own fit, the chain program below it
            groups = data.groups()
            released = chain_dp_trials(h, [chain_from_region_cumulative(h, y) for y in noisy],
                                       g)
            released[:, 0] = [fioretto.region_fits(y[:1], g, groups[:1])[0] for y in noisy]
            return keep_group_counts_trials(h, released, groups)
        g = [total_groups(data, y[0], p) for y in noisy]
        released = fioretto.mh_dp_trials(h, noisy, g, level_weights=weights)
        if p.get("groups") != "exact":
            return released
        return np.stack([_groups_kept(data, r, root_on_simplex(gk, y[0]), p)
                         for r, gk, y in zip(released, g, noisy, strict=True)])


@dataclass
class RelaxedQP(GroupSizeMechanism):
    """The relaxed quadratic programs of Fioretto et al. (M_H^r on plain histograms, M_c^r on
    cumulative ones): the least-squares hierarchy over non-negative reals, solved with
    Clarabel (interior point), then every cell rounded to the nearest integer. Rounding
    breaks consistency and faithfulness (the paper's #CV); it is not repaired."""

    variant: str = "mh"

    def __post_init__(self):
        if self.variant == "mc":
            self.representation = "cumulative"
            self.invariants = (G_V_PUBLIC,)
        model = "Model 2 (cumulative)" if self.variant == "mc" else "Model 1"
        self.info = gs_info(f"gs-{self.variant}-relaxed", f"M_{'c' if self.variant == 'mc' else 'H'}"
                            f"^r: {model} relaxed to a convex QP over non-negative reals "
                            "(Clarabel), then rounded cell by cell; the rounding breaks "
                            "consistency (slow; the baseline of the exact programs).",
                            FIORETTO, consistent=False)

    def estimate(self, data, noisy, variance, p):
        from hierdp_core.groupsizes import relaxed

        solve = relaxed.mc_relaxed if self.variant == "mc" else relaxed.mh_relaxed
        values, _ = solve(data.hierarchy, noisy, data.total_groups,
                          level_weights=_level_weights(variance))
        return values


@dataclass
class PaperChain(GroupSizeMechanism):
    """M_c^ch exactly as published: noise of scale L/epsilon on the level-wide chain
    cumulative counts. NOT epsilon-DP: a level's chain vector has L1 sensitivity equal to
    its number of regions, not 1, so the release is about epsilon * (sum of the level
    sizes) / L -DP. Kept only to reproduce the paper's numbers; the audit fails it."""

    representation: str = "cumulative"

    def __post_init__(self):
        self.measured = ("level-wide chain cumulative counts, noise as published (the claim "
                         "is wrong: their L1 sensitivity per level is the number of regions)")
        self.info = gs_info(
            "gs-mc-chain-paper", "M_c^ch as published (NOT private): noise calibrated to "
            "sensitivity 1 on level-wide chain counts whose sensitivity is the number of "
            "regions of the level. For reproducing the paper only.", FIORETTO,
            consistent=True, private=False,
            warning="noise calibrated to sensitivity 1 where it is the number of regions: "
                    "the real epsilon is about epsilon x (regions summed over levels) / "
                    "levels; use gs-mc-chain, the corrected private version")

    def measure_and_estimate(self, data, plans, p, source):
        values = self.trial_values(data, plans, p, source, 1)[0]
        return values, np.full(values.shape, np.nan)

    def trial_values(self, data, plans, p, source, n):
        """The chain values of ``n`` trials measured in turn, their programs solved at once
        (`fioretto_chain.chain_dp_trials`: the same values)."""
        from hierdp_core.groupsizes.fioretto_chain import chain_cumulative, chain_dp_trials

        h = data.hierarchy
        truth = chain_cumulative(h, data.node_counts())
        chains = [measure(truth, h, plans, source)[0] for _ in range(n)]
        return chain_dp_trials(h, chains, data.total_groups)


KUO_METHODS = {"hc": "Hc at every level", "hg": "Hg at every level",
               "hg-root": "Hg at the root, Hc below"}


@dataclass
class KuoEstimator(GroupSizeMechanism):
    """Kuo et al.: per region, Hc (noisy cumulative histogram, isotonic regression) or Hg
    (noisy sorted group sizes, isotonic regression); with ``hierarchical`` the top-down
    matching and variance-weighted merge of Algorithm 1 and back-substitution make the
    levels consistent. Every region keeps exactly its (public) number of groups."""

    representation: str = "cumulative"  # Hc and Hg both have L1 sensitivity 1 per level
    invariants: tuple[str, ...] = (G_V_PUBLIC,)
    method: str = "hc"  # for the per-region entries
    hierarchical: bool = False

    def __post_init__(self):
        self.measured = {"hc": "Hc: cumulative histograms of every region",
                         "hg": "Hg: sorted group sizes of every region"}.get(
            self.method if not self.hierarchical else "",
            "Hc (cumulative histograms) or Hg (sorted group sizes) of every region")
        loss = Parameter("isotonic_p", "choice", "2", "isotonic regression loss: L2 (PAV) or "
                         "L1", choices=("2", "1"))
        if self.hierarchical:
            self.info = gs_info(
                "gs-kuo-hierarchical", "Kuo et al.: Hc or Hg per region at every level, then "
                "top-down optimal matching of parent and child groups, variance-weighted "
                "merge and back-substitution. Consistent integers; every region keeps its "
                "number of groups.", KUO, consistent=True,
                # matching and rounding bias small cells: the bootstrap is widened on the
                # side the bias puts the truth (on both: 93 of 285 levels within 0.03 of
                # nominal 0.9, 99 over; on that side 139 and 79, none under, intervals 4.5%
                # narrower; docs/benchmarks.md)
                capabilities=Capabilities(intervals="bias-sided bootstrap",
                                          uncalibrated=KUO_ROOT_UNCALIBRATED),
                parameters=(NOISE_PARAM, loss,
                            Parameter("methods", "choice", "hc", "; ".join(
                                f"{k}: {v}" for k, v in KUO_METHODS.items()),
                                choices=tuple(KUO_METHODS)),
                            Parameter("merge", "choice", "weighted", "merge of matched "
                                      "estimates: variance-weighted or simple average",
                                      choices=("weighted", "simple"))))
        else:
            what = ("cumulative histogram (sensitivity 1), isotonic regression"
                    if self.method == "hc" else "sorted group sizes (sensitivity 1), isotonic "
                    "regression")
            self.info = gs_info(f"gs-kuo-{self.method}", f"Kuo et al. {self.method.upper()} per "
                                f"region: noisy {what}, rounded; levels not made consistent.",
                                KUO, consistent=False,
                                parameters=(NOISE_PARAM, loss) if self.method == "hc"
                                else (NOISE_PARAM,))

    def measure_and_estimate(self, data, plans, p, source):
        return self.estimator(data, plans, p)(source)

    def estimator(self, data, plans, p):
        """Kuo's release of ``data`` as a function of the source (`kuo.kuo_releaser`: the
        levels checked and their measurements prepared once): (values, Phase-1 estimates)."""
        from hierdp_core.groupsizes import kuo

        release = kuo.kuo_releaser(*self._kuo_inputs(data, plans, p), **self._options(p))

        def estimate(source):
            released, phase1 = release(source)
            return (released if self.hierarchical else phase1), phase1

        return estimate

    def trial_values(self, data, plans, p, source, n):
        """The ``n`` trials drawn in turn and estimated at once (`kuo.kuo_release_trials`:
        the same values)."""
        from hierdp_core.groupsizes import kuo

        released, phase1 = kuo.kuo_release_trials(*self._kuo_inputs(data, plans, p), source,
                                                   n, **self._options(p))
        return released if self.hierarchical else phase1

    def _kuo_inputs(self, data, plans, p) -> tuple:
        """`kuo.kuo_release`'s table, groups, budgets per level and methods."""
        h = data.hierarchy
        chosen = p.get("methods", self.method)
        methods = (["hg"] + ["hc"] * (h.n_levels - 1) if chosen == "hg-root"
                   else [chosen] * h.n_levels)
        return (h, data.node_counts(), data.groups(), [plan.budget.value for plan in plans],
                methods)

    def _options(self, p) -> dict:
        return dict(p=int(p.get("isotonic_p", "2")), merge=p.get("merge", "weighted"),
                    stage=self.privacy_plan(**p).stages[0])


for _mechanism in (NoisyBaseline(), RelaxedQP(variant="mh"), FiorettoDP(variant="mh"),
                   RelaxedQP(variant="mc"), FiorettoDP(variant="mc"),
                   FiorettoDP(variant="chain"), PaperChain(), GroupSizeTopDown(),
                   KuoEstimator(method="hc"), KuoEstimator(method="hg"),
                   KuoEstimator(hierarchical=True)):
    register(_mechanism)

"""Empirical privacy audit: a statistically valid LOWER bound on the epsilon a mechanism gives.

A mechanism that claims epsilon-DP must satisfy, for every pair of neighbouring inputs D, D'
and every set of outputs E,

    P[M(D) in E] <= exp(epsilon) * P[M(D') in E] + delta        (delta = 0 for pure DP).

So for any fixed E with P[M(D') in E] > 0, ``ln((P[M(D) in E] - delta) / P[M(D') in E])`` is a
lower bound on the true epsilon. The audit estimates those two probabilities by running the
mechanism many times on D and on D', with confidence bounds, and reports

    epsilon_lb = max(0, max over both directions of ln((p_lower(D, E) - delta) / p_upper(D', E)))

where p_lower / p_upper are one-sided Clopper-Pearson bounds. If the mechanism honours its
claim, ``epsilon_lb <= claimed epsilon`` with probability at least ``1 - alpha``; a lower
bound above the claim is evidence (at level alpha) that the implementation is broken. A
passing audit proves nothing; it can only catch mechanisms that leak more than they claim,
and only through the events it tries.

Method
------
1. Neighbours. An adapter (one per query kind, see `register_adapter`) builds a small pair
   D, D'. For counts: root > 2 regions > 2 leaves with leaf counts (3, 0, 5, 2), and D' adds
   one person to one leaf (the add/remove-one-person relation the count mechanisms declare).
   For O/D flows: the same geography, five leaf flows, and D' moves one trip to another
   pair (bounded DP, substitution) or adds one (unbounded), see `flow_adapter`.
2. Trials. ``trials`` independent releases per side, run in chunks. The registered count
   mechanisms process category columns independently (documented in
   `hierdp_core.mechanisms.counts`), so ``K`` trials are ONE release of a CountData with ``K``
   identical category columns; every column of the release is an independent trial. That
   is only valid for mechanisms known to work column by column: the declared set
   `BATCHED_COUNT_MECHANISMS` (every entry whose queries are ``('counts',)``). Any other
   count mechanism is run one release per trial (slow but always valid).
3. Statistics and events. Each output is reduced to scalar statistics. For counts (nodes on
   the path root -> region -> changed leaf, ``x`` the true values under D, per-level weights
   ``w_l`` from the mechanism's own ledger: epsilon_l = 1/scale for Laplace / geometric noise,
   1/sigma_l^2 for (discrete) Gaussian noise):

   * ``path-weighted``: sum_l w_l (y_l - x_l), the privacy-loss statistic of Gaussian noise;
   * ``path-clipped``: sum_l w_l clip(2 (y_l - x_l) - 1, -1, 1), the exact privacy loss of
     Laplace / geometric noise on the raw measurements;
   * ``root``, ``region``, ``leaf``: single released coordinates.

   Events are ``{T >= t}`` and ``{T <= t}`` over candidate thresholds ``t`` (the distinct
   values, or a grid of quantiles dense in both tails).
4. Sample splitting. The event is chosen from the data, so the first half of each side's
   trials only SELECTS, per direction (D' vs D, D vs D'), the event with the largest bound
   computed on that half (at a level divided by the square root of the number of candidate
   events, which discounts lucky small-count tail events); the second, independent half
   ESTIMATES it. The selection may use anything; validity rests only on the held-out half.
5. Confidence. Four one-sided Clopper-Pearson bounds are used (a lower and an upper bound in
   each of the two directions), each at level ``alpha / 4`` (Bonferroni), so the reported
   maximum over directions holds with probability >= 1 - alpha jointly.

Budgets. ``epsilon`` means epsilon-DP for mechanisms that run under pure DP (the claim is
checked with delta = 0). Mechanisms whose noise is (discrete) Gaussian give zCDP; they get
``PrivacyBudget.approx(epsilon, delta)``, which they convert to the largest rho implying
(epsilon, delta)-DP (tight conversion, as they do for any approx budget); the claim checked
is then (epsilon, delta)-DP, with the bound ``ln((p_lower - delta) / p_upper)``.

Assumptions and limits
----------------------
* Trials are independent and identically distributed: the seeded exploration sampler
  (numpy PCG64) is used unless ``secure=True`` (OpenDP samplers, not reproducible). An
  audit of the seeded sampler says nothing about floating-point attacks on it.
* Batching over categories is valid only if categories really are processed independently.
  Unbatched audits cost one release per trial (a few ms each): use fewer trials.
* Memory: trials run in chunks of ``chunk`` and only the scalar statistics are kept.
* The bound concerns one pair of neighbours and threshold events of a few statistics; the
  true epsilon may be much larger than what is found (the audit is a lower bound, not a
  proof of privacy). Post-processed releases (least squares, TopDown) lose information, so
  their bounds sit further below the claim than those of the raw mechanisms.
* An invariant (e.g. ``root_invariant=True``) is published exactly and is correctly reported
  as non-private: the audit fails it.

Example
-------
>>> r = audit_mechanism("raw-laplace", 1.0, trials=4000, seed=1)
>>> r.passed, 0.0 <= r.epsilon_lower_bound <= 1.0
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.special import betaincinv

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.mechanisms.base import Mechanism, get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PURE_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

DEFAULT_TRIALS = 20_000
DEFAULT_ALPHA = 0.05
DEFAULT_DELTA = 1e-6
DEFAULT_CHUNK = 5_000
MIN_TRIALS = 100
PILOT_TRIALS = 1_000
_PURE_NOISES = ("laplace", "geometric")
_GRID = 256
SELECTION_PENALTY = 0.5

#: Count mechanisms known to process category columns independently, so that one release
#: with K identical category columns gives K independent trials (see
#: `hierdp_core.mechanisms.counts`). Any other count mechanism is audited one release per
#: trial. Add an entry only after checking that the mechanism never mixes categories.
BATCHED_COUNT_MECHANISMS = frozenset(
    {"raw-laplace", "raw-geometric", "raw-discrete-gaussian", "least-squares", "topdown"}
)

#: The audit tree: (region code, leaf code) of every leaf, its count under D, and the leaf
#: that gains one person in D'.
AUDIT_LEAVES = (("A", "a1"), ("A", "a2"), ("B", "b1"), ("B", "b2"))
AUDIT_LEAF_COUNTS = (3, 0, 5, 2)
AUDIT_CHANGED_LEAF = 1

Statistics = Callable[[np.ndarray], dict[str, np.ndarray]]
Runner = Callable[[Any, int, NoiseSource], np.ndarray]


# ---- confidence bounds ------------------------------------------------------------------
def clopper_pearson_lower(k, n, alpha: float):
    """One-sided lower Clopper-Pearson bound at confidence ``1 - alpha`` for a binomial
    proportion with ``k`` successes in ``n`` trials: the ``alpha`` quantile of
    Beta(k, n - k + 1), and 0 when k = 0. Vectorised over ``k`` and ``n``."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    _check_counts(k, n, alpha)
    a = np.where(k > 0, k, 1.0)
    out = np.where(k > 0, betaincinv(a, n - k + 1, alpha), 0.0)
    return out[()] if out.ndim == 0 else out


def clopper_pearson_upper(k, n, alpha: float):
    """One-sided upper Clopper-Pearson bound at confidence ``1 - alpha``: the ``1 - alpha``
    quantile of Beta(k + 1, n - k), and 1 when k = n. Vectorised over ``k`` and ``n``."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    _check_counts(k, n, alpha)
    b = np.where(k < n, n - k, 1.0)
    out = np.where(k < n, betaincinv(k + 1, b, 1 - alpha), 1.0)
    return out[()] if out.ndim == 0 else out


def _check_counts(k: np.ndarray, n: np.ndarray, alpha: float) -> None:
    if not 0 < alpha < 1:
        raise MechanismError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise MechanismError("need 0 <= k <= n and n >= 1")


def log_ratio_bound(k_num, n_num, k_den, n_den, alpha: float, delta: float = 0.0):
    """Lower confidence bound on ln((p_num - delta) / p_den) from counts, with each of the two
    Clopper-Pearson bounds at level ``alpha`` (-inf where ``p_lower - delta <= 0``)."""
    lower = np.asarray(clopper_pearson_lower(k_num, n_num, alpha)) - delta
    upper = np.asarray(clopper_pearson_upper(k_den, n_den, alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(lower > 0, np.log(np.where(lower > 0, lower, 1.0)) - np.log(upper),
                       -np.inf)
    return out[()] if out.ndim == 0 else out


# ---- results ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit. ``passed`` is ``epsilon_lower_bound <= claimed_epsilon``."""

    mechanism: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    trials: int
    passed: bool
    event: str
    delta: float = 0.0
    alpha: float = DEFAULT_ALPHA
    privacy: str = PURE_DP
    epsilon_estimate: float = 0.0
    neighbours: str = ""
    batched: bool = False
    parameters: dict = field(default_factory=dict)
    seconds: float = 0.0
    directions: tuple[dict, ...] = field(default=(), repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["directions"] = [dict(x) for x in self.directions]
        return d

    def summary(self) -> str:
        verdict = "pass" if self.passed else "FAIL"
        return (f"{self.mechanism}: claimed epsilon {self.claimed_epsilon:g}"
                + (f" (delta {self.delta:g})" if self.delta else "")
                + f", lower bound {self.epsilon_lower_bound:.3f} -> {verdict}")


# ---- adapters ---------------------------------------------------------------------------
@dataclass
class AuditAdapter:
    """How to audit one mechanism: a neighbouring pair, a way to run ``n`` trials on one side
    (returning an array (n, d) of outputs, one row per trial), and the scalar statistics of
    outputs on which threshold events are tried (None: fitted on an independent pilot run).
    ``budget`` is the budget the mechanism runs with (None for custom callables)."""

    neighbours: tuple[Any, Any]
    run: Runner
    statistics: Statistics | None = None
    budget: PrivacyBudget | None = None
    description: str = ""
    batched: bool = False


AdapterFactory = Callable[..., AuditAdapter]
ADAPTERS: dict[str, AdapterFactory] = {}


def register_adapter(query_kind: str) -> Callable[[AdapterFactory], AdapterFactory]:
    """Register the adapter factory for one query kind. The factory is called as
    ``factory(mechanism, epsilon=..., delta=..., params=..., split=..., batch=...)`` and
    returns an `AuditAdapter` (choosing the budget with `claimed_budget`)."""

    def deco(factory: AdapterFactory) -> AdapterFactory:
        ADAPTERS[query_kind] = factory
        return factory

    return deco


def claimed_budget(mechanism: Mechanism, data, epsilon: float, delta: float, split,
                   params: dict) -> PrivacyBudget:
    """The budget a claim of ``epsilon`` means for this mechanism and parameters: pure
    epsilon-DP if the mechanism accepts it and spends it as pure DP; otherwise (zCDP noise)
    ``PrivacyBudget.approx(epsilon, delta)``, which the mechanism converts to rho."""
    pure = PrivacyBudget.pure(epsilon)
    try:
        ledger = mechanism.ledger(data, pure, split, **params)
    except BudgetError:
        return PrivacyBudget.approx(epsilon, delta)
    definitions = set(ledger["definition"].dropna()) if "definition" in ledger else set()
    return PrivacyBudget.approx(epsilon, delta) if ZCDP in definitions else pure


def _audit_tree():
    """The 2 x 2 audit geography (root > regions A, B > leaves) and the leaf of each entry
    of `AUDIT_LEAVES`."""
    from hierdp_core.hierarchy import build_from_codes

    return build_from_codes([np.array([r for r, _ in AUDIT_LEAVES]),
                             np.array([c for _, c in AUDIT_LEAVES])], ["region", "leaf"])


def _path_from_root(h, node: int) -> np.ndarray:
    """Node ids from the root down to ``node``."""
    path = [node]
    while h.parent[path[-1]] >= 0:
        path.append(int(h.parent[path[-1]]))
    return np.asarray(path[::-1])


@register_adapter("counts")
def count_adapter(
    mechanism: Mechanism,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    params: dict | None = None,
    split=None,
    batch: bool | None = None,
    leaf_counts: Sequence[int] = AUDIT_LEAF_COUNTS,
    changed_leaf: int = AUDIT_CHANGED_LEAF,
) -> AuditAdapter:
    """Adapter for count mechanisms on the 2 x 2 audit tree (see the module docstring)."""
    from hierdp_core.queries.counts import CountData

    params = dict(params or {})
    h, row_leaf = _audit_tree()
    counts = np.zeros((h.n_leaves, 1), dtype=np.int64)
    counts[row_leaf, 0] = np.asarray(leaf_counts, dtype=np.int64)
    leaf = int(row_leaf[changed_leaf])
    counts2 = counts.copy()
    counts2[leaf, 0] += 1
    d1, d2 = CountData(h, counts), CountData(h, counts2)
    budget = claimed_budget(mechanism, d1, epsilon, delta, split, params)
    if batch is None:
        batch = mechanism.info.name in BATCHED_COUNT_MECHANISMS

    # the path root -> ... -> changed leaf, and a privacy-loss weight per level
    node = int(h.level_offsets[h.depth]) + leaf
    path = _path_from_root(h, node)
    x = d1.node_counts()[path, 0].astype(float)
    weights = _level_weights(mechanism.ledger(d1, budget, split, **params), h.n_levels)

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        dev = out[:, path] - x
        stats = {"path-weighted": dev @ weights,
                 "path-clipped": np.clip(2 * dev - 1, -1, 1) @ weights}
        for i, name in enumerate(h.level_names):
            stats[name if i else "root"] = out[:, path[i]]
        return stats

    def run(data, n: int, source: NoiseSource) -> np.ndarray:
        if batch:
            wide = CountData(h, np.repeat(data.leaf_counts, n, axis=1),
                             tuple(str(i) for i in range(n)), ("trial",))
            rel = mechanism.release(wide, budget, split=split, source=source, **params)
            return np.asarray(rel.values, dtype=float).T
        out = np.empty((n, h.n_nodes))
        for i in range(n):
            rel = mechanism.release(data, budget, split=split, source=source, **params)
            out[i] = np.asarray(rel.values, dtype=float)[:, 0]
        return out

    ids = h.node_ids()
    leaves = dict(zip(ids[h.level_slice(h.depth)], counts[:, 0].tolist(), strict=True))
    description = f"D: leaf counts {leaves}; D' adds one person to {ids[node]}"
    return AuditAdapter((d1, d2), run, statistics, budget, description, bool(batch))


#: Group-size audit input: root > 2 regions > 4 leaves each, ten groups per leaf with sizes
#: 0..3 (top-code N = 3); D' adds one person to a size-1 group of the first leaf. Eight
#: leaves make a level-wide (chain) leak eight times larger than a per-region one.
AUDIT_GROUP_LEAVES = tuple((r, f"{r.lower()}{i}") for r in "AB" for i in range(1, 5))
AUDIT_GROUP_SIZES = ((0, 1, 1, 1, 2, 2, 2, 3, 3, 1),) * len(AUDIT_GROUP_LEAVES)
AUDIT_GROUP_MAX_SIZE = 3


@register_adapter("group-sizes")
def group_size_adapter(
    mechanism: Mechanism,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    params: dict | None = None,
    split=None,
    batch: bool | None = None,
) -> AuditAdapter:
    """Adapter for group-size mechanisms: one release per trial (sizes are not independent
    columns). Statistics over the changed cells on the path root -> region -> leaf (size 1
    loses a group, size 2 gains it), weighted per level by the ledger's epsilon_l per unit:
    their clipped sum is the exact privacy loss of geometric / Laplace noise on the raw
    measurements; plus the leaf's two cells."""
    from hierdp_core.groupsizes.data import GroupSizeData
    from hierdp_core.hierarchy import build_from_codes

    params = dict(params or {})
    h, row_leaf = build_from_codes([np.array([r for r, _ in AUDIT_GROUP_LEAVES]),
                                    np.array([c for _, c in AUDIT_GROUP_LEAVES])],
                                   ["region", "leaf"])
    width = AUDIT_GROUP_MAX_SIZE + 1
    hist = np.zeros((h.n_leaves, width), dtype=np.int64)
    for row, sizes in zip(row_leaf, AUDIT_GROUP_SIZES, strict=True):
        np.add.at(hist[row], np.asarray(sizes), 1)
    hist2 = hist.copy()
    first = int(row_leaf[0])
    hist2[first, 1] -= 1
    hist2[first, 2] += 1
    sizes = tuple(str(s) for s in range(width))

    def data_of(leaf_hist):
        return GroupSizeData(h, leaf_hist, sizes, ("size",), max_size=AUDIT_GROUP_MAX_SIZE)

    d1, d2 = data_of(hist), data_of(hist2)
    budget = claimed_budget(mechanism, d1, epsilon, delta, split, params)
    # the changed cells: (node, size 1) and (node, size 2) on the path root -> region -> a1
    path = _path_from_root(h, int(h.level_offsets[h.depth]) + first)
    truth = d1.node_counts().astype(float)
    weights = _level_weights(mechanism.ledger(d1, budget, split, **params), h.n_levels)

    node_weight = weights[h.level_of_nodes()]

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        released = out.reshape(len(out), h.n_nodes, width)
        cells = released[:, path]
        down = truth[path, 1] - cells[:, :, 1]  # size 1 loses a group under D'
        up = cells[:, :, 2] - truth[path, 2]  # size 2 gains it
        # level-wide chain counts at size 1 (Fioretto et al.'s chain, size-major order): all
        # size-0 groups of the level plus the size-1 groups of the regions up to this one;
        # under D' every one from the changed region onwards drops by one
        running = np.zeros((len(out), h.n_nodes))
        for level in range(h.n_levels):
            sl = h.level_slice(level)
            running[:, sl] = (released[:, sl, 0].sum(axis=1, keepdims=True)
                              + np.cumsum(released[:, sl, 1], axis=1))
        return {"path-weighted": (down + up) @ weights,
                "path-clipped": (np.clip(2 * down - 1, -1, 1) + np.clip(2 * up - 1, -1, 1))
                @ weights,
                "chain-weighted": running @ node_weight,
                "leaf size 1": cells[:, -1, 1], "leaf size 2": cells[:, -1, 2]}

    def run(data, n: int, source: NoiseSource) -> np.ndarray:
        out = np.empty((n, h.n_nodes * width))
        for i in range(n):
            rel = mechanism.release(data, budget, split=split, source=source, **params)
            out[i] = np.asarray(rel.values, dtype=float).ravel()
        return out

    per_leaf = dict(zip(h.node_ids()[h.level_slice(2)], AUDIT_GROUP_SIZES, strict=True))
    description = (f"D: group sizes per leaf {per_leaf}, N = {AUDIT_GROUP_MAX_SIZE}; D' adds "
                   "one person to a size-1 group of the first leaf")
    return AuditAdapter((d1, d2), run, statistics, budget, description, False)


#: Flow audit input: the 2 x 2 audit geography (4 leaf areas, 16 leaf O/D cells) with
#: these leaf flows under D. Bounded DP: D' moves one trip of the first pair to the second
#: (a substitution; n unchanged). Unbounded: D' adds one trip to the second pair.
AUDIT_FLOWS = ((("A", "a1"), ("B", "b1"), 3), (("A", "a1"), ("A", "a1"), 2),
               (("A", "a2"), ("B", "b2"), 4), (("B", "b1"), ("A", "a1"), 1),
               (("B", "b2"), ("B", "b2"), 2))
AUDIT_FLOW_MOVE = (("A", "a1"), ("B", "b1")), (("A", "a1"), ("A", "a2"))


@register_adapter("flows")
def flow_adapter(
    mechanism: Mechanism,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    params: dict | None = None,
    split=None,
    batch: bool | None = None,
) -> AuditAdapter:
    """Adapter for O/D flow mechanisms: one release per trial, the released tree as a dense
    vector over all 31 nodes of the audit O/D tree. Statistics: per tree level, the shift
    of the pair gaining the trip minus that of the pair losing it (where they differ),
    weighted by the ledger's 1/sigma_l^2 (the Gaussian privacy loss) or 1/scale; and the
    two leaf cells."""
    from hierdp_core.flows.data import flow_data_from_leaves
    from hierdp_core.flows.tree import from_leaves

    params = dict(params or {})
    unbounded = mechanism.params(**params).get("neighbouring") == "unbounded"
    h, _ = _audit_tree()
    leaf_index = {code: i for i, code in enumerate(h.codes[h.depth])}

    def cell(pair):
        return leaf_index[pair[0][1]], leaf_index[pair[1][1]]

    flows1 = {cell((o, d)): c for o, d, c in AUDIT_FLOWS}
    (lose_o, lose_d), (gain_o, gain_d) = cell(AUDIT_FLOW_MOVE[0]), cell(AUDIT_FLOW_MOVE[1])
    flows2 = dict(flows1)
    flows2[(gain_o, gain_d)] = flows2.get((gain_o, gain_d), 0) + 1
    if not unbounded:
        flows2[(lose_o, lose_d)] -= 1

    def data_of(flows):
        pairs = np.array(list(flows), dtype=np.int64)
        return flow_data_from_leaves(h, pairs[:, 0], pairs[:, 1], list(flows.values()))

    d1, d2 = data_of(flows1), data_of(flows2)
    budget = claimed_budget(mechanism, d1, epsilon, delta, split, params)
    widths = [d1.level_width(d1.pair_levels(lv)[0]) * d1.level_width(d1.pair_levels(lv)[1])
              for lv in range(d1.depth + 1)]
    offsets = np.concatenate([[0], np.cumsum(widths)])

    def dense_index(level, origin_leaf, destination_leaf):
        lo, ld = d1.pair_levels(level)
        return int(offsets[level] + d1.ancestors(lo)[origin_leaf] * d1.level_width(ld)
                   + d1.ancestors(ld)[destination_leaf])

    gain = np.array([dense_index(lv, gain_o, gain_d) for lv in range(d1.depth + 1)])
    lose = np.array([dense_index(lv, lose_o, lose_d) for lv in range(d1.depth + 1)])
    if unbounded:
        lose = np.full_like(gain, -1)
    truth = _dense_flows(d1, offsets, from_leaves(d1, d1.origin, d1.destination, d1.counts))
    weights = _level_weights(mechanism.ledger(d1, budget, split, **params), d1.depth + 1)
    differs = gain != lose

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        shift = out[:, gain] - truth[gain]
        if not unbounded:
            shift = shift - (out[:, lose] - truth[lose])
        shift = np.where(differs, shift, 0.0)
        stats = {"path-weighted": shift @ weights,
                 "path-clipped": np.clip(2 * shift - 1, -1, 1) @ weights,
                 "gaining leaf": out[:, gain[-1]]}
        if not unbounded:
            stats["losing leaf"] = out[:, lose[-1]]
        return stats

    def run(data, n: int, source: NoiseSource) -> np.ndarray:
        out = np.empty((n, offsets[-1]))
        for i in range(n):
            rel = mechanism.release(data, budget, split=split, source=source, **params)
            out[i] = _dense_flows(data, offsets, rel.levels)
        return out

    flows = {f"{o[1]}>{d[1]}": c for o, d, c in AUDIT_FLOWS}
    change = ("adds one trip a1>a2" if unbounded else "moves one trip from a1>b1 to a1>a2")
    description = f"D: leaf flows {flows}; D' {change}"
    return AuditAdapter((d1, d2), run, statistics, budget, description, False)


#: Range audit input: the 2 x 2 tree, histograms over 8 ordered values; the changed leaf a1
#: is empty under D and D' adds one person at value 1 (the spec's case where the reference
#: Stage 1 shows a partition about 21 times likelier under D').
AUDIT_RANGE_HISTOGRAMS = ((0,) * 8, (3, 1, 0, 0, 2, 2, 2, 2), (0, 0, 5, 5, 5, 0, 0, 1),
                          (1,) * 8)
AUDIT_RANGE_CHANGE = (0, 1)  # (leaf, value)


@register_adapter("ranges")
def range_adapter(
    mechanism: Mechanism,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    params: dict | None = None,
    split=None,
    batch: bool | None = None,
) -> AuditAdapter:
    """Adapter for range mechanisms: one release per trial; output = the released histograms
    of all nodes, then the changed leaf's bucket partition encoded as a bit mask of its inner
    edges (-1 without a partition). Statistics: the released value of the changed cell at
    every level, the changed leaf's prefix sum up to it, and one indicator per partition of
    the changed leaf (what a leaky Stage 1 gives away)."""
    from hierdp_core.queries.ranges import RangeData
    from hierdp_core.ranges.workloads import prefix_ranges

    params = dict(params or {})
    h, row_leaf = _audit_tree()
    n = len(AUDIT_RANGE_HISTOGRAMS[0])
    counts = np.zeros((h.n_leaves, n), dtype=np.int64)
    counts[row_leaf] = np.asarray(AUDIT_RANGE_HISTOGRAMS, dtype=np.int64)
    leaf, value = int(row_leaf[AUDIT_RANGE_CHANGE[0]]), AUDIT_RANGE_CHANGE[1]
    counts2 = counts.copy()
    counts2[leaf, value] += 1
    values = tuple(str(v) for v in range(n))
    d1, d2 = (RangeData(h, c, values, "value", prefix_ranges(n)) for c in (counts, counts2))
    budget = claimed_budget(mechanism, d1, epsilon, delta, split, params)
    node = int(h.level_offsets[h.depth]) + leaf
    cells = _path_from_root(h, node)[::-1] * n + value
    leaf_cells = node * n + np.arange(value + 1)
    bits = 2 ** np.arange(n - 1)
    partitioned = "rho" in mechanism.params(**params)  # a private Stage 1 to watch

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        stats = {f"cell at level {h.depth - i}": out[:, c] for i, c in enumerate(cells)}
        stats["leaf prefix"] = out[:, leaf_cells].sum(axis=1)
        if partitioned:
            for code in range(2 ** (n - 1)):
                stats[f"leaf partition {code}"] = (out[:, -1] == code).astype(float)
        return stats

    def run(data, trials: int, source: NoiseSource) -> np.ndarray:
        out = np.empty((trials, h.n_nodes * n + 1))
        for i in range(trials):
            rel = mechanism.release(data, budget, split=split, source=source, **params)
            out[i, :-1] = np.asarray(rel.values, dtype=float).ravel()
            edges = None if rel.edges is None else rel.edges[node]
            out[i, -1] = -1 if edges is None else bits[edges[1:-1] - 1].sum()
        return out

    leaves = dict(zip(h.node_ids()[h.level_slice(h.depth)], map(list, counts), strict=True))
    description = (f"D: leaf histograms over values 0..{n - 1} {leaves}; "
                   f"D' adds one person with value {value} to {h.node_ids()[node]}")
    return AuditAdapter((d1, d2), run, statistics, budget, description, False)


def _dense_flows(data, offsets: np.ndarray, levels) -> np.ndarray:
    """A released (or true) O/D tree as one dense vector over all pairs of all levels."""
    out = np.zeros(offsets[-1])
    for level, lv in enumerate(levels):
        width = data.level_width(data.pair_levels(level)[1])
        np.add.at(out, offsets[level] + lv.origin * width + lv.destination, lv.value)
    return out


def _level_weights(ledger, n_levels: int) -> np.ndarray:
    """Per-level weight of a unit shift in the privacy loss: 1/scale (= epsilon_l) for pure
    noises, 1/scale^2 for Gaussian ones, 0 for unmeasured levels."""
    w = np.zeros(n_levels)
    if "noise_scale" not in ledger or "noise" not in ledger:
        return np.ones(n_levels)
    for i, (noise, scale) in enumerate(zip(ledger["noise"], ledger["noise_scale"], strict=True)):
        if i >= n_levels or not np.isfinite(scale) or scale <= 0:
            continue
        w[i] = 1.0 / scale if noise in _PURE_NOISES else 1.0 / scale**2
    return w if w.any() else np.ones(n_levels)


# ---- public entry points ----------------------------------------------------------------
def audit_mechanism(
    name: str | Mechanism,
    epsilon: float,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = 0,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    split=None,
    batch: bool | None = None,
    secure: bool = False,
    chunk: int = DEFAULT_CHUNK,
    **params,
) -> AuditResult:
    """Audit a registered mechanism (by name) or a `Mechanism` instance at a claimed
    ``epsilon`` (pure DP; (epsilon, ``delta``)-DP for zCDP mechanisms, see the module
    docstring). ``params`` are the mechanism's own parameters; ``split`` its budget split.
    ``batch`` overrides whether trials are batched over category columns (default: only for
    `BATCHED_COUNT_MECHANISMS`). ``secure`` uses OpenDP's samplers (then ``seed`` is
    ignored)."""
    mechanism = get_mechanism(name) if isinstance(name, str) else name
    info = mechanism.info
    kind = next((q for q in info.queries if q in ADAPTERS), None)
    if kind is None:
        raise MechanismError(f"no audit adapter for mechanism {info.name!r} (queries "
                             f"{list(info.queries)}); adapters exist for {sorted(ADAPTERS)}")
    p = mechanism.params(**params)
    adapter = ADAPTERS[kind](mechanism, epsilon=epsilon, delta=delta, params=params,
                             split=split, batch=batch)
    budget = adapter.budget
    pure = budget is None or budget.definition == PURE_DP
    return _audit(adapter, name=info.name, claimed_epsilon=float(epsilon),
                  delta=0.0 if pure else float(delta), trials=trials, seed=seed, alpha=alpha,
                  chunk=chunk, secure=secure,
                  privacy=PURE_DP if pure else f"{ZCDP} as (epsilon, delta)-DP",
                  parameters={**p, "split": split, "secure": secure})


def audit_callable(
    run: Runner,
    neighbours: tuple[Any, Any],
    claimed_epsilon: float,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = 0,
    alpha: float = DEFAULT_ALPHA,
    delta: float = 0.0,
    statistics: Statistics | None = None,
    chunk: int = DEFAULT_CHUNK,
    name: str = "custom",
) -> AuditResult:
    """Audit any randomised function. ``run(data, n, source)`` returns ``n`` independent
    outputs on ``data`` as an array (n, d) (use ``source.rng`` for randomness);
    ``neighbours`` is (D, D'); the claim is (``claimed_epsilon``, ``delta``)-DP.
    ``statistics(outputs) -> {name: (n,) array}`` reduces outputs to scalars; by default a
    linear discriminant and the most shifted coordinate, fitted on an independent pilot run
    of `PILOT_TRIALS` per side."""
    adapter = AuditAdapter(tuple(neighbours), run, statistics, None, "custom neighbours")
    return _audit(adapter, name=name, claimed_epsilon=float(claimed_epsilon),
                  delta=float(delta), trials=trials, seed=seed, alpha=alpha, chunk=chunk,
                  secure=False, privacy=PURE_DP if not delta else "approx-dp")


def audit_registered(query: str = "counts", epsilon: float = 1.0, **kwargs) -> list[AuditResult]:
    """Audit every registered mechanism answering ``query`` (keyword arguments as for
    `audit_mechanism`)."""
    return [audit_mechanism(i.name, epsilon, **kwargs) for i in list_mechanisms(query)]


# ---- the audit itself -------------------------------------------------------------------
def _audit(adapter: AuditAdapter, *, name: str, claimed_epsilon: float, delta: float,
           trials: int, seed: int | None, alpha: float, chunk: int, secure: bool,
           privacy: str, parameters: dict | None = None) -> AuditResult:
    if not (isinstance(trials, int | np.integer) and trials >= MIN_TRIALS):
        raise MechanismError(f"trials must be an integer >= {MIN_TRIALS}, got {trials!r}")
    if not 0 < alpha < 1:
        raise MechanismError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not (math.isfinite(claimed_epsilon) and claimed_epsilon >= 0):
        raise MechanismError(f"claimed epsilon must be a non-negative number, got {claimed_epsilon}")
    if not 0 <= delta < 1:
        raise MechanismError(f"delta must lie in [0, 1), got {delta}")
    if len(adapter.neighbours) != 2:
        raise MechanismError("neighbours must be a pair (D, D')")
    chunk = max(1, int(chunk))
    start = time.perf_counter()
    seeds = np.random.SeedSequence(seed).spawn(3)
    data = adapter.neighbours

    def sources(seq: np.random.SeedSequence, n_chunks: int):
        states = seq.generate_state(n_chunks)
        for s in states:
            yield NoiseSource(secure=True) if secure else NoiseSource(seed=int(s))

    statistics = adapter.statistics
    if statistics is None:
        pilot = [_run_side(adapter.run, d, min(PILOT_TRIALS, trials), chunk,
                           sources(seq, _n_chunks(min(PILOT_TRIALS, trials), chunk)))
                 for d, seq in zip(data, seeds[0].spawn(2), strict=True)]
        statistics = _fit_statistics(*pilot)

    samples = []
    for d, seq in zip(data, seeds[1:], strict=True):
        parts: dict[str, list[np.ndarray]] = {}
        for out in _chunks(adapter.run, d, trials, chunk, sources(seq, _n_chunks(trials, chunk))):
            for key, value in statistics(out).items():
                value = np.asarray(value, dtype=float).reshape(-1)
                if value.size != out.shape[0]:
                    raise MechanismError(f"statistic {key!r} gave {value.size} values for "
                                     f"{out.shape[0]} outputs")
                parts.setdefault(key, []).append(value)
        samples.append({k: np.concatenate(v) for k, v in parts.items()})

    half = trials // 2
    a = alpha / 4  # Bonferroni: two Clopper-Pearson bounds in each of two directions
    directions = []
    for num, den, label in ((1, 0, "D' vs D"), (0, 1, "D vs D'")):
        sel = _select(samples[num], samples[den], half, a, delta)
        directions.append(_estimate(sel, samples[num], samples[den], half, a, delta, label))
    best = max(directions, key=lambda r: r["bound"])
    bound = max(0.0, float(best["bound"]))
    return AuditResult(
        mechanism=name,
        claimed_epsilon=claimed_epsilon,
        epsilon_lower_bound=bound,
        trials=int(trials),
        passed=bool(bound <= claimed_epsilon),
        event=best["event"],
        delta=delta,
        alpha=alpha,
        privacy=privacy,
        epsilon_estimate=float(best["estimate"]),
        neighbours=adapter.description,
        batched=adapter.batched,
        parameters=dict(parameters or {}),
        seconds=round(time.perf_counter() - start, 3),
        directions=tuple(directions),
    )


def _n_chunks(n: int, chunk: int) -> int:
    return -(-n // chunk)


def _chunks(run: Runner, data, n: int, chunk: int, sources):
    done = 0
    for source in sources:
        m = min(chunk, n - done)
        out = np.asarray(run(data, m, source), dtype=float)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != m:
            raise MechanismError(f"run(data, {m}, source) must return an array ({m}, d), "
                             f"got shape {out.shape}")
        yield out
        done += m


def _run_side(run: Runner, data, n: int, chunk: int, sources) -> np.ndarray:
    return np.concatenate(list(_chunks(run, data, n, chunk, sources)))


def _fit_statistics(out1: np.ndarray, out2: np.ndarray) -> Statistics:
    """A linear discriminant (diagonal covariance) and the coordinate with the largest
    standardised shift, both fitted on pilot outputs of D (out1) and D' (out2)."""
    m1, m2 = out1.mean(axis=0), out2.mean(axis=0)
    var = (out1.var(axis=0) + out2.var(axis=0)) / 2
    floor = 1e-12 * max(1.0, float(np.max(np.abs(np.concatenate([m1, m2])))) ** 2)
    var = np.maximum(var, floor)
    shift = m2 - m1
    w = shift / var
    if not np.any(w):
        w = np.ones_like(w)
    w = w / np.max(np.abs(w))
    j = int(np.argmax(np.abs(shift) / np.sqrt(var)))

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        return {"linear discriminant": out @ w, f"coordinate {j}": out[:, j]}

    return statistics


def _thresholds(values: np.ndarray) -> np.ndarray:
    """Candidate thresholds: every distinct value if few, else quantiles dense in the tails."""
    u = np.unique(values)
    if u.size <= 2 * _GRID:
        return u
    tail = np.geomspace(1e-4, 0.05, 24)
    probs = np.unique(np.concatenate([tail, np.linspace(0, 1, _GRID), 1 - tail]))
    return np.unique(np.quantile(values, probs, method="inverted_cdf"))


def _counts(sorted_values: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    n = sorted_values.size
    return {">=": n - np.searchsorted(sorted_values, t, side="left"),
            "<=": np.searchsorted(sorted_values, t, side="right")}


def _select(num: dict, den: dict, half: int, alpha: float, delta: float) -> dict | None:
    """On the first half: the statistic, comparison and threshold with the largest bound."""
    candidates = []
    for key in num:
        a, b = num[key][:half], den[key][:half]
        t = _thresholds(np.concatenate([a, b]))
        ka, kb = _counts(np.sort(a), t), _counts(np.sort(b), t)
        for op in (">=", "<="):
            candidates.append((key, op, t, ka[op], kb[op]))
    # the winner of many noisy comparisons is optimistic (and small-count events the most):
    # select with a level corrected for the number of candidates, which favours events whose
    # advantage is robust, i.e. those most likely to keep their bound on the held-out half
    n_events = sum(c[2].size for c in candidates)
    alpha = alpha / n_events ** SELECTION_PENALTY
    best = None
    for key, op, t, k_num, k_den in candidates:
        score = log_ratio_bound(k_num, half, k_den, half, alpha, delta)
        i = int(np.argmax(score))
        if np.isfinite(score[i]) and (best is None or score[i] > best["selection_bound"]):
            best = {"statistic": key, "op": op, "threshold": float(t[i]),
                    "selection_bound": float(score[i])}
    return best


def _estimate(sel: dict | None, num: dict, den: dict, half: int, alpha: float, delta: float,
              label: str) -> dict:
    """On the held-out half: the bound of the selected event."""
    if sel is None:
        return {"direction": label, "event": "no event separates the neighbours",
                "bound": 0.0, "estimate": 0.0}
    a, b = num[sel["statistic"]][half:], den[sel["statistic"]][half:]
    t = sel["threshold"]
    if sel["op"] == ">=":
        k_num, k_den = int(np.sum(a >= t)), int(np.sum(b >= t))
    else:
        k_num, k_den = int(np.sum(a <= t)), int(np.sum(b <= t))
    n_num, n_den = a.size, b.size
    bound = float(log_ratio_bound(k_num, n_num, k_den, n_den, alpha, delta))
    p_num, p_den = k_num / n_num, k_den / n_den
    with np.errstate(divide="ignore"):
        estimate = float(np.log(max(p_num - delta, 0.0)) - np.log(p_den)) if p_den > 0 \
            else math.inf
    top, bottom = label.split(" vs ")
    event = f"{sel['statistic']} {sel['op']} {t:.4g}"
    return {
        "direction": label,
        "event": (f"P[{event} | {top}] = {k_num}/{n_num} vs P[{event} | {bottom}] = "
                  f"{k_den}/{n_den}"),
        **sel,
        "k_num": k_num, "n_num": n_num, "k_den": k_den, "n_den": n_den,
        "p_lower": float(clopper_pearson_lower(k_num, n_num, alpha)),
        "p_upper": float(clopper_pearson_upper(k_den, n_den, alpha)),
        "estimate": estimate,
        "bound": bound,
    }

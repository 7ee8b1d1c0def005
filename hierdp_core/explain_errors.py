"""The a priori error per level of a release, for its plain-language explanation
(`hierdp_core.explain`): one function per query kind, reading public parameters only (the
tree's shape, the mechanism's declared noise and sensitivity through its ledger or privacy
plan, the budget, the split and, for ranges, the public workload), never a count.

* counts: `count_forecast` (the exact variance of the least-squares estimate from the
  plan's noise; a range where that noise is mostly 0; TopDown's as an upper bound) for
  raw, least squares and TopDown, else the ledger's raw measurement noise per cell;
* group sizes: the ledger's noise on one measured cell, in households: one region's number
  of households of one size (plain histograms) or of at most that size (cumulative ones);
* flows: the ledger's noise on one origin/destination pair measured at a tree level, in
  trips; for the top-down mechanisms an upper bound of the released pairs' error (mae_low
  0), whose total is exact (0) when they publish it (bounded neighbours);
* ranges: the root mean squared error of a workload query from the Stage-2 strategy's
  least-squares covariance (`ranges.interval_strategy.Strategy.expected_squared_errors`,
  sensitivity from the plan) over the workload's atoms, at the level's Stage-2 epsilon; None
  (NaN) for the methods whose error depends on the data or that this model does not cover.

Every table has the columns level_name, units (regions for group sizes, pairs for flows:
what the level has), mae, rmse (NaN: not measured or not modelled); the numbers are checked against seeded releases in ``tests/test_explain_kinds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.count_forecast import count_forecast
from hierdp_core.mechanisms.base import get_mechanism, optimiser_family
from hierdp_core.privacy.budget import PrivacyBudget

COLUMNS = ["level_name", "units", "mae", "rmse"]
FORECAST_BASIS = ("the released values, from the tree's shape and the budget alone (the "
                  "exact variance of the least-squares estimate)")
RANGE_BASIS = "; a range where the noise is mostly 0 (a large budget per level)"
TOPDOWN_BASIS = ("at most the least-squares estimate's, from the tree's shape and the "
                 "budget alone: TopDown then keeps every count at or above 0, so small or "
                 "empty units are off by less")
#: the top-down flow mechanisms' upper bound of a released pair's mean |error|
#: (`flow_errors`): each level's pairs get discrete Gaussian noise of one sigma; TDA-L2's
#: projection of n pairs onto their parent's released total leaves each an error of
#: variance sigma^2 (1 - 1/n) plus the parent's / n^2, at most the larger of sigma^2 and the
#: parent's (by induction from the total: `_upper_bound`), so a mean |error| of at most the
#: largest sigma down to the level; the rounding then moves a pair by `ROUNDING` on average
#: at most. InfTDA's is measured only. The noise's own mean |error| (0.8 sigma) is not a
#: bound: the released pairs' reached 1.18 of it on the flights sample at epsilon 10 (the
#: rounding), 0.61-0.83 of this bound (`tests/test_explain_kinds.py`; the flow tables of
#: `benchmarks/bench_coverage.py --flows-only` in docs/benchmarks.md)
ROUNDING = 0.5
#: what an upper bound (`_upper_bound`) says it is: of the noise ``measured`` gets, the step
#: that ``fits`` the released values, and the ``values`` kept at or above 0
_BOUND_BASIS = ("at most about the largest standard deviation of the noise {measured} is "
                "measured with at its level or above, plus 0.5 for the rounding, from the "
                "budget and the split alone: {fits} and keeping {values} at or above 0 pull "
                "the released {error} below it")
FLOW_TOPDOWN_BASIS = _BOUND_BASIS.format(
    measured="an O/D pair", fits="the projection onto each parent's released total",
    values="pairs", error="pairs' error")
#: a group-size TopDown (the root's noisy histogram projected onto the total G, published
#: exactly, then every parent's children onto it, size by size): the top-down flows'
#: argument makes the largest noise sd down to a level plus `ROUNDING` an upper bound of
#: its released error (0.17 to 0.71 of it on the US households, 0.004 to 0.88 on the 25
#: shapes of `benchmarks/bench_coverage.py --forecast-only`). Not for the whole-tree fits:
#: M_H^dp's root was off by 1.9 times it on the US households at epsilon 0.1 (keeping 3,141
#: counties' small counts at or above 0 biases their sum up), and the cumulative and Kuo
#: mechanisms move counts by up to 24 times the noise (docs/benchmarks.md)
GROUP_SIZE_BOUND_BASIS = _BOUND_BASIS.format(
    measured="a region's count of one size", fits="fitting the regions to their parent",
    values="counts", error="error")
TOPDOWN_NOISY_BASIS = ("the raw measurement noise per cell (before the projection onto "
                       "each parent, which this TopDown makes from each level's own "
                       "measurements: not modelled)")


@dataclass(frozen=True)
class APriori:
    """A priori errors: ``table`` (`COLUMNS`, units renamed for some kinds; one row per
    level), ``basis`` (what the numbers are, a phrase), ``per`` (what one error is of:
    "unit", "O/D pair", ...), ``measure`` (the statistic the text quotes: "mean |error|" or
    "RMSE") and ``released``: whether the numbers forecast the released values' error
    (False: the noise on each measurement before a consistency step whose effect depends
    on the data: group sizes, the stability histogram's flows, ranges, TopDown from
    each level's own noise)."""

    table: pd.DataFrame
    basis: str
    per: str
    measure: str = "mean |error|"
    released: bool = True


def _ledger_table(ledger: pd.DataFrame, units, rmse: bool = True) -> pd.DataFrame:
    """level_name, units, mae (expected |noise|), rmse (the noise's sd) of a ledger."""
    return pd.DataFrame({"level_name": ledger["level_name"], "units": list(units),
                         "mae": ledger["expected_abs_error"].to_numpy(float),
                         "rmse": (ledger["noise_sd"].to_numpy(float) if rmse
                                  else np.nan)})


def count_errors(data, name: str, budget: PrivacyBudget, split, params: dict) -> APriori:
    """Counts: `count_forecast` of the mechanism's measurement plan when it is one of the
    families it models (with the range columns mae_low, mae_high), else the ledger's raw
    measurement noise per cell."""
    h = data.hierarchy
    mechanism = get_mechanism(name)
    p = mechanism.params(**params)
    units = [h.level_size(level) for level in range(h.n_levels)]
    per = "cell (unit × category)" if data.has_categories else "unit"
    family = optimiser_family(name)
    if family is None:
        ledger = mechanism.ledger(data, budget, split=split, **params)
        return APriori(_ledger_table(ledger, units, rmse=False), "the raw measurement "
                       "noise per cell (before any consistency step)", per)
    noisy = family == "topdown" and p.get("estimate") == "noisy"
    plans = mechanism.level_plans(h, budget, split, p)[1]
    table = count_forecast(h, plans, "raw" if noisy else family,
                           bool(p.get("root_invariant")),
                           at_most=family == "topdown" and not noisy)
    basis = {"raw": "each level's own noise", "least-squares": FORECAST_BASIS,
             "topdown": TOPDOWN_NOISY_BASIS if noisy else TOPDOWN_BASIS}[family]
    ranged = table["mae_low"].notna() & (table["mae_low"] != table["mae_high"])
    if family == "least-squares" and ranged.any():  # said only where a level shows one
        basis += RANGE_BASIS
    return APriori(table.assign(units=units)[COLUMNS + ["mae_low", "mae_high"]], basis, per,
                   released=not noisy)


def group_size_errors(data, name: str, budget: PrivacyBudget, split,
                      params: dict) -> APriori:
    """Group sizes: the ledger's noise on one measured cell of one region, in households."""
    mechanism = get_mechanism(name)
    h = data.hierarchy
    ledger = mechanism.ledger(data, budget, split=split, **params)
    cumulative = getattr(mechanism, "representation", "plain") == "cumulative"
    per = ("region and size k (its households of size at most k, the cumulative count "
           "this mechanism measures)" if cumulative else "region and size")
    table = _ledger_table(ledger, (h.level_size(lv) for lv in range(h.n_levels)))
    table = table.rename(columns={"units": "regions"})
    if mechanism.info.capabilities.estimate == "topdown" and \
            mechanism.params(**params).get("groups") == "noisy":  # G exact
        return APriori(_upper_bound(table), GROUP_SIZE_BOUND_BASIS, per)
    return APriori(table, "the raw measurement noise per cell, before the consistency step",
                   per, released=False)


def _upper_bound(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (the noise per level, root first) made the bound: mae, rmse and mae_high
    the largest noise sd of the level and the levels above it, plus `ROUNDING` (0 where
    the level is exact; for the RMSE by Minkowski's inequality), mae_low 0. The largest:
    projected onto a parent whose error has variance at most B^2, n children of noise sd
    sigma get sigma^2 (1 - 1/n) + B^2 / n^2 <= max(sigma, B)^2 (one child: the parent's
    error itself, which a split giving the finer levels more budget makes the larger)."""
    sd = np.maximum.accumulate(table["rmse"].to_numpy(float))
    bound = sd + ROUNDING * (sd > 0)
    return table.assign(mae=bound, rmse=bound, mae_low=0.0, mae_high=bound)


def flow_errors(data, name: str, budget: PrivacyBudget, split, params: dict) -> APriori:
    """Flows: the ledger's noise on one O/D pair measured at each tree level, in trips; for
    the top-down mechanisms an upper bound of a released pair's error (`FLOW_TOPDOWN_BASIS`),
    the total 0 when published exactly (bounded neighbours)."""
    mechanism = get_mechanism(name)
    ledger = mechanism.ledger(data, budget, split=split, **params)
    units = [math.prod(data.level_width(g) for g in data.pair_levels(level))
             for level in range(data.depth + 1)]
    table = _ledger_table(ledger, units).rename(columns={"units": "pairs"})
    p = mechanism.params(**params)
    if "neighbouring" in p:  # the top-down mechanisms: an upper bound
        if p["neighbouring"] == "bounded":
            table.loc[0, ["mae", "rmse"]] = 0.0  # the number of trips n, published exactly
        return APriori(_upper_bound(table),
                       f"{FLOW_TOPDOWN_BASIS}; measured: the pairs of a level whose parent "
                       "was released non-zero", "O/D pair released")
    pruned = "threshold" in ledger
    measured = "every possible pair of the finest level; coarser levels are their sums"
    if not pruned:
        table["rmse"] = _summed_leaf_rmse(data, table["rmse"].iloc[-1])
        measured += " (RMSE: the leaf noise summed)"
    return APriori(table, f"the raw noise per O/D pair{' (before the pruning)' * pruned}; "
                   f"measured: {measured}", "O/D pair", released=not pruned)


def _summed_leaf_rmse(data, leaf_sd: float) -> list[float]:
    """RMSE per tree level of sums of independent leaf noise of sd ``leaf_sd``: a pair of
    areas (a, b) sums n_a * n_b leaf pairs, and the mean of n_a * n_b over a level's pairs
    is the product of the mean numbers of leaves per origin and per destination area."""
    h = data.geography
    leaves = h.level_size(h.depth)
    return [leaf_sd * math.sqrt(math.prod(leaves / h.level_size(g)
                                          for g in data.pair_levels(level)))
            for level in range(data.depth + 1)]


_UNIT_ERRORS: dict[tuple, float] = {}  # content key -> a unit error (a few, see there)
_KEPT = 32


def _cached(key: tuple, compute) -> float:
    """``compute()`` kept by ``key`` (a large domain's strategy takes a second, and pages
    redraw often); the store is emptied when `_KEPT` are held."""
    if key not in _UNIT_ERRORS:
        if len(_UNIT_ERRORS) >= _KEPT:
            _UNIT_ERRORS.clear()
        _UNIT_ERRORS[key] = compute()
    return _UNIT_ERRORS[key]


def _content(workload) -> tuple:
    """What identifies a workload's queries: a range workload's ends, else the object."""
    return ((workload.lo.tobytes(), workload.hi.tobytes()) if workload.is_ranges
            else (id(workload),))


def _unit_error(workload, bounds: np.ndarray, kind: str, branching: int) -> float:
    """Mean over the workload's queries of the expected squared error when the buckets
    ``bounds`` are measured with Stage-2 strategy ``kind`` with Laplace(1/1) noise (epsilon
    1, sensitivity 1) and estimated by least squares (data-independent; it scales as
    (sensitivity / epsilon)^2). Kept by content (workload, buckets, strategy)."""
    from hierdp_core.ranges.dawa import stage2_strategies

    def compute() -> float:
        w_hat = workload.bucket_matrix(bounds)
        strategy = stage2_strategies(workload, bounds[None], kind, branching)
        if strategy is None:  # Laplace on each bucket
            return float((2.0 * (w_hat ** 2).sum(axis=1)).mean())
        return float(strategy.unit(0).expected_squared_errors(w_hat, 1.0).mean())

    return _cached((workload.n, workload.name, bounds.tobytes(), kind, branching,
                    *_content(workload)), compute)


def _baseline_unit_error(workload, name: str) -> float:
    """Mean over the workload's queries of the expected squared error of the
    data-independent linear baselines H2, HB and Privelet at epsilon 1 and sensitivity 1
    (scale as `_unit_error`): their estimate is the truth plus a fixed linear map of the
    noise, so the error of query q is sum_j var_j (q . a_j)^2 over the noise terms j (a_j:
    the cells' response to noise 1 on term j alone, every term at once as rows). Kept by
    content (workload, method)."""
    from hierdp_core.ranges.baselines import (
        b_ary_tree,
        haar_cells,
        hb_branching,
        hb_level_shares,
        level_shares,
        privelet_weights,
        tree_height,
        tree_least_squares_leaves,
    )

    def compute() -> float:
        n = workload.n
        if name == "privelet":  # Laplace((1 + h) / W) on each Haar coefficient of 2^h cells
            height = tree_height(n, 2)
            sizes = [1] + [2 ** level for level in range(height)]
            group = np.repeat(np.arange(len(sizes)), sizes)
            blocks = np.split(np.eye(group.size), np.cumsum(sizes)[:-1], axis=1)
            response = haar_cells(blocks)[:, :n]
            variance = 2.0 * ((1 + height) / privelet_weights(height)[group]) ** 2
        elif n == 1:  # H_b of one cell: Identity
            return 2.0
        else:  # H_b: Laplace(1 / (share of the level)) on every node, then least squares
            branching = 2 if name == "h2" else hb_branching(n)
            height = tree_height(n, branching)
            shares = level_shares(height) if name == "h2" else hb_level_shares(height)
            tree = b_ary_tree(n, branching)
            with np.errstate(divide="ignore"):
                level_variance = np.where(shares > 0, 2.0 / shares ** 2, np.inf)
            response = tree_least_squares_leaves(tree, np.eye(tree.n_nodes), level_variance)
            variance = level_variance[tree.level_of_nodes()]
            measured = np.isfinite(variance)
            response, variance = response[measured], variance[measured]
        return float((variance[:, None] * workload.answer(response) ** 2).sum(axis=0).mean())

    return _cached((workload.n, workload.name, name, *_content(workload)), compute)


#: the range baselines whose Stage-2 error `_baseline_unit_error` models
LINEAR_BASELINES = ("h2", "hb", "privelet")


def range_errors(data, name: str, budget: PrivacyBudget, split, params: dict) -> APriori:
    """Ranges: the RMSE of a workload query per level, from the Stage-2 strategy over the
    workload's atoms at the level's Stage-2 epsilon (greedy-h, identity, DAWA's levels
    without a partition: exact before consistency; a level with DAWA's data-dependent
    partition: the error if it kept every atom) or H2's, HB's and Privelet's linear
    estimate (`_baseline_unit_error`); NaN for the other methods."""
    from hierdp_core.ranges.dawa import atom_edges

    mechanism = get_mechanism(name)
    p = mechanism.params(**params)
    ledger = mechanism.ledger(data, budget, split=split, **params)
    options = getattr(mechanism.estimator, "options", None)
    stage = mechanism.measurement_stage(**params)
    workload = data.workload
    branching = int(p.get("branching", 2))
    if name == "identity":
        unit = _unit_error(workload, np.arange(workload.n + 1), "laplace", branching)
    elif options is not None:
        unit = _unit_error(workload, atom_edges(workload),
                           {**p, **options}.get("stage2", "greedy"), branching)
    elif name in LINEAR_BASELINES:
        unit = _baseline_unit_error(workload, name)
    else:
        unit = math.nan
    modelled = not math.isnan(unit)
    rmse = [stage.scale_for(eps2) * math.sqrt(unit) if modelled and eps2 > 0
            else math.nan for eps2 in ledger["epsilon_stage2"]]
    table = pd.DataFrame({"level_name": ledger["level_name"], "units": ledger["units"],
                          "mae": math.nan, "rmse": rmse})
    partitioned = list(ledger.loc[ledger["epsilon_stage1"] > 0, "level_name"])
    basis = ("the Stage-2 measurement's least-squares error over the workload, before the "
             "top-down consistency step" if modelled else
             f"not modelled for {name}: its error depends on the data or on a tree this "
             "model does not cover")
    if partitioned and modelled:
        basis += (f"; at a level with DAWA's private partition ({', '.join(partitioned)}), "
                  "the error if it kept every value apart (merging near-uniform values lowers "
                  "the noise and adds a bias that depends on the data)")
    return APriori(table, basis, f"query of the workload ({workload.name})", "RMSE",
                   released=False)


ERRORS = {"counts": count_errors, "group-sizes": group_size_errors, "flows": flow_errors,
          "ranges": range_errors}


def a_priori_errors(data, name: str, budget: PrivacyBudget, split, params: dict) -> APriori:
    """The a priori errors of releasing ``data`` with mechanism ``name`` (its query kind's
    function above). Raises what the mechanism's ledger raises for bad settings."""
    kind = get_mechanism(name).info.queries[0]
    return ERRORS[kind](data, name, budget, split, params)

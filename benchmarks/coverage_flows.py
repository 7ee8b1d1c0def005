"""Coverage of the flow release intervals on O/D tables unlike each other, for the
coverage benchmark (`bench_coverage.py --flows`, issue 30 item 2): the consistent flow
mechanisms (InfTDA, TDA-L2, the stability histogram; TDA-Linf-MILP is left out: it solves
a MILP per parent, seconds per release, and a bootstrap re-runs it per replicate) at
(epsilon, `DELTA`)-DP, epsilon 0.1 / 1 / 10.

Shapes (`FLOW_SHAPES`, Pareto flows on `synthetic_flows` geographies): few units (3 x 3
pairs, every pair used), a deep binary tree, an unequal fan-out (1-10 children per area),
and a sparse table (90% empty pairs). Each case makes ``runs`` seeded releases one after
the other, each with its bootstrap intervals (`intervals_for`), and measures per level the
share of released nodes whose true value lies in [lower, upper]. A mechanism releases a
different set of nodes each time, so the standard error is that of the per-release
coverage over the independent releases (floored at the binomial one of the cells), and
the verdict is `bench_coverage`'s (within / unresolved / under / over).
"""

from __future__ import annotations

import time

import numpy as np
from coverage_estimated import TOLERANCE, compared, forecast_entry

from hierdp_core.explain_errors import flow_errors
from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.intervals import intervals_for
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

FLOW_MECHANISMS = ("inftda", "tda-l2", "stability-histogram")
DELTA = 1e-6
#: name -> synthetic_flows(levels, branching, zero_probability, max_flow)
FLOW_SHAPES = {
    "flows-few-units": (1, 3, 0.0, 1000),
    "flows-deep-binary": (4, 2, 0.5, 1000),
    "flows-unequal-fanout": (2, (1, 10), 0.5, 1000),
    "flows-sparse": (3, 4, 0.9, 300),
}


def release_source(seed: int, secure: bool) -> NoiseSource:
    """The noise of a benchmark release: seeded by ``seed`` (exploration), or with
    ``secure`` as a release is published (the exact sampler, keyed by the system: what the
    intervals must hold on; their own re-runs stay seeded by the public seed)."""
    return NoiseSource(secure=True) if secure else NoiseSource(seed=seed)


def flow_cases(shapes, mechanisms, epsilons, runs: int, nominal: float, seed: int,
               replicates: int | None, target: float, log, secure: bool = False) -> dict:
    """Every (shape, mechanism, epsilon) `flow_case`, in `bench_coverage`'s results form
    (shape -> {"cases": {"mechanism eps=e": case}}); ``secure``: `release_source`."""
    results = {}
    for index, name in enumerate(shapes):
        data = make_flows(name, index)
        entry = {"leaf_pairs_used": int(data.origin.size), "trips": int(data.counts.sum()),
                 "cases": {}}
        for mechanism in mechanisms:
            for eps in epsilons:
                seed += 1000
                case = flow_case(data, mechanism, eps, runs, nominal, seed, replicates,
                                 target, secure)
                entry["cases"][f"{mechanism} eps={eps:g}"] = case
                log(name, mechanism, eps, [lv["coverage"] for lv in case["levels"]])
        results[name] = entry
    return results


def make_flows(name: str, seed: int):
    """The shape's O/D table, drawn from ``seed``."""
    levels, branching, zero, max_flow = FLOW_SHAPES[name]
    return synthetic_flows(levels, branching, zero, max_flow, seed=seed)


def verdict(cov: float, se: float, nominal: float, target: float) -> str:
    """`bench_coverage`'s verdict: within ``target`` of nominal, else under / over when
    beyond it by more than 2 standard errors, else unresolved."""
    miss = abs(cov - nominal)
    return ("within" if miss <= target else "unresolved" if miss <= target + 2 * se
            else "under" if cov < nominal else "over")


def flow_case(data, mechanism: str, eps: float, runs: int, nominal: float, seed: int,
              replicates: int | None, target: float, secure: bool = False) -> dict:
    """``runs`` releases of ``data`` (seeded, or ``secure``: `release_source`) with their
    intervals at ``nominal``: per level the coverage, its standard error and its
    `verdict`."""
    start = time.perf_counter()
    per_release, cells, hits, widths, methods, flagged = [], [], [], [], set(), []
    estimated, measured, squared = [], [], []
    for run in range(runs):
        release = get_mechanism(mechanism).release(
            data, PrivacyBudget.approx(eps, DELTA), source=release_source(seed + run, secure))
        iv = intervals_for(release, nominal, replicates)
        names = list(release.level_names)
        hit, width, error, square = [], [], [], []
        offset = 0
        for t, lv in enumerate(release.levels):
            truth = data.lookup(t, lv.origin, lv.destination)
            lo, up = iv.lower.ravel()[offset:offset + lv.size], iv.upper.ravel()[
                offset:offset + lv.size]
            offset += lv.size
            hit.append((lo <= truth) & (truth <= up))
            width.append(up - lo)
            error.append(np.abs(lv.value - truth).mean() if lv.size else np.nan)
            square.append(np.square(lv.value - truth).mean() if lv.size else np.nan)
        per_release.append([h.mean() if h.size else np.nan for h in hit])
        cells.append([h.size for h in hit])
        hits.append([int(h.sum()) for h in hit])
        widths.append([w.mean() if w.size else np.nan for w in width])
        methods.add(tuple(iv.record["method"][n] for n in names))
        flagged.append([not iv.record["calibration"][n]["calibrated"] for n in names])
        by_level = iv.record.get("estimated_error", {}).get("by_level", {})
        estimated.append([np.nan if by_level.get(n) is None else by_level[n] for n in names])
        measured.append(error)
        squared.append(square)
    per_release, cells, hits = map(np.asarray, (per_release, cells, hits))
    estimated, measured = np.asarray(estimated), np.asarray(measured)
    forecast = flow_forecast(data, mechanism, eps, measured, np.asarray(squared))
    levels = []
    for t, name in enumerate(names):
        cov_runs = per_release[:, t][~np.isnan(per_release[:, t])]
        n_cells = int(cells[:, t].sum())
        cov = float(hits[:, t].sum() / n_cells) if n_cells else float("nan")
        se = float(cov_runs.std(ddof=1) / np.sqrt(cov_runs.size)) if cov_runs.size > 1 \
            else float("nan")
        se = max(se, float(np.sqrt(cov * (1 - cov) / max(n_cells, 1))))
        v = verdict(cov, se, nominal, target) if n_cells else "no cells"
        entry = {"level": name, "cells": n_cells, "coverage": round(cov, 4),
                 "se": round(se, 4), "releases": runs, "verdict": v,
                 "calibrated": v != "under",
                 "mean_width": float(f"{np.nanmean(np.asarray(widths)[:, t]):.4g}"),
                 "method": " | ".join(sorted({m[t] for m in methods})),
                 "manifest_calibrated": not any(f[t] for f in flagged),
                 "forecast": forecast[t]}
        rows = ~np.isnan(measured[:, t])  # releases with rows at this level
        if rows.sum() > 1:  # per released row (`coverage_estimated`)
            entry["estimated_error"] = compared(estimated[rows, t], measured[rows, t],
                                                TOLERANCE)
        if v == "under":
            entry["reason"] = (f"measured {entry['coverage']} at nominal {nominal} over "
                               f"{runs} releases (standard error {entry['se']})")
        levels.append(entry)
    return {"levels": [lv for lv in levels if lv["cells"]],
            "seconds": round(time.perf_counter() - start, 2)}


def flow_forecast(data, mechanism: str, eps: float, measured: np.ndarray,
                  squared: np.ndarray) -> list[dict]:
    """Per tree level, the a priori error `explain()` shows for a flow release (the noise
    per O/D pair before the projection and the pruning; for the stability histogram's
    coarser levels the RMSE of its leaf noise summed; for the top-down mechanisms an upper
    bound, the range 0 to that: `explain_errors.flow_errors`) against
    the same statistic of the released pairs (``measured``: mean |released - true|,
    ``squared``: mean squared error, releases x levels, NaN where a release has no pair
    there), judged by `coverage_estimated.forecast_entry`."""
    table = flow_errors(data, mechanism, PrivacyBudget.approx(eps, DELTA), None, {}).table
    table = table.assign(**{end: table.get(end, table["mae"]) for end in ("mae_low", "mae_high")})
    out = []
    for t, (mae, rmse, low, high) in enumerate(
            table[["mae", "rmse", "mae_low", "mae_high"]].to_numpy(dtype=float)):
        rms = bool(np.isnan(mae) and not np.isnan(rmse))
        point, runs = (rmse, squared[:, t]) if rms else (mae, measured[:, t])
        out.append(forecast_entry(point, *((point, point) if rms else (low, high)),
                                  "RMSE" if rms else "mean |error|", runs, rms))
    return out

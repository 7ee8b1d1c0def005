"""The error estimated from a release (`hierdp_core.intervals.estimated_error`, the mean
|redraw - plug-in| of its intervals' re-runs per level) against the error measured over the
same releases, for `bench_coverage.py`'s re-run kinds (group sizes, ranges).

Per level (`estimated_levels`): ``estimated`` (the mean over the releases of each one's
estimate), ``measured`` (the mean over them of the level's mean |released - true| per
released value), ``ratio`` = estimated / measured, ``se`` (the relative standard error of
the difference, paired by release), ``release_ratios`` (the 10th and 90th percentiles of
one release's estimate over its own measured error: what a single release's figure is
worth) and ``holds``: the ratio within the tolerance (+ 3 standard errors) of 1. The
summary (`estimated_summary`): ``estimated_error_ratios`` (their range),
``estimated_error_held`` (levels held, of those measured), ``estimated_error_misses`` and
``estimated_error_not_estimated`` (levels whose releases give no estimate: range levels
with cells that are shares of a band or bucket). `forecast_entry` judges the a priori
figure (`explain()`) the same way, for every query kind.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 0.10  # relative, of the measured mean |error| (issue 30 item 3)


def estimated_levels(hierarchy, estimates: np.ndarray, error: np.ndarray,
                     tolerance: float) -> list[dict]:
    """Per level the comparison (module doc) of ``estimates`` (levels x releases, each
    release's ``estimated_error.by_level``) with ``error`` (released - true: nodes x
    values x releases)."""
    out = []
    for lv in range(hierarchy.n_levels):
        level = np.abs(error[hierarchy.level_slice(lv)])
        out.append(compared(estimates[lv], level.reshape(-1, level.shape[-1]).mean(axis=0),
                            tolerance))
    return out


def compared(estimated: np.ndarray, measured: np.ndarray, tolerance: float) -> dict:
    """One level's comparison (module doc) of each release's ``estimated`` error with its
    ``measured`` mean |released - true| (NaN: no estimate)."""
    mean = float(measured.mean())
    if mean == 0 or np.isnan(estimated).any():  # every release exact, or not estimated
        return {"estimated": None if np.isnan(estimated).any()
                else four_figures(float(estimated.mean())), "measured": four_figures(mean),
                "ratio": None, "se": None, "release_ratios": None, "holds": None}
    se = float((estimated - measured).std(ddof=1) / np.sqrt(measured.size) / mean)
    ratio = float(estimated.mean()) / mean
    with np.errstate(divide="ignore", invalid="ignore"):
        own = estimated / measured
    own = own[np.isfinite(own)]
    return {"estimated": four_figures(float(estimated.mean())), "measured": four_figures(mean),
            "ratio": round(ratio, 4), "se": round(se, 4),
            "release_ratios": [round(float(q), 3) for q in np.percentile(own, [10, 90])]
            if own.size else None,
            "holds": bool(abs(ratio - 1) <= tolerance + 3 * se)}


def pooled_estimates(hierarchy, estimates: np.ndarray, error: np.ndarray,
                     tolerance: float) -> list[dict]:
    """`estimated_levels` where one estimate per level covers every release (a counts
    batch: the releases are categories of one table, and its record's figure is their
    mean): the same for every release (the paired standard error is then the measured
    error's), no release with a ratio of its own."""
    runs = error.shape[-1]
    out = estimated_levels(hierarchy, np.repeat(estimates[:, None], runs, axis=1), error,
                           tolerance)
    return [{**entry, "release_ratios": None} for entry in out]


def estimated_summary(cells: list[tuple]) -> dict:
    """The summary keys (module doc) over (shape, case, level) ``cells`` whose levels carry
    ``estimated_error`` (the others are skipped)."""
    rows = [(s, n, lv, e) for s, n, lv in cells
            if (e := lv.get("estimated_error")) and e["holds"] is not None]
    ratios = [e["ratio"] for *_, e in rows]
    return {"estimated_error_ratios": [min(ratios, default=None), max(ratios, default=None)],
            "estimated_error_not_estimated": sum(
                1 for *_, lv in cells if (e := lv.get("estimated_error"))
                and e["estimated"] is None),
            "estimated_error_held": f"{sum(e['holds'] for *_, e in rows)} of {len(rows)}",
            "estimated_error_misses": [f"{s} / {n} / {lv['level']}: {e['ratio']} "
                                       f"(se {e['se']}; measured {e['measured']})"
                                       for s, n, lv, e in rows if not e["holds"]]}


def four_figures(x: float) -> float:
    """``x`` to four significant figures (the benchmark's JSON)."""
    return float(f"{x:.4g}")


def forecast_entry(point: float, low: float, high: float, measure: str,
                   per_release: np.ndarray, squared: bool) -> dict:
    """One level's a priori figure ``point`` (its range ``low``-``high``) against the
    statistic it is of, measured per release (``per_release``: mean |error|, or with
    ``squared`` the mean squared error whose root is compared; NaN: a release without the
    level's cells): ``measured``, its relative standard error ``se``, ``ratio`` = figure /
    measured and ``holds``: the measured within `TOLERANCE` (+ 3 standard errors) of the
    point or range (None where the figure is NaN, "not modelled", or nothing was
    measured)."""
    runs = per_release[~np.isnan(per_release)]
    mean = float(runs.mean()) if runs.size else float("nan")
    se = float(runs.std(ddof=1) / np.sqrt(runs.size) / mean * (0.5 if squared else 1.0)) \
        if runs.size > 1 and mean > 0 else 0.0
    measured = float(np.sqrt(mean)) if squared else mean
    slack = TOLERANCE + 3 * se
    modelled = not np.isnan(point) and runs.size > 0
    return {"mae": four_figures(point), "low": four_figures(low), "high": four_figures(high),
            "measure": measure, "measured": four_figures(measured), "se": round(se, 4),
            "ratio": round(point / measured, 4) if modelled and measured > 0 else None,
            "range": modelled and not low == point == high,
            "holds": bool(low * (1 - slack) <= measured <= high * (1 + slack))
            if modelled else None}


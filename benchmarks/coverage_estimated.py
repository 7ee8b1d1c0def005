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
with cells that are shares of a band or bucket).
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
                else _round(float(estimated.mean())), "measured": _round(mean),
                "ratio": None, "se": None, "release_ratios": None, "holds": None}
    se = float((estimated - measured).std(ddof=1) / np.sqrt(measured.size) / mean)
    ratio = float(estimated.mean()) / mean
    with np.errstate(divide="ignore", invalid="ignore"):
        own = estimated / measured
    own = own[np.isfinite(own)]
    return {"estimated": _round(float(estimated.mean())), "measured": _round(mean),
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


def _round(x: float) -> float:
    return float(f"{x:.4g}")

"""The verdict on a level of `bench_coverage.py`: its coverage over cells x releases, the
standard error of the mean of the per-release coverages (cells of one release are
correlated), and whether it is within `coverage_reasons.TARGET` of nominal, unresolved
(within two standard errors more), under or over (`judged`); per level
(`level_coverage`) and for the category a level covers least (`worst_category`)."""

from __future__ import annotations

import numpy as np
from coverage_reasons import TARGET


def judged(hit: np.ndarray, nominal: float) -> tuple[float, float, str]:
    """The coverage of ``hit`` (cells, releases), its standard error (that of the mean of
    the per-release coverages, at least the cells' binomial one) and the verdict (module
    doc)."""
    runs = hit.shape[-1]
    per_release = hit.mean(axis=0)
    cov = float(per_release.mean())
    se = float(per_release.std(ddof=1) / np.sqrt(runs)) if runs > 1 else float("nan")
    se = max(se, float(np.sqrt(cov * (1 - cov) / hit.size)))
    miss = abs(cov - nominal)
    verdict = ("within" if miss <= TARGET else "unresolved" if miss <= TARGET + 2 * se
               else "under" if cov < nominal else "over")
    return cov, se, verdict


def level_coverage(hit: np.ndarray, hierarchy, nominal: float) -> list[dict]:
    """Per level: coverage over its cells x releases, the standard error of the mean of
    the per-release coverages, and the verdict (module doc)."""
    out = []
    runs = hit.shape[-1]
    for lv in range(hierarchy.n_levels):  # rows: nodes (x categories), columns: releases
        cov, se, verdict = judged(hit[hierarchy.level_slice(lv)].reshape(-1, runs), nominal)
        out.append({"level": hierarchy.level_names[lv], "units": hierarchy.level_size(lv),
                    "coverage": round(cov, 4), "se": round(se, 4), "releases": runs,
                    "verdict": verdict, "calibrated": verdict != "under"})
    return out


def worst_category(hit: np.ndarray, nominal: float) -> dict | None:
    """The category (a group size, an attribute value; by position) of a level's ``hit``
    (units, categories, releases) whose coverage over its units x releases is lowest,
    with that coverage's standard error (as `level_coverage`'s) and verdict; None with
    one category (counts' batches: their categories are the releases)."""
    if hit.ndim != 3 or hit.shape[1] < 2:
        return None
    worst = int(hit.mean(axis=(0, 2)).argmin())
    cov, se, verdict = judged(hit[:, worst, :], nominal)
    return {"category": worst, "coverage": round(cov, 4), "se": round(se, 4),
            "verdict": verdict}

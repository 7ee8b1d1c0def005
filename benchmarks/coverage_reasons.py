"""Why a level of `bench_coverage.py` covers what it does: per cell whether its interval
holds the truth and what a one-step narrower one would (`interval_hits`), per level the
share and coverage of the truths near 0 (`near_zero_truths`) and, for a level over nominal,
the reason (`over_reason`)."""

from __future__ import annotations

import numpy as np

TARGET = 0.03  # points of coverage from nominal


HIT_KEYS = ("hit", "exact", "raised", "lowered", "width", "truth")
EXACT_SLACK = 1e-9  # the intervals' own slack for a real estimate's rounding error


def interval_hits(values: np.ndarray, truth: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray, integer: bool) -> dict[str, np.ndarray]:
    """Per cell: whether [lower, upper] holds the truth (``hit``), whether the released
    value is the truth (``exact``), whether the interval one step narrower at its lower
    (``raised``) or upper (``lowered``) end still holds it (integer releases: the end
    moved by one towards the released value, never past it; others: the open interval),
    the ``width`` and the ``truth``: what tells an over-covering level's reason
    (`over_reason`). A real
    value within `EXACT_SLACK` of its truth (relative) is released exactly: floating point
    error, not noise."""
    if integer:
        raised = (lower + (lower < values) <= truth) & (truth <= upper)
        lowered = (lower <= truth) & (truth <= upper - (upper > values))
        exact = values == truth
    else:
        raised = lowered = (lower < truth) & (truth < upper)
        exact = np.abs(values - truth) <= EXACT_SLACK * (1 + np.abs(truth))
    return {"hit": (lower <= truth) & (truth <= upper), "exact": exact,
            "raised": raised, "lowered": lowered, "width": upper - lower,
            "truth": np.broadcast_to(truth, exact.shape)}


def over_reason(exact: float, narrowed: float, nominal: float,
                near_zero: dict | None = None) -> str:
    """Why a level covers more than nominal + `TARGET`: its released values are the truth
    so often that every interval holding them covers too much (``exact``: that share);
    its cells whose truth is near 0 cover more, and the others (``near_zero``:
    `near_zero_truths`) within nominal + `TARGET` (values are not negative, so an interval
    misses a truth within its half-width of 0 only where the release is too high, not too
    low: about 1 - (1 - level) / 2 of them are held); the next narrower interval
    (``narrowed``: its coverage) already covers too little, so no interval of the
    release's unit lies within the target; else wider than needed."""
    if exact > nominal + TARGET:
        return (f"forced: the released value is the truth in {exact:.3f} of cells (every "
                "interval holding the released value covers at least that)")
    if near_zero and near_zero["others"] is None and near_zero["near"] > nominal + TARGET:
        return ("near 0: every cell's truth is within the level's median half-width of 0 "
                "(missed only by a release too high)")
    if near_zero and near_zero["others"] is not None \
            and near_zero["others"] <= nominal + TARGET < near_zero["near"]:
        return (f"near 0: {near_zero['share']:.3f} of cells have a truth within the level's "
                f"median half-width of 0, held in {near_zero['near']:.3f} (missed only by a "
                f"release too high); the others {near_zero['others']:.3f}")
    if narrowed < nominal - TARGET:
        return (f"step: one step narrower covers {narrowed:.3f} (no interval between)")
    return f"wider than needed: one step narrower covers {narrowed:.3f}"


def near_zero_truths(hit: np.ndarray, truth: np.ndarray, width: np.ndarray) -> dict | None:
    """The share of a level's cells whose truth lies within the level's median half-width
    (half of ``width``) of 0, their coverage (``near``) and the others' (None when every
    cell is so); None when none is."""
    near = truth < np.median(width) / 2
    if not near.any():
        return None
    return {"share": round(float(near.mean()), 4), "near": round(float(hit[near].mean()), 4),
            "others": round(float(hit[~near].mean()), 4) if not near.all() else None}

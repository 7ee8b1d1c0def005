"""Why a level of `bench_coverage.py` covers what it does: per cell whether its interval
holds the truth and what a one-step narrower one would (`interval_hits`), per level the
true zeros' share and coverage (`zero_truths`) and, for a level over nominal, the reason
(`over_reason`)."""

from __future__ import annotations

import numpy as np

TARGET = 0.03  # points of coverage from nominal


HIT_KEYS = ("hit", "exact", "raised", "lowered", "width", "zero")
EXACT_SLACK = 1e-9  # the intervals' own slack for a real estimate's rounding error


def interval_hits(values: np.ndarray, truth: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray, integer: bool) -> dict[str, np.ndarray]:
    """Per cell: whether [lower, upper] holds the truth (``hit``), whether the released
    value is the truth (``exact``), whether the truth is 0 (``zero``), whether the interval
    one step narrower at its lower
    (``raised``) or upper (``lowered``) end still holds it (integer releases: the end
    moved by one towards the released value, never past it; others: the open interval),
    and the ``width``: what tells an over-covering level's reason (`over_reason`). A real
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
            "zero": np.broadcast_to(truth == 0, exact.shape)}


def over_reason(exact: float, narrowed: float, nominal: float,
                zeros: dict | None = None) -> str:
    """Why a level covers more than nominal + `TARGET`: its released values are the truth
    so often that every interval holding them covers too much (``exact``: that share);
    its cells of true 0 cover more, and the others (``zeros``: `zero_truths`) within
    nominal + `TARGET` (a true 0 is held by any interval of a value released at or near 0,
    which must reach 0 to hold the small truths released so); the next narrower interval
    (``narrowed``: its coverage) already covers too little, so no interval of the
    release's unit lies within the target; else wider than needed."""
    if exact > nominal + TARGET:
        return (f"forced: the released value is the truth in {exact:.3f} of cells (every "
                "interval holding the released value covers at least that)")
    if zeros and zeros["coverage_of_others"] <= nominal + TARGET < zeros["coverage_of_zeros"]:
        return (f"true zeros: {zeros['share']:.3f} of cells are 0 and held in "
                f"{zeros['coverage_of_zeros']:.3f}; the others {zeros['coverage_of_others']:.3f}")
    if narrowed < nominal - TARGET:
        return (f"step: one step narrower covers {narrowed:.3f} (no interval between)")
    return f"wider than needed: one step narrower covers {narrowed:.3f}"


def zero_truths(hit: np.ndarray, zero: np.ndarray) -> dict | None:
    """The share of a level's cells whose truth is 0, their coverage and the others';
    None when every cell or none is 0."""
    if zero.all() or not zero.any():
        return None
    return {"share": round(float(zero.mean()), 4),
            "coverage_of_zeros": round(float(hit[zero].mean()), 4),
            "coverage_of_others": round(float(hit[~zero].mean()), 4)}

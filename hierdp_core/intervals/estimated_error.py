"""A release's error per level estimated from the release itself (issue 30 item 3): the
mean |redraw - plug-in| of its intervals' re-runs (`bootstrap.rerun_bootstrap`), averaged
over each level's cells.

The a priori figure `explain()` shows for group sizes and ranges is the noise on each
measurement before the consistency step; what the released values' error is depends on
the data (a sparse unit's values stay near 0, and fitting children to their parent can
move them more than the noise). The re-runs see that step at work on the plug-in (the
released table taken as the truth), so their mean error is an estimate of the released
values' that no a priori model gives. Computed from the same redraws as the intervals:
released values and public parameters only, no privacy cost.

How well it holds is measured, not assumed: `benchmarks/bench_coverage.py` puts it beside
the measured mean |error| of every level of every shape (``estimated_error`` per level;
docs/benchmarks.md). It is the plug-in's error, so where the release is sparser than the
truth (the finest levels of small units at a small budget) it is lower than the truth's.
A value that is a share of a released aggregate (a range release's band or bucket, spread
evenly) is biased by how unevenly the truth fills the aggregate, which its re-runs on the
even plug-in cannot show: its level gets no estimate (None, and the record says why).

Example
-------
>>> import numpy as np
>>> from hierdp_core.hierarchy import build_from_codes
>>> h, _ = build_from_codes([np.array(["a", "b"])], ["leaf"])
>>> record = estimated_error(tree_levels(h), np.array([[3.0, 1], [0.5, 0.5], [1, 0]]))
>>> record["by_level"]
{'total': 2.0, 'leaf': 0.5}
>>> describe({"estimated_error": record})
"error estimated from the release's re-runs (mean |error| per released value): total 2.0, leaf 0.50"
"""

from __future__ import annotations

import numpy as np

from hierdp_core.number_text import error_figure

#: what the record's figures are (the manifest's ``intervals.estimated_error.measure``)
MEASURE = ("mean |released - true| per released value, estimated as the mean "
           "|redraw - plug-in| of the intervals' re-runs of the mechanism on the release")
SIGNIFICANT = 4


def estimated_error(levels, mean_abs: np.ndarray, unseen: np.ndarray | None = None,
                    why: str = "") -> dict:
    """The manifest's ``estimated_error`` record: per level (``levels``: (name, its rows of
    ``mean_abs``) pairs, `tree_levels` for a table) the mean over its cells of ``mean_abs``
    (each cell's mean |redraw - plug-in|), or None where a cell of the level is marked
    ``unseen`` (a bias the re-runs cannot show, said in ``why``: ``not_estimated``)."""
    by_level = {}
    for name, at in levels:
        hidden = unseen is not None and bool(unseen[at].any())
        by_level[name] = None if hidden else _significant(float(np.mean(mean_abs[at])))
    record = {"measure": MEASURE, "by_level": by_level}
    if None in by_level.values():
        record["not_estimated"] = why
    return record


def tree_levels(hierarchy) -> list[tuple[str, slice]]:
    """A table release's levels for `estimated_error`: each name and its rows of nodes."""
    return [(name, hierarchy.level_slice(lv)) for lv, name in enumerate(hierarchy.level_names)]


def describe(record: dict | None) -> str | None:
    """One line of a release's ``estimated_error`` record (``record``: its intervals'
    record), or None where it has none or estimates no level."""
    estimate = (record or {}).get("estimated_error")
    if estimate is None or set(estimate["by_level"].values()) == {None}:
        return None
    parts = [f"{name} " + ("not estimated" if v is None else error_figure(v))
             for name, v in estimate["by_level"].items()]
    return ("error estimated from the release's re-runs (mean |error| per released value): "
            + ", ".join(parts))


def _significant(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")

"""Which levels' intervals are known to cover less than their level, from measurement
(`benchmarks/bench_intervals.py`, its README section): the parametric bootstrap sees a
mechanism's spread around the plug-in, not its bias at the truth, and where no honest
correction is available the manifest's ``intervals`` record says so per level
(``calibration``: ``{"calibrated": false, "reason": ...}``), the command line prints a
``warning:`` line and the dashboard pages show `uncalibrated_warning`.

The mechanism declares its levels and reason (`Capabilities.uncalibrated`); `LEVELS` names
levels by position from the leaves, so it applies to every geography; it depends on the
mechanism only (public), never on the data. (TopDown counts' levels near 0 were flagged
from the release's values until their intervals were inverted there,
`intervals.counts.near_zero_inversion`; the stability histogram's levels above the
leaves until they got the suppression bound, `intervals.flows`.)
"""

from __future__ import annotations

from collections.abc import Sequence

from hierdp_core.mechanisms.base import capabilities

#: which levels of a release of n levels (root first) a rule flags (InfTDA, TDA and
#: gs-kuo-hierarchical were flagged above the leaves until their bootstrap was
#: bias-widened; gs-kuo-hierarchical's root is again, `group_sizes.KUO_ROOT_UNCALIBRATED`;
#: Uniform's ranges below the root, `mechanisms.ranges.UNIFORM_UNCALIBRATED`)
LEVELS = {
    "above the leaves": lambda n: range(0, n - 1),
    "the root": lambda n: range(0, 1),
    "below the root": lambda n: range(1, n),
}


def calibration(mechanism: str, level_names: Sequence[str],
                methods: dict | None = None) -> dict:
    """Per level, ``{"calibrated": True}`` or ``{"calibrated": False, "reason": ...}`` by
    the mechanism's `Capabilities.uncalibrated`; a level published exactly (its method in
    ``methods`` starting with "exact") is calibrated."""
    out = {name: {"calibrated": True} for name in level_names}
    declared = capabilities(mechanism).uncalibrated
    if declared is not None:
        which, reason = declared
        for lv in LEVELS[which](len(level_names)):
            if not str((methods or {}).get(level_names[lv], "")).startswith("exact"):
                out[level_names[lv]] = {"calibrated": False, "reason": reason}
    return out


def level_names_of(release) -> list[str]:
    """A release's level names, root first (a flow release's or a table release's)."""
    names = getattr(release, "level_names", None)
    return list(names if names is not None else release.hierarchy.level_names)


def uncalibrated_warning(release, name: str | None = None) -> str | None:
    """One line saying which levels' intervals may cover less than their level, and why;
    None when every level is calibrated. From the release's intervals record when it has
    one, else from its mechanism (a page shows it before the intervals are drawn). The
    mechanism is called ``name`` (default its key: a page gives its plain name)."""
    iv = getattr(release, "intervals", None)
    record = (iv.record["calibration"] if iv is not None and "calibration" in iv.record
              else calibration(release.mechanism, level_names_of(release)))
    flagged = [name for name, c in record.items() if not c["calibrated"]]
    if not flagged:
        return None
    return (f"the intervals of {name or release.mechanism} at {', '.join(flagged)} are not "
            f"calibrated: they may hold the true value less often than their level "
            f"({record[flagged[0]]['reason']})")

"""Does a geometry fit a table's geography? Match by codes AND parents, level by level.

A *reference* is a geometry's units: per level (coarse to fine) a Series whose index is the
unit code (the feature id) and whose values are the parent's code at the level above (None
at its top level). The table's units come the same way from its `Hierarchy`
(`hierarchy_units`). `match_units` maps each table level, in order, to the reference level
holding most of its codes, then checks that each matched unit's parent in the table is its
parent in the reference (a Moroccan commune coded '01' is not Piemonte's '01' when its
parent is not Italy's). A match is usable (`GeoMatch.ok`) only when EVERY level reaches
`MATCH_COVERAGE` for both.

>>> ref = {"r": pd.Series([None, None], index=["01", "02"]),
...        "p": pd.Series(["01", "02"], index=["001", "002"])}
>>> user = {"reg": (np.array(["01", "02"]), None),
...         "prov": (np.array(["001", "002"]), np.array(["01", "02"]))}
>>> m = match_units(user, ref, "demo")
>>> m.ok, [(lm.level, lm.target, lm.coverage, lm.parents_agree) for lm in m.levels]
(True, [('reg', 'r', 1.0, 1.0), ('prov', 'p', 1.0, 1.0)])
>>> swapped = {**user, "prov": (np.array(["001", "002"]), np.array(["02", "01"]))}
>>> match_units(swapped, ref, "demo").ok
False
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MATCH_COVERAGE = 0.95  # share of a level's codes (and of their parents) that must match
Units = dict[str, tuple[np.ndarray, np.ndarray | None]]  # level -> (codes, parent codes)
Reference = dict[str, pd.Series]  # level -> Series(parent code, index = code), coarse first


@dataclass(frozen=True)
class LevelMatch:
    """One table level against its reference level: ``coverage`` the share of the table's
    codes that are reference ids, ``parents_agree`` the share of those whose table parent is
    the reference parent (1.0 at the top level), the codes of either side without a
    counterpart (sorted), and ``feature_coverage`` the share of the reference ids in the
    table."""

    level: str
    target: str | None
    coverage: float
    parents_agree: float
    feature_coverage: float
    unmatched_codes: tuple[str, ...]
    unmatched_features: tuple[str, ...]

    @property
    def zeros_differ(self) -> bool:
        """Most unmatched codes would match without their leading zeros ('6037' vs '06037':
        a code column read as numbers on one side)."""
        if not self.unmatched_codes or not self.unmatched_features:
            return False
        features = {c.lstrip("0") for c in self.unmatched_features}
        found = sum(c.lstrip("0") in features for c in self.unmatched_codes)
        return found > len(self.unmatched_codes) / 2

    @property
    def ok(self) -> bool:
        return (self.target is not None and self.coverage >= MATCH_COVERAGE
                and self.parents_agree >= MATCH_COVERAGE)


@dataclass(frozen=True)
class GeoMatch:
    """A table's geography against one geometry ``source``: one `LevelMatch` per level."""

    source: str
    levels: tuple[LevelMatch, ...]

    @property
    def ok(self) -> bool:
        return bool(self.levels) and all(lm.ok for lm in self.levels)

    @property
    def rate(self) -> float:
        """The lowest level's share of codes matched with their parents."""
        return min((lm.coverage * lm.parents_agree for lm in self.levels), default=0.0)

    def targets(self) -> dict[str, str]:
        """Table level -> reference level, for the levels that found one."""
        return {lm.level: lm.target for lm in self.levels if lm.target is not None}

    def describe(self) -> str:
        """One line: the rate and the level pairs, e.g. '100% matched: st → state (100%
        codes, 100% parents)'."""
        pairs = ", ".join(f"{lm.level} → {lm.target or 'nothing'} ({percent(lm.coverage)} "
                          f"codes, {percent(lm.parents_agree)} parents)" for lm in self.levels)
        return f"{percent(self.rate)} matched: {pairs}"


def percent(share: float) -> str:
    """A share for people: never '100%' unless all (99.94% is '99.9%'), else whole percents.

    >>> percent(1.0), percent(3139 / 3141), percent(0.5)
    ('100%', '99.9%', '50%')
    """
    if share >= 1:
        return "100%"
    return f"{min(share, 0.999):.1%}" if share > 0.995 else f"{share:.0%}"


def hierarchy_units(h, levels: range | None = None) -> Units:
    """The table's units from a `Hierarchy`: level name -> (codes, parent codes as str)."""
    out: Units = {}
    for lv in levels or range(1, h.n_levels):
        codes = np.asarray(h.codes[lv]).astype(str)
        parents = (np.asarray(h.codes[lv - 1]).astype(str)[h.segment_of_level(lv)]
                   if lv > 1 else None)
        out[h.level_names[lv]] = (codes, parents)
    return out


def _ancestor(reference: Reference, names: list[str], fine: int, coarse: int) -> pd.Series:
    """Reference code at level ``fine`` -> its ancestor's code at level ``coarse``."""
    up = reference[names[fine]].astype(object)
    for lv in range(fine - 1, coarse, -1):
        up = up.map(reference[names[lv]])
    return up


def _index(values) -> pd.Index:
    """Codes as an object Index (hash lookups; pandas' arrow strings test isin per item)."""
    return pd.Index(np.asarray(values, dtype=str).astype(object), dtype=object)


def match_units(units: Units, reference: Reference, source: str) -> GeoMatch:
    """Match the table's ``units`` against a ``reference`` (see the module docstring)."""
    names = list(reference)
    ids = [_index(reference[n].index) for n in names]
    out, floor, placed = [], 0, []
    for level, (codes, parents) in units.items():
        wanted = _index(pd.unique(np.asarray(codes, dtype=str)))
        shares = [(wanted.isin(ids[r]).mean() if len(wanted) else 0.0, r)
                  for r in range(floor, len(names))]
        share, r = max(shares, key=lambda s: (s[0], -s[1]), default=(0.0, None))
        if r is None or share == 0:
            out.append(LevelMatch(level, None, 0.0, 0.0, 0.0, tuple(sorted(wanted)), ()))
            placed.append(None)
            continue
        agree = 1.0
        if parents is not None and placed and placed[-1] is not None:
            known = pd.Series(np.asarray(parents, dtype=str).astype(object), index=_index(codes),
                              dtype=object)
            known = known[known.index.isin(ids[r])]
            truth = _ancestor(reference, names, r, placed[-1]).reindex(known.index)
            agree = float((truth.to_numpy(dtype=object) == known.to_numpy(dtype=object))
                          .mean()) if len(known) else 0.0
        out.append(LevelMatch(level, names[r], float(share), agree,
                              float(ids[r].isin(wanted).mean()),
                              tuple(sorted(wanted[~wanted.isin(ids[r])])),
                              tuple(sorted(ids[r][~ids[r].isin(wanted)]))))
        placed.append(r)
        floor = r + 1
    return GeoMatch(source, tuple(out))


def best_match(units: Units, references: dict[str, Reference]) -> GeoMatch | None:
    """The usable match (`GeoMatch.ok`) with the highest rate among ``references`` (source
    -> reference), or None when none fits every level."""
    matches = [match_units(units, ref, source) for source, ref in references.items()]
    usable = [m for m in matches if m.ok]
    return max(usable, key=lambda m: m.rate, default=None)

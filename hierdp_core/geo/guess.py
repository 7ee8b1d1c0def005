"""Which property of a boundary file holds each level's codes: judged by codes AND parents.

A guess is only a proposal (DESIGN principle 10): the dashboard shows it with what it gives
(the share of each level's codes found with their parents) and draws nothing until the user
accepts it. Per level, coarse to fine, every property holding more than half of the level's
codes is scored by that share times the share of the matched codes whose parent in the
table is the feature's value of the property chosen for the nearest coarser well-matched
level (`geo.match.MATCH_COVERAGE`): a property holding municipality codes in another order
scores low. A level other than the finest whose best property stays below the coverage is
built by merging the finest well-matched level instead when every one of its units then
has an area (100%).

>>> import pandas as pd
>>> frame = pd.DataFrame({"shuffled": ["b1", "a2", "a1"], "tract": ["a1", "a2", "b1"],
...                       "zone": ["A", "A", "B"]})
>>> units = {"zone": (np.array(["A", "B"]), None),
...          "tract": (np.array(["a1", "a2", "b1"]), np.array(["A", "A", "B"]))}
>>> g = guess_properties(frame, ["shuffled", "tract", "zone"], units)
>>> g.properties, g.merged, g.rates
({'zone': 'zone', 'tract': 'tract'}, (), {'zone': 1.0, 'tract': 1.0})
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.geo.match import MATCH_COVERAGE, Units, percent
from hierdp_core.geo.upload import property_codes

_MORE_THAN = 0.5  # a property holds a level's codes when it has more than this share


@dataclass(frozen=True)
class PropertyGuess:
    """``properties``: level -> the property guessed to hold its codes; ``merged``: levels
    to build by merging the finest well-matched level; ``rates``: level -> the share of its
    codes found with their parents under the guess (1.0 for a merged level)."""

    properties: dict[str, str]
    merged: tuple[str, ...]
    rates: dict[str, float]

    def describe(self, levels: list[str]) -> str:
        """One line per guess, e.g. "town: build by merging tract (100%); tract ← 'TR'
        (100% of codes with their parents)"."""
        finest = next((lv for lv in reversed(levels) if lv in self.properties), None)
        parts = []
        for level in levels:
            if level in self.merged:
                parts.append(f"{level}: build by merging {finest} ({percent(1.0)})")
            elif level in self.properties:
                parts.append(f"{level} ← {self.properties[level]!r} "
                             f"({percent(self.rates[level])} of codes with their parents)")
            else:
                parts.append(f"{level}: no property holds its codes")
        return "; ".join(parts)


def _codes(values: pd.Series) -> pd.Index:
    return pd.Index(pd.unique(np.asarray(values.dropna(), dtype=str)).astype(object),
                    dtype=object)


def _up(units: Units, level: str, target: str) -> pd.Series:
    """Code of ``level`` -> its ancestor's code at the coarser level ``target`` (the table's
    own tree)."""
    names = list(units)
    codes, parents = units[level]
    up = pd.Series(np.asarray(codes, dtype=str).astype(object),
                   index=np.asarray(codes, dtype=str).astype(object), dtype=object)
    for i in range(names.index(level), names.index(target), -1):
        codes, parents = units[names[i]]
        step = pd.Series(np.asarray(parents, dtype=str).astype(object),
                         index=np.asarray(codes, dtype=str).astype(object), dtype=object)
        up = up.map(step[~step.index.duplicated()])
    return up[~up.index.duplicated()]


def _parents_agree(values: dict[str, pd.Series], prop: str, above: tuple[str, str],
                   units: Units, level: str, wanted: pd.Index) -> float:
    """Share of ``level``'s codes found in ``prop`` whose table ancestor at the level
    ``above[0]`` is the feature's value of the property ``above[1]``."""
    pairs = pd.DataFrame({"code": values[prop], "up": values[above[1]]}).dropna()
    pairs = pairs[pairs["code"].isin(wanted)].drop_duplicates("code")
    if pairs.empty:
        return 0.0
    truth = _up(units, level, above[0]).reindex(pairs["code"].to_numpy())
    return float((truth.to_numpy(dtype=object) == pairs["up"].to_numpy(dtype=object)).mean())


def guess_properties(frame: pd.DataFrame, properties: list[str], units: Units,
                     ) -> PropertyGuess:
    """The guess for the table's ``units`` (`geo.match.hierarchy_units`, coarse to fine)
    over the ``properties`` of a boundary ``frame`` (values as codes, see the module
    docstring)."""
    values = {p: property_codes(frame, p) for p in properties if frame[p].notna().any()}
    index = {p: _codes(v) for p, v in values.items()}
    chosen: dict[str, str] = {}
    rates: dict[str, float] = {}
    above: tuple[str, str] | None = None  # (level, property) of the nearest good level
    for level, (codes, parents) in units.items():
        wanted = pd.Index(pd.unique(np.asarray(codes, dtype=str)).astype(object), dtype=object)
        best, best_rate = None, 0.0
        for prop in values:
            share = float(wanted.isin(index[prop]).mean()) if len(wanted) else 0.0
            if share <= _MORE_THAN:
                continue
            agree = (_parents_agree(values, prop, above, units, level, wanted)
                     if parents is not None and above is not None else 1.0)
            if share * agree > best_rate:
                best, best_rate = prop, share * agree
        if best is not None:
            chosen[level], rates[level] = best, best_rate
            if best_rate >= MATCH_COVERAGE:
                above = (level, best)
    merged = _merged_levels(units, chosen, rates, index)
    for level in merged:
        chosen.pop(level, None)
        rates[level] = 1.0
    return PropertyGuess(chosen, merged, rates)


def _merged_levels(units: Units, chosen: dict[str, str], rates: dict[str, float],
                   index: dict[str, pd.Index]) -> tuple[str, ...]:
    """The levels above the finest well-matched one whose own guess is below the coverage
    and whose every unit has an area once the finest level's areas are merged."""
    names = list(units)
    good = [lv for lv in names if lv in chosen and rates[lv] >= MATCH_COVERAGE]
    if not good:
        return ()
    finest = good[-1]
    found = pd.Index(np.asarray(units[finest][0], dtype=str).astype(object), dtype=object)
    found = found[found.isin(index[chosen[finest]])]
    out = []
    for level in names[:names.index(finest)]:
        if rates.get(level, 0.0) >= MATCH_COVERAGE:
            continue
        covered = pd.Index(_up(units, finest, level).reindex(found).dropna().unique(),
                           dtype=object)
        wanted = pd.Index(pd.unique(np.asarray(units[level][0], dtype=str)).astype(object),
                          dtype=object)
        if len(wanted) and bool(wanted.isin(covered).all()):
            out.append(level)
    return tuple(out)

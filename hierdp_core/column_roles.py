"""Sensible, validated defaults for the column roles of an uploaded table.

A table's columns play roles: geography levels (codes, coarse to fine), unit names, a count
of people, a group id, a group size, an ordered attribute, origin / destination levels.
This module judges which columns CAN play a numeric role (by dtype and values, never by
name alone) and ranks the candidates by name hints; the dashboard offers only valid
columns and says so when there is none. Nothing here looks at more than the table's
schema and per-column summaries (no per-row loop).

>>> t = pd.DataFrame({"region_code": [1, 1, 2], "region_name": ["A", "A", "B"],
...                   "commune": ["x", "y", "z"], "size": [1, 3, 2], "n": [5.0, 2.0, 1.0]})
>>> count_candidates(t, exclude=["region_code", "commune"])
['n', 'size']
>>> size_candidates(t, exclude=["region_code", "commune"])
['size', 'n']
>>> guess_levels(t)
['region_code', 'commune']
>>> guess_name_columns(t, ["region_code", "commune"])
{'region_code': 'region_name'}
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

SIZE_HINTS = ("size", "persons", "people", "members", "household_size", "hh_size")
COUNT_HINTS = ("count", "n", "persons", "people", "population", "residents", "households",
               "groups", "trips", "flows", "flights", "workers", "commuters", "total",
               "freq", "weight")
GROUP_HINTS = ("household", "household_id", "hh_id", "group", "group_id", "family")
PERSON_HINTS = ("person", "person_id", "pid")
ATTRIBUTE_HINTS = ("age", "income", "travel_time")
CODE_WORDS = ("code", "id", "fips", "geoid", "istat", "zip", "key", "tract", "cod", "codice")
CODE_ENDINGS = ("no", "nr")  # town_no, tract_nr: a number that names a unit
NAME_WORDS = ("name", "nom", "label", "nome", "libelle")


def _words(column: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", str(column).lower()) if w]


def hinted(column: str, hints: Iterable[str]) -> bool:
    """The column's name, or one of its words, is one of ``hints``."""
    name = str(column).lower()
    return name in hints or any(w in hints for w in _words(column))


def looks_like_code(column: str) -> bool:
    """The column's name says it holds codes or ids (``region_code``, ``GEOID``, ``hh_id``,
    ``tract``, ``town_no``)."""
    words = _words(column)
    return any(w in CODE_WORDS for w in words) or (len(words) > 1
                                                    and words[-1] in CODE_ENDINGS)


def integer_valued(series: pd.Series) -> bool:
    """Numeric dtype (not boolean) whose non-missing values are all whole numbers >= 0."""
    if series.dtype.kind not in "iuf":
        return False
    values = series.to_numpy(dtype=float, na_value=np.nan)
    values = values[~np.isnan(values)]  # missing; an infinity is a value, and not whole
    return values.size > 0 and bool(np.all(np.isfinite(values)) and np.all(values >= 0)
                                    and np.all(values == np.floor(values)))


def _ranked(table: pd.DataFrame, exclude: Iterable[str], hints: tuple[str, ...]) -> list[str]:
    """Integer-valued, non-code columns not in ``exclude``: hinted names first (in hint
    order), then the rest in table order."""
    skip = set(map(str, exclude))
    valid = [str(c) for c in table.columns if str(c) not in skip and not looks_like_code(c)
             and integer_valued(table[c])]

    def rank(column: str) -> int:
        return next((i for i, h in enumerate(hints) if hinted(column, (h,))), len(hints))
    return sorted(valid, key=rank)


def count_candidates(table: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Columns that can hold a count of people or trips, the most likely first."""
    return _ranked(table, exclude, COUNT_HINTS)


def size_candidates(table: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Columns that can hold a group size, the most likely first."""
    return _ranked(table, exclude, SIZE_HINTS + COUNT_HINTS)


def attribute_candidates(table: pd.DataFrame, exclude: Iterable[str] = (),
                         hints: tuple[str, ...] | None = None) -> list[str]:
    """Columns that can be an ordered integer attribute (signed allowed), hinted first
    (default `ATTRIBUTE_HINTS`)."""
    hints = ATTRIBUTE_HINTS if hints is None else hints
    skip = set(map(str, exclude))
    valid = [str(c) for c in table.columns if str(c) not in skip and not looks_like_code(c)
             and table[c].dtype.kind in "iu"]
    return sorted(valid, key=lambda c: (not hinted(c, hints), valid.index(c)))


def group_candidates(table: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Columns that can identify a group (non-float, not named like a count), hinted names
    first."""
    skip = set(map(str, exclude))
    valid = [str(c) for c in table.columns if str(c) not in skip and table[c].dtype.kind != "f"
             and (hinted(c, GROUP_HINTS) or not hinted(c, COUNT_HINTS))]
    return sorted(valid, key=lambda c: (not hinted(c, GROUP_HINTS), valid.index(c)))


def _determines(table: pd.DataFrame, fine: str, coarse: str) -> bool:
    """Every value of ``fine`` sits in one value of ``coarse``."""
    return bool((table.groupby(fine, sort=False)[coarse].nunique(dropna=False) <= 1).all())


def guess_levels(table: pd.DataFrame, exclude: Iterable[str] = (), max_levels: int = 4,
                 sample_rows: int = 200_000) -> list[str]:
    """Geography level columns, coarse to fine: the longest chain of non-float, non-name
    columns that are not count-like or a group / person id, each nested in the one before
    (every finer code sits in one coarser code) and with more distinct values; of chains
    as long, the one with the most units at its finest level. A column that nests in no
    other (``sex`` beside ``state``, ``county``) starts no chain of its own that wins. Of
    two columns in one-to-one correspondence (a code and its name) the code-like one is
    kept. [] when none fits. Judged on at most ``sample_rows`` rows."""
    part = table.head(sample_rows)
    skip = set(map(str, exclude)) | set(count_candidates(part))
    pool = [str(c) for c in part.columns if str(c) not in skip and part[c].dtype.kind != "f"
            and not any(w in NAME_WORDS for w in _words(c))
            and not hinted(c, GROUP_HINTS + PERSON_HINTS)]
    distinct = {c: int(part[c].nunique()) for c in pool}
    pool = [c for c in pool if distinct[c] > 1]
    pool.sort(key=lambda c: (distinct[c], not looks_like_code(c)))
    chains: dict[str, list[str]] = {}  # the best chain ending at each column
    for i, column in enumerate(pool):
        below = [chains[c] for c in pool[:i] if distinct[c] < distinct[column]
                 and len(chains[c]) < max_levels and _determines(part, column, c)]
        chains[column] = [*max(below, key=len, default=[]), column]
    return max(chains.values(), key=lambda chain: (len(chain), distinct[chain[-1]]),
               default=[])


def left_out_levels(table: pd.DataFrame, levels: list[str], taken: Iterable[str] = (),
                    sample_rows: int = 200_000) -> list[str]:
    """Text or code-like columns (not ``taken``: count, names, categories) left out of the
    guessed ``levels`` because they do not nest with them: a finer one not within the
    finest level, a coarser one the coarsest level is not within (a county under two
    states)."""
    if not levels:
        return []
    part = table.head(sample_rows)
    skip = {*levels, *map(str, taken)}
    out = []
    for c in (str(c) for c in part.columns):
        if c in skip or part[c].dtype.kind not in "OSU" and not (
                looks_like_code(c) and part[c].dtype.kind in "iu"):
            continue
        finer = int(part[c].nunique()) > int(part[levels[-1]].nunique())
        if not (_determines(part, c, levels[-1]) if finer
                else _determines(part, levels[0], c)):
            out.append(c)
    return out


def guess_categories(table: pd.DataFrame, levels: list[str], count: str | None,
                     names: Iterable[str] = (), most: int = 30,
                     sample_rows: int = 200_000) -> list[str]:
    """Category columns beside the guessed ``levels``: text columns with 2 to ``most``
    distinct values (``sex``, ``age_group``; so few values are no group or person id)
    that are not a level, the ``count`` or a unit's name, and that vary within at least
    half the finest level's units (crossed with the units, not a coarser geography such
    as a state). Numbers are left out: an age or a size is an attribute more often than
    a category."""
    part = table.head(sample_rows)
    taken = {*levels, *(names or ()), *([count] if count else [])}
    return [str(c) for c in part.columns if str(c) not in taken
            and part[c].dtype.kind in "OSUb" and 2 <= int(part[c].nunique()) <= most
            and not any(w in NAME_WORDS for w in _words(c)) and not hinted(str(c), COUNT_HINTS)
            and (not levels or (part.groupby(levels[-1])[c].nunique() > 1).mean() >= 0.5)]


def guess_name_columns(table: pd.DataFrame, levels: list[str]) -> dict[str, str]:
    """Level -> a text column naming its units: ``<level>_name`` if present, else a text
    column with a name-like word in one-to-one correspondence with the level's codes."""
    columns = [str(c) for c in table.columns]
    texts = [c for c in columns if c not in levels and table[c].dtype.kind in "OSU"]
    out: dict[str, str] = {}
    for level in levels:
        stem = re.sub(r"(_?(code|id|cod|codice))$", "", level, flags=re.I)
        for c in [f"{level}_name", f"{stem}_name"] + [
                c for c in texts if any(w in NAME_WORDS for w in _words(c))]:
            if c in texts and c not in out.values() and _names_level(table, level, c):
                out[level] = c
                break
    return out


def _names_level(table: pd.DataFrame, level: str, column: str) -> bool:
    return (int(table[column].nunique()) == int(table[level].nunique())
            and _determines(table, level, column))


ORIGIN_WORDS = ("o", "origin", "from", "orig", "home", "residence")
DESTINATION_WORDS = ("d", "destination", "to", "dest", "work", "workplace")


def od_candidates(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Origin and destination level columns by their names' first or last word ('o_state',
    'origin_county', 'county_from'; 'd_state', 'dest_county'), in table order; the lists
    are empty when the names say nothing.

    >>> od_candidates(pd.DataFrame(columns=["from_zone", "to_zone", "trips"]))
    (['from_zone'], ['to_zone'])
    """
    def side(words: tuple[str, ...]) -> list[str]:
        return [str(c) for c in table.columns
                if len(_words(c)) > 1 and (_words(c)[0] in words or _words(c)[-1] in words)]
    return side(ORIGIN_WORDS), side(DESTINATION_WORDS)


GROUP_SIZE_WORDS = ("size", "members", "household_size", "hh_size")  # not count words
#: a column named as a time is a table's period, not an ordered attribute of people
TIME_WORDS = ("year", "yr", "month", "date", "period", "anno", "annee", "jahr")
#: the fewest distinct values of an integer column taken for a range attribute by its values
#: alone (one named as an attribute, e.g. ``age``, needs none)
MIN_RANGE_VALUES = 5


def fits(table: pd.DataFrame, query: str, levels: Iterable[str] = ()) -> bool:
    """Whether ``table`` (geography ``levels`` chosen) looks like the input of ``query``
    ("flows", "group-sizes", "ranges") by the roles its page would guess: origin and
    destination columns named as such; a household id, or a group size, named as such; an
    integer attribute that is not a level, a code, a count or an origin / destination
    column. A query page starts on an uploaded table that fits it.

    >>> people = pd.DataFrame({"county": ["a", "b"], "household": ["h1", "h2"], "age": [4, 40]})
    >>> [fits(people, q, ["county"]) for q in ("flows", "group-sizes", "ranges")]
    [False, True, True]
    >>> fits(pd.DataFrame({"county": ["a", "b"], "population": [4, 40]}), "ranges", ["county"])
    False
    >>> ages = pd.DataFrame({"county": ["a", "b"], "age_group": ["0-17", "18+"], "n": [4, 4]})
    >>> fits(ages, "group-sizes", ["county"])
    False
    >>> sizes = pd.DataFrame({"county": ["a", "b"], "size": [1, 2], "households": [9, 4]})
    >>> [fits(sizes, q, ["county"]) for q in ("group-sizes", "ranges")]
    [True, False]

    An unnamed integer column is an attribute only with `MIN_RANGE_VALUES` values or more
    (a sex coded 1/2 is not), and never when named as a time (a year of a yearly table):

    >>> coded = pd.DataFrame({"county": list("abcdef"), "sex": [1, 2] * 3,
    ...                       "year": [2020, 2021, 2022, 2023, 2024, 2025], "n": [4] * 6})
    >>> fits(coded, "ranges", ["county"])
    False
    """
    levels = list(map(str, levels))
    if query == "flows":
        return all(od_candidates(table))
    if query == "group-sizes":  # "age_group" is an attribute's bands, not a household
        return (any(hinted(c, GROUP_HINTS) and not hinted(c, ATTRIBUTE_HINTS)
                    for c in group_candidates(table, levels))
                or any(hinted(c, GROUP_SIZE_WORDS) for c in size_candidates(table, levels)))
    if query != "ranges":
        raise ValueError(f"no query page for {query!r}")
    flow_levels = [c for side in od_candidates(table) for c in side]
    not_attributes = COUNT_HINTS + GROUP_HINTS + GROUP_SIZE_WORDS + PERSON_HINTS + TIME_WORDS
    return any(hinted(c, ATTRIBUTE_HINTS) or (not hinted(c, not_attributes)
                                              and table[c].nunique() >= MIN_RANGE_VALUES)
               for c in attribute_candidates(table, [*levels, *flow_levels]))

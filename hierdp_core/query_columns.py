"""Which query page an uploaded table fits (`fits`) and the query pages' own column guesses:
origin and destination level columns of a flow table (`od_candidates`), a group-size
table's layout (`groups_per_size`). Like `column_roles`, whose candidates it reads, it
judges the table by its schema and per-column summaries only.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from hierdp_core.column_roles import (
    ATTRIBUTE_HINTS,
    COUNT_HINTS,
    GEO_WORDS,
    GROUP_HINTS,
    PERSON_HINTS,
    TIME_WORDS,
    attribute_candidates,
    group_candidates,
    hinted,
    name_words,
    names_units,
    size_candidates,
)

ORIGIN_WORDS = ("o", "origin", "from", "orig", "home", "residence", "residenza", "domicile",
                "wohnort", "woon", "wohn", "residencia", "origen", "origem", "origine",
                "herkunft")
DESTINATION_WORDS = ("d", "destination", "to", "dest", "work", "workplace", "travail",
                     "lavoro", "trabajo", "arbeit", "arbeits", "arbeitsort", "werk",
                     "destino", "trabalho", "destinazione", "ziel")


def od_candidates(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Origin and destination level columns by their names' first or last word ('o_state',
    'origin_county', 'county_from'; 'd_state', 'dest_county'), coarse to fine, never a
    column of names (``woon_gemeente_naam``: `column_roles.names_units`); the lists are
    empty when the names say nothing.

    >>> od_candidates(pd.DataFrame(columns=["from_zone", "to_zone", "trips"]))
    (['from_zone'], ['to_zone'])
    """
    def named(column: str, words: tuple[str, ...]) -> bool:
        w = name_words(column)
        return (len(w) > 1 and (w[0] in words or w[-1] in words)
                or _compound(column.lower(), words))

    def side(words: tuple[str, ...]) -> list[str]:
        found = [str(c) for c in table.columns
                 if named(str(c), words) and not names_units(c)]
        # coarse to fine: by their numbers of codes (the table's order when no rows)
        return sorted(found, key=lambda c: int(table[c].nunique())) if len(table) else found
    return side(ORIGIN_WORDS), side(DESTINATION_WORDS)


def _compound(name: str, words: tuple[str, ...]) -> bool:
    """``name`` is one of ``words`` (of three letters or more) joined to a geography level's
    word (``wohnkanton``, ``arbeitsbezirk``)."""
    return any(len(w) >= 3 and name.startswith(w) and name[len(w):] in GEO_WORDS
               for w in words)


GROUP_SIZE_WORDS = ("size", "members", "household_size", "hh_size", "taille", "groesse",
                    "größe", "grootte", "dimensione", "tamano", "tamaño", "tamanho")  # no counts
#: the fewest distinct values of an integer column taken for a range attribute by its values
#: alone (one named as an attribute, e.g. ``age``, needs none)
MIN_RANGE_VALUES = 5


def groups_per_size(table: pd.DataFrame, levels: Iterable[str] = ()) -> bool:
    """Whether a group-size table has a row per region and size (a column named as a group
    size, none as a group id) rather than one per person.

    >>> groups_per_size(pd.DataFrame({"commune": ["a"], "taille_menage": [2], "nb": [9]}))
    True
    """
    levels = list(map(str, levels))
    return (not any(hinted(c, GROUP_HINTS) and not hinted(c, ATTRIBUTE_HINTS)
                    for c in group_candidates(table, levels))
            and any(hinted(c, GROUP_SIZE_WORDS) for c in size_candidates(table, levels)))


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

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

SIZE_HINTS = ("size", "persons", "people", "members", "household_size", "hh_size", "taille",
              "groesse", "größe", "grootte", "dimensione", "tamano", "tamaño", "wielkosc",
              "tamanho")
COUNT_HINTS = ("count", "n", "persons", "people", "population", "residents", "households",
               "groups", "trips", "flows", "flights", "workers", "commuters", "total",
               "freq", "weight", "obs",
               # the same in the languages of the national tables users bring
               "effectif", "effectifs", "nombre", "nb", "pop", "habitants", "anzahl",
               "einwohner", "bevoelkerung", "bevölkerung", "personen", "gesamt",
               "insgesamt", "aantal", "inwoners", "totaal", "numero", "popolazione",
               "residenti", "abitanti", "poblacion", "población", "habitantes", "antal",
               "liczba", "pendler", "navetteurs", "pendelaars", "trajets", "fahrten",
               "personas", "persone", "pessoas", "nombre_menages", "menages", "ménages",
               "haushalte", "huishoudens", "hogares", "famiglie")
GROUP_HINTS = ("household", "household_id", "hh_id", "group", "group_id", "family", "hh",
               "menage", "ménage", "famille", "haushalt", "familie", "huishouden", "hogar",
               "famiglia")
PERSON_HINTS = ("person", "person_id", "pid", "personne", "individu", "persoon", "persona",
                "individual")
ATTRIBUTE_HINTS = ("age", "income", "travel_time", "alter", "leeftijd", "eta", "età",
                   "edad", "idade", "wiek", "alder", "ålder")
CODE_WORDS = ("code", "id", "fips", "geoid", "istat", "zip", "key", "tract", "cod", "codice")
#: names of geography levels: a column of whole numbers so named holds codes (BFS, INSEE or
#: LAU numbers without leading zeros), never counts
GEO_WORDS = ("state", "county", "region", "province", "municipality", "district", "city",
             "town", "commune", "canton", "department", "departement", "dep", "dept", "reg",
             "com", "kanton", "bezirk", "gemeinde", "land", "kreis", "gemeente", "provincie",
             "wijk", "buurt", "comune", "provincia", "regione", "comuna", "municipio",
             "distrito", "concelho", "freguesia", "kommune", "kommun", "fylke", "powiat",
             "gmina", "nuts", "lau", "lad", "lsoa", "msoa", "ward", "parish", "postcode", "plz",
             "arrondissement", "iris", "ags", "bundesland", "landkreis", "regierungsbezirk",
             "wojewodztwo", "województwo", "voivodeship", "okres", "obec", "kraj", "amt")
#: a column named as a time is a table's period, not an ordered attribute of people
TIME_WORDS = ("year", "yr", "month", "date", "period", "anno", "annee", "jahr")
#: words of a row id's name (a person's or a household's number)
ID_WORDS = ("id", "nr", "no", "num", "number", "lopnr", "pid", "ident", "identifiant")
CODE_ENDINGS = ("no", "nr")  # town_no, tract_nr: a number that names a unit
NAME_WORDS = ("name", "nom", "label", "nome", "libelle", "libellé", "denominazione", "nazwa",
              "designacao", "designação", "bezeichnung", "naam", "nombre", "navn", "namn",
              "nimi", "nazev", "název", "denumire")


def name_words(column: str) -> list[str]:
    """The lower-case words of a column's name (split at anything not a letter or digit)."""
    return [w for w in re.split(r"[\W_]+", str(column).lower()) if w]


def names_units(column: str) -> bool:
    """The column's name says it holds names (a word of `NAME_WORDS`: ``gemeente_naam``)."""
    return any(w in NAME_WORDS for w in name_words(column))


def hinted(column: str, hints: Iterable[str]) -> bool:
    """The column's name, or one of its words, is one of ``hints``."""
    name = str(column).lower()
    return name in hints or any(w in hints for w in name_words(column))


def looks_like_code(column: str) -> bool:
    """The column's name says it holds codes or ids (``region_code``, ``GEOID``, ``hh_id``,
    ``tract``, ``town_no``) or is a geography level's (``kanton``, ``gemeinde``: `GEO_WORDS`)."""
    words = name_words(column)
    return any(w in CODE_WORDS or _geo_word(w) for w in words) or (
        len(words) > 1 and words[-1] in CODE_ENDINGS)


def _geo_word(word: str) -> bool:
    """A geography level's word, or a compound ending in one of five letters or more
    (``wohnkanton``, ``arbeitsbezirk``)."""
    return word in GEO_WORDS or any(len(g) >= 5 and word.endswith(g) for g in GEO_WORDS)


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
    (default `ATTRIBUTE_HINTS`), columns named like a count last."""
    hints = ATTRIBUTE_HINTS if hints is None else hints
    skip = set(map(str, exclude))
    valid = [str(c) for c in table.columns if str(c) not in skip and not looks_like_code(c)
             and table[c].dtype.kind in "iu"]
    return sorted(valid, key=lambda c: (not hinted(c, hints), hinted(c, COUNT_HINTS),
                                        valid.index(c)))


def group_candidates(table: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Columns that can identify a group (non-float, not named like a count), hinted names
    first."""
    skip = set(map(str, exclude))
    valid = [str(c) for c in table.columns if str(c) not in skip and table[c].dtype.kind != "f"
             and (hinted(c, GROUP_HINTS) or not hinted(c, COUNT_HINTS))
             and not hinted(c, SIZE_HINTS)]  # household_size, taille_menage: sizes
    return sorted(valid, key=lambda c: (not hinted(c, GROUP_HINTS), valid.index(c)))


def _determines(table: pd.DataFrame, fine: str, coarse: str) -> bool:
    """Every value of ``fine`` sits in one value of ``coarse``."""
    return bool((table.groupby(fine, sort=False)[coarse].nunique(dropna=False) <= 1).all())


def names_an_id(column: str) -> bool:
    """The column's name says it numbers rows (``persoon_id``, ``id_osoby``, ``lopnr``),
    not a geography level's units (``wijk_id`` names a level: `GEO_WORDS`)."""
    words = name_words(column)
    return any(w in ID_WORDS for w in words) and not any(w in GEO_WORDS for w in words)


def sole_count(table: pd.DataFrame, levels: Iterable[str]) -> str | None:
    """The count column of a table whose count is named in no language `COUNT_HINTS`
    knows: the one column of whole numbers >= 0 that is no level, code, age, size or time
    (`count_candidates`), in a table of one row per cell (its ``levels`` and category-like
    text columns repeat in no two rows); None when there are none or several, or the
    table repeats a cell (one row per person, the number an attribute)."""
    others = ATTRIBUTE_HINTS + SIZE_HINTS + TIME_WORDS
    found = [c for c in count_candidates(table, levels) if not hinted(c, others)]
    if len(found) != 1:
        return None
    cells = [*levels, *(c for c in map(str, table.columns) if c not in levels
                        and table[c].dtype.kind in "OSUb" and 2 <= table[c].nunique() <= 30)]
    # a table of counts holds a cell a row; one whose cells repeat is one row per person
    return None if table.duplicated(subset=cells).any() else found[0]


def guess_levels(table: pd.DataFrame, exclude: Iterable[str] = (), max_levels: int = 4,
                 sample_rows: int = 200_000, rows_per_unit: float = 1.0) -> list[str]:
    """Geography level columns, coarse to fine: the longest chain of non-float, non-name
    columns that are not count-like or a group / person id, each nested in the one before
    (every finer code sits in one coarser code) and with more distinct values; of chains
    as long, the one with the most units at its finest level. A column that nests in no
    other (``sex`` beside ``state``, ``county``) starts no chain of its own that wins. Of
    two columns in one-to-one correspondence (a code and its name) the code-like one is
    kept. A column with more than one value per ``rows_per_unit`` rows (a person's or a
    household's id in a table of one row per person) is no level. [] when none fits.
    Judged on at most ``sample_rows`` rows."""
    part = table.head(sample_rows)
    skip = set(map(str, exclude)) | set(count_candidates(part))
    pool = [str(c) for c in part.columns if str(c) not in skip and part[c].dtype.kind != "f"
            and not names_units(c)
            and not hinted(c, GROUP_HINTS + PERSON_HINTS)]
    distinct = {c: int(part[c].nunique()) for c in pool}
    pool = [c for c in pool if 1 < distinct[c] and distinct[c] * rows_per_unit <= len(part)]
    pool.sort(key=lambda c: (distinct[c], not looks_like_code(c)))
    chains: dict[str, list[str]] = {}  # the best chain ending at each column
    for i, column in enumerate(pool):
        below = [chains[c] for c in pool[:i] if distinct[c] < distinct[column]
                 and len(chains[c]) < max_levels and _determines(part, column, c)]
        chains[column] = [*max(below, key=len, default=[]), column]
    return max(chains.values(), key=lambda chain: (len(chain), distinct[chain[-1]]),
               default=[])


def local_code_levels(table: pd.DataFrame, levels: list[str], exclude: Iterable[str] = (),
                      sample_rows: int = 200_000) -> list[str]:
    """``levels`` (a `guess_levels` chain) with a level of local codes: a column named as
    codes (`looks_like_code`, no attribute, group or person) that nests in the finest level
    only as (parent, code) pairs (`_local_within`: district 01-03 in every state), added
    as the finest level; a chain of one level may itself be the local codes of such a
    coarser column (fewer codes, or as many and before it: 36 states, district codes
    01-75). [] when there is none."""
    if not levels:
        return []
    part = table.head(sample_rows)
    finest = levels[-1]
    skip = {*levels, *map(str, exclude), *count_candidates(part)}
    order = {c: (int(part[c].nunique()), i) for i, c in enumerate(map(str, part.columns))}
    for c in (str(c) for c in part.columns):
        if (c in skip or part[c].dtype.kind == "f" or not looks_like_code(c) or names_units(c)
                or hinted(c, ATTRIBUTE_HINTS + GROUP_HINTS + PERSON_HINTS)):
            continue
        parent, child = sorted((finest, c), key=order.get)
        named = any(_geo_word(w) for w in name_words(child))  # commune, district
        if (parent == finest or len(levels) == 1) and _local_within(part, parent, child,
                                                                    named):
            return [*levels, c] if parent == finest else [c, finest]
    return []


def _local_within(table: pd.DataFrame, parent: str, child: str,
                  named_as_units: bool = False) -> bool:
    """``child`` holds codes local to ``parent``: more (parent, code) pairs than parents,
    not every parent with every code (a category's values cross the units) unless
    ``child`` is named as a geography level (communes 1-5 in every region), and most
    pairs' codes under other parents too (a few codes under two parents are an error of
    the table, `left_out_levels`)."""
    pairs = table[[parent, child]].drop_duplicates()
    parents = int(table[parent].nunique())
    crossed = parents * int(table[child].nunique())
    return (parents < len(pairs) and (len(pairs) < crossed or named_as_units)
            and float(pairs[child].duplicated(keep=False).mean()) > 0.5)


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
    numbers = set(separated_numbers(part))
    out = []
    for c in (str(c) for c in part.columns):
        if c in skip or part[c].dtype.kind not in "OSU" and not (
                looks_like_code(c) and part[c].dtype.kind in "iu"):
            continue
        if (names_units(c) or c in numbers
                or any(_names_level(part, level, c) for level in levels)):
            continue  # a unit's name (one a unit, whatever the column is called), numbers
        finer = int(part[c].nunique()) > int(part[levels[-1]].nunique())
        if not (_determines(part, c, levels[-1]) if finer
                else _determines(part, levels[0], c)):
            out.append(c)
    return out


#: a whole number written with a thousands separator: a space, a no-break or narrow
#: no-break space, an apostrophe (Swiss), a dot or a comma between groups of three digits
SEPARATED_NUMBER = r"\d{1,3}(?:[ \u00a0\u202f'’.,]\d{3})+"


def separated_numbers(table: pd.DataFrame) -> list[str]:
    """The text columns of whole numbers some of which are written with a thousands
    separator ('1 234', "1'234"): counts a reader takes for text."""
    out = []
    for c in table.columns:
        if table[c].dtype.kind not in "OSU" and not pd.api.types.is_string_dtype(table[c]):
            continue
        text = pd.Series(pd.unique(table[c].dropna())).astype(str).str.strip()
        grouped = text.str.fullmatch(SEPARATED_NUMBER)
        if len(text) and grouped.any() and (grouped | text.str.fullmatch(r"\d+")).all():
            out.append(str(c))
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
            and not names_units(c) and not hinted(str(c), COUNT_HINTS)
            and (not levels or (part.groupby(levels[-1])[c].nunique() > 1).mean() >= 0.5)]


def guess_name_columns(table: pd.DataFrame, levels: list[str],
                       taken: Iterable[str] = ()) -> dict[str, str]:
    """Level -> a text column naming its units: ``<level>_name`` if present, else a text
    column with a name-like word, those whose name holds the level's (``provincia_nombre``
    for ``provincia``) first, that names the level's units (`_names_level`) and is not a
    coarser level's names (`_coarser_names`). A column names one level, and none of
    ``taken`` (names chosen for other levels)."""
    columns = [str(c) for c in table.columns]
    texts = [c for c in columns if c not in levels and table[c].dtype.kind in "OSU"]
    named = [c for c in texts if names_units(c)]
    out: dict[str, str] = {}
    used = set(map(str, taken))
    for level in levels:
        stem = re.sub(r"(_?(code|id|cod|codice))$", "", level, flags=re.I)
        own = set(name_words(stem)) - set(CODE_WORDS)
        for c in [f"{level}_name", f"{stem}_name",
                  *sorted(named, key=lambda c: not own & set(name_words(c)))]:
            if (c in texts and c not in used and _names_level(table, level, c)
                    and not _coarser_names(table, level, c)):
                out[level] = c
                used.add(c)
                break
    return out


def _coarser_names(table: pd.DataFrame, level: str, column: str) -> bool:
    """``column`` holds a coarser level's names: codes of ``level`` share names, and the
    name is one within every unit holding several codes of a column ``level`` nests in
    (Cádiz and Málaga both 'Andalucía', within their region's code)."""
    codes = int(table[level].nunique())
    if int(table[column].nunique()) >= codes:
        return False  # a name per code
    for parent in (str(c) for c in table.columns):
        if (parent in (level, column) or table[parent].dtype.kind == "f"
                or table[parent].dtype.kind in "iu" and not looks_like_code(parent)
                or not 1 < int(table[parent].nunique()) < codes
                or not _determines(table, level, parent)):
            continue
        per = table.groupby(parent, sort=False)[[level, column]].nunique()
        several = per[level] > 1
        if several.any() and bool((per.loc[several, column] == 1).all()):
            return True
    return False


def _names_level(table: pd.DataFrame, level: str, column: str) -> bool:
    """Each unit has one name, and most units a name of their own (two communes of one
    name in two départements are common)."""
    return (int(table[column].nunique()) >= NAMES_DISTINCT * int(table[level].nunique())
            and _determines(table, level, column))


#: a level's name column holds at least this share of distinct names per code
NAMES_DISTINCT = 0.8

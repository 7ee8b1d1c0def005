"""The category cells of a release: each row's index in the product of its category
columns' declared values (`category_index`) and the labels of that product
(`category_labels`: the values joined with `CATEGORY_JOIN`, first column slowest).

Example
-------
>>> import pandas as pd
>>> index, labels = category_index(pd.DataFrame({"sex": ["M", "F"], "age": ["0-17", "65+"]}),
...                                ["sex", "age"], {"sex": ["F", "M"], "age": ["0-17", "65+"]})
>>> index.tolist(), labels
([2, 1], ('F / 0-17', 'F / 65+', 'M / 0-17', 'M / 65+'))
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hierdp_core.declared_values import VALUE_SEPARATOR
from hierdp_core.errors import StructureError
from hierdp_core.structure import MAX_LISTED, factor_codes


def category_index(table: pd.DataFrame, columns: Sequence[str],
                   declared: Mapping[str, Sequence[str]]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Index of every row in the cartesian product of the declared values of ``columns``
    (first column slowest), and the labels ``'v1 / v2'`` of the product. A value not
    declared is a `StructureError` naming up to five values and the number of rows; a
    declared value absent from the data is simply a category with no rows."""
    index = np.zeros(len(table), dtype=np.int64)
    value_lists = []
    for column in columns:
        values = np.asarray([str(v).strip() for v in declared[column]], dtype=object)
        row_unique, uniques = factor_codes(table[column], column, "category")
        lookup = pd.Index(values).get_indexer(uniques)
        code = lookup[row_unique]
        bad = code < 0
        if bad.any():
            refused = pd.unique(uniques[row_unique[bad]]).tolist()
            raise StructureError(f"{int(bad.sum()):,} row(s) have {column!r} value(s) outside "
                                 f"{_describe_values(values.tolist())}: "
                                 + ", ".join(repr(v) for v in refused[:MAX_LISTED])
                                 + _normalisation_hint(refused, values.tolist()))
        index = index * values.size + code
        value_lists.append(values.tolist())
    return index, category_labels(value_lists, columns)


#: a released row's ``category`` joins the values of its category columns with this
CATEGORY_JOIN = " / "


def category_labels(value_lists: Sequence[Sequence[str]],
                    columns: Sequence[str] = ()) -> tuple[str, ...]:
    """The labels ``'v1 / v2'`` of the product of the category columns' values (first
    column slowest). With two columns or more, a value holding `CATEGORY_JOIN` is a
    `StructureError` naming it (and its column, from ``columns``): its labels could not
    be told apart or split back ("A / B" then "C" and "A" then "B / C" are one label)."""
    if len(value_lists) > 1:
        for i, values in enumerate(value_lists):
            joined = [v for v in values if CATEGORY_JOIN in v]
            if joined:
                column = f"column {columns[i]!r}" if i < len(columns) else "a category column"
                raise StructureError(
                    f"{column} has the value {joined[0]!r}, which holds {CATEGORY_JOIN!r}: "
                    f"a released row's category joins the values of the {len(value_lists)} "
                    f"category columns with {CATEGORY_JOIN!r}, so its labels could not be "
                    f"told apart; rename the value (e.g. "
                    f"{joined[0].replace(CATEGORY_JOIN, '-')!r})")
    labels: list[tuple[str, ...]] = [()]
    for values in value_lists:
        labels = [p + (v,) for p in labels for v in values]
    return tuple(CATEGORY_JOIN.join(p) for p in labels)


def _normalisation_hint(refused: list[str], declared: list[str]) -> str:
    """' (...)' when a refused value is a declared one written in another Unicode
    normalisation (combining accents against precomposed letters), else ''; the values
    are never normalised silently."""
    by_nfc = {unicodedata.normalize("NFC", v): v for v in declared}
    for value in refused:
        twin = by_nfc.get(unicodedata.normalize("NFC", str(value)))
        if twin is not None:
            return (f" ({value!r} is written with {_letters(str(value))}, the declared value "
                    f"with {_letters(twin)}: save both the same way (NFC))")
    return ""


def _letters(text: str) -> str:
    """How ``text``'s accented letters are written."""
    return ("precomposed letters" if unicodedata.is_normalized("NFC", text)
            else "combining accents")


def _describe_values(values: list[str]) -> str:
    """'the domain 0..100' for consecutive integers, else 'the declared values (a|b|...)'."""
    try:
        numbers = [int(v) for v in values]
    except ValueError:
        numbers = []
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[0] + len(numbers))) \
            and [str(n) for n in numbers] == values:
        return f"the domain {numbers[0]}..{numbers[-1]}"
    more = VALUE_SEPARATOR + "..." if len(values) > 8 else ""
    return f"the declared values ({VALUE_SEPARATOR.join(values[:8])}{more})"

"""What each column of a wide table stands for: a declared category value, or one integer
(a size, an attribute value), and never a band collapsed to one of its ends.

A wide column's *label* is the part of its name its ``--wide`` pattern's wildcards matched
(``age_0_19`` under ``age_*`` is ``0_19``), or the whole name for a column named outright.
Labels and declared values are compared with separators unified (``_``, ``-``, spaces,
dashes) and a trailing ``plus`` read as ``+``: the declared value ``0-19`` names the column
``age_0_19``, ``85+`` names ``age_85_plus``, and ``age_0_19`` names itself.

* `declared_labels` (counts): the declared value of every wide column. The category values
  are the declaration (`hierdp_core.structure.parse_category_values`), never the header: a
  declared value no column names is a category with no rows (released as 0), and a column
  that names no declared value, or two columns naming one value, is a `ReshapeError`
  naming them (a band column says which band to declare).
* `integer_labels` (group sizes, ranges): the one integer of every label. A band (two
  numbers, ``0_19``; or open, ``85_plus``) is refused, naming it, unless it is the open
  band at the declared top (``--max-size 7`` and ``hh_7_plus``: sizes above the top count
  as the top).

>>> declared_labels(["age_0_19", "age_20_plus"], ["age_*"], ("0-19", "20+", "unknown"))
['0-19', '20+']
>>> integer_labels(["hh1", "hh2", "hh3_plus"], ["hh*"], top=3).tolist()
[1, 2, 3]
>>> band_of("50000_74999"), band_of("85 plus"), band_of("7")
((50000, 74999), (85, None), None)
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence

import numpy as np

from hierdp_core.errors import ReshapeError

_WILD_START = re.compile(r"[*?\[]")
_WILD_END = re.compile(r"[*?\]]")
_SEPARATORS = re.compile(r"[\s_\-\u2012-\u2015]+")
_OPEN_TOP = re.compile(r"-?(?:plus|\+|and-over|or-more)$")
_CLOSED = re.compile(r"(\d+)\D+?(\d+)")
_OPEN = re.compile(r"(\d+)\+$")
_NUMBERS = re.compile(r"\d+")
_MAX_LISTED = 5


def column_label(column: str, parts: Sequence[str]) -> str:
    """The part of ``column`` the first pattern of ``parts`` matching it left to its
    wildcards (its literal head and tail removed); the name itself for a column named
    outright or matched by nothing."""
    for part in parts:
        if part == column:
            return column
        if _WILD_START.search(part) and fnmatch.fnmatchcase(column, part):
            head = part[:_WILD_START.search(part).start()]
            tail = part[max(m.end() for m in _WILD_END.finditer(part)):]
            label = column[len(head):len(column) - len(tail)]
            return label or column
    return column


def common_pattern(columns: Sequence[str]) -> list[str]:
    """The columns as ``--wide`` parts: their common head (cut before trailing digits) with
    a wildcard when they share one (``age_0_19``, ``age_20_39`` -> ``['age_*']``), else the
    names themselves (the dashboard's chosen columns read as a pattern would be)."""
    names = [str(c) for c in columns]
    head = re.sub(r"\d+$", "", os.path.commonprefix(names)) if len(names) > 1 else ""
    return [f"{head}*"] if head and all(len(n) > len(head) for n in names) else names


def normalise(value: str) -> str:
    """A label or declared value with separators unified and a trailing plus as '+'
    (``'85_plus'`` -> ``'85+'``, ``'0 - 19'`` -> ``'0-19'``)."""
    text = _SEPARATORS.sub("-", str(value).strip().lower()).strip("-")
    return _OPEN_TOP.sub("+", text)


def band_of(label: str) -> tuple[int, int | None] | None:
    """(low, high) of a band label: two numbers (``0_19``), or (low, None) for an open band
    (``85_plus``, ``85+``); None for a label with at most one number and no plus."""
    text = normalise(label)
    closed = _CLOSED.search(text)
    if closed:
        return int(closed.group(1)), int(closed.group(2))
    opened = _OPEN.search(text)
    return (int(opened.group(1)), None) if opened else None


def _describe_band(band: tuple[int, int | None]) -> str:
    low, high = band
    return f"{low}-{high}" if high is not None else f"{low}+"


def declared_labels(columns: Sequence[str], parts: Sequence[str],
                    values: Sequence[str], name: str = "category") -> list[str]:
    """The declared value (of ``values``, the category ``name``'s declaration) of each wide
    column: the value equal to its name, else the value equal to its label (`normalise`d).
    `ReshapeError` for a column naming no value, two columns naming one value, or two
    declared values that read the same."""
    values = [str(v) for v in values]
    keys: dict[str, str] = {}
    for value in values:
        other = keys.setdefault(normalise(value), value)
        if other != value:
            raise ReshapeError(f"the declared values {other!r} and {value!r} of {name!r} read "
                               "the same once separators are unified; declare one")
    exact = set(values)
    found = [c if c in exact else keys.get(normalise(column_label(c, parts)),
                                           keys.get(normalise(c)))
             for c in map(str, columns)]
    lost = [c for c, v in zip(columns, found, strict=True) if v is None]
    if lost:
        raise ReshapeError(_undeclared_message(lost, parts, values, name))
    taken: dict[str, str] = {}
    for column, value in zip(columns, found, strict=True):
        if taken.setdefault(value, column) != column:
            raise ReshapeError(f"wide columns {taken[value]!r} and {column!r} both name the "
                               f"declared value {value!r} of {name!r}: one column per value")
    return found


def _undeclared_message(lost: list[str], parts: Sequence[str], values: list[str],
                        name: str) -> str:
    """One line: the columns that name no declared value, and for a band how to declare it."""
    shown = ", ".join(repr(c) for c in lost[:_MAX_LISTED]) + (" ..." if len(lost) > 5 else "")
    declared = "|".join(values[:8]) + ("|..." if len(values) > 8 else "")
    first = lost[0]
    band = band_of(column_label(first, parts))
    hint = (f"; {first!r} is the band {_describe_band(band)}: declare the band itself "
            f"(e.g. {name}=...|{_describe_band(band)}|...), never one of its ends"
            if band else f"; declare its label (e.g. {column_label(first, parts)!r})")
    return (f"wide column(s) {shown} match --wide but name none of the declared values of "
            f"{name!r} ({declared}){hint}, or leave the column out of --wide")


def declared_column(melted, columns: Sequence[str], values: Sequence[str],
                    name: str = "category"):
    """A melted category column whose values are the wide ``columns`` (chosen by name, read
    as `common_pattern`) as a Categorical of the declared ``values`` (`declared_labels`)."""
    import pandas as pd

    labels = declared_labels(columns, common_pattern(columns), values, name)
    position = pd.Index(list(values)).get_indexer(labels)
    codes = pd.Categorical(melted, categories=list(columns)).codes
    return pd.Categorical.from_codes(position[codes], categories=list(values))


def integer_labels(columns: Sequence[str], parts: Sequence[str], *, top: int | None = None,
                   role: str = "value") -> np.ndarray:
    """The integer each wide column stands for (a size, an attribute value): the one number
    of its label. `ReshapeError` naming the first column that is a band (two numbers, or an
    open band not at the declared ``top``), has no number, or repeats another's value."""
    labels = [column_label(str(c), parts) for c in columns]
    values = []
    for column, label in zip(columns, labels, strict=True):
        band = band_of(label)
        if band is not None and not (band[1] is None and top is not None and band[0] == top):
            at_top = (f" (only an open band at the declared top, {top}+, counts as the top)"
                      if band[1] is None else "")
            raise ReshapeError(
                f"wide column {column!r} is the band {_describe_band(band)}, not one {role}: "
                f"give one column per {role}{at_top}, or release the bands as categories "
                f"(--query counts --category-values NAME=...|{_describe_band(band)}|...); a "
                "band is never counted at one of its ends")
        numbers = _NUMBERS.findall(label)
        if not numbers:
            raise ReshapeError(f"wide column {column!r} has no number in its name; each "
                               f"column's {role} is the number in its name (hh1, age_85)")
        values.append(int(numbers[-1]))
    out = np.array(values, dtype=np.int64)
    distinct, counts = np.unique(out, return_counts=True)
    if (counts > 1).any():
        value = distinct[counts > 1][0]
        same = [str(c) for c, v in zip(columns, out, strict=True) if v == value]
        raise ReshapeError(f"wide columns {same} all give the {role} {value}: one column per "
                           f"{role}")
    return out

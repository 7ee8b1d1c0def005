"""Declared values typed on the command line, parsed on the standard library alone (so the
command line can bound a release before it imports numpy): the category values of a
counts release (``--category-values COL=V1|V2|...``) and the integer domain of a range
release (``--domain LO-HI``).

Example
-------
>>> parse_category_values(["sex=F|M"])
{'sex': ('F', 'M')}
>>> parse_domain("-5-5")
(-5, 5)
>>> domain_values((1, 3))
('1', '2', '3')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from hierdp_core.errors import StructureError

VALUE_SEPARATOR = "|"
_DOMAIN = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


def parse_category_values(specs: Sequence[str] | None) -> dict[str, tuple[str, ...]]:
    """``["sex=F|M", "age=0-17|18-64|65+"]`` -> ``{"sex": ("F", "M"), ...}`` (values in the
    declared order, which is the release's)."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs or []:
        column, sep, text = str(spec).partition("=")
        column = column.strip()
        values = tuple(v.strip() for v in text.split(VALUE_SEPARATOR))
        if not sep or not column or not text.strip() or "" in values:
            raise StructureError(f"--category-values wants COLUMN=V1|V2|..., got {spec!r}")
        if column in out:
            raise StructureError(f"category values of {column!r} are declared twice")
        repeated = sorted(v for v, times in Counter(values).items() if times > 1)
        if repeated:
            raise StructureError(f"category values of {column!r} repeat {repeated}")
        out[column] = values
    return out


def parse_domain(text: str) -> tuple[int, int]:
    """``'0-100'`` -> ``(0, 100)`` (negative ends allowed: ``'-5-5'``)."""
    match = _DOMAIN.match(str(text))
    if not match:
        raise StructureError(f"--domain wants LO-HI integers, got {text!r}")
    lo, hi = int(match.group(1)), int(match.group(2))
    if lo > hi:
        raise StructureError(f"domain {lo}..{hi} runs backwards")
    return lo, hi


def domain_values(domain: tuple[int, int]) -> tuple[str, ...]:
    """Every integer of the domain, as strings (the categories of a range release)."""
    lo, hi = (int(v) for v in domain)
    if lo > hi:
        raise StructureError(f"domain {lo}..{hi} runs backwards")
    return tuple(str(v) for v in range(lo, hi + 1))

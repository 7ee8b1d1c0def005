"""Node ids that stay unambiguous whatever the codes: every code is escaped before codes are
joined, the characters that join them (and the escape itself) written as ``%XX``.

A counts node id is the path of escaped codes below the root joined by ``/``
(`hierdp_core.hierarchy.Hierarchy.node_ids`); an O/D node id is ``ORIGIN>DESTINATION``
(`hierdp_core.flows.release`). Codes without ``%``, ``/`` or ``>`` (and other than
``root``) are written as they are.

Example
-------
>>> escape_codes(["06", "A/B", "50%", "a>b", "root"]).tolist()
['06', 'A%2FB', '50%25', 'a%3Eb', '%72oot']
>>> split_node_id("A%2FB/x"), split_node_id("root")
(['A/B', 'x'], [])
"""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pandas as pd

ROOT_ID = "root"
PATH_SEPARATOR = "/"
#: characters of a code written as %XX in ids: the escape itself, the path separator and
#: the O/D pair separator (`hierdp_core.flows.data.PAIR_SEPARATOR`)
_ESCAPES = (("%", "%25"), ("/", "%2F"), (">", "%3E"))
#: a code spelled like the root's id, written with its first letter escaped
_ROOT_CODE = "%72oot"


def escape_codes(codes) -> pd.Series:
    """Codes as written in node ids: ``%`` -> ``%25``, ``/`` -> ``%2F``, ``>`` -> ``%3E``,
    and a code that is exactly ``root`` (the root's id) -> ``%72oot``; every other code is
    unchanged. Works on the distinct special codes only (no Python loop per node)."""
    fixed = np.asarray(codes).astype(str)
    special = fixed == ROOT_ID
    for char, _ in _ESCAPES:
        special |= np.strings.find(fixed, char) >= 0
    text = pd.Series(fixed, dtype=object)
    if not special.any():
        return text
    position, distinct = pd.factorize(text[special])
    escaped = pd.Series(np.asarray(distinct, dtype=object))
    for char, code in _ESCAPES:
        escaped = escaped.str.replace(char, code, regex=False)
    escaped = escaped.mask(escaped.eq(ROOT_ID), _ROOT_CODE)
    text[special] = escaped.to_numpy()[position]
    return text


def unescape_code(text: str) -> str:
    """The code written as ``text`` in an id (the inverse of `escape_codes`)."""
    return unquote(text)


def split_node_id(node_id: str) -> list[str]:
    """The codes, coarse to fine, of the node whose id is ``node_id`` (``[]`` for the
    root): the inverse of `Hierarchy.node_ids`."""
    if node_id == ROOT_ID:
        return []
    return [unescape_code(part) for part in node_id.split(PATH_SEPARATOR)]

"""Which release settings apply to which query kind, in one table (`APPLIES_TO`), and which
settings mean something only beside another (`NEEDS`); `check_settings` refuses a
`hierdp_core.config.ReleaseConfig` holding one that does not fit, in one line naming it.
A configuration file's keys of another query kind are refused from the same table
(`hierdp_core.config.QUERY_KEYS`).

Example
-------
>>> from hierdp_core.config import ReleaseConfig
>>> check_settings(ReleaseConfig("topdown", 1.0, max_size=5))
Traceback (most recent call last):
...
hierdp_core.errors.InputError: max_size does not apply to counts releases: it belongs to group-sizes releases
"""

from __future__ import annotations

from collections.abc import Callable

from hierdp_core.errors import InputError

QUERIES = ("counts", "group-sizes", "flows", "ranges")
_NOT_FLOWS = ("counts", "group-sizes", "ranges")
#: the settings (`ReleaseConfig` fields; ``data.groups``: the groups file) of some query
#: kinds only -> those kinds; every other setting applies to all. The fields of one kind
#: are that kind's configuration keys (`hierdp_core.config.QUERY_KEYS`)
APPLIES_TO = {
    "category_columns": ("counts",), "category_values": ("counts",),
    "group_column": ("group-sizes",), "size_column": ("group-sizes",),
    "max_size": ("group-sizes",), "min_size": ("group-sizes",),
    "origin_levels": ("flows",), "destination_levels": ("flows",), "tree": ("flows",),
    "attribute": ("ranges",), "domain": ("ranges",), "workload": ("ranges",),
    "data.groups": ("group-sizes",), "levels": _NOT_FLOWS, "wide": _NOT_FLOWS,
    "names": _NOT_FLOWS,
}
#: what to do instead, for a setting given to a query kind it does not apply to
INSTEAD = {
    ("levels", "flows"): "name the levels of both ends with the origin and destination "
                         "levels",
    ("wide", "flows"): "give one row per origin and destination pair (long form)",
    ("names", "flows"): "a flow is labelled by the codes of its two areas ('AK -> ADK'): "
                        "the command line reads no unit names for flows (the dashboard's "
                        "Flows page takes them from the geography's <level>_name columns); "
                        "drop it",
}
#: settings that mean something only beside another: setting -> (the other, the values
#: of the other without which it does not apply, the message naming both)
NEEDS = {
    "wide_name": ("wide", (None, ""), "{name} names the column of the {other} columns' "
                                      "names: give {other} or drop {name}"),
    "interval_replicates": ("interval", (0.0,), "{name} sets the replicates of the "
                                                "intervals, which {other} none leaves out: "
                                                "drop one of them"),
}
#: the value of a setting left unset, where it is not None or empty
UNSET = {"wide_name": "category"}


def is_set(config, name: str) -> bool:
    """Whether ``config`` gives the setting ``name`` (a field, or ``data.KEY``)."""
    if name.startswith("data."):
        return bool(config.data.get(name.partition(".")[2]))
    value = getattr(config, name)
    return value not in (None, (), {}, "", UNSET.get(name))


def check_settings(config, shown: Callable[[str], str] = str) -> None:
    """Refuse ``config`` (a `ReleaseConfig`) with an `InputError` naming the first setting
    it gives that does not apply to its query kind (`APPLIES_TO`), or without the setting
    it needs (`NEEDS`); ``shown``: how a setting is named (a command-line option)."""
    query = config.query
    for name, kinds in APPLIES_TO.items():
        if query not in kinds and is_set(config, name):
            instead = INSTEAD.get((name, query))
            raise InputError(f"{shown(name)} does not apply to {query} releases: it belongs "
                             f"to {_listed(kinds)} releases" + (f"; {instead}" if instead
                                                                 else ""))
    for name, (other, off, message) in NEEDS.items():
        if is_set(config, name) and getattr(config, other) in off:
            raise InputError(message.format(name=shown(name), other=shown(other)))


def _listed(words) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join(filter(None, [", ".join(words[:-1]), words[-1]]))

"""The input of ``hierdp release`` read ahead while the command starts
(`hierdp_core.data.prefetch`): the release of counts held in memory over a declared
structure, whose rows `hierdp_core.cli.declared_input` places straight from the file
(`declared_roles` says when it may). Nothing here but the standard library until a file
is read ahead, so `hierdp_core.cli.main` enters `reading_input` before the command's
modules are imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hierdp_core.cli.inputs import declared_categories
from hierdp_core.data.file_state import watching
from hierdp_core.data.prefetch import PARTS, declared_columns
from hierdp_core.errors import HierdpError

#: the largest input `hierdp_core.cli.declared_input` places from the file (bytes)
MAX_BYTES = 2_000_000_000


def declared_roles(cfg) -> tuple[list[str], list[str], dict] | None:
    """(the level columns, the category columns, their declared values) of a counts release
    whose rows `hierdp_core.cli.declared_input` may place straight from the file: with
    ``--geography`` and every category column declared, no ``--wide``, ``--ragged``,
    ``--names`` or ``--local-codes``; else None (a declaration the careful path would
    refuse too: it says so after reading the input)."""
    from hierdp_core.defaults import MISSING_POLICIES

    if (cfg.query != "counts" or cfg.wide or cfg.ragged or cfg.names or cfg.local_codes
            or not cfg.data.get("geography") or cfg.structure == "from-data"
            or (cfg.missing or "error") not in MISSING_POLICIES):
        return None
    levels = list(cfg.levels)
    try:
        categories, declared = declared_categories(cfg)
    except HierdpError:
        return None
    if not levels or set(categories) - set(declared) or set(levels) & set(categories):
        return None
    return levels, categories, declared


@contextmanager
def reading_input(cfg, run) -> Iterator[None]:
    """Within it, the input of a release whose rows are placed straight from the file (in
    memory, `declared_roles`) is read ahead, within a share of ``--max-memory``; others
    are read as before. The input file's state as the command starts is recorded
    (`hierdp_core.data.file_state.watching`: a release refuses a file changed since)."""
    in_memory = run.engine != "dask"  # Dask's files: `cmd_release` records them
    roles = declared_roles(cfg) if in_memory else None
    with watching([cfg.data["file"]] if in_memory else []):
        if roles is None:
            yield
            return
        from hierdp_core.cli.limits import memory_limit
        from hierdp_core.data.prefetch import reading

        columns = declared_columns(roles[0], roles[1], cfg.count_column)
        with reading(cfg.data["file"], columns, cfg.encoding, PARTS, MAX_BYTES,
                     memory_limit(run)):
            yield

"""What a release reads and how: the input columns (a large file is read by those only),
the table's preparation before its data is built (``--wide`` melted into long form, empty
count cells by ``--missing``, units that skip a level by ``--ragged``; see
`hierdp_core.data.reshape`), and the manifest's record of it all, from which ``hierdp
evaluate`` rebuilds the data.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from hierdp_core.cli.inputs import csv_list, domain_text
from hierdp_core.errors import InputError


# ---- the columns read ------------------------------------------------------------------
def input_columns(cfg, header: list[str] | None = None) -> list[str] | None:
    """The input columns a release reads (level, count, category, name, attribute, group,
    size and O/D level columns, the ``--wide`` columns), so that a large file is read by
    those columns only. ``header``: the file's column names, to resolve ``--wide``
    patterns; None (read every column) for a pattern without them."""
    columns = _role_columns(cfg)
    spec = cfg.wide
    if spec:
        from hierdp_core.data.reshape import wide_columns

        if header is not None:
            columns += wide_columns(spec, header)
        elif any(ch in part for part in _parts(spec) for ch in "*?["):
            return None
        else:
            columns += _parts(spec)
    return list(dict.fromkeys(c for c in columns if c))


def _role_columns(cfg) -> list[str]:
    """The columns of the table given a role (levels, categories, names, count, attribute,
    group, size), without the columns ``--wide`` makes."""
    columns = [*cfg.levels, *cfg.origin_levels, *cfg.destination_levels,
               *cfg.category_columns, *cfg.names.values(), *cfg.category_values,
               cfg.count_column, cfg.attribute, cfg.group_column, cfg.size_column]
    melted = set(_melted_columns(cfg)) if cfg.wide else set()
    return list(dict.fromkeys(c for c in columns if c and c not in melted))


def _parts(spec: str | list[str]) -> list[str]:
    """The names and patterns of ``--wide`` (a comma list; a list in a manifest)."""
    return csv_list(spec) if isinstance(spec, str) else list(spec)


def read_input(cfg, path: Path) -> pd.DataFrame:
    """The input table, read by the columns the release uses (`input_columns`; a
    ``--wide`` pattern is resolved against the file's header alone)."""
    from hierdp_core.data.loaders import read_header, read_table

    header = read_header(path, encoding=cfg.encoding) if cfg.wide else None
    return read_table(path, columns=input_columns(cfg, header), encoding=cfg.encoding)


def lookalike_warning(cfg, table) -> str | None:
    """A warning naming up to five pairs of codes of the same level that differ only by
    leading zeros or surrounding whitespace (they stay distinct strings), or None."""
    from hierdp_core.data.loaders import lookalike_codes

    columns = [*cfg.levels, *cfg.origin_levels, *cfg.destination_levels]
    pairs = lookalike_codes(table, list(dict.fromkeys(columns)))
    if not pairs:
        return None
    shown = ", ".join(f"{col} {a!r} and {b!r}" for col, a, b in pairs)
    return (f"codes that differ only by leading zeros or whitespace: {shown} (codes are "
            "text: leading zeros make different units; check these are meant)")


def geography_note(cfg) -> str | None:
    """The note of a ``--geography`` text file read in another encoding than ``--encoding``
    (its BOM's, or UTF-8 as its bytes are: `hierdp_core.data.sources.own_encoding`), or
    None."""
    from hierdp_core.data.sources import own_encoding

    path = cfg.data.get("geography")
    encoding, why = own_encoding(path, cfg.encoding) if path else (None, "")
    if not why:
        return None
    shown = "UTF-16" if encoding.startswith("utf-16") else "UTF-8"
    return (f"{Path(path).name} read as {shown} ({why}); --encoding {cfg.encoding} applies "
            "to the input")


def totals_warning(cfg, table) -> str | None:
    """The warning of units that look like totals or subtotals
    (`data.totals_rows.totals_like_units`) of a release whose units are read from the data
    (``--structure-from-data``: a declared geography names its units), or None."""
    from hierdp_core.data.totals_rows import totals_like_units, totals_text

    if cfg.structure != "from-data":
        return None
    found = totals_like_units(table, cfg.levels, bool(cfg.local_codes), bool(cfg.ragged))
    return totals_text(found) if found else None


# ---- preparing the table ---------------------------------------------------------------
def _melted_columns(cfg) -> tuple[str, str]:
    """(the column of the wide columns' names, the column of their cells) of ``--wide``:
    the size column (group sizes), the attribute (ranges), else ``--wide-name``; the count
    column (``--count-column``, else ``count``)."""
    named = {"group-sizes": cfg.size_column, "ranges": cfg.attribute}.get(cfg.query)
    return named or cfg.wide_name or "category", cfg.count_column or "count"


def with_wide_roles(cfg, columns: list[str]):
    """A copy of ``cfg`` (a `ReleaseConfig`) whose roles name the melted columns of
    ``--wide`` (the wide ``columns``): the count column, and the category column, whose
    values are those ``--category-values NAME=...`` declares (never the header: without a
    declaration the column names are its values only with ``--structure-from-data``, for
    exploration); the size column (group sizes) or the attribute (ranges)."""
    query = cfg.query
    if query == "group-sizes" and cfg.group_column:
        raise InputError("--wide gives the number of groups per size (one column per size); "
                         "it does not go with --group-column (one row per person)")
    name, value = _melted_columns(cfg)
    roles = {"count_column": value, "wide_columns": tuple(columns)}
    if query == "group-sizes":
        roles["size_column"] = name
    elif query == "ranges":
        roles["attribute"] = name
    else:
        roles["category_columns"] = tuple(dict.fromkeys([*cfg.category_columns, name]))
        if name not in cfg.category_values:
            if cfg.structure != "from-data":
                from hierdp_core.data.wide_labels import column_label

                example = column_label(columns[0], _parts(cfg.wide))
                raise InputError(f"--wide: declare the values of {name!r} with "
                                 f"--category-values {name}=V1|V2|... (a column's name or the "
                                 f"part its pattern matches, e.g. {example}; a value no column "
                                 "has is released as 0): the confidential table's header is "
                                 "not a declaration; or --structure-from-data to explore")
            unusable = [c for c in columns if "|" in c]
            if unusable:
                raise InputError(f"wide column names become category values and cannot "
                                 f"hold '|': {unusable[:5]}")
            roles["category_values"] = {**cfg.category_values,
                                        name: tuple(c.strip() for c in columns)}
    return replace(cfg, **roles)


def wide_labels(cfg, columns: list[str]):
    """What each wide column stands for (`hierdp_core.data.wide_labels`): its declared
    category value (counts; a Categorical whose categories are the declaration), or its
    size (group sizes, top ``--max-size``) or attribute value (ranges, top the end of
    ``--domain``)."""
    import pandas as pd

    from hierdp_core.data.wide_labels import declared_labels, integer_labels

    parts = _parts(cfg.wide)
    if cfg.query == "group-sizes":
        return integer_labels(columns, parts, top=cfg.max_size, role="size")
    if cfg.query == "ranges":
        top = cfg.domain[1] if cfg.domain else None
        return integer_labels(columns, parts, top=top, role=f"{cfg.attribute} value")
    name = _melted_columns(cfg)[0]
    values = cfg.category_values[name]
    return pd.Categorical(declared_labels(columns, parts, values, name), categories=values)


def prepare_input(cfg, table: pd.DataFrame) -> tuple[object, pd.DataFrame, str]:
    """The table a release is built from, the settings naming its columns, and one note
    for after the release ('' when nothing happened): ``--wide`` melted into long form
    (`with_wide_roles`), empty count cells handled by ``--missing``, and with ``--ragged``
    units that skip a level passed through it (else an empty level code is an error)."""
    from hierdp_core.data.reshape import apply_missing, melt_wide, preparation_note, prepare
    from hierdp_core.data.reshape import wide_columns as resolve

    policy = cfg.missing or "error"
    wide = resolve(cfg.wide, table.columns) if cfg.wide else []
    if wide:
        ids = [c for c in _role_columns(cfg) if c in table.columns]
        cfg = with_wide_roles(cfg, wide)
        if policy == "error":  # named by the wide columns and rows of the table
            apply_missing(table, wide, policy)
        name, value = _melted_columns(cfg)
        table = melt_wide(table, wide, id_columns=ids, name=name, value_name=value,
                          labels=wide_labels(cfg, wide))
    level_sets = ([list(cfg.origin_levels), list(cfg.destination_levels)]
                  if cfg.query == "flows" else [list(cfg.levels)])
    table, handled, passed = prepare(table, level_sets, cfg.count_column, missing=policy,
                                     ragged=bool(cfg.ragged), names=dict(cfg.names))
    return cfg, table, preparation_note(policy, handled, passed)


# ---- the manifest's record --------------------------------------------------------------
def _sparse_memory(cfg, data) -> dict | None:
    """The manifest's word on a flow release that kept its O/D space sparse, or a range
    release its domain; None otherwise."""
    from hierdp_core.flows.data import FlowData
    from hierdp_core.mechanisms.base import keeps_flows_sparse
    from hierdp_core.memory_of_data import plan_of_data
    from hierdp_core.memory_sparse import sparse_record
    from hierdp_core.queries.sparse_ranges import SparseRangeData

    flows = keeps_flows_sparse(cfg.mechanism) and isinstance(data, FlowData)
    if not flows and not isinstance(data, SparseRangeData):
        return None
    return sparse_record(plan_of_data(data, cfg.mechanism))


def input_spec(cfg, run, data, path: Path) -> dict:
    """The manifest's ``input``: the file name, the query and the roles of its columns,
    how the table was prepared (the ``--wide`` patterns as declared, never the columns they
    matched; the ``--missing`` and ``--duplicates`` policies, whether units may skip a level;
    never how many cells, codes or rows that touched) and the
    declarations (`structure_spec`), and the ``--max-memory`` the release was bounded by."""
    from hierdp_core.cli.limits import memory_limit

    spec = {"file": path.name, "query": cfg.query, "levels": list(cfg.levels),
            "count_column": cfg.count_column,
            "category_columns": list(cfg.category_columns or cfg.category_values),
            "local_codes": cfg.local_codes,
            "missing": cfg.missing or "error", "ragged": bool(cfg.ragged),
            "duplicates": cfg.duplicates or "error"}
    if cfg.encoding:  # the input's and the declaration files' (`hierdp evaluate` reads them)
        spec["encoding"] = cfg.encoding
    if cfg.split_goal:
        spec["split_goal"] = cfg.split_goal  # public: chosen from the tree's shape only
    if cfg.wide:  # as declared: the columns they matched would tell the table's header
        spec.update(wide_patterns=_parts(cfg.wide), wide_name=_melted_columns(cfg)[0])
    if cfg.query == "group-sizes":
        from hierdp_core.cli.inputs import min_size_of

        spec.update(group_column=cfg.group_column, size_column=cfg.size_column,
                    max_size=cfg.max_size, min_size=min_size_of(cfg))
    if cfg.query == "ranges":
        spec.update(attribute=cfg.attribute, workload=cfg.workload,
                    domain=domain_text(cfg.domain))
    if cfg.query == "flows":
        spec.update(origin_levels=list(cfg.origin_levels),
                    destination_levels=list(cfg.destination_levels),
                    tree=cfg.tree or "destination")
    memory = _sparse_memory(cfg, data)
    if memory:
        spec["memory"] = memory
    spec.update(structure_spec(cfg, data), max_memory=memory_limit(run))
    return spec


def structure_spec(cfg, data) -> dict:
    """The declarations of a release, for its manifest's ``input`` (so that `cmd_evaluate`
    can rebuild the data): ``structure`` ('declared' or 'from-data'), the geography file's
    name and sha256, the declared category values and the invariants."""
    from hierdp_core.export import file_sha256

    spec = {"structure": "declared" if getattr(data, "declared_structure", False)
            else "from-data", "invariants": list(cfg.invariants)}
    for flag in ("geography", "groups"):
        if cfg.data.get(flag):
            path = Path(cfg.data[flag])
            spec[flag] = {"file": path.name, "sha256": file_sha256(path)}
    if cfg.category_values:
        spec["category_values"] = {column: list(v) for column, v in cfg.category_values.items()}
    if cfg.names:
        spec["names"] = ",".join(f"{level}={column}" for level, column in cfg.names.items())
    return spec


def evaluate_args(args, spec: dict) -> tuple[object, pd.DataFrame]:
    """The settings (a `ReleaseConfig`, without a mechanism) and the true input table that
    rebuild a release's data from its manifest's ``input`` (``spec``) for ``hierdp
    evaluate`` (``args``: its parsed command line), the input and the geography read in
    ``--encoding``, else the release's."""
    from hierdp_core.config import ReleaseConfig
    from hierdp_core.data.loaders import read_table
    from hierdp_core.declared_values import parse_domain

    encoding = getattr(args, "encoding", None) or spec.get("encoding")  # the release's
    cfg = ReleaseConfig(
        mechanism="", query=spec.get("query", "counts"), levels=tuple(spec["levels"]),
        count_column=spec.get("count_column"),
        category_columns=tuple(spec.get("category_columns") or ()),
        local_codes=bool(spec.get("local_codes")), group_column=spec.get("group_column"),
        size_column=spec.get("size_column"), max_size=spec.get("max_size"),
        min_size=spec.get("min_size", 0),
        origin_levels=tuple(spec.get("origin_levels") or ()),
        destination_levels=tuple(spec.get("destination_levels") or ()),
        tree=spec.get("tree"), attribute=spec.get("attribute"), workload=spec.get("workload"),
        domain=parse_domain(spec["domain"]) if spec.get("domain") else None,
        wide=",".join(spec.get("wide_patterns") or []) or None,
        wide_name=spec.get("wide_name"), missing=spec.get("missing") or "error",
        duplicates=spec.get("duplicates") or "sum",  # written before: summed
        ragged=bool(spec.get("ragged")), encoding=encoding, **evaluate_structure(args, spec))
    return cfg, read_table(Path(args.input), encoding=encoding)


def evaluate_structure(args, spec: dict) -> dict:
    """The structure settings that rebuild a release's data: its declarations from the
    manifest, and the geography and groups files (`recorded_file`)."""
    data = {"file": args.input}
    if spec.get("structure", "from-data") != "declared" and not spec.get("geography"):
        return {"structure": "from-data", "data": data}
    if spec.get("groups"):
        data["groups"] = recorded_file(args, spec, "groups", "groups file")
    data["geography"] = recorded_file(args, spec, "geography", "geography")
    return {"structure": "declared", "data": data,
            "category_values": {c: tuple(v) for c, v in
                                (spec.get("category_values") or {}).items()},
            "invariants": tuple(spec.get("invariants") or ())}


def recorded_file(args, spec: dict, flag: str, what: str) -> str:
    """The path of a declaration file the manifest records under ``flag`` (``--FLAG``,
    else the recorded file name beside the input or in the current folder), checked
    against the recorded sha256."""
    from hierdp_core.export import file_sha256

    recorded = spec.get(flag) or {}
    given = getattr(args, flag, None)
    path = Path(given) if given else None
    if path is None and recorded.get("file"):
        near = [Path(args.input).parent / recorded["file"], Path(recorded["file"])]
        path = next((p for p in near if p.is_file()), None)
    if path is None or not path.is_file():
        raise InputError(f"the release was made with the {what} {recorded.get('file')!r}; "
                         f"give its path with --{flag} FILE")
    if recorded.get("sha256") and file_sha256(path) != recorded["sha256"]:
        raise InputError(f"{path} is not the {what} of this release (its sha256 differs "
                         "from the manifest's)")
    return str(path)

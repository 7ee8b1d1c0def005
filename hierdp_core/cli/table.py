"""What a release reads and how: the input columns (a large file is read by those only),
the table's preparation before its data is built (``--wide`` melted into long form, empty
count cells by ``--missing``, units that skip a level by ``--ragged``; see
`hierdp_core.data.reshape`), and the manifest's record of it all, from which ``hierdp
evaluate`` rebuilds the data.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from hierdp_core.cli.inputs import csv_list, name_columns
from hierdp_core.errors import InputError


# ---- the columns read ------------------------------------------------------------------
def input_columns(args, header: list[str] | None = None) -> list[str] | None:
    """The input columns a release reads (level, count, category, name, attribute, group,
    size and O/D level columns, the ``--wide`` columns), so that a large file is read by
    those columns only. ``header``: the file's column names, to resolve ``--wide``
    patterns; None (read every column) for a pattern without them."""
    columns = _role_columns(args)
    spec = getattr(args, "wide", None)
    if spec:
        from hierdp_core.data.reshape import wide_columns

        if header is not None:
            columns += wide_columns(spec, header)
        elif any(ch in part for part in _parts(spec) for ch in "*?["):
            return None
        else:
            columns += _parts(spec)
    return list(dict.fromkeys(c for c in columns if c))


def _role_columns(args) -> list[str]:
    """The columns of the table given a role (levels, categories, names, count, attribute,
    group, size), without the columns ``--wide`` makes."""
    columns = [*csv_list(getattr(args, "levels", None)),
               *csv_list(getattr(args, "origin_levels", None)),
               *csv_list(getattr(args, "destination_levels", None)),
               *csv_list(getattr(args, "categories", None)),
               *name_columns(getattr(args, "names", None)).values()]
    columns += [str(spec).partition("=")[0].strip()
                for spec in getattr(args, "category_values", None) or []]
    columns += [getattr(args, key, None) for key in
                ("count_column", "attribute", "group_column", "size_column")]
    melted = set(_melted_columns(args)) if getattr(args, "wide", None) else set()
    return list(dict.fromkeys(c for c in columns if c and c not in melted))


def _parts(spec: str | list[str]) -> list[str]:
    """The names and patterns of ``--wide`` (a comma list; a list in a manifest)."""
    return csv_list(spec) if isinstance(spec, str) else list(spec)


def read_input(args, path: Path) -> pd.DataFrame:
    """The input table, read by the columns the release uses (`input_columns`; a
    ``--wide`` pattern is resolved against the file's header alone)."""
    from hierdp_core.data.loaders import read_header, read_table

    encoding = getattr(args, "encoding", None)
    header = read_header(path, encoding=encoding) if getattr(args, "wide", None) else None
    return read_table(path, columns=input_columns(args, header), encoding=encoding)


def lookalike_warning(args, table) -> str | None:
    """A warning naming up to five pairs of codes of the same level that differ only by
    leading zeros or surrounding whitespace (they stay distinct strings), or None."""
    from hierdp_core.data.loaders import lookalike_codes

    columns = [*csv_list(getattr(args, "levels", None)),
               *csv_list(getattr(args, "origin_levels", None)),
               *csv_list(getattr(args, "destination_levels", None))]
    pairs = lookalike_codes(table, list(dict.fromkeys(columns)))
    if not pairs:
        return None
    shown = ", ".join(f"{col} {a!r} and {b!r}" for col, a, b in pairs)
    return (f"codes that differ only by leading zeros or whitespace: {shown} (codes are "
            "text: leading zeros make different units; check these are meant)")


# ---- preparing the table ---------------------------------------------------------------
def _melted_columns(args) -> tuple[str, str]:
    """(the column of the wide columns' names, the column of their cells) of ``--wide``:
    the size column (group sizes), the attribute (ranges), else ``--wide-name``; the count
    column (``--count-column``, else ``count``)."""
    query = getattr(args, "query", "counts")
    named = {"group-sizes": getattr(args, "size_column", None),
             "ranges": getattr(args, "attribute", None)}.get(query)
    return (named or getattr(args, "wide_name", None) or "category",
            args.count_column or "count")


def with_wide_roles(args, columns: list[str]) -> argparse.Namespace:
    """A copy of ``args`` whose roles name the melted columns of ``--wide`` (the wide
    ``columns``): the count column, and the category column, whose values are those
    ``--category-values NAME=...`` declares (never the header: without a declaration the
    column names are its values only with ``--structure-from-data``, for exploration); the
    size column (group sizes) or the attribute (ranges)."""
    query = getattr(args, "query", "counts")
    if query == "flows":
        raise InputError("--wide does not apply to flows: give one row per origin and "
                         "destination pair (long form)")
    if query == "group-sizes" and getattr(args, "group_column", None):
        raise InputError("--wide gives the number of groups per size (one column per size); "
                         "it does not go with --group-column (one row per person)")
    name, value = _melted_columns(args)
    out = argparse.Namespace(**vars(args))
    out.count_column, out.wide_columns = value, list(columns)
    if query == "group-sizes":
        out.size_column = name
    elif query == "ranges":
        out.attribute = name
    else:
        out.categories = ",".join(dict.fromkeys([*csv_list(args.categories), name]))
        declared = [str(v).partition("=")[0].strip() for v in args.category_values or []]
        if name not in declared:
            if not getattr(args, "structure_from_data", False):
                from hierdp_core.data.wide_labels import column_label

                example = column_label(columns[0], _parts(args.wide))
                raise InputError(f"--wide: declare the values of {name!r} with "
                                 f"--category-values {name}=V1|V2|... (a column's name or the "
                                 f"part its pattern matches, e.g. {example}; a value no column "
                                 "has is released as 0): the confidential table's header is "
                                 "not a declaration; or --structure-from-data to explore")
            unusable = [c for c in columns if "|" in c]
            if unusable:
                raise InputError(f"wide column names become category values and cannot "
                                 f"hold '|': {unusable[:5]}")
            out.category_values = [*(args.category_values or []),
                                   f"{name}={'|'.join(columns)}"]
    return out


def wide_labels(args, columns: list[str]):
    """What each wide column stands for (`hierdp_core.data.wide_labels`): its declared
    category value (counts; a Categorical whose categories are the declaration), or its
    size (group sizes, top ``--max-size``) or attribute value (ranges, top the end of
    ``--domain``)."""
    import pandas as pd

    from hierdp_core.data.wide_labels import declared_labels, integer_labels
    from hierdp_core.structure import parse_category_values, parse_domain

    parts = _parts(args.wide)
    if args.query == "group-sizes":
        return integer_labels(columns, parts, top=args.max_size, role="size")
    if args.query == "ranges":
        top = parse_domain(args.domain)[1] if getattr(args, "domain", None) else None
        return integer_labels(columns, parts, top=top, role=f"{args.attribute} value")
    name = _melted_columns(args)[0]
    values = parse_category_values(args.category_values)[name]
    return pd.Categorical(declared_labels(columns, parts, values, name), categories=values)


def prepare_input(args, table: pd.DataFrame,
                  ) -> tuple[argparse.Namespace, pd.DataFrame, str]:
    """The table a release is built from, the arguments naming its columns, and one note
    for after the release ('' when nothing happened): ``--wide`` melted into long form
    (`with_wide_roles`), empty count cells handled by ``--missing``, and with ``--ragged``
    units that skip a level passed through it (else an empty level code is an error)."""
    from hierdp_core.data.reshape import apply_missing, melt_wide, preparation_note, prepare
    from hierdp_core.data.reshape import wide_columns as resolve

    policy = getattr(args, "missing", None) or "error"
    wide = resolve(args.wide, table.columns) if getattr(args, "wide", None) else []
    if wide:
        ids = [c for c in _role_columns(args) if c in table.columns]
        args = with_wide_roles(args, wide)
        if policy == "error":  # named by the wide columns and rows of the table
            apply_missing(table, wide, policy)
        name, value = _melted_columns(args)
        table = melt_wide(table, wide, id_columns=ids, name=name, value_name=value,
                          labels=wide_labels(args, wide))
    level_sets = ([csv_list(args.origin_levels), csv_list(args.destination_levels)]
                  if args.query == "flows" else [csv_list(args.levels)])
    table, handled, passed = prepare(table, level_sets, args.count_column, missing=policy,
                                     ragged=bool(getattr(args, "ragged", False)),
                                     names=name_columns(getattr(args, "names", None)))
    return args, table, preparation_note(policy, handled, passed)


# ---- the manifest's record --------------------------------------------------------------
def _sparse_memory(args, data) -> dict | None:
    """The manifest's word on a flow release that kept its O/D space sparse, or a range
    release its domain; None otherwise."""
    from hierdp_core.flows.data import FlowData
    from hierdp_core.mechanisms.base import keeps_flows_sparse
    from hierdp_core.memory_of_data import plan_of_data
    from hierdp_core.memory_sparse import sparse_record
    from hierdp_core.queries.sparse_ranges import SparseRangeData

    flows = keeps_flows_sparse(args.mechanism) and isinstance(data, FlowData)
    if not flows and not isinstance(data, SparseRangeData):
        return None
    return sparse_record(plan_of_data(data, args.mechanism))


def input_spec(args, data, path: Path) -> dict:
    """The manifest's ``input``: the file name, the query and the roles of its columns,
    how the table was prepared (the ``--wide`` columns and patterns, the ``--missing`` policy, whether
    units may skip a level; never how many cells or codes that touched) and the
    declarations (`structure_spec`), and the ``--max-memory`` the release was bounded by."""
    from hierdp_core.cli.limits import memory_limit

    spec = {"file": path.name, "query": args.query, "levels": csv_list(args.levels),
            "count_column": args.count_column,
            "category_columns": csv_list(args.categories), "local_codes": args.local_codes,
            "missing": getattr(args, "missing", None) or "error",
            "ragged": bool(getattr(args, "ragged", False))}
    if getattr(args, "split_goal", None):
        spec["split_goal"] = args.split_goal  # public: chosen from the tree's shape only
    if getattr(args, "wide_columns", None):
        spec.update(wide=list(args.wide_columns), wide_patterns=_parts(args.wide),
                    wide_name=_melted_columns(args)[0])
    if args.query == "group-sizes":
        from hierdp_core.cli.inputs import min_size_of

        spec.update(group_column=args.group_column, size_column=args.size_column,
                    max_size=args.max_size, min_size=min_size_of(args))
    if args.query == "ranges":
        spec.update(attribute=args.attribute, workload=args.workload, domain=args.domain)
    if args.query == "flows":
        spec.update(origin_levels=csv_list(args.origin_levels),
                    destination_levels=csv_list(args.destination_levels),
                    tree=args.tree or "destination")
    memory = _sparse_memory(args, data)
    if memory:
        spec["memory"] = memory
    spec.update(structure_spec(args, data), max_memory=memory_limit(args))
    return spec


def structure_spec(args, data) -> dict:
    """The declarations of a release, for its manifest's ``input`` (so that `cmd_evaluate`
    can rebuild the data): ``structure`` ('declared' or 'from-data'), the geography file's
    name and sha256, the declared category values and the invariants."""
    from hierdp_core.export import file_sha256
    from hierdp_core.structure import parse_category_values

    spec = {"structure": "declared" if getattr(data, "declared_structure", False)
            else "from-data",
            "invariants": list(dict.fromkeys(args.invariant or []))}
    for flag in ("geography", "groups"):
        if getattr(args, flag, None):
            path = Path(getattr(args, flag))
            spec[flag] = {"file": path.name, "sha256": file_sha256(path)}
    values = parse_category_values(getattr(args, "category_values", None))
    if values:
        spec["category_values"] = {column: list(v) for column, v in values.items()}
    if getattr(args, "names", None):
        spec["names"] = args.names
    return spec


def evaluate_args(args, spec: dict) -> tuple[argparse.Namespace, pd.DataFrame]:
    """The arguments and the true input table that rebuild a release's data from its
    manifest's ``input`` (``spec``) for ``hierdp evaluate``."""
    from hierdp_core.data.loaders import read_table

    ns = argparse.Namespace(levels=",".join(spec["levels"]),
                            count_column=spec.get("count_column"),
                            categories=",".join(spec.get("category_columns") or []),
                            local_codes=bool(spec.get("local_codes")),
                            query=spec.get("query", "counts"),
                            group_column=spec.get("group_column"),
                            size_column=spec.get("size_column"),
                            max_size=spec.get("max_size"),
                            min_size=spec.get("min_size", 0),
                            origin_levels=",".join(spec.get("origin_levels") or []),
                            destination_levels=",".join(spec.get("destination_levels") or []),
                            tree=spec.get("tree"), attribute=spec.get("attribute"),
                            workload=spec.get("workload"), domain=spec.get("domain"),
                            wide=",".join(spec.get("wide_patterns") or spec.get("wide")
                                          or []) or None,
                            wide_name=spec.get("wide_name"),
                            missing=spec.get("missing"), ragged=bool(spec.get("ragged")),
                            names=None, **evaluate_structure(args, spec))
    return ns, read_table(Path(args.input), encoding=getattr(args, "encoding", None))


def evaluate_structure(args, spec: dict) -> dict:
    """The structure arguments that rebuild a release's data: its declarations from the
    manifest, and the geography and groups files (`recorded_file`)."""
    if spec.get("structure", "from-data") != "declared" and not spec.get("geography"):
        return {"structure_from_data": True, "geography": None, "category_values": None,
                "invariant": None, "groups": None}
    values = spec.get("category_values") or {}
    groups = (recorded_file(args, spec, "groups", "groups file")
              if spec.get("groups") else None)
    return {"structure_from_data": False,
            "geography": recorded_file(args, spec, "geography", "geography"),
            "category_values": [f"{c}={'|'.join(v)}" for c, v in values.items()],
            "invariant": spec.get("invariants"), "groups": groups}


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

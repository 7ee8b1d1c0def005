"""How the command line turns a prepared input table (`hierdp_core.cli.table`) into the
data object of its query (counts, group sizes, flows, ranges), shaped by the declared
structure (``--geography``, ``--category-values``, ``--domain``) or by the data.

Bad input is a `hierdp_core.errors.HierdpError` whose message the CLI prints as one line.
"""

from __future__ import annotations

import math
from pathlib import Path

from hierdp_core.errors import InputError, LevelOrderError

#: ``--min-size``'s default: a household has at least one member
DEFAULT_MIN_SIZE = 1


def csv_list(text: str | None) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


def split_weights(text: str | None) -> list[float] | None:
    """``--split``'s weights (root first), or None without it: numbers >= 0, not all zero,
    else an `InputError` naming the first bad one as typed."""
    if not text:
        return None
    parts = csv_list(text)
    try:
        weights = [float(w) for w in parts]
    except ValueError:
        raise InputError(f"--split takes numbers separated by commas, got {text!r}") from None
    bad = next((typed for typed, w in zip(parts, weights, strict=True)
                if not math.isfinite(w) or w < 0), None)
    if bad is not None:
        raise InputError("--split's shares must be non-negative numbers (one per level, root "
                         f"first), got {bad!r}")
    if weights and not any(weights):
        raise InputError(f"--split's shares must not all be zero, got {text!r}")
    return weights


def in_options(exc, cfg, run=None):
    """``exc`` as the command line says it: levels named finest first (`LevelOrderError`)
    by the option that named them (``--levels go from the coarsest to the finest: did you
    mean state,county?``); any other error as it is."""
    if isinstance(exc, LevelOrderError):
        for option in ("levels", "origin_levels", "destination_levels"):
            if tuple(getattr(cfg, option)) == exc.named:
                return LevelOrderError(exc.named, exc.meant,
                                       f"--{option.replace('_', '-')}", ",")
    return exc


def param_values(pairs: list[str] | None) -> dict:
    """``--param NAME=VALUE`` pairs -> {NAME: VALUE} (text; the mechanism types them)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise InputError(f"--param takes NAME=VALUE, got {pair!r}")
        name, value = pair.split("=", 1)
        out[name.strip()] = value.strip()
    return out


def mechanism_params(config) -> dict:
    """The mechanism parameters of ``config`` as text, as ``--param`` gives them (a
    configuration file's ``true`` is ``"true"``): the mechanism types them."""
    return {str(k).strip(): (str(v).lower() if isinstance(v, bool) else str(v)).strip()
            for k, v in config.params.items()}


def split_argument(config):
    """The ``split`` a mechanism takes for ``config``: its weights (a list), else its preset
    (``"uniform"`` by default)."""
    if isinstance(config.split, tuple):
        return list(config.split)
    return config.split or "uniform"


def input_data(cfg, run, table):
    """The data object of ``cfg.query`` (a `ReleaseConfig`; ``run``: its `RunOptions`):
    CountData (counts), GroupSizeData (person records with ``--group-column``, or size
    histograms with ``--size-column`` and ``--count-column``), FlowData or RangeData,
    shaped by the declared structure (``--geography``, ``--category-values``,
    ``--domain``) or, with ``--structure-from-data``, by the data (exploration)."""
    from hierdp_core.data.loaders import check_column_roles

    query = cfg.query
    if query == "flows":
        return _flow_data(cfg, table)
    levels, names = list(cfg.levels), dict(cfg.names)
    check_column_roles(cfg.count_column, levels=levels, categories=list(cfg.category_columns),
                       attributes=cfg.attribute, group_columns=cfg.group_column,
                       size_columns=cfg.size_column)
    if not levels:
        raise InputError(f"{query} need --levels, the level columns coarse to fine")
    if query == "ranges":
        return _range_data(cfg, run, table, levels, names)
    if query == "group-sizes":
        from hierdp_core.groupsizes.data import (
            group_size_data_from_histograms,
            group_size_data_from_people,
        )

        check_group_size_settings(cfg)
        geography = declared_geography(cfg, levels, names, query)
        shape = ({"geography": geography} if geography is not None
                 else {"local_codes": cfg.local_codes, "name_columns": names})
        sizes = {"max_size": cfg.max_size, "min_size": min_size_of(cfg),
                 "group_counts": declared_groups(cfg, geography, levels),
                 "max_cells": cell_limit(cfg, run)}
        if cfg.group_column:
            return group_size_data_from_people(
                table, levels, cfg.group_column, count_column=cfg.count_column,
                **sizes, **shape)
        if not cfg.count_column:
            raise InputError("--size-column needs --count-column (the number of groups)")
        return group_size_data_from_histograms(
            table, levels, cfg.size_column, cfg.count_column,
            duplicates=cfg.duplicates or "error", **sizes, **shape)
    from hierdp_core.queries.counts import count_data_from_table

    categories, declared = declared_categories(cfg)
    geography = declared_geography(cfg, levels, names, query,
                                   undeclared=[c for c in categories if c not in declared])
    shape = ({"geography": geography} if geography is not None
             else {"local_codes": cfg.local_codes, "name_columns": names})
    return count_data_from_table(table, levels, count_column=cfg.count_column,
                                 category_columns=categories, category_values=declared,
                                 duplicates=cfg.duplicates or "error",
                                 max_cells=cell_limit(cfg, run), **shape)


def check_group_size_settings(cfg) -> None:
    """Refuse group-size settings that do not fit together (one line each)."""
    if cfg.max_size is None:
        raise InputError("group sizes need --max-size N, the public top-code (sizes above N "
                         "count as N); choose it without looking at the data")
    if bool(cfg.group_column) == bool(cfg.size_column):
        raise InputError("group sizes need either --group-column (one row per person) or "
                         "--size-column with --count-column (groups per size)")


def min_size_of(cfg) -> int:
    """``--min-size``: the public smallest group size m (default 1: a household has a
    member); smaller groups count as m."""
    return DEFAULT_MIN_SIZE if cfg.min_size is None else cfg.min_size


def declared_groups(cfg, geography, levels):
    """The `DeclaredGroups` of ``--groups FILE`` over the declared geography, or None
    without it (the numbers of groups are then counted from the records)."""
    path = cfg.data.get("groups")
    if not path:
        return None
    if geography is None:
        raise InputError("--groups needs --geography (its regions are the geography's "
                         "leaves); it does not go with --structure-from-data")
    from hierdp_core.groupsizes.declared_groups import read_declared_groups

    return read_declared_groups(path, geography, levels)


def cell_limit(cfg, run) -> int:
    """``--max-cells``, else the default sized to this machine's memory; never more cells
    than ``--max-memory`` holds with the mechanism (`hierdp_core.cli.memory`)."""
    from hierdp_core.cli.limits import cells_within_memory
    from hierdp_core.data.loaders import default_max_cells

    value = run.max_cells
    return min(int(value) if value is not None else default_max_cells(),
               cells_within_memory(cfg, run))


def declared_categories(cfg) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """The category columns (``--categories``, else the columns of ``--category-values``)
    and their declared values."""
    declared = dict(cfg.category_values)
    categories = list(cfg.category_columns) or list(declared)
    extra = [c for c in declared if c not in categories]
    if extra:
        raise InputError(f"--category-values declares {extra}, which are not in --categories "
                         f"{categories}")
    return categories, declared


def declared_geography(cfg, levels, names, query: str, *, undeclared=(), flows=None):
    """The declared geography (``--geography``), or None with ``--structure-from-data``;
    without either, an error naming the flags. ``undeclared``: category columns without
    declared values (an error with a geography); ``flows``: (origin, destination) levels."""
    path = cfg.data.get("geography")
    from_data = cfg.structure == "from-data"
    needs = {"counts": "--geography FILE (the public units; with --category-values "
                       "COL=V1|V2|... for each category column)",
             "ranges": "--geography FILE (the public units) and --domain LO-HI",
             "group-sizes": "--geography FILE (the public regions)",
             "flows": "--geography FILE (the public areas of both ends)"}[query]
    if path and from_data:
        raise InputError("give --geography (a declared structure) or --structure-from-data "
                         "(exploration), not both")
    if from_data:
        return None
    if not path:
        raise InputError(f"a {query} release needs a declared public structure: {needs}; or "
                         "--structure-from-data to read it from the confidential data "
                         "(exploration only: the release is not publishable)")
    if undeclared:
        raise InputError(f"declare the values of the category column(s) {list(undeclared)} "
                         f"with --category-values COL=V1|V2|... (or use --structure-from-data "
                         "for exploration)")
    return _read_geography_once(Path(path), tuple(levels), tuple((names or {}).items()),
                                bool(cfg.local_codes), bool(cfg.ragged), cfg.encoding,
                                tuple(map(tuple, flows)) if flows is not None else None)


#: geographies read by this process, by file (its path, size and modification time) and
#: reading options: a release asks for its geography more than once (memory plan, data)
_READ: dict[tuple, object] = {}


def _read_geography_once(path: Path, levels: tuple, names: tuple, local_codes: bool,
                         ragged: bool, encoding: str | None, flows: tuple | None):
    """The geography file ``path`` read with these options, or the same object read earlier
    in this process while the file is unchanged (a geography is public and not modified)."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, levels, names,
               local_codes, ragged, encoding, flows)
    except OSError:
        key = None  # the reader says what is wrong with the file
    if key is not None and key in _READ:
        return _READ[key]
    if flows is not None:  # columns named as either end or by their common names
        from hierdp_core.flows.data import read_flow_geography

        geography = read_flow_geography(path, *flows, ragged=ragged, local_codes=local_codes,
                                        encoding=encoding)
    else:
        from hierdp_core.structure import read_geography

        geography = read_geography(path, list(levels), name_columns=dict(names) or None,
                                   local_codes=local_codes, ragged=ragged, encoding=encoding)
    if key is not None:
        _READ.clear()  # one file at a time: a long-lived process does not accumulate them
        _READ[key] = geography
    return geography


def _flow_data(cfg, table):
    """FlowData from trips (one row per trip) or an O/D table with ``--count-column``."""
    from hierdp_core.flows.data import flow_data_from_table

    origin, destination = flow_levels(cfg)
    geography = declared_geography(cfg, origin, {}, "flows", flows=(origin, destination))
    return flow_data_from_table(table, origin, destination, cfg.count_column,
                                tree=cfg.tree or "destination", geography=geography,
                                duplicates=cfg.duplicates or "error",
                                local_codes=bool(cfg.local_codes))


def flow_levels(cfg) -> tuple[list[str], list[str]]:
    """(origin level columns, destination level columns) of ``--origin-levels`` and
    ``--destination-levels``, checked (one line each)."""
    from hierdp_core.data.loaders import check_column_roles

    origin, destination = list(cfg.origin_levels), list(cfg.destination_levels)
    check_column_roles(cfg.count_column, origin_levels=origin, destination_levels=destination)
    if not origin or not destination:
        raise InputError("flows need --origin-levels and --destination-levels, e.g. "
                         "--origin-levels o_state,o_county --destination-levels "
                         "d_state,d_county")
    if len(origin) != len(destination):
        raise InputError("give the same number (at least one) of origin and destination "
                         f"levels, coarse to fine; got {origin} and {destination}")
    return origin, destination


def _range_data(cfg, run, table, levels, names):
    """RangeData over ``--attribute`` with the ``--workload`` ranges."""
    from hierdp_core.queries.ranges import range_data_from_table
    from hierdp_core.ranges.workloads import (
        WORKLOAD_KINDS,
        bands,
        named_workload,
        read_workload_file,
    )

    if not cfg.attribute:
        raise InputError("ranges need --attribute, the ordered attribute column (e.g. age)")
    from hierdp_core.cli.limits import memory_limit
    from hierdp_core.data.loaders import check_cells
    from hierdp_core.memory_plan import table_nodes
    from hierdp_core.queries.sparse_ranges import domain_kept_sparse

    domain = cfg.domain
    max_cells = cell_limit(cfg, run)
    mechanism = cfg.mechanism or None  # none when evaluating: dense
    geography = declared_geography(cfg, levels, names, "ranges")
    # sparse or dense from public sizes: the declared units when there are (DESIGN 7)
    nodes = (geography.hierarchy.n_nodes if geography is not None
             else table_nodes(table, levels) or 1)
    shape = ({"geography": geography} if geography is not None
             else {"local_codes": cfg.local_codes, "name_columns": names})
    if domain is not None and domain_kept_sparse(mechanism, nodes, domain, memory_limit(run),
                                                 max_cells):
        return _sparse_range_data(cfg, table, levels, domain, max_cells, shape)
    if domain is not None:  # before the domain's values are made: the domain alone, then
        size = domain[1] - domain[0] + 1  # with the units (declared, or the data's leaves)
        check_cells(size, max_cells, f"at least 1 unit x a domain of {size:,} values")
        leaves = (geography.hierarchy.n_leaves if geography is not None
                  else len(table[levels].drop_duplicates()) if set(levels) <= set(table)
                  else 1)
        check_cells(leaves * size, max_cells,
                    f"{leaves:,} units x a domain of {size:,} values")
    if geography is not None and domain is None:
        raise InputError("a ranges release over a declared --geography needs --domain LO-HI, "
                         "the public range of the attribute (or --structure-from-data for "
                         "exploration)")
    data = range_data_from_table(table, levels, cfg.attribute, count_column=cfg.count_column,
                                 domain=domain, max_cells=max_cells,
                                 max_memory=memory_limit(run),
                                 duplicates=cfg.duplicates or "error", **shape)
    spec = cfg.workload or "prefix"
    n = len(data.values)
    if spec in WORKLOAD_KINDS:
        workload = named_workload(spec, n)
    elif Path(spec).suffix.lower() in (".csv", ".txt"):
        workload = read_workload_file(data.values, spec)
    else:
        workload = bands(data.values, spec)
    return data.with_workload(workload)


def _sparse_range_data(cfg, table, levels, domain, max_cells, shape):
    """`SparseRangeData` over ``--attribute``: ``domain`` kept sparse, answered by the
    released intervals (no ``--workload``, no ``--interval``: they hold every value);
    ``shape``: the declared geography, or the unit names and ``local_codes``."""
    from hierdp_core.queries.sparse_ranges import sparse_range_data_from_table

    for flag, value in (("--workload", cfg.workload not in (None, "prefix")),
                        ("--interval", cfg.interval)):
        if value:
            raise InputError(f"{flag} does not apply to a domain kept sparse ({cfg.mechanism} "
                             f"over {domain_text(domain)}: ranges are answered by the "
                             f"released intervals); drop {flag} or declare a smaller --domain")
    return sparse_range_data_from_table(table, levels, cfg.attribute, domain=domain,
                                        count_column=cfg.count_column, max_cells=max_cells,
                                        duplicates=cfg.duplicates or "error", **shape)


def domain_text(domain) -> str | None:
    """``--domain``'s text of a (LO, HI) domain, as a manifest records it; None for none."""
    return None if domain is None else f"{domain[0]}-{domain[1]}"


def name_columns(text: str | None) -> dict[str, str]:
    """'state=state_name,county=county_name' -> {'state': 'state_name', ...}."""
    pairs = {}
    for item in csv_list(text):
        level, sep, column = item.partition("=")
        if not sep or not level.strip() or not column.strip():
            raise InputError(f"--names wants LEVEL=COLUMN pairs, got {item!r}")
        pairs[level.strip()] = column.strip()
    return pairs


# ---- preparing the table ---------------------------------------------------------------

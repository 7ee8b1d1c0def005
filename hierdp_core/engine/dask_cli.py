"""``hierdp release --engine dask``: a counts release of a dataset on a Dask cluster
(`hierdp_core.engine.dask_engine`), with the CLI's declarations (``--geography``,
``--category-values``, or ``--structure-from-data`` for exploration) and its errors (one
line, exit status 2). Other query kinds, and the options that reshape a table in memory,
are refused in one line.
"""

from __future__ import annotations

from hierdp_core.cli_input import _categories, _geography, cell_limit, csv_list, name_columns
from hierdp_core.errors import InputError

SUPPORTED_QUERIES = ("counts",)
#: options of the in-memory engine that reshape the whole table (flag, its value when unset)
IN_MEMORY_ONLY = {"wide": None, "ragged": False, "missing": "error", "duplicates": "sum"}


def check_dask_args(args, mechanism) -> None:
    """Refuse, in one line, what the Dask engine does not run."""
    from hierdp_core.engine.blockwise import BLOCKWISE_MECHANISMS

    if args.query not in SUPPORTED_QUERIES:
        raise InputError(f"--engine dask releases counts (with or without categories), not "
                         f"{args.query}; run {args.query} with the in-memory engine (the "
                         "default, --engine memory)")
    if mechanism.info.name not in BLOCKWISE_MECHANISMS:
        raise InputError(f"--engine dask runs {', '.join(BLOCKWISE_MECHANISMS)}, not "
                         f"{mechanism.info.name!r}")
    for flag, unset in IN_MEMORY_ONLY.items():
        if getattr(args, flag, unset) not in (unset, None):
            raise InputError(f"--{flag} needs the in-memory engine; prepare the dataset "
                             "beforehand, or drop --engine dask")
    if args.scheduler and args.workers:
        raise InputError("--workers sizes a local cluster; a running scheduler (--scheduler) "
                         "has its own workers")
    if getattr(args, "names", None) and not getattr(args, "geography", None):
        raise InputError("with --engine dask, unit names come from the geography's name "
                         "columns (--geography with --names)")


def dask_release(args, mechanism, budget, source, choose_split):
    """(the Release, the `DatasetCounts` of its data, the input files for the fingerprint,
    the split goal's choice or None) of ``--engine dask``; ``choose_split(data)`` gives
    (choice, split) from the public shape."""
    from hierdp_core.engine.dask_engine import (
        DatasetCounts,
        close_client,
        dask_count_release,
        dataset_files,
        open_client,
        read_dataset,
    )

    check_dask_args(args, mechanism)
    files = dataset_files(args.input)
    levels = csv_list(args.levels)
    if not levels:
        raise InputError("counts need --levels, the level columns coarse to fine")
    categories, values = _categories(args)
    undeclared = [c for c in categories if c not in values]
    geography = _geography(args, levels, name_columns(getattr(args, "names", None)),
                           "counts", undeclared=undeclared)
    columns = list(dict.fromkeys([*levels, *categories,
                                  *([args.count_column] if args.count_column else [])]))
    client = open_client(args.scheduler, args.workers, args.memory_per_worker)
    try:
        frame = read_dataset(files, columns, [*levels, *categories])
        declared = geography is not None
        if geography is None:
            geography = units_of_data(frame, levels, args.local_codes)
        values = {**values, **{c: values_of_data(frame, c) for c in undeclared}}
        k = 1
        for column in categories:
            k *= len(values[column])
        from hierdp_core.data.loaders import check_cells

        h = geography.hierarchy
        check_cells(h.n_leaves * k, cell_limit(args), f"{h.n_leaves:,} units x {k:,} "
                    "categories")
        shape = DatasetCounts(h, (), tuple(categories), declared)
        choice, split = choose_split(shape)
        release, data = dask_count_release(
            client, frame, geography, levels, categories, values, args.count_column,
            mechanism, budget, declared=declared, split=split, source=source,
            **mechanism.params(**_mechanism_params(args)))
    finally:
        close_client(client)
    return release, data, files, choice


def _mechanism_params(args) -> dict:
    from hierdp_core.cli import _params

    return _params(args.param)


def units_of_data(frame, levels: list[str], local_codes: bool):
    """The geography of the units in the data (exploration: not publishable)."""
    from hierdp_core.structure import geography_from_table

    distinct = frame[levels].drop_duplicates().compute()
    return geography_from_table(distinct.reset_index(drop=True), levels,
                                local_codes=local_codes)


def values_of_data(frame, column: str) -> tuple[str, ...]:
    """The distinct values of a category column in the data (exploration)."""
    import pandas as pd

    from hierdp_core.structure import distinct_codes

    return tuple(distinct_codes(pd.Series(frame[column].unique().compute()), column))

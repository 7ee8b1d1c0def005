"""``hierdp release --engine dask``: a counts release of a dataset on a Dask cluster
(`hierdp_core.engine.dask_engine`), or of group sizes
(`hierdp_core.cli.dask_group_sizes`) or flows (`hierdp_core.cli.dask_flows`),
with the CLI's declarations (``--geography``,
``--category-values``, or ``--structure-from-data`` for exploration) and its errors (one
line, exit status 2). Other query kinds, and the options that reshape a table in memory,
are refused in one line. With ``--interval none`` and the default format
(``parquet-dataset``) the workers write the release's parts (`workers_write`), beside
``--out`` until they move in; otherwise the release is gathered here (intervals need it).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hierdp_core.cli.inputs import (
    csv_list,
    declared_categories,
    declared_geography,
)
from hierdp_core.errors import InputError

SUPPORTED_QUERIES = ("counts", "group-sizes", "flows")
#: options of the in-memory engine that reshape the whole table (flag, its value when unset)
IN_MEMORY_ONLY = {"wide": None, "ragged": False, "missing": "error", "encoding": None}


def check_dask_settings(cfg, run, mechanism) -> None:
    """Refuse, in one line, what the Dask engine does not run."""
    from hierdp_core.engine.blockwise import check_blockwise

    if cfg.query not in SUPPORTED_QUERIES:
        raise InputError(f"--engine dask releases counts (with or without categories), "
                         f"group sizes and flows, not {cfg.query}; run {cfg.query} with the "
                         "in-memory engine (the default, --engine memory)")
    if cfg.query == "counts":
        check_blockwise(mechanism)
    for flag, unset in IN_MEMORY_ONLY.items():
        if getattr(cfg, flag) not in (unset, None):
            raise InputError(f"--{flag} needs the in-memory engine; prepare the dataset "
                             "beforehand, or drop --engine dask")
    if run.scheduler and run.workers:
        raise InputError("--workers sizes a local cluster; a running scheduler (--scheduler) "
                         "has its own workers")
    if cfg.names and not cfg.data.get("geography"):
        raise InputError("with --engine dask, unit names come from the geography's name "
                         "columns (--geography with --names)")


def dask_cell_limit(cfg, run) -> int | None:
    """The most cells a Dask release may have: ``--max-cells`` when given; else none when
    the workers write the release (each holds its blocks within ``--memory-per-worker``,
    the client only the parts' names), else what ``--max-memory`` holds of the table
    gathered on the client (`DASK_CLIENT_BYTES_PER_CELL`)."""
    from hierdp_core.cli.limits import memory_limit
    from hierdp_core.memory_plan import DASK_CLIENT_BYTES_PER_CELL

    if run.max_cells is not None:
        return int(run.max_cells)
    if workers_write(cfg, run):
        return None
    return max(1, memory_limit(run) // DASK_CLIENT_BYTES_PER_CELL)


def workers_write(cfg, run) -> bool:
    """Whether the workers write the release (a parquet-dataset without intervals)."""
    return cfg.interval == 0.0 and csv_list(run.formats) in ([], ["parquet-dataset"])


def parts_folder_beside(out, overwrite: bool) -> Path:
    """A fresh hidden folder beside ``out`` for the workers' parts (moved in by renaming),
    after checking that ``out`` may be written: a refusal comes before the work."""
    from hierdp_core.atomic import check_target, check_writable
    from hierdp_core.export import MANIFEST

    out = Path(out)
    check_target(out, overwrite, MANIFEST)
    check_writable(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.hierdp-parts-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write the output folder {str(out)!r}: "
                         f"{(exc.strerror or str(exc)).lower()}") from None


def dask_release(cfg, run, mechanism, budget, source, choose_split, params: dict):
    """(the Release, the `DatasetCounts` of its data, the input files for the fingerprint,
    the split goal's choice or None) of ``--engine dask`` with the mechanism's ``params``;
    ``choose_split(data)`` gives (choice, split) from the public shape and is called once,
    after the checks of the data's size and before any noise is drawn."""
    from hierdp_core.engine.dask_engine import dataset_files, release_dataset

    check_dask_settings(cfg, run, mechanism)
    if cfg.query == "group-sizes":
        from hierdp_core.cli.dask_group_sizes import dask_group_size_release

        return dask_group_size_release(cfg, run, mechanism, budget, source, choose_split,
                                       params)
    if cfg.query == "flows":
        from hierdp_core.cli.dask_flows import dask_flow_release

        return dask_flow_release(cfg, run, mechanism, budget, source, choose_split, params)
    files = dataset_files(cfg.data["file"])
    levels = list(cfg.levels)
    if not levels:
        raise InputError("counts need --levels, the level columns coarse to fine")
    categories, values = declared_categories(cfg)
    geography = declared_geography(cfg, levels, dict(cfg.names), "counts",
                                   undeclared=[c for c in categories if c not in values])
    chosen = []

    def split(shape):
        chosen.append(choose_split(shape))
        return chosen[-1][1]

    parts = parts_folder_beside(run.out, run.overwrite) if workers_write(cfg, run) else None
    try:
        release, data = release_dataset(
            files, levels, mechanism, budget, geography=geography, categories=categories,
            category_values=values, count_column=cfg.count_column, split=split,
            source=source, local_codes=cfg.local_codes, max_cells=dask_cell_limit(cfg, run),
            scheduler=run.scheduler, workers=run.workers,
            memory_limit=run.memory_per_worker, parts_folder=parts,
            duplicates=cfg.duplicates or "error", **params)
    except BaseException:
        if parts is not None:
            shutil.rmtree(parts, ignore_errors=True)
        raise
    return release, data, files, chosen[0][0]

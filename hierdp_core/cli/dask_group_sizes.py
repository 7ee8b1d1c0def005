"""``hierdp release --engine dask --query group-sizes``: a group-size release of person
records on a Dask cluster (`hierdp_core.engine.dask_group_sizes`), with the options of the
in-memory engine (``--group-column``, ``--max-size``, ``--min-size``, ``--count-column``
persons a row, ``--geography`` or ``--structure-from-data``, ``--groups``) and its errors (one line, exit status 2).
Size histograms (``--size-column``) need the in-memory engine.
"""

from __future__ import annotations

from hierdp_core.cli.inputs import (
    cell_limit,
    check_group_size_settings,
    declared_geography,
    declared_groups,
    min_size_of,
)
from hierdp_core.errors import InputError


def dask_group_size_release(cfg, run, mechanism, budget, source, choose_split, params: dict):
    """(the Release, the `DatasetCounts` of its data, the input files for the fingerprint,
    the split goal's choice or None), as `hierdp_core.cli.dask.dask_release`."""
    from hierdp_core.engine.blockwise import check_blockwise
    from hierdp_core.engine.dask_engine import dataset_files
    from hierdp_core.engine.dask_group_sizes import release_group_sizes_dataset

    check_group_size_settings(cfg)
    check_blockwise(mechanism)
    if not cfg.group_column:
        raise InputError("--engine dask reads person records (--group-column); size "
                         "histograms (--size-column) need the in-memory engine")
    files = dataset_files(cfg.data["file"])
    levels = list(cfg.levels)
    if not levels:
        raise InputError("group-sizes need --levels, the level columns coarse to fine")
    geography = declared_geography(cfg, levels, dict(cfg.names), "group-sizes")
    chosen = []

    def split(shape):  # asked for once the data's size is checked: --split-goal is for counts
        chosen.append(choose_split(shape))
        return chosen[-1][1]

    release, data = release_group_sizes_dataset(
        files, levels, cfg.group_column, mechanism, budget, max_size=cfg.max_size,
        min_size=min_size_of(cfg), geography=geography,
        group_counts=declared_groups(cfg, geography, levels), count_column=cfg.count_column,
        split=split, source=source, local_codes=cfg.local_codes,
        max_cells=cell_limit(cfg, run), scheduler=run.scheduler, workers=run.workers,
        memory_limit=run.memory_per_worker, **params)
    return release, data, files, chosen[0][0]

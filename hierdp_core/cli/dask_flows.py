"""``hierdp release --engine dask --query flows``: an O/D flow release of trips on a Dask
cluster (`hierdp_core.engine.dask_flows`), with the options of the in-memory engine
(``--origin-levels``, ``--destination-levels``, ``--tree``, ``--count-column`` trips a row,
``--geography`` of both ends) and its errors (one line, exit status 2). The release is one
table file (``--format csv`` or ``parquet``, the default); ``--structure-from-data`` needs
the in-memory engine.
"""

from __future__ import annotations

from hierdp_core.cli.inputs import csv_list, declared_geography, flow_levels
from hierdp_core.errors import InputError


def dask_flow_release(cfg, run, mechanism, budget, source, choose_split, params: dict):
    """(the FlowRelease, the `FlowData` of its public shape, the input files for the
    fingerprint, the split goal's choice or None), as
    `hierdp_core.cli.dask.dask_release`."""
    from hierdp_core.engine.blockwise import check_blockwise
    from hierdp_core.engine.dask_engine import dataset_files
    from hierdp_core.engine.dask_flows import release_flows_dataset

    check_blockwise(mechanism)
    if "parquet-dataset" in csv_list(run.formats):
        raise InputError("a flow release is one table: --format csv or parquet")
    origin, destination = flow_levels(cfg)
    geography = declared_geography(cfg, origin, {}, "flows", flows=(origin, destination))
    if geography is None:
        raise InputError("flows on Dask need the declared areas (--geography); "
                         "--structure-from-data needs the in-memory engine")
    files = dataset_files(cfg.data["file"])
    chosen = []

    def split(shape):  # asked for once the trips are checked: --split-goal is for counts
        chosen.append(choose_split(shape))
        return chosen[-1][1]

    release, shape = release_flows_dataset(
        files, origin, destination, mechanism, budget, geography=geography,
        count_column=cfg.count_column, tree=cfg.tree or "destination", split=split,
        source=source, scheduler=run.scheduler, workers=run.workers,
        memory_limit=run.memory_per_worker, duplicates=cfg.duplicates or "error", **params)
    return release, shape, files, chosen[0][0]

"""Scale benchmark of ``--engine dask``: a synthetic national person file released on a
`distributed.LocalCluster`, checked against the in-memory engine.

1. Generates, state by state (bounded memory), a Parquet dataset of person records over
   the synthetic geography of `bench_counts` (nation > 52 states > 3,200 counties > tracts
   > block groups > blocks; ``--blocks`` leaves, ``--persons`` records in all) with sex and
   age-group categories, and the geography file (one row per block). Written under
   ``--out`` (default: a temporary folder, removed at the end).
2. Releases it with TopDown (seeded) on ``--workers`` worker processes, the workers writing
   the release's parts (`hierdp_core.engine.written`), timing the whole release (reading the
   geography, aggregation, measurement, consistency, writing) and recording every
   process's peak RSS (the client, which runs the scheduler, and each worker).
3. ``matches_in_memory``: a smaller dataset (``--compare-persons`` over ``--compare-blocks``)
   released by both engines with the same seed, values compared bit for bit.
4. ``speedup_2_workers``: the TopDown stage alone (measurement, consistency and the parts
   written, from leaf counts already on the workers where their blocks are placed,
   ``--stage-blocks`` leaves, totals only) on 1 worker, then on 2:
   the ratio of the wall times, and ``cpu_speedup_2_workers``, the ratio of the CPU seconds
   on the longest path (the client's plus the busiest worker's), which is what the wall
   ratio would be with a core per process (a loaded machine has fewer).

Prints ONE JSON object (progress on stderr). Examples::

    python benchmarks/bench_scale.py --persons 10000000 --blocks 1000000
    python benchmarks/bench_scale.py                     # 300M persons over 8M blocks
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bench_counts import level_names, synthetic_geography
from machine import machine_info

from hierdp_core.engine import dask_engine
from hierdp_core.engine.blockwise import (
    balanced_placement,
    block_sizes,
    blockwise_release,
    on_worker,
)
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.structure import read_geography

SEX = ("F", "M")
AGE = ("0-17", "18-44", "45-64", "65+")
AGE_SHARES = (0.22, 0.36, 0.25, 0.17)
PERSONS_PER_FILE = 4_000_000
SEED = 2026
LEVELS = tuple(level_names(5))  # state, county, tract, block_group, block


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    """This process's peak RSS (Linux ru_maxrss, KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---- the dataset ---------------------------------------------------------------------------
def write_dataset(folder: Path, persons: int, blocks: int, seed: int = SEED) -> dict:
    """The geography (``geography.parquet``) and the person files (``persons/``), written a
    run of states at a time; returns the counts."""
    rng = np.random.default_rng(seed)
    codes, pop, sizes = synthetic_geography(blocks, len(LEVELS), rng, population=persons)
    pq.write_table(pa.table({name: codes[g] for g, name in enumerate(LEVELS)}),
                   folder / "geography.parquet")
    (folder / "persons").mkdir()
    ends = np.cumsum(pop)
    start, index, written = 0, 0, 0
    while start < blocks:  # blocks start..stop-1 hold about PERSONS_PER_FILE persons
        stop = int(np.searchsorted(ends, written + PERSONS_PER_FILE, side="right")) + 1
        stop = min(max(stop, start + 1), blocks)
        leaf = np.repeat(np.arange(start, stop), pop[start:stop])
        table = {name: codes[g][leaf] for g, name in enumerate(LEVELS)}
        table["sex"] = pa.DictionaryArray.from_arrays(
            rng.integers(0, 2, leaf.size).astype(np.int8), list(SEX))
        table["age_group"] = pa.DictionaryArray.from_arrays(
            rng.choice(len(AGE), leaf.size, p=AGE_SHARES).astype(np.int8), list(AGE))
        pq.write_table(pa.table(table), folder / "persons" / f"part-{index:05d}.parquet")
        written, start, index = written + leaf.size, stop, index + 1
    return {"persons": int(written), "leaves": int(sizes[-1]), "files": index,
            "level_sizes": [int(s) for s in sizes]}


def release(folder: Path, client, seed: int = 7, parts_folder: Path | None = None):
    geography = read_geography(folder / "geography.parquet", list(LEVELS))
    return dask_engine.release_dataset(
        folder / "persons", list(LEVELS), "topdown", PrivacyBudget.pure(1.0),
        geography=geography, categories=["sex", "age_group"],
        category_values={"sex": SEX, "age_group": AGE}, source=NoiseSource(seed=seed),
        client=client, parts_folder=parts_folder)


def worker_peaks(client) -> list[float]:
    return sorted(client.run(peak_rss_mb).values())


def run_release(folder: Path, workers: int, memory: str) -> dict:
    client = dask_engine.open_client(workers=workers, memory_limit=memory)
    try:
        cpu = (time.process_time(), client.run(time.process_time))
        t0 = time.perf_counter()
        result, _ = release(folder, client, parts_folder=folder / "parts")
        seconds = time.perf_counter() - t0
        after = client.run(time.process_time)
        workers_mb = worker_peaks(client)
    finally:
        dask_engine.close_client(client)
    result.discard()
    return {"seconds": round(seconds, 2), "cells": result.rows, "parts": len(result.files),
            "cpu_seconds": {"client": round(time.process_time() - cpu[0], 1),
                            "workers": sorted(round(after[w] - cpu[1][w], 1) for w in after)},
            "peak_rss_mb": {"client": round(peak_rss_mb(), 1),
                            "workers": [round(w, 1) for w in workers_mb]}}


def matches_in_memory(folder: Path, persons: int, blocks: int, workers: int) -> dict:
    """Both engines on a small dataset, the same seed: identical values?"""
    from hierdp_core.queries.counts import count_data_from_table

    info = write_dataset(folder, persons, blocks, seed=SEED + 1)
    client = dask_engine.open_client(workers=workers)
    try:
        on_dask, _ = release(folder, client)
    finally:
        dask_engine.close_client(client)
    table = pd.read_parquet(folder / "persons")
    geography = read_geography(folder / "geography.parquet", list(LEVELS))
    data = count_data_from_table(table, list(LEVELS), category_columns=["sex", "age_group"],
                                 geography=geography,
                                 category_values={"sex": SEX, "age_group": AGE})
    in_memory = get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                                 source=NoiseSource(seed=7))
    return {"persons": info["persons"], "leaves": info["leaves"],
            "matches": bool(np.array_equal(on_dask.values, in_memory.values))}


# ---- the TopDown stage ---------------------------------------------------------------------
def block_leaves(n_leaves: int, block: int) -> np.ndarray:
    """A block's synthetic leaf totals, made on the worker."""
    rng = np.random.default_rng([SEED, block])
    return rng.poisson(37.0, (n_leaves, 1)).astype(np.int64)


def stage_seconds(blocks: int, workers: int, repeat: int) -> dict:
    """Wall seconds of `blockwise_release` (TopDown, totals) with the leaf counts already on
    ``workers`` workers, and the CPU seconds of the client and of each worker in the
    fastest run (on a loaded machine the wall time mostly waits for a core)."""
    from hierdp_core.hierarchy import build_from_codes

    codes, _, _ = synthetic_geography(blocks, len(LEVELS), np.random.default_rng(SEED),
                                      population=blocks)
    h, _ = build_from_codes(codes, list(LEVELS))
    del codes
    client = dask_engine.open_client(workers=workers)
    parts = Path(tempfile.mkdtemp(prefix="bench-scale-parts-"))
    try:
        tree = client.scatter(h, broadcast=True)
        sizes = block_sizes(h)
        placement = balanced_placement(sizes, sorted(client.scheduler_info()["workers"]))
        leaves = [client.submit(block_leaves, int(sizes[b]), b, pure=False,
                                **on_worker(placement, b)) for b in range(sizes.size)]
        client.gather(leaves)  # made and kept on the workers
        runs = []
        for _ in range(repeat):
            cpu = (time.process_time(), client.run(time.process_time))
            t0 = time.perf_counter()
            blockwise_release(get_mechanism("topdown"), h, None, leaves,
                              PrivacyBudget.pure(1.0), source=NoiseSource(seed=1),
                              executor=client, tree=tree, placement=placement,
                              parts_folder=parts).discard()
            wall = time.perf_counter() - t0
            after = client.run(time.process_time)
            runs.append({"seconds": round(wall, 2),
                         "client_cpu_seconds": round(time.process_time() - cpu[0], 2),
                         "worker_cpu_seconds": sorted(round(after[w] - cpu[1][w], 2)
                                                      for w in after)})
    finally:
        dask_engine.close_client(client)
        shutil.rmtree(parts, ignore_errors=True)
    return min(runs, key=lambda r: r["seconds"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--persons", type=int, default=300_000_000)
    p.add_argument("--blocks", type=int, default=8_000_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-per-worker", default="4GB")
    p.add_argument("--compare-persons", type=int, default=2_000_000)
    p.add_argument("--compare-blocks", type=int, default=200_000)
    p.add_argument("--stage-blocks", type=int, default=8_000_000)
    p.add_argument("--stage-repeat", type=int, default=2)
    p.add_argument("--skip", action="append", default=[],
                   choices=("release", "compare", "stage"), help="leave a part out")
    p.add_argument("--out", help="folder for the generated data (default: a temporary one, "
                                 "removed at the end)")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": "bench_scale", "engine": "dask", "workers": args.workers,
              "memory_per_worker": args.memory_per_worker, "machine": machine_info()}
    try:
        if "release" not in args.skip:
            say(f"writing {args.persons:,} persons over {args.blocks:,} blocks")
            t0 = time.perf_counter()
            (out / "national").mkdir()
            result.update(write_dataset(out / "national", args.persons, args.blocks))
            result["generate_seconds"] = round(time.perf_counter() - t0, 1)
            say("releasing on the cluster")
            result.update(run_release(out / "national", args.workers, args.memory_per_worker))
        if "compare" not in args.skip:
            say("comparing with the in-memory engine")
            (out / "compare").mkdir()
            result["matches_in_memory"] = matches_in_memory(
                out / "compare", args.compare_persons, args.compare_blocks, args.workers)
        if "stage" not in args.skip:
            say(f"TopDown stage on {args.stage_blocks:,} leaves, 1 then 2 workers")
            one = stage_seconds(args.stage_blocks, 1, args.stage_repeat)
            two = stage_seconds(args.stage_blocks, 2, args.stage_repeat)
            result["topdown_stage"] = {"leaves": args.stage_blocks, "1_worker": one,
                                       "2_workers": two}
            result["speedup_2_workers"] = round(one["seconds"] / two["seconds"], 2)
            # the same ratio if every process had a core of its own: CPU on the longest path
            result["cpu_speedup_2_workers"] = round(
                (one["client_cpu_seconds"] + one["worker_cpu_seconds"][-1])
                / (two["client_cpu_seconds"] + two["worker_cpu_seconds"][-1]), 2)
        result["machine_load_end"] = machine_info()["load_1min"]
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

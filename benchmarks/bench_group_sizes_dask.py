"""Group sizes on Dask against the in-memory engine: a synthetic household person file,
released with ``gs-topdown`` (seeded) by both engines, each in a process of its own.

1. Generates a Parquet dataset of person records (``--persons`` in all, in households of
   1 + Poisson(1.5) persons, household id ``hh``) over the synthetic geography of
   `bench_counts` (nation > 52 states > 3,200 counties > tracts > block groups > blocks,
   ``--blocks`` leaves), written a run of blocks at a time, and the geography file.
2. ``memory``: a child process reads the whole dataset with pandas, builds the size
   histograms (`group_size_data_from_people`) and releases; ``dask``: a
   `distributed.LocalCluster` of ``--workers`` worker processes reads, aggregates (a
   shuffle by household) and releases block by block. Each records wall seconds, CPU
   seconds (dask: the client's plus every worker's) and peak RSS per process.
3. ``matches_in_memory``: the two releases' values, bit for bit.

Prints ONE JSON object (progress on stderr)::

    python benchmarks/bench_group_sizes_dask.py --persons 3000000 --blocks 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from machine import machine_info
from synthetic_geography import level_names, synthetic_geography

from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.structure import read_geography

LEVELS = level_names(5)
MECHANISM, MAX_SIZE, SEED, RELEASE_SEED = "gs-topdown", 7, 2026, 7
PERSONS_PER_FILE = 1_000_000


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM of /proc/self/status (Linux), the high-water mark of
    its own memory (ru_maxrss can carry the parent's peak across fork and exec)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_dataset(folder: Path, persons: int, blocks: int) -> dict:
    """The geography (``geography.parquet``) and the person files (``persons/``)."""
    rng = np.random.default_rng(SEED)
    codes, pop, _ = synthetic_geography(blocks, len(LEVELS), rng, population=persons)
    pq.write_table(pa.table({name: codes[g] for g, name in enumerate(LEVELS)}),
                   folder / "geography.parquet")
    households = rng.poisson(pop / 2.5)  # per block
    hh_leaf = np.repeat(np.arange(blocks), households)
    size = 1 + rng.poisson(1.5, hh_leaf.size)
    leaf = np.repeat(hh_leaf, size)
    hh = np.repeat(np.arange(hh_leaf.size, dtype=np.int64), size)
    (folder / "persons").mkdir()
    cuts = np.flatnonzero(np.diff(leaf, prepend=-1))  # a file starts at a block's first row
    starts = np.unique(cuts[np.searchsorted(cuts, np.arange(0, leaf.size, PERSONS_PER_FILE))])
    for index, (lo, hi) in enumerate(zip(starts, np.append(starts[1:], leaf.size),
                                         strict=True)):
        table = {name: codes[g][leaf[lo:hi]] for g, name in enumerate(LEVELS)}
        pq.write_table(pa.table({**table, "hh": hh[lo:hi]}),
                       folder / "persons" / f"part-{index:05d}.parquet")
    return {"persons": int(leaf.size), "households": int(hh_leaf.size), "leaves": blocks,
            "files": int(starts.size), "top_coded": int(np.count_nonzero(size > MAX_SIZE))}


def release_in_memory(folder: Path) -> dict:
    """The in-memory engine (run in a child process): values saved to ``memory.npy``."""
    from hierdp_core.groupsizes.data import group_size_data_from_people

    cpu, t0 = time.process_time(), time.perf_counter()
    table = pd.read_parquet(folder / "persons")
    geography = read_geography(folder / "geography.parquet", LEVELS)
    data = group_size_data_from_people(table, LEVELS, "hh", max_size=MAX_SIZE,
                                       geography=geography)
    del table
    t1 = time.perf_counter()
    release = get_mechanism(MECHANISM).release(data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(seed=RELEASE_SEED))
    t2 = time.perf_counter()
    np.save(folder / "memory.npy", release.values)
    return {"seconds": round(t2 - t0, 2), "read_and_build_seconds": round(t1 - t0, 2),
            "release_seconds": round(t2 - t1, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def release_on_dask(folder: Path, workers: int, memory: str) -> tuple[dict, np.ndarray]:
    from hierdp_core.engine import dask_engine
    from hierdp_core.engine.dask_group_sizes import release_group_sizes_dataset

    t0 = time.perf_counter()
    client = dask_engine.open_client(workers=workers, memory_limit=memory)
    started = time.perf_counter() - t0
    try:
        cpu = (time.process_time(), client.run(time.process_time))
        t0 = time.perf_counter()
        geography = read_geography(folder / "geography.parquet", LEVELS)
        release, _ = release_group_sizes_dataset(
            folder / "persons", LEVELS, "hh", MECHANISM, PrivacyBudget.pure(1.0),
            max_size=MAX_SIZE, geography=geography, source=NoiseSource(seed=RELEASE_SEED),
            client=client)
        seconds = time.perf_counter() - t0
        after = client.run(time.process_time)
        workers_cpu = sorted(round(after[w] - cpu[1][w], 2) for w in after)
        workers_mb = sorted(round(v, 1) for v in client.run(peak_rss_mb).values())
    finally:
        dask_engine.close_client(client)
    return ({"seconds": round(seconds, 2), "cluster_start_seconds": round(started, 2),
             "cpu_seconds": {"client": round(time.process_time() - cpu[0], 2),
                             "workers": workers_cpu},
             "peak_rss_mb": {"client": round(peak_rss_mb(), 1), "workers": workers_mb}},
            release.values)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--persons", type=int, default=3_000_000)
    p.add_argument("--blocks", type=int, default=100_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-per-worker", default="4GB")
    p.add_argument("--in-memory-child", help=argparse.SUPPRESS)  # the child's data folder
    args = p.parse_args(argv)
    if args.in_memory_child:
        print(json.dumps(release_in_memory(Path(args.in_memory_child))))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="bench-gs-dask-"))
    result = {"benchmark": "bench_group_sizes_dask", "mechanism": MECHANISM,
              "max_size": MAX_SIZE, "workers": args.workers, "machine": machine_info()}
    try:
        say(f"writing about {args.persons:,} persons over {args.blocks:,} blocks")
        result.update(write_dataset(folder, args.persons, args.blocks))
        say("in memory (a child process)")
        child = subprocess.run([sys.executable, __file__, "--in-memory-child", str(folder)],
                               check=True, capture_output=True, text=True)
        result["memory"] = json.loads(child.stdout)
        say(f"on Dask, {args.workers} workers")
        result["dask"], values = release_on_dask(folder, args.workers, args.memory_per_worker)
        result["matches_in_memory"] = bool(np.array_equal(values,
                                                          np.load(folder / "memory.npy")))
        result["machine_load_end"] = machine_info()["load_1min"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Group sizes and O/D flows on Dask against the in-memory engine: a synthetic dataset
released with the same seed by both engines, each in a process of its own.

``--query group-sizes`` (default): person records (``--persons`` in all, in households of
1 + Poisson(1.5) persons, household id ``hh``) over the synthetic geography of
`bench_counts` (nation > 52 states > 3,200 counties > tracts > block groups > blocks,
``--blocks`` leaves), released with ``gs-topdown`` (top-code N = 7).
``--query flows``: ``--trips`` trips between the ``--areas`` counties of 52 states (origins
by skewed population, 80% of destinations in the origin's state), released with InfTDA
(rho = 1, origin tree).

Both write Parquet files a run of leaves at a time and the geography file. ``memory``: a
child process reads the whole dataset with pandas, builds the data object and releases;
``dask``: a `distributed.LocalCluster` of ``--workers`` worker processes reads, aggregates
(group sizes: a shuffle by household) and releases block by block. Each records wall
seconds, CPU seconds (dask: the client's plus every worker's) and peak RSS per process
(VmHWM); ``matches_in_memory``: the two releases, bit for bit.

Prints ONE JSON object (progress on stderr)::

    python benchmarks/bench_dask_queries.py --persons 3000000 --blocks 100000
    python benchmarks/bench_dask_queries.py --query flows --trips 5000000 --areas 3200
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

SEED, RELEASE_SEED, ROWS_PER_FILE = 2026, 7, 1_000_000
GROUPS = {"levels": level_names(5), "mechanism": "gs-topdown", "max_size": 7,
          "budget": PrivacyBudget.pure(1.0)}
FLOWS = {"origin": ["o_state", "o_county"], "destination": ["d_state", "d_county"],
         "mechanism": "inftda", "tree": "origin", "budget": PrivacyBudget.zcdp(1.0)}


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


def write_parts(folder: Path, columns: dict, leaf: np.ndarray) -> int:
    """``columns`` (rows ordered by ``leaf``) as Parquet files of about `ROWS_PER_FILE`
    rows, a file starting at a leaf's first row; returns the number of files."""
    folder.mkdir()
    cuts = np.flatnonzero(np.diff(leaf, prepend=-1))
    starts = np.unique(cuts[np.searchsorted(cuts, np.arange(0, leaf.size, ROWS_PER_FILE))])
    for index, (lo, hi) in enumerate(zip(starts, np.append(starts[1:], leaf.size),
                                         strict=True)):
        pq.write_table(pa.table({k: v[lo:hi] for k, v in columns.items()}),
                       folder / f"part-{index:05d}.parquet")
    return int(starts.size)


# ---- group sizes -------------------------------------------------------------------------
def write_households(folder: Path, persons: int, blocks: int) -> dict:
    levels = GROUPS["levels"]
    rng = np.random.default_rng(SEED)
    codes, pop, _ = synthetic_geography(blocks, len(levels), rng, population=persons)
    pq.write_table(pa.table({name: codes[g] for g, name in enumerate(levels)}),
                   folder / "geography.parquet")
    hh_leaf = np.repeat(np.arange(blocks), rng.poisson(pop / 2.5))
    size = 1 + rng.poisson(1.5, hh_leaf.size)
    leaf = np.repeat(hh_leaf, size)
    columns = {name: codes[g][leaf] for g, name in enumerate(levels)}
    columns["hh"] = np.repeat(np.arange(hh_leaf.size, dtype=np.int64), size)
    files = write_parts(folder / "rows", columns, leaf)
    return {"persons": int(leaf.size), "households": int(hh_leaf.size), "leaves": blocks,
            "files": files, "top_coded": int(np.count_nonzero(size > GROUPS["max_size"]))}


def group_sizes_in_memory(folder: Path):
    from hierdp_core.groupsizes.data import group_size_data_from_people

    geography = read_geography(folder / "geography.parquet", GROUPS["levels"])
    return group_size_data_from_people(pd.read_parquet(folder / "rows"), GROUPS["levels"],
                                       "hh", max_size=GROUPS["max_size"], geography=geography)


def group_sizes_on_dask(folder: Path, client):
    from hierdp_core.engine.dask_group_sizes import release_group_sizes_dataset

    geography = read_geography(folder / "geography.parquet", GROUPS["levels"])
    return release_group_sizes_dataset(
        folder / "rows", GROUPS["levels"], "hh", GROUPS["mechanism"], GROUPS["budget"],
        max_size=GROUPS["max_size"], geography=geography,
        source=NoiseSource(seed=RELEASE_SEED), client=client)[0]


# ---- flows -------------------------------------------------------------------------------
def write_trips(folder: Path, trips: int, areas: int) -> dict:
    rng = np.random.default_rng(SEED)
    codes, pop, _ = synthetic_geography(areas, 2, rng, population=10 * trips)
    pq.write_table(pa.table({"state": codes[0], "county": codes[1]}),
                   folder / "geography.parquet")
    weight = (pop + 1) / (pop + 1).sum()
    origin = np.sort(rng.choice(areas, trips, p=weight))
    state = codes[0]
    first = np.searchsorted(state, np.arange(state.max() + 2))  # counties by state
    lo, hi = first[state[origin]], first[state[origin] + 1]
    near = lo + (rng.random(trips) * (hi - lo)).astype(np.int64)
    destination = np.where(rng.random(trips) < 0.8, near, rng.choice(areas, trips, p=weight))
    columns = {"o_state": state[origin], "o_county": codes[1][origin],
               "d_state": state[destination], "d_county": codes[1][destination]}
    files = write_parts(folder / "rows", columns, origin)
    return {"trips": trips, "areas": areas, "files": files,
            "pairs": int(np.unique(origin * areas + destination).size)}


def flows_geography(folder: Path):
    from hierdp_core.flows.data import read_flow_geography

    return read_flow_geography(folder / "geography.parquet", FLOWS["origin"],
                               FLOWS["destination"])


def flows_in_memory(folder: Path):
    from hierdp_core.flows.data import flow_data_from_table

    return flow_data_from_table(pd.read_parquet(folder / "rows"), FLOWS["origin"],
                                FLOWS["destination"], tree=FLOWS["tree"],
                                geography=flows_geography(folder))


def flows_on_dask(folder: Path, client):
    from hierdp_core.engine.dask_flows import release_flows_dataset

    return release_flows_dataset(
        folder / "rows", FLOWS["origin"], FLOWS["destination"], FLOWS["mechanism"],
        FLOWS["budget"], geography=flows_geography(folder), tree=FLOWS["tree"],
        source=NoiseSource(seed=RELEASE_SEED), client=client)[0]


QUERIES = {"group-sizes": (GROUPS, group_sizes_in_memory, group_sizes_on_dask),
           "flows": (FLOWS, flows_in_memory, flows_on_dask)}


def released_arrays(release) -> dict[str, np.ndarray]:
    """The released values (group sizes) or every level's nodes (flows), to compare."""
    if hasattr(release, "values"):
        return {"values": release.values}
    return {f"{name}{i}": getattr(lv, name) for i, lv in enumerate(release.levels)
            for name in ("origin", "destination", "value", "parent")}


# ---- the two engines ---------------------------------------------------------------------
def run_in_memory(query: str, folder: Path) -> dict:
    """The in-memory engine (run in a child process); its release saved to ``memory.npz``."""
    spec, load, _ = QUERIES[query]
    cpu, t0 = time.process_time(), time.perf_counter()
    data = load(folder)
    t1 = time.perf_counter()
    release = get_mechanism(spec["mechanism"]).release(data, spec["budget"],
                                                       source=NoiseSource(seed=RELEASE_SEED))
    t2 = time.perf_counter()
    np.savez(folder / "memory.npz", **released_arrays(release))
    return {"seconds": round(t2 - t0, 2), "read_and_build_seconds": round(t1 - t0, 2),
            "release_seconds": round(t2 - t1, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def run_on_dask(query: str, folder: Path, workers: int, memory: str) -> tuple[dict, object]:
    from hierdp_core.engine import dask_engine

    t0 = time.perf_counter()
    client = dask_engine.open_client(workers=workers, memory_limit=memory)
    started = time.perf_counter() - t0
    try:
        cpu = (time.process_time(), client.run(time.process_time))
        t0 = time.perf_counter()
        release = QUERIES[query][2](folder, client)
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
            release)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--query", choices=tuple(QUERIES), default="group-sizes")
    p.add_argument("--persons", type=int, default=3_000_000)
    p.add_argument("--blocks", type=int, default=100_000)
    p.add_argument("--trips", type=int, default=5_000_000)
    p.add_argument("--areas", type=int, default=3_200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-per-worker", default="4GB")
    p.add_argument("--in-memory-child", help=argparse.SUPPRESS)  # the child's data folder
    args = p.parse_args(argv)
    if args.in_memory_child:
        print(json.dumps(run_in_memory(args.query, Path(args.in_memory_child))))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="bench-dask-queries-"))
    spec = QUERIES[args.query][0]
    result = {"benchmark": "bench_dask_queries", "query": args.query,
              "mechanism": spec["mechanism"], "workers": args.workers,
              "machine": machine_info()}
    try:
        say(f"writing the {args.query} dataset")
        result.update(write_households(folder, args.persons, args.blocks)
                      if args.query == "group-sizes"
                      else write_trips(folder, args.trips, args.areas))
        say("in memory (a child process)")
        child = subprocess.run([sys.executable, __file__, "--query", args.query,
                                "--in-memory-child", str(folder)],
                               check=True, capture_output=True, text=True)
        result["memory"] = json.loads(child.stdout)
        say(f"on Dask, {args.workers} workers")
        result["dask"], release = run_on_dask(args.query, folder, args.workers,
                                              args.memory_per_worker)
        expected = np.load(folder / "memory.npz")
        got = released_arrays(release)
        result["matches_in_memory"] = (set(got) == set(expected.files) and all(
            np.array_equal(got[k], expected[k]) for k in got))
        result["machine_load_end"] = machine_info()["load_1min"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

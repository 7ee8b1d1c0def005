"""Measure the peak memory per release cell of every mechanism (issue 32), to set the
constants of `hierdp_core.memory_plan`.

Each mechanism releases, through the real command line in a subprocess (address space
capped), a small and a larger input of its query kind; the peak resident memory of each
run (``ru_maxrss`` from ``wait4``) is read and the slope (peak difference / cell
difference) is the bytes one more cell costs: the input table, the data object, the
release, its intervals (the default: on) and the written files together. Prints JSON, one
record per mechanism. Run: ``nice -n 19 python benchmarks/bench_memory_per_cell.py``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

LIMIT_BYTES = 6 * 2**30


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def peak_rss(argv: list[str], timeout: float = 600) -> tuple[int, int, float]:
    """(exit status, peak resident bytes, seconds) of ``hierdp argv`` in a subprocess."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "hierdp_core", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=_limit)
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    err = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"  exit {code}: {err.strip()[:300]}", file=sys.stderr)
    return code, usage.ru_maxrss * 1024, time.perf_counter() - started


def counts_input(folder: Path, cells: int) -> tuple[list[str], int]:
    units, k = 200, max(1, cells // 200)
    rows = [(f"R{u % 10}", f"U{u}", f"c{c}", 3) for u in range(units) for c in range(k)]
    path = folder / "counts.csv"
    pd.DataFrame(rows, columns=["region", "unit", "cat", "n"]).to_csv(path, index=False)
    flags = [str(path), "--levels", "region,unit", "--categories", "cat", "--count-column",
             "n", "--structure-from-data"]
    return flags, (1 + 10 + units) * k


def ranges_input(folder: Path, cells: int) -> tuple[list[str], int]:
    domain = max(2, cells // 3)
    path = folder / "ranges.csv"
    path.write_text("region,age,residents\nA,3,5\nB,7,2\n")
    flags = [str(path), "--query", "ranges", "--levels", "region", "--attribute", "age",
             "--count-column", "residents", "--structure-from-data", "--domain",
             f"0-{domain - 1}"]
    return flags, 3 * domain


def group_sizes_input(folder: Path, cells: int) -> tuple[list[str], int]:
    regions, max_size = 20, max(2, cells // 21 - 1)
    rng = np.random.default_rng(0)
    rows = [(f"R{r}", s, int(rng.integers(0, 5))) for r in range(regions)
            for s in range(1, 8)]
    path = folder / "gs.csv"
    pd.DataFrame(rows, columns=["region", "size", "n"]).to_csv(path, index=False)
    flags = [str(path), "--query", "group-sizes", "--levels", "region", "--size-column",
             "size", "--count-column", "n", "--max-size", str(max_size),
             "--structure-from-data"]
    return flags, (regions + 1) * (max_size + 1)


def flows_input(folder: Path, cells: int) -> tuple[list[str], int]:
    areas = max(2, int(cells ** 0.5))
    states = max(1, areas // 20)
    rng = np.random.default_rng(0)
    o, d = rng.integers(0, areas, 4 * areas), rng.integers(0, areas, 4 * areas)
    table = pd.DataFrame({"o_state": [f"S{a % states}" for a in o], "o_area": [f"A{a}" for a in o],
                          "d_state": [f"S{a % states}" for a in d], "d_area": [f"A{a}" for a in d],
                          "n": 1})
    path = folder / "flows.csv"
    table.to_csv(path, index=False)
    geography = pd.DataFrame({"state": [f"S{a % states}" for a in range(areas)],
                              "area": [f"A{a}" for a in range(areas)]})
    geography.to_csv(folder / "geo.csv", index=False)
    flags = [str(path), "--query", "flows", "--origin-levels", "o_state,o_area",
             "--destination-levels", "d_state,d_area", "--count-column", "n", "--duplicates",
             "sum", "--geography", str(folder / "geo.csv"), "--delta", "1e-6",
             "--allow-nonprivate"]
    return flags, 1 + states**2 + areas**2


INPUTS = {"counts": counts_input, "ranges": ranges_input, "group-sizes": group_sizes_input,
          "flows": flows_input}


def main(sizes=(200_000, 1_000_000), mechanisms: list[str] | None = None) -> None:
    from hierdp_core.invariants import exact_quantities
    from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms

    out = []
    infos = {info.name: info for info in list_mechanisms()}
    for name in mechanisms or list(infos):
        info = infos[name]
        query = info.queries[0]
        peaks, cells = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for size in sizes:
                folder = Path(tmp) / str(size)
                folder.mkdir()
                flags, n = INPUTS[query](folder, size)
                pure = "pure-dp" in (info.privacy_definitions or (info.privacy,))
                extra = [] if pure else ["--delta", "1e-6"]
                extra = extra if query != "flows" else []  # the flow flags give --delta
                mechanism = get_mechanism(name)  # what it publishes exactly is declared
                for exact in exact_quantities(mechanism, query, mechanism.params()):
                    extra += ["--invariant", exact]
                code, peak, seconds = peak_rss(
                    ["release", *flags, *extra, "--mechanism", info.name, "--epsilon", "1",
                     "--seed", "1", "--allow-nonprivate", "--max-memory", "100GB",
                     "--out", str(folder / "out")], timeout=300)
                if code != 0:
                    break
                peaks.append(peak)
                cells.append(n)
        record = {"mechanism": info.name, "query": query, "cells": cells,
                  "peak_mb": [round(p / 2**20, 1) for p in peaks]}
        if len(peaks) == 2:
            record["bytes_per_cell"] = round((peaks[1] - peaks[0]) / (cells[1] - cells[0]))
        out.append(record)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main(mechanisms=sys.argv[1:] or None)

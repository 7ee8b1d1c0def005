"""DAWA Stage 2's greedy strategies kept per partition (`hierdp_core.ranges.dawa`).

A greedy strategy depends only on the public workload, the branching and the partition
(its bucket edges), never on the counts: it is post-processing of the released partition,
and the same partition always gets the same strategy. Many releases of one table share
partitions: the 21 re-runs of DAWA in the bootstrap of an Italian release (20 regions and
107 provinces) ask for 3,103 strategies, only 373 of them distinct, and solving them is
most of a re-run. `StrategyCache.batch` solves only the partitions it has not seen (all at
once, as one batch) and assembles the batch the caller asked for from the rows kept; a
row is the same numbers whichever batch solved it (every step of the solve is per
partition; a test compares a batch with its rows solved one by one).

The cache holds at most `MAX_BYTES` of strategies (each a (k, k) least-squares inverse and
its weights), the least recently used dropped first, shared by the threads of a server
(the dashboard's sessions and sweeps) under a lock. Keys hold a digest of the workload's
queries (`workload_key`), so the same workload made again (each run of a dashboard page
makes its own) finds the strategies solved for it before.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from hierdp_core.ranges.interval_strategy import StrategyBatch
from hierdp_core.ranges.workloads import Workload

MAX_BYTES = 64 << 20  # e.g. 1,600 strategies over the 101 single ages


def workload_key(workload: Workload) -> bytes:
    """A digest of the queries of ``workload`` (its cells and ranges, or its matrix)."""
    digest = hashlib.blake2b(str(workload.n).encode(), digest_size=16)
    if workload.is_ranges:
        parts = (workload.lo, workload.hi)
    else:
        matrix = workload.matrix.tocsr()
        parts = (matrix.indptr, matrix.indices, matrix.data)
    for part in parts:
        part = np.ascontiguousarray(part)
        digest.update(f"{part.dtype.str}{part.shape}".encode())
        digest.update(part.tobytes())
    return digest.digest()


class StrategyCache:
    """Strategies by (workload, branching, partition): ``solve(workload, bounds (U, k + 1),
    branching)`` gives the `StrategyBatch` of U partitions into k buckets."""

    def __init__(self, solve: Callable[[Workload, np.ndarray, int], StrategyBatch],
                 max_bytes: int = MAX_BYTES):
        self.solve = solve
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.kept: OrderedDict[tuple, tuple] = OrderedDict()
        self.bytes = 0

    def batch(self, workload: Workload, bounds: np.ndarray, branching: int) -> StrategyBatch:
        """The strategies of the partitions ``bounds`` (U, k + 1), in their order."""
        bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        asked = (workload_key(workload), int(branching))
        keys = [(*asked, row.tobytes()) for row in bounds]
        with self.lock:
            rows = [self.kept.get(key) for key in keys]
            for key, row in zip(keys, rows, strict=True):
                if row is not None:
                    self.kept.move_to_end(key)
        missing = [i for i, row in enumerate(rows) if row is None]
        if missing:
            solved = self.solve(workload, bounds[missing], branching)
            shape = (solved.k, solved.lo, solved.hi, solved.name)
            for j, i in enumerate(missing):
                rows[i] = (*shape, solved.weights[j].copy(), solved.inverse[j].copy())
            self._keep([keys[i] for i in missing], [rows[i] for i in missing])
        k, lo, hi, name = rows[0][:4]
        return StrategyBatch(k, lo, hi, np.stack([row[4] for row in rows]),
                             np.stack([row[5] for row in rows]), name)

    def _keep(self, keys: list[tuple], rows: list[tuple]) -> None:
        with self.lock:
            for key, row in zip(keys, rows, strict=True):
                if key not in self.kept:
                    self.kept[key] = row
                    self.bytes += row[4].nbytes + row[5].nbytes
            while self.bytes > self.max_bytes and self.kept:
                _, old = self.kept.popitem(last=False)
                self.bytes -= old[4].nbytes + old[5].nbytes

    def clear(self) -> None:
        with self.lock:
            self.kept.clear()
            self.bytes = 0

"""A guard for speed-ups of the re-run bootstraps (`hierdp_core.intervals.bootstrap`): the
intervals of seeded releases, with a fixed number of replicates, are bit-identical to the
ones recorded here, their progress is reported re-run by re-run, and DAWA's strategies kept
per partition (`strategy_cache`) are the numbers a batch of its own gives.

The digests were recorded when every re-run got a stream of its own, from the seed and the
plug-in (`replicate_source`, so that re-runs can share threads and releases of one table
do not share their re-runs); the speed-ups before that (the releaser made once, the
replicates one per row, DAWA's strategies kept per partition) kept the earlier digests.
DAWA's was re-recorded when the intervals of integer releases got integer ends
(`bootstrap.integer_ends`: its near-zero upper ends were fractional); the others' ends were
whole already. gs-kuo-hierarchical's and InfTDA's were re-recorded when their bias widening
was rounded to the nearest integer instead of up (gs-kuo-hierarchical again when its widening
grew one side only, `bootstrap.BIAS_SIDED`);
DAWA's when the integer step was pooled over a level's cells of one category
(`symmetric.pooled_trim`; the small group-size and flow releases' intervals did not move)
(``python tests/test_interval_digests.py`` prints the current table)."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd
import pytest
from release_inputs import budget_for, small_data

from hierdp_core.intervals import bootstrap, intervals_for
from hierdp_core.intervals.bootstrap import reporting
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges import dawa
from hierdp_core.ranges.strategy_cache import StrategyCache
from hierdp_core.ranges.workloads import prefix_ranges

SEED = 20261129
REPLICATES = 20


def italy_like():
    """Range data with many units, whose DAWA partitions differ and recur over re-runs:
    3 regions x 8 provinces, 24 ages, seeded Poisson counts."""
    rng = np.random.default_rng(3)
    rows = [(r, f"{r}{p}", a, int(n)) for r in "ABC" for p in range(8) for a, n in
            enumerate(rng.poisson(rng.uniform(5, 400) * np.exp(-np.arange(24) / 9)))]
    table = pd.DataFrame(rows, columns=["region", "province", "age", "n"])
    return range_data_from_table(table, ["region", "province"], "age", count_column="n")


CASES = {"gs-kuo-hierarchical": lambda: small_data("group-sizes"),
         "gs-topdown": lambda: small_data("group-sizes"),
         "inftda": lambda: small_data("flows"),
         "dawa": italy_like}

#: mechanism -> digest of (lower, upper) of its seeded release's 90% intervals
RECORDED = {
    "gs-kuo-hierarchical": "51cec634c14dbdb2",
    "gs-topdown": "44cd14b625de5103",
    "inftda": "3444f8dd0c75b393",
    "dawa": "e72d912c59934135",
}


def _digest(name: str) -> str:
    mechanism = get_mechanism(name)
    release = mechanism.release(CASES[name](), budget_for(mechanism.info),
                                source=NoiseSource(seed=SEED))
    iv = intervals_for(release, 0.9, REPLICATES)
    assert iv.record["replicates"] == REPLICATES
    h = hashlib.sha256()
    for array in (iv.lower, iv.upper):
        a = np.ascontiguousarray(array, dtype=np.float64)
        h.update(f"{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", list(CASES))
def test_bootstrap_intervals_are_bit_identical(name):
    dawa.GREEDY.clear()
    assert _digest(name) == RECORDED[name]


@pytest.mark.parametrize("threads", [1, 3])
def test_the_intervals_do_not_depend_on_the_threads(monkeypatch, threads):
    """Re-runs on one thread or on three (finishing in any order) give the same numbers."""
    monkeypatch.setattr(bootstrap, "RERUN_THREADS", threads)
    monkeypatch.setattr(bootstrap, "THREADED_RERUN_SECONDS", 0.0)  # threads for any re-run
    assert _digest("gs-topdown") == RECORDED["gs-topdown"]


def test_an_error_in_a_re_run_is_raised_and_stops_the_others():
    ran = []

    def task(j):
        ran.append(j)
        time.sleep(0.01)
        if j == 2:
            raise ValueError("re-run 2 failed")

    with pytest.raises(ValueError, match="re-run 2 failed"):
        bootstrap._in_threads(task, range(1, 400), lambda done: None, 2)
    assert len(ran) < 399  # the jobs not started were cancelled


def test_dawa_intervals_the_same_with_strategies_kept():
    """A warm cache (strategies solved in other batches, by an earlier bootstrap) gives the
    same intervals as a cold one."""
    dawa.GREEDY.clear()
    _digest("dawa")
    assert dawa.GREEDY.kept  # the re-runs kept their strategies
    assert _digest("dawa") == RECORDED["dawa"]


def test_the_bootstrap_reports_every_re_run():
    """`bootstrap.reporting` sees each re-run in turn (a page's progress bar), and the
    intervals do not change."""
    seen = []
    with reporting(lambda done, total: seen.append((done, total))):
        assert _digest("inftda") == RECORDED["inftda"]
    assert seen == [(j, REPLICATES) for j in range(1, REPLICATES + 1)]
    seen.clear()
    _digest("inftda")  # outside: no report
    assert seen == []


def test_a_kept_strategy_is_the_one_its_own_batch_gives():
    workload = prefix_ranges(24)
    rng = np.random.default_rng(0)
    cuts = [np.sort(rng.choice(np.arange(1, 24), 7, replace=False)) for _ in range(9)]
    bounds = np.array([np.concatenate([[0], c, [24]]) for c in cuts])
    cache = StrategyCache(dawa._greedy)
    cache.batch(workload, bounds[:4], 2)  # solved together, then asked among others
    mixed = cache.batch(workload, bounds[[5, 1, 7, 3]], 2)
    for j, i in enumerate([5, 1, 7, 3]):
        alone = dawa._greedy(workload, bounds[i:i + 1], 2)
        np.testing.assert_array_equal(mixed.weights[j], alone.weights[0])
        np.testing.assert_array_equal(mixed.inverse[j], alone.inverse[0])
        np.testing.assert_array_equal(mixed.lo, alone.lo)


def test_the_same_workload_made_again_finds_its_strategies():
    calls = []

    def solve(workload, bounds, branching):
        calls.append(len(bounds))
        return dawa._greedy(workload, bounds, branching)

    cache = StrategyCache(solve)
    bounds = np.array([[0, 3, 24], [0, 9, 24]])
    first = cache.batch(prefix_ranges(24), bounds, 2)
    again = cache.batch(prefix_ranges(24), bounds[::-1], 2)  # a new object, same queries
    assert calls == [2]
    np.testing.assert_array_equal(again.inverse, first.inverse[::-1])
    cache.batch(prefix_ranges(25), np.array([[0, 3, 25]]), 2)  # other queries: solved
    cache.batch(dawa.Workload(24, "bands", lo=np.array([0, 12]), hi=np.array([11, 23])),
                bounds, 2)
    assert calls == [2, 1, 2]


def test_the_cache_stays_within_its_bytes():
    workload = prefix_ranges(24)
    bounds = np.array([[0, c, 24] for c in range(1, 24)])
    one = dawa._greedy(workload, bounds[:1], 2)
    size = one.weights[0].nbytes + one.inverse[0].nbytes
    cache = StrategyCache(dawa._greedy, max_bytes=5 * size)
    cache.batch(workload, bounds, 2)
    assert len(cache.kept) == 5 and cache.bytes == 5 * size
    kept = [np.frombuffer(key[2], dtype=np.int64)[1] for key in cache.kept]
    assert kept == [19, 20, 21, 22, 23]  # the last solved


if __name__ == "__main__":
    for case in CASES:
        print(f'    "{case}": "{_digest(case)}",')

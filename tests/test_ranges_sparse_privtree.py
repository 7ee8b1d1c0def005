"""The sparse PrivTree and Partition+Laplace (issue 32, item 2): with the same seed they give
the dense mechanism's edges, noisy counts and stream position bit for bit on small tables;
a secure source gives a valid partition; the huge declared domain of the issue runs in
seconds under a 2 GB address-space limit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.sparse_rows import SparseRows
from hierdp_core.ranges.dawa import dawa, expand
from hierdp_core.ranges.privtree import privtree_partition, selection_stage
from hierdp_core.ranges.sparse_privtree import (
    sparse_median_deviations,
    sparse_partition_laplace,
    sparse_privtree_partition,
)
from hierdp_core.ranges.workloads import prefix_ranges

ROOT = Path(__file__).resolve().parents[1]
STAGES = get_mechanism("partition-laplace", "ranges").estimator_stages()


@st.composite
def tables(draw):
    """Small histograms (rows x n), mostly zeros, some with a few heavy cells."""
    rows = draw(st.integers(1, 4))
    n = draw(st.integers(1, 70))
    dense = draw(st.floats(0.0, 1.0))
    cells = draw(st.lists(st.integers(0, 60), min_size=rows * n, max_size=rows * n))
    keep = draw(st.lists(st.floats(0, 1), min_size=rows * n, max_size=rows * n))
    x = np.where(np.array(keep) < dense, np.array(cells, dtype=float), 0.0)
    return x.reshape(rows, n)


@settings(max_examples=150, deadline=None)
@given(tables(), st.sampled_from([0.05, 0.3, 1.0, 5.0]), st.sampled_from([0.1, 1.0, 4.0]),
       st.integers(0, 2**31))
def test_partition_is_the_dense_one_draw_for_draw(x, epsilon1, epsilon2, seed):
    dense_source, sparse_source = NoiseSource(seed=seed), NoiseSource(seed=seed)
    stage = selection_stage()
    want = privtree_partition(x, epsilon1, epsilon2, dense_source, stage=stage)
    got = sparse_privtree_partition(SparseRows.from_dense(x), epsilon1, epsilon2,
                                    sparse_source, stage=stage)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    # both streams stand at the same draw afterwards
    assert dense_source.rng.random() == sparse_source.rng.random()


@settings(max_examples=100, deadline=None)
@given(tables(), st.sampled_from([0.1, 1.0, 3.0]), st.sampled_from([0.1, 0.25, 0.6]),
       st.integers(0, 2**31))
def test_partition_laplace_is_the_dense_release(x, epsilon, rho, seed):
    """Same buckets, same noisy counts (spread over the cells as the dense one does), and
    every prefix answered by overlap as the dense cells sum it."""
    n = x.shape[1]
    want = dawa(x, prefix_ranges(n), epsilon, NoiseSource(seed=seed), rho=rho,
                stage2="laplace", **STAGES)
    got = sparse_partition_laplace(SparseRows.from_dense(x), epsilon, NoiseSource(seed=seed),
                                   rho=rho, **STAGES)
    for row in range(x.shape[0]):
        assert np.array_equal(got.edges[row], want.edges[row])
        spread = expand(got.counts[row][None], got.edges[row])[0]
        assert np.array_equal(spread, want.values[row])
        prefixes = got.answer(row, np.zeros(n, dtype=int), np.arange(n))
        assert np.allclose(prefixes, np.cumsum(want.values[row]), rtol=1e-9, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(tables(), st.data())
def test_median_deviations_from_the_nonzero_cells(x, data):
    from hierdp_core.ranges.privtree import median_deviations

    n = x.shape[1]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=5))) - {n})
    edges = np.array([0, *cuts, n])
    want = median_deviations(x, edges[:-1], edges[1:])
    rows = np.repeat(np.arange(x.shape[0]), edges.size - 1)
    lo, hi = np.tile(edges[:-1], x.shape[0]), np.tile(edges[1:], x.shape[0])
    got = sparse_median_deviations(SparseRows.from_dense(x), rows, lo, hi)
    assert np.array_equal(got, want.ravel())


def test_secure_source_gives_a_partition_that_follows_the_data():
    x = np.zeros((2, 4096))
    x[0, 1000:1010] = 500.0
    got = sparse_partition_laplace(SparseRows.from_dense(x), 2.0, NoiseSource(secure=True),
                                   **STAGES)
    for edges, counts in zip(got.edges, got.counts, strict=True):
        assert edges[0] == 0 and edges[-1] == 4096 and np.all(np.diff(edges) > 0)
        assert counts.size == edges.size - 1
    assert got.edges[0].size > got.edges[1].size  # the heavy run is cut out, row 1 is flat
    assert abs(got.answer(0, 1000, 1009) - 5000.0) < 500.0  # Laplace(1/1.5) per bucket


def test_secure_draws_have_the_dense_scales_on_fewer_cells():
    """A secure source: the same measurements (label, noise, scale, sensitivity, budget
    share) as the dense mechanism's, the scores drawn on the visited buckets only."""
    x = np.zeros((2, 64))
    x[0, 10:12] = 300.0
    dense, sparse = NoiseSource(secure=True), NoiseSource(secure=True)
    dawa(x, prefix_ranges(64), 2.0, dense, stage2="laplace", **STAGES)
    sparse_partition_laplace(SparseRows.from_dense(x), 2.0, sparse, **STAGES)
    keys = ("measurement", "noise", "scale", "sensitivity", "budget_share")
    assert [{k: m[k] for k in keys} for m in dense.measurements] == \
        [{k: m[k] for k in keys} for m in sparse.measurements]
    assert sparse.measurements[0]["cells"] < dense.measurements[0]["cells"]


def test_bad_sparse_input_is_refused():
    with pytest.raises(InputError):
        SparseRows.from_triples([0], [5], [1.0], rows=1, n=5)
    with pytest.raises(InputError):
        SparseRows.from_triples([0], [1], [-1.0], rows=1, n=5)


HUGE = textwrap.dedent("""
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
    start = time.perf_counter()
    from hierdp_core.mechanisms.base import get_mechanism
    from hierdp_core.privacy.samplers import NoiseSource
    from hierdp_core.queries.sparse_rows import SparseRows
    from hierdp_core.ranges.sparse_privtree import sparse_partition_laplace
    stages = get_mechanism("partition-laplace", "ranges").estimator_stages()
    # the issue's two-row table: 3 units (root, two regions) over the ages 0-100000000
    data = SparseRows.from_triples([0, 0, 1, 2], [34, 71, 34, 71], [120, 80, 120, 80],
                                   rows=3, n=100_000_001)
    out = sparse_partition_laplace(data, 1.0, NoiseSource(seed=int(sys.argv[1])), **stages)
    print(out.buckets, time.perf_counter() - start)
""")


@pytest.mark.parametrize("seed", [1, 2])
def test_the_issues_huge_domain_runs_sparse_in_bounded_memory(seed):
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", HUGE, str(seed)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    buckets, seconds = done.stdout.split()
    # a few buckets per unit around its two ages (27 halvings each), not 10**8 cells
    assert 3 <= int(buckets) < 3 * 2 * 30 * 4
    assert float(seconds) < 10.0, seconds
    assert time.perf_counter() - start < 60.0

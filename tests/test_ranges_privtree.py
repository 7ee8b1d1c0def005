"""The PrivTree-style Stage 1: median deviations, the score's two properties its privacy proof
needs (sensitivity 1, monotone), data adaptivity, and the empirical audit of the partition on
several neighbouring pairs (including the one the reference Stage 1 fails)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.audit import audit_callable
from hierdp_core.errors import BudgetError
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.privtree import median_deviations, privtree_partition, selection_stage

STAGE = selection_stage()


def brute_median_deviation(values):
    values = np.asarray(values, dtype=float)
    return np.abs(values - np.median(values)).sum()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=30), st.data())
def test_median_deviations_and_score_properties(values, data):
    x = np.array([values], dtype=float)
    n = x.shape[1]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=4))) - {n})
    edges = np.array([0, *cuts, n])
    got = median_deviations(x, edges[:-1], edges[1:])[0]
    want = [brute_median_deviation(x[0, a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    assert np.allclose(got, want)
    # sensitivity 1 under adding or removing one record
    cell = data.draw(st.integers(0, n - 1))
    for change in (1, -1):
        y = x.copy()
        y[0, cell] = max(y[0, cell] + change, 0)
        assert np.all(np.abs(median_deviations(y, edges[:-1], edges[1:])[0] - got) <= 1 + 1e-9)
    # monotone: every part scores at most the whole
    whole = median_deviations(x, np.array([0]), np.array([n]))[0, 0]
    assert np.all(got <= whole + 1e-9)


def test_partition_follows_the_data():
    """Flat runs stay merged, a jump gets an edge; a flat histogram gets few buckets."""
    src = NoiseSource(seed=4)
    step = np.r_[np.zeros(512), np.full(512, 400.0)]
    edges = privtree_partition(np.stack([step, np.full(1024, 7.0)]), 2.0, 2.0, src,
                               stage=STAGE)
    assert 512 in edges[0].tolist() and len(edges[0]) - 1 < 40
    assert len(edges[1]) - 1 < 40
    for e in edges:
        assert e[0] == 0 and e[-1] == 1024 and np.all(np.diff(e) > 0)


def test_parameters():
    """The plan's stage: score sensitivity 1, PrivTree's factor 3, so lambda = 3/epsilon1
    bit for bit (the formula the scale had before it moved into the plan)."""
    assert (STAGE.sensitivity, STAGE.scale_factor, STAGE.output) == (1.0, 3.0, "partition")
    for epsilon1 in (0.5, 0.1, 0.3, 1 / 3, 2.7):
        assert STAGE.noise_for(epsilon1).scale == (2 * 2 - 1) / (2 - 1) * 1.0 / epsilon1
    assert STAGE.noise_for(0.5).scale == 6.0
    with pytest.raises(BudgetError):
        privtree_partition(np.zeros((1, 4)), 0.0, 1.0, NoiseSource(seed=1), stage=STAGE)
    assert privtree_partition(np.zeros((2, 1)), 1.0, 1.0, NoiseSource(seed=1),
                              stage=STAGE)[1].tolist() == [0, 1]


N = 8
BITS = 2 ** np.arange(N - 1)
PAIRS = [
    (np.zeros(N), np.eye(N)[1]),                                   # the reference's failure
    (np.r_[np.zeros(4), np.full(4, 5.0)], np.r_[np.zeros(4), 6, np.full(3, 5.0)]),
    (np.tile([1.0, 0.0], 4), np.r_[1.0, 1.0, np.tile([1.0, 0.0], 3)]),
    (np.r_[0, 6, np.zeros(6)], np.r_[0, 5, np.zeros(6)]),
]


@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_privtree_stage1_passes_the_audit(pair):
    def run(x, trials, source):
        edges = privtree_partition(np.repeat(x[None], trials, axis=0), 1.0, 1.0, source,
                                   stage=STAGE)
        return np.array([[BITS[e[1:-1] - 1].sum()] for e in edges], dtype=float)

    def indicators(out):
        return {f"partition {c}": (out[:, 0] == c).astype(float) for c in range(2 ** (N - 1))}

    r = audit_callable(run, PAIRS[pair], 1.0, trials=20_000, seed=3, statistics=indicators)
    assert r.passed and r.epsilon_lower_bound <= 1.0, r.summary()

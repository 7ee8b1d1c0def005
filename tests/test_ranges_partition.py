"""DAWA Stage 1: bucket deviations, the least-cost partition (exact against brute force), the
paper's running example (spec section 2.0), the noise scales of both modes, and the privacy
audit of the partition alone: the provable mode passes, the reference mode fails on the spec's
case (n = 8, pow2, epsilon1 = 1, x0 = 0, x1 = one person at value 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

from hierdp_core.audit import audit_callable
from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.partition import (
    MODES,
    Candidates,
    bucket_costs,
    deviations,
    least_cost_edges,
    least_cost_edges_batch,
    noise_scales,
    private_partition,
    selection_stage,
)

PROVABLE = selection_stage("provable")
EXAMPLE = np.array([2, 3, 8, 1, 0, 2, 0, 4, 2, 4])


def brute_deviation(x, length):
    w = sliding_window_view(np.asarray(x, dtype=float), length, axis=-1)
    return np.abs(w - w.mean(axis=-1, keepdims=True)).sum(axis=-1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=40), st.data())
def test_deviations_match_brute_force(values, data):
    x = np.array([values, values[::-1]], dtype=float)
    length = data.draw(st.integers(1, len(values)))
    assert np.allclose(deviations(x, length), brute_deviation(x, length), atol=1e-9)


def test_deviation_of_the_paper_example():
    # devs of {[1,2],[3,3],[4,7],[8,10]} are 1, 0, 3, 8/3 (spec section 2.0)
    x = EXAMPLE[None].astype(float)
    assert deviations(x, 2)[0, 0] == pytest.approx(1.0)
    assert deviations(x, 4)[0, 3] == pytest.approx(3.0)
    assert deviations(x, 10)[0, 0] == pytest.approx(17.2)
    assert brute_deviation(EXAMPLE[7:], 3)[0] == pytest.approx(8 / 3)


def partition_cost(x, edges, epsilon2):
    return sum(brute_deviation(x[a:b], b - a)[0] + 1 / epsilon2
               for a, b in zip(edges[:-1], edges[1:], strict=True))


@pytest.mark.parametrize("epsilon2, candidates, cost", [
    (1.0, "all", 10.0), (1.0, "pow2", 10.0), (0.5, "all", 14.667), (0.5, "pow2", 16.0),
    (0.1, "all", 27.2), (0.1, "pow2", 37.0)])
def test_noiseless_optimum_of_the_paper_example(epsilon2, candidates, cost):
    edges = least_cost_edges(EXAMPLE, epsilon2, candidates)
    assert partition_cost(EXAMPLE, edges, epsilon2) == pytest.approx(cost, abs=1e-3)


def test_example_partitions_and_tie_rule():
    assert least_cost_edges(EXAMPLE, 0.5, "all").tolist() == [0, 2, 3, 7, 10]  # Example 1's B
    assert least_cost_edges(EXAMPLE, 0.1, "all").tolist() == [0, 10]
    assert least_cost_edges(EXAMPLE, 0.1, "pow2").tolist() == [0, 8, 10]
    # pow2 at epsilon2 = 0.5: three partitions cost 16; ties go to the longest last bucket
    # ({[1,2],[3],[4,7],[8],[9,10]} in 1-based cells), as in the authors' code
    assert least_cost_edges(EXAMPLE, 0.5, "pow2").tolist() == [0, 2, 3, 7, 8, 10]


def all_partitions(n, lengths):
    for cuts in itertools.product((0, 1), repeat=n - 1):
        edges = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        if all(b - a in lengths for a, b in zip(edges[:-1], edges[1:], strict=True)):
            yield edges


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.sampled_from(["pow2", "all"]), st.integers(0, 2**31))
def test_dynamic_program_is_exact(n, kind, seed):
    """On random continuous costs the DP's partition is the brute-force minimum."""
    cands = Candidates.make(n, kind)
    costs = np.random.default_rng(seed).normal(size=(2, cands.lengths.size, n))
    costs[:, cands.lengths[:, None] > np.arange(1, n + 1)[None, :]] = np.inf
    index = {int(length): i for i, length in enumerate(cands.lengths)}
    for row, edges in enumerate(least_cost_edges_batch(costs, cands)):
        def total(e, row=row):
            return sum(costs[row, index[b - a], b - 1] for a, b in zip(e[:-1], e[1:], strict=True))
        best = min(total(e) for e in all_partitions(n, set(index)))
        assert total(edges.tolist()) == pytest.approx(best)


def test_bucket_costs_are_indexed_by_end():
    cands = Candidates.make(10, "pow2")
    costs = bucket_costs(EXAMPLE[None].astype(float), cands, 1.0)
    i4 = list(cands.lengths).index(4)
    assert costs[0, i4, 6] == pytest.approx(3.0 + 1.0)  # cells 3..6 end at 6
    assert np.isinf(costs[0, i4, 2])


@pytest.mark.parametrize("epsilon1", [0.5, 0.1, 1 / 3, 0.0625])
@pytest.mark.parametrize("kind", ["pow2", "all"])
def test_noise_scales(epsilon1, kind):
    """The plan's stage (bucket-cost sensitivity 2, factor 2 provable / 1 reference) gives
    the Remark's scales (Delta + Delta_b)/epsilon1 and the reference code's, bit for bit
    (the formulas the scales had before they moved into the plan)."""
    cands = Candidates.make(8, kind)  # pow2: lengths 8, 4, 2, 1; Delta = 2 (1 - 1/8)
    provable_stage, reference_stage = (selection_stage(mode) for mode in MODES)
    assert provable_stage.sensitivity == reference_stage.sensitivity == 2.0
    assert (provable_stage.scale_factor, reference_stage.scale_factor) == (2.0, 1.0)
    lengths = cands.lengths.astype(float)
    own = 2.0 * (1.0 - 1.0 / lengths)
    provable = noise_scales(cands, epsilon1, "provable", provable_stage)
    assert np.array_equal(provable, (cands.max_sensitivity + own) / epsilon1)
    assert np.allclose(provable, (1.75 + own) / epsilon1)
    reference = noise_scales(cands, epsilon1, "reference", reference_stage)
    assert np.array_equal(reference, np.where(lengths > 1, (2.0 - 1.0 / lengths - 1.0 / 8)
                                              / epsilon1, 0.0))
    with pytest.raises(InputError):
        noise_scales(cands, epsilon1, "clamped", provable_stage)
    with pytest.raises(InputError):
        selection_stage("clamped")


def test_partition_arguments():
    x = np.zeros((1, 8))
    with pytest.raises(BudgetError):
        private_partition(x, 0.0, 1.0, NoiseSource(seed=1), stage=PROVABLE)
    with pytest.raises(InputError):
        private_partition(x, 1.0, 1.0, NoiseSource(seed=1), stage=PROVABLE, penalty=-1)
    with pytest.raises(InputError, match="pow2"):
        Candidates.make(5000, "all")


def test_provable_partition_overpartitions_and_penalty_reduces_it():
    """The spec's finding (section 2.2.7): with the provable noise the least-cost partition
    of flat data still has many buckets; the reference clamp keeps few; a penalty helps."""
    x = np.full((1, 256), 10.0)
    src = NoiseSource(seed=3)
    k = {mode: len(private_partition(x, 0.25, 0.75, src, mode=mode,
                                     stage=selection_stage(mode))[0]) - 1
         for mode in ("provable", "reference")}
    penalised = len(private_partition(x, 0.25, 0.75, src, penalty=4.0, stage=PROVABLE)[0]) - 1
    assert k["provable"] > 40 and k["reference"] < 10 and penalised < k["provable"] / 2


N_AUDIT = 8
X0 = np.zeros(N_AUDIT)
X1 = X0.copy()
X1[1] = 1
BITS = 2 ** np.arange(N_AUDIT - 1)


def partition_codes(mode):
    def run(x, trials, source):
        rows = np.repeat(x[None], trials, axis=0)
        edges = private_partition(rows, 1.0, 1.0, source, mode=mode,
                                  stage=selection_stage(mode))
        return np.array([[BITS[e[1:-1] - 1].sum()] for e in edges], dtype=float)
    return run


def code_indicators(out):
    return {f"partition {c}": (out[:, 0] == c).astype(float) for c in range(2 ** 7)}


def test_stage1_audit_provable_passes():
    r = audit_callable(partition_codes("provable"), (X0, X1), 1.0, trials=20_000, seed=2,
                       statistics=code_indicators)
    assert r.passed and r.epsilon_lower_bound <= 1.0, r.summary()


def test_stage1_audit_reference_fails():
    """The spec's small case: one partition about 21 times likelier under x1 (e^3)."""
    r = audit_callable(partition_codes("reference"), (X0, X1), 1.0, trials=100_000, seed=2,
                       statistics=code_indicators)
    assert not r.passed and r.epsilon_lower_bound > 1.5, r.summary()

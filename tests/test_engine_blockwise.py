"""The release block by block (`hierdp_core.engine.blockwise`): the same values, bit for
bit, as the whole-tree release from the same seed (TopDown and least squares are
separable per parent, and every block's noise has its own stream), and with secure
(OpenDP) noise the same noise distribution."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hierdp_core.consistency.segments import segmented_cumsum
from hierdp_core.engine import blockwise
from hierdp_core.mechanisms import streams
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import Geometric, NoiseSource
from hierdp_core.queries.counts import count_data_from_table

CASES = [("topdown", {}, PrivacyBudget.pure(1.0)),
         ("topdown", {"root_invariant": True}, PrivacyBudget.pure(0.5)),
         ("topdown", {"estimate": "noisy"}, PrivacyBudget.zcdp(0.3)),
         ("least-squares", {"noise": "laplace"}, PrivacyBudget.pure(1.0)),
         ("raw-geometric", {"round_clamp": True}, PrivacyBudget.pure(1.0)),
         ("raw-discrete-gaussian", {}, PrivacyBudget.zcdp(1.0))]


def person_table(n: int = 20_000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"s": rng.integers(0, 7, n).astype(str)})
    t["c"] = t["s"] + "-" + rng.integers(0, 5, n).astype(str)
    t["b"] = t["c"] + "-" + rng.integers(0, 30, n).astype(str)
    t["sex"] = rng.choice(["F", "M"], n)
    return t


@pytest.fixture(scope="module")
def data():
    return count_data_from_table(person_table(), ["s", "c", "b"], category_columns=["sex"])


@pytest.mark.parametrize("max_blocks", [streams.MAX_BLOCKS, 3])
@pytest.mark.parametrize(("name", "params", "budget"), CASES)
def test_blockwise_release_is_the_whole_tree_release_bit_for_bit(data, monkeypatch, name,
                                                                  params, budget, max_blocks):
    monkeypatch.setattr(streams, "MAX_BLOCKS", max_blocks)  # 3: blocks of 3, 3 and 1 states
    mechanism = get_mechanism(name)
    whole = mechanism.release(data, budget, source=NoiseSource(seed=5), **params)
    parts = blockwise.release_count_data(mechanism, data, budget, source=NoiseSource(seed=5),
                                         **params)
    assert whole.values.dtype == parts.values.dtype
    assert np.array_equal(whole.values, parts.values)
    assert np.array_equal(whole.noisy, parts.noisy, equal_nan=True)
    assert whole.randomness == parts.randomness and whole.ledger.equals(parts.ledger)


def test_a_seeded_source_gives_fresh_streams_to_each_release(data):
    source = NoiseSource(seed=5)
    mechanism = get_mechanism("raw-geometric")
    first = mechanism.release(data, PrivacyBudget.pure(1.0), source=source)
    second = mechanism.release(data, PrivacyBudget.pure(1.0), source=source)
    assert not np.array_equal(first.noisy, second.noisy)


def test_segmented_cumsum_sums_each_segment_on_its_own():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 70, 300)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    values = rng.normal(0, 1e6, lengths.sum())
    out = segmented_cumsum(values, starts)
    for start, length in zip(starts, lengths, strict=True):
        alone = np.cumsum(values[start:start + length])
        assert np.array_equal(out[start:start + length], alone)


def _noise_moments(noise: Geometric) -> tuple[float, float]:
    """(variance, fourth moment) of the two-sided geometric, from its pmf."""
    k = np.arange(-int(60 * noise.scale), int(60 * noise.scale) + 1)
    p = noise.pmf(k)
    return float(np.sum(p * k**2.0)), float(np.sum(p * k**4.0))


def test_secure_blockwise_noise_has_the_whole_tree_distribution(monkeypatch):
    """Secure noise is not seeded: each engine's noise is checked against the exact
    distribution, with 5-standard-error tolerances (a false alarm below 1e-6)."""
    monkeypatch.setattr(streams, "MAX_BLOCKS", 2)
    table = person_table(3_000, seed=9)
    table["k"] = np.random.default_rng(9).integers(0, 150, len(table)).astype(str)
    d = count_data_from_table(table, ["s", "c"], category_columns=["k"])
    mechanism, budget = get_mechanism("raw-geometric"), PrivacyBudget.pure(0.9)
    noise = Geometric.for_epsilon(0.3)  # three levels, the uniform split
    variance, fourth = _noise_moments(noise)
    half = noise.abs_quantile(0.5)
    p_half = float(noise.pmf(np.arange(-half, half + 1)).sum())
    for release in (mechanism.release(d, budget, source=NoiseSource(secure=True)),
                    blockwise.release_count_data(mechanism, d, budget,
                                                 source=NoiseSource(secure=True))):
        draws = (release.noisy - d.node_counts()).ravel().astype(float)
        n = draws.size
        assert abs(draws.mean()) < 5 * math.sqrt(variance / n)
        assert abs(np.mean(draws**2) - variance) < 5 * math.sqrt((fourth - variance**2) / n)
        inside = np.mean(np.abs(draws) <= half)
        assert abs(inside - p_half) < 5 * math.sqrt(p_half * (1 - p_half) / n)
        cells = {m["measurement"]: m["cells"] for m in release.randomness["measurements"]}
        assert sum(cells.values()) == n

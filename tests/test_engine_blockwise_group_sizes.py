"""Group sizes block by block (`hierdp_core.engine.blockwise_group_sizes`): the same values,
bit for bit, as the whole-tree release from the same seed (TopDown and the hand-down of
every region's groups are per parent, every block's noise has its own stream); secure
noise with the whole-tree distribution; the mechanisms that are not separable refused."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hierdp_core.engine import blockwise_group_sizes as bgs
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import group_size_data_from_people
from hierdp_core.mechanisms import streams
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import Geometric, NoiseSource

LEVELS = ["s", "c", "b"]
CASES = [("gs-noisy", {}), ("gs-topdown", {}), ("gs-topdown", {"groups": "exact"}),
         ("gs-topdown", {"groups": "exact", "noise": "laplace"})]


def people(n_groups: int = 4_000, seed: int = 3) -> pd.DataFrame:
    """Persons of ``n_groups`` households (1 to 7 persons) in 7 states x 5 counties x 20
    blocks."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 8, n_groups)
    s, c, b = (rng.integers(0, m, n_groups).astype(str) for m in (7, 5, 20))
    t = pd.DataFrame({"hh": np.repeat(np.arange(n_groups), size).astype(str)})
    t["s"] = np.repeat(s, size)
    t["c"] = t["s"] + "-" + np.repeat(c, size)
    t["b"] = t["c"] + "-" + np.repeat(b, size)
    return t


@pytest.fixture(scope="module")
def data():
    return group_size_data_from_people(people(), LEVELS, "hh", max_size=5)


@pytest.mark.parametrize("max_blocks", [streams.MAX_BLOCKS, 3])
@pytest.mark.parametrize(("name", "params"), CASES)
def test_blockwise_group_sizes_are_the_whole_tree_release_bit_for_bit(data, monkeypatch, name,
                                                                      params, max_blocks):
    monkeypatch.setattr(streams, "MAX_BLOCKS", max_blocks)  # 3: blocks of 3, 3 and 1 states
    mechanism, budget = get_mechanism(name), PrivacyBudget.pure(1.0)
    whole = mechanism.release(data, budget, source=NoiseSource(seed=5), **params)
    parts = bgs.release_group_size_data(mechanism, data, budget, source=NoiseSource(seed=5),
                                        **params)
    assert whole.values.dtype == parts.values.dtype
    assert np.array_equal(whole.values, parts.values)
    assert np.array_equal(whole.noisy, parts.noisy)
    assert whole.randomness == parts.randomness and whole.ledger.equals(parts.ledger)
    assert whole.privacy == parts.privacy and whole.categories == parts.categories
    if params.get("groups") == "exact":  # the hand-down kept every region's groups
        assert np.array_equal(parts.values.sum(axis=1), data.groups())


@pytest.mark.parametrize("name", ["gs-mh-dp", "gs-mc-chain", "gs-kuo-hc"])
def test_mechanisms_that_are_not_separable_are_refused(data, name):
    with pytest.raises(InputError, match="cannot run block by block"):
        bgs.release_group_size_data(get_mechanism(name), data, PrivacyBudget.pure(1.0),
                                    source=NoiseSource(seed=1))


def test_secure_blockwise_noise_has_the_whole_tree_distribution(data, monkeypatch):
    """Secure noise is not seeded: every engine's noise on all (node, size) cells is checked
    against the exact two-sided geometric (scale 2 x 4 levels / epsilon: sensitivity 2 per
    level), mean, variance and the central half's mass within 5 standard errors (a false
    alarm below 1e-6 each)."""
    monkeypatch.setattr(streams, "MAX_BLOCKS", 2)
    mechanism, budget = get_mechanism("gs-noisy"), PrivacyBudget.pure(2.0)
    noise = Geometric.for_epsilon(0.5, 2.0)
    k = np.arange(-int(60 * noise.scale), int(60 * noise.scale) + 1)
    pmf = noise.pmf(k)
    variance, fourth = float(np.sum(pmf * k**2.0)), float(np.sum(pmf * k**4.0))
    half = noise.abs_quantile(0.5)
    p_half = float(noise.pmf(np.arange(-half, half + 1)).sum())
    for release in (mechanism.release(data, budget, source=NoiseSource(secure=True)),
                    bgs.release_group_size_data(mechanism, data, budget,
                                                source=NoiseSource(secure=True))):
        draws = (release.noisy - data.node_counts()).ravel()
        n = draws.size
        assert abs(draws.mean()) < 5 * math.sqrt(variance / n)
        assert abs(np.mean(draws**2) - variance) < 5 * math.sqrt((fourth - variance**2) / n)
        inside = np.mean(np.abs(draws) <= half)
        assert abs(inside - p_half) < 5 * math.sqrt(p_half * (1 - p_half) / n)
        cells = [m["cells"] for m in release.randomness["measurements"]]
        assert len(cells) == 4 and sum(cells) == n  # one entry per level, every cell

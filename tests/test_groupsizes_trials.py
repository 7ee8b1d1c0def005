"""Trials estimated together give every value of the trials made one by one, bit for bit:
`GroupSizeMechanism.trials` (what the privacy audit runs) against successive releases from
the same source, for every registered mechanism and parameter choice on both audit pairs;
and each side-by-side estimator against its one-release form on trees of other shapes,
with integral and float noise, a trial with no group, weighted levels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierdp_core.audit.neighbours import group_size_pair
from hierdp_core.groupsizes import fioretto, fioretto_chain, kuo
from hierdp_core.groupsizes.group_counts import keep_group_counts, keep_group_counts_trials
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import PERSON_IN_GROUP, WHOLE_GROUP
from hierdp_core.privacy.samplers import NoiseSource

TRIALS = 12
CONFIGS = [(i.name, {}) for i in list_mechanisms("group-sizes")] + [
    (i.name, {p.name: choice}) for i in list_mechanisms("group-sizes")
    for p in i.parameters if p.choices for choice in p.choices if choice != p.default]


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=[f"{n}{p}" for n, p in CONFIGS])
def test_trials_are_the_successive_releases(name, params):
    mechanism, budget = get_mechanism(name), PrivacyBudget.pure(0.7)
    for relation in (PERSON_IN_GROUP, WHOLE_GROUP):
        data = group_size_pair(relation).d2
        release, source = mechanism.releaser(data, budget, **params), NoiseSource(seed=4)
        one_by_one = np.stack([release(source).values for _ in range(TRIALS)])
        together = mechanism.trials(data, budget, TRIALS, NoiseSource(seed=4), **params)
        assert np.array_equal(together, one_by_one)


def trees(seed: int = 3):
    """(hierarchy, histograms of every node) of ragged two-level trees, 3 to 8 sizes."""
    rng = np.random.default_rng(seed)
    for k in range(3):
        states = rng.integers(0, 3 + k, 20)
        units = pd.DataFrame({"a": states.astype(str),
                              "b": [f"{s}-{i % (k + 2)}" for i, s in enumerate(states)]})
        h, _ = build_hierarchy(units.drop_duplicates(), ["a", "b"])
        yield h, h.aggregate(rng.integers(0, 5, (h.n_leaves, 3 + 2 * k)))


@pytest.mark.parametrize("integral", [True, False])
def test_side_by_side_programs_are_each_trials_own(integral):
    rng = np.random.default_rng(int(integral))
    for h, truth in trees():
        noisy = truth + rng.laplace(0, 3, (20, *truth.shape))
        noisy = np.rint(noisy) if integral else noisy
        G = int(truth[0].sum())
        totals = np.full(len(noisy), G)
        totals[0] = 0  # a trial with no group
        weights = rng.uniform(0.5, 2, h.n_levels)
        assert np.array_equal(fioretto.mh_dp_trials(h, noisy, totals, level_weights=weights),
                              [fioretto.mh_dp(h, y, g, level_weights=weights)
                               for y, g in zip(noisy, totals, strict=True)])
        cum = np.cumsum(noisy, axis=2)
        for groups in (None, truth.sum(axis=1)):
            assert np.array_equal(fioretto.mc_dp_trials(h, cum, G, groups=groups),
                                  [fioretto.mc_dp(h, c, G, groups=groups) for c in cum])
        chains = fioretto_chain.chain_cumulative(h, truth) + rng.laplace(0, 3, noisy.shape)
        chains[::2] = np.rint(chains[::2])  # integral and float chains mixed
        assert np.array_equal(fioretto_chain.chain_dp_trials(h, chains, G),
                              [fioretto_chain.chain_dp(h, c, G) for c in chains])
        per_trial = np.abs(noisy).astype(np.int64)
        counts = np.stack([h.aggregate(p[h.level_slice(h.depth)].sum(axis=1)) for p in per_trial])
        assert np.array_equal(keep_group_counts_trials(h, noisy, counts),
                              [keep_group_counts(h, y, c) for y, c in zip(noisy, counts,
                                                                          strict=True)])


@pytest.mark.parametrize("noise", ["geometric", "laplace"])
@pytest.mark.parametrize("methods", [("hc", "hc", "hc"), ("hg", "hg", "hg"), ("hg", "hc", "hc")])
@pytest.mark.parametrize("p", [1, 2])
def test_kuo_trials_are_successive_releases(noise, methods, p):
    stage = get_mechanism("gs-kuo-hierarchical").privacy_plan(noise=noise).stages[0]
    for seed, (h, truth) in enumerate(trees(5)):
        eps = [0.3, 0.6, 1.2]
        args = (h, truth, truth.sum(axis=1), eps, list(methods))
        together = kuo.kuo_release_trials(*args, NoiseSource(seed=seed), TRIALS, p=p,
                                          stage=stage)
        source = NoiseSource(seed=seed)
        one_by_one = [kuo.kuo_release(*args, source, p=p, stage=stage) for _ in range(TRIALS)]
        for part in (0, 1):  # released, Phase 1
            assert np.array_equal(together[part], [r[part] for r in one_by_one])

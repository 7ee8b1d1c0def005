"""Many flow releases grown together (`FlowMechanism.trees`, what the audit and the
intervals' bootstrap run) are, release by release, the releases `releaser` makes one after
another, bit for bit."""

import numpy as np
import pytest

from hierdp_core.audit.neighbours import flow_pair
from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

RHO = PrivacyBudget.zcdp(0.5)
APPROX = PrivacyBudget.approx(4.0, 1e-3)  # a low threshold: some cells released


def release_of(forest, t: int) -> list[tuple]:
    """Release ``t``'s levels from a forest, parents indexing its own level above."""
    out, before = [], 0
    for lv, trial in zip(forest.levels, forest.trial, strict=True):
        mine = trial == t
        parent = np.where(lv.parent[mine] >= 0, lv.parent[mine] - before, -1)
        before = int(np.flatnonzero(mine)[0]) if mine.any() else 0
        out.append((lv.origin[mine], lv.destination[mine], lv.value[mine], parent))
    return out


def as_tuples(levels) -> list[tuple]:
    return [(lv.origin, lv.destination, lv.value, lv.parent) for lv in levels]


def assert_same(forest, releases):
    for t, release in enumerate(releases):
        for got, want in zip(release_of(forest, t), as_tuples(release.levels), strict=True):
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype and np.array_equal(a, b)
    for level, diagnostic in enumerate(forest.diagnostics):
        for key in ("parents", "noised", "released"):
            assert diagnostic[key] == sum(r.diagnostics[level][key] for r in releases)


def assert_grown_together_as_one_by_one(name: str, data, n: int, budget=RHO, **params):
    mechanism = get_mechanism(name)
    trees = mechanism.trees(data, budget, **params)
    forest = trees([NoiseSource(seed=3)] * n)  # one source: its releases draw in turn
    release = mechanism.releaser(data, budget, **params)
    source = NoiseSource(seed=3)
    assert_same(forest, [release(source) for _ in range(n)])
    sources = [NoiseSource(seed=s) for s in range(3)]  # or a source each
    assert_same(trees(sources), [release(NoiseSource(seed=s)) for s in range(3)])


@pytest.mark.parametrize("name", ["inftda", "tda-l2"])
@pytest.mark.parametrize("neighbouring", ["bounded", "unbounded"])
@pytest.mark.parametrize("data", [synthetic_flows(2, 3, 0.5, seed=4),  # three blocks
                                  synthetic_flows(2, (2, 4), 0.3, seed=5, tree="origin"),
                                  flow_pair().d1],  # many narrow parents: column blocks
                         ids=["destination", "origin", "audit"])
def test_releases_grown_together_are_the_releases_one_by_one(name, neighbouring, data):
    n = 8 if data.geography.n_leaves > 4 else 80
    assert_grown_together_as_one_by_one(name, data, n, neighbouring=neighbouring)


@pytest.mark.parametrize(("name", "budget"), [("vanilla-gauss", RHO),
                                            ("stability-histogram", APPROX)])
@pytest.mark.parametrize("data", [synthetic_flows(2, 3, 0.5, seed=4), flow_pair().d1],
                         ids=["destination", "audit"])
def test_leaf_baselines_grown_together_are_the_releases_one_by_one(name, budget, data):
    assert_grown_together_as_one_by_one(name, data, 30, budget)


def test_milp_releases_grown_together_are_projected_release_by_release():
    # HiGHS's choice among optima depends on the other parents of its batch
    assert_grown_together_as_one_by_one("tda-linf-milp", flow_pair().d1, 12)


def test_secure_releases_grown_together_are_consistent():
    data = synthetic_flows(2, 3, 0.5, seed=4)
    forest = get_mechanism("inftda").trees(data, RHO)([NoiseSource(secure=True)] * 3)
    assert forest.levels[0].value.tolist() == [data.n] * 3
    for above, level in zip(forest.levels[:-1], forest.levels[1:], strict=True):
        assert level.value.min() > 0
        sums = np.bincount(level.parent, weights=level.value, minlength=above.size)
        assert np.array_equal(sums, above.value)

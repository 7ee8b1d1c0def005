"""Many range releases made together (`RangeReleaser.trials`, what the range audit runs)
are, release by release, the releases the releaser makes one after another, bit for bit
(values, estimates before consistency, Stage-1 edges, and the source's stream left where
they leave it); the batched draws (`TrialDraws`) refuse a call one release does not make."""

import numpy as np
import pandas as pd
import pytest

from hierdp_core.audit.neighbours import range_pair
from hierdp_core.audit.ranges import partition_code, range_adapter
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.privacy.trial_draws import TrialDraws
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.workloads import bands

NAMES = [i.name for i in list_mechanisms("ranges")]
#: Stage 1 at some level: the draws follow the data and the noise (made one by one)
PARTITIONED = {"dawa", "dawa-reference", "partition-laplace"}


def ages(workload: str | None = None):
    """Two regions of three provinces, ages 0..11, counts of every size (some zero); with
    ``workload`` the bands (atoms of several cells), else prefixes (one atom per cell)."""
    rng = np.random.default_rng(5)
    rows = [(f"R{r}", f"R{r}P{p}", a, int(rng.poisson(rng.integers(0, 30) * (1 + a % 4))))
            for r in range(2) for p in range(3) for a in range(12)]
    table = pd.DataFrame(rows, columns=["region", "province", "age", "residents"])
    data = range_data_from_table(table, ["region", "province"], "age",
                                 count_column="residents")
    return data if workload is None else data.with_workload(bands(data.values, workload))


EPSILON_1 = PrivacyBudget.pure(1.0)
DATA = {"audit": range_pair().d1, "prefixes": ages(), "bands": ages("0-3,4-9,10-11")}


def assert_together_as_one_by_one(name: str, data, n: int, budget=EPSILON_1,
                                  **params):
    releaser = get_mechanism(name).releaser(data, budget, **params)
    source = NoiseSource(seed=3)
    made = releaser.trials([source] * n)  # one source: its releases draw in turn
    after = source.rng.random()
    source = NoiseSource(seed=3)
    releases = [releaser(source) for _ in range(n)]
    assert source.rng.random() == after
    sources = [NoiseSource(seed=s) for s in (4, 4, 5)]  # or a source each, some shared
    releases_each = [releaser(NoiseSource(seed=s)) for s in (4, 4, 5)]
    for together, one_by_one in ((made, releases), (releaser.trials(sources), releases_each)):
        assert together.values.shape == (len(one_by_one), *data.node_counts().shape)
        for t, release in enumerate(one_by_one):
            assert together.values.dtype == release.values.dtype
            assert np.array_equal(together.values[t], release.values)
            assert np.array_equal(together.noisy[t], release.noisy, equal_nan=True)
            if together.edges is None:
                assert release.edges is None
            else:
                assert together.edges[t] is not None or release.edges is None
                if release.edges is not None:
                    assert all(a is b is None or np.array_equal(a, b)
                               for a, b in zip(together.edges[t], release.edges, strict=True))
    return releaser


@pytest.mark.parametrize("data", DATA, ids=list(DATA))
@pytest.mark.parametrize("name", NAMES)
def test_releases_made_together_are_the_releases_one_by_one(name, data):
    releaser = assert_together_as_one_by_one(name, DATA[data], 40)
    # the ones without a Stage 1 are made as one batched run (not release by release);
    # the bands leave a partition nothing to gain, so DAWA skips it there
    assert releaser.fixed_draws == (name not in PARTITIONED
                                    or (data == "bands" and name == "dawa"))


@pytest.mark.parametrize("params", [{"partition_from": 3},  # no level: greedy-h
                                    {"partition_from": 0, "partition_if": "always"},
                                    {"stage2": "uniform", "partition_if": "always"},
                                    {"stage2": "uniform", "partition_from": 3},
                                    {"stage2": "geometric", "partition_from": 3,
                                     "branching": 3}])
def test_dawa_variants_made_together(params):
    releaser = assert_together_as_one_by_one("dawa", DATA["prefixes"], 12, **params)
    assert releaser.fixed_draws == (params.get("partition_from") == 3)


@pytest.mark.parametrize("name", ["h2", "hb", "privelet", "greedy-h"])
def test_releases_made_together_with_a_split(name):
    assert_together_as_one_by_one(name, DATA["bands"], 15, PrivacyBudget.pure(2.0),
                                  split=[0.0, 0.3, 0.7])
    assert_together_as_one_by_one(name, DATA["prefixes"], 15, split=[0.2, 0.3, 0.5])


def test_secure_releases_made_together_are_consistent():
    data = DATA["prefixes"]
    releaser = get_mechanism("h2").releaser(data, PrivacyBudget.pure(1.0))
    made = releaser.trials([NoiseSource(secure=True)] * 3)
    h = data.hierarchy
    assert made.values.shape == (3, *data.node_counts().shape) and (made.values >= 0).all()
    assert all(np.array_equal(h.aggregate(v[h.level_slice(h.depth)]), v) for v in made.values)


def test_batched_draws_refuse_what_one_release_does_not_draw():
    calls = [(0.5, (2, 3)), (1.0, (4,))]
    draws = TrialDraws(calls, [NoiseSource(seed=1)] * 3)
    with pytest.raises(MechanismError, match="scale"):
        draws.laplace(0.0, 0.25, (6, 3))
    draws = TrialDraws(calls, [NoiseSource(seed=1)] * 3)
    with pytest.raises(MechanismError, match="cannot hold"):
        draws.laplace(0.0, 0.5, (3, 6))
    draws = TrialDraws(calls, [NoiseSource(seed=1)] * 3)
    draws.laplace(0.0, 0.5, (2, 9))  # trials as columns
    with pytest.raises(MechanismError, match="drew 1 of the 2"):
        draws.finish()
    draws.laplace(0.0, 1.0, (12,))
    draws.finish()
    with pytest.raises(MechanismError, match="more than one release"):
        draws.laplace(0.0, 1.0, (12,))
    with pytest.raises(MechanismError, match="secure"):
        TrialDraws(calls, [NoiseSource(secure=True)])


@pytest.mark.parametrize(("name", "params"), [("uniform", {}), ("h2", {}),
                                              ("dawa", {"partition_if": "always"})])
def test_audit_runner_gives_the_releases_one_by_one(name, params):
    """The range audit's rows: every node's released histogram, then the changed leaf's
    partition code (-1 without a partition), as the releases one by one give them."""
    mechanism = get_mechanism(name)
    adapter = range_adapter(mechanism, epsilon=1.0, params=params)
    pair = range_pair()
    node = int(pair.path[-1])
    out = adapter.run(pair.d1, 25, NoiseSource(seed=2))
    source = NoiseSource(seed=2)
    for row in out:
        release = mechanism.release(pair.d1, adapter.budget, source=source, **params)
        code = partition_code(None if release.edges is None else release.edges[node])
        assert np.array_equal(row, np.append(release.values.ravel(), code))
    codes = out[:, -1]
    assert (codes >= 0).all() if name != "h2" else (codes == -1).all()
    assert name != "dawa" or np.unique(codes).size > 1  # partitions that follow the noise

"""`Mechanism.releaser`: many releases of one dataset with the set-up made once are the
releases `release` gives, bit for bit, for every registered mechanism; and the group-size
mechanisms that estimate cell by cell give ``n`` trials at once (`raw_trials`), one trial
being the release itself (the audit's batched runner, `hierdp_core.audit.group_sizes`)."""

from __future__ import annotations

import numpy as np
import pytest
from release_inputs import budget_for, small_data

from hierdp_core.audit.group_sizes import group_size_adapter
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

SEED = 3


def _numbers(release) -> list:
    """The released numbers as bytes (NaN included) and the table as CSV."""
    return [np.ascontiguousarray(getattr(release, a)).tobytes() for a in ("values", "noisy")
            if getattr(release, a, None) is not None] + [release.to_frame().to_csv()]


@pytest.mark.parametrize("name", [i.name for i in list_mechanisms()])
def test_releaser_gives_the_releases_of_release(name):
    mechanism = get_mechanism(name)
    data = small_data(mechanism.info.queries[0])
    budget = budget_for(mechanism.info)
    one, other = NoiseSource(seed=SEED), NoiseSource(seed=SEED)
    release = mechanism.releaser(data, budget)
    for _ in range(3):  # the set-up is shared; every call draws its own noise
        a, b = release(one), mechanism.release(data, budget, source=other)
        assert _numbers(a) == _numbers(b)
        assert a.privacy == b.privacy and a.ledger.equals(b.ledger)


def test_a_releaser_checks_its_data_once_made():
    with pytest.raises(MechanismError, match="group sizes"):
        get_mechanism("gs-mc-dp").releaser(small_data("counts"), PrivacyBudget.pure(1.0))


def test_raw_trials_are_independent_releases_side_by_side():
    gs = get_mechanism("gs-noisy")
    data, budget = small_data("group-sizes"), PrivacyBudget.pure(1.0)
    one = gs.raw_trials(data, budget, 1, NoiseSource(seed=SEED))
    release = gs.release(data, budget, source=NoiseSource(seed=SEED))
    assert one.shape == (1, *release.values.shape)
    assert np.array_equal(one[0], release.values)  # one trial: the release itself
    many = gs.raw_trials(data, budget, 400, NoiseSource(seed=SEED))
    assert many.shape == (400, *release.values.shape) and many.min() >= 0
    assert len({trial.tobytes() for trial in many}) > 300  # every trial has its own noise
    # every cell as distributed as in releases one by one: means within 5 standard errors
    source = NoiseSource(seed=SEED + 1)
    alone = np.array([gs.release(data, budget, source=source).values for _ in range(400)])
    se = np.sqrt((many.var(axis=0) + alone.var(axis=0)) / 400)
    assert np.all(np.abs(many.mean(axis=0) - alone.mean(axis=0)) <= 5 * se + 1e-12)


def test_only_cell_by_cell_estimates_give_raw_trials():
    data, budget = small_data("group-sizes"), PrivacyBudget.pure(1.0)
    with pytest.raises(MechanismError, match="cell by cell"):
        get_mechanism("gs-mc-dp").raw_trials(data, budget, 2, NoiseSource(seed=SEED))
    assert group_size_adapter(get_mechanism("gs-noisy"), epsilon=1.0).batched
    assert not group_size_adapter(get_mechanism("gs-mc-dp"), epsilon=1.0).batched
    assert not group_size_adapter(get_mechanism("gs-noisy"), epsilon=1.0, batch=False).batched

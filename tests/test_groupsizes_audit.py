"""Every registered private group-size mechanism passes the empirical privacy audit; a
mechanism that calibrates its noise to half the sensitivity is caught, and so is the
paper-literal chain mechanism (not private as published)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from hierdp_core.audit import audit_mechanism
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.mechanisms.group_sizes import NoisyBaseline

SEED = 11
#: per side. Passing is checked with fewer trials than catching: at 1,500 a registered
#: mechanism whose noise claims a third of its sensitivity is still caught (gs-noisy: lower
#: bound 1.63 at epsilon 1), one claiming half is not (0.89; at 4,000 trials 1.21), so the
#: half-sensitivity test below keeps 8,000 (bound 1.47 one release per trial; 1.28 with the
#: trials measured side by side, 1.17 to 1.44 over seeds 1-12) and the paper chain 4,000
#: (2.40 > 2)
PASS_TRIALS = 1500
TRIALS = 4000
#: gs-mc-chain's pass is test_audit_stages.test_private_chain_passes_at_epsilon_one, at 4,000
#: trials (a stronger check than 1,500 here, and the same audit: one run of it in the suite)
PRIVATE = [i.name for i in list_mechanisms("group-sizes") if i.private and i.name != "gs-mc-chain"]
NOT_PRIVATE = [i.name for i in list_mechanisms("group-sizes") if not i.private]


@dataclass
class HalfSensitivityNoisy(NoisyBaseline):
    """Broken on purpose: plain histograms have L1 sensitivity 2, this plan claims 1 (and
    the noise, calibrated from the plan, follows it)."""

    def privacy_plan(self, **params):
        plan = super().privacy_plan(**params)
        stage, = plan.stages
        return replace(plan, stages=(replace(stage, sensitivity=1.0),))


@pytest.mark.parametrize("name", PRIVATE)
def test_private_group_size_mechanisms_pass(name):
    r = audit_mechanism(name, 1.0, trials=PASS_TRIALS, seed=SEED)
    assert r.passed and r.epsilon_lower_bound <= 1.0, r.summary()


def test_half_sensitivity_noise_is_caught():
    r = audit_mechanism(HalfSensitivityNoisy(), 1.0, trials=2 * TRIALS, seed=SEED)
    assert not r.passed and r.epsilon_lower_bound > 1.0, r.summary()


@pytest.mark.parametrize("name", NOT_PRIVATE)
def test_not_private_variants_fail(name):
    """The paper-literal chain mechanism: its post-processing hides part of the leak, so
    the claim is checked at epsilon = 2 (true epsilon about 2 x 11 / 3 on the audit tree)."""
    assert NOT_PRIVATE == ["gs-mc-chain-paper"]
    r = audit_mechanism(name, 2.0, trials=TRIALS, seed=SEED)
    assert not r.passed and r.epsilon_lower_bound > 2.0, r.summary()

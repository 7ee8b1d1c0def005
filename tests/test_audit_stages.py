"""Privacy plans and stage-by-stage audits: both published flaws are caught at epsilon 1
(the reference DAWA's Stage 1 against its share rho * epsilon; the paper's chain mechanism for
group sizes under the relation it claims) and their private counterparts pass, with fixed
seeds and fewer trials than the CLI's default."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

from hierdp_core.audit import audit_mechanism
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.mechanisms.group_sizes import FiorettoDP
from hierdp_core.mechanisms.ranges import RangeMechanism
from hierdp_core.privacy.plan import (
    ADD_REMOVE_PERSON,
    ADD_REMOVE_TRIP,
    PERSON_IN_GROUP,
    SUBSTITUTE_TRIP,
    WHOLE_GROUP,
    PrivacyPlan,
    Stage,
)

SEED = 7
STAGE_TRIALS = 4000  # per side for the whole mechanism; stages run on their own get 5 x
CHAIN_TRIALS = 4000  # as every group-size pass had before; the only pass audit of gs-mc-chain
PAPER_CHAIN_TRIALS = 12_000  # bound about 1.15 at 8,000 trials, 1.44 at 20,000


# ---- the plans ----------------------------------------------------------------------------
def test_dawa_plans_have_two_stages_with_their_shares():
    for name in ("dawa", "dawa-reference", "partition-laplace"):
        plan = get_mechanism(name).privacy_plan(rho=0.3)
        assert plan.composite and [s.name for s in plan.stages] == ["partition", "measurement"]
        assert [s.share for s in plan.stages] == pytest.approx([0.3, 0.7])
        assert all(s.run is not None and s.relation == ADD_REMOVE_PERSON for s in plan.stages)
    assert not get_mechanism("greedy-h").privacy_plan().composite
    assert not get_mechanism("h2").privacy_plan().composite


def test_default_plans_follow_the_query_kind_and_relation():
    relation = {i.name: get_mechanism(i.name).privacy_plan().stages[0].relation
                for i in list_mechanisms() if not get_mechanism(i.name).privacy_plan().composite}
    assert relation["topdown"] == ADD_REMOVE_PERSON
    assert relation["gs-mc-chain-paper"] == PERSON_IN_GROUP
    assert relation["inftda"] == SUBSTITUTE_TRIP
    unbounded = get_mechanism("inftda").privacy_plan(neighbouring="unbounded")
    assert unbounded.stages[0].relation == ADD_REMOVE_TRIP


def test_plans_are_checked():
    with pytest.raises(MechanismError, match="relation"):
        Stage("s", "no-such-relation", 1.0, "laplace", 0.5)
    with pytest.raises(MechanismError, match="share"):
        Stage("s", ADD_REMOVE_PERSON, 1.0, "laplace", 0.0)
    stage = Stage("s", ADD_REMOVE_PERSON, 1.0, "laplace", 0.7)
    with pytest.raises(MechanismError, match="more than all"):
        PrivacyPlan("m", "pure-dp", (stage, stage))


def test_stage1_runner_gives_partitions_of_every_row():
    plan = get_mechanism("dawa-reference").privacy_plan()
    from hierdp_core.privacy.samplers import NoiseSource
    from hierdp_core.ranges.workloads import prefix_ranges

    x = np.zeros((50, 8))
    inner = plan.stages[0].run(x, prefix_ranges(8), 1.0, NoiseSource(seed=1))
    assert inner.shape == (50, 7) and set(np.unique(inner)) <= {0.0, 1.0}
    values = plan.stages[1].run(x, prefix_ranges(8), 1.0, NoiseSource(seed=1))
    assert values.shape == (50, 8)


# ---- the published flaws fail, their private counterparts pass ------------------------------
@functools.cache
def stage_audit(name: str):
    """The audit of ``name`` at epsilon 1 with STAGE_TRIALS and SEED. Seeded, so the same
    result for every test: made once per test process (DAWA's pass and power checks read
    one audit)."""
    return audit_mechanism(name, 1.0, trials=STAGE_TRIALS, seed=SEED)


def test_reference_dawa_fails_its_stage1_share():
    r = stage_audit("dawa-reference")
    assert not r.passed, r.summary()
    failed = [s for s in r.stages if not s.passed]
    assert failed and all(s.stage.startswith("partition") for s in failed), r.summary()
    assert r.claimed_epsilon == pytest.approx(0.25) and r.epsilon_lower_bound > 0.25
    assert r.budget_epsilon == 1.0 and r.stage.startswith("partition")
    # the joint level is split over the four stage audits (two stages x two pairs)
    assert len(r.stages) == 4 and all(s.alpha == pytest.approx(0.05 / 4) for s in r.stages)


@pytest.mark.parametrize("name", ["dawa", "partition-laplace"])
def test_private_dawa_passes_every_stage(name):
    r = stage_audit(name)
    assert r.passed and all(s.passed for s in r.stages), r.summary()
    claims = sorted({round(s.claimed_epsilon, 6) for s in r.stages})
    assert claims == [0.25, 0.75]


def test_stage_audit_has_power_on_the_measurement():
    """The measurement stage is Laplace(1/epsilon2) on the cells: its bound comes close to
    its share, so a stage spending twice its share would be caught."""
    r = stage_audit("dawa")
    measured = [s for s in r.stages if s.stage.startswith("measurement")]
    assert max(s.epsilon_lower_bound for s in measured) > 0.5, r.summary()


def test_paper_chain_fails_at_epsilon_one():
    r = audit_mechanism("gs-mc-chain-paper", 1.0, trials=PAPER_CHAIN_TRIALS, seed=SEED)
    assert not r.passed and r.epsilon_lower_bound > 1.0, r.summary()


def test_private_chain_passes_at_epsilon_one():
    r = audit_mechanism("gs-mc-chain", 1.0, trials=CHAIN_TRIALS, seed=SEED)
    assert r.passed and r.epsilon_lower_bound <= 1.0, r.summary()


# ---- the relation is read from the plan -----------------------------------------------------
@dataclass
class ClaimsWholeGroups(FiorettoDP):
    """Claims privacy for a whole group created or removed, yet publishes every region's
    number of groups exactly (as every group-size entry does): the audit must say no."""

    def privacy_plan(self, **params):
        return PrivacyPlan(self.info.name, "pure-dp",
                           (Stage("release", WHOLE_GROUP, 1.0, "geometric", 1.0),))


def test_a_whole_group_claim_is_audited_on_whole_group_neighbours():
    r = audit_mechanism(ClaimsWholeGroups(variant="mc"), 1.0, trials=400, seed=SEED)
    assert "new group" in r.neighbours
    assert not r.passed and r.epsilon_lower_bound > 1.0, r.summary()


@dataclass
class PartlyRunnable(RangeMechanism):
    """DAWA whose measurement stage cannot run on its own: the whole mechanism is audited
    too."""

    def privacy_plan(self, **params):
        plan = super().privacy_plan(**params)
        partition, measurement = plan.stages
        return PrivacyPlan(plan.mechanism, plan.definition,
                           (partition, Stage("measurement", measurement.relation, 1.0,
                                             "laplace", measurement.share)))


def test_a_stage_that_cannot_run_alone_brings_in_the_whole_mechanism():
    base = get_mechanism("dawa")
    m = PartlyRunnable(info=base.info, estimator=base.estimator)
    r = audit_mechanism(m, 1.0, trials=200, seed=SEED)
    labels = [s.stage for s in r.stages]
    assert labels[:2] == ["partition (pair 1)", "partition (pair 2)"]
    assert r.stages[-1].stage == "whole mechanism" and r.stages[-1].claimed_epsilon == 1.0
    assert r.passed, r.summary()

"""Privacy plans as the one source of the claim: every registered mechanism's manifest carries
its plan (shares summing to at most 1, sensitivities as numbers), and the noise of a secure
release was calibrated (and mapped by OpenDP) with the plan's sensitivity."""

from __future__ import annotations

import dataclasses
import math

import pytest
from release_inputs import budget_for, small_data

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.export import build_manifest
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, RELATIONS, Stage
from hierdp_core.privacy.samplers import Geometric, Laplace, NoiseSource

#: the query kinds whose mechanisms calibrate their noise from their plan
CONVERTED = ("counts", "group-sizes", "flows")


@pytest.mark.parametrize("info", list_mechanisms(), ids=lambda i: i.name)
def test_every_manifest_has_the_mechanism_plan(info):
    kind = info.queries[0]
    release = get_mechanism(info.name).release(small_data(kind), budget_for(info),
                                               source=NoiseSource(seed=1))
    plan = build_manifest(release, structure_declared=True)["privacy"]["plan"]
    assert plan["mechanism"] == info.name and plan["stages"]
    assert sum(s["share"] for s in plan["stages"]) <= 1 + 1e-9
    assert all(s["neighbouring"] == RELATIONS[s["relation"]] for s in plan["stages"])
    assert all("run" not in s for s in plan["stages"])
    if kind in CONVERTED:
        for stage in plan["stages"]:
            assert isinstance(stage["sensitivity"], float) and stage["sensitivity"] > 0
            assert math.isfinite(stage["sensitivity"])


SECURE = [i for kind in CONVERTED for i in list_mechanisms(kind)
          if "relaxed" not in i.name]  # the relaxed QPs are slow and measure as gs-mh-dp


@pytest.mark.parametrize("info", SECURE, ids=lambda i: i.name)
def test_secure_noise_is_mapped_with_the_plan_sensitivity(info):
    mechanism = get_mechanism(info.name)
    release = mechanism.release(small_data(info.queries[0]), budget_for(info),
                                source=NoiseSource(secure=True))
    stage, = mechanism.privacy_plan(**release.parameters).stages
    measurements = release.randomness["measurements"]
    assert measurements
    assert all(m["sensitivity"] == stage.sensitivity for m in measurements)
    assert release.privacy["relation"] == stage.relation


RANGES = list_mechanisms("ranges")


@pytest.mark.parametrize("info", RANGES, ids=lambda i: i.name)
def test_range_plans_state_their_stage_sensitivities(info):
    """The measurement (the last stage) has L1 sensitivity 1, except Privelet, whose weighted
    coefficients' sensitivity depends on the domain; DAWA's Stage 1 is a selection from noisy
    scores, with no single sensitivity. Both say so in their note."""
    mechanism = get_mechanism(info.name)
    *first, measurement = mechanism.privacy_plan().stages
    if info.name == "privelet":
        assert measurement.sensitivity is None and "1 + log2 N" in measurement.note
    else:
        assert measurement.sensitivity == 1.0
    for stage in first:
        assert stage.name == "partition" and stage.sensitivity is None
        assert "no single sensitivity" in stage.note
    assert mechanism.measurement_sensitivity() == measurement.sensitivity


@pytest.mark.parametrize("info", RANGES, ids=lambda i: i.name)
def test_secure_range_noise_is_mapped_with_the_plan_sensitivity(info):
    mechanism = get_mechanism(info.name)
    release = mechanism.release(small_data("ranges"), budget_for(info), source=NoiseSource(secure=True))
    stages = mechanism.privacy_plan(**release.parameters).stages
    mapped = [m for m in release.randomness["measurements"] if m["sensitivity"] is not None]
    assert all(m["sensitivity"] == stages[-1].sensitivity for m in mapped)
    assert bool(mapped) == (stages[-1].sensitivity is not None)
    assert release.privacy["relation"] == stages[0].relation


@pytest.mark.parametrize("name", ["identity", "uniform", "h2", "greedy-h", "dawa"])
def test_range_noise_is_calibrated_from_the_plan(name):
    """A plan stating another sensitivity scales every measurement's noise with it (the
    estimators take no default)."""
    base = get_mechanism(name)
    doubled = dataclasses.replace(base, sensitivity=2.0)
    assert doubled.privacy_plan().stages[-1].sensitivity == 2.0
    runs = [m.release(small_data("ranges"), PrivacyBudget.pure(1.0), source=NoiseSource(secure=True))
            for m in (base, doubled)]
    one, two = ([m for m in r.randomness["measurements"] if m["sensitivity"] is not None]
                for r in runs)
    assert one and len(one) == len(two)
    if name == "dawa":  # the partition is data-dependent: compare per measured budget
        one, two = ({m["budget_share"]: m["scale"] for m in ms} for ms in (one, two))
        assert one.keys() == two.keys()
        assert all(math.isclose(two[k], 2 * one[k]) for k in one)
    else:
        assert all(b["sensitivity"] == 2.0 and math.isclose(b["scale"], 2 * a["scale"])
                   for a, b in zip(one, two, strict=True))


def test_a_stage_gives_its_noise_at_the_exact_scale():
    """`Stage.noise_for`: the stage's noise with scale sensitivity / epsilon, bit for bit;
    refused for a stage without a sensitivity, for noise without an epsilon calibration and
    for epsilon <= 0."""
    stage = Stage("measurement", ADD_REMOVE_PERSON, 3.0, "laplace", 1.0)
    noise = stage.noise_for(0.7)
    assert isinstance(noise, Laplace) and noise.scale == 3.0 / 0.7
    geometric = dataclasses.replace(stage, noise="geometric").noise_for(0.7)
    assert isinstance(geometric, Geometric) and geometric.scale == 3.0 / 0.7
    for bad in (dataclasses.replace(stage, sensitivity=None),
                dataclasses.replace(stage, noise="gaussian")):
        with pytest.raises(MechanismError, match="no epsilon calibration"):
            bad.noise_for(1.0)
    with pytest.raises(BudgetError):
        stage.noise_for(0.0)

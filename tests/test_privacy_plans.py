"""Privacy plans as the one source of the claim: every registered mechanism's manifest carries
its plan (shares summing to at most 1, sensitivities as numbers), and the noise of a secure
release was calibrated (and mapped by OpenDP) with the plan's sensitivity."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from release_inputs import budget_for, small_data

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.export import build_manifest
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, RELATIONS, Stage
from hierdp_core.privacy.samplers import Geometric, Laplace, NoiseSource
from hierdp_core.ranges.baselines import privelet_weights, tree_height

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
    for stage in plan["stages"]:  # every stage, range stages included, states a number
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


#: (sensitivity, scale_factor) of DAWA's Stage 1: PrivTree's scores (3 = (2 beta - 1)/(beta
#: - 1)), the least-cost bucket costs' bound 2 (a noisy minimum: 2; the reference code: 1)
STAGE1 = {"privtree": (1.0, 3.0), "least-cost": (2.0, 2.0), "least-cost-reference": (2.0, 1.0)}


@pytest.mark.parametrize("info", RANGES, ids=lambda i: i.name)
def test_range_plans_state_their_stage_sensitivities(info):
    """Every stage states its L1 sensitivity: the measurement 1 (Privelet's per group of
    weighted Haar coefficients, in 1 + log2 N parts sharing epsilon); DAWA's Stage 1 that of
    its scores or bucket costs, with its selection's calibration (`STAGE1`)."""
    mechanism = get_mechanism(info.name)
    *first, measurement = mechanism.privacy_plan().stages
    assert (measurement.sensitivity, measurement.scale_factor) == (1.0, 1.0)
    assert measurement.parts == ("1 + log2 N" if info.name == "privelet" else "")
    assert measurement.single_measurement == (info.name != "privelet")
    partition = "least-cost-reference" if info.name == "dawa-reference" else "privtree"
    assert [(s.name, s.output, s.sensitivity, s.scale_factor) for s in first] == (
        [("partition", "partition", *STAGE1[partition])] if first else [])
    assert bool(first) == (info.name in ("dawa", "dawa-reference", "partition-laplace"))
    assert mechanism.measurement_sensitivity() == measurement.sensitivity
    if info.name == "dawa":
        stage1 = mechanism.privacy_plan(partition="least-cost").stages[0]
        assert (stage1.sensitivity, stage1.scale_factor) == STAGE1["least-cost"]
        # the plan describes a partitioned level whatever partition_from chooses
        assert mechanism.privacy_plan(partition_from=1).composite


def test_dawa_stage1_draws_the_noise_of_its_plan_stage():
    """Stage 1's scores get the plan stage's Laplace(scale_factor * sensitivity / epsilon1):
    a stage stating another factor scales them with it."""
    from hierdp_core.ranges.dawa import dawa, partition_stage
    from hierdp_core.ranges.workloads import prefix_ranges

    x = np.tile(np.r_[np.zeros(8), np.full(8, 40.0)], (3, 1))
    measurement = get_mechanism("dawa").privacy_plan().stages[-1]
    scales = []
    for factor in (3.0, 6.0):
        stage1 = dataclasses.replace(partition_stage("privtree", 0.25), scale_factor=factor)
        source = NoiseSource(secure=True)
        dawa(x, prefix_ranges(16), 2.0, source, stage=measurement, partition_stage=stage1,
             rho=0.25)
        scales.append({m["scale"] for m in source.measurements
                       if m["measurement"] == "ranges: DAWA Stage 1 scores"})
    assert scales == [{3.0 / 0.5}, {6.0 / 0.5}]
    with pytest.raises(MechanismError, match="partition_stage"):
        dawa(x, prefix_ranges(16), 2.0, NoiseSource(seed=1), stage=measurement, rho=0.25)


@pytest.mark.parametrize("info", RANGES, ids=lambda i: i.name)
def test_secure_range_noise_is_mapped_with_the_plan_sensitivity(info):
    mechanism = get_mechanism(info.name)
    release = mechanism.release(small_data("ranges"), budget_for(info), source=NoiseSource(secure=True))
    stages = mechanism.privacy_plan(**release.parameters).stages
    mapped = [m for m in release.randomness["measurements"] if m["sensitivity"] is not None]
    assert mapped
    if info.name == "privelet":  # one entry per group of weighted coefficients W c
        height = tree_height(release.values.shape[-1], 2)
        assert len(mapped) == len(privelet_weights(height))
        assert all(m["sensitivity"] == stages[-1].sensitivity for m in mapped)
    else:
        assert all(m["sensitivity"] == stages[-1].sensitivity for m in mapped)
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


def test_a_stage_scales_its_selections_and_parts():
    """`Stage.scale_for`: scale_factor * sensitivity * parts / epsilon, bit for bit the
    formulas the range estimators used before (PrivTree's 3/epsilon1, Privelet's (1 + log2
    N)/epsilon, the least-cost Remark's per candidate); a query's own sensitivity above the
    stage's is refused; the record states a factor or parts only where there is one."""
    privtree = Stage("partition", ADD_REMOVE_PERSON, 1.0, "laplace", 0.25, scale_factor=3.0)
    privelet = Stage("release", ADD_REMOVE_PERSON, 1.0, "laplace", 1.0, parts="1 + log2 N")
    least_cost = Stage("partition", ADD_REMOVE_PERSON, 2.0, "laplace", 0.25, scale_factor=2.0)
    for epsilon in (0.1, 0.3, 1 / 3, 0.7, 2.5):
        assert privtree.noise_for(epsilon).scale == (2 * 2 - 1) / (2 - 1) * 1.0 / epsilon
        assert privelet.noise_for(epsilon, parts=1 + 9).scale == (1 + 9) / epsilon
        own = np.array([1.75, 1.5, 1.0, 0.0])
        assert np.array_equal(least_cost.scale_for(epsilon, sensitivity=(1.75 + own) / 2),
                              (1.75 + own) / epsilon)
    with pytest.raises(MechanismError, match="sensitivity must lie"):
        least_cost.scale_for(1.0, sensitivity=np.array([1.0, 2.5]))
    with pytest.raises(MechanismError, match="scale_factor"):
        dataclasses.replace(privtree, scale_factor=0.0)
    assert privtree.as_dict()["scale_factor"] == 3.0 and "parts" not in privtree.as_dict()
    assert privelet.as_dict()["parts"] == "1 + log2 N" and "scale_factor" not in privelet.as_dict()
    assert not privtree.single_measurement and not privelet.single_measurement

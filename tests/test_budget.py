"""Privacy budgets: validation, zCDP <-> (epsilon, delta) conversion, splits, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import BudgetError
from hierdp_core.privacy.budget import (
    APPROX_DP,
    PURE_DP,
    SPLIT_PRESETS,
    ZCDP,
    Accountant,
    PrivacyBudget,
    epsilon_delta_to_rho,
    rho_to_epsilon,
    split_shares,
    zcdp_delta,
)

BAD_NUMBERS = [0, 0.0, -1.0, -1e-300, float("nan"), float("inf"), float("-inf"), "1.0", "abc",
               "", None, True, [1.0], b"1"]
BAD_DELTAS = [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "1e-6", True, [1e-6]]


# ---- validation -----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
def test_budget_value_must_be_a_positive_finite_number(bad):
    for make in (PrivacyBudget.pure, PrivacyBudget.zcdp, lambda v: PrivacyBudget.approx(v, 1e-6)):
        with pytest.raises(BudgetError):
            make(bad)


@pytest.mark.parametrize("bad", BAD_DELTAS, ids=repr)
def test_delta_must_lie_strictly_between_0_and_1(bad):
    with pytest.raises(BudgetError):
        PrivacyBudget.zcdp(0.5, bad)
    with pytest.raises(BudgetError):
        PrivacyBudget.approx(1.0, bad)
    with pytest.raises(BudgetError):
        rho_to_epsilon(0.5, bad)


def test_other_budget_errors():
    with pytest.raises(BudgetError, match="unknown privacy definition"):
        PrivacyBudget("renyi", 1.0)
    with pytest.raises(BudgetError, match="needs a delta"):
        PrivacyBudget(APPROX_DP, 1.0)
    with pytest.raises(BudgetError, match="delta is needed"):
        PrivacyBudget.zcdp(0.5).epsilon_at_delta()


def test_valid_budgets():
    b = PrivacyBudget.pure(np.float32(0.5))
    assert (b.definition, b.value, b.delta, b.unit) == (PURE_DP, 0.5, None, "epsilon")
    assert type(b.value) is float
    assert PrivacyBudget.pure(2).value == 2.0
    assert b.epsilon_at_delta() == 0.5
    z = PrivacyBudget.zcdp(0.5, 1e-6)
    assert (z.definition, z.unit) == (ZCDP, "rho")
    assert z.epsilon_at_delta() == pytest.approx(rho_to_epsilon(0.5, 1e-6))
    d = z.as_dict()
    assert d["rho"] == 0.5 and d["delta"] == 1e-6
    assert d["epsilon_tight"] <= d["epsilon_simple"]
    assert PrivacyBudget.approx(1.0, 1e-6).epsilon_at_delta() == 1.0


def test_scaled_parts():
    assert PrivacyBudget.pure(2.0).scaled(0.25) == PrivacyBudget.pure(0.5)
    assert PrivacyBudget.zcdp(1.0, 1e-6).scaled(0.5) == PrivacyBudget.zcdp(0.5, 1e-6)
    part = PrivacyBudget.approx(1.0, 1e-6).scaled(0.25)  # deltas add up under approx DP
    assert part.value == 0.25 and part.delta == pytest.approx(2.5e-7)


# ---- conversions ----------------------------------------------------------------------------
def brute_force_delta(rho: float, eps: float) -> float:
    """CKS: delta = inf_{a>1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a, minimised on a
    log grid of a - 1 over [1e-9, 1e12], then on a fine linear grid around the best point."""

    def log_delta(a):
        return (a - 1) * (a * rho - eps) - np.log(a - 1) + a * np.log1p(-1 / a)

    a = 1 + np.logspace(-9, 12, 200_001)
    i = int(np.argmin(log_delta(a)))
    fine = np.linspace(a[max(i - 1, 0)], a[min(i + 1, len(a) - 1)], 200_001)[1:-1]
    return float(min(1.0, np.exp(min(log_delta(fine).min(), log_delta(a[i])))))


CONVERSION_CASES = [(rho, delta) for rho in (1e-8, 1e-4, 0.01, 0.5, 2.0, 10.0, 100.0)
                    for delta in (1e-12, 1e-6, 1e-3, 0.1)]


@pytest.mark.parametrize(("rho", "eps"), [(0.5, 3.0), (1e-8, 1e-5), (1e-6, 0.0), (1e-4, 0.01),
                                          (0.01, 0.5), (10.0, 30.0), (100.0, 150.0)])
def test_zcdp_delta_matches_brute_force(rho, eps):
    assert zcdp_delta(rho, eps) == pytest.approx(brute_force_delta(rho, eps), rel=1e-6)


@pytest.mark.parametrize(("rho", "delta"), CONVERSION_CASES)
def test_tight_epsilon_matches_brute_force_and_beats_simple(rho, delta):
    eps = rho_to_epsilon(rho, delta)
    simple = rho_to_epsilon(rho, delta, tight=False)
    assert simple == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)
    assert 0 <= eps <= simple
    if eps == 0:  # then rho-zCDP already gives (0, delta)
        assert brute_force_delta(rho, 0.0) <= delta * (1 + 1e-6)
        return
    # eps is within 1e-6 (relative) of the root of brute_force_delta(rho, .) = delta
    assert brute_force_delta(rho, eps * (1 - 1e-6)) > delta
    assert brute_force_delta(rho, eps * (1 + 1e-6)) < delta
    assert brute_force_delta(rho, eps) == pytest.approx(delta, rel=1e-6)


def test_known_values():
    simple = rho_to_epsilon(0.5, 1e-6, tight=False)
    assert simple == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))
    assert simple == pytest.approx(5.7565, abs=5e-5)
    assert rho_to_epsilon(0.5, 1e-6) == pytest.approx(5.221534, abs=1e-6)


@pytest.mark.parametrize("rho", [1e-6, 0.005, 0.5, 8.0])
def test_tight_epsilon_agrees_with_opendp(rho):
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    scale = 1 / math.sqrt(2 * rho)  # Gaussian mechanism, sensitivity 1: rho = 1 / (2 scale^2)
    meas = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False),
                              dp.absolute_distance(T=float), scale)
    profile = dp.c.make_zCDP_to_approxDP(meas).map(1.0)
    for delta in (1e-10, 1e-6, 1e-3):
        assert rho_to_epsilon(rho, delta) == pytest.approx(profile.epsilon(delta), rel=1e-6)


def test_conversion_is_monotone_on_a_grid():
    rhos = np.logspace(-6, 2, 40)
    for delta in (1e-9, 1e-5, 0.01):
        eps = np.array([rho_to_epsilon(r, delta) for r in rhos])
        positive = eps[eps > 0]  # 0 means rho-zCDP already gives (0, delta)-DP
        assert np.all(np.diff(positive) > 0) and np.all(eps[: len(eps) - len(positive)] == 0)
    assert rho_to_epsilon(1e-6, 0.01) == 0 < rho_to_epsilon(1e-2, 0.01)
    eps = np.array([rho_to_epsilon(0.3, d) for d in np.logspace(-14, -0.5, 40)])
    assert np.all(np.diff(eps) < 0)


RHO = st.floats(1e-6, 100.0)
DELTA = st.floats(1e-14, 0.5)


@settings(max_examples=60, deadline=None)
@given(RHO, RHO, DELTA, DELTA)
def test_conversion_monotone_in_rho_and_delta(rho1, rho2, d1, d2):
    rho1, rho2 = sorted((rho1, rho2))
    d1, d2 = sorted((d1, d2))
    assert rho_to_epsilon(rho1, d1) <= rho_to_epsilon(rho2, d1) * (1 + 1e-9)
    assert rho_to_epsilon(rho1, d1) >= rho_to_epsilon(rho1, d2) * (1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(RHO, DELTA)
def test_round_trip_rho_epsilon_rho(rho, delta):
    eps = rho_to_epsilon(rho, delta)
    if eps > 0:
        assert epsilon_delta_to_rho(eps, delta) == pytest.approx(rho, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 50.0), DELTA)
def test_round_trip_epsilon_rho_epsilon(eps, delta):
    rho = epsilon_delta_to_rho(eps, delta)
    assert rho > 0
    assert rho_to_epsilon(rho, delta) == pytest.approx(eps, rel=1e-6)


def test_epsilon_delta_to_rho_rejects_bad_input():
    for bad in (0.0, -1.0, float("nan"), "1"):
        with pytest.raises(BudgetError):
            epsilon_delta_to_rho(bad, 1e-6)
    with pytest.raises(BudgetError):
        epsilon_delta_to_rho(1.0, 0.0)


# ---- splits ---------------------------------------------------------------------------------
def test_split_presets():
    np.testing.assert_allclose(split_shares(3), [1 / 3] * 3)
    np.testing.assert_allclose(split_shares(4, "finer"), [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(split_shares(4, "coarser"), [0.4, 0.3, 0.2, 0.1])
    np.testing.assert_array_equal(split_shares(3, "leaves-only"), [0.0, 0.0, 1.0])
    for preset in SPLIT_PRESETS:
        np.testing.assert_array_equal(split_shares(1, preset), [1.0])


def test_split_custom_weights_override_the_preset():
    np.testing.assert_allclose(split_shares(3, weights=[1, 1, 2]), [0.25, 0.25, 0.5])
    np.testing.assert_allclose(split_shares(3, "no-such-preset", weights=(0, 3, 1)),
                               [0, 0.75, 0.25])


@pytest.mark.parametrize(("n", "kwargs"), [
    (3, {"weights": [1, 2]}),
    (3, {"weights": [1, 2, 3, 4]}),
    (2, {"weights": 5.0}),
    (2, {"weights": [[1, 2]]}),
    (3, {"weights": [1, -1, 2]}),
    (3, {"weights": [1, float("nan"), 2]}),
    (3, {"weights": [1, float("inf"), 2]}),
    (3, {"weights": [0, 0, 0]}),
    (2, {"weights": ["a", "b"]}),
    (2, {"weights": "ab"}),
    (3, {"preset": "middle"}),
    (0, {}),
    (-1, {}),
    (2.5, {}),
    (True, {}),
])
def test_split_errors(n, kwargs):
    with pytest.raises(BudgetError):
        split_shares(n, **kwargs)


@given(st.integers(1, 40), st.sampled_from(SPLIT_PRESETS))
def test_preset_shares_sum_to_one(n, preset):
    s = split_shares(n, preset)
    assert s.shape == (n,)
    assert np.all(s >= 0)
    assert math.fsum(s) == pytest.approx(1.0, abs=1e-12)


@given(st.lists(st.floats(0.0, 1e6), min_size=1, max_size=30).filter(lambda w: sum(w) > 0))
def test_weighted_shares_sum_to_one_and_keep_proportions(weights):
    s = split_shares(len(weights), weights=weights)
    assert np.all(s >= 0)
    assert math.fsum(s) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(s * sum(weights), weights, rtol=1e-9, atol=1e-9 * sum(weights))


# ---- accountant -----------------------------------------------------------------------------
def test_spending_up_to_the_total_then_one_more_charge_fails():
    acc = Accountant(PrivacyBudget.pure(1.0))
    for i in range(10):
        part = acc.spend(0.1, level=i)
        assert part == PrivacyBudget.pure(0.1)
    assert acc.spent == pytest.approx(1.0)
    assert acc.remaining == pytest.approx(0.0, abs=1e-15)
    before = list(acc.entries)
    for extra in (0.1, 1e-6):
        with pytest.raises(BudgetError, match="overspending"):
            acc.spend(extra, level=10)
    assert acc.entries == before
    assert acc.entries[3] == {"amount": 0.1, "level": 3}


def test_an_overspending_charge_records_nothing():
    acc = Accountant(PrivacyBudget.zcdp(0.5, 1e-6))
    acc.spend(0.3)
    with pytest.raises(BudgetError):
        acc.spend(0.3)
    assert acc.spent == pytest.approx(0.3)
    assert acc.remaining == pytest.approx(0.2)
    assert acc.spend(0.2) == PrivacyBudget.zcdp(0.2, 1e-6)


@pytest.mark.parametrize("bad", [0.0, -0.1, float("nan"), float("inf"), "0.1"])
def test_invalid_charges_are_refused(bad):
    acc = Accountant(PrivacyBudget.pure(1.0))
    with pytest.raises(BudgetError):
        acc.spend(bad)
    assert acc.entries == []


def test_approximate_dp_charges_split_delta():
    acc = Accountant(PrivacyBudget.approx(2.0, 1e-6))
    parts = [acc.spend(0.5), acc.spend(1.5)]
    assert [p.delta for p in parts] == pytest.approx([2.5e-7, 7.5e-7])
    assert math.fsum(p.delta for p in parts) <= 1e-6 * (1 + 1e-9)


@settings(deadline=None)  # 297 ms for one example on a loaded machine: no timing here
@given(st.floats(1e-3, 100.0),
       st.lists(st.floats(0.0, 100.0), min_size=1, max_size=30).filter(lambda w: sum(w) > 0),
       st.sampled_from([PrivacyBudget.pure, PrivacyBudget.zcdp]))
def test_spending_every_share_of_a_split_fits(total, weights, make):
    budget = make(total)
    acc = Accountant(budget)
    for share in split_shares(len(weights), weights=weights):
        if budget.value * share > 0:  # a subnormal weight's share can underflow to 0
            acc.spend(budget.value * share)
    assert acc.spent == pytest.approx(total, rel=1e-12)
    with pytest.raises(BudgetError):
        acc.spend(total * 1e-6)

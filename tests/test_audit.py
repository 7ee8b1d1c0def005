"""Tests for hierdp_core.audit: every count mechanism passes its audit, broken and
non-private mechanisms are caught, and the Clopper-Pearson bounds match scipy."""

from __future__ import annotations

import doctest
import functools
import json
import math
import re
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from scipy import stats

import hierdp_core.audit as audit_module
from hierdp_core.audit import (
    AuditResult,
    audit_callable,
    audit_mechanism,
    clopper_pearson_lower,
    clopper_pearson_upper,
    log_ratio_bound,
)
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import Mechanism, MechanismInfo, get_mechanism, list_mechanisms

SEED = 20240607
COUNT_MECHANISMS = [i.name for i in list_mechanisms() if "counts" in i.queries]


@dataclass
class HalfNoise(Mechanism):
    """BROKEN on purpose: claims the budget it is given but releases with twice that epsilon
    (noise calibrated for half the true sensitivity), while its ledger shows the claim."""

    base_name: str = "raw-laplace"
    info: MechanismInfo = field(init=False)

    def __post_init__(self):
        self.base = get_mechanism(self.base_name)
        self.info = replace(self.base.info, name=f"broken-half-noise-{self.base_name}",
                            independent_columns=False)

    def ledger(self, data, budget, split=None, **params):
        return self.base.ledger(data, budget, split, **params)

    def release(self, data, budget, *, split=None, source=None, **params):
        return self.base.release(data, budget.scaled(2.0), split=split, source=source,
                                 **params)


# ---- every registered count mechanism honours its claim ---------------------------------
@functools.cache
def default_audit(name: str) -> AuditResult:
    """The audit of ``name`` at epsilon 1 with the default trials and SEED. Seeded, so the
    same result for every test: made once per test process (the raw mechanisms' pass and
    tightness checks read one audit)."""
    return audit_mechanism(name, 1.0, seed=SEED)


def test_count_mechanisms_are_registered():
    assert {"raw-laplace", "raw-geometric", "least-squares", "topdown"} <= set(COUNT_MECHANISMS)


@pytest.mark.parametrize("name", COUNT_MECHANISMS)
def test_count_mechanism_passes_audit(name):
    r = default_audit(name)
    assert isinstance(r, AuditResult)
    assert r.passed, r.summary() + "; " + r.event
    assert 0.0 <= r.epsilon_lower_bound <= 1.0
    assert r.trials == 20_000 and r.claimed_epsilon == 1.0
    assert r.batched == get_mechanism(name).info.independent_columns


@pytest.mark.parametrize("name", ["raw-laplace", "raw-geometric"])
def test_audit_is_nearly_tight_on_raw_mechanisms(name):
    """The audit has power: on the raw mechanisms the exact privacy-loss event is found."""
    r = default_audit(name)
    assert r.passed and r.epsilon_lower_bound > 0.6, r.summary()


def test_zcdp_mechanism_is_checked_at_delta():
    r = audit_mechanism("raw-discrete-gaussian", 1.0, seed=SEED, trials=4000)
    assert r.delta == 1e-6 and "zcdp" in r.privacy
    assert r.passed


# ---- broken and non-private mechanisms are caught ---------------------------------------
def test_broken_laplace_is_caught():
    r = audit_mechanism(HalfNoise("raw-laplace"), 1.0, seed=SEED, batch=True)
    assert not r.passed
    assert r.epsilon_lower_bound > 1.0, r.summary()
    assert r.epsilon_lower_bound <= 2.0 + 0.2  # true epsilon is 2: never far above it


def test_broken_topdown_is_caught():
    """Post-processing hides some of the leak; twice the trials keep the power high."""
    r = audit_mechanism(HalfNoise("topdown"), 1.0, seed=SEED, batch=True, trials=40_000)
    assert not r.passed and r.epsilon_lower_bound > 1.0, r.summary()


def test_mechanism_without_independent_columns_runs_one_release_per_trial():
    r = audit_mechanism(HalfNoise("raw-geometric"), 1.0, seed=SEED, trials=200)
    assert not r.batched and r.trials == 200


def test_non_private_mechanism_has_large_lower_bound():
    truth = np.array([3.0, 0.0, 5.0, 2.0])

    def run(data, n, source):
        return np.repeat(np.asarray(data, dtype=float)[None, :], n, axis=0)

    r = audit_callable(run, (truth, truth + np.array([0, 1, 0, 0])), 1.0, seed=SEED)
    assert not r.passed
    assert r.epsilon_lower_bound > 3.0


def test_invariant_root_is_reported_as_not_private():
    r = audit_mechanism("topdown", 1.0, seed=SEED, trials=2000, root_invariant=True)
    assert not r.passed and r.epsilon_lower_bound > 3.0
    assert "root" in r.event


def test_custom_callable_with_default_statistics():
    """Laplace noise on a 3-vector where only one coordinate moves: passes at its epsilon,
    fails at half of it."""

    def laplace(eps):
        def run(data, n, source):
            return np.asarray(data, dtype=float) + source.rng.laplace(0, 1 / eps, (n, 3))
        return run

    pair = (np.zeros(3), np.array([0.0, 1.0, 0.0]))
    ok = audit_callable(laplace(1.0), pair, 1.0, seed=SEED)
    assert ok.passed and ok.epsilon_lower_bound > 0.5
    bad = audit_callable(laplace(2.0), pair, 1.0, seed=SEED)
    assert not bad.passed


# ---- Clopper-Pearson --------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.05, 0.0125, 1e-4])
def test_clopper_pearson_matches_beta_quantiles(alpha):
    rng = np.random.default_rng(0)
    n = rng.integers(1, 50_000, 200)
    k = rng.integers(0, n + 1)
    lo, hi = clopper_pearson_lower(k, n, alpha), clopper_pearson_upper(k, n, alpha)
    inner = (k > 0) & (k < n)
    np.testing.assert_allclose(lo[k > 0], stats.beta.ppf(alpha, k, n - k + 1)[k > 0],
                               rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(hi[k < n], stats.beta.ppf(1 - alpha, k + 1, n - k)[k < n],
                               rtol=1e-9, atol=1e-14)
    assert np.all(lo[k == 0] == 0) and np.all(hi[k == n] == 1)
    assert np.all(lo[inner] < k[inner] / n[inner]) and np.all(hi[inner] > k[inner] / n[inner])


def test_clopper_pearson_edges_and_definition():
    alpha = 0.05
    # k = 0: the upper bound solves (1 - p)^n = alpha; k = n: the lower solves p^n = alpha
    assert math.isclose(clopper_pearson_upper(0, 100, alpha), 1 - alpha ** (1 / 100))
    assert math.isclose(clopper_pearson_lower(100, 100, alpha), alpha ** (1 / 100))
    # defining property: at the bound, the observed count is exactly an alpha-tail event
    lo, hi = clopper_pearson_lower(37, 400, alpha), clopper_pearson_upper(37, 400, alpha)
    assert math.isclose(stats.binom.sf(36, 400, lo), alpha, rel_tol=1e-8)
    assert math.isclose(stats.binom.cdf(37, 400, hi), alpha, rel_tol=1e-8)
    with pytest.raises(ValueError):
        clopper_pearson_lower(5, 4, alpha)
    with pytest.raises(ValueError):
        clopper_pearson_upper(1, 4, 0.0)


def test_log_ratio_bound():
    b = log_ratio_bound(5000, 10_000, 1000, 10_000, 0.01)
    assert 0 < b < math.log(5)
    assert log_ratio_bound(0, 100, 0, 100, 0.05) == -math.inf
    assert log_ratio_bound(50, 100, 10, 100, 0.05, delta=0.6) == -math.inf


# ---- API --------------------------------------------------------------------------------
def test_result_is_reproducible_and_serialisable():
    a = audit_mechanism("raw-geometric", 1.0, seed=3, trials=2000)
    b = audit_mechanism("raw-geometric", 1.0, seed=3, trials=2000)
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.event == b.event
    d = json.loads(json.dumps(a.as_dict()))
    assert d["mechanism"] == "raw-geometric" and len(d["directions"]) == 2
    assert {"claimed_epsilon", "epsilon_lower_bound", "trials", "passed", "event"} <= set(d)


def test_bad_arguments():
    with pytest.raises(MechanismError):
        audit_mechanism("no-such-mechanism", 1.0)
    with pytest.raises(MechanismError):
        audit_mechanism("topdown", 1.0, no_such_param=1)
    with pytest.raises(ValueError):
        audit_mechanism("topdown", 1.0, trials=10)
    with pytest.raises(ValueError):
        audit_callable(lambda d, n, s: np.zeros((n + 1, 1)), (0, 1), 1.0, trials=200)


def test_doctests():
    assert doctest.testmod(audit_module).failed == 0


def test_cli_audit_secure_draws_unseeded_noise(capsys):
    """`hierdp audit --secure` (issue 27) runs every trial through the secure path: the
    result says so, the same --seed gives other draws (seeded runs repeat exactly), and
    the bound, which needs only the draws, still passes the claim."""
    from conftest import run_cli

    def audit(*extra):
        code, out, err = run_cli(capsys, "audit", "--mechanism", "raw-geometric", "--epsilon",
                                 1, "--trials", 300, "--seed", 5, "--json", *extra)
        assert code == 0, err
        return json.loads(re.sub(r'\s*"seconds": [0-9.e-]+,?', "", out))  # all but the time

    seeded = [audit() for _ in range(2)]
    assert seeded[0]["parameters"]["secure"] is False and seeded[0] == seeded[1]
    secure = [audit("--secure") for _ in range(2)]
    assert all(r["parameters"]["secure"] is True and r["passed"] for r in secure)
    assert secure[0] != secure[1]  # independent draws: their events and counts differ

"""The audit reads the privacy definition a claim of epsilon means from the mechanism's
privacy plan (`hierdp_core.audit.adapter.claimed_budget`), without trying a budget: pure
epsilon-DP for Laplace / geometric plans, (epsilon, delta) for Gaussian or (epsilon, delta)
plans; the mechanism then spends the budget in the currency its ledger states."""

from __future__ import annotations

import pytest
from release_inputs import small_data

from hierdp_core.audit.adapter import claimed_budget
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import APPROX_DP, PURE_DP, ZCDP

CASES = [(i.name, {}) for i in list_mechanisms()] + [
    ("topdown", {"noise": "discrete-gaussian"}), ("least-squares", {"noise": "gaussian"}),
    ("topdown", {"noise": "laplace"}), ("inftda", {"neighbouring": "unbounded"})]


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_the_claimed_budget_is_the_one_the_ledger_spends(name, params):
    mechanism = get_mechanism(name)
    budget = claimed_budget(mechanism, 1.0, 1e-6, params)
    ledger = mechanism.ledger(small_data(mechanism.info.queries[0]), budget, **params)
    spent_in = set(ledger["definition"].dropna())
    if budget.definition == PURE_DP:
        assert spent_in == {PURE_DP}
    else:
        assert budget.definition == APPROX_DP and budget.delta == 1e-6
        assert spent_in and spent_in <= {ZCDP, APPROX_DP}

"""Repeated O/D releases over a grid of epsilons and mechanisms, with the flow metrics of
every run (reads the truth: evaluation only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from hierdp_core.experiments import repeat_releases
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.metrics import flow_metrics
from hierdp_core.privacy.budget import PrivacyBudget

DEFAULT_DELTA = 1e-8


def flow_sweep(data: FlowData, mechanisms: Sequence[str], epsilons: Sequence[float],
               trials: int, *, delta: float = DEFAULT_DELTA, seed: int = 0,
               max_runs: int = 120,
               progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per (mechanism, epsilon, trial, tree level) with `flow_metrics` and the
    release ``seconds``; every mechanism gets the (epsilon, ``delta``) budget (the zCDP ones
    convert it to the largest rho implying it)."""
    return repeat_releases(
        data, mechanisms, epsilons, trials,
        budget_of=lambda name, epsilon: PrivacyBudget.approx(epsilon, delta),
        evaluate=lambda release: flow_metrics(data, release),
        seed=seed, max_runs=max_runs, progress=progress)

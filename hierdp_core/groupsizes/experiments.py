"""Repeated group-size releases over a grid of epsilons and mechanisms, with the group-size
metrics of every run (reads the truth: evaluation only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.experiments import repeat_releases
from hierdp_core.groupsizes.data import GroupSizeData, group_size_metrics
from hierdp_core.privacy.budget import PrivacyBudget

Progress = Callable[[int, int], None]


def group_size_sweep(data: GroupSizeData, mechanisms: Sequence[str],
                     epsilons: Sequence[float], trials: int, *, seed: int = 0,
                     max_runs: int = 200, progress: Progress | None = None) -> pd.DataFrame:
    """One row per (mechanism, epsilon, trial, level): ``l1``, ``emd_mean``, ``emd_max``,
    ``consistency_violations``, ``faithfulness_gap`` and the release ``seconds``. Trial t of
    every configuration uses seed ``seed + t`` (common random numbers across mechanisms).
    Refuses more than ``max_runs`` releases."""
    return repeat_releases(
        data, mechanisms, epsilons, trials,
        budget_of=lambda name, epsilon: PrivacyBudget.pure(epsilon),
        evaluate=lambda release: group_size_metrics(data, release.values),
        seed=seed, max_runs=max_runs, progress=progress)


def mean_by_level(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` per mechanism (rows) and level (columns) over trials."""
    if metric not in runs.columns:
        raise InputError(f"no metric {metric!r}; the runs have {list(runs.columns)}")
    order = list(pd.unique(runs["level_name"]))
    table = runs.groupby(["mechanism", "level_name"], sort=False)[metric].mean()
    return table.unstack("level_name")[order].rename_axis(None, axis=1).reset_index()

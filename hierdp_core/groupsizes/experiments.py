"""Repeated group-size releases over a grid of epsilons and mechanisms, with the group-size
metrics of every run (reads the truth: evaluation only)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import GroupSizeData, group_size_metrics
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

Progress = Callable[[int, int], None]


def group_size_sweep(data: GroupSizeData, mechanisms: Sequence[str],
                     epsilons: Sequence[float], trials: int, *, seed: int = 0,
                     max_runs: int = 200, progress: Progress | None = None) -> pd.DataFrame:
    """One row per (mechanism, epsilon, trial, level): ``l1``, ``emd_mean``, ``emd_max``,
    ``consistency_violations``, ``faithfulness_gap`` and the release ``seconds``. Trial t of
    every configuration uses seed ``seed + t`` (common random numbers across mechanisms).
    Refuses more than ``max_runs`` releases."""
    runs = len(mechanisms) * len(epsilons) * trials
    if not mechanisms or not epsilons or trials < 1:
        raise InputError("choose at least one mechanism, one epsilon and one trial")
    if runs > max_runs:
        raise InputError(f"{runs} releases requested; at most {max_runs} (fewer trials, "
                         "epsilons or mechanisms)")
    rows, done = [], 0
    for name in mechanisms:
        mechanism = get_mechanism(name)
        for epsilon in epsilons:
            for trial in range(trials):
                started = time.perf_counter()
                release = mechanism.release(data, PrivacyBudget.pure(float(epsilon)),
                                            source=NoiseSource(seed=seed + trial))
                seconds = time.perf_counter() - started
                table = group_size_metrics(data, release.values)
                table.insert(0, "trial", trial)
                table.insert(0, "epsilon", float(epsilon))
                table.insert(0, "mechanism", name)
                table["seconds"] = seconds
                rows.append(table)
                done += 1
                if progress is not None:
                    progress(done, runs)
    return pd.concat(rows, ignore_index=True)


def mean_by_level(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` per mechanism (rows) and level (columns) over trials."""
    if metric not in runs.columns:
        raise InputError(f"no metric {metric!r}; the runs have {list(runs.columns)}")
    order = list(pd.unique(runs["level_name"]))
    table = runs.groupby(["mechanism", "level_name"], sort=False)[metric].mean()
    return table.unstack("level_name")[order].rename_axis(None, axis=1).reset_index()

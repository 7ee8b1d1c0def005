"""Range-query releases by several methods, evaluated against the truth (evaluation only,
never published): the epsilon sweep and the comparison of one release with other methods
(the dashboard's Range queries page; `repeat_releases` does the runs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from hierdp_core.experiments import repeat_releases
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.ranges.evaluation import range_metrics

MAX_RUNS = 60


def method_runs(data, names: Sequence[str], epsilons: Sequence[float], trials: int, seed: int,
                progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """`range_metrics` of releases of ``data`` by every mechanism in ``names`` at every
    epsilon (pure DP, default parameters, uniform split; trial t uses seed ``seed + t``),
    one row per (mechanism, epsilon, trial, level). At most `MAX_RUNS` releases."""
    return repeat_releases(data, names, epsilons, trials,
                           budget_of=lambda _, epsilon: PrivacyBudget.pure(epsilon),
                           evaluate=lambda release: range_metrics(data, release.values),
                           seed=seed, max_runs=MAX_RUNS, progress=progress)


def compare_methods(data, name: str, metrics: pd.DataFrame, seconds: float,
                    others: Sequence[str], epsilon: float, seed: int,
                    progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """The release by ``name`` already made (its ``metrics`` and ``seconds``, labelled
    "(this release)"), then one release by each of ``others`` at ``epsilon`` with ``seed``
    (`method_runs`), in one table."""
    frames = [metrics.assign(mechanism=f"{name} (this release)", epsilon=epsilon, trial=0,
                             seconds=seconds)]
    rest = [n for n in others if n != name]
    if rest:
        frames.append(method_runs(data, rest, [epsilon], 1, seed, progress))
    return pd.concat(frames, ignore_index=True)

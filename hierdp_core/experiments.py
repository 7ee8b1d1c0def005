"""Repeated releases for comparing mechanisms, budgets and budget splits.

Every run releases the data once with a seeded `NoiseSource` and scores it against the
truth with `hierdp_core.metrics.error_metrics`; the output keeps each level's ``bin ==
"all"`` row. The output therefore depends on the TRUE data: it is for exploring
settings, not for publication.

Seeds: run (mechanism i, epsilon j, trial t) of ``sweep(..., seed=s)`` uses
``NoiseSource(seed=run_seed(s, 0, i, j, t))`` (`compare_splits` uses tag 1 and the split's
index in place of i), recorded in the ``seed`` column, so any single run can be
reproduced and a whole sweep is reproducible.

Budgets: a mechanism that only gives zCDP (``info.privacy == "zcdp"`` and no "pure-dp" in
``info.privacy_definitions``), or is asked for Gaussian noise, is run at
rho = epsilon^2 / 2 -- the zCDP level that epsilon-DP implies, so every run of a sweep
satisfies at least rho-zCDP, but these runs do NOT satisfy epsilon-DP -- and the ``budget``
column says ``rho=...``; every other mechanism gets pure epsilon-DP (``epsilon=...``).

Example
-------
>>> from hierdp_core.data.samples import synthetic_us_like
>>> from hierdp_core.queries.counts import count_data_from_table
>>> data = count_data_from_table(synthetic_us_like(seed=1, n_states=3, n_counties=12),
...                              ["state", "county"], count_column="count")
>>> runs = sweep(data, ["topdown"], [0.5, 2.0], trials=2, seed=3)
>>> len(runs), sorted(runs["epsilon"].unique().tolist())
(12, [0.5, 2.0])
>>> summarise(runs, "mae")[["mechanism", "epsilon", "level_name", "trials"]].shape
(6, 4)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hierdp_core.errors import HierdpError, InputError, about
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.metrics import ALL_BIN, error_metrics
from hierdp_core.privacy.budget import PURE_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

Progress = Callable[[int, int], "bool | None"]
_GAUSSIAN_NOISES = ("gaussian", "discrete-gaussian")
_ONE_BIN = (0.0, math.inf)  # only the "all" rows are kept; one bin keeps scoring cheap


def run_seed(seed: int, tag: int, i: int, j: int, trial: int) -> int:
    """The noise seed of one run, derived from the sweep seed and the run's indices."""
    return int(np.random.SeedSequence([int(seed), tag, i, j, trial]).generate_state(1)[0])


def budget_for(mechanism: str, epsilon: float, params: dict | None = None) -> PrivacyBudget:
    """The budget a mechanism is run at for a given epsilon (see the module docstring)."""
    info = get_mechanism(mechanism).info
    pure_ok = PURE_DP in (info.privacy_definitions or (info.privacy,))
    gaussian = (params or {}).get("noise") in _GAUSSIAN_NOISES
    if (info.privacy == ZCDP and not pure_ok) or gaussian:
        return PrivacyBudget.zcdp(float(epsilon) ** 2 / 2)
    return PrivacyBudget.pure(float(epsilon))


def _budget_label(budget: PrivacyBudget) -> str:
    return f"{budget.unit}={budget.value:.6g}"


@dataclass
class _Config:
    """One setting run ``trials`` times: a mechanism at an epsilon with a split."""

    mechanism: str
    epsilon: float
    split: object
    params: dict
    index: tuple[int, int, int]  # (tag, i, j) for run_seed
    labels: dict = field(default_factory=dict)  # extra output columns, e.g. {"split": ...}


def _check_trials(trials, n_configs: int, max_runs: int) -> int:
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"trials must be a positive integer, got {trials!r}")
    total = n_configs * int(trials)
    if total > max_runs:
        raise InputError(f"{total:,} runs requested ({n_configs} setting(s) x {trials} "
                         f"trial(s)); the limit is {max_runs:,}: use fewer mechanisms, "
                         f"budgets or trials")
    return int(trials)


@contextmanager
def _named(mechanism: str):
    """A `HierdpError` raised inside led by the mechanism's plain name (`errors.about`)."""
    try:
        yield
    except HierdpError as exc:
        raise about(title(mechanism), exc) from exc


def _run_configs(data, configs: list[_Config], trials: int, seed: int,
                 progress: Progress | None) -> pd.DataFrame:
    """Run every config ``trials`` times; the shared engine of `sweep` and `compare_splits`.

    Every config is checked (mechanism, parameters, budget, split) before the first run;
    a config that fails is named in the error by its mechanism's plain name."""
    budgets = []
    for c in configs:
        mech = get_mechanism(c.mechanism)
        budget = budget_for(c.mechanism, c.epsilon, c.params)
        with _named(c.mechanism):
            mech.ledger(data, budget, c.split, **c.params)  # validates params, budget, split
        budgets.append(budget)
    truth = data.node_counts()
    categories = list(data.categories) if data.has_categories else None
    total = len(configs) * trials
    frames: list[pd.DataFrame] = []
    done = 0
    cancelled = False
    start = time.perf_counter()
    for c, budget in zip(configs, budgets, strict=True):
        mech = get_mechanism(c.mechanism)
        for trial in range(trials):
            s = run_seed(seed, *c.index, trial)
            with _named(c.mechanism):
                release = mech.release(data, budget, split=c.split,
                                       source=NoiseSource(seed=s), **c.params)
            m = error_metrics(data.hierarchy, truth, release.values, bins=_ONE_BIN,
                              categories=categories)
            m = m[m["bin"] == ALL_BIN].reset_index(drop=True)
            head = {"mechanism": c.mechanism, **c.labels, "epsilon": float(c.epsilon),
                    "budget": _budget_label(budget), "trial": trial, "seed": s}
            for pos, (name, value) in enumerate(head.items()):
                m.insert(pos, name, value)
            frames.append(m)
            done += 1
            if progress is not None and progress(done, total) is False:
                cancelled = done < total
                break
        if cancelled:
            break
    out = pd.concat(frames, ignore_index=True)
    out.attrs = {"total_runs": total, "completed_runs": done, "cancelled": cancelled,
                 "seconds": time.perf_counter() - start, "seed": seed}
    return out


def _unique(name: str, values: Sequence) -> list:
    values = list(values)
    if not values:
        raise InputError(f"give at least one {name}")
    if len(set(values)) != len(values):
        raise InputError(f"a {name} is listed twice: {values}")
    return values


def sweep(
    data,
    mechanisms: list[str],
    epsilons: list[float],
    trials: int,
    *,
    split=None,
    params: dict[str, dict] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    max_runs: int = 2000,
) -> pd.DataFrame:
    """Release ``data`` with every mechanism at every epsilon, ``trials`` times each.

    Returns the ``bin == "all"`` rows of `error_metrics` for every run, led by the columns
    ``mechanism, epsilon, budget, trial, seed``. ``params`` maps a mechanism name to its
    parameters (entries for mechanisms not run are ignored); ``split`` is passed to every
    release. ``progress(done, total)`` is called after every run; returning False stops the
    sweep and the runs completed so far are returned (``result.attrs["cancelled"]``).
    More than ``max_runs`` runs are refused with `InputError`.
    """
    mechanisms = _unique("mechanism", mechanisms)
    try:
        epsilons = _unique("epsilon", [float(e) for e in epsilons])
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"epsilons must be numbers, got {list(epsilons)!r}") from None
    trials = _check_trials(trials, len(mechanisms) * len(epsilons), max_runs)
    params = params or {}
    configs = [
        _Config(name, eps, split, dict(params.get(name) or {}), (0, i, j))
        for i, name in enumerate(mechanisms) for j, eps in enumerate(epsilons)
    ]
    return _run_configs(data, configs, trials, seed, progress)


def compare_splits(
    data,
    mechanism: str,
    epsilon: float,
    splits: dict[str, list[float] | str],
    trials: int,
    *,
    seed: int = 0,
    progress: Progress | None = None,
    params: dict | None = None,
    max_runs: int = 2000,
) -> pd.DataFrame:
    """Like `sweep` for one mechanism and one epsilon, varying the budget split instead:
    ``splits`` maps a label to a split (weights per level, root first, or a preset name).
    The output has a ``split`` column (the label) after ``mechanism``."""
    if not splits:
        raise InputError("give at least one split to compare")
    labels = [str(k) for k in splits]
    if len(set(labels)) != len(labels):
        raise InputError(f"split labels must be distinct, got {labels}")
    trials = _check_trials(trials, len(splits), max_runs)
    configs = [
        _Config(mechanism, float(epsilon), split, dict(params or {}), (1, k, 0),
                {"split": label})
        for k, (label, split) in enumerate(zip(labels, splits.values(), strict=True))
    ]
    return _run_configs(data, configs, trials, seed, progress)


def repeat_releases(data, mechanisms: Sequence[str], epsilons: Sequence[float], trials: int,
                    *, budget_of: Callable[[str, float], PrivacyBudget],
                    evaluate: Callable[[object], pd.DataFrame], seed: int = 0,
                    max_runs: int = 200,
                    progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Release ``data`` with every mechanism at every epsilon ``trials`` times and stack the
    per-level tables ``evaluate(release)`` (reads the truth: evaluation only), with columns
    ``mechanism, epsilon, trial`` in front and ``seconds`` (the release time) at the end.
    Trial t uses seed ``seed + t`` (common random numbers across mechanisms). Refuses more
    than ``max_runs`` releases."""
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
                release = mechanism.release(data, budget_of(name, float(epsilon)),
                                            source=NoiseSource(seed=seed + trial))
                seconds = time.perf_counter() - started
                table = evaluate(release)
                table.insert(0, "trial", trial)
                table.insert(0, "epsilon", float(epsilon))
                table.insert(0, "mechanism", name)
                table["seconds"] = seconds
                rows.append(table)
                done += 1
                if progress is not None:
                    progress(done, runs)
    return pd.concat(rows, ignore_index=True)


def summarise(runs: pd.DataFrame, metric: str, *, by: str = "mechanism", low: float = 0.05,
              high: float = 0.95) -> pd.DataFrame:
    """Mean and low/high empirical quantiles of ``metric`` over the trials of each
    (``by``, epsilon, level). Columns: ``[by, epsilon, level, level_name, mean, low, high,
    trials]``; groups keep the order in which ``by`` values first appear, then ascending
    epsilon and level. NaN metric values are skipped; ``trials`` counts the runs."""
    for col in (by, metric, "epsilon", "level", "level_name"):
        if col not in runs.columns:
            raise InputError(f"no column {col!r} in the runs; they have {list(runs.columns)}")
    if not 0 <= low <= high <= 1:
        raise InputError(f"need 0 <= low <= high <= 1, got low={low}, high={high}")
    if "bin" in runs.columns:
        runs = runs[runs["bin"] == ALL_BIN]
    keys = [by, "epsilon", "level", "level_name"]
    grouped = runs.groupby(keys, sort=False, dropna=False)[metric]
    out = pd.concat({
        "mean": grouped.mean(),
        "low": grouped.quantile(low),
        "high": grouped.quantile(high),
        "trials": grouped.size(),
    }, axis=1).reset_index()
    order = {v: i for i, v in enumerate(pd.unique(runs[by]))}
    out = out.assign(_o=out[by].map(order)).sort_values(["_o", "epsilon", "level"])
    out = out.drop(columns="_o").reset_index(drop=True)
    out["trials"] = out["trials"].astype(np.int64)
    out = out[[*keys, "mean", "low", "high", "trials"]]
    out.attrs = {"metric": metric, "quantiles": (low, high)}
    return out

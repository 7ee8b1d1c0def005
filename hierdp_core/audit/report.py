"""The audit driver and its report: run the trials of an adapter on both neighbours, reduce
them to statistics, bound epsilon (`estimators`), and say whether the claim holds.

`audit_mechanism` reads the mechanism's privacy plan: one stage (or a stage that cannot run
on its own) means the whole mechanism is audited against the whole epsilon on the
neighbours of its query kind and declared relation (`ADAPTERS`); a composite plan means
every stage that can run on its own is audited against its own share of epsilon
(`stages.stage_audits`), and the result lists every stage.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from hierdp_core.audit.adapter import ADAPTERS, DEFAULT_DELTA, AuditAdapter, Runner
from hierdp_core.audit.estimators import Statistics, epsilon_lower_bound, fit_statistics
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import Mechanism, get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PURE_DP, ZCDP
from hierdp_core.privacy.samplers import NoiseSource

DEFAULT_TRIALS = 20_000
DEFAULT_ALPHA = 0.05
DEFAULT_CHUNK = 5_000
MIN_TRIALS = 100
PILOT_TRIALS = 1_000


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit. ``passed`` is ``epsilon_lower_bound <= claimed_epsilon``.

    For a composite mechanism ``stages`` holds one result per audited stage (and pair of
    neighbours), each against its own share of ``budget_epsilon``; ``passed`` means every one
    passed, and the top-level claim, bound and event are those of the stage furthest above
    (or closest to) its claim, named in ``stage``. The joint level ``alpha`` is split evenly
    over the stage audits (Bonferroni)."""

    mechanism: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    trials: int
    passed: bool
    event: str
    delta: float = 0.0
    alpha: float = DEFAULT_ALPHA
    privacy: str = PURE_DP
    epsilon_estimate: float = 0.0
    neighbours: str = ""
    batched: bool = False
    parameters: dict = field(default_factory=dict)
    seconds: float = 0.0
    directions: tuple[dict, ...] = field(default=(), repr=False)
    stage: str = ""
    budget_epsilon: float | None = None
    stages: tuple[AuditResult, ...] = field(default=(), repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["directions"] = [dict(x) for x in self.directions]
        d["stages"] = [s.as_dict() for s in self.stages]
        return d

    def summary(self) -> str:
        if self.stages:
            verdict = "pass" if self.passed else "FAIL"
            lines = [f"{self.mechanism}: epsilon {self.budget_epsilon:g} audited stage by "
                     f"stage -> {verdict}"]
            lines += ["  " + s.summary() for s in self.stages]
            return "\n".join(lines)
        verdict = "pass" if self.passed else "FAIL"
        what = f"{self.mechanism}" + (f" stage {self.stage}" if self.stage else "")
        return (f"{what}: claimed epsilon {self.claimed_epsilon:g}"
                + (f" (delta {self.delta:g})" if self.delta else "")
                + f", lower bound {self.epsilon_lower_bound:.3f} -> {verdict}")


def combine_stages(name: str, epsilon: float, results: list[AuditResult],
                   parameters: dict, seconds: float, alpha: float) -> AuditResult:
    """One result for a composite mechanism from its stages' results (see `AuditResult`)."""
    worst = max(results, key=lambda r: r.epsilon_lower_bound / max(r.claimed_epsilon, 1e-12))
    return replace(worst, mechanism=name, passed=all(r.passed for r in results),
                   event=f"stage {worst.stage}: {worst.event}", alpha=alpha,
                   trials=sum(r.trials for r in results), parameters=parameters,
                   seconds=round(seconds, 3), budget_epsilon=float(epsilon),
                   stages=tuple(results))


def audit_mechanism(
    name: str | Mechanism,
    epsilon: float,
    *,
    trials: int | None = None,
    seed: int | None = 0,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    split=None,
    batch: bool | None = None,
    secure: bool = False,
    chunk: int = DEFAULT_CHUNK,
    whole: bool | None = None,
    **params,
) -> AuditResult:
    """Audit a registered mechanism (by name) or a `Mechanism` instance at a claimed
    ``epsilon`` (pure DP; (epsilon, ``delta``)-DP for zCDP mechanisms, see the package
    docstring). ``params`` are the mechanism's own parameters; ``split`` its budget split.
    ``batch`` overrides whether trials are batched: count trials over category columns
    (default: what the mechanism declares, ``MechanismInfo.independent_columns``), group-size
    trials side by side (default: for an estimate cell by cell, ``Capabilities.estimate ==
    "raw"``). ``secure`` uses
    OpenDP's samplers (then ``seed`` is ignored). A composite mechanism (several stages in
    its `privacy_plan`) is audited stage by stage, each against its share of ``epsilon``
    (`stages.stage_audits`); ``whole=True`` adds the whole mechanism against ``epsilon``
    (default: only if some stage cannot run on its own). ``trials`` per side: by default
    `DEFAULT_TRIALS`, or fewer if the mechanism declares a slow release
    (``MechanismInfo.audit_trials``)."""
    from hierdp_core.audit.stages import STAGE_TRIAL_FACTOR, stage_audits

    mechanism = get_mechanism(name) if isinstance(name, str) else name
    info = mechanism.info
    kind = next((q for q in info.queries if q in ADAPTERS), None)
    if kind is None:
        raise MechanismError(f"no audit adapter for mechanism {info.name!r} (queries "
                             f"{list(info.queries)}); adapters exist for {sorted(ADAPTERS)}")
    p = mechanism.params(**params)
    plan = mechanism.privacy_plan(**params)
    if trials is None:
        trials = min(DEFAULT_TRIALS, info.audit_trials or DEFAULT_TRIALS)
    options = dict(trials=trials, seed=seed, chunk=chunk, secure=secure)
    parameters = {**p, "split": split, "secure": secure}
    runnable = [s for s in plan.stages if s.run is not None]
    if plan.composite and runnable:
        start = time.perf_counter()
        add_whole = whole if whole is not None else len(runnable) < len(plan.stages)
        jobs = stage_audits(mechanism, plan, kind, epsilon=epsilon, delta=delta, params=params)
        n_audits = len(jobs) + (len(plan.relations()) if add_whole else 0)
        level = alpha / n_audits
        stage_options = {**options, "trials": trials * STAGE_TRIAL_FACTOR}
        results = [run_audit(job.adapter, name=info.name, claimed_epsilon=job.claim,
                             delta=0.0, alpha=level, privacy=PURE_DP, stage=job.label,
                             parameters=parameters, **stage_options)
                   for job in jobs]
        if add_whole:
            results += _whole(mechanism, kind, plan.relations(), epsilon, delta, level, split,
                              batch, params, options, parameters, label="whole mechanism")
        return combine_stages(info.name, epsilon, results, parameters,
                              time.perf_counter() - start, alpha)
    relations = plan.relations()
    results = _whole(mechanism, kind, relations, epsilon, delta, alpha / len(relations), split,
                     batch, params, options, parameters)
    if len(results) == 1:
        return replace(results[0], alpha=alpha)
    return combine_stages(info.name, epsilon, results, parameters,
                          sum(r.seconds for r in results), alpha)


def _whole(mechanism, kind, relations, epsilon, delta, alpha, split, batch, params, options,
           parameters, label: str = "") -> list[AuditResult]:
    """The whole mechanism against ``epsilon``, once per relation of its plan (``label``
    names it among stage results)."""
    results = []
    for relation in relations:
        adapter = ADAPTERS[kind](mechanism, epsilon=epsilon, delta=delta, params=params,
                                 split=split, batch=batch, relation=relation)
        pure = adapter.budget is None or adapter.budget.definition == PURE_DP
        results.append(run_audit(
            adapter, name=mechanism.info.name, claimed_epsilon=float(epsilon),
            delta=0.0 if pure else float(delta), alpha=alpha,
            privacy=PURE_DP if pure else f"{ZCDP} as (epsilon, delta)-DP",
            parameters=parameters,
            stage=label if len(relations) == 1 else f"{label or 'whole'} ({relation})",
            **options))
    return results


def audit_callable(
    run: Runner,
    neighbours: tuple[Any, Any],
    claimed_epsilon: float,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = 0,
    alpha: float = DEFAULT_ALPHA,
    delta: float = 0.0,
    statistics: Statistics | None = None,
    chunk: int = DEFAULT_CHUNK,
    name: str = "custom",
) -> AuditResult:
    """Audit any randomised function. ``run(data, n, source)`` returns ``n`` independent
    outputs on ``data`` as an array (n, d) (use ``source.rng`` for randomness);
    ``neighbours`` is (D, D'); the claim is (``claimed_epsilon``, ``delta``)-DP.
    ``statistics(outputs) -> {name: (n,) array}`` reduces outputs to scalars; by default a
    linear discriminant and the most shifted coordinate, fitted on an independent pilot run
    of `PILOT_TRIALS` per side."""
    adapter = AuditAdapter(tuple(neighbours), run, statistics, None, "custom neighbours")
    return run_audit(adapter, name=name, claimed_epsilon=float(claimed_epsilon),
                     delta=float(delta), trials=trials, seed=seed, alpha=alpha, chunk=chunk,
                     secure=False, privacy=PURE_DP if not delta else "approx-dp")


def audit_registered(query: str = "counts", epsilon: float = 1.0, **kwargs) -> list[AuditResult]:
    """Audit every registered mechanism answering ``query`` (keyword arguments as for
    `audit_mechanism`)."""
    return [audit_mechanism(i.name, epsilon, **kwargs) for i in list_mechanisms(query)]


def run_audit(adapter: AuditAdapter, *, name: str, claimed_epsilon: float, delta: float,
              trials: int, seed: int | None, alpha: float, chunk: int, secure: bool,
              privacy: str, parameters: dict | None = None, stage: str = "") -> AuditResult:
    """Run ``trials`` trials per side of ``adapter`` and bound epsilon (module docstring)."""
    if not (isinstance(trials, int | np.integer) and trials >= MIN_TRIALS):
        raise MechanismError(f"trials must be an integer >= {MIN_TRIALS}, got {trials!r}")
    if not 0 < alpha < 1:
        raise MechanismError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not (math.isfinite(claimed_epsilon) and claimed_epsilon >= 0):
        raise MechanismError(f"claimed epsilon must be a non-negative number, got {claimed_epsilon}")
    if not 0 <= delta < 1:
        raise MechanismError(f"delta must lie in [0, 1), got {delta}")
    if len(adapter.neighbours) != 2:
        raise MechanismError("neighbours must be a pair (D, D')")
    chunk = max(1, int(chunk))
    start = time.perf_counter()
    seeds = np.random.SeedSequence(seed).spawn(3)

    def sources(seq: np.random.SeedSequence, n: int):
        for s in seq.generate_state(-(-n // chunk)):
            yield NoiseSource(secure=True) if secure else NoiseSource(seed=int(s))

    statistics = adapter.statistics
    if statistics is None:
        m = min(PILOT_TRIALS, trials)
        pilot = [np.concatenate(list(_chunks(adapter.run, d, m, chunk, sources(seq, m))))
                 for d, seq in zip(adapter.neighbours, seeds[0].spawn(2), strict=True)]
        statistics = fit_statistics(*pilot)

    samples = []
    for d, seq in zip(adapter.neighbours, seeds[1:], strict=True):
        parts: dict[str, list[np.ndarray]] = {}
        for out in _chunks(adapter.run, d, trials, chunk, sources(seq, trials)):
            for key, value in statistics(out).items():
                value = np.asarray(value, dtype=float).reshape(-1)
                if value.size != out.shape[0]:
                    raise MechanismError(f"statistic {key!r} gave {value.size} values for "
                                         f"{out.shape[0]} outputs")
                parts.setdefault(key, []).append(value)
        samples.append({k: np.concatenate(v) for k, v in parts.items()})

    best, directions = epsilon_lower_bound((samples[0], samples[1]), trials, alpha, delta)
    bound = max(0.0, float(best["bound"]))
    return AuditResult(
        mechanism=name, claimed_epsilon=claimed_epsilon, epsilon_lower_bound=bound,
        trials=int(trials), passed=bool(bound <= claimed_epsilon), event=best["event"],
        delta=delta, alpha=alpha, privacy=privacy, epsilon_estimate=float(best["estimate"]),
        neighbours=adapter.description, batched=adapter.batched,
        parameters=dict(parameters or {}), seconds=round(time.perf_counter() - start, 3),
        directions=tuple(directions), stage=stage,
    )


def _chunks(run: Runner, data, n: int, chunk: int, sources):
    done = 0
    for source in sources:
        m = min(chunk, n - done)
        out = np.asarray(run(data, m, source), dtype=float)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != m:
            raise MechanismError(f"run(data, {m}, source) must return an array ({m}, d), "
                                 f"got shape {out.shape}")
        yield out
        done += m

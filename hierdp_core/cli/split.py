"""``--split-goal``: the budget split of a counts release chosen by the split optimiser
(`hierdp_core.privacy.split_optimiser`) from a stated goal and public parameters only (the
tree's shape, the mechanism, the budget), never from the counts.

Goals: ``mse`` or ``mae`` (the mean error per cell summed over the levels), with weights
per level root first (``mse:0,1,1,4``; 0 leaves a level out), or ``relative:P0,P1,...``
(the worst level's mean absolute error relative to a public population bin per level,
root first; ``-`` leaves a level out)."""

from __future__ import annotations

from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import optimised_mechanisms, optimiser_family
from hierdp_core.privacy.split_optimiser import Goal, optimise_split


def parse_goal(spec: str) -> Goal:
    """``mse``, ``mae``, ``mse:W0,W1,...``, ``mae:W0,...`` or ``relative:P0,P1,...`` as a
    `Goal`; anything else is an `InputError` naming the forms."""
    kind, sep, text = str(spec).strip().partition(":")
    values = [v.strip() for v in text.split(",")] if sep else []
    numbers = [_number(v) for v in values]
    if kind in ("mse", "mae") and "" not in numbers and "-" not in values:
        return Goal.weighted(numbers or None, metric=kind)
    if kind == "relative" and numbers and "" not in numbers:
        return Goal.worst_relative(numbers)
    raise InputError(f"--split-goal wants mse, mae, mse:W0,W1,... (a weight per level, root "
                     f"first), mae:W0,... or relative:P0,P1,... (a public population per "
                     f"level, '-' to leave one out); got {spec!r}")


def _number(text: str) -> float | None | str:
    """A float, None for '-', or '' for anything else."""
    if text == "-":
        return None
    try:
        return float(text)
    except ValueError:
        return ""


def goal_split(cfg, mechanism_name: str, data, budget, params: dict):
    """The `SplitChoice` of ``--split-goal`` (``cfg.split_goal``) for this release over
    ``data``'s (public) tree, or None without one. Refused with ``--split`` or a
    non-default ``--split-preset``, and for other queries."""
    spec = cfg.split_goal
    if spec is None:
        return None
    if cfg.split is not None:
        raise InputError("give --split-goal or --split / --split-preset, not both")
    family = optimiser_family(mechanism_name) if cfg.query == "counts" else None
    if family is None:
        raise InputError(f"--split-goal chooses the split of a counts release by "
                         f"{', '.join(optimised_mechanisms())}; not of {mechanism_name} "
                         f"({cfg.query})")
    return optimise_split(data.hierarchy, family, budget, parse_goal(spec),
                          noise=str(params.get("noise", "auto")),
                          root_invariant=bool(params.get("root_invariant", False)))


def describe_choice(choice) -> str:
    """One note line: the chosen split and the goal's a priori value against uniform."""
    return (f"--split-goal chose the split {choice.split_argument} ({choice.method}); "
            f"a priori goal {choice.objective:.4g} vs {choice.uniform_objective:.4g} with "
            "the uniform split")

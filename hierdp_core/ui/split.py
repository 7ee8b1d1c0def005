"""The Mechanism & budget page's split over levels: the split the sliders hold, and the
budget-split optimiser (issue 17) that chooses one from a stated goal and public parameters
only (the tree's shape, the mechanism family, the privacy definition and total budget, the
goal's level weights or public population bins), never the counts.

Session-state keys:

``hd_split_held``  (exact weights, the slider values they show as) of the last split set by
                   a preset or "Use this split": the sliders have a 0.01 step, so the exact
                   weights are used until a slider is moved (a 0.03% share is not 0)

The settings' ``preset`` is the preset the split was last set from (``custom`` once a
slider moves or the optimiser sets it): the preset picker shows it, also after the page was
left (Streamlit drops a widget's state when its page is not shown).

Widget keys (``split_goal*``; ``split_goal_open``: the section is open, and only then
computed) carry the tree's size, so another dataset starts from its own
placeholders. The optimum is cached per (tree, family, budget, noise, invariant root, goal).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.figure_parts import PALETTE, esc, figure_title, number_texts, plotly_config
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism, optimised_mechanisms, optimiser_family
from hierdp_core.number_text import figure_text
from hierdp_core.privacy.budget import PrivacyBudget, resolve_shares, split_shares
from hierdp_core.privacy.split_optimiser import (
    WEIGHTED,
    WORST_RELATIVE,
    Goal,
    NoiseModel,
    SplitChoice,
    expected_errors,
    optimise_split,
)
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import SPLIT_HELD as HELD

GOALS = {"equal": "Every level equally (MSE)", "weighted": "Weighted levels",
         "relative": "Worst relative error"}
METRIC_LABELS = {"mse": "mean squared error", "mae": "mean |error|"}
#: public national populations (census, rounded) of the bundled samples' nations: the
#: placeholders of the population bins; any other table starts from a round 1,000,000
PUBLIC_TOTALS = {"us-counties": 3e8, "synthetic-us-like": 3e8, "italy-municipalities": 6e7}
DEFAULT_TOTAL = 1e6
POPULATION_HELP = ("A typical unit's population at each level (e.g. a census total divided "
                   "by the number of units). These must be PUBLIC figures: never read them "
                   "from the data being released. The prefilled values are round "
                   "placeholders: check and change them. 0 leaves a level out.")


# ---- the split the sliders hold -----------------------------------------------------------
def slider_value(weight: float) -> float:
    """What a weight slider (step 0.01) shows for ``weight``."""
    return float(np.round(weight, 2))


CUSTOM = "custom"
PRESETS = {CUSTOM: "Custom (as the sliders show)", "uniform": "Uniform",
           "finer": "More to finer levels", "coarser": "More to coarser levels",
           "leaves-only": "All on the finest level"}


def preset_of(s: dict) -> str:
    """The preset whose shares the split's weights have: the settings' ``preset`` (the one
    last chosen) first, then any; custom when none has them (e.g. the number of levels
    changed since the preset was chosen)."""
    weights = np.asarray(s["weights"], dtype=float)
    if weights.sum() <= 0:
        return CUSTOM
    shares = weights / weights.sum()
    for name in dict.fromkeys([s.get("preset", CUSTOM), *PRESETS]):
        if name != CUSTOM and np.allclose(split_shares(len(shares), name), shares):
            return name
    return CUSTOM


def _preset_chosen(s: dict, n_levels: int) -> None:
    preset = st.session_state[wk.SPLIT_PRESET]
    if preset == CUSTOM:
        s["preset"] = CUSTOM
    else:
        set_split(s, split_shares(n_levels, preset), preset)


def _slider_moved(s: dict) -> None:
    s["preset"] = st.session_state[wk.SPLIT_PRESET] = CUSTOM


def preset_picker(s: dict, n_levels: int) -> str:
    """The preset select box: choosing a preset sets the split at once, and it stays shown
    until a slider moves (then "custom"). Draw it before the sliders. Returns the preset."""
    st.session_state.setdefault(wk.SPLIT_PRESET, preset_of(s))
    return st.selectbox("Preset (then adjust the weights below)", list(PRESETS),
                        format_func=PRESETS.get, key=wk.SPLIT_PRESET, on_change=_preset_chosen,
                        args=(s, n_levels))


def weight_slider(s: dict, level: int, label: str) -> float:
    """The weight slider of ``level`` (0 to 1, step 0.01); moving it makes the split
    custom."""
    return st.slider(label, 0.0, 1.0, step=0.01, key=wk.weight_key(level),
                     on_change=_slider_moved, args=(s,))


def init_sliders(s: dict) -> None:
    """Give the weight sliders the split's weights where they have no value yet."""
    for level, weight in enumerate(s["weights"]):
        st.session_state.setdefault(wk.weight_key(level), slider_value(weight))


def set_split(s: dict, weights, preset: str = CUSTOM) -> None:
    """Make ``weights`` (one per level, root first) the split, set from ``preset``: scaled
    so the largest is 1, held exactly (see ``hd_split_held``), and shown by the sliders and
    the preset picker. Call it before they are drawn (e.g. in a button's ``on_click``)."""
    weights = np.asarray(weights, dtype=float)
    s["weights"] = [float(w) for w in weights / weights.max()]
    s["preset"] = st.session_state[wk.SPLIT_PRESET] = preset
    st.session_state[HELD] = (tuple(s["weights"]), tuple(map(slider_value, s["weights"])))
    for level, weight in enumerate(s["weights"]):
        st.session_state[wk.weight_key(level)] = slider_value(weight)


def held_weights(slider_values: list[float]) -> list[float]:
    """The weights to use: the held exact ones while the sliders still show them, else the
    sliders' values (a moved slider drops the held split)."""
    held = st.session_state.get(HELD)
    if held is not None and tuple(slider_values) == held[1]:
        return list(held[0])
    st.session_state.pop(HELD, None)
    return list(slider_values)


def percent(share: float) -> str:
    """A share as a percentage; shares under 1% keep two significant digits."""
    return f"{100 * share:.2g}%" if 0 < share < 0.01 else f"{share:.0%}"


def describe_shares(h: Hierarchy, shares) -> str:
    """Each level's share in per cent, with one decimal where whole per cents would not
    add up to 100 (thirds: 33.3% each, not 33%)."""
    texts = [percent(x) for x in shares]
    if all(0.01 <= x for x in shares) and round(sum(round(100 * x) for x in shares)) != 100:
        texts = [f"{100 * x:.1f}%" for x in shares]
    return ", ".join(f"{name} {text}" for name, text in zip(h.level_names, texts, strict=True))


# ---- the optimiser (public parameters only) ---------------------------------------------
def goal_of(kind: str, metric: str, values: tuple[float, ...] | None) -> Goal:
    """The `Goal` of a goal choice: ``weighted`` with weights per level (None: 1 each), or
    ``worst-relative`` with a population bin per level (0 leaves a level out)."""
    if kind == WEIGHTED:
        return Goal.weighted(values, metric)
    return Goal.worst_relative([v if v > 0 else None for v in values])


@lru_cache(maxsize=32)
def optimised(hierarchy: Hierarchy, family: str, budget: PrivacyBudget, noise: str,
              root_invariant: bool, goal: tuple) -> SplitChoice:
    """`optimise_split`, cached by the tree's identity (a `Hierarchy` hashes by identity and
    the cache keeps it alive) and the public parameters; ``goal``: `goal_of`'s arguments."""
    return optimise_split(hierarchy, family, budget, goal_of(*goal), noise=noise,
                          root_invariant=root_invariant)


def comparison(hierarchy: Hierarchy, choice: SplitChoice, model: NoiseModel,
               current_shares, root_invariant: bool) -> tuple[pd.DataFrame, dict]:
    """Expected errors per level of the current and the optimised split, long (one row per
    split and level: split, level_name, share, mae, rmse), and the goal of each split."""
    current = expected_errors(hierarchy, choice.family, model, current_shares, root_invariant)
    frames = {"current": current, "optimised": choice.errors}
    table = pd.concat([f.assign(split=name) for name, f in frames.items()], ignore_index=True)
    goals = {name: choice.goal.objective(f[choice.goal.metric].to_numpy())
             for name, f in frames.items()}
    return table[["split", "level", "level_name", "share", "mae", "rmse"]], goals


def comparison_figure(table: pd.DataFrame) -> go.Figure:
    """Bars of the expected mean |error| per cell by level, current vs optimised split,
    with the RMSE as a dotted line of the same colour."""
    fig = go.Figure()
    for i, (split, part) in enumerate(table.groupby("split", sort=False)):
        x = [esc(v) for v in part["level_name"]]
        colour = PALETTE[2 * i]
        custom = np.column_stack([number_texts(part["mae"]), number_texts(part["rmse"]),
                                  [percent(v) for v in part["share"]]])
        hover = (f"<b>{split} split</b> · %{{x}}<br>mean |error|: %{{customdata[0]}}<br>"
                 "RMSE: %{customdata[1]}<br>share: %{customdata[2]}<extra></extra>")
        fig.add_trace(go.Bar(x=x, y=part["mae"], name=f"{split}: mean |error|",
                             marker_color=colour, customdata=custom, hovertemplate=hover))
        fig.add_trace(go.Scatter(x=x, y=part["rmse"], name=f"{split}: RMSE",
                                 mode="lines+markers", customdata=custom,
                                 line={"color": colour, "dash": "dot"},
                                 hovertemplate=hover))
    fig.update_layout(
        barmode="group", height=360, margin={"t": 70, "b": 40, "l": 60, "r": 20},
        title=figure_title("Expected error per cell, by level",
                     "a priori, from the tree's shape and the budget alone"),
        xaxis={"type": "category"},
        yaxis={"title": {"text": "error per cell (count)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per level: share, mean |error| and RMSE of the current and optimised split."""
    wide = table.pivot(index=["level", "level_name"], columns="split",
                       values=["share", "mae", "rmse"])
    names = {"share": "share", "mae": "mean |error|", "rmse": "RMSE"}
    wide.columns = [f"{names[m]} ({split})" for m, split in wide.columns]
    return wide.reset_index(level="level", drop=True).reset_index().rename(
        columns={"level_name": "level"})


def default_populations(h: Hierarchy, sample: str | None) -> list[float]:
    """Round placeholders of a typical unit's population per level: a public national total
    divided by the number of units, to one significant digit (from the tree's shape only)."""
    total = PUBLIC_TOTALS.get(sample or "", DEFAULT_TOTAL)
    typical = [total / h.level_size(level) for level in range(h.n_levels)]
    return [float(f"{max(p, 1):.0e}") for p in typical]


# ---- the page's section ------------------------------------------------------------------
def _goal_inputs(h: Hierarchy, sample: str | None) -> tuple | None:
    """The goal widgets; the goal as `goal_of`'s arguments, or None until the populations
    are confirmed public."""
    tree = f"{h.n_levels}_{h.n_nodes}"
    kind = st.radio("Goal", list(GOALS), format_func=GOALS.get, horizontal=True,
                    key=wk.SPLIT_GOAL)
    if kind == "equal":
        return WEIGHTED, "mse", None
    cols = st.columns([1.4] + [1] * h.n_levels)
    if kind == "weighted":
        metric = cols[0].selectbox("Error measure", list(METRIC_LABELS),
                                   format_func=METRIC_LABELS.get, key=wk.SPLIT_GOAL_METRIC)
        values = [cols[level + 1].number_input(
            f"Weight: {name}", min_value=0.0, value=1.0, step=0.5,
            key=wk.page_key(wk.SPLIT_GOAL_W, tree, level),
            help="How much this level's error counts (0 leaves it out).")
            for level, name in enumerate(h.level_names)]
        return WEIGHTED, metric, tuple(values)
    with cols[0]:
        confirmed = st.checkbox("These populations are public figures",
                                key=wk.page_key(wk.SPLIT_GOAL_PUBLIC, tree), help=POPULATION_HELP)
    values = [cols[level + 1].number_input(
        f"Population: {name}", min_value=0.0, value=default, step=default / 10, format="%.0f",
        key=wk.page_key(wk.SPLIT_GOAL_POP, tree, level), help=POPULATION_HELP)
        for level, (name, default) in enumerate(zip(h.level_names,
                                                   default_populations(h, sample),
                                                   strict=True))]
    st.caption("A typical unit's population: " + ", ".join(
        f"{name} {p:,.0f}" for name, p in zip(h.level_names, values, strict=True)) + ".")
    if not confirmed:
        st.info("Check the population of a typical unit at each level (public figures only) "
                "and tick the box to see the optimised split.")
        return None
    return WORST_RELATIVE, "mae", tuple(values)


def _objective_label(goal: tuple) -> str:
    kind, metric, weights = goal
    if kind == WORST_RELATIVE:
        return "worst level's mean |error| per cell divided by its population"
    return f"{'weighted ' if weights else ''}sum over levels of the {METRIC_LABELS[metric]} per cell"


def optimiser_section(h: Hierarchy, s: dict, budget: PrivacyBudget, *,
                      sample: str | None, declared: bool) -> None:
    """The "Optimise the split" section: goal, current vs optimised expected errors (table,
    chart, goal values) and "Use this split", which sets the page's split."""
    family = optimiser_family(s["mechanism"])
    if family is None:
        st.info(f"The split optimiser models the counts mechanisms "
                f"{', '.join(map(title, optimised_mechanisms()))}; "
                f"{title(s['mechanism'])} is not one of them: set its split by hand above.")
        return
    st.caption(f"Uses public parameters only: the tree's shape ({h.n_nodes:,} units on "
               f"{h.n_levels} levels), the mechanism and the budget, never the counts."
               + ("" if declared else " The tree here is read from your table (exploration "
                  "only); declare its geography on the Data page to publish."))
    goal = _goal_inputs(h, sample)
    if goal is None:
        return
    mechanism = get_mechanism(s["mechanism"])
    noise = mechanism.fixed_noise or str(s["params"].get("noise", "auto"))
    invariant = bool(s["params"].get("root_invariant", False))
    current = resolve_shares(h.n_levels, s["weights"], skip_root=invariant)
    try:
        choice = optimised(h, family, budget, noise, invariant, goal)
        table, goals = comparison(h, choice, NoiseModel.of(budget, noise), current, invariant)
    except HierdpError as exc:
        st.warning(f"No split for this goal: {exc}")
        return
    change = goals["optimised"] / goals["current"] - 1 if goals["current"] else 0.0
    st.caption(f"Goal: the {_objective_label(goal)} (lower is better).")
    cols = st.columns([1, 1, 2])
    cols[0].metric("Current split", figure_text(goals["current"]))
    cols[1].metric("Optimised split", figure_text(goals["optimised"]), delta_color="inverse",
                   delta=f"{change:+.1%}" if abs(change) >= 5e-4 else None)
    with cols[2]:
        if np.allclose(current, choice.shares, atol=1e-9):
            st.success(f"In use: {describe_shares(h, choice.shares)}.",
                       icon=":material/check:")
        else:
            st.button("Use this split", type="primary", key=wk.SPLIT_GOAL_APPLY,
                      on_click=set_split, args=(s, choice.shares))
        st.caption(f"Optimised split ({choice.method}): {describe_shares(h, choice.shares)}.")
    shown = display_table(table)
    st.dataframe(shown, hide_index=True, width="stretch", column_config={
        name: st.column_config.NumberColumn(format="percent" if name.startswith("share")
                                            else "%.2f") for name in shown.columns[1:]})
    st.plotly_chart(comparison_figure(table), width="stretch", key=wk.SPLIT_GOAL_FIG,
                    config=plotly_config())

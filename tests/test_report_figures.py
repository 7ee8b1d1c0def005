"""The release report's trade-off figure marks the chosen epsilon where it is on its log
axis: the line at ε and its label over it (plotly reads an annotation's x on a log axis as
log10 of the value, a shape's as the value), so neither stretches the axis."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hierdp_core.report.figures import tradeoff_figure
from hierdp_core.report.stakeholder import TRADEOFF_EPSILONS


def tradeoff_table() -> pd.DataFrame:
    return pd.DataFrame({"epsilon": TRADEOFF_EPSILONS, "level_name": "county",
                         "expected_abs_error": [2.0 / e for e in TRADEOFF_EPSILONS]})


@pytest.mark.parametrize("eps", [20.0, 0.5])
def test_chosen_epsilon_marked_at_epsilon_on_the_log_axis(eps):
    fig = tradeoff_figure(tradeoff_table(), eps)
    assert fig.layout.xaxis.type == "log"
    (line,) = fig.layout.shapes
    (label,) = fig.layout.annotations
    assert line.x0 == line.x1 == eps
    assert label.text == f"chosen ε = {eps:g}"
    assert label.x == pytest.approx(math.log10(eps))
    # nothing on the figure reaches beyond the data and ε (the old label sat at 10**eps)
    lo, hi = min(*TRADEOFF_EPSILONS, eps), max(*TRADEOFF_EPSILONS, eps)
    assert math.log10(lo) <= label.x <= math.log10(hi)


def test_no_chosen_epsilon_no_mark():
    fig = tradeoff_figure(tradeoff_table())
    assert not fig.layout.shapes and not fig.layout.annotations

"""Budgets at the extremes (issue 32, found by the fuzzed command line): a release's epsilon,
rho and delta lie in ranges every mechanism, query kind and noise mode shares
(`hierdp_core.privacy.budget.check_total`), refused outside them in one line naming the
option and its range before any work; inside them the conversions (epsilon, delta -> rho)
and the noise are exact; a share of the split too small for its noise is a typed error,
never a ZeroDivisionError. Interval replicates have their own bound
(`hierdp_core.defaults.MAX_REPLICATES`), whatever ``--max-memory`` allows.

The property test draws budgets over every order of magnitude (denormals, 0, inf and nan
included) for each query kind, seeded and secure, through the command line in-process."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierdp_core.defaults import MAX_REPLICATES
from hierdp_core.errors import BudgetError, SizeLimitError
from hierdp_core.export import read_release
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.memory_plan import check_replicates
from hierdp_core.privacy.budget import (
    DELTA_MIN,
    EPSILON_RANGE,
    RHO_RANGE,
    PrivacyBudget,
    check_total,
    epsilon_delta_to_rho,
    rho_to_epsilon,
)
from hierdp_core.privacy.samplers import MAX_NOISE_SCALE, Geometric, NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON, check_within_ceilings

FLOWS = "o_area,d_area,n,o_state,d_state\nA0,A1,2,S0,S0\nA1,A2,7,S0,S0\nA2,A0,1,S0,S0\n"
FLOW_AREAS = "state,area\nS0,A0\nS0,A1\nS0,A2\n"
TABLES = {"counts": "region,unit,n\nA,a,1\nA,b,5\nB,c,3\n",
          "group-sizes": "region,size,n\nA,1,3\nA,2,1\nB,3,2\n",
          "ranges": "region,age,residents\nA,3,5\nB,7,2\nB,9,1\n",
          "flows": FLOWS}
FLAGS = {"counts": ["--levels", "region,unit", "--count-column", "n"],
         "group-sizes": ["--levels", "region", "--size-column", "size", "--count-column", "n",
                         "--max-size", "5"],
         "ranges": ["--levels", "region", "--attribute", "age", "--count-column",
                    "residents", "--domain", "0-15"],
         "flows": ["--origin-levels", "o_state,o_area", "--destination-levels",
                   "d_state,d_area", "--count-column", "n", "--invariant", "total"]}
MECHANISMS = {"counts": ["least-squares", "raw-geometric", "topdown"],
              "group-sizes": ["gs-noisy", "gs-topdown"], "ranges": ["identity", "greedy-h"],
              "flows": ["inftda"]}


def release_argv(folder, query: str, mechanism: str, *budget) -> list:
    """``hierdp release`` of the query kind's small table in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "t.csv").write_text(TABLES[query])
    extra = []
    if query == "flows":
        (folder / "g.csv").write_text(FLOW_AREAS)
        extra = ["--geography", folder / "g.csv"]
    else:
        extra = ["--structure-from-data"]
    if query == "group-sizes" and mechanism == "gs-topdown":
        extra += ["--invariant", "total"]
    return ["release", folder / "t.csv", "--query", query, "--mechanism", mechanism,
            *FLAGS[query], *extra, *budget,
            "--key-file", folder / "key", "--out", folder / "out"]


def one_line_refusal(code: int, err: str, out) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    assert not out.exists()
    return lines[0]


# ---- the core ---------------------------------------------------------------------------
@pytest.mark.parametrize("budget, named", [
    (PrivacyBudget.pure(1e300), "epsilon must lie between 1e-06 and 1e+09, got 1e+300"),
    (PrivacyBudget.pure(1e-300), "epsilon must lie between 1e-06 and 1e+09, got 1e-300"),
    (PrivacyBudget.approx(2e9, 1e-6), "epsilon must lie between 1e-06 and 1e+09"),
    (PrivacyBudget.zcdp(5e-324, 1e-6), "rho must lie between 1e-12 and 1e+09, got 4.94066e-324"),
    (PrivacyBudget.zcdp(1e10), "rho must lie between 1e-12 and 1e+09"),
    (PrivacyBudget.approx(1.0, 5e-324), "delta must lie between 1e-100 and 1 (exclusive)"),
])
def test_a_total_outside_the_ranges_is_refused_naming_its_range(budget, named):
    with pytest.raises(BudgetError, match=re.escape(named)):
        check_total(budget)


@pytest.mark.parametrize("option, value", [
    ("epsilon", 0.0), ("epsilon", -1.0), ("epsilon", math.inf), ("epsilon", math.nan),
    ("delta", 0.0), ("delta", 1.0), ("delta", 1e-300)])
def test_any_value_outside_a_range_gets_the_same_message(capsys, tmp_path, option, value):
    """One message per option, whatever lies outside its range (0, inf and nan too)."""
    budget = [f"--{option}={value!r}"] + (["--epsilon", 1] if option == "delta" else [])
    code, _, err = run_cli(capsys, *release_argv(tmp_path, "flows", "inftda", *budget,
                                                 "--seed", 1))
    line = one_line_refusal(code, err, tmp_path / "out")
    range_of = {"epsilon": "1e-06 and 1e+09", "delta": "1e-100 and 1 (exclusive)"}[option]
    assert line == f"error: --{option} must lie between {range_of}, got {value:g}"


@pytest.mark.parametrize("budget", [
    PrivacyBudget.pure(EPSILON_RANGE[0]), PrivacyBudget.pure(EPSILON_RANGE[1]),
    PrivacyBudget.zcdp(RHO_RANGE[0], DELTA_MIN), PrivacyBudget.zcdp(RHO_RANGE[1], 0.999),
    PrivacyBudget.approx(EPSILON_RANGE[0], DELTA_MIN), PrivacyBudget.approx(1e9, 0.5)])
def test_the_ends_of_the_ranges_are_accepted_and_convert_exactly(budget):
    assert check_total(budget) is budget
    if budget.definition == "approx-dp":
        rho = epsilon_delta_to_rho(budget.value, budget.delta)
        assert 0 < rho and rho_to_epsilon(rho, budget.delta) == pytest.approx(budget.value,
                                                                                 rel=1e-9)
    elif budget.delta is not None:
        assert math.isfinite(budget.epsilon_at_delta())


@pytest.mark.parametrize("convert", [lambda: epsilon_delta_to_rho(1e300, 1e-6),
                                     lambda: rho_to_epsilon(1e300, 1e-6),
                                     lambda: epsilon_delta_to_rho(1.0, 5e-324)])
def test_a_conversion_far_outside_the_ranges_is_a_budget_error(convert):
    """Was a ValueError from the root finder ("f(a) and f(b) must have different signs")."""
    with pytest.raises(BudgetError, match="cannot convert .* exactly: a budget must have "
                                          "epsilon between 1e-06 and 1e\\+09"):
        convert()


def test_the_geometric_moments_stay_exact_at_large_scales():
    """1 - alpha from expm1: at scale 1e10 the old 1 - exp(-1/t) lost six digits, and from
    about 1e16 it was 0 (a ZeroDivisionError)."""
    t = 1e10
    assert Geometric(t).variance == pytest.approx(2 * t * t - 1 / 6, rel=1e-12)
    assert Geometric(t).expected_abs == pytest.approx(t, rel=1e-9)
    with pytest.raises(BudgetError, match="above the largest drawn, 1e\\+12: the budget"):
        Geometric(MAX_NOISE_SCALE * 2)


@pytest.mark.parametrize("name", ["least-squares", "raw-geometric"])
def test_a_share_too_small_for_its_noise_is_a_budget_error(name):
    """The library takes parts of a budget below the ranges (a total's share); noise too
    large to draw is refused in a typed error (was a ZeroDivisionError)."""
    import pandas as pd

    data = count_data_from_table(pd.DataFrame({"r": ["A", "A", "B"], "u": ["a", "b", "c"],
                                               "n": [1, 5, 3]}), ["r", "u"], count_column="n")
    with pytest.raises(BudgetError, match="noise scale"):
        get_mechanism(name).release(data, PrivacyBudget.pure(1e-300), source=NoiseSource(seed=1))


def test_replicates_are_bounded_whatever_the_memory():
    check_replicates(MAX_REPLICATES)
    with pytest.raises(SizeLimitError, match="--interval-replicates is too large: an interval "
                                             "takes 2 to 2,000 replicates"):
        check_replicates(MAX_REPLICATES + 1)


# ---- the command line: the fuzzer's finds ------------------------------------------------
def test_an_epsilon_of_1e300_is_refused_for_inftda_secure(capsys, tmp_path):
    """Was exit 1: "unexpected ValueError: f(a) and f(b) must have different signs"."""
    code, _, err = run_cli(capsys, *release_argv(tmp_path, "flows", "inftda", "--epsilon",
                                                 "1e300", "--delta", "1e-6", "--secure"))
    line = one_line_refusal(code, err, tmp_path / "out")
    assert line == "error: --epsilon must lie between 1e-06 and 1e+09, got 1e+300"


@pytest.mark.parametrize("mechanism", ["least-squares", "raw-geometric"])
def test_an_epsilon_of_1e_300_is_refused(capsys, tmp_path, mechanism):
    """Was exit 1: "unexpected ZeroDivisionError" (noise of scale 1e300)."""
    code, _, err = run_cli(capsys, *release_argv(tmp_path, "counts", mechanism, "--epsilon",
                                                 "1e-300", "--interval", "0.9", "--seed", 1))
    line = one_line_refusal(code, err, tmp_path / "out")
    assert line == "error: --epsilon must lie between 1e-06 and 1e+09, got 1e-300"


def test_a_billion_replicates_are_refused_at_once_whatever_max_memory(capsys, tmp_path):
    """Was a hang: 10TB of --max-memory let 10^9 bootstrap re-runs start."""
    started = time.perf_counter()
    code, _, err = run_cli(capsys, *release_argv(
        tmp_path, "ranges", "greedy-h", "--epsilon", 1, "--seed", 1, "--interval", "0.9",
        "--interval-replicates", 10**9, "--max-memory", "10TB"))
    line = one_line_refusal(code, err, tmp_path / "out")
    assert line == ("error: --interval-replicates is too large: an interval takes 2 to "
                    "2,000 replicates (each a re-run or simulation of the release), got "
                    "1,000,000,000")
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("epsilon", ["1e300", "1e-300"])
def test_an_audit_takes_the_ranges_of_a_release(capsys, epsilon):
    """Was a "pass" at epsilon 1e300 (any lower bound is below it)."""
    code, _, err = run_cli(capsys, "audit", "--mechanism", "topdown", "--epsilon", epsilon,
                           "--trials", 100)
    assert code == 2 and err == (f"error: --epsilon must lie between 1e-06 and 1e+09, got "
                                 f"{float(epsilon):g}\n")


def test_the_help_states_the_ranges(capsys):
    code, out, _ = run_cli(capsys, "release", "--help")
    flat = " ".join(out.split())
    assert code == 0 and "1e-06 to 1e+09" in flat and "1e-12 to 1e+09" in flat
    assert "1e-100 to 1 (exclusive)" in flat and "2 to 2,000" in flat


# ---- the property: any budget gives a release or one line ---------------------------------
EXTREME = st.sampled_from([0.0, -0.0, -1.0, 5e-324, 1e-320, 2.2e-308, 1e-300, math.inf,
                           -math.inf, math.nan, 1e300, 1.7e308, 0.999999, 1.0])
MAGNITUDES = st.one_of(
    EXTREME, st.builds(lambda m, e: m * 10.0 ** e, st.floats(1, 9.99), st.integers(-320, 308)),
    st.sampled_from([*EPSILON_RANGE, *RHO_RANGE]),
    st.floats(-12, 9).map(lambda e: 10.0 ** e))  # within the ranges, or near them
DELTAS = st.one_of(st.floats(-100, -2).map(lambda e: 10.0 ** e), st.just(DELTA_MIN), EXTREME)
EXTREMES = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
_examples = iter(range(10**9))


@st.composite
def budgets(draw, query: str, mechanism: str) -> tuple[str, float, float | None]:
    """(unit, value, delta or None) of a budget the mechanism takes (its definitions), at
    any magnitude: --rho for zCDP, --epsilon alone for pure DP, with --delta for (epsilon,
    delta); a flow release always has a delta."""
    info = get_mechanism(mechanism).info
    definitions = info.privacy_definitions or (info.privacy,)
    units = [u for u, d in (("rho", "zcdp"), ("epsilon", "pure-dp"), ("epsilon", "approx-dp"))
             if d in definitions]
    unit = draw(st.sampled_from(units))
    with_delta = query == "flows" or (unit == "rho" and draw(st.booleans()))
    return unit, draw(MAGNITUDES), draw(DELTAS) if with_delta else None


def in_range(unit: str, value: float, delta: float | None) -> bool:
    least, most = RHO_RANGE if unit == "rho" else EPSILON_RANGE
    return least <= value <= most and (delta is None or DELTA_MIN <= delta < 1)


def within_ceilings(unit: str, value: float, delta: float | None) -> bool:
    """Whether a budget is at or below the default public ceilings (`verdict`)."""
    definition = "zcdp" if unit == "rho" else "approx-dp" if delta is not None else "pure-dp"
    privacy = {"definition": definition, unit: value,
               **({"delta": delta} if delta is not None else {})}
    try:
        check_within_ceilings(privacy, DEFAULT_MAX_EPSILON, DEFAULT_MAX_DELTA)
    except BudgetError:
        return False
    return True


@EXTREMES
@given(query=st.sampled_from(list(MECHANISMS)), data=st.data(), secure=st.booleans())
def test_any_budget_gives_a_release_or_one_typed_line(capsys, tmp_path, monkeypatch, query,
                                                      data, secure):
    """Within the ranges a release (complete, finite values), outside them one line naming
    the option (--epsilon, --rho or --delta), never another exit status or a traceback; a
    secure one above the public ceilings one line naming the ceiling (it could not be
    published, so nothing is charged)."""
    mechanism = data.draw(st.sampled_from(MECHANISMS[query]))
    unit, value, delta = data.draw(budgets(query, mechanism))
    folder = tmp_path / f"e{next(_examples)}"
    monkeypatch.setenv("HIERDP_HOME", str(folder / "home"))  # a ledger of its own
    budget = [f"--{unit}={value!r}", *([f"--delta={delta!r}"] if delta is not None else [])]
    mode = ["--secure"] if secure else ["--seed", "1"]
    code, _, err = run_cli(capsys, *release_argv(folder, query, mechanism, *budget, *mode,
                                                 "--interval", "0.9", "--interval-replicates",
                                                 "3"))
    if in_range(unit, value, delta) and secure and not within_ceilings(unit, value, delta):
        line = one_line_refusal(code, err, folder / "out")
        assert "above the public ceiling" in line and "nothing was charged" in line, line
    elif in_range(unit, value, delta):
        assert code == 0, err
        table, manifest = read_release(folder / "out", folder / "key")
        assert len(table) and manifest["files"] and np.isfinite(table["value"]).all()
    else:
        line = one_line_refusal(code, err, folder / "out")
        assert any(f"--{name} must" in line for name in ("epsilon", "rho", "delta")), line

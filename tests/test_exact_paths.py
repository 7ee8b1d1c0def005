"""Exhaustive enumeration of the exact sampler's paths, and mutants the checks must catch.

Bottom-up, each step of the argument in `hierdp_core.privacy.exact` checked exactly:
- `uniform_below` on every word sequence up to a depth (Fractions): every value in [0, n)
  has the same probability and the unexplored mass is exactly the chance of that many
  rejections in a row;
- Bernoulli(num/den) and Bernoulli(exp(-gamma)) on every word sequence above a probability:
  the probability of 1 lies within [found, found + unexplored] of the exact value;
- the discrete Laplace and discrete Gaussian algorithms with their random steps replaced by
  exact oracles of the laws established above (probabilities to 40 digits): every outcome's
  probability lies within [found, found + unexplored] of the pmf, unexplored < 1e-9.
Mutants (a Bernoulli loop off by one, a modulo instead of the rejection, a wrong
acceptance exponent, a float on the path) are run through the same checks, which must fail.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from hierdp_core.privacy.exact import bernoulli, gaussian, laplace, uniform
from hierdp_core.privacy.exact.apply import ExactNoise
from tests.exact_helpers import (
    enumerate_paths,
    exp_decimal,
    gaussian_pmf_exact,
    laplace_pmf_exact,
)

TINY = Decimal(10) ** -30  # the 40-digit arithmetic's slack


# ---- uniform integers ---------------------------------------------------------------------
def uniform_law(n: int, depth: int, draw=None):
    """{value: P} of one uniform_below(n) over every word sequence of up to ``depth``
    rejections, and the mass left."""
    draw = draw or (lambda w: int(uniform.uniform_below(n, w, 1)[0]))
    width = (n - 1).bit_length()
    return enumerate_paths(draw, Fraction(1, 1 << (width * depth)))


def assert_uniform(n: int, depth: int = 2, draw=None):
    found, left = uniform_law(n, depth, draw)
    width = (n - 1).bit_length()
    assert set(found) == set(range(n)), sorted(found)
    assert len(set(found.values())) == 1, found  # all values equally likely
    assert left == Fraction((1 << width) - n, 1 << width) ** depth
    assert sum(found.values()) + left == 1


@pytest.mark.parametrize("n", range(1, 18))
def test_uniform_below_is_exactly_uniform_on_small_widths(n):
    assert_uniform(n)
    assert_uniform(n, draw=lambda w: int(uniform.uniform_below(np.array([n]), w)[0]))


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 1), (1, 3), (2, 3), (5, 7), (3, 8)])
def test_bernoulli_ratio_is_exact(num, den):
    found, left = enumerate_paths(
        lambda w: bool(uniform.bernoulli_ratio(np.array([num]), den, w)[0]), Fraction(1, 2**12))
    ones = found.get(True, 0)
    assert ones / (ones + found.get(False, 0)) == Fraction(num, den)


# ---- Bernoulli(exp(-gamma)) ---------------------------------------------------------------
def exp_law(num: int, den: int, min_prob=Fraction(1, 2**20)):
    """(P(1) found, mass left) of Bernoulli(exp(-num/den)) over every word sequence."""
    found, left = enumerate_paths(
        lambda w: bool(bernoulli.bernoulli_exp(np.array([num]), den, w)[0]), min_prob)
    return Decimal(found.get(True, 0).numerator) / Decimal(found.get(True, 0).denominator), \
        Decimal(left.numerator) / Decimal(left.denominator)


def assert_exp_law(num: int, den: int, slack=Decimal("0.02")):
    ones, left = exp_law(num, den)
    exact = exp_decimal(Fraction(-num, den))
    assert ones - TINY <= exact <= ones + left + TINY, (num, den, ones, left, exact)
    assert left < slack, left


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 1), (1, 2), (2, 3), (3, 2), (5, 2)])
def test_bernoulli_exp_holds_within_the_unexplored_mass(num, den):
    assert_exp_law(num, den)


# ---- the algorithms, with their random steps as exact oracles ------------------------------
def _choice(words, p: Decimal):
    return words.choose([(True, p), (False, 1 - p)])


def _exp(num, den) -> Decimal:
    return exp_decimal(Fraction(-int(num), int(den)))


def _oracle_uniform_below(n, words, size=None):
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    share = Decimal(1) / Decimal(int(n))
    return np.array([words.choose([(v, share) for v in range(int(n))])], dtype=np.int64)


def _oracle_exp_unit(num, den, words, size=None):
    num = np.asarray(num)
    if num.size == 0:
        return np.zeros(0, dtype=bool)
    return np.array([_choice(words, _exp(num[0], den))])


def _oracle_exp_minus_one(size, words):
    return np.array([_choice(words, _exp(1, 1)) for _ in range(size)], dtype=bool)


def _oracle_exp(num, den, words):
    return np.array([_choice(words, _exp(v, den)) for v in np.asarray(num)], dtype=bool)


def _oracle_laplace(t, s, size, words, reach=80):
    options = [(k, laplace_pmf_exact(t, s, k)) for k in range(-reach, reach + 1)]
    return np.array([words.choose(options) for _ in range(size)], dtype=np.int64)


@pytest.fixture
def oracles(monkeypatch):
    monkeypatch.setattr(laplace, "uniform_below", _oracle_uniform_below)
    monkeypatch.setattr(laplace, "bernoulli_exp_unit", _oracle_exp_unit)
    monkeypatch.setattr(laplace, "bernoulli_exp_minus_one", _oracle_exp_minus_one)
    monkeypatch.setattr(gaussian, "discrete_laplace", _oracle_laplace)
    monkeypatch.setattr(gaussian, "bernoulli_exp", _oracle_exp)


def one_attempt(noise: ExactNoise, words):
    """One candidate of the rejection sampler: its value, or None when rejected (a
    rejection starts an independent new attempt, so the output's law is the law of an
    attempt's value given that it is kept)."""
    if noise.kind == "discrete-laplace":
        z = laplace._candidates(1, noise.num, noise.den, words)
    else:
        a, b = noise.num, noise.den
        t = gaussian.proposal_scale(a, b)
        y = gaussian.discrete_laplace(t, 1, 1, words)
        z = y[gaussian._keep(y, a, b, t, words)]
    return int(z[0]) if z.size else None


def assert_pmf(noise: ExactNoise, bound=Decimal("1e-9")):
    pmf = laplace_pmf_exact if noise.kind == "discrete-laplace" else gaussian_pmf_exact
    found, left = enumerate_paths(lambda w: one_attempt(noise, w), Decimal("1e-14"),
                                  one=Decimal(1))
    found.pop(None, None)
    kept = sum(found.values())
    assert left < bound, left
    for k in range(-6, 7):
        exact = pmf(noise.num, noise.den, k)
        got = found.get(k, Decimal(0))
        assert got / (kept + left) - TINY <= exact <= (got + left) / kept + TINY, \
            (k, got / kept, exact, left)


LAPLACE_TINY = [(1, 1), (3, 2), (2, 3), (5, 1)]
GAUSSIAN_TINY = [(1, 1), (1, 2), (3, 2), (4, 1)]


@pytest.mark.parametrize(("t", "s"), LAPLACE_TINY)
def test_discrete_laplace_paths_sum_to_the_pmf(oracles, t, s):
    assert_pmf(ExactNoise("discrete-laplace", t, s))


@pytest.mark.parametrize(("a", "b"), GAUSSIAN_TINY)
def test_discrete_gaussian_paths_sum_to_the_pmf(oracles, a, b):
    assert_pmf(ExactNoise("discrete-gaussian", a, b))


# ---- mutants the checks must catch ----------------------------------------------------------
def test_an_off_by_one_in_the_bernoulli_loop_is_caught(monkeypatch):
    monkeypatch.setattr(bernoulli, "_bernoulli_one_over",
                        lambda k, size, words: uniform.uniform_below(k + 1, words, size) == 0)
    with pytest.raises(AssertionError):
        assert_exp_law(1, 2)


def test_a_modulo_instead_of_the_rejection_is_caught(monkeypatch):
    def modulo(n, size, words):
        width = max(1, (n - 1).bit_length())
        return (words.bits(size, width) % n).astype(np.int64)

    monkeypatch.setattr(uniform, "_uniform_below_scalar", modulo)
    with pytest.raises(AssertionError):
        assert_uniform(3)
    with pytest.raises(AssertionError):
        test_bernoulli_ratio_is_exact(1, 3)


def test_a_wrong_acceptance_exponent_is_caught(oracles, monkeypatch):
    def without_the_two(y, a, b, t, words):  # exp(-(|y| - sigma^2/t)^2 / sigma^2)
        return gaussian.bernoulli_exp((np.abs(y) * t * b - a) ** 2, a * b * t * t, words)

    monkeypatch.setattr(gaussian, "_keep", without_the_two)
    with pytest.raises(AssertionError):
        assert_pmf(ExactNoise("discrete-gaussian", 1, 1))


def test_a_dropped_run_of_the_geometric_pool_is_caught(oracles, monkeypatch):
    """The cut run at the end of a pool continues in the next pool: dropping it biases V."""
    def dropping(size, words):
        runs = []
        while len(runs) < size:
            pool = laplace.bernoulli_exp_minus_one(1, words)
            zeros = np.flatnonzero(~pool)
            runs.extend((np.diff(zeros, prepend=-1) - 1).tolist())
        return np.array(runs[:size], dtype=np.int64)

    monkeypatch.setattr(laplace, "geometric_runs", dropping)
    with pytest.raises(AssertionError):
        assert_pmf(ExactNoise("discrete-laplace", 1, 1))


# ---- no float on the path -------------------------------------------------------------------
SAMPLER_MODULES = [uniform, bernoulli, laplace, gaussian]
#: the batch-size estimates: floats decide how many candidates to draw, never a value
SIZING = {"oversample", "_acceptance", "_gaussian_acceptance", "_P_EXP_MINUS_ONE"}


def float_uses(source: str) -> list[str]:
    """Float operations in ``source`` outside the sizing helpers: true division, float
    literals, float(), exp/log/sqrt/floor, float dtypes."""
    found = []
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.Assign) and (
                getattr(node, "name", None) in SIZING
                or any(getattr(t, "id", None) in SIZING for t in getattr(node, "targets", []))):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.append(f"true division at line {node.lineno}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, float):
            found.append(f"float literal at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr in {
                "exp", "log", "sqrt", "floor", "ceil", "float64", "random", "expm1"}:
            found.append(f"{node.attr} at line {node.lineno}")
        elif isinstance(node, ast.Name) and node.id == "float":
            found.append(f"float() at line {node.lineno}")
    return found


@pytest.mark.parametrize("module", SAMPLER_MODULES, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_no_float_on_the_sampling_path(module):
    assert float_uses(inspect.getsource(module)) == []


def test_a_float_slipped_into_the_path_is_caught():
    source = inspect.getsource(laplace._quotient).replace("x // s", "np.floor(x / s)")
    assert "np.floor(x / s)" in source
    assert float_uses(textwrap.dedent(source)) != []
    source = inspect.getsource(gaussian._keep).replace(
        "bernoulli_exp(m * m, den, words)", "words.bits(m.size, 53) < 2.0**53 * np.exp(-m * m / den)")
    assert float_uses(textwrap.dedent(source)) != []

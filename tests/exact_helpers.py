"""Helpers for the tests of the exact sampler (`hierdp_core.privacy.exact`).

- `SeededWords`: ChaCha20 with a fixed key, so a statistical test is reproducible (a test
  hook only: the secure source cannot be given one);
- `ScriptedWords` and `enumerate_paths`: run a sampler on every sequence of random words up
  to a probability threshold and sum the exact probability of each outcome (Fractions);
- exact pmfs of rational parameters, independent of the code under test, and the chi-square
  and largest-deviation checks against them.
"""

from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
from scipy import stats

from hierdp_core.privacy.exact.keystream import ChaChaWords


class SeededWords(ChaChaWords):
    """A ChaCha20 keystream under a key made from ``seed`` (tests only)."""

    def __init__(self, seed: int):
        self._seed = seed
        super().__init__()

    def _key(self):
        return self._seed.to_bytes(32, "little"), bytes(16)


class NeedChoice(Exception):
    """The script ran out: the explorer branches over ``options`` [(value, probability)]."""

    def __init__(self, options):
        super().__init__(len(options))
        self.options = options


class ScriptedWords:
    """Random words from a script of choices: ``bits(1, width)`` takes the next choice, or
    asks the explorer to branch over the 2^width words (each 1/2^width, a Fraction)."""

    def __init__(self, script):
        self.script, self.pos = list(script), 0

    def choose(self, options):
        if self.pos == len(self.script):
            raise NeedChoice(options)
        self.pos += 1
        return self.script[self.pos - 1]

    def bits(self, n: int, width: int) -> np.ndarray:
        if n > 1:
            raise AssertionError(f"a batch of {n} words while enumerating")
        dtype = np.uint32 if width <= 32 else np.uint64
        if n == 0:
            return np.zeros(0, dtype=dtype)
        if width > 16:
            raise AssertionError(f"a {width}-bit draw while enumerating tiny parameters")
        share = Fraction(1, 1 << width)
        return np.array([self.choose([(w, share) for w in range(1 << width)])], dtype=dtype)


def enumerate_paths(sample, min_prob, one=Fraction(1)):
    """{outcome: probability} over every sequence of choices of probability >= min_prob on
    which ``sample(ScriptedWords(script))`` returns, and the probability left unexplored
    (``one`` the type of probabilities: Fraction, or Decimal for oracle choices)."""
    found = {}
    left = one * 0
    stack = [((), one)]
    while stack:
        script, prob = stack.pop()
        words = ScriptedWords(script)
        try:
            value = sample(words)
        except NeedChoice as need:
            left += prob * (one - sum(p for _, p in need.options))  # options left out
            for choice, p in need.options:
                if p == 0:
                    continue
                if prob * p < min_prob:
                    left += prob * p
                else:
                    stack.append((script + (choice,), prob * p))
            continue
        assert words.pos == len(script)
        found[value] = found.get(value, 0) + prob
    return found, left


def exp_decimal(x: Fraction) -> Decimal:
    """exp(x) to 40 digits."""
    getcontext().prec = 40
    return (Decimal(x.numerator) / Decimal(x.denominator)).exp()


def laplace_pmf_exact(t: int, s: int, k: int) -> Decimal:
    """P(k) of the discrete Laplace of scale t/s, to 40 digits."""
    getcontext().prec = 40
    q = exp_decimal(Fraction(-s, t))
    return (1 - q) / (1 + q) * q ** abs(k)


def laplace_pmf(t: int, s: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Support -r..r and pmf (float) of the discrete Laplace of scale t/s."""
    k = np.arange(-r, r + 1)
    q = np.exp(-s / t)
    return k, (1 - q) / (1 + q) * np.exp(-np.abs(k) * (s / t))


def gaussian_pmf(a: int, b: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Support -r..r and pmf of the discrete Gaussian of variance a/b (normaliser summed
    over a range whose outside mass is far below double precision)."""
    sigma = (a / b) ** 0.5
    wide = int(40 * sigma) + 40
    kk = np.arange(-wide, wide + 1, dtype=float)
    norm = np.exp(-kk**2 * b / (2 * a)).sum()
    k = np.arange(-r, r + 1)
    return k, np.exp(-k.astype(float) ** 2 * b / (2 * a)) / norm


def gaussian_pmf_exact(a: int, b: int, k: int) -> Decimal:
    getcontext().prec = 40
    sigma = (a / b) ** 0.5
    wide = int(40 * sigma) + 40
    norm = sum(exp_decimal(Fraction(-j * j * b, 2 * a)) for j in range(-wide, wide + 1))
    return exp_decimal(Fraction(-k * k * b, 2 * a)) / norm


def fit_checks(x: np.ndarray, support: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    """(chi-square p-value, largest |z| of a bin) of integer draws ``x`` against ``probs``
    on ``support`` (a contiguous range holding all but a negligible mass). Bins with an
    expected count below 5 are pooled into the two tails."""
    n = x.size
    keep = np.flatnonzero(n * probs >= 5)
    lo, hi = int(support[keep[0]]), int(support[keep[-1]])
    p = np.concatenate([[probs[support < lo].sum()], probs[keep[0]:keep[-1] + 1],
                        [max(0.0, 1 - probs[support <= hi].sum())]])
    inside = x[(x >= lo) & (x <= hi)] - lo
    observed = np.concatenate([[np.sum(x < lo)], np.bincount(inside, minlength=hi - lo + 1),
                               [np.sum(x > hi)]]).astype(float)
    expected = n * p
    z = (observed - expected) / np.sqrt(np.maximum(expected * (1 - p), 1e-300))
    pooled = expected >= 5
    chi = (((observed - expected) ** 2 / expected)[pooled]).sum() \
        + (observed[~pooled].sum() - expected[~pooled].sum()) ** 2 / max(
            expected[~pooled].sum(), 1e-300) * (expected[~pooled].sum() > 0)
    dof = int(pooled.sum()) + int(expected[~pooled].sum() > 0) - 1
    return float(stats.chi2.sf(chi, dof)), float(np.abs(z[pooled]).max())


def z_limit(bins: int, alpha: float = 1e-6) -> float:
    """The |z| a bin exceeds with probability alpha / bins (normal approximation,
    Bonferroni over the bins)."""
    return float(stats.norm.isf(alpha / (2 * bins)))

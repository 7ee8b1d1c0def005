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


class NeedWord(Exception):
    """The script ran out: the explorer branches on the next word's ``width`` bits."""

    def __init__(self, width: int):
        super().__init__(width)
        self.width = width


class ScriptedWords:
    """Hands out the words of ``script`` in turn (each already below 2^width)."""

    def __init__(self, script):
        self.script, self.pos = list(script), 0

    def bits(self, n: int, width: int) -> np.ndarray:
        if self.pos + n > len(self.script):
            if n != 1:
                raise AssertionError(f"a batch of {n} words while enumerating")
            raise NeedWord(width)
        out = self.script[self.pos:self.pos + n]
        self.pos += n
        return np.array(out, dtype=np.uint32 if width <= 32 else np.uint64)


def enumerate_paths(sample, min_prob: Fraction) -> tuple[dict[int, Fraction], Fraction]:
    """{outcome: exact probability} over every word sequence of probability >= min_prob
    on which ``sample(words)`` returns, and the probability left unexplored."""
    found: dict[int, Fraction] = {}
    left = Fraction(0)
    stack = [((), Fraction(1))]
    while stack:
        script, prob = stack.pop()
        words = ScriptedWords(script)
        try:
            value = int(sample(words))
        except NeedWord as need:
            branch = prob / (1 << need.width)
            if branch < min_prob:
                left += prob
                continue
            stack.extend((script + (w,), branch) for w in range(1 << need.width))
            continue
        assert words.pos == len(script)
        found[value] = found.get(value, 0) + prob
    return found, left


def _exp(x: Fraction) -> Decimal:
    return (Decimal(x.numerator) / Decimal(x.denominator)).exp()


def laplace_pmf_exact(t: int, s: int, k: int) -> Decimal:
    """P(k) of the discrete Laplace of scale t/s, to 40 digits."""
    getcontext().prec = 40
    q = _exp(Fraction(-s, t))
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
    norm = sum(_exp(Fraction(-j * j * b, 2 * a)) for j in range(-wide, wide + 1))
    return _exp(Fraction(-k * k * b, 2 * a)) / norm


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

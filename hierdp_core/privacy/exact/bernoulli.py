"""Bernoulli(exp(-gamma)) for rational gamma = num / den >= 0, exactly and vectorised.

Canonne, Kamath & Steinke (2020), Algorithm 1. For gamma in [0, 1]: with K = 1, 2, ...
draw A_K ~ Bernoulli(gamma / K) until the first A_K = 0; return 1 if that K is odd.
P(K = k) = gamma^(k-1) / (k-1)! - gamma^k / k!, so P(K odd) = sum_j (-gamma)^j / j! =
exp(-gamma). Bernoulli(gamma / K) is drawn as Bernoulli(num / den) AND Bernoulli(1 / K),
two independent exact draws (`bernoulli_ratio`), so den * K never has to fit anywhere.
For gamma > 1: floor(gamma) independent Bernoulli(exp(-1)) all 1 AND one
Bernoulli(exp(-(gamma - floor(gamma)))), since exp(-gamma) is their product.

Vectorised over shrinking active sets: at step K every element still running has drawn K-1
successes, so the K of all of them is one number; each step draws for the survivors only.
Integers are int64, or object arrays of Python ints when ``den`` does not fit int64 (the
exact scalar path of `uniform_below`).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.privacy.exact.uniform import bernoulli_ratio, select, uniform_below


def _bernoulli_one_over(k: int, size: int, words) -> np.ndarray:
    """Independent Bernoulli(1 / k)."""
    return uniform_below(k, words, size) == 0


def _survivors(active: np.ndarray, go: np.ndarray, out: np.ndarray, k: int) -> np.ndarray:
    """The elements of ``active`` whose A_k = ``go`` is 1; those stopping at an odd ``k``
    output 1 (``out`` is 0 for every element still running)."""
    if k % 2:
        out[select(active, ~go)] = True
    return select(active, go)


def bernoulli_exp_unit(num, den, words, size: int | None = None) -> np.ndarray:
    """Independent Bernoulli(exp(-num_i / den_i)) with 0 <= num <= den (arrays, or a
    scalar ``den`` for all, or scalars with ``size``)."""
    n = size if size is not None else np.size(num)
    num = np.broadcast_to(num, n) if np.ndim(num) == 0 else num
    den_array = np.ndim(den) > 0
    go = bernoulli_ratio(num, den, words, n)  # A_1 (Bernoulli(1 / 1) is 1)
    out = ~go  # K = 1 is odd
    active = np.flatnonzero(go)
    k = 2
    while active.size:
        active = _survivors(active, _bernoulli_one_over(k, active.size, words), out, k)
        go = bernoulli_ratio(num.take(active), den.take(active) if den_array else den, words,
                             active.size)
        active = _survivors(active, go, out, k)
        k += 1
    return out


def bernoulli_exp_minus_one(size: int, words) -> np.ndarray:
    """Independent Bernoulli(exp(-1)): Algorithm 1 with gamma = 1 (A_1 = 1 always)."""
    out = np.zeros(size, dtype=bool)
    active = np.flatnonzero(_bernoulli_one_over(2, size, words))  # K = 2 is even: 0
    k = 3
    while active.size:
        active = _survivors(active, _bernoulli_one_over(k, active.size, words), out, k)
        k += 1
    return out


def bernoulli_exp(num, den, words) -> np.ndarray:
    """Independent Bernoulli(exp(-num_i / den_i)) for num >= 0, den >= 1 (arrays of one
    shape, or a scalar ``den``)."""
    whole, frac = num // den, num % den  # (np.divmod has no object loop)
    out = bernoulli_exp_unit(frac, den, words)
    active = np.flatnonzero(out & (whole > 0))
    left = whole.take(active)
    while active.size:  # each remaining whole unit of gamma: one Bernoulli(exp(-1))
        go = bernoulli_exp_minus_one(active.size, words)
        out[select(active, ~go)] = False
        active, left = select(active, go), select(left, go) - 1
        active, left = select(active, left > 0), select(left, left > 0)
    return out

"""Exact discrete Laplace: P(k) proportional to exp(-|k| s / t), scale t / s (integers).

Canonne, Kamath & Steinke (2020), Algorithm 2, vectorised:
1. U uniform on {0, ..., t-1}; keep U with probability exp(-U / t) (`bernoulli_exp_unit`).
   A kept U has P(U = u) proportional to exp(-u / t) on {0..t-1}.
2. V = the number of Bernoulli(exp(-1)) successes before the first failure:
   P(V = v) = (1 - e^-1) e^-v. Then X = U + t V has P(X = x) proportional to exp(-x / t)
   on all x >= 0 (each x is one (u, v)), a geometric law of ratio exp(-1 / t).
3. Y = floor(X / s) has P(Y = y) proportional to exp(-y s / t) (the sum over the s values
   of X with that quotient factors as exp(-y s / t) times a constant).
4. A fair sign B; the pair (B = 1, Y = 0) is rejected so that 0 is not counted twice;
   Z = (1 - 2B) Y then has P(Z = z) proportional to exp(-|z| s / t).
Rejected candidates are redrawn: kept candidates are independent and have exactly the
conditional law, whatever the batch size. V comes from one pool of Bernoulli(exp(-1))
bits cut at its zeros: the runs of ones are independent geometric variables; a run cut by
the end of the pool is continued by the next pool, never dropped (dropping it would bias V
towards short runs). X = U + t V is int64 while V <= (2^63 - 1 - t) / t (V >= 2^31 has
probability below exp(-2^31)); beyond, it is computed with Python ints.

`discrete_laplace_each` draws element i at its own scale t / s_i (one t for all): steps 1-2
do not involve s, so one pool of X serves every element; element i takes the next X of
the pool, its own quotient floor(X / s_i) and sign, and an element rejected at step 4
takes a fresh X next round. Each element's candidates are independent draws of the same
law, so its first kept candidate has exactly the law above for its s_i; pool values left
over are discarded by position, never by value.
"""

from __future__ import annotations

import math

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.bernoulli import bernoulli_exp_minus_one, bernoulli_exp_unit
from hierdp_core.privacy.exact.uniform import INT64_MAX, first, oversample, select, uniform_below

_P_EXP_MINUS_ONE = math.exp(-1)  # only to size the pools of bits


def geometric_runs(size: int, words) -> np.ndarray:
    """``size`` independent counts of Bernoulli(exp(-1)) successes before a failure."""
    parts, have, carry = [np.zeros(0, dtype=np.int64)], 0, 0
    while have < size:
        pool = bernoulli_exp_minus_one(
            oversample(size - have, 1 - _P_EXP_MINUS_ONE) if size - have > 1 else 1, words)
        zeros = np.flatnonzero(~pool)
        if zeros.size:
            runs = np.diff(zeros, prepend=-1) - 1
            runs[0] += carry
            carry = pool.size - 1 - int(zeros[-1])
            parts.append(runs)
            have += runs.size
        else:
            carry += pool.size
    return np.concatenate(parts)[:size].astype(np.int64, copy=False)


def _quotient(u: np.ndarray, v: np.ndarray, t: int, s) -> np.ndarray:
    """floor((u + t v) / s) without overflow (Python ints for the rare huge v); ``s`` one
    int or one per element."""
    big = v > (INT64_MAX - t) // t
    if not big.any():
        x = u + t * v
        return x if np.ndim(s) == 0 and s == 1 else x // s
    s = np.broadcast_to(s, u.shape)
    y = np.empty(u.size, dtype=object)
    y[~big] = _quotient(u[~big], v[~big], t, s[~big])
    y[big] = [(int(a) + t * int(b)) // int(d)
              for a, b, d in zip(u[big], v[big], s[big], strict=True)]
    if max(y[big]) > INT64_MAX:
        raise MechanismError("discrete Laplace draw beyond the int64 range")
    return y.astype(np.int64)


def _steps_one_two(m: int, t: int, words) -> tuple[np.ndarray, np.ndarray]:
    """Step 1-2 on ``m`` candidates: (U, V) of those kept at step 1."""
    if t == 1:
        u = np.zeros(m, dtype=np.int64)  # U = 0, kept with probability exp(0) = 1
    else:
        u = uniform_below(t, words, m)
        u = select(u, bernoulli_exp_unit(u, t, words))
    return u, geometric_runs(u.size, words)


def _signed(y: np.ndarray, words) -> tuple[np.ndarray, np.ndarray]:
    """Step 4 on the quotients ``y``: the signed values and which are kept."""
    negative = uniform_below(2, words, y.size) == 1
    keep = ~(negative & (y == 0))
    np.negative(y, out=y, where=negative)
    return y, keep


def _candidates(m: int, t: int, s: int, words) -> np.ndarray:
    """Step 1-4 on ``m`` candidates: the values of those not rejected."""
    u, v = _steps_one_two(m, t, words)
    y, keep = _signed(_quotient(u, v, t, s), words)
    return select(y, keep)


def _acceptance(t: int, s: int) -> float:
    """About the fraction of candidates kept (batch sizing only)."""
    step1 = 1.0 if t == 1 else t * -math.expm1(-1 / t)
    zero = -math.expm1(-s / t)  # P(Y = 0)
    return step1 * (1 - zero / 2)


def discrete_laplace(t: int, s: int, size: int, words) -> np.ndarray:
    """``size`` independent draws with P(k) proportional to exp(-|k| s / t) (int64)."""
    if not (t >= 1 and s >= 1):
        raise MechanismError(f"a discrete Laplace scale t/s needs t, s >= 1, got {t}/{s}")
    parts, have, accept = [], 0, _acceptance(t, s)
    while have < size:
        z = _candidates(oversample(size - have, accept), t, s, words)
        parts.append(z)
        have += z.size
    return first(parts, size)


def discrete_laplace_each(t: int, s: np.ndarray, words) -> np.ndarray:
    """One draw per element of ``s`` (int64 >= 1), draw i with P(k) proportional to
    exp(-|k| s_i / t) (int64; see the module: one pool of X for all elements)."""
    s = np.asarray(s, dtype=np.int64)
    if not (t >= 1 and (s >= 1).all()):
        raise MechanismError(f"a discrete Laplace scale t/s needs t, s >= 1, got t = {t}")
    out = np.empty(s.size, dtype=np.int64)
    todo = np.arange(s.size)
    while todo.size:
        u, v = _steps_one_two(oversample(todo.size, _acceptance(t, t)), t, words)
        take = todo[:u.size]
        y, keep = _signed(_quotient(u[:take.size], v[:take.size], t, s.take(take)), words)
        out[select(take, keep)] = select(y, keep)
        todo = np.concatenate([select(take, ~keep), todo[take.size:]])
    return out

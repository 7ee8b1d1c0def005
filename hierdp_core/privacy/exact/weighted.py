"""Exact discrete Laplace on integer answers that are released with public weights.

A weighted answer ``w q(x) + Laplace(b)`` (b = sensitivity / epsilon, the noise of the
weighted query) is released instead as ``w (q(x) + Z)``: the integer answer q(x) plus exact
discrete Laplace Z of scale ``T / s`` with one ``T`` = `WEIGHTED_T` for every answer and
``s = floor(T w epsilon / sensitivity)`` computed in floats and pushed down below their
rounding error, so that ``T / s >= b / w`` exactly (`weighted_denominators`). Multiplying by
the public weight afterwards is post-processing of an integer release: no float is ever
added to a true value.

Privacy is the caller's to state from the ``s`` actually drawn: a neighbour moves each
integer answer q by an integer d_q, and the discrete Laplace of scale T / s has loss
``|d| s / T``, so the loss of the vector is ``sum_q |d_q| s_q / T``, an integer over T
computed exactly (e.g. `hierdp_core.ranges.strategy_measurement`). By construction it is at
most ``epsilon / sensitivity * sum_q |d_q| w_q``, i.e. at most epsilon where the weighted
answers have L1 sensitivity ``sensitivity``.

An answer whose weight is so small that its scale would exceed T (``s = 0``: w epsilon /
sensitivity < 1 / T) is not measured: it is released as 0, as if not asked (fewer
measurements, no privacy cost; its weighted answer would be noise 2^32 times its signal).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.privacy.exact.keystream import secure_words
from hierdp_core.privacy.exact.laplace import discrete_laplace_each

#: the common numerator T of every weighted answer's scale T / s
WEIGHTED_T = 1 << 32
#: s is computed from three float operations (each within 2^-53 relative) and multiplied by
#: this first, so that the float lies below the exact T w epsilon / sensitivity
_BELOW = 1.0 - 2.0**-40


def weighted_denominators(weights: np.ndarray, epsilon: float,
                          sensitivity: float) -> np.ndarray:
    """``s`` (int64) of every weight: the largest integers with ``s / T <= w epsilon /
    sensitivity`` up to a relative 2^-40 (0: not measured). ``epsilon``: the budget share
    of the answers together, ``sensitivity``: the L1 sensitivity of the weighted answers."""
    target = np.asarray(weights, dtype=float) * (WEIGHTED_T * float(epsilon))
    target /= float(sensitivity)
    return np.floor(target * _BELOW).astype(np.int64)


def weighted_draws(s: np.ndarray, words=None) -> np.ndarray:
    """One discrete Laplace draw of scale ``T / s_i`` per element of ``s`` (>= 1), int64,
    from ``words`` (default: this thread's keystream)."""
    return discrete_laplace_each(WEIGHTED_T, s, secure_words() if words is None else words)


def describe(s: np.ndarray) -> str:
    """The rationals sampled, for the ledger: "scale 4294967296/s, s from a to b (m
    distinct)"."""
    kept = s[s > 0]
    if not kept.size:
        return "none measured"
    distinct = np.unique(kept)
    return (f"scale {WEIGHTED_T}/s per answer, s from {int(distinct[0])} to "
            f"{int(distinct[-1])} ({distinct.size} distinct)")

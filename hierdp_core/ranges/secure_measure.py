"""The range mechanisms' measurements on the secure backend that draws exact noise.

Contract: `laplace_measure` gives ``values`` plus the measuring stage's noise. Exploration
(a seeded source) and the OpenDP backend draw exactly as before, the stage's continuous
Laplace (`Noise.apply`: numpy, or OpenDP's float-safe measurement). A secure source on the
hierdp backend (`exact_backend`) draws exact discrete Laplace on the true integer values
instead: scale t/s >= sensitivity / budget (the float rounded up from the exact quotient of
the two, then to the sampler's rational), its loss ``sensitivity * s / t`` computed from that
rational and checked against ``budget`` before anything is drawn (`Geometric.apply`).

Privacy: the discrete Laplace of scale t/s on a query of L1 sensitivity D (integer
neighbours' differences) is ``D s / t``-DP, and ``t / s >= D / budget`` makes it at most
``budget``: the same statement as the stage's Laplace(D / budget), so the plan, the ledger
and the composition of the stages are unchanged. The values measured must be integers (the
range mechanisms measure sums of counts); their release is integer, converted to float.
Weighted answers (DAWA's strategies) are `hierdp_core.ranges.strategy_measurement`'s.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.rational import round_up
from hierdp_core.privacy.samplers import Geometric, Noise, NoiseSource


def exact_backend(source: NoiseSource) -> bool:
    """Whether ``source`` draws secure noise with hierdp's exact sampler."""
    return source.secure and source.backend == "hierdp"


def integer_values(values, what: str = "the measured values") -> np.ndarray:
    """``values`` as int64, refusing any that is not a whole number."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return values.astype(np.int64, copy=False)
    if not (np.isfinite(values).all() and (np.mod(values, 1) == 0).all()):
        raise MechanismError(f"exact integer noise needs integer counts: {what} are not "
                             "whole numbers")
    return values.astype(np.int64)


def exact_scale(sensitivity: float, budget: float) -> float:
    """The smallest float >= sensitivity / budget (exactly, as rationals)."""
    return round_up(Fraction(sensitivity) / Fraction(budget))


def laplace_measure(values, noise: Noise, source: NoiseSource, *, sensitivity: float,
                    budget: float, label: str) -> np.ndarray:
    """``values`` plus the stage's ``noise`` (its scale ``sensitivity / budget``), the loss
    at ``sensitivity`` checked against ``budget``; exact discrete Laplace on the integer
    values on the hierdp secure backend (see the module)."""
    if not exact_backend(source):
        return noise.apply(values, source, sensitivity=sensitivity, budget=budget,
                           label=label)
    exact = Geometric(exact_scale(sensitivity, budget))
    noisy = exact.apply(integer_values(values), source, sensitivity=sensitivity,
                        budget=budget, label=label)
    return noisy.astype(float)

"""Secure noise applied to the true values: which sampler draws, and the privacy loss logged.

Contract (`apply_secure`, the secure half of `hierdp_core.privacy.samplers.Noise.apply`):
- on the hierdp backend, integer noise (geometric = discrete Laplace, discrete Gaussian)
  is the exact sampler's draw added to the true int64 values;
- on the hierdp backend, continuous noise (Laplace, Gaussian) on integer values (counts,
  group-size histograms, trip counts) is drawn as its exact integer counterpart at the
  same scale, discrete Laplace for Laplace and discrete Gaussian for Gaussian (Canonne,
  Kamath & Steinke 2020): for an integer query of L1 sensitivity D, discrete Laplace of
  scale b is (D / b)-DP as Laplace of scale b is, and discrete Gaussian of parameter sigma
  is D^2 / (2 sigma^2)-zCDP for L2 sensitivity D as the Gaussian is; its variance is at
  most the continuous one's, so error figures and intervals made from the ledger's noise
  stay on the safe side. Its output is float64, as continuous noise's is, holding whole
  numbers; the measurement's log names the exact draw;
- otherwise (the OpenDP backend, or continuous noise on values that are not whole
  numbers) OpenDP's measurement, which rounds its inputs onto a lattice and adds lattice
  noise, so no float sum made in numpy reaches the output (Mironov 2012).
With ``sensitivity`` the loss is computed (exactly from the rational sampled, or by
OpenDP's privacy map) and refused above ``budget`` before anything is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.exact import apply_exact, exact_noise
from hierdp_core.privacy.noise_source import SUBSET_DRAWN, NoiseSource, public_cells
from hierdp_core.privacy.opendp_noise import opendp_apply, opendp_privacy_loss

if TYPE_CHECKING:
    from hierdp_core.privacy.samplers import Noise

#: the exact integer noise drawn for continuous noise on integer values (hierdp backend)
EXACT_COUNTERPART = {"laplace": "discrete-laplace", "gaussian": "discrete-gaussian"}
#: the same, as the `samplers.NOISES` whose quantiles describe it (`counterpart_noise`)
COUNTERPART_NOISE = {"laplace": "geometric", "gaussian": "discrete-gaussian"}
#: the scale drawn is the float scale rounded up to the sampler's rational: at most this
#: factor above it (`rational.laplace_rational`: 1 + 2^-16; the Gaussian's finer)
DRAWN_SCALE_SLACK = 1 + 2.0**-16
#: whole numbers beyond this are not turned to int64 (they would not survive the round trip)
_EXACT_FLOAT_LIMIT = 2.0**53


def _whole(values: np.ndarray) -> bool:
    """Whether every value is a whole number that int64 and float64 both hold exactly."""
    if values.dtype.kind in "iub":
        return True
    if values.dtype.kind != "f":
        return False
    finite = np.isfinite(values)
    return bool(finite.all() and np.all(np.abs(values) < _EXACT_FLOAT_LIMIT)
                and np.all(np.mod(values, 1) == 0))


def apply_secure(noise: Noise, values: np.ndarray, source: NoiseSource, *,
                 sensitivity: float | None, budget: float | None, label: str,
                 cells: int | None = None) -> np.ndarray:
    """``values`` plus secure ``noise``, same shape (module doc); ``cells``: the public
    number of cells when ``values`` are a data-dependent subset of them (`Noise.apply`)."""
    whole = _whole(values)
    if noise.integer and not whole:
        raise MechanismError(f"{noise.name} noise needs integer values")
    flat = values.reshape(-1)
    size = flat.size if cells is None else public_cells(cells, flat.size)
    kind = noise._exact_kind if noise.integer else (
        EXACT_COUNTERPART.get(noise.name) if whole else None)
    if kind is not None and source.backend == "hierdp":
        sampled = exact_noise(kind, noise.scale)
        how = {"sampler": "hierdp-exact", "sampled": sampled.parameter}
        if not noise.integer:
            how["drawn_as"] = (f"{kind}: the exact integer counterpart of {noise.name} "
                               "noise at the same scale, on integer values")
        loss = None if sensitivity is None else sampled.privacy_loss(sensitivity)
    else:
        sampled, how = None, {"sampler": "opendp"}
        loss = None if sensitivity is None else opendp_privacy_loss(
            noise._opendp_kind, noise.scale, noise.integer, sensitivity, size)
    if loss is not None and budget is not None and loss > budget * (1 + 1e-9):
        raise BudgetError(f"{label}: the privacy loss is {loss:.6g}, more than "
                          f"its share of the budget {budget:.6g}")
    if sampled is None:
        noisy = opendp_apply(flat, noise._opendp_kind, noise.scale, noise.integer)
    else:
        noisy = apply_exact(flat.astype(np.int64, copy=False), sampled)
        if not noise.integer:  # continuous noise gives floats, as OpenDP's does
            noisy = noisy.astype(np.float64)
    if cells is not None:
        how["drawn_on"] = SUBSET_DRAWN
    source.record(label, noise, size, sensitivity, loss, budget, how)
    return noisy.reshape(values.shape)


def drew_counterparts(randomness: dict | None) -> bool:
    """Whether a release's randomness record shows continuous noise drawn as its exact
    integer counterpart (`apply_secure`'s ``drawn_as``)."""
    return any("drawn_as" in m for m in (randomness or {}).get("measurements", ()))


def counterpart_noise(name: str, scale: float) -> tuple[str, float]:
    """The noise (its `samplers.NOISES` name and a scale at least the one drawn) that
    describes continuous noise ``name`` of ``scale`` drawn as its integer counterpart, for
    intervals and error figures; other noises as they are."""
    if name not in COUNTERPART_NOISE:
        return name, scale
    return COUNTERPART_NOISE[name], scale * DRAWN_SCALE_SLACK

"""The privacy loss of the exact sampler's noise, computed by hierdp from the rational
sampled, against OpenDP's privacy map of the same rational (the reference: the production
path never asks OpenDP, `test_exact_keystream.test_the_hierdp_backend_never_asks_opendp`).

On many scales and sensitivities: our loss is the exact loss of the rational rounded up
(Fractions), never more than the loss asked for (the scale is rounded up, never down), and
equal to OpenDP's map up to OpenDP's float rounding.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.privacy.exact import exact_noise
from hierdp_core.privacy.opendp_noise import opendp_privacy_loss

SCALES = st.one_of(st.sampled_from([1.0, 10 / 3, 7.7, 10.0, 1000.0, 0.3, 1 / 3, 2.5e-3]),
                   st.floats(1e-3, 1e5))
SENSITIVITIES = st.sampled_from([1.0, 2.0, 3.0, 0.5, 2 ** 0.5])
REL = 1e-12  # OpenDP rounds its float arithmetic up: a few ulps


def agrees(ours: float, theirs: float) -> bool:
    return ours == pytest.approx(theirs, rel=REL)


def _opendp_map(noise, sensitivity: float) -> float:
    """OpenDP's privacy map of the measurement of the rational ``noise`` samples."""
    ratio = noise.num / noise.den
    if noise.kind == "discrete-laplace":
        return opendp_privacy_loss("laplace", ratio, True, sensitivity, 1)
    return opendp_privacy_loss("gaussian", ratio ** 0.5, True, sensitivity, 1)


@settings(max_examples=120, deadline=None)
@given(scale=SCALES, sensitivity=SENSITIVITIES)
def test_the_discrete_laplace_loss_is_opendps_map_of_the_rational(scale, sensitivity):
    noise = exact_noise("discrete-laplace", scale)
    ours = noise.privacy_loss(sensitivity)
    exact = Fraction(sensitivity) * noise.den / noise.num  # epsilon = D s / t
    assert exact <= Fraction(ours) <= exact * (1 + Fraction(1, 2**51))
    assert ours <= sensitivity / scale * (1 + 1e-12)
    assert agrees(ours, _opendp_map(noise, sensitivity))


@settings(max_examples=120, deadline=None)
@given(sigma=SCALES, sensitivity=SENSITIVITIES)
def test_the_discrete_gaussian_loss_is_opendps_map_of_the_rational(sigma, sensitivity):
    noise = exact_noise("discrete-gaussian", sigma)
    ours = noise.privacy_loss(sensitivity)
    exact = Fraction(sensitivity) ** 2 * noise.den / (2 * noise.num)  # rho = D^2 / 2 sigma^2
    assert exact <= Fraction(ours) <= exact * (1 + Fraction(1, 2**51))
    assert ours <= sensitivity**2 / (2 * sigma**2) * (1 + 1e-12)
    assert agrees(ours, _opendp_map(noise, sensitivity))


@pytest.mark.parametrize("kind", ["discrete-laplace", "discrete-gaussian"])
def test_a_wrong_loss_is_told_apart_from_opendps_map(kind):
    """The comparison can fail: the loss of the float scale asked for, not of the rational
    sampled (about 1e-9 above it here), disagrees with OpenDP's map of the rational."""
    noise = exact_noise(kind, 7.7)
    asked = 1 / 7.7 if kind == "discrete-laplace" else 1 / (2 * 7.7 ** 2)
    assert agrees(noise.privacy_loss(1.0), _opendp_map(noise, 1.0))
    assert not agrees(asked, _opendp_map(noise, 1.0))

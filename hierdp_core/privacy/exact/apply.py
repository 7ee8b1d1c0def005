"""Exact noise added to true integer values: the rational sampled, its loss, the sum.

Contract: `exact_noise` turns a float scale into the `ExactNoise` that is sampled (the
scale rounded up to a rational, `rational`); `apply_exact` draws it from this thread's
keystream (or a word source given by a test) and adds it to int64 values, refusing an
overflow (`NoiseOverflowError`) rather than wrapping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.gaussian import discrete_gaussian
from hierdp_core.privacy.exact.keystream import secure_words
from hierdp_core.privacy.exact.laplace import discrete_laplace
from hierdp_core.privacy.exact.rational import (
    gaussian_rational,
    gaussian_rho,
    laplace_epsilon,
    laplace_rational,
)

ALGORITHM = "Canonne-Kamath-Steinke 2020 (exact rational), ChaCha20 keystream"


class NoiseOverflowError(MechanismError):
    """A noisy value would leave the int64 range."""


@dataclass(frozen=True)
class ExactNoise:
    """The exact noise sampled: ``kind`` "discrete-laplace" (P(k) ~ exp(-|k| den / num),
    scale num/den) or "discrete-gaussian" (P(k) ~ exp(-k^2 den / (2 num)), variance num/den)."""

    kind: str
    num: int
    den: int

    @property
    def parameter(self) -> str:
        """The sampled rational, e.g. "scale 10/3" or "sigma^2 = 9/4"."""
        what = "scale" if self.kind == "discrete-laplace" else "sigma^2 ="
        return f"{what} {self.num}/{self.den}"

    def privacy_loss(self, sensitivity: float) -> float:
        """epsilon (discrete Laplace, L1 sensitivity) or rho (discrete Gaussian, L2) of
        this exact noise, rounded up."""
        if self.kind == "discrete-laplace":
            return laplace_epsilon(self.num, self.den, sensitivity)
        return gaussian_rho(self.num, self.den, sensitivity)

    def sample(self, size: int, words=None) -> np.ndarray:
        """``size`` independent draws (int64) from ``words`` (default: the keystream)."""
        words = secure_words() if words is None else words
        if self.kind == "discrete-laplace":
            return discrete_laplace(self.num, self.den, size, words)
        return discrete_gaussian(self.num, self.den, size, words)


def exact_noise(kind: str, scale: float) -> ExactNoise:
    """The exact noise sampled for a float ``scale`` (the discrete Laplace's t or the
    discrete Gaussian's sigma), rounded up."""
    if kind == "discrete-laplace":
        return ExactNoise(kind, *laplace_rational(scale))
    if kind == "discrete-gaussian":
        return ExactNoise(kind, *gaussian_rational(scale))
    raise MechanismError(f"no exact sampler for {kind!r}")


def add_checked(values: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``values + noise`` in int64, refusing a sum that overflows."""
    total = values + noise  # wraps on overflow: detected below
    wrapped = ((values ^ total) & (noise ^ total)) < 0
    if wrapped.any():
        raise NoiseOverflowError("a noisy value leaves the int64 range; the true values "
                                 "are too large for integer noise")
    return total


def apply_exact(values: np.ndarray, noise: ExactNoise, words=None) -> np.ndarray:
    """The int64 ``values`` plus independent draws of ``noise``, same shape."""
    values = np.asarray(values, dtype=np.int64)
    draws = noise.sample(values.size, words)
    return add_checked(values.reshape(-1), draws).reshape(values.shape)

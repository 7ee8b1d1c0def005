"""Noise distributions and vectorised samplers.

Each distribution knows its calibration (scale from a sensitivity and a budget), its exact
variance and expected absolute value, and applies itself to an array of values at once
(`Noise.apply`). Randomness comes from a `NoiseSource`: a seeded numpy generator for
reproducible exploration (values + a numpy draw), or a secure source. Secure integer noise
(geometric = discrete Laplace, discrete Gaussian) comes by default from hierdp's exact sampler
(`hierdp_core.privacy.exact`: the scale rounded up to a rational, exact integer noise from a
ChaCha20 keystream added to the true int64 values, the loss computed from that rational);
``backend="opendp"`` uses OpenDP's measurements instead (`hierdp_core.privacy.opendp_noise`).
Secure continuous noise (Laplace, Gaussian) on integer values is drawn by the exact sampler
as its integer counterpart at the same scale (discrete Laplace, discrete Gaussian: the same
privacy loss); on values that are not whole numbers, and on the OpenDP backend, it is
OpenDP's, which rounds float inputs onto its lattice and adds lattice noise, so no float sum
made in numpy can leak through the low-order bits (Mironov 2012)
(`hierdp_core.privacy.secure_apply`).
Every distribution also gives ``abs_quantile(q)``, e.g. the half-width of a 95% interval for
one cell's noise.

Example
-------
>>> src = NoiseSource(seed=1)
>>> noise = DiscreteGaussian.for_zcdp(rho=0.5, l2_sensitivity=1.0)
>>> x = noise.sample(10_000, src)
>>> x.dtype.kind, bool(abs(x.var() - noise.variance) < 0.1)
('i', True)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.noise_source import NoiseSource
from hierdp_core.privacy.numpy_geometric import add_geometric_difference
from hierdp_core.privacy.secure_apply import apply_secure

_TAIL_SDS = 40  # pmf support used for exact moments of discrete distributions
#: beyond this sigma the discrete Gaussian's moments and quantiles are the continuous
#: ones (the pmf's sum over its support, 80 sigma values, would take memory in proportion
#: to sigma): its normaliser and variance are sigma sqrt(2 pi) and sigma^2 to double
#: precision (Poisson summation: the error is of order exp(-2 pi^2 sigma^2)), its mean
#: absolute value sigma sqrt(2/pi) within a relative 1/(12 sigma^2) (Euler-Maclaurin)
_CONTINUOUS_SIGMA = 4096.0
#: the largest noise scale drawn: a million times the noise of the least epsilon a release
#: accepts (`hierdp_core.privacy.budget.EPSILON_RANGE`), room for its split and
#: sensitivities, while draws stay far inside the int64 range of the counts
MAX_NOISE_SCALE = 1e12


#: numpy's `Generator.geometric` draws p at or above this by a search, below it by inversion
#: (`numpy_geometric`: ceil(-E / log1p(-p)) of one standard exponential E each)
_GEOMETRIC_SEARCH = 0.333333333333333333333333


def _normal_cdf(x):
    """The standard normal CDF (scipy.special's ``ndtr``, imported on first use: 0.3-0.4 s
    that a release without Gaussian noise does not pay)."""
    from scipy.special import ndtr

    return ndtr(x)


def _normal_quantile(q):
    """The standard normal quantile (scipy.special's ``ndtri``, imported on first use)."""
    from scipy.special import ndtri

    return ndtri(q)


def _shape(size) -> tuple[int, ...]:
    """The shape numpy gives ``size`` (an int or a tuple of ints)."""
    return np.empty(size, dtype=np.int8).shape


def _check_q(q: float) -> float:
    q = float(q)
    if not 0 <= q < 1:
        raise MechanismError(f"a quantile level must lie in [0, 1), got {q}")
    return q


@dataclass(frozen=True)
class Noise(ABC):
    """A zero-centred noise distribution with a scale parameter."""

    scale: float
    name = "noise"
    integer = False
    _opendp_kind = "laplace"  # OpenDP measurement family used in secure mode
    _exact_kind = None  # hierdp's exact sampler of integer noise (its kind)

    def __post_init__(self):
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise BudgetError(f"noise scale must be positive and finite, got {self.scale}")
        if self.scale > MAX_NOISE_SCALE:
            raise BudgetError(f"a noise scale of {self.scale:.3g} is above the largest drawn, "
                              f"{MAX_NOISE_SCALE:g}: the budget (or its share of the split) "
                              "is too small")

    @property
    @abstractmethod
    def variance(self) -> float: ...

    @property
    @abstractmethod
    def expected_abs(self) -> float:
        """E|X|: the expected absolute error this noise adds to one cell."""

    @abstractmethod
    def abs_quantile(self, q: float) -> float:
        """The smallest a with P(|X| <= a) >= q, for 0 <= q < 1 (an int for integer noise):
        e.g. ``abs_quantile(0.95)`` is the half-width of a 95% interval for one cell's noise."""

    def mass_below(self, a: int) -> float:
        """P(-a <= X <= a - 1) of an integer noise (an asymmetric interval's coverage),
        in memory independent of ``a`` where the distribution has a closed form."""
        return float(self.pmf(np.arange(-a, a)).sum())

    @abstractmethod
    def _sample_numpy(self, size, rng: np.random.Generator) -> np.ndarray: ...

    def _add_numpy(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``values`` plus a numpy draw of their shape (exploration)."""
        noise = np.asarray(self._sample_numpy(values.shape, rng))
        if noise.ndim == 0 or np.result_type(values, noise) != noise.dtype:
            return values + noise
        noise += values  # in place: the same sums, one array fewer
        return noise

    def sample(self, size, source: NoiseSource) -> np.ndarray:
        """An array of ``size`` independent draws, for exploration only: a secure release
        applies the noise to the true values with `apply`, never adds a float sample."""
        if source.secure:
            raise BudgetError("secure noise is applied to the true values (Noise.apply), "
                              "never drawn alone and added")
        return self._sample_numpy(size, source.rng)

    def apply(self, values, source: NoiseSource, *, sensitivity: float | None = None,
              budget: float | None = None, label: str = "measurement",
              cells: int | None = None) -> np.ndarray:
        """``values`` plus independent noise, same shape.

        Exploration: a numpy draw added to the values. Secure (`secure_apply.apply_secure`):
        on the hierdp backend exact integer noise added to the true integer values
        (continuous noise on integer values drawn as its exact integer counterpart at the
        same scale), otherwise OpenDP's measurement. With ``sensitivity`` (L1 for Laplace /
        geometric, L2 for the Gaussians) the privacy loss is logged on the source and must
        not exceed ``budget`` (the measurement's share: epsilon or rho), checked before any
        noise is drawn: on the hierdp backend computed exactly from the rational sampled
        (OpenDP's map of the same rational agrees: a test), on OpenDP's its privacy map.
        ``cells``: the public number of cells measured when ``values`` are a data-dependent
        subset of them (e.g. the non-zero cells): the log and the privacy map use it, never
        how many values there are (that number would be published exactly); None:
        ``values.size``.
        """
        values = np.asarray(values)
        if not source.secure:
            return self._add_numpy(values, source.rng)
        return apply_secure(self, values, source, sensitivity=sensitivity, budget=budget,
                            label=label, cells=cells)

    def describe(self) -> dict:
        return {"distribution": self.name, "scale": self.scale, "variance": self.variance,
                "expected_abs": self.expected_abs}


class _PureDPNoise(Noise):
    @classmethod
    def for_epsilon(cls, epsilon: float, l1_sensitivity: float = 1.0):
        """Calibrated for epsilon-DP of a query with the given L1 sensitivity: scale = D1/eps."""
        if not epsilon > 0:
            raise BudgetError(f"epsilon must be positive, got {epsilon}")
        return cls(l1_sensitivity / epsilon)


class _ZCDPNoise(Noise):
    @classmethod
    def for_zcdp(cls, rho: float, l2_sensitivity: float = 1.0):
        """Calibrated for rho-zCDP of a query with the given L2 sensitivity:
        sigma^2 = D2^2 / (2 rho)."""
        if not rho > 0:
            raise BudgetError(f"rho must be positive, got {rho}")
        return cls(l2_sensitivity / math.sqrt(2 * rho))


@dataclass(frozen=True)
class Laplace(_PureDPNoise):
    """Continuous Laplace with density exp(-|x|/b) / 2b; b = ``scale``."""

    name = "laplace"

    @property
    def variance(self) -> float:
        return 2 * self.scale**2

    @property
    def expected_abs(self) -> float:
        return self.scale

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(X <= x)."""
        z = np.asarray(x, dtype=float) / self.scale
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.abs(z)))

    def abs_quantile(self, q: float) -> float:
        """-b ln(1 - q), since P(|X| <= a) = 1 - exp(-a/b)."""
        return -self.scale * math.log1p(-_check_q(q))

    def _sample_numpy(self, size, rng):
        return rng.laplace(0.0, self.scale, size)


@dataclass(frozen=True)
class Geometric(_PureDPNoise):
    """Two-sided geometric (discrete Laplace): P(k) proportional to exp(-|k|/t), t = ``scale``.

    Exact: sampled as the difference of two i.i.d. geometric variables."""

    name = "geometric"
    _exact_kind = "discrete-laplace"
    integer = True

    @property
    def _alpha(self) -> float:
        return math.exp(-1.0 / self.scale)

    @property
    def _one_minus_alpha(self) -> float:
        """1 - alpha without cancellation (alpha nears 1 at large scales)."""
        return -math.expm1(-1.0 / self.scale)

    @property
    def variance(self) -> float:
        return 2 * self._alpha / self._one_minus_alpha ** 2

    @property
    def expected_abs(self) -> float:
        a = self._alpha
        return 2 * a / (self._one_minus_alpha * (1 + a))

    def pmf(self, k: np.ndarray) -> np.ndarray:
        a = self._alpha
        return self._one_minus_alpha / (1 + a) * a ** np.abs(np.asarray(k))

    def _abs_tail(self, k: int) -> float:
        """P(|X| > k) = 2 alpha^(k+1) / (1 + alpha), the pmf summed in closed form."""
        return 2 * math.exp(-(k + 1) / self.scale) / (1 + self._alpha)

    def mass_below(self, a: int) -> float:
        """P(|X| <= a) - P(X = a), in closed form."""
        return 1.0 - self._abs_tail(a) - float(self.pmf(a))

    def abs_quantile(self, q: float) -> int:
        alpha_tail = 1 - _check_q(q)
        guess = self.scale * math.log(2 / ((1 + self._alpha) * alpha_tail)) - 1
        k = max(0, math.ceil(guess))
        while k > 0 and self._abs_tail(k - 1) <= alpha_tail:  # correct the rounding of guess
            k -= 1
        while self._abs_tail(k) > alpha_tail:
            k += 1
        return k

    def _sample_numpy(self, size, rng):
        p = self._one_minus_alpha
        if p < _GEOMETRIC_SEARCH:  # numpy's inversion, in blocks: the same numbers
            return add_geometric_difference(np.zeros(size, dtype=np.int8), p, rng)
        first, second = rng.geometric(p, (2, *_shape(size)))  # two draws of size, in turn
        return np.subtract(first, second, dtype=np.int64)

    def _add_numpy(self, values, rng):
        """The values plus the draw in one pass of blocks (`numpy_geometric`) where the
        values add to int64 as int64 and numpy would invert: the same sums."""
        if (self._one_minus_alpha < _GEOMETRIC_SEARCH and values.ndim
                and np.result_type(values.dtype, np.int64) == np.int64):
            return add_geometric_difference(values, self._one_minus_alpha, rng)
        return super()._add_numpy(values, rng)


@dataclass(frozen=True)
class Gaussian(_ZCDPNoise):
    """Continuous Gaussian with standard deviation ``scale``."""

    name = "gaussian"
    _opendp_kind = "gaussian"

    @property
    def variance(self) -> float:
        return self.scale**2

    @property
    def expected_abs(self) -> float:
        return self.scale * math.sqrt(2 / math.pi)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(X <= x)."""
        return _normal_cdf(np.asarray(x, dtype=float) / self.scale)

    def abs_quantile(self, q: float) -> float:
        """sigma * Phi^-1((1 + q) / 2), computed from the upper tail (1 - q) / 2."""
        return max(0.0, -self.scale * float(_normal_quantile((1 - _check_q(q)) / 2)))

    def _sample_numpy(self, size, rng):
        return rng.normal(0.0, self.scale, size)


@dataclass(frozen=True)
class DiscreteGaussian(_ZCDPNoise):
    """Discrete Gaussian: P(k) proportional to exp(-k^2 / 2 sigma^2), sigma = ``scale``.

    Exact rejection sampler of Canonne, Kamath & Steinke (2020), vectorised: propose from a
    discrete Laplace with t = floor(sigma) + 1, accept with probability
    exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)).
    """

    name = "discrete-gaussian"
    _exact_kind = "discrete-gaussian"
    integer = True
    _opendp_kind = "gaussian"

    def _support(self) -> np.ndarray:
        r = int(math.ceil(_TAIL_SDS * self.scale)) + 1
        return np.arange(-r, r + 1)

    def pmf(self, k: np.ndarray) -> np.ndarray:
        if self.scale > _CONTINUOUS_SIGMA:
            norm = self.scale * math.sqrt(2 * math.pi)
        else:
            support = self._support()
            norm = np.exp(-(support.astype(float) ** 2) / (2 * self.scale**2)).sum()
        k = np.asarray(k)
        return np.exp(-(k.astype(float) ** 2) / (2 * self.scale**2)) / norm

    @property
    def variance(self) -> float:
        if self.scale > _CONTINUOUS_SIGMA:
            return self.scale**2
        s = self._support()
        return float(np.sum(self.pmf(s) * s.astype(float) ** 2))

    @property
    def expected_abs(self) -> float:
        if self.scale > _CONTINUOUS_SIGMA:
            return self.scale * math.sqrt(2 / math.pi)
        s = self._support()
        return float(np.sum(self.pmf(s) * np.abs(s)))

    def mass_below(self, a: int) -> float:
        """P(-a <= X <= a - 1); beyond `_CONTINUOUS_SIGMA` from the continuous tail (see
        `abs_quantile`)."""
        if self.scale <= _CONTINUOUS_SIGMA:
            return super().mass_below(a)
        return float(1.0 - 2 * _normal_cdf(-(a + 0.5) / self.scale) - self.pmf(a))

    def abs_quantile(self, q: float) -> int:
        """The least k >= 0 with P(|X| > k) <= 1 - q (beyond `_CONTINUOUS_SIGMA`: from the
        continuous tail with a continuity correction, P(|X| > k) ~ 2 (1 - Phi((k + 1/2) /
        sigma)), within one unit)."""
        alpha_tail = 1 - _check_q(q)
        if self.scale > _CONTINUOUS_SIGMA:
            return max(0, math.ceil(-self.scale * float(_normal_quantile(alpha_tail / 2)) - 0.5))
        s = self._support()
        p = self.pmf(s[s >= 0])
        at_least = np.cumsum(p[::-1])[::-1]  # P(X >= k) for k = 0, 1, ...
        tail = 2 * np.append(at_least[1:], 0.0)  # P(|X| > k), summed tail-first (accurate)
        return int(np.argmax(tail <= alpha_tail))

    def _sample_numpy(self, size, rng):
        shape = _shape(size)
        n = math.prod(shape)
        sigma2 = self.scale**2
        t = math.floor(self.scale) + 1
        proposal = Geometric(float(t))
        out = np.empty(n, dtype=np.int64)
        todo = np.arange(n)
        while todo.size:
            y = proposal._sample_numpy(todo.size, rng)
            accept_p = np.exp(-((np.abs(y) - sigma2 / t) ** 2) / (2 * sigma2))
            ok = rng.random(todo.size) < accept_p
            out[todo[ok]] = y[ok]
            todo = todo[~ok]
        return out.reshape(shape)


NOISES = {cls.name: cls for cls in (Laplace, Geometric, Gaussian, DiscreteGaussian)}

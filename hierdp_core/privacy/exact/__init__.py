"""Exact, vectorised, securely keyed integer noise: hierdp's secure sampler.

Why: ``true + float_sample`` leaks the true value through the low-order bits of the float
sum (Mironov 2012, "On significance of the least significant bits for differential
privacy"), and a sampler whose probabilities are floats is only approximately the
distribution the privacy proof is about. Here every step is exact integer arithmetic:

- randomness (`keystream`): a ChaCha20 keystream keyed from ``os.urandom``, one per thread
  and process, re-keyed in a forked child, never seedable;
- uniform integers (`uniform`): mask-and-reject, each value exactly 1/n, never a modulo;
- Bernoulli(num/den) as ``uniform_below(den) < num``; Bernoulli(exp(-gamma)) for rational
  gamma by Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential
  Privacy", Algorithm 1 (`bernoulli`);
- discrete Laplace of rational scale t/s, their Algorithm 2 (`laplace`), also with one
  scale t/s_i per element (`laplace.discrete_laplace_each`, for answers released with
  public weights: `weighted`);
- discrete Gaussian of rational variance a/b, their Algorithm 3 (`gaussian`);
- the rational actually sampled is the float scale rounded up, and the privacy loss is
  computed from it exactly (`rational`);
- the noise is added to the true int64 values with overflow checked (`apply_exact`).
Each module's docstring gives the argument for its step. Everything runs over whole arrays
with shrinking active sets; the only loops per element are the exact Python-int paths for
values beyond int64, which the samplers take only when a check says they must.
"""

from hierdp_core.privacy.exact.apply import ExactNoise, add_checked, apply_exact, exact_noise

__all__ = ["ExactNoise", "add_checked", "apply_exact", "exact_noise"]

"""Floating-point audit of the secure paths with continuous noise (Mironov 2012).

Adding a float noise sample to the true counts in numpy leaks through the low-order bits: when
the true count is 1, a released y = 1 + z with 0.25 <= |y| < 0.5 is always a multiple of
2^-53 (the sum is rounded at the precision of 1), while for a true count of 0 about half of
them are not. The event "0.25 <= |y| < 0.5 and y is not a multiple of 2^-53" (a value of
the issue's event |y| < 0.5, restricted to one binade so that its rate does not depend on
the shape of the noise density) must fire at the same rate on all-zero and all-one data:
about 1/2 of the raw values in the binade, as OpenDP rounds its exact lattice sum to float
(post-processed values such as least squares have their own rate, the same on both).

What is audited is what OpenDP outputs: the measurements. Everything after them (least
squares, tree inference, Privelet's inverse transform, TopDown) is arithmetic on those
measurements alone, so it cannot leak what they do not; its own low bits depend on the
magnitudes in the whole table (all-zero and all-one tables differ by 20,000 people, far from
neighbours), so the event is not compared on post-processed values.

Secure noise comes from OS entropy and cannot be seeded: each comparison is a two-proportion
z-test with |z| < 4.5 (a false alarm about once in 150,000 runs). Under the sabotage
(``true + float sample``, checked below on the exploration path) the all-one rate is 0 and
z is about 30.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from release_inputs import UNIT_MEASUREMENT

from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import Gaussian, Laplace, NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.ranges import baselines

CELLS = 20_000
Z_LIMIT = 4.5


def opendp_source() -> NoiseSource:
    """The secure backend whose continuous noise stays continuous (on hierdp's, continuous
    noise on integer values is exact integer noise: `test_hierdp_draws_whole_numbers` below,
    `test_ranges_secure_exact`)."""
    return NoiseSource(secure=True, backend="opendp")


def low_bit_event(values: np.ndarray) -> tuple[int, int]:
    """(how many values in 0.25 <= |y| < 0.5 are not multiples of 2^-53, how many lie there)."""
    y = np.asarray(values, dtype=float).ravel()
    band = (np.abs(y) >= 0.25) & (np.abs(y) < 0.5)
    return int(np.count_nonzero(np.mod(y[band], 2.0**-53) != 0)), int(band.sum())


def z_score(a: tuple[int, int], b: tuple[int, int]) -> float:
    (k1, n1), (k2, n2) = a, b
    assert n1 > 200 and n2 > 200, "too few values in the binade to compare"
    p = (k1 + k2) / (n1 + n2)
    se = np.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    return abs(k1 / n1 - k2 / n2) / se if se > 0 else (0.0 if k1 / n1 == k2 / n2 else np.inf)


def counts_measurements(name: str, fill: int, backend: str = "opendp", **params) -> np.ndarray:
    """The county-level measurements (OpenDP's outputs) of a secure count release."""
    table = pd.DataFrame({"state": np.repeat(["A", "B"], CELLS // 2),
                          "county": [f"c{i:05d}" for i in range(CELLS)], "n": fill})
    data = count_data_from_table(table, ["state", "county"], count_column="n")
    budget = (PrivacyBudget.zcdp(0.5) if params.get("noise") == "gaussian"
              else PrivacyBudget.pure(1.0))
    release = get_mechanism(name).release(
        data, budget, source=NoiseSource(secure=True, backend=backend), **params)
    return release.noisy[data.hierarchy.level_slice(2)]


def tree_measurements(fill: int) -> np.ndarray:
    """The leaf measurements of H2's binary tree over 4 histograms (secure)."""
    rows = np.full((4, CELLS // 4), fill)
    tree = baselines.b_ary_tree(rows.shape[1], 2)
    epsilons = np.full(tree.n_levels, 1.0 / tree.n_levels)
    noisy, _ = baselines.measure_tree(tree, rows, epsilons, opendp_source(), stage=UNIT_MEASUREMENT)
    return noisy[tree.level_slice(tree.depth)]


PATHS = {
    "laplace.apply": lambda fill: Laplace(1.0).apply(np.full(CELLS, fill), opendp_source()),
    "gaussian.apply": lambda fill: Gaussian(1.0).apply(np.full(CELLS, fill), opendp_source()),
    "raw-laplace": lambda fill: counts_measurements("raw-laplace", fill),
    "least-squares-laplace": lambda fill: counts_measurements("least-squares", fill,
                                                              noise="laplace"),
    "least-squares-gaussian": lambda fill: counts_measurements("least-squares", fill,
                                                               noise="gaussian"),
    "ranges-identity": lambda fill: baselines.identity_estimate(
        np.full((4, CELLS // 4), fill), 1.0, opendp_source(), stage=UNIT_MEASUREMENT),
    "ranges-h2-tree": tree_measurements,
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_low_bit_event_fires_alike_on_zeros_and_ones(path):
    zeros, ones = low_bit_event(PATHS[path](0)), low_bit_event(PATHS[path](1))
    assert z_score(zeros, ones) < Z_LIMIT, (zeros, ones)


@pytest.mark.parametrize(("name", "params"), [("raw-laplace", {}),
                                              ("least-squares", {"noise": "laplace"}),
                                              ("least-squares", {"noise": "gaussian"})])
def test_hierdp_draws_whole_numbers(name, params):
    """On the default backend continuous noise on counts is exact integer noise
    (`hierdp_core.privacy.secure_apply`): no float sum to leak through."""
    measured = counts_measurements(name, 1, backend="hierdp", **params)
    assert np.array_equal(measured, np.rint(measured)) and np.unique(measured).size > 10


def test_the_audit_catches_float_addition():
    """The sabotage the audit exists for: true + float sample (the exploration path)."""
    source = NoiseSource(seed=1)
    zeros = low_bit_event(Laplace(1.0).apply(np.zeros(CELLS), source))
    ones = low_bit_event(Laplace(1.0).apply(np.ones(CELLS), source))
    assert ones[0] == 0 and zeros[0] > 0
    assert z_score(zeros, ones) > Z_LIMIT

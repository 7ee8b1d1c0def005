"""Secure noise: OpenDP's measurements applied to the true values.

Contract: in secure mode the noisy values come out of OpenDP (`opendp_apply`), which takes
the true values, rounds float inputs onto its lattice and adds lattice noise from OS
entropy; a numpy float is never added to a true value, so no low-order bits can leak
(Mironov 2012). `opendp_privacy_loss` reports OpenDP's own privacy map of the same
measurement (epsilon for Laplace, rho for Gaussian).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hierdp_core.errors import BudgetError

_CHUNK_SIZE = 1 << 16  # draws per OpenDP call; chunks run on parallel threads
_FLOAT_GRANULARITY_BITS = 64  # float noise lies on a grid of 2^-64 * scale (see _measurement)


def _opendp():
    """OpenDP's domains, metrics and measurements modules, "contrib" enabled (not
    ``opendp.prelude``, which also imports OpenDP's numpy and scikit-learn extras)."""
    try:
        from opendp import domains, measurements, metrics, mod
    except ImportError as exc:  # pragma: no cover - opendp is a declared dependency
        raise BudgetError("secure mode needs the 'opendp' package (pip install opendp)") from exc
    mod.enable_features("contrib")
    return domains, metrics, measurements


def _measurement(kind: str, scale: float, integer: bool, size: int):
    """OpenDP's Laplace (``kind`` "laplace", max-divergence) or Gaussian ("gaussian", zCDP)
    measurement over int64 or float64 vectors of ``size`` entries. Floats use the lattice
    2^k with k = floor(log2 scale) - 64: finer than float64 resolution at the noise scale,
    and about 3x faster than OpenDP's default (k = -1074, big-integer arithmetic)."""
    domains, metrics, measurements = _opendp()
    if integer:
        t, atom, k = "i64", domains.atom_domain(T="i64"), None
    else:
        t, atom = "f64", domains.atom_domain(T="f64", nan=False)
        k = math.floor(math.log2(scale)) - _FLOAT_GRANULARITY_BITS
    domain = domains.vector_domain(atom, size=size)
    if kind == "laplace":
        return measurements.make_laplace(domain, metrics.l1_distance(T=t), scale, k=k)
    return measurements.make_gaussian(domain, metrics.l2_distance(T=t), scale, k=k)


def _measure_chunk(values: np.ndarray, kind: str, scale: float, integer: bool) -> np.ndarray:
    meas = _measurement(kind, scale, integer, len(values))
    return np.asarray(meas(values), dtype=np.int64 if integer else float)


def opendp_apply(values: np.ndarray, kind: str, scale: float, integer: bool) -> np.ndarray:
    """OpenDP's measurement applied to the true ``values`` (a flat array): the noisy values
    come out of OpenDP, which rounds float inputs onto its lattice before adding lattice
    noise, so no float sum in numpy can leak low-order bits (Mironov 2012). The array is cut
    into chunks measured on parallel threads (OpenDP releases the GIL); every chunk is the
    same measurement on a disjoint part of the vector, so the privacy map of the whole is
    that of one measurement over all of it (`opendp_privacy_loss`)."""
    # contiguous and writeable (copied if need be: OpenDP's ctypes input refuses read-only
    # arrays such as the cached truth of `GroupSizeData.node_counts`)
    values = np.require(values, dtype=np.int64 if integer else float, requirements=["C", "W"])
    if values.size == 0:
        return values.copy()
    chunks = [values[i:i + _CHUNK_SIZE] for i in range(0, values.size, _CHUNK_SIZE)]
    if len(chunks) == 1:
        return _measure_chunk(values, kind, scale, integer)
    workers = min(len(chunks), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(lambda c: _measure_chunk(c, kind, scale, integer), chunks))
    return np.concatenate(parts)


def opendp_privacy_loss(kind: str, scale: float, integer: bool, sensitivity: float,
                        size: int) -> float:
    """The privacy loss OpenDP's own privacy map reports for its measurement on vectors of
    ``size`` entries whose neighbours differ by ``sensitivity`` (L1 for Laplace: epsilon;
    L2 for Gaussian: rho). An integer measurement with a fractional sensitivity is mapped
    through the float measurement of the same scale, whose bound covers the integer one."""
    integral = float(sensitivity).is_integer()
    meas = _measurement(kind, scale, integer and integral, max(int(size), 1))
    d_in = int(sensitivity) if integer and integral else float(sensitivity)
    return float(meas.map(d_in))

"""The two-sided geometric noise of exploration (seeded numpy), drawn by inversion in blocks
that stay in the processor's cache: `Geometric`'s numpy draws below numpy's search
threshold (`hierdp_core.privacy.samplers`), for exploration only (a secure release draws
from the exact sampler).

A draw is G1 - G2 of two geometric variables on {1, 2, ...}, each ``ceil(E / -log1p(-p))``
of a standard exponential E (numpy's ``Generator.geometric`` by inversion, to the last bit);
every cell's G1 is drawn first, in order, then every cell's G2, as one draw of shape
``(2, *shape)`` would. The stream is read in blocks of `BLOCK` exponentials (numpy fills an
array one exponential after another, so blocks give the same numbers as one call), each
block turned into integers and added to its cells at once: a level of 3,141 regions x 1,000
sizes reads and writes its 25 MB once per half, where whole arrays of exponentials (50 MB of
float64 each half) went through memory five times.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import MechanismError

BLOCK = 1 << 15  # exponentials per block: 256 KB of float64, plus as many int64
SMALL = 1 << 12  # at most this many cells: both halves drawn at once (a sweep's small levels)
INT64_BEYOND = 9.223372036854776e18  # the first double above the int64 range


def add_geometric_difference(values, p: float, rng: np.random.Generator) -> np.ndarray:
    """``values`` (integers) plus G1 - G2 per cell, as a new int64 array of
    their shape: bit for bit the integer sum, wrapping as int64 arithmetic wraps, of
    ``values`` and ``first - second`` of ``rng`` inverted ``(2, *shape)`` exponentials
    (module doc). ``values`` must be of a dtype that adds to int64 as int64."""
    values = np.asarray(values)
    if values.size <= SMALL:  # one draw of both halves: fewer calls, the same numbers
        rate = -np.log1p(-p)
        g = _geometric(rng, rate, np.empty((2, *values.shape)),
                       np.empty((2, *values.shape), dtype=np.int64))
        out = np.add(values, g[0], dtype=np.int64)
        return np.subtract(out, g[1], out=out)
    out = np.empty(values.shape, dtype=np.int64)
    flat = out.reshape(-1)
    given = values.reshape(-1) if values.flags.c_contiguous else None
    if given is None:
        np.copyto(out, values, casting="safe")
    rate = -np.log1p(-p)
    z = np.empty(min(BLOCK, flat.size))
    draws = np.empty(z.size, dtype=np.int64)
    for half in ("first", "second"):
        for i in range(0, flat.size, BLOCK):
            j = min(i + BLOCK, flat.size)
            g = _geometric(rng, rate, z[:j - i], draws[:j - i])
            if half == "second":
                np.subtract(flat[i:j], g, out=flat[i:j])
            elif given is not None:
                np.add(given[i:j], g, out=flat[i:j])
            else:
                flat[i:j] += g
    return out


def _geometric(rng: np.random.Generator, rate, z: np.ndarray,
               out: np.ndarray) -> np.ndarray:
    """``z.size`` geometric draws into ``out`` (int64): ``ceil(E / rate)`` of the next
    standard exponentials of ``rng`` (into ``z``). `samplers.MAX_NOISE_SCALE` keeps them far inside
    int64 (an exponential below 50 times a scale of at most 1e12); a draw beyond is refused,
    never wrapped."""
    rng.standard_exponential(out=z)
    z /= rate  # E / -log1p(-p): numpy's own expression, to the last bit
    if z.size and z.max() >= INT64_BEYOND:
        raise MechanismError("a geometric draw beyond the int64 range")
    return np.ceil(z, out=out, casting="unsafe")

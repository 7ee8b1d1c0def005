"""Where the randomness of noise comes from (`NoiseSource`): a seeded numpy generator for
reproducible exploration, or a secure source that draws with hierdp's exact sampler or
OpenDP's measurements and logs every measurement with its privacy loss. The distributions
that draw from it are in `hierdp_core.privacy.samplers`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.apply import ALGORITHM as EXACT_ALGORITHM

if TYPE_CHECKING:
    from hierdp_core.privacy.samplers import Noise

BACKENDS = ("hierdp", "opendp")  # secure noise: hierdp's exact sampler, or OpenDP's
#: the samplers a secure measurement's log names, and how each draws
ALGORITHMS = {"hierdp-exact": EXACT_ALGORITHM, "opendp": "OpenDP measurements"}
#: a measurement's log when its noise was drawn on a data-dependent subset of its ``cells``
SUBSET_DRAWN = "the data's non-zero cells among them only; how many is not published"


def public_cells(cells: int, drawn: int) -> int:
    """``cells``, the public number of cells of a measurement whose noise was drawn on
    ``drawn`` of them (a data-dependent subset), checked to cover them."""
    if drawn > cells:
        raise MechanismError(f"{drawn} values measured, more than the {cells} public cells")
    return int(cells)


class NoiseSource:
    """Where randomness comes from.

    ``NoiseSource(seed=s)`` (or no seed): numpy's PCG64, reproducible, for exploration;
    ``NoiseSource(generator=g)`` draws from the numpy generator ``g``.
    ``NoiseSource(secure=True)``: noise for releases applied to the true values, from
    hierdp's exact sampler (``backend="hierdp"``, the default) or OpenDP's measurements
    (``backend="opendp"``). A secure source keeps the log of its measurements, each with its
    privacy loss (`measurements`): computed from the exact rational sampled (hierdp), or
    OpenDP's privacy map (opendp, and continuous noise on either backend).
    """

    def __init__(self, seed: int | None = None, secure: bool = False,
                 generator: np.random.Generator | None = None, backend: str = "hierdp"):
        if secure and (seed is not None or generator is not None):
            raise ValueError("a secure source cannot be seeded")
        if backend not in BACKENDS:
            raise ValueError(f"unknown noise backend {backend!r}; choose from {BACKENDS}")
        self.seed = seed
        self.secure = secure
        self.backend = backend
        self.rng = generator if generator is not None else np.random.default_rng(seed)
        self._log: dict[tuple, dict] = {}

    def describe(self) -> str:
        if self.secure:
            return ("os-entropy (opendp measurements)" if self.backend == "opendp"
                    else "os-entropy (hierdp exact sampler, ChaCha20)")
        return f"seed {self.seed}" if self.seed is not None else "unseeded numpy PCG64"

    def as_dict(self) -> dict:
        """How the noise was made, for the manifest; a secure source lists its measurements
        with the privacy loss of each (a seed is listed only for exploration)."""
        if self.secure:
            measurements = self.measurements
            return {"mode": "secure", "source": "os-entropy", "backend": self.backend,
                    **samplers_that_drew(measurements), "measurements": measurements}
        return {"mode": "exploration", "source": "numpy-pcg64", "seed": self.seed}

    def record(self, label: str, noise: Noise, cells: int, sensitivity: float | None,
               loss: float | None, budget: float | None, how: dict) -> None:
        """Log one measurement; measurements of the same label, noise and sensitivity
        (e.g. batches of one level) are one entry with their cells added up. ``loss`` is
        the privacy loss of the noise drawn (hierdp backend: computed from the rational
        sampled; OpenDP's: its privacy map), ``how`` the ``sampler`` (and the rational
        ``sampled``)."""
        key = (label, noise.name, noise.scale, sensitivity, budget)
        entry = self._log.get(key)
        if entry is None:
            self._log[key] = {
                "measurement": label, "noise": noise.name, "scale": noise.scale,
                "cells": int(cells), "sensitivity": sensitivity,
                "privacy_measure": "rho (zCDP)" if noise._opendp_kind == "gaussian"
                else "epsilon",
                "privacy_loss": loss, "budget_share": budget, **how}
            if sensitivity is None:  # e.g. DAWA's Stage-1 scores and bucket costs
                self._log[key]["privacy_argument"] = (
                    "the mechanism's analysis of its stage (noisy scores or costs for a "
                    "selection), not one privacy map")
        else:
            entry["cells"] += int(cells)
            if loss is not None:
                entry["privacy_loss"] = max(entry["privacy_loss"], loss)

    @property
    def measurements(self) -> list[dict]:
        """Every secure measurement made so far (secure sources only)."""
        return [dict(e) for e in self._log.values()]


def samplers_that_drew(measurements: list[dict]) -> dict:
    """``sampler`` and ``algorithm`` of a secure source, read from its ``measurements``:
    every sampler that drew one, in order (the backend chosen draws continuous noise through
    OpenDP); when several did, each names its noise and measurements, e.g. ``hierdp-exact
    (geometric for ranges: DAWA bucket counts) and opendp (laplace for ranges: DAWA Stage 1
    scores)``. No measurement: ``none``."""
    drew: dict[str, dict[str, list[str]]] = {}
    for m in measurements:
        drew.setdefault(m["sampler"], {}).setdefault(m["noise"], []).append(m["measurement"])
    if not drew:
        return {"sampler": "none", "algorithm": "no noise was drawn"}
    if len(drew) == 1:
        (name,) = drew
        return {"sampler": name, "algorithm": ALGORITHMS[name]}
    what = {name: "; ".join(f"{noise} for {', '.join(dict.fromkeys(labels))}"
                            for noise, labels in noises.items())
            for name, noises in drew.items()}
    return {"sampler": " and ".join(f"{name} ({what[name]})" for name in drew),
            "algorithm": "; ".join(f"{name}: {ALGORITHMS[name]}" for name in drew)}

"""Many seeded releases made as one batched run, bit for bit the releases one by one (the
audit's trials, the bootstrap's re-runs).

Contract. A mechanism whose draws do not depend on the data nor on the noise (how many
Laplace draws, at which scales, in which order) records them once, with one release
(`record_calls`: a stand-in generator noting every call's scale and shape, drawing zeros).
`TrialDraws` then draws every trial's noise as its release would, from its own source in
turn: each run of consecutive trials with the same source in one call
``rng.laplace(0, scales, (trials, D))``, which draws one value at a time in the order the
releases one after the other draw them (numpy's Laplace: one uniform per value, a zero
rejected and redrawn in place, at that value's scale), so the same numbers and the source's
stream left where the releases leave it. It serves them, as a stand-in generator, to one
run of the mechanism over the trials' rows, call by call in the recorded order: a call of
shape ``(T * a, ...)`` (trials first, as rows) takes trial 0's draws of that call, then
trial 1's, ...; a call of shape ``(..., T * b)`` (trials in the last axis, e.g. histograms
held as columns) each trial's draws as its block of ``b`` columns. Any other call (another
scale, shape or distribution) is an error, never a silent mix-up.
"""

from __future__ import annotations

import math
from itertools import groupby

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.noise_source import NoiseSource


def _size(size) -> tuple[int, ...]:
    return () if size is None else tuple(np.atleast_1d(size).astype(int).tolist())


def _check_loc(loc) -> None:
    if loc != 0.0:
        raise MechanismError("batched trials replay centred Laplace draws only")


class CallRecorder:
    """A stand-in numpy generator for one release: notes the scale and shape of every
    Laplace call (``calls``) and draws zeros."""

    def __init__(self):
        self.calls: list[tuple[float, tuple[int, ...]]] = []

    def laplace(self, loc=0.0, scale=1.0, size=None) -> np.ndarray:
        _check_loc(loc)
        shape = _size(size)
        self.calls.append((float(scale), shape))
        return np.zeros(shape)


def record_calls(release) -> list[tuple[float, tuple[int, ...]]]:
    """The Laplace calls (scale, shape) of ``release(source)``, in order, from one run on a
    recording source."""
    recorder = CallRecorder()
    release(NoiseSource(generator=recorder))
    return recorder.calls


class TrialDraws:
    """A stand-in numpy generator serving the noise of ``len(sources)`` trials to one
    batched run (module docstring); ``calls``: one release's, from `record_calls`.
    `finish` checks that the run asked for every call."""

    def __init__(self, calls: list[tuple[float, tuple[int, ...]]], sources: list[NoiseSource]):
        if any(s.secure for s in sources):
            raise MechanismError("secure noise is drawn release by release, never replayed")
        self.calls, self.trials = calls, len(sources)
        sizes = [math.prod(shape) for _, shape in calls]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        scales = np.repeat([scale for scale, _ in calls], sizes)
        blocks = []
        for _, run in groupby(sources, key=id):  # consecutive trials from one source
            run = list(run)
            blocks.append(run[0].rng.laplace(0.0, scales, (len(run), scales.size)))
        self.block = np.concatenate(blocks) if blocks else np.empty((0, scales.size))
        self.done = 0

    def laplace(self, loc=0.0, scale=1.0, size=None) -> np.ndarray:
        _check_loc(loc)
        if self.done == len(self.calls):
            raise MechanismError("the batched run draws more than one release does")
        (want, one), shape = self.calls[self.done], _size(size)
        if float(scale) != want:
            raise MechanismError(f"call {self.done}: scale {scale!r}, one release drew "
                                 f"{want!r}")
        draws = self.block[:, self.offsets[self.done]:self.offsets[self.done + 1]]
        self.done += 1
        t = self.trials
        if one and shape == (t * one[0], *one[1:]):
            return draws.reshape(shape)
        if one and shape == (*one[:-1], t * one[-1]):
            return np.moveaxis(draws.reshape(t, *one), 0, -2).reshape(shape)
        raise MechanismError(f"a call of shape {shape} cannot hold {t} trials of {one}")

    def finish(self) -> None:
        if self.done != len(self.calls):
            raise MechanismError(f"the batched run drew {self.done} of the "
                                 f"{len(self.calls)} calls of one release")

"""`intervals.symmetric.pooled_trim`: TopDown's integer step, pooled over a level's cells of
one category and one half-width and randomised so that they hold the level on average."""

from __future__ import annotations

import numpy as np
import pytest

from hierdp_core.intervals.symmetric import RANDOMISED_STEP, pooled_trim


def _trim(held: int, inside: int, uniform: float, a: int = 1, draws: int = 99, cells: int = 1):
    shape = (cells, 1)
    return pooled_trim(np.full(shape, a), np.full(shape, inside), np.full(shape, held), draws,
                       0.9, np.full(shape, uniform))


def test_the_narrower_interval_is_taken_when_it_holds_the_level():
    assert _trim(held=99, inside=95, uniform=0.999).all()  # 95/100 >= 0.9: every cell


def test_the_share_narrowed_is_what_makes_the_group_hold_the_level():
    """[-a, a] holds 98 of 100 (k of m draws count k / (m + 1)), [-a, a - 1] 80: a share
    (0.98 - 0.9) / (0.98 - 0.80) = 0.444 of the cells is narrowed, by their uniforms."""
    share = (0.98 - 0.9) / (0.98 - 0.80)
    assert _trim(held=98, inside=80, uniform=share - 1e-6).all()
    assert not _trim(held=98, inside=80, uniform=share + 1e-6).any()
    rng = np.random.default_rng(0)
    u = rng.random((10_000, 1))
    cut = pooled_trim(np.ones((10_000, 1), int), np.full((10_000, 1), 80),
                      np.full((10_000, 1), 98), 99, 0.9, u)
    held = np.where(cut, 0.80, 0.98).mean()
    assert held == pytest.approx(0.9, abs=3 * np.sqrt(0.25 / 10_000) * 0.18)


def test_no_step_where_the_interval_barely_holds_or_a_is_zero():
    assert not _trim(held=90, inside=50, uniform=0.0).any()  # 90/100 = 0.9: share 0
    assert not _trim(held=99, inside=99, uniform=0.0, a=0).any()  # [0, 0] stays


def test_groups_are_per_category_and_half_width():
    """Two categories with the same a decide apart: one narrows, the other does not."""
    a = np.ones((4, 2), int)
    inside = np.array([[95, 50]] * 4)
    held = np.full((4, 2), 99)
    cut = pooled_trim(a, inside, held, 99, 0.9, np.full((4, 2), 0.5))
    assert cut[:, 0].all() and not cut[:, 1].any()


def test_the_manifest_says_the_step_is_randomised():
    assert "randomised" in RANDOMISED_STEP and "public seed" in RANDOMISED_STEP

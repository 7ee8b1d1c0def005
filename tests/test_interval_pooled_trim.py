"""`intervals.symmetric.pooled_trim`: the integer step of TopDown's and of the re-run
bootstraps (group sizes, flows, ranges), pooled over a level's cells of one category and one
half-width and randomised so that they hold the level on average."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from release_inputs import budget_for, small_data

from hierdp_core.intervals import intervals_for
from hierdp_core.intervals.bootstrap import rerun_bootstrap
from hierdp_core.intervals.symmetric import RANDOMISED_STEP, RERUN_STEP, pooled_trim
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.samplers import NoiseSource


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


def test_groups_given_decide_apart_whatever_the_column():
    """With ``group`` (flat cells: a level's cells of one category) the same half-width in
    two groups decides apart, as two categories do by default."""
    a, held = np.ones(8, int), np.full(8, 99)
    inside = np.array([95] * 4 + [50] * 4)
    cut = pooled_trim(a, inside, held, 99, 0.9, np.full(8, 0.5), np.repeat([0, 1], 4))
    assert cut[:4].all() and not cut[4:].any()


class _Redraw(NamedTuple):
    values: np.ndarray
    ledger: pd.DataFrame


#: integer errors taking three values: |e| <= 1 always holds, [-1, 0] holds 0.925
PMF = {-1: 0.075, 0: 0.85, 1: 0.075}


def _bootstrap_coverage(groups, zeros: int = 0) -> float:
    """The exact chance, averaged over 4,000 cells of plug-in 50, that a new error falls
    in the intervals `rerun_bootstrap` gives from 20 re-runs whose errors follow `PMF`;
    ``zeros`` more cells of plug-in 0 in the same group, redrawn 1 three times in ten."""
    plugin = np.concatenate([np.full(4000, 50.0), np.zeros(zeros)])
    values, probs = np.array(list(PMF)), np.array(list(PMF.values()))

    def rerun(source):
        noise = source.rng.choice(values, size=plugin.size, p=probs)
        noise[4000:] = source.rng.random(zeros) < 0.3
        return _Redraw(plugin + noise, pd.DataFrame())

    boot = rerun_bootstrap(rerun, lambda r: r.values, plugin, pd.DataFrame(), 0.9, 20,
                           integer=True, groups=groups)
    held = sum(p * ((-boot.below <= e) & (e <= boot.above)) for e, p in PMF.items())
    return float(held[:4000].mean())


def _expected() -> tuple[float, float]:
    """The coverage `_bootstrap_coverage` averages, exactly, by every split of the 20 draws
    over -1, 0, 1: half-width a = 0 where 19 or more are 0 ([0, 0] holds 0.85), else 1;
    a cell narrows to [-1, 0] (0.925) when 19 or more of its draws lie there; pooled, the
    share (P - 0.9) / (P - Q) of the other a = 1 cells narrows too, P = 20/21 and Q the
    mean share of their draws in [-1, 0], each counting 1/21."""
    p_a0 = own = rest = inside = 0.0
    for zeros in range(21):
        for minus in range(21 - zeros):
            plus = 20 - zeros - minus
            chance = (math.factorial(20) / math.factorial(zeros) / math.factorial(minus)
                      / math.factorial(plus) * PMF[0] ** zeros * PMF[-1] ** minus
                      * PMF[1] ** plus)
            if zeros >= 19:
                p_a0 += chance
            elif zeros + minus >= 19:
                own += chance
            else:
                rest += chance
                inside += chance * (zeros + minus) / 21
    held, narrow = 20 / 21, inside / rest
    share = (held - 0.9) / (held - narrow)
    base = p_a0 * PMF[0] + own * (1 - PMF[1])
    return base + rest, base + rest * (share * (1 - PMF[1]) + 1 - share)


def test_the_re_run_bootstrap_pools_its_step_when_given_groups():
    """Each cell deciding by its own 20 draws narrows by luck; pooled over one group the
    others take the step in the share that makes their pooled draws hold the level: both
    as computed exactly (`_expected`, within 4 standard errors of a mean over 4,000
    cells), the pooled nearer the level."""
    alone, pooled = _expected()
    assert _bootstrap_coverage(None) == pytest.approx(alone, abs=0.004)
    assert _bootstrap_coverage(np.zeros(4000, dtype=np.int64)) == pytest.approx(pooled,
                                                                                abs=0.004)
    assert 0.9 <= pooled < alone - 0.005


@pytest.mark.parametrize("name", ["gs-topdown", "inftda", "dawa"])
def test_the_manifest_of_a_re_run_bootstrap_says_its_step_is_randomised(name):
    """Group sizes, flows and ranges (integer releases) pool their step too, and say so."""
    kind = {"gs-topdown": "group-sizes", "inftda": "flows", "dawa": "ranges"}[name]
    mechanism = get_mechanism(name)
    release = mechanism.release(small_data(kind), budget_for(mechanism.info),
                                source=NoiseSource(seed=3))
    assert intervals_for(release, 0.9, 20).record["integer_step"] == RERUN_STEP


def test_cells_clipped_at_zero_either_way_stay_out_of_the_pool():
    """Cells of plug-in 0 whose lower end is 0 with or without the step take no part: the
    cells of 50 in their group hold what they hold alone, 0.931 (counted in, their +1
    redraws lost to a step that changes nothing kept those wider: 0.938)."""
    _, pooled = _expected()
    assert _bootstrap_coverage(np.zeros(8000, dtype=np.int64), zeros=4000) == pytest.approx(
        pooled, abs=0.004)

"""Phase 2 of Kuo et al.'s Algorithm 1: EstVariance (paper sec. 5.1, spec
``shared/specs/group-sizes-kuo.md`` sec. 2.4.1), a variance estimate for every group of
every node, which the merge of Phase 3 (`kuo_matching`) uses as weights.

Contract: a level's Phase-1 estimate (n, N + 1) and its `Phase1Info` (from
`kuo_estimators`) go in; the level's ranked groups with a variance each come out as `Runs`
whose values and counts are exactly the estimate. Post-processing only (no privacy cost).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.groupsizes.kuo_estimators import METHODS, Phase1Info
from hierdp_core.groupsizes.kuo_runs import Runs, _check_choice

HG_COUNTS = ("equal", "blocks")
HC_DIVISORS = ("count", "count_squared")


def estimate_variances(
    estimate_hist: np.ndarray,
    info: Phase1Info,
    *,
    hg_count: str = "equal",
    hc_divisor: str = "count",
    noise_variance: str = "laplace",
) -> Runs:
    """EstVariance (spec 2.4.1): a variance for every group of every node of a level, in
    ranked order, run-length encoded. ``v`` = one noise draw's variance (``"laplace"``:
    2/eps_l^2, the paper's approximation, default; ``"exact"``: the true variance).

    * Hg node: sigma^2 = v / n_j with n_j the size of the group's piece of the fit.
      ``hg_count="equal"`` (default, the literal text): n_j = number of groups whose
      *rounded* estimate equals the group's, i.e. H_hat[s]; ``"blocks"``: n_j = the
      group's PAV block (before rounding/clipping; blocks that round to the same size
      stay separate runs). Partition-selection variance is ignored, as in the paper.
    * Hc node: Var(H_hat[s]) ~ 2v (two cumulative cells), divided by the number of groups
      estimated at that size: sigma^2 = 2v / H_hat[s] (``hc_divisor="count"``, default, the
      spec's reading) or 2v / H_hat[s]^2 (``"count_squared"``). H_hat[s] >= 1 for any
      group of size s, so there is no division by zero.

    Returns `Runs` whose values/counts are exactly ``estimate_hist``.
    """
    _check_choice("method", info.method, METHODS)
    _check_choice("hg_count", hg_count, HG_COUNTS)
    _check_choice("hc_divisor", hc_divisor, HC_DIVISORS)
    v = info.noise_variance(noise_variance)
    if info.method == "hg" and hg_count == "blocks":
        if info.blocks is None:
            raise MechanismError("the 'blocks' variance needs the Hg Phase-1 blocks")
        b = info.blocks
        return Runs(b.node, b.value, v / b.count.astype(float), b.count, b.n_nodes)
    runs = Runs.from_hist(estimate_hist) if info.cells is None else info.cells
    count = runs.count.astype(float)
    if info.method == "hg":
        return runs.with_var(v / count)
    return runs.with_var(2.0 * v / (count if hc_divisor == "count" else count**2))

"""Relaxed QP baselines M_H^r (Model 1) and M_c^r (Model 2): the continuous optimum is checked
against an independent KKT certificate and SciPy's SLSQP on tiny trees; the rounded release
is checked for validity and its #CV / faithfulness gap recounted independently."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize, nnls

from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes.data import cumulative, decumulate
from hierdp_core.groupsizes.relaxed import mc_relaxed, mh_relaxed
from hierdp_core.hierarchy import build_from_codes


# ---- fixtures --------------------------------------------------------------------------
def tree(fanouts: list[list[int]]):
    """A tree from per-level fan-outs: ``[[2], [1, 3]]`` is root -> 2 nodes -> 1 + 3 leaves."""
    paths = [()]
    for level in fanouts:
        assert len(level) == len(paths)
        paths = [p + (k,) for p, f in zip(paths, level, strict=True) for k in range(f)]
    codes = [np.array(["/".join(map(str, p[: d + 1])) for p in paths])
             for d in range(len(fanouts))]
    h, _ = build_from_codes(codes, [f"l{d}" for d in range(1, len(fanouts) + 1)])
    return h


def random_tree(rng, depth: int, max_fan: int):
    fanouts, width = [], 1
    for _ in range(depth):
        level = rng.integers(1, max_fan + 1, size=width).tolist()
        fanouts.append(level)
        width = sum(level)
    return tree(fanouts)


def truth_hist(h, n_cols: int, rng, scale: float = 4.0) -> np.ndarray:
    """Group-size histograms decreasing in size, aggregated so that they are consistent."""
    leaf = rng.poisson(scale * np.exp(-np.arange(n_cols) / 2.0), size=(h.n_leaves, n_cols))
    return h.aggregate(leaf.astype(np.int64))


def geometric(rng, scale: float, shape) -> np.ndarray:
    alpha = np.exp(-1.0 / scale)
    return rng.geometric(1 - alpha, shape) - rng.geometric(1 - alpha, shape)


# ---- independent model statements (dense, tiny trees only) -----------------------------
def model_matrices(h, n_cols: int, g: float, cumulative_model: bool):
    """Equalities ``E x = b`` and inequalities ``M x >= 0`` of Model 1 / Model 2 written out
    directly from the paper's constraints, over all nodes (no leaves-only shortcut)."""
    n = h.n_nodes * n_cols

    def idx(v, s):
        return v * n_cols + s

    eq_rows, eq_rhs, ineq_rows = [], [], []
    for v in range(h.n_nodes):
        for s in range(n_cols):
            kids = np.flatnonzero(h.parent == v)
            if kids.size:
                row = np.zeros(n)
                row[idx(v, s)] = 1.0
                row[[idx(c, s) for c in kids]] = -1.0
                eq_rows.append(row)
                eq_rhs.append(0.0)
            row = np.zeros(n)
            row[idx(v, s)] = 1.0
            if cumulative_model and s > 0:
                row[idx(v, s - 1)] = -1.0  # (C3) monotone; s = 0 gives c >= 0
            ineq_rows.append(row)
    row = np.zeros(n)
    if cumulative_model:
        row[idx(0, n_cols - 1)] = 1.0  # (C2)
    else:
        row[[idx(0, s) for s in range(n_cols)]] = 1.0  # (H2) at the root
    eq_rows.append(row)
    eq_rhs.append(g)
    return np.array(eq_rows), np.array(eq_rhs), np.array(ineq_rows)


def kkt_certify(x, target, weights, eq, rhs, ineq, tol_active=1e-6):
    """Certify ``x`` (up to solver tolerance) as the optimum: solve the equality QP on the
    inequalities active at ``x`` exactly, then check that point is feasible and that its
    gradient is ``E'y + A_S' lam`` with ``lam >= 0`` (non-negative least squares, as
    redundant active rows make the multipliers non-unique). Returns the exact point."""
    w = np.repeat(weights, target.shape[1])
    active = ineq[ineq @ x.ravel() < tol_active]
    cons = np.vstack([eq, active])
    n, m = x.size, cons.shape[0]
    kkt = np.block([[np.diag(2 * w), -cons.T], [cons, np.zeros((m, m))]])
    rhs_full = np.concatenate([2 * w * target.ravel(), rhs, np.zeros(active.shape[0])])
    x_star = np.linalg.lstsq(kkt, rhs_full, rcond=None)[0][:n]
    assert np.abs(eq @ x_star - rhs).max() < 1e-8
    assert (ineq @ x_star).min() > -1e-8, "active-set point is infeasible"
    grad = 2 * w * (x_star - target.ravel())
    _, residual = nnls(np.hstack([eq.T, -eq.T, active.T]), grad)
    assert residual < 1e-6 * (1 + np.abs(grad).max()), "no multipliers >= 0: not optimal"
    return x_star.reshape(x.shape)


def recount_violations(h, hist) -> int:
    """#CV by a plain loop over (parent, size)."""
    count = 0
    for v in range(h.n_nodes):
        kids = np.flatnonzero(h.parent == v)
        if kids.size:
            count += int(np.count_nonzero(hist[v] != hist[kids].sum(axis=0)))
    return count


def assert_feasible(h, cont, g, cumulative_model: bool):
    """Continuous solution: consistent to 1e-6, >= -1e-9, root constraint met."""
    for v in range(h.n_nodes):
        kids = np.flatnonzero(h.parent == v)
        if kids.size:
            assert np.abs(cont[v] - cont[kids].sum(axis=0)).max() < 1e-6
    assert cont.min() >= -1e-9
    if cumulative_model:
        assert np.diff(cont, axis=1).min() >= -1e-9
        assert cont[0, -1] == pytest.approx(g, abs=1e-6)
    else:
        assert cont[0].sum() == pytest.approx(g, abs=1e-6)


# ---- tiny instances: the continuous optimum --------------------------------------------
TINY_TREES = [[[3]], [[2], [2, 3]], [[1], [2]], [[2], [1, 2], [2, 1, 1]]]


@pytest.mark.parametrize("fanouts", TINY_TREES)
@pytest.mark.parametrize("weighted", [False, True])
def test_mh_continuous_optimum_is_kkt_optimal(fanouts, weighted):
    rng = np.random.default_rng(len(str(fanouts)) + weighted)
    h = tree(fanouts)
    truth = truth_hist(h, 5, rng)
    noisy = truth + geometric(rng, 3.0, truth.shape)
    g = int(truth[0].sum())
    lw = [1.0 + level for level in range(h.n_levels)] if weighted else None
    w = np.ones(h.n_levels) if lw is None else np.asarray(lw)
    _, info = mh_relaxed(h, noisy, g, level_weights=lw)
    cont = info["continuous"]
    assert info["optimal"] and info["solver"] == "clarabel"
    assert_feasible(h, cont, g, cumulative_model=False)
    eq, rhs, ineq = model_matrices(h, 5, g, cumulative_model=False)
    x_star = kkt_certify(cont, noisy, w[h.level_of_nodes()], eq, rhs, ineq)
    assert np.abs(cont - x_star).max() < 1e-5
    assert info["objective"] == pytest.approx(
        float((w[h.level_of_nodes()][:, None] * (x_star - noisy) ** 2).sum()), rel=1e-8, abs=1e-6)


@pytest.mark.parametrize("fanouts", TINY_TREES)
def test_mc_continuous_optimum_is_kkt_optimal(fanouts):
    rng = np.random.default_rng(7 + len(str(fanouts)))
    h = tree(fanouts)
    truth = truth_hist(h, 5, rng)
    noisy = cumulative(truth) + geometric(rng, 2.0, truth.shape)
    g = int(truth[0].sum())
    _, info = mc_relaxed(h, noisy, g)
    cont = info["continuous"]
    assert info["optimal"]
    assert_feasible(h, cont, g, cumulative_model=True)
    eq, rhs, ineq = model_matrices(h, 5, g, cumulative_model=True)
    x_star = kkt_certify(cont, noisy, np.ones(h.n_nodes), eq, rhs, ineq)
    assert np.abs(cont - x_star).max() < 1e-5


def test_kkt_certificate_rejects_a_wrong_point():
    rng = np.random.default_rng(2)
    h = tree([[2], [2, 3]])
    truth = truth_hist(h, 5, rng)
    g = int(truth[0].sum())
    noisy = truth + geometric(rng, 3.0, truth.shape)
    _, info = mh_relaxed(h, noisy, g)
    eq, rhs, ineq = model_matrices(h, 5, g, cumulative_model=False)
    wrong = noisy + geometric(rng, 3.0, truth.shape)  # the optimum for other targets
    with pytest.raises(AssertionError):
        x_star = kkt_certify(info["continuous"], wrong, np.ones(h.n_nodes), eq, rhs, ineq)
        assert np.abs(info["continuous"] - x_star).max() < 1e-5


@pytest.mark.parametrize("cumulative_model", [False, True])
def test_continuous_optimum_matches_slsqp(cumulative_model):
    rng = np.random.default_rng(11)
    h = tree([[2], [2, 1]])
    n_cols = 4
    truth = truth_hist(h, n_cols, rng)
    g = int(truth[0].sum())
    base = cumulative(truth) if cumulative_model else truth
    noisy = base + geometric(rng, 2.0, truth.shape)
    fn = mc_relaxed if cumulative_model else mh_relaxed
    _, info = fn(h, noisy, g)
    eq, rhs, ineq = model_matrices(h, n_cols, g, cumulative_model)
    target = noisy.ravel().astype(float)
    x_start = np.maximum(base, 0).ravel().astype(float)
    res = minimize(lambda x: ((x - target) ** 2).sum(), x_start,
                   jac=lambda x: 2 * (x - target), method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda x: eq @ x - rhs, "jac": lambda x: eq},
                                {"type": "ineq", "fun": lambda x: ineq @ x,
                                 "jac": lambda x: ineq}],
                   options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success
    assert info["objective"] == pytest.approx(res.fun, rel=1e-7, abs=1e-7)
    assert np.abs(info["continuous"].ravel() - res.x).max() < 1e-4


def test_highs_agrees_with_clarabel_on_a_tiny_tree():
    pytest.importorskip("highspy")
    rng = np.random.default_rng(5)
    h = tree([[2], [2, 2]])
    truth = truth_hist(h, 4, rng)
    g = int(truth[0].sum())
    noisy = truth + geometric(rng, 3.0, truth.shape)
    _, a = mh_relaxed(h, noisy, g)
    _, b = mh_relaxed(h, noisy, g, solver="highs")
    assert b["optimal"] and b["solver"] == "highs"
    assert np.abs(a["continuous"] - b["continuous"]).max() < 1e-5
    cum = cumulative(truth) + geometric(rng, 2.0, truth.shape)
    _, a = mc_relaxed(h, cum, g)
    _, b = mc_relaxed(h, cum, g, solver="highs")
    assert b["optimal"]
    assert np.abs(a["continuous"] - b["continuous"]).max() < 1e-5


# ---- rounding: where #CV comes from ----------------------------------------------------
def test_rounding_breaks_consistency_and_is_not_repaired():
    # root -> 2 leaves, sizes {0, 1}, G = 1, noisy root (0, 1), leaves (0, 0). By symmetry the
    # optimum is root (1/6, 5/6), leaves (1/12, 5/12): rounded root (0, 1), leaves (0, 0).
    h = tree([[2]])
    noisy = np.array([[0, 1], [0, 0], [0, 0]])
    out, info = mh_relaxed(h, noisy, 1)
    np.testing.assert_allclose(info["continuous"],
                               [[1 / 6, 5 / 6], [1 / 12, 5 / 12], [1 / 12, 5 / 12]], atol=1e-7)
    assert out.tolist() == [[0, 1], [0, 0], [0, 0]]
    assert info["consistency_violations"] == 1
    assert info["faithfulness_gap_per_level"] == [0.0, 1.0]
    assert info["faithfulness_gap"] == 1.0


# ---- zero noise ------------------------------------------------------------------------
@pytest.mark.parametrize("fanouts", TINY_TREES + [[[4], [3, 1, 2, 5]]])
def test_zero_noise_returns_the_truth(fanouts):
    rng = np.random.default_rng(3)
    h = tree(fanouts)
    truth = truth_hist(h, 8, rng, scale=20.0)
    g = int(truth[0].sum())
    out, info = mh_relaxed(h, truth, g)
    assert np.array_equal(out, truth)
    assert info["consistency_violations"] == 0 and info["faithfulness_gap"] == 0
    assert info["objective"] == pytest.approx(0.0, abs=1e-6)
    out, info = mc_relaxed(h, cumulative(truth), g)
    assert np.array_equal(out, truth)
    assert info["consistency_violations"] == 0 and info["faithfulness_gap"] == 0


# ---- random instances ------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_random_instances_are_valid_and_cv_is_counted(seed):
    rng = np.random.default_rng(100 + seed)
    h = random_tree(rng, depth=int(rng.integers(1, 4)), max_fan=4)
    n_cols = int(rng.integers(2, 16))
    truth = truth_hist(h, n_cols, rng, scale=6.0)
    g = int(truth[0].sum())
    for cumulative_model in (False, True):
        if cumulative_model:
            noisy = cumulative(truth) + geometric(rng, 3.0, truth.shape)
            out, info = mc_relaxed(h, noisy, g)
        else:
            noisy = truth + geometric(rng, 6.0, truth.shape)
            out, info = mh_relaxed(h, noisy, g)
        assert info["optimal"], info["status"]
        assert out.dtype == np.int64 and out.shape == truth.shape and out.min() >= 0
        cont = info["continuous"]
        assert_feasible(h, cont, g, cumulative_model)
        released = decumulate(np.rint(np.maximum.accumulate(np.maximum(cont, 0), axis=1))) \
            if cumulative_model else np.rint(np.maximum(cont, 0))
        assert np.array_equal(out, released)  # nearest-integer rounding, nothing repaired
        assert info["consistency_violations"] == recount_violations(h, out)
        gaps = [abs(int(out[h.parent == -1].sum()) - g)]
        for level in range(1, h.n_levels):
            gaps.append(abs(int(out[h.level_of_nodes() == level].sum()) - g))
        assert info["faithfulness_gap_per_level"] == gaps
        assert info["faithfulness_gap"] == max(gaps)
        assert info["seconds"] >= 0 and info["iterations"] > 0


def test_cv_appears_on_larger_noisy_instances():
    rng = np.random.default_rng(42)
    h = tree([[6], [5, 8, 3, 7, 4, 6]])
    truth = truth_hist(h, 30, rng, scale=50.0)
    g = int(truth[0].sum())
    out, info = mh_relaxed(h, truth + geometric(rng, 6.0, truth.shape), g)
    assert info["consistency_violations"] == recount_violations(h, out) > 0
    out, info = mc_relaxed(h, cumulative(truth) + geometric(rng, 3.0, truth.shape), g)
    assert info["consistency_violations"] == recount_violations(h, out) > 0


# ---- input checks ----------------------------------------------------------------------
def test_bad_inputs_are_rejected():
    h = tree([[2]])
    good = np.zeros((3, 3))
    with pytest.raises(InputError, match="shape"):
        mh_relaxed(h, np.zeros((2, 3)), 0)
    with pytest.raises(InputError, match="finite"):
        mc_relaxed(h, np.full((3, 3), np.nan), 0)
    with pytest.raises(InputError, match="total_groups"):
        mh_relaxed(h, good, -1)
    with pytest.raises(InputError, match="level_weights"):
        mh_relaxed(h, good, 0, level_weights=[1.0])
    with pytest.raises(InputError, match="level_weights"):
        mc_relaxed(h, good, 0, level_weights=[1.0, 0.0])
    with pytest.raises(InputError, match="solver"):
        mh_relaxed(h, good, 0, solver="gurobi")


def test_a_solver_stopped_early_raises_instead_of_rounding_garbage():
    rng = np.random.default_rng(9)
    h = tree([[2], [2, 3]])
    truth = truth_hist(h, 6, rng)
    noisy = truth + geometric(rng, 6.0, truth.shape)
    with pytest.raises(MechanismError, match="clarabel.*MaxIterations"):
        mh_relaxed(h, noisy, int(truth[0].sum()), solver_options={"max_iter": 2})


# ---- constraint matrices built once per hierarchy --------------------------------------
@pytest.mark.parametrize("solver", ["clarabel", "highs"])
def test_a_reused_hierarchy_gives_what_a_fresh_one_gives(solver):
    """The data-free constraint matrices are built once per hierarchy, model and N, then
    reused: release after release, alternating models and N on one hierarchy, every result
    is bit for bit the one a fresh hierarchy (nothing cached) gives."""
    if solver == "highs":
        pytest.importorskip("highspy")
    fanouts = [[2], [2, 3]]
    shared = tree(fanouts)
    rng = np.random.default_rng(21)
    for n_cols in (4, 3, 4, 3):
        truth = truth_hist(shared, n_cols, rng)
        g = int(truth[0].sum())
        for solve, noisy in ((mh_relaxed, truth + geometric(rng, 3.0, truth.shape)),
                             (mc_relaxed, cumulative(truth) + geometric(rng, 2.0, truth.shape))):
            reused, info = solve(shared, noisy, g, solver=solver)
            fresh, fresh_info = solve(tree(fanouts), noisy, g, solver=solver)
            assert np.array_equal(reused, fresh)
            assert np.array_equal(info["continuous"], fresh_info["continuous"])

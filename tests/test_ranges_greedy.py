"""DAWA Stage 2 (`hierdp_core.ranges.greedy_strategy`, `greedy_closed_form`, `strategy_tree`,
`strategy_measurement`, `strategy_inference`): the corrected closed form of spec 2.3.3 against
brute-force inverses, the returned inverse against numpy on the explicit strategy matrix (with
and without collapsed nodes), column sums, the greedy choice of every node against a
brute-force objective, the identity workload (Laplace), the noise and the least squares
(unbiased, covariance (2/eps^2) inverse), and the error against the uniform tree and Laplace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from release_inputs import UNIT_MEASUREMENT
from scipy.linalg import block_diag
from scipy.optimize import minimize_scalar

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.greedy_closed_form import (
    lambda_objective,
    woodbury_regular,
    woodbury_single,
)
from hierdp_core.ranges.greedy_strategy import (
    _refine,
    geometric_strategy,
    greedy_strategies,
    greedy_strategy,
    laplace_strategy,
    uniform_strategy,
)
from hierdp_core.ranges.strategy_inference import least_squares, least_squares_batch
from hierdp_core.ranges.strategy_measurement import measure, measure_batch
from hierdp_core.ranges.strategy_tree import build_tree
from hierdp_core.ranges.workloads import prefix_ranges, random_ranges

SIZES = (1, 2, 3, 5, 8, 13)
BRANCHINGS = (2, 3, 4)


def random_gram(k: int, seed: int, m: int = 9) -> np.ndarray:
    w_hat = np.random.default_rng(seed).random((m, k))
    return w_hat.T @ w_hat


def ranges_w_hat(k: int, m: int = 200, seed: int = 0) -> np.ndarray:
    return random_ranges(k, m, seed=seed).bucket_matrix(np.arange(k + 1))


def exact_groups(w_hat: np.ndarray) -> np.ndarray:
    return np.unique(w_hat.T, axis=0, return_inverse=True)[1].ravel()


def every_kind(k: int, branching: int, seed: int = 0):
    gram = random_gram(k, seed)
    return [greedy_strategy(gram, branching), greedy_strategy(gram, branching,
                                                              objective="reference"),
            uniform_strategy(k, branching), geometric_strategy(k, branching), laplace_strategy(k)]


def release(strategy, counts, epsilon: float, source: NoiseSource) -> np.ndarray:
    """Measure then fit: the strategy's least-squares estimate of noisy answers."""
    return least_squares(strategy, measure(strategy, counts, epsilon, source, stage=UNIT_MEASUREMENT))


def release_batch(batch, counts, which, epsilon: float, source: NoiseSource,
                  **options) -> np.ndarray:
    """`release` for a batch, row j with strategy ``which[j]``."""
    answers = measure_batch(batch, counts, which, epsilon, source, stage=UNIT_MEASUREMENT)
    return least_squares_batch(batch, answers, which, **options)


def dense(strategy) -> np.ndarray:
    """The explicit weighted strategy matrix D Y, built from lo, hi and weights."""
    a = np.zeros((strategy.lo.size, strategy.k))
    for row, (lo, hi, w) in enumerate(zip(strategy.lo, strategy.hi, strategy.weights,
                                          strict=True)):
        a[row, lo:hi] = w
    return a


def relative_gap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1.0))


# --- the closed form ---------------------------------------------------------------------

def random_child(size: int, rng) -> np.ndarray:
    """A child's scaled strategy: its single buckets and its whole range (when longer than 1),
    random positive scales."""
    rows = [np.eye(size)] + ([np.ones((1, size))] if size > 1 else [])
    y = np.vstack(rows)
    return rng.uniform(0.05, 1.0, size=(y.shape[0], 1)) * y


@pytest.mark.parametrize("sizes, lam, mu, seed", [
    ((1, 1), 0.3, 1.0, 0), ((2, 3), 0.55, 2 ** -0.5, 1), ((3, 1, 4), 0.9, 0.5, 2),
    ((4, 4), 0.0, 0.7, 3), ((2, 2, 2, 2), 0.99, 0.25, 4), ((5,), 0.4, 0.6, 5),
])
def test_closed_forms_equal_brute_force(sizes, lam, mu, seed):
    rng = np.random.default_rng(seed)
    size = sum(sizes)
    gram = random_gram(size, seed)
    children = [random_child(s, rng) for s in sizes]
    bounds = np.cumsum((0, *sizes))
    blocks = [gram[a:b, a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    inverses = [np.linalg.inv(a.T @ a) for a in children]
    v = np.concatenate([m.sum(axis=1) for m in inverses])
    kappa = sum(m.sum() for m in inverses)
    error_sum = sum(np.trace(g @ m) for g, m in zip(blocks, inverses, strict=True))
    m_full = v @ gram @ v
    m_blk = sum(m.sum(axis=1) @ g @ m.sum(axis=1) for g, m in zip(blocks, inverses,
                                                                   strict=True))
    # brute force: the parent's strategy and the inverse of its normal matrix
    parent = np.vstack([lam * np.ones((1, size)), (1 - lam) * block_diag(*children)])
    brute = np.linalg.inv(parent.T @ parent)
    decayed = mu * gram + (1 - mu) * block_diag(*blocks)

    closed = woodbury_single(inverses, v, lam, kappa)
    assert relative_gap(closed, brute) < 1e-8
    blend = mu * m_full + (1 - mu) * m_blk
    obj = lambda_objective(lam, error_sum, blend, kappa)
    assert obj == pytest.approx(np.trace(decayed @ brute), rel=1e-8)
    assert lambda_objective(lam, error_sum, m_full, kappa) == pytest.approx(np.trace(gram @ brute),
                                                                      rel=1e-8)
    # the updates passed up: v_q = M_q 1 = v / d and K_q = 1^T M_q 1 = K / d
    d = (1 - lam) ** 2 + lam**2 * kappa
    assert relative_gap(brute.sum(axis=1), v / d) < 1e-8
    assert brute.sum() == pytest.approx(kappa / d, rel=1e-8)


def test_batched_woodbury_equals_the_single_form():
    rng = np.random.default_rng(7)
    n, t, s = 3, 2, 3
    children = np.stack([[np.linalg.inv(a.T @ a) for a in (random_child(s, rng),
                                                            random_child(s, rng))]
                         for _ in range(n)])
    v = children.sum(axis=3).reshape(n, t * s)
    kappa = children.sum(axis=(1, 2, 3))
    lam = np.array([0.0, 0.4, 0.97])
    batched = woodbury_regular(children, v, lam, kappa)
    for i in range(n):
        single = woodbury_single(list(children[i]), v[i], lam[i], kappa[i])
        assert relative_gap(batched[i], single) < 1e-12


def test_paper_formula_would_be_wrong():
    """Spec section 8 item 4: the printed Woodbury term (lambda^-2 + m1 + m2)^-1 lacks the
    (1 - lambda)^-2 factor. Two leaves, G = I, lambda = 1/2: the corrected form gives the
    brute-force trace, the printed one does not."""
    lam, error_sum, kappa, quad = 0.5, 2.0, 2.0, 2.0
    printed = error_sum - quad / (lam**-2 + kappa)
    brute = np.linalg.inv(np.array([[lam**2 + 0.25, lam**2], [lam**2, lam**2 + 0.25]]))
    assert lambda_objective(lam, error_sum, quad, kappa) == pytest.approx(np.trace(brute))
    assert printed != pytest.approx(np.trace(brute))


def test_refinement_matches_scipy_and_never_worsens_the_grid():
    rng = np.random.default_rng(3)
    n = 50
    error_sum, kappa = rng.uniform(1, 5, n), rng.uniform(2, 50, n)
    quad = rng.uniform(0.9, 1, n) * error_sum * kappa  # S K >= B, as in any real node

    def value(lam):
        tail = (None,) * (np.ndim(lam) - 1)
        return lambda_objective(lam, error_sum[(..., *tail)], quad[(..., *tail)], kappa[(..., *tail)])

    grid = np.arange(100) / 100
    start = grid[np.argmin(lambda_objective(grid, error_sum[:, None], quad[:, None],
                                      kappa[:, None]), axis=1)]
    refined = _refine(value, start, 0.01, 0.99)
    assert (value(refined) <= value(start)).all() and (refined <= 0.99).all()
    assert ((refined > 0) & (refined != start)).all()  # interior minima between grid points
    for i in range(n):
        bracket = (max(start[i] - 0.01, 0.0), min(start[i] + 0.01, 0.99))
        best = minimize_scalar(lambda x, i=i: lambda_objective(x, error_sum[i], quad[i], kappa[i]),
                               bounds=bracket, method="bounded",
                               options={"xatol": 1e-10})
        assert value(refined)[i] <= best.fun + 1e-9 * abs(best.fun)


# --- the tree -------------------------------------------------------------------------------

def test_bottom_up_tree_moves_single_nodes_up():
    tree = build_tree(5, 2)
    assert [e.tolist() for e in tree.edges] == [[0, 1, 2, 3, 4, 5], [0, 2, 4, 5], [0, 4, 5],
                                                [0, 5]]
    assert [m.tolist() for m in tree.made] == [[True] * 5, [True, True, False], [True, False],
                                               [True]]
    assert [t.tolist() for t in tree.top] == [[0, 0, 0, 0, 2], [1, 1, 2], [2, 2], [3]]
    assert tree.decay(3) == 1.0 and tree.decay(0) == pytest.approx(2 ** -1.5)
    assert build_tree(1, 3).height == 0 and build_tree(9, 3).height == 2


@pytest.mark.parametrize("k", [1, 5, 13, 40])
@pytest.mark.parametrize("branching", BRANCHINGS)
def test_no_duplicate_intervals_and_a_root(k, branching):
    for strategy in every_kind(k, branching):
        pairs = set(zip(strategy.lo.tolist(), strategy.hi.tolist(), strict=True))
        assert len(pairs) == strategy.lo.size
        assert (strategy.weights > 0).all() and (strategy.lo < strategy.hi).all()
        if strategy.name in ("uniform", "geometric"):
            assert (0, k) in pairs


def test_single_bucket_is_one_query_of_weight_one():
    for strategy in every_kind(1, 2) + [greedy_strategy(np.ones((1, 1)),
                                                        groups=np.zeros(1, int))]:
        assert strategy.lo.tolist() == [0] and strategy.hi.tolist() == [1]
        assert strategy.weights.tolist() == [1.0] and strategy.inverse.tolist() == [[1.0]]


# --- the returned inverse and the column sums ---------------------------------------------

@pytest.mark.parametrize("k", SIZES)
@pytest.mark.parametrize("branching", BRANCHINGS)
def test_inverse_equals_numpy_inverse_of_the_strategy(k, branching):
    for strategy in every_kind(k, branching, seed=k + branching):
        a = dense(strategy)
        assert relative_gap(strategy.inverse, np.linalg.inv(a.T @ a)) < 1e-9, strategy.name


@pytest.mark.parametrize("k", (1, 2, 7, 16, 30, 100))
@pytest.mark.parametrize("branching", BRANCHINGS)
def test_column_sums_are_one(k, branching):
    for strategy in every_kind(k, branching):
        assert np.abs(strategy.column_sums() - 1.0).max() < 1e-12, strategy.name
        assert np.abs(dense(strategy).sum(axis=0) - 1.0).max() < 1e-12, strategy.name


def test_collapsed_nodes_spread_evenly_like_minimum_norm_least_squares():
    # buckets 0-3 are never separated by a query, nor are 4-5; 6 and 7 differ
    w_hat = np.array([[1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0, 1],
                      [0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 1, 1.0]])
    strategy = greedy_strategy(w_hat.T @ w_hat, groups=exact_groups(w_hat))
    pairs = dict(zip(zip(strategy.lo.tolist(), strategy.hi.tolist(), strict=True),
                     strategy.weights.tolist(), strict=True))
    assert not any(lo < 4 and hi <= 4 and (lo, hi) != (0, 4) for lo, hi in pairs)  # no row below
    assert (0, 4) in pairs and (4, 6) in pairs and (6, 7) in pairs
    a = dense(strategy)
    assert np.linalg.matrix_rank(a.T @ a) == 4
    assert relative_gap(strategy.inverse, np.linalg.pinv(a.T @ a)) < 1e-9
    answers = np.random.default_rng(0).normal(size=(3, strategy.lo.size))
    estimate = least_squares(strategy, answers)
    assert relative_gap(estimate, np.linalg.lstsq(a, answers.T, rcond=None)[0].T) < 1e-9
    assert np.allclose(estimate[:, :4], estimate[:, :1]) and np.allclose(estimate[:, 4],
                                                                         estimate[:, 5])


def test_total_only_workload_collapses_to_the_root():
    w_hat = np.ones((1, 6))
    strategy = greedy_strategy(w_hat.T @ w_hat, 3, groups=np.zeros(6, int))
    assert (strategy.lo.tolist(), strategy.hi.tolist(), strategy.weights.tolist()) == (
        [0], [6], [1.0])
    assert np.allclose(strategy.inverse, np.full((6, 6), 1 / 36))
    assert np.allclose(least_squares(strategy, np.array([12.0])), 2.0)


# --- the greedy choice ----------------------------------------------------------------------

def local_strategy(strategy, lo, hi):
    """Rows inside [lo, hi), their weights rescaled so that every column sums to 1."""
    inside = (strategy.lo >= lo) & (strategy.hi <= hi)
    a = dense(strategy)[inside][:, lo:hi]
    return a / a.sum(axis=0)[0], inside


def brute_objective(lam, children, decayed):
    """tr(G~ (A^T A)^-1) for A = [lam 1^T; (1 - lam) blockdiag(children)], for every lam of an
    array, by numpy inverses."""
    lam = np.asarray(lam, dtype=float)[:, None, None]
    below = block_diag(*children)
    normal = lam**2 + (1 - lam) ** 2 * (below.T @ below)
    return np.einsum("ab,nba->n", decayed, np.linalg.inv(normal))


@pytest.mark.parametrize("k, branching", [(40, 2), (100, 2), (128, 2), (81, 3), (100, 3),
                                         (70, 4)])
def test_every_lambda_minimises_the_brute_force_objective(k, branching):
    """For every node made from two or more children: given the children's final weights, the
    chosen lambda is at least as good as every grid value, and a local minimum, of
    tr(G~ (A_q^T A_q)^-1) computed with numpy, G~ = mu G_q + (1 - mu) blockdiag(G_cc),
    mu = t^(-depth/2)."""
    w_hat = ranges_w_hat(k, m=2000, seed=1)
    gram = w_hat.T @ w_hat
    strategy = greedy_strategy(gram, branching)
    assert (strategy.hi - strategy.lo > 1).any()  # some internal node is asked
    tree = build_tree(k, branching)
    for level in range(1, tree.height + 1):
        edges, below = tree.edges[level], tree.edges[level - 1]
        for node in np.flatnonzero(tree.made[level]):
            lo, hi = edges[node], edges[node + 1]
            cuts = below[(below >= lo) & (below <= hi)]
            spans = list(zip(cuts[:-1], cuts[1:], strict=True))
            local, inside = local_strategy(strategy, lo, hi)
            own = (strategy.lo == lo) & (strategy.hi == hi)
            lam = local[own[inside]][0, 0] if own.any() else 0.0
            children = [local_strategy(strategy, a, b)[0] for a, b in spans]
            mu = branching ** (-(tree.height - level) / 2)
            decayed = mu * gram[lo:hi, lo:hi] + (1 - mu) * block_diag(
                *[gram[a:b, a:b] for a, b in spans])
            assert 0 <= lam <= 0.99
            grid = brute_objective(np.arange(100) / 100, children, decayed)
            nearby = np.clip([lam, lam - 1e-4, lam + 1e-4], 0, 0.99)  # refined: a local minimum
            chosen, *around = brute_objective(nearby, children, decayed)
            assert chosen <= grid.min() * (1 + 1e-9)
            assert chosen <= min(around) * (1 + 1e-12)


@pytest.mark.parametrize("k", [3, 4])
def test_reference_objective_optimises_for_gram_squared(k):
    """Spec 2.3.4 item 1: the authors' code passes G where W is expected, so its lambda at
    the root (mu = 1, leaves only below) is the grid minimiser of tr(G^2 M), not tr(G M)."""
    w_hat = ranges_w_hat(k, m=3, seed=3)
    gram, branching = w_hat.T @ w_hat, k
    strategy = greedy_strategy(gram, branching, objective="reference")

    def trace(x, g):
        a = np.vstack([x * np.ones((1, k)), (1 - x) * np.eye(k)])
        return np.trace(g @ np.linalg.inv(a.T @ a))

    grid = np.arange(100) / 100
    root = (strategy.lo == 0) & (strategy.hi == k)
    lam = strategy.weights[root][0] if root.any() else 0.0
    assert lam == grid[np.argmin([trace(x, gram @ gram) for x in grid])]
    assert lam != grid[np.argmin([trace(x, gram) for x in grid])]


def test_identity_workload_gives_the_laplace_mechanism():
    for k, branching in [(1, 2), (6, 2), (17, 3), (64, 2)]:
        greedy, laplace = greedy_strategy(np.eye(k), branching), laplace_strategy(k)
        assert greedy.lo.tolist() == laplace.lo.tolist()
        assert greedy.hi.tolist() == laplace.hi.tolist()
        assert greedy.weights.tolist() == laplace.weights.tolist()
        assert np.array_equal(greedy.inverse, np.eye(k))
        counts = np.arange(k, dtype=float)
        assert np.array_equal(
            release(greedy, counts, 0.5, NoiseSource(seed=4)),
            release(laplace, counts, 0.5, NoiseSource(seed=4)))


def test_greedy_beats_the_uniform_tree_and_laplace_on_random_ranges():
    """Spec 4.5 reports GreedyH ~143 against H2 ~221 (n = 4096); at k = 64 the total expected
    error tr(G inverse) must also favour greedy, and beat lambda = 0 everywhere (tr G)."""
    w_hat = ranges_w_hat(64, m=500, seed=2)
    gram = w_hat.T @ w_hat
    paper = np.trace(gram @ greedy_strategy(gram).inverse)
    uniform = np.trace(gram @ uniform_strategy(64).inverse)
    assert paper < 0.8 * uniform
    assert paper < np.trace(gram)
    assert paper < np.trace(gram @ geometric_strategy(64).inverse)
    assert paper <= np.trace(gram @ greedy_strategy(gram, objective="reference").inverse)


# --- the fixed baselines ------------------------------------------------------------------

def test_uniform_and_geometric_level_weights():
    uniform = uniform_strategy(8, 2)
    assert np.allclose(uniform.weights, 0.25)
    geometric = geometric_strategy(8, 2)
    by_length = {int(hi - lo): w for lo, hi, w in zip(geometric.lo, geometric.hi,
                                                       geometric.weights, strict=True)}
    ratio = 2 ** (1 / 3)
    assert by_length[1] / by_length[2] == pytest.approx(ratio)
    assert by_length[4] / by_length[8] == pytest.approx(ratio)
    assert sum(by_length.values()) == pytest.approx(1.0)
    # k = 5: bucket 4 is alone below the root, so its leaf takes the weight of levels 0-2
    ragged = uniform_strategy(5, 2)
    leaf = (ragged.lo == 4) & (ragged.hi == 5)
    assert ragged.weights[leaf][0] == pytest.approx(0.75)
    # k = 6: node [4, 6) spans levels 1 and 2, its leaves level 0 only, the root level 3
    ragged = uniform_strategy(6, 2)
    weights = dict(zip(zip(ragged.lo.tolist(), ragged.hi.tolist(), strict=True),
                       ragged.weights.tolist(), strict=True))
    assert weights[(4, 6)] == pytest.approx(0.5) and weights[(4, 5)] == pytest.approx(0.25)
    assert weights[(0, 6)] == pytest.approx(0.25) and weights[(0, 2)] == pytest.approx(0.25)


# --- measurement and least squares -----------------------------------------------------------

def test_estimate_is_unbiased_with_the_predicted_covariance():
    k, epsilon, draws = 6, 0.8, 40_000
    w_hat = ranges_w_hat(k, m=30, seed=5)
    strategy = greedy_strategy(w_hat.T @ w_hat)
    truth = np.array([3.0, 0.0, 10.0, 7.0, 1.0, 4.0])
    estimates = release(strategy, np.tile(truth, (draws, 1)), epsilon, NoiseSource(seed=11))
    covariance = 2 / epsilon**2 * strategy.inverse
    sd = np.sqrt(np.diag(covariance))
    assert (np.abs(estimates.mean(axis=0) - truth) < 5 * sd / np.sqrt(draws)).all()
    empirical = np.cov(estimates.T)
    tolerance = 5 * np.sqrt(5 / draws) * np.outer(sd, sd)  # Laplace: excess kurtosis <= 3
    for i, j in [(0, 0), (2, 2), (0, 1), (2, 5)]:
        assert abs(empirical[i, j] - covariance[i, j]) < tolerance[i, j]
    squared = ((estimates - truth) @ w_hat.T) ** 2
    predicted = strategy.expected_squared_errors(w_hat, epsilon)
    assert np.allclose(squared.mean(axis=0), predicted, rtol=0.06)


def test_shapes_and_laplace_errors():
    strategy = greedy_strategy(random_gram(5, 0))
    source = NoiseSource(seed=0)
    q = strategy.lo.size
    assert measure(strategy, np.ones(5), 1.0, source, stage=UNIT_MEASUREMENT).shape == (q,)
    assert measure(strategy, np.ones((3, 5)), 1.0, source, stage=UNIT_MEASUREMENT).shape == (3, q)
    assert release(strategy, np.ones(5), 1.0, source).shape == (5,)
    assert release(strategy, np.ones((3, 5)), 1.0, source).shape == (3, 5)
    ranges = np.triu(np.ones((4, 4)))  # [i, 4) for i = 0..3
    assert np.allclose(laplace_strategy(4).expected_squared_errors(ranges, 0.5),
                       2 / 0.25 * np.array([4, 3, 2, 1]))


def test_invalid_arguments():
    gram = random_gram(4, 0)
    for bad in [dict(gram=np.ones((2, 3))), dict(gram=gram, branching=1),
                dict(gram=gram, grid=0), dict(gram=gram, objective="code"),
                dict(gram=gram, groups=np.zeros(3, int)),
                dict(gram=np.full((2, 2), np.nan))]:
        with pytest.raises(InputError):
            greedy_strategy(**bad)
    with pytest.raises(InputError):
        uniform_strategy(0)
    strategy = greedy_strategy(gram)
    with pytest.raises(InputError):
        measure(strategy, np.ones(3), 1.0, NoiseSource(seed=0), stage=UNIT_MEASUREMENT)
    with pytest.raises(InputError):
        least_squares(strategy, np.ones(strategy.lo.size + 1))
    with pytest.raises(BudgetError):
        measure(strategy, np.ones(4), 0.0, NoiseSource(seed=0), stage=UNIT_MEASUREMENT)
    with pytest.raises(BudgetError):
        strategy.expected_squared_errors(np.ones((1, 4)), -1.0)


# --- batches ---------------------------------------------------------------------------------

def small_integer_w_hats(r: int, m: int, k: int, seed: int) -> np.ndarray:
    """r small-integer W-hats (r, m, k), adjacent columns often equal (collapsed nodes)."""
    rng = np.random.default_rng(seed)
    out = np.empty((r, m, k))
    for i in range(r):
        distinct = rng.integers(0, 3, size=(m, int(rng.integers(1, k + 1))))
        out[i] = distinct[:, np.sort(rng.integers(0, distinct.shape[1], size=k))]
    return out


@pytest.mark.parametrize("k, branching, objective", [(1, 2, "paper"), (7, 2, "paper"),
                                                     (13, 3, "paper"), (9, 2, "reference")])
def test_a_batch_equals_its_strategies_one_by_one(k, branching, objective):
    w_hats = small_integer_w_hats(6, 5, k, seed=k)
    grams = np.matmul(w_hats.transpose(0, 2, 1), w_hats)
    groups = np.stack([exact_groups(w) for w in w_hats])
    batch = greedy_strategies(grams, branching, groups=groups, objective=objective)
    for i in range(6):
        one = greedy_strategy(grams[i], branching, groups=groups[i], objective=objective)
        unit = batch.unit(i)
        assert np.array_equal(unit.lo, one.lo) and np.array_equal(unit.hi, one.hi)
        assert relative_gap(unit.weights, one.weights) < 1e-12
        assert relative_gap(unit.inverse, one.inverse) < 1e-12


def test_batch_release_is_unbiased_with_each_strategys_covariance():
    """Rows measured with different strategies of one batch (prefixes: a tree; identity:
    the cells, twice the variance per bucket): the mean is the truth and the variance of every
    bucket estimate is (2/epsilon^2) inverse_ii of the row's own strategy."""
    k, epsilon, draws = 32, 0.5, 20_000
    prefixes = prefix_ranges(k).bucket_matrix(np.arange(k + 1))
    batch = greedy_strategies(np.stack([prefixes.T @ prefixes, np.eye(k)]))
    assert np.diag(batch.inverse[0]).max() > 1.5 * np.diag(batch.inverse[1]).max()
    truth = np.random.default_rng(2).integers(0, 50, k).astype(float)
    which = np.arange(2 * draws) % 2
    estimates = release_batch(batch, np.tile(truth, (2 * draws, 1)), which, epsilon,
                              NoiseSource(seed=4), max_cells=500 * k * k)  # in chunks
    for i in range(2):
        rows = estimates[which == i]
        variance = 2 / epsilon**2 * np.diag(batch.inverse[i])
        assert (np.abs(rows.mean(axis=0) - truth) < 5 * np.sqrt(variance / draws)).all()
        # sd of a sample variance: sigma^2 sqrt((kurtosis - 1) / n), kurtosis <= 6 (Laplace)
        assert (np.abs(rows.var(axis=0) - variance) < 5 * variance * np.sqrt(5 / draws)).all()
    exact = release_batch(batch, np.tile(truth, (2, 1)), np.arange(2), 1e12,
                          NoiseSource(seed=0))
    assert np.allclose(exact, truth, atol=1e-6)


# --- property test ---------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.integers(1, 12), st.integers(2, 4), st.sampled_from(["paper",
                                                                                   "reference"]),
       st.integers(0, 2**32 - 1))
def test_random_workloads_give_valid_strategies(m, k, branching, objective, seed):
    """Small integer W-hat (so that equal columns happen): column sums 1, the inverse equals
    the pseudo-inverse of A^T A, and the estimate is the minimum-norm least-squares fit."""
    rng = np.random.default_rng(seed)
    distinct = rng.integers(0, 3, size=(m, int(rng.integers(1, k + 1))))
    w_hat = distinct[:, np.sort(rng.integers(0, distinct.shape[1], size=k))].astype(float)
    strategy = greedy_strategy(w_hat.T @ w_hat, branching, groups=exact_groups(w_hat),
                               objective=objective)
    assert np.abs(strategy.column_sums() - 1.0).max() < 1e-12
    a = dense(strategy)
    assert relative_gap(strategy.inverse, np.linalg.pinv(a.T @ a)) < 1e-7
    answers = rng.normal(size=strategy.lo.size)
    fit = np.linalg.lstsq(a, answers, rcond=None)[0]
    assert relative_gap(least_squares(strategy, answers), fit) < 1e-7

"""Data-independent baselines for range queries over an ordered histogram, batched over rows.

Every estimator takes histograms ``x`` of shape (n,) or (r, n) (r independent histograms, e.g.
the age histograms of all municipalities of one level) and returns real-valued estimates of
the same shape: they may be negative, and nothing is rounded. Their error does not depend on
the data. All take ``stage`` (keyword, no default): the measuring stage of the mechanism's
privacy plan (`hierdp_core.mechanisms.ranges`), which states the L1 sensitivity of one
histogram (Privelet: of one group of weighted coefficients) under the neighbouring relation
and gives the noise at its exact scale for each epsilon spent (`Stage.noise_for`). A secure
source on the hierdp backend draws exact discrete Laplace of the same scale (rounded up) on
the integer counts, totals, node counts and weighted Haar coefficients (`secure_measure`),
its loss computed from the rational sampled; OpenDP's backend maps its continuous Laplace.

Privacy. Neighbouring inputs differ by adding or removing one record, so one cell of one
histogram changes by 1 (spec section 3). Every method is pure epsilon-DP for each histogram,
with Laplace noise. Rows are independent histograms: how rows compose (parallel for disjoint
units, sequential for nested levels) is the caller's accounting.

* Identity: ``x + Laplace(1/epsilon)`` on every cell (L1 sensitivity 1).
* Uniform (the DPBench baseline; Hay et al., "Principled evaluation of differentially private
  algorithms using DPBench", SIGMOD 2016): the total with Laplace(1/epsilon) (sensitivity 1),
  spread evenly over the n cells.
* H_b trees (Hay, Rastogi, Miklau & Suciu, "Boosting the accuracy of differentially private
  histograms through consistency", PVLDB 3(1), 2010). The complete b-ary tree of height
  h = ceil(log_b n) over b^h cells, cut to the nodes that cover at least one real cell: the
  padding cells are public zeros, so they are neither measured nor estimated. A record lies in
  exactly one node per level, so every level has sensitivity 1. Level l gets
  ``epsilon_l = w_l * epsilon`` with ``sum w_l = 1`` (sequential composition over the levels)
  and Laplace(1/epsilon_l) on each node count. Generalised (variance-weighted) least squares
  over the tree follows (`hierdp_core.consistency.least_squares.tree_least_squares`: Hay et
  al.'s two passes, with per-level variances); it is post-processing. H2 is b = 2 with the
  budget split evenly over the h + 1 levels, root included.
* HB (Qardaji, Yang & Li, "Understanding hierarchical methods for differentially private
  histograms", PVLDB 6(14), 2013). The tree whose branching b minimises their average
  range-query variance, Eq. 3, ``V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3`` with
  h = ceil(log_b n), over b in 2..n. The formula and the search range are as DPBench's HB uses
  them; the paper's own text was not checked. The h^2 factor is (h levels at epsilon/h each)
  squared, and DPBench's HB leaves the root out, so here the h levels below the root get
  epsilon/h each and the root is not measured. For a small domain the minimum is b = n: one
  level of n cells, i.e. Identity. The age domain, n = 101, is such a case; n = 4096 gives
  b = 16.
* Privelet (Xiao, Wang & Gehrke, "Differential privacy via wavelet transforms", ICDE 2010;
  TKDE 23(8), 2011), 1-D Haar wavelet. Pad to N = 2^h cells. The base coefficient is the mean,
  with weight W = N. Each tree node over s cells has the detail coefficient
  ``(mean of left half - mean of right half) / 2``, with weight W = s. One record moves the
  base by 1/N and one detail per level by 1/s, so the weighted coefficients move by at most
  1 + log2 N in L1 (the generalised sensitivity): each of the 1 + log2 N groups of weighted
  coefficients (W c) moves by at most 1. Laplace(lambda / W) on each coefficient with
  ``lambda = (1 + log2 N) / epsilon`` (the plan's stage in 1 + log2 N parts: epsilon / (1 +
  log2 N) per group) is therefore epsilon-DP. The original paper states 2x
  for "change one tuple"; spec section 8 item 30 asks for add/remove throughout. The
  coefficients are inverted without least squares.

`BASELINES` maps each key to (estimator, display name, summary, privacy statement); `REFERENCES`
maps it to the paper.

Example
-------
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> x = np.array([[3.0, 0.0, 5.0, 1.0, 2.0]])
>>> from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, Stage
>>> stage = Stage("measurement", ADD_REMOVE_PERSON, 1.0, "laplace", 1.0)
>>> est = tree_estimate(x, 1e9, NoiseSource(seed=1), branching=3,
...                     stage=stage)  # almost no noise
>>> est.shape, bool(np.allclose(est, x))
((1, 5), True)
>>> hb_branching(101), hb_branching(4096)
(101, 16)
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.errors import BudgetError, InputError, MechanismError
from hierdp_core.hierarchy import Hierarchy, build_from_codes
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Laplace, NoiseSource
from hierdp_core.ranges.secure_measure import exact_backend, laplace_measure

# ---- shared checks ---------------------------------------------------------------------------


def _as_rows(x) -> tuple[np.ndarray, bool]:
    """``x`` as float rows (r, n), and whether it came as a single histogram (n,)."""
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise InputError(f"expected histograms of shape (n,) or (r, n) with n >= 1, got "
                         f"shape {x.shape}")
    return np.atleast_2d(x), x.ndim == 1


def _shaped_like_input(rows: np.ndarray, single: bool) -> np.ndarray:
    return rows[0] if single else rows


def _check_epsilon(epsilon: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise BudgetError(f"epsilon must be positive and finite, got {epsilon}")


def _check_branching(branching: int) -> None:
    if not (isinstance(branching, int | np.integer) and branching >= 2):
        raise MechanismError(f"the branching factor must be an integer >= 2, got {branching!r}")


def _measure(values: np.ndarray, stage: Stage, epsilon: float, source: NoiseSource,
             label: str) -> tuple[np.ndarray, Laplace]:
    """``values`` plus the plan's noise for spending ``epsilon`` (`Stage.noise_for`; exact
    discrete Laplace on the hierdp secure backend, `laplace_measure`); their privacy loss at
    the stage's L1 sensitivity is checked against epsilon. Returns (values, the noise used)."""
    noise = stage.noise_for(epsilon)
    return laplace_measure(values, noise, source, sensitivity=stage.sensitivity,
                           budget=epsilon, label=label), noise


# ---- Identity and Uniform --------------------------------------------------------------------


def identity_estimate(x, epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """The plan's Laplace(sensitivity/epsilon) on every cell (``stage``: the measuring stage,
    whose sensitivity is the histogram's, 1 under add/remove one record)."""
    rows, single = _as_rows(x)
    _check_epsilon(epsilon)
    noisy, _ = _measure(rows, stage, epsilon, source, "ranges: identity cells")
    return _shaped_like_input(noisy, single)


def uniform_estimate(x, epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """The total with the plan's Laplace(sensitivity/epsilon), spread evenly over the cells
    (the total's L1 sensitivity is the histogram's, the measuring ``stage``'s)."""
    rows, single = _as_rows(x)
    _check_epsilon(epsilon)
    r, n = rows.shape
    noisy_total, _ = _measure(rows.sum(axis=1), stage, epsilon, source,
                              "ranges: uniform totals")
    return _shaped_like_input(np.repeat((noisy_total / n)[:, None], n, axis=1), single)


uniform_estimate.one_bucket = True  # its output is one bucket per row: the whole domain


# ---- trees: H2, H_b, HB ----------------------------------------------------------------------


def tree_height(n: int, branching: int) -> int:
    """The smallest h with ``branching**h >= n`` (0 for a single cell)."""
    height, width = 0, 1
    while width < n:
        height, width = height + 1, width * branching
    return height


@lru_cache(maxsize=64)
def b_ary_tree(n: int, branching: int) -> Hierarchy:
    """The complete b-ary tree over n ordered cells (height h = `tree_height`, n >= 2), cut to
    the nodes covering at least one cell. Node j of level l (root: l = 0) covers cells
    ``j * b**(h - l)`` to ``(j + 1) * b**(h - l) - 1``. Nodes are numbered level by level,
    left to right, and the leaves are the cells in order."""
    height = tree_height(n, branching)
    cells = np.arange(n)
    codes = [cells // branching ** (height - level) for level in range(1, height + 1)]
    tree, _ = build_from_codes(codes, [f"level {level}" for level in range(1, height + 1)],
                               root_name="all cells")
    return tree


def level_shares(height: int, level_weights=None) -> np.ndarray:
    """Each level's share of epsilon, root first: ``level_weights`` (relative, non-negative,
    leaf level positive) normalised to sum to 1, so the tree always spends exactly epsilon;
    uniform over the height + 1 levels when None. A level with share 0 is not measured."""
    if level_weights is None:
        return np.full(height + 1, 1.0 / (height + 1))
    weights = np.asarray(level_weights, dtype=float)
    if (weights.shape != (height + 1,) or not np.isfinite(weights).all()
            or (weights < 0).any() or weights[-1] <= 0):
        raise BudgetError(f"a tree of height {height} needs {height + 1} finite non-negative "
                          f"level weights (root first, leaf weight positive), got "
                          f"{weights.tolist()}")
    return weights / weights.sum()


def measure_tree(tree: Hierarchy, rows: np.ndarray, level_epsilons, source: NoiseSource, *,
                 stage: Stage) -> tuple[np.ndarray, np.ndarray]:
    """The plan's Laplace(sensitivity/epsilon_l) on every node count of level l (a record is
    in one node per level, so each level has the histogram's L1 sensitivity, the measuring
    ``stage``'s). Histograms are columns.
    Returns the noisy node counts (n_nodes, r) and each level's noise variance. A level with
    epsilon_l = 0 is not measured: its variance is inf and its entries are 0."""
    noisy = tree.aggregate(rows.T).astype(float)  # noise is continuous: never truncated
    variance = np.full(tree.n_levels, np.inf)
    for level, level_epsilon in enumerate(level_epsilons):
        nodes = tree.level_slice(level)
        if level_epsilon > 0:
            noisy[nodes], noise = _measure(noisy[nodes], stage, level_epsilon, source,
                                           f"ranges: tree level {level}")
            variance[level] = noise.variance
        else:
            noisy[nodes] = 0.0
    return noisy, variance


def tree_least_squares_leaves(tree: Hierarchy, noisy: np.ndarray,
                              level_variance: np.ndarray) -> np.ndarray:
    """Generalised least-squares cell estimates (r, n) from noisy node counts (n_nodes, r)
    with per-level noise variances (inf: the level was not measured)."""
    nodes = tree_least_squares(tree, noisy, level_variance)
    return np.ascontiguousarray(nodes[tree.level_slice(tree.depth)].T)


def tree_estimate(x, epsilon: float, source: NoiseSource, branching: int = 2,
                  level_weights=None, *, stage: Stage) -> np.ndarray:
    """H_b: noisy counts of every node of the b-ary tree over the cells (level l with
    Laplace(sensitivity/(w_l epsilon))), then generalised least squares; returns the cells.
    ``level_weights``: one relative weight per level, root first (see `level_shares`).
    ``stage``: the measuring stage of the mechanism's privacy plan (its noise and scale)."""
    rows, single = _as_rows(x)
    _check_epsilon(epsilon)
    _check_branching(branching)
    n = rows.shape[1]
    shares = level_shares(tree_height(n, branching), level_weights)
    if n == 1:  # the single cell is root and leaf at once
        return identity_estimate(x, epsilon, source, stage=stage)
    tree = b_ary_tree(n, branching)
    noisy, variance = measure_tree(tree, rows, epsilon * shares, source, stage=stage)
    return _shaped_like_input(tree_least_squares_leaves(tree, noisy, variance), single)


def h2_estimate(x, epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """H2: the binary tree with epsilon split evenly over its levels, root included."""
    return tree_estimate(x, epsilon, source, branching=2, stage=stage)


def hb_variance_bound(n: int, branching: int) -> float:
    """Qardaji et al.'s Eq. 3, the average range-query variance of H_b up to a constant
    factor: ``(b - 1) h^3 - 2 (b + 1) h^2 / 3`` with h = ceil(log_b n)."""
    h = tree_height(n, branching)
    return (branching - 1) * h**3 - 2 * (branching + 1) * h**2 / 3


def _smallest_branching_of_height(n: int, height: int) -> int:
    """The smallest b >= 2 with ``b**height >= n`` (the integer ceiling of n^(1/height))."""
    b = max(2, round(n ** (1.0 / height)))
    while b**height < n:
        b += 1
    while b > 2 and (b - 1) ** height >= n:
        b -= 1
    return b


def hb_branching(n: int) -> int:
    """Qardaji et al.'s branching for a domain of n cells: the b in 2..n minimising
    `hb_variance_bound` (their Eq. 3), ties to the smaller b. At a fixed height the bound
    grows with b, so only the smallest b of each height h = 1..ceil(log2 n) can be the
    minimum: O(log n) evaluations instead of n."""
    if n <= 2:
        return 2
    candidates = {_smallest_branching_of_height(n, h) for h in range(1, tree_height(n, 2) + 1)}
    return min(candidates, key=lambda b: (hb_variance_bound(n, b), b))


def hb_level_shares(height: int) -> np.ndarray:
    """Qardaji et al.'s split: epsilon/h to each of the h levels below the root, and nothing
    to the root (a single cell, h = 0, is the root and gets everything)."""
    if height == 0:
        return np.ones(1)
    return np.concatenate([[0.0], np.full(height, 1.0 / height)])


def hb_estimate(x, epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """HB: the tree with Qardaji et al.'s branching for the domain size, root not measured."""
    n = _as_rows(x)[0].shape[1]
    branching = hb_branching(n)
    return tree_estimate(x, epsilon, source, branching=branching,
                         level_weights=hb_level_shares(tree_height(n, branching)),
                         stage=stage)


# ---- Privelet --------------------------------------------------------------------------------


def haar_coefficients(rows: np.ndarray) -> list[np.ndarray]:
    """Privelet's Haar transform of rows (r, 2^h), coarse to fine: the base (r, 1) = the
    mean, then for each level l = 0..h-1 the details (r, 2^l) = (mean of the node's left half
    - mean of its right half) / 2."""
    means, details = rows, []
    while means.shape[1] > 1:
        pairs = means.reshape(means.shape[0], -1, 2)
        details.append((pairs[:, :, 0] - pairs[:, :, 1]) / 2)
        means = pairs.mean(axis=2)
    return [means, *details[::-1]]


def haar_cells(coefficients: list[np.ndarray]) -> np.ndarray:
    """The inverse of `haar_coefficients`: a node's left half has mean (mean + detail), its
    right half (mean - detail)."""
    means = coefficients[0]
    for detail in coefficients[1:]:
        means = np.stack([means + detail, means - detail], axis=2).reshape(means.shape[0], -1)
    return means


def privelet_weights(height: int) -> np.ndarray:
    """Xiao et al.'s weight W of each coefficient group of `haar_coefficients` over 2^h cells:
    2^h for the base, then 2^(h - l) (the cells under a node) for the details of level l."""
    return 2.0 ** np.concatenate([[height], np.arange(height, 0, -1)])


def privelet_estimate(x, epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """Privelet: Laplace(lambda / W) on every Haar coefficient of the zero-padded histogram,
    then the inverse transform. ``stage``: the plan's measurement, whose sensitivity is that
    of one group of weighted coefficients (W c) and whose noise for epsilon in 1 + log2 N
    parts is Laplace(lambda), lambda = (1 + log2 N) / epsilon (`Stage.noise_for`); a group's
    coefficients c get it divided by W, mapped at sensitivity / W against epsilon / (1 +
    log2 N). On the hierdp secure backend each group's integer W c gets exact discrete
    Laplace of scale >= lambda (loss at most epsilon / (1 + log2 N), its own ledger entry),
    then is divided by W."""
    rows, single = _as_rows(x)
    _check_epsilon(epsilon)
    r, n = rows.shape
    height = tree_height(n, 2)
    padded = np.zeros((r, 2**height))
    padded[:, :n] = rows
    weighted = stage.noise_for(epsilon, parts=1 + height)
    share, label = epsilon / (1 + height), "ranges: privelet Haar coefficients"
    groups = zip(haar_coefficients(padded), privelet_weights(height), strict=True)
    if exact_backend(source):  # W c is an integer: exact noise on it, then divided by W
        noisy = [laplace_measure(c * w, weighted, source, sensitivity=stage.sensitivity,
                                 budget=share, label=f"{label}, group {i} (W = {w:g})") / w
                 for i, (c, w) in enumerate(groups)]
    else:
        noisy = [replace(weighted, scale=weighted.scale / w).apply(
                     c, source, sensitivity=float(stage.sensitivity / w), budget=share,
                     label=label) for c, w in groups]
    return _shaped_like_input(haar_cells(noisy)[:, :n], single)


# ---- registry --------------------------------------------------------------------------------

_NEIGHBOURS = "add/remove one record: one cell of one histogram changes by 1"
BASELINES = {
    "identity": (identity_estimate, "Identity",
                 "Laplace noise on every cell; range answers add the noisy cells.",
                 f"{_NEIGHBOURS}; every cell has L1 sensitivity 1 and gets Laplace(1/epsilon); "
                 "epsilon-DP per histogram"),
    "uniform": (uniform_estimate, "Uniform",
                "one noisy total spread evenly over the cells (accurate only on flat data).",
                f"{_NEIGHBOURS}; the total has L1 sensitivity 1 and gets Laplace(1/epsilon); "
                "spreading it evenly is post-processing; epsilon-DP per histogram"),
    "h2": (h2_estimate, "H2",
           "noisy counts on a binary tree of ranges, made consistent by least squares.",
           f"{_NEIGHBOURS}; a record is in one node per level of the binary tree, so each of "
           "the h + 1 levels has L1 sensitivity 1 and gets epsilon/(h + 1) with Laplace noise; "
           "sequential composition over the levels gives epsilon per histogram; least squares "
           "is post-processing"),
    "hb": (hb_estimate, "HB",
           "noisy counts on a tree of ranges whose branching is chosen from the domain size, "
           "then least squares.",
           f"{_NEIGHBOURS}; branching b from the public domain size only; a record is in one "
           "node per level, so each of the h levels below the (unmeasured) root has L1 "
           "sensitivity 1 and gets epsilon/h with Laplace noise; sequential composition gives "
           "epsilon per histogram; least squares is post-processing"),
    "privelet": (privelet_estimate, "Privelet",
                 "noisy Haar wavelet coefficients, then the inverse transform.",
                 f"{_NEIGHBOURS}; one record moves the weighted Haar coefficients by at most "
                 "1 + log2 N in L1, their generalised sensitivity (N = n padded to a power of "
                 "2; weight N for the base, s for a node over s cells); Laplace((1 + log2 N)/"
                 "(epsilon W)) per coefficient is epsilon-DP per histogram; the inverse "
                 "transform is post-processing"),
}
REFERENCES = {
    "identity": "Dwork, McSherry, Nissim & Smith (2006), Calibrating noise to sensitivity in "
                "private data analysis, TCC",
    "uniform": "Hay, Machanavajjhala, Miklau, Chen & Zhang (2016), Principled evaluation of "
               "differentially private algorithms using DPBench, SIGMOD",
    "h2": "Hay, Rastogi, Miklau & Suciu (2010), Boosting the accuracy of differentially "
          "private histograms through consistency, PVLDB 3(1)",
    "hb": "Qardaji, Yang & Li (2013), Understanding hierarchical methods for differentially "
          "private histograms, PVLDB 6(14)",
    "privelet": "Xiao, Wang & Gehrke (2010), Differential privacy via wavelet transforms, ICDE "
                "(TKDE 23(8), 2011)",
}

"""DAWA Alg. 2's recursion in closed form: each tree node's weight fraction lambda, chosen by
a caller-given `Chooser`, and the least-squares inverse M of the root, built children first
without inverting any k x k matrix.

The paper's Eq. 17-20 are wrong (the Woodbury term lacks a (1-lambda)^-2 factor); this module
uses the corrected form of spec section 2.3.3, checked against brute-force inverses in the
tests. With, for the children c of q, ``M_c = (Y_c^T D_c^2 Y_c)^-1``, ``v = concat(M_c 1)``,
``K = sum_c 1^T M_c 1``, ``S`` = the sum of the children's errors, ``m_full = v^T G_q v``,
``m_blk = sum_c v_c^T G_cc v_c`` and ``B = mu m_full + (1-mu) m_blk``::

    Obj_q(lambda) = (1-lambda)^-2 [S - B lambda^2 / ((1-lambda)^2 + lambda^2 K)]
    M_q           = (1-lambda)^-2 [blockdiag(M_c) - lambda^2 / ((1-lambda)^2 + lambda^2 K) v v^T]

with the decay ``mu = t^(-depth/2)`` (root depth 0). A node whose buckets all have equal W-hat
columns (``groups``) is asked once with weight 1 and not split: its block of M is the
pseudo-inverse 1 1^T / s^2, so least squares spreads its total evenly (the minimum-norm fit).
The nodes of a level that have equal sizes are processed together with numpy (one batch, plus
the smaller last node), for r strategies at once (a leading axis r), so time and memory are
O(k^2) per strategy, the size of the dense root inverse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hierdp_core.ranges.strategy_tree import Tree, collapsed_nodes

# --- the closed form (spec 2.3.3) --------------------------------------------------------

def lambda_objective(lam, error_sum, quad, kappa, nu=1.0):
    """(1-lam)^-2 [S - quad nu lam^2 / ((1-lam)^2 + nu lam^2 K)], broadcast over all arguments.

    With quad = B and nu = 1 it is the paper's Obj_q; with quad = m_full and nu = 1 the exact
    error tr(G_q M_q); with nu = mu the authors' code objective (decay applied twice)."""
    lam2 = nu * lam**2
    return (error_sum - quad * lam2 / ((1 - lam) ** 2 + lam2 * kappa)) / (1 - lam) ** 2


def _woodbury_factors(lam, kappa):
    """(1-lam)^-2 and lam^2 / ((1-lam)^2 + lam^2 K): M_q = first * (blockdiag - second v v^T)."""
    lam, kappa = np.asarray(lam, dtype=float), np.asarray(kappa, dtype=float)
    return (1 - lam) ** -2.0, lam**2 / ((1 - lam) ** 2 + lam**2 * kappa)


def woodbury_regular(children: np.ndarray, v: np.ndarray, lam, kappa) -> np.ndarray:
    """M_q of parents with t equal children each: children (..., t, s, s), v (..., t*s),
    lam and kappa (...), for any leading batch shape."""
    t, s = children.shape[-3], children.shape[-1]
    scale, coef = _woodbury_factors(lam, kappa)
    out = (-coef)[..., None, None] * v[..., :, None] * v[..., None, :]
    blocks = out.reshape(*out.shape[:-2], t, s, t, s)
    for i in range(t):
        blocks[..., i, :, i, :] += children[..., i, :, :]
    out *= scale[..., None, None]
    return out


def woodbury_single(children: list[np.ndarray], v: np.ndarray, lam, kappa) -> np.ndarray:
    """M_q of a parent whose children (square blocks (..., s_i, s_i)) may differ in size:
    v (..., sum of sizes), lam and kappa (...)."""
    scale, coef = _woodbury_factors(lam, kappa)
    out = -coef[..., None, None] * v[..., :, None] * v[..., None, :]
    start = 0
    for block in children:
        stop = start + block.shape[-1]
        out[..., start:stop, start:stop] += block
        start = stop
    out *= scale[..., None, None]
    return out

# --- one level of the recursion, for r strategies at once -------------------------------------

@dataclass
class _Level:
    """The nodes of one level, for every strategy of the batch (leading axis r): their M
    blocks (the nodes of full size ``size`` stacked, (r, n, size, size); the smaller last node
    apart in ``tail``), v = M 1 (all nodes concatenated, (r, k)), and per node (r, n) K = 1^T M
    1, the error passed up, m = v^T G v, and the node's own weight fraction (lambda; 1 for
    leaves and collapsed nodes; 0 for a node moved up unchanged)."""

    size: int
    blocks: np.ndarray
    tail: np.ndarray | None
    v: np.ndarray
    kappa: np.ndarray
    error: np.ndarray
    quad: np.ndarray
    own: np.ndarray


@dataclass
class Parents:
    """What the closed form needs of a batch of parents (arrays (r, parents))."""

    error_sum: np.ndarray
    kappa: np.ndarray
    m_full: np.ndarray
    m_blk: np.ndarray


#: choose(parents, level, top) -> (lambda, error passed up), arrays (r, parents); ``top``:
#: the highest level at which each parent still appears (`Tree.top`)
Chooser = Callable[[Parents, int, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _leaves(diag: np.ndarray | None, r: int, k: int) -> _Level:
    ones = np.ones((r, k))
    values = np.zeros((r, k)) if diag is None else diag
    return _Level(1, np.ones((r, k, 1, 1)), None, ones.copy(), ones.copy(), values.copy(),
                  values.copy(), ones)


def _block_quads(gram: np.ndarray | None, v: np.ndarray, start: int) -> np.ndarray:
    """v_i^T G_ii v_i for the n consecutive diagonal blocks of G from ``start`` on: gram
    (r, k, k), v (r, n, S) -> (r, n)."""
    r, n, size = v.shape
    if gram is None or n == 0:
        return np.zeros((r, n))
    stop = start + n * size
    blocks = gram[:, start:stop, start:stop].reshape(r, n, size, n, size)
    diagonal = np.einsum("riaib->riab", blocks)  # a view: the (S, S) blocks on the diagonal
    return np.einsum("ria,ria->ri", np.einsum("riab,rib->ria", diagonal, v), v)


def _parents(below: _Level, first: int, stop: int, per_parent: int, m_full) -> Parents:
    """Statistics of the parents of nodes first..stop-1 of ``below``, ``per_parent`` each."""
    def summed(values):
        return values[:, first:stop].reshape(values.shape[0], -1, per_parent).sum(axis=2)
    return Parents(summed(below.error), summed(below.kappa), m_full, summed(below.quad))


def _made(parents: Parents, lam: np.ndarray, error: np.ndarray, v: np.ndarray):
    """v, K, error, m and own fraction of new parents (v (r, n, S) of their children): with
    d = (1-lam)^2 + lam^2 K, M_q 1 = v / d, 1^T M_q 1 = K / d and v_q^T G v_q = m_full / d^2."""
    d = (1 - lam) ** 2 + lam**2 * parents.kappa
    return ((v / d[..., None]).reshape(v.shape[0], -1), parents.kappa / d, error,
            parents.m_full / d**2, lam)


def _next_level(below: _Level, gram, tree: Tree, level: int, choose: Chooser) -> _Level:
    """The nodes of ``level`` (>= 1) from those of the level below."""
    t, s = tree.branching, below.size
    r, n_blocks = below.blocks.shape[:2]
    n_regular = n_blocks // t
    cut, width = n_regular * t, n_regular * t * s
    # parents of t full-size children, all at once
    v_regular = below.v[:, :width].reshape(r, n_regular, t * s)
    parents = _parents(below, 0, cut, t, _block_quads(gram, v_regular, 0))
    lam, error = choose(parents, level, tree.top[level][:n_regular])
    blocks = woodbury_regular(below.blocks[:, :cut].reshape(r, n_regular, t, s, s), v_regular,
                               lam, parents.kappa)
    columns = [_made(parents, lam, error, v_regular)]
    # the last parent, of the remaining (fewer or smaller) children
    rest = [below.blocks[:, i] for i in range(cut, n_blocks)]
    rest += [] if below.tail is None else [below.tail]
    tail = rest[0] if len(rest) == 1 else None
    if len(rest) == 1:  # a single node moves up unchanged, not asked again
        columns.append((below.v[:, width:], below.kappa[:, -1:], below.error[:, -1:],
                        below.quad[:, -1:], np.zeros((r, 1))))
    elif rest:
        v_last = below.v[:, None, width:]
        parents = _parents(below, cut, below.kappa.shape[1], len(rest),
                           _block_quads(gram, v_last, width))
        lam, error = choose(parents, level, tree.top[level][-1:])
        tail = woodbury_single(rest, v_last[:, 0], lam[:, 0], parents.kappa[:, 0])
        columns.append(_made(parents, lam, error, v_last))
    v, kappa, errors, quads, own = (np.concatenate(c, axis=1)
                                    for c in zip(*columns, strict=True))
    return _Level(t * s, blocks, tail, v, kappa, errors, quads, own)


def _collapse(nodes: _Level, edges: np.ndarray, collapsed: np.ndarray, diag) -> None:
    """Turn the collapsed nodes ((r, n) mask) into single queries of weight 1: M = 1 1^T / s^2
    (the pseudo-inverse), v = 1/s, K = 1, error = m = G_ii (their W-hat columns are equal)."""
    if not collapsed.any():
        return
    lo, sizes = edges[:-1], np.diff(edges)
    nodes.blocks[collapsed[:, : nodes.blocks.shape[1]]] = 1.0 / nodes.size**2
    if nodes.tail is not None:
        nodes.tail[collapsed[:, -1]] = 1.0 / sizes[-1] ** 2
    spread = np.repeat(collapsed, sizes, axis=1)
    nodes.v[spread] = np.broadcast_to(np.repeat(1.0 / sizes, sizes), spread.shape)[spread]
    nodes.kappa[collapsed] = 1.0
    value = np.zeros(collapsed.shape) if diag is None else diag[:, lo]
    nodes.error[collapsed] = value[collapsed]
    nodes.quad[collapsed] = value[collapsed]
    nodes.own[collapsed] = 1.0


def solve_tree(tree: Tree, gram, choose: Chooser, groups, r: int):
    """Run the recursion for r strategies: each level's own weight fractions (r, n), and M
    of the root (r, k, k)."""
    collapsed = collapsed_nodes(tree, groups, r)
    diag = None if gram is None else np.einsum("rii->ri", gram)
    nodes = _leaves(diag, r, tree.edges[0][-1])
    own = [nodes.own]
    for level in range(1, tree.height + 1):
        nodes = _next_level(nodes, gram, tree, level, choose)
        _collapse(nodes, tree.edges[level], collapsed[level] & tree.made[level], diag)
        own.append(nodes.own)
    root = nodes.blocks[:, 0] if nodes.blocks.shape[1] else nodes.tail
    return own, root


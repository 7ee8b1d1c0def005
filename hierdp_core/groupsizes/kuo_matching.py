"""Phase 3 of Kuo et al.'s Algorithm 1, per level: the optimal matching of a parent's groups
with its children's (Algorithm 2, paper sec. 5.2, spec ``shared/specs/group-sizes-kuo.md``
sec. 2.5) and the merge of every matched pair (paper sec. 5.3, spec sec. 2.6).

Contract: `match_level` pairs the ranked groups (`Runs`) of every parent of a level with
those of its children (the k-th smallest parent group with the k-th smallest of the union
of its children's), as `Pairs`; `merge_level` merges each pair into the child (a
variance-weighted or simple average, rounded) and returns the children's updated runs.
`match_groups` and `merge_estimates` are the same steps on explicit values (teaching,
tests). `kuo.kuo_hierarchical` runs them top-down. Post-processing only (no privacy cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.kuo_runs import Runs, _check_choice, _coalesce, _round_half_up

MERGES = ("weighted", "simple")
TIE_SPLITS = ("proportional", "first_child")


@dataclass(frozen=True, eq=False)
class Pairs:
    """A matching in run-length form: ``count[k]`` groups of parent run ``parent_run[k]``
    are paired with as many groups of child run ``child_run[k]`` (indices into the parent
    level's and the child level's `Runs`)."""

    parent_run: np.ndarray
    child_run: np.ndarray
    count: np.ndarray


def _intersect(a_len: np.ndarray, b_len: np.ndarray):
    """Common refinement of two partitions of one line into consecutive pieces of positive
    lengths (same total): (index in a, index in b, length) of every piece, in order."""
    ea, eb = np.cumsum(a_len), np.cumsum(b_len)
    if ea.size == 0 and eb.size == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    if ea.size == 0 or eb.size == 0 or ea[-1] != eb[-1]:
        raise InputError("matching: the two sides have different numbers of groups")
    ends = np.concatenate([ea, eb])  # both increase: their union, sorted (np.union1d's
    ends.sort()  # hash of a level's 40,000 runs took 13 ms)
    ends = ends[np.append(True, ends[1:] != ends[:-1])]
    return (np.searchsorted(ea, ends), np.searchsorted(eb, ends),
            np.diff(ends, prepend=0).astype(np.int64))


def match_level(parent: Runs, children: Runs, child_parent: np.ndarray, *,
                tie_split: str = "proportional") -> Pairs:
    """Algorithm 2 (spec 2.5) for every parent of a level at once, on runs.

    ``child_parent[c]``: index (within the parent level) of child node c's parent; every
    parent's groups must equal the sum of its children's. The k-th smallest parent group
    is paired with the k-th smallest of the union of its children's groups (a monotone
    matching: optimal for the cost sum |x_parent - x_child|, Lemma 5). Which child gets a
    parent group when children tie on a value b follows the paper's proportional rule:
    going up the parent's ranked groups, each parent run A (groups of one value and one
    variance; runs of equal value are taken in stored order) is matched to the remaining
    tied set B; if |B| <= |A| all of B is matched, otherwise child c gets |A| n_c / |B| of
    them (n_c = its remaining tied groups), integerised by largest remainder with ties to
    the lower child index (footnote 8), and the leftovers go to the next parent run.
    Splitting A by variance is this implementation's deterministic instance of the
    paper's "arbitrary members of A" (no child is favoured for low-variance parent groups).
    Within one child, tied runs (same value, different variance) are used in stored order.
    ``tie_split="first_child"`` (a teaching toggle, pitfall 11) gives ties to the children
    in index order instead (a plain stable sort), which biases the allocation.

    Cost O(runs log runs) plus one vectorised pass per extra piece of the largest tied set
    (a set of tied child groups spanning k parent runs needs k - 1 proportional rounds).
    """
    _check_choice("tie_split", tie_split, TIE_SPLITS)
    child_parent = np.asarray(child_parent, dtype=np.int64)
    if child_parent.shape != (children.n_nodes,):
        raise InputError("child_parent needs one parent index per child node")
    pg = parent.groups()
    cg = np.bincount(child_parent, weights=children.groups(),
                     minlength=parent.n_nodes).astype(np.int64)
    if pg.shape != cg.shape or np.any(pg != cg):
        raise InputError("every parent must have as many groups as its children together "
                         "(G_v = sum of the children's G_c, pitfall 21)")
    run_parent = child_parent[children.node]
    co = np.lexsort((children.value, run_parent))  # stable: ties keep child order
    cp, cv, cn, cc = run_parent[co], children.value[co], children.node[co], children.count[co]
    nr = co.size
    tie_new = np.ones(nr, dtype=bool)
    tie_new[1:] = (cp[1:] != cp[:-1]) | (cv[1:] != cv[:-1])
    member_new = tie_new.copy()
    member_new[1:] |= cn[1:] != cn[:-1]
    tie_starts = np.flatnonzero(tie_new)
    member_starts = np.flatnonzero(member_new)
    tie_size = np.add.reduceat(cc, tie_starts) if nr else np.zeros(0, np.int64)
    member_size = np.add.reduceat(cc, member_starts) if nr else np.zeros(0, np.int64)
    member_tie = (np.cumsum(tie_new) - 1)[member_starts]
    # pieces: the parent's runs cut by the children's tied sets
    piece_run, piece_tie, piece_len = _intersect(parent.count, tie_size)
    if tie_split == "proportional":
        a_member, a_piece, a_count = _allocate(piece_tie, piece_len, member_tie, member_size,
                                               tie_size)
    else:  # both partition each tied set in order: children in index order meet pieces
        a_member, a_piece, a_count = _intersect(member_size, piece_len)
    order = np.lexsort((a_piece, a_member))
    a_member, a_piece, a_count = a_member[order], a_piece[order], a_count[order]
    ja, jc, length = _intersect(a_count, cc)
    return Pairs(piece_run[a_piece[ja]], co[jc], length)


def _allocate(piece_tie, piece_len, member_tie, member_size, tie_size):
    """Split every piece (a parent run's share of one tied set) among the tied set's
    children: proportional to each child's remaining tied groups with largest-remainder
    rounding, the tied set's last piece taking all that remains. Returns (member, piece,
    count) with count > 0."""
    n_pieces = np.bincount(piece_tie, minlength=tie_size.size)
    first_piece = np.cumsum(n_pieces) - n_pieces
    rem = member_size.copy()
    tie_rem = tie_size.copy()
    k_member = n_pieces[member_tie]
    by_k = np.argsort(-k_member, kind="stable")  # members of a tie stay together, in order
    k_sorted = k_member[by_k]
    out_m, out_p, out_c = [], [], []
    for r in range(int(n_pieces.max(initial=1)) - 1):
        act = by_k[:np.count_nonzero(k_sorted > r + 1)]
        t = member_tie[act]
        seg_start = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        seg = np.repeat(np.arange(seg_start.size), np.diff(np.append(seg_start, act.size)))
        ties = t[seg_start]
        piece = first_piece[ties] + r
        m = piece_len[piece]
        q, rr = np.divmod(m[seg] * rem[act], tie_rem[ties][seg])
        deficit = m - np.add.reduceat(q, seg_start)
        o = _by_largest_remainder(seg, rr)
        rank = np.empty(act.size, dtype=np.int64)
        rank[o] = np.arange(act.size) - seg_start[seg[o]]
        alloc = q + (rank < deficit[seg])
        rem[act] -= alloc
        tie_rem[ties] -= m
        keep = alloc > 0
        out_m.append(act[keep])
        out_p.append(piece[seg][keep])
        out_c.append(alloc[keep])
    last = np.flatnonzero(rem > 0)
    out_m.append(last)
    out_p.append((first_piece + n_pieces - 1)[member_tie[last]])
    out_c.append(rem[last])
    return (np.concatenate(out_m).astype(np.int64), np.concatenate(out_p).astype(np.int64),
            np.concatenate(out_c).astype(np.int64))


def _by_largest_remainder(seg: np.ndarray, rr: np.ndarray) -> np.ndarray:
    """The order of ``np.lexsort((np.arange(n), -rr, seg))`` (``seg`` non-decreasing, ``rr``
    >= 0): by tied set, remainders largest first, ties in place; one stable sort of a
    single key when it fits in int64 (a third of the lexsort's time)."""
    span = int(rr.max(initial=0)) + 1
    if seg.size and int(seg[-1]) < (1 << 62) // span:
        return np.argsort(seg * span + (span - 1 - rr), kind="stable")
    return np.lexsort((np.arange(rr.size), -rr, seg))


def match_groups(parent_sizes, children_sizes: Sequence, *,
                 tie_split: str = "proportional") -> list[np.ndarray]:
    """Algorithm 2 on explicit group lists of one parent (teaching, tests): for every child,
    the parent value matched to each of its groups, the child's groups in ascending order."""
    parent = np.sort(np.asarray(parent_sizes, dtype=float))
    kids = [np.sort(np.asarray(c, dtype=float)) for c in children_sizes]
    pv, pc = np.unique(parent, return_counts=True)
    p_runs = Runs(np.zeros(pv.size, np.int64), pv, np.ones(pv.size), pc.astype(np.int64), 1)
    parts = [np.unique(k, return_counts=True) for k in kids]
    node = np.concatenate([np.full(v.size, i, np.int64) for i, (v, _) in enumerate(parts)]
                          + [np.zeros(0, np.int64)])
    value = np.concatenate([v for v, _ in parts] + [np.zeros(0)])
    count = np.concatenate([c for _, c in parts] + [np.zeros(0, np.int64)]).astype(np.int64)
    c_runs = Runs(node, value, np.ones(node.size), count, len(kids))
    pairs = match_level(p_runs, c_runs, np.zeros(len(kids), np.int64), tie_split=tie_split)
    o = np.lexsort((pairs.parent_run, pairs.child_run))
    matched = np.repeat(pv[pairs.parent_run[o]], pairs.count[o])
    owner = np.repeat(node[pairs.child_run[o]], pairs.count[o])
    return [matched[owner == i] for i in range(len(kids))]


def merge_estimates(a, var_a, b, var_b, how: str = "weighted"):
    """Merge (spec 2.6) of a parent estimate ``a`` (variance ``var_a``) with a child's ``b``
    (``var_b``), elementwise; returns (value, variance), not rounded.

    ``"weighted"`` (default, Eq. 5-6): (var_b a + var_a b) / (var_a + var_b), variance
    var_a var_b / (var_a + var_b) (both 0: the plain average, variance 0). ``"simple"``: (a + b) / 2 with variance
    (var_a + var_b) / 4 (the paper gives no variance for it; this is the spec's guess).
    """
    _check_choice("merge", how, MERGES)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    va, vb = np.asarray(var_a, dtype=float), np.asarray(var_b, dtype=float)
    if how == "simple":
        return (a + b) / 2, (va + vb) / 4
    total = va + vb
    exact = total == 0  # both variances 0 (exact noise variance at a huge eps): average
    safe = np.where(exact, 1.0, total)
    value = np.where(exact, (a + b) / 2, (vb * a + va * b) / safe)
    return value, np.where(exact, 0.0, va * vb / safe)


def merge_level(parent: Runs, children: Runs, pairs: Pairs, *, merge: str = "weighted") -> Runs:
    """The children's updated runs: every matched pair merged (`merge_estimates`), the value
    rounded half up (pitfall 9: round after each merge), then re-sorted per child by
    (value, variance) carrying the variances (spec 2.4 step 5c)."""
    value, var = merge_estimates(parent.value[pairs.parent_run], parent.var[pairs.parent_run],
                                 children.value[pairs.child_run],
                                 children.var[pairs.child_run], merge)
    value = _round_half_up(value)
    node = children.node[pairs.child_run]
    order = np.lexsort((var, value, node))
    return _coalesce(node[order], value[order], var[order], pairs.count[order],
                     children.n_nodes)

"""Consistency of range releases over the workload's atoms, then the cells.

The atoms of a public workload are the runs of adjacent cells that no query tells apart (for
ranges: the cells between consecutive end points; for age bands 0-17, 18-64, 65-100 three
atoms). A workload-aware Stage 2 measures only the atoms' totals and spreads each one evenly
(or by the unit's private buckets) over its cells, so the estimates carry no information on
the shape of a unit's histogram inside an atom, and that arbitrary shape differs between a
parent and its children. TopDown cell by cell then meets, in every cell, a mismatch of the
size of the parent's flat-versus-curved error, shares it evenly among all children and clips
the small ones at zero: where the children's sum is short the villages gain, where it is over
they cannot lose, and the largest child pays (on the bundled Italian ages with the bands
0-17, 18-64, 65-100, Rome released about 70,000 too low and villages of 160 people as about
3,000).

`atom_topdown` makes the release consistent where the information is: (1) TopDown on the
atom totals (non-negative integers, every parent's atom total the sum of its children's);
(2) inside every atom, from the root down, each child's atom total is spread over the cells
in the proportions of its parent's (the root: of its own non-negative estimates), in real
numbers; (3) every leaf's cells are rounded by their cumulative sums, which keeps its atom
totals exactly, and every other node is the sum of its leaves. Every atom total is then the
one of step 1, and every parent histogram the sum of its children's. With one atom per cell
(prefixes, all ranges) it is exactly the core's TopDown. For a workload of sums of several
atoms (prefixes, ranges) the root's atom totals come from its estimates' cumulative sums
made non-decreasing (`cumulative_nonnegative`), not from each total clipped at 0.
Post-processing of the estimates and public parameters only.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> h, _ = build_hierarchy(pd.DataFrame({"r": ["N", "N"], "m": ["a", "b"]}), ["r", "m"])
>>> est = np.array([[12.0, 8.0, 1.0, 1.0], [12.0, 8.0, 1.0, 1.0], [5.0, 5.0, 0.0, 0.0],
...                 [-1.0, 9.0, 1.0, 1.0]])  # root, N, a, b; atoms: cells 0-1 and 2-3
>>> atom_topdown(h, est, est[0], np.array([0, 2])).tolist()  # a: 11 in atom 0, b: 9
[[12, 8, 1, 1], [12, 8, 1, 1], [7, 4, 0, 0], [5, 4, 1, 1]]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segments import project_segments
from hierdp_core.consistency.topdown import topdown
from hierdp_core.hierarchy import Hierarchy


def atom_topdown(hierarchy: Hierarchy, estimates: np.ndarray, root_estimate: np.ndarray,
                 starts: np.ndarray, cumulative: bool = False) -> np.ndarray:
    """Consistent non-negative integer histograms (n_nodes, n) from real estimates (n_nodes,
    n) and the root's estimate (n,), over the atoms beginning at ``starts`` (module doc).
    Many releases at once: estimates (T, n_nodes, n) and roots (T, n) give (T, n_nodes, n),
    each release's as it alone gives it (the releases side by side as columns, every step
    column by column or atom by atom). ``cumulative`` (a workload of sums of several atoms,
    `Workload.spans_atoms`): the root's atom totals are `cumulative_nonnegative`, not each
    clipped at 0."""
    if estimates.ndim == 2:
        return atom_topdown(hierarchy, estimates[None], root_estimate[None], starts,
                            cumulative)[0]
    h, (trials, _, n) = hierarchy, estimates.shape
    columns = estimates.transpose(1, 0, 2).reshape(h.n_nodes, trials * n)
    root = root_estimate.reshape(trials * n)
    every = (starts[None, :] + n * np.arange(trials)[:, None]).ravel()  # each release's
    atoms = np.add.reduceat(root, every)
    root_atoms = (cumulative_nonnegative(atoms.reshape(trials, -1)).ravel() if cumulative
                  else np.maximum(np.rint(atoms), 0))
    if starts.size == n:
        out = topdown(h, columns, root_atoms)
    else:
        out = h.aggregate(_atom_leaves(h, columns, root, every, root_atoms, n))
    return np.ascontiguousarray(out.reshape(h.n_nodes, trials, n).transpose(1, 0, 2))


def _atom_leaves(h: Hierarchy, columns: np.ndarray, root: np.ndarray, starts: np.ndarray,
                 root_atoms: np.ndarray, n: int) -> np.ndarray:
    """Steps (1) to (3) of the module doc for releases side by side (columns: n cells
    each, ``starts`` every release's atoms): the leaves' integer cells."""
    totals = topdown(h, np.add.reduceat(columns, starts, axis=1), root_atoms)
    atom_of_cell = np.repeat(np.arange(starts.size), np.diff(np.append(starts, root.size)))
    shaped = project_segments(np.maximum(root, 0), starts, root_atoms)
    for level in range(1, h.n_levels):
        above = totals[h.level_slice(level - 1)][:, atom_of_cell]
        share = np.divide(shaped, above, out=np.zeros(above.shape), where=above > 0)
        shaped = totals[h.level_slice(level)][:, atom_of_cell] * share[h.segment_of_level(level)]
    cumulative = np.rint(np.cumsum(shaped.reshape(len(shaped), -1, n), axis=2))
    return np.diff(cumulative, axis=2, prepend=0).astype(np.int64).reshape(len(shaped), -1)


def cumulative_nonnegative(totals: np.ndarray) -> np.ndarray:
    """Non-negative integer totals (rows of ``totals`` (T, m) side by side) whose cumulative
    sums are the closest non-decreasing, non-negative sequence to the estimates' cumulative
    sums (isotonic regression: `scipy.optimize.isotonic_regression`), rounded. Clipping
    each total at 0 instead adds every negative estimate's loss to all later cumulative
    sums: on small roots measured at ε 0.1 prefix answers 3-6 times worse than the
    estimates'; the projection onto the non-decreasing sequences, which the true cumulative
    counts are, never moves them further from the truth (in the sum of squares)."""
    from scipy.optimize import isotonic_regression

    cumulative = np.cumsum(totals, axis=1)
    fitted = np.stack([isotonic_regression(row).x for row in cumulative])
    ends = np.rint(np.maximum(fitted, 0))
    return np.diff(ends, axis=1, prepend=0)

"""How a flow release's budget is split over the levels of its O/D tree: uniform (or the
core's weights, root first) or the authors' geometric split, which gives the finer levels,
with more and smaller cells, more of it."""

from __future__ import annotations

import numpy as np

from hierdp_core.flows.data import FlowData
from hierdp_core.privacy.budget import resolve_shares


def mean_branching(data: FlowData) -> float:
    """Mean number of children of the geography's internal areas."""
    h = data.geography
    internal = h.level_offsets[-2]
    return (h.n_nodes - 1) / internal


def split_shares_flows(data: FlowData, split, measured_root: bool) -> np.ndarray:
    """Shares of rho over tree levels 0..T (root first). ``"geometric"`` gives level l a
    weight b^(-(2/3)(T - l)), b the mean branching (the authors' 'smart' split: finer
    levels, which have more and smaller cells, get more); other values as the core's
    splits (None = uniform; weights root first). The root gets nothing unless measured."""
    n = data.depth + 1
    if isinstance(split, str) and split == "geometric":
        b = mean_branching(data)
        split = [b ** (-(2 / 3) * (data.depth - level)) for level in range(n)]
    return resolve_shares(n, split, skip_root=not measured_root)

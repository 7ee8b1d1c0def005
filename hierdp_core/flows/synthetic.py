"""Synthetic O/D data as in Boninsegna & Silvestri (section 5): a geography in which every
area splits into ``branching`` children (an int, or a (low, high) range drawn uniformly per
area), and Pareto flows on a random subset of the leaf pairs.

Flows: K = floor(L^2 (1 - zero_probability)) of the L^2 leaf pairs, drawn uniformly without
replacement; f ~ Lomax(shape 3) (numpy's ``pareto``), scaled to integers in [1, max_flow]
with the largest exactly ``max_flow``. The paper's settings: ``binary`` g = 8, branching 2;
``random`` g = 4, branching 2..10; zero probability 0 (complete), 0.5 (dense), 0.99
(sparse); max_flow 1000. Same distributions as the authors' generator, not the same draws.
`gravity_flows` puts commuting-like flows (mostly within the same province or region) on a
real geography, for scale tests of the paper's Italy size without the ISTAT data.

Example
-------
>>> d = synthetic_flows(levels=3, branching=2, zero_probability=0.5, seed=1)
>>> d.geography.level_size(3), d.origin.size, int(d.counts.max())
(8, 32, 1000)
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import InputError
from hierdp_core.flows.data import FlowData, flow_data_from_leaves
from hierdp_core.hierarchy import build_from_codes

PARETO_SHAPE = 3.0

#: The paper's synthetic datasets: name -> (levels g, branching, zero probability).
SHAPES = {
    "binary-complete": (8, 2, 0.0), "binary-dense": (8, 2, 0.5), "binary-sparse": (8, 2, 0.99),
    "random-complete": (4, (2, 10), 0.0), "random-dense": (4, (2, 10), 0.5),
    "random-sparse": (4, (2, 10), 0.99),
    "binary6": (6, 2, 0.5),  # the authors' default generator settings (final level 6)
}


def synthetic_geography(levels: int, branching, rng: np.random.Generator):
    """A geography with ``levels`` levels below the root; area codes are dotted paths."""
    if levels < 1:
        raise InputError(f"levels must be >= 1, got {levels}")
    low, high = (branching, branching) if np.isscalar(branching) else branching
    if not 1 <= low <= high:
        raise InputError(f"branching must be >= 1 (low <= high), got {branching}")
    paths, parents = [np.array([""], dtype=object)], []
    for _ in range(levels):
        n_children = rng.integers(low, high + 1, size=paths[-1].size)
        parent = np.repeat(np.arange(paths[-1].size), n_children)
        local = np.arange(parent.size) - np.repeat(np.cumsum(n_children) - n_children,
                                                   n_children)
        prefix = paths[-1][parent] + ("." if paths[-1][0] else "")
        paths.append(prefix + local.astype(str).astype(object))
        parents.append(parent)
    level_codes, node = [None] * levels, np.arange(paths[-1].size)
    for k in range(levels, 0, -1):  # every leaf's ancestor at each level
        level_codes[k - 1] = paths[k][node]
        node = parents[k - 1][node]
    names = [f"level{k + 1}" for k in range(levels)]
    geography, _ = build_from_codes(level_codes, names)
    return geography


def synthetic_flows(levels: int = 6, branching=2, zero_probability: float = 0.5,
                    max_flow: int = 1000, seed: int = 42, tree: str = "destination") -> FlowData:
    """Pareto flows on the leaf pairs of a synthetic geography (see the module docstring)."""
    if not 0 <= zero_probability < 1:
        raise InputError(f"zero_probability must be in [0, 1), got {zero_probability}")
    if max_flow < 1:
        raise InputError(f"max_flow must be >= 1, got {max_flow}")
    rng = np.random.default_rng(seed)
    geography = synthetic_geography(levels, branching, rng)
    n_leaves = geography.level_size(levels)
    cells = n_leaves * n_leaves
    k = max(1, int(cells * (1 - zero_probability)))
    pairs = rng.choice(cells, size=k, replace=False)
    f = rng.pareto(PARETO_SHAPE, size=k)
    flows = np.floor(1 + f / f.max() * (max_flow - 1)).astype(np.int64)
    origin, destination = np.divmod(pairs, n_leaves)
    return flow_data_from_leaves(geography, origin, destination, flows, tree=tree)


def synthetic_shape(name: str, seed: int = 42) -> FlowData:
    """One of the paper's datasets by name (`SHAPES`)."""
    if name not in SHAPES:
        raise InputError(f"unknown synthetic shape {name!r}; use one of {sorted(SHAPES)}")
    levels, branching, zero = SHAPES[name]
    return synthetic_flows(levels, branching, zero, seed=seed)


def gravity_flows(areas, populations, *, pairs: int, trips: int, local_share=(0.6, 0.3),
                  seed: int = 0, tree: str = "destination") -> FlowData:
    """Commuting-like flows on a real geography (synthetic-from-real): ``areas`` is a table
    of level codes (coarse to fine, one row per leaf area) and ``populations`` one weight per
    row. Each of ``pairs`` draws picks an origin in proportion to population and a
    destination in the same area one level up with probability ``local_share[0]``, two
    levels up with ``local_share[1]``, anywhere otherwise (in proportion to population);
    the distinct pairs get Pareto-distributed trip counts summing to about ``trips``."""
    rng = np.random.default_rng(seed)
    levels = list(areas.columns)
    codes = [areas[c].astype(str).to_numpy(dtype=object) for c in levels]
    geography, leaf = build_from_codes(codes, levels)
    weight = np.zeros(geography.level_size(len(levels)))
    np.add.at(weight, leaf, np.asarray(populations, dtype=float))
    if weight.sum() <= 0:
        raise InputError("populations must have a positive total")
    prob = weight / weight.sum()
    origin = rng.choice(prob.size, size=pairs, p=prob)
    scope = rng.choice(3, size=pairs, p=[*local_share, 1 - sum(local_share)])
    destination = rng.choice(prob.size, size=pairs, p=prob)  # "anywhere"
    for up, choice in ((1, 0), (2, 1)):
        if len(levels) <= up:
            continue
        picked = scope == choice
        destination[picked] = _same_ancestor(geography, origin[picked], up, weight, rng)
    flows = np.floor(rng.pareto(PARETO_SHAPE - 1.5, size=pairs) * 10 + 1)
    flows = np.maximum(1, np.rint(flows * trips / flows.sum())).astype(np.int64)
    return flow_data_from_leaves(geography, origin, destination, flows, tree=tree)


def _same_ancestor(geography, leaves: np.ndarray, up: int, weight: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """For every leaf, a random leaf (by weight) under its ancestor ``up`` levels above."""
    depth = geography.depth
    ancestor = np.arange(geography.level_size(depth)) + geography.level_offsets[depth]
    for _ in range(up):
        ancestor = geography.parent[ancestor]
    order = np.argsort(ancestor, kind="stable")  # leaves grouped by ancestor
    grouped = ancestor[order]
    cum = np.cumsum(weight[order])
    start = np.searchsorted(grouped, ancestor, side="left")  # each leaf's group
    end = np.searchsorted(grouped, ancestor, side="right")
    lo = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0.0)
    u = lo[leaves] + rng.random(leaves.size) * (cum[end - 1] - lo)[leaves]
    pos = np.clip(np.searchsorted(cum, u, side="right"), start[leaves], end[leaves] - 1)
    return order[pos]

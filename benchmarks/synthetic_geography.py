"""A synthetic national-style geography for the count benchmarks (`bench_counts.py`).

The tree is nation > ~52 states > ~3,200 counties > tracts > block groups > blocks (5
geography levels by default). Each parent's number of children is skewed (lognormal
weights), leaf populations are skewed (lognormal, with ~30% empty blocks when the leaf level
is the 5th level or deeper), and the per-leaf code arrays are generated vectorised (no
Python loop per node). See benchmarks/README.md.
"""

from __future__ import annotations

import math

import numpy as np

GEO_NAMES = ("state", "county", "tract", "block_group", "block")
N_STATES = 52
N_COUNTIES = 3200
# Where tracts and block groups sit between counties and blocks on a log scale, from 2020
# Census counts (~3,200 counties, ~85,000 tracts, ~242,000 block groups, ~8.1M blocks).
CENSUS_LOG_POSITIONS = (math.log(85_000 / 3_200) / math.log(8_100_000 / 3_200),
                        math.log(242_000 / 3_200) / math.log(8_100_000 / 3_200))
# Lognormal sigma of the weights spreading a level's nodes over their parents: how skewed
# the number of children per parent is (counties per state, tracts per county, ...).
BRANCH_SIGMA = (0.0, 0.9, 1.3, 0.4, 0.6)
DEFAULT_BRANCH_SIGMA = 0.7
US_POPULATION = 331_000_000


def level_names(depth: int) -> list[str]:
    return [GEO_NAMES[g] if g < len(GEO_NAMES) else f"level{g + 1}" for g in range(depth)]


def level_sizes(n_leaves: int, depth: int, shape_of: int | None = None) -> list[int]:
    """Nodes per geography level (coarse to fine): 52 states, 3,200 counties, then sizes
    growing geometrically to ``n_leaves`` (at census positions for 5 levels). With
    ``shape_of``: every level the same number of nodes per leaf as in the tree of
    ``shape_of`` leaves (the same branching whatever the size, like a few of its states)."""
    if shape_of is not None:
        sizes = [max(1, round(size * n_leaves / shape_of))
                 for size in level_sizes(shape_of, depth)[:-1]] + [n_leaves]
        return _nested(sizes)
    if depth == 1:
        return [n_leaves]
    sizes = [N_STATES]
    if depth >= 3:
        sizes.append(N_COUNTIES)
        inner = depth - 3  # levels strictly between counties and leaves
        if inner == 2:
            positions = CENSUS_LOG_POSITIONS
        else:
            positions = [(i + 1) / (inner + 1) for i in range(inner)]
        ratio = max(n_leaves / N_COUNTIES, 1.0)
        sizes += [int(round(N_COUNTIES * ratio**p)) for p in positions]
    sizes.append(n_leaves)
    return _nested(sizes)


def _nested(sizes: list[int]) -> list[int]:
    """Every parent needs a child: sizes must not decrease; clamped from the leaves up."""
    for g in range(len(sizes) - 2, -1, -1):
        sizes[g] = max(1, min(sizes[g], sizes[g + 1]))
    return sizes


def spread_children(n_parents: int, n_children: int, sigma: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Children per parent: one each, the rest spread by lognormal(0, sigma) weights."""
    counts = np.ones(n_parents, dtype=np.int64)
    extra = n_children - n_parents
    if extra > 0:
        w = rng.lognormal(0.0, sigma, n_parents) if sigma > 0 else np.ones(n_parents)
        counts += rng.multinomial(extra, w / w.sum())
    return counts


def synthetic_geography(n_leaves: int, depth: int, rng: np.random.Generator,
                        population: int = US_POPULATION, shuffle_rows: bool = False,
                        shape_of: int | None = None):
    """Per-leaf code arrays (one int32 array per geography level, one entry per leaf row)
    and per-leaf populations (int32). Codes are the node's index within its level (unique across
    the level, i.e. not local codes). ``shape_of``: see `level_sizes`; the population is
    then the same per leaf as in the tree of ``shape_of`` leaves."""
    sizes = level_sizes(n_leaves, depth, shape_of)
    if shape_of is not None:
        population = round(population * n_leaves / shape_of)
    parents = [None]  # parents[g][i]: index (within level g-1) of the parent of node i
    for g in range(1, depth):
        sigma = BRANCH_SIGMA[g] if g < len(BRANCH_SIGMA) else DEFAULT_BRANCH_SIGMA
        counts = spread_children(sizes[g - 1], sizes[g], sigma, rng)
        parents.append(np.repeat(np.arange(sizes[g - 1], dtype=np.int32), counts))
    codes = [None] * depth
    anc = np.arange(n_leaves, dtype=np.int32)
    codes[depth - 1] = anc
    for g in range(depth - 1, 0, -1):
        anc = parents[g][anc]
        codes[g - 1] = anc
    del parents, anc
    # populations: lognormal per leaf, ~30% empty blocks at block level and below
    w = rng.lognormal(0.0, 1.2, n_leaves)
    if depth >= len(GEO_NAMES):
        w[rng.random(n_leaves) < 0.3] = 0.0
    w *= population / w.sum()
    pop = rng.poisson(w).astype(np.int32)
    del w
    if shuffle_rows:
        perm = rng.permutation(n_leaves)
        codes = [c[perm] for c in codes]
        pop = pop[perm]
    return codes, pop, sizes

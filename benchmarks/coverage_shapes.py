"""Hierarchies generated to be unlike each other, for the coverage benchmark
(`bench_coverage.py`, issue 30 item 2): 2 to 6 levels, fan-out from 1 to 500, unit sizes
from a few people to millions, 0-60% empty leaves, ragged depth (a share of the units
pass through a level with a single child, as a unit with no subdivision there).

A `Shape` is a small public recipe; `make_counts` turns it into a `CountData` with one
level loop (no Python loop per node): every parent draws its number of children at once,
the children's parents are `np.repeat`ed, and the leaf populations are drawn in one call;
`make_group_sizes` splits those populations into groups of 1-4 people; `make_ranges` spreads
them over `RANGE_VALUES` ordered attribute values (ages in bands) with a profile of its own per
leaf.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.groupsizes.data import GroupSizeData
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.queries.counts import CountData
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.workloads import prefix_ranges


@dataclass(frozen=True)
class Shape:
    """A tree recipe: ``fanouts`` per level below the root, each (low, high) children per
    parent drawn log-uniformly; ``leaf_size`` the median leaf population and ``spread``
    its lognormal sigma; ``empty`` the share of leaves forced to 0; ``ragged`` the share
    of units below level 1 given a single child (they pass through)."""

    name: str
    fanouts: tuple[tuple[int, int], ...]
    leaf_size: float
    spread: float = 1.0
    empty: float = 0.0
    ragged: float = 0.0

    @property
    def levels(self) -> int:
        """Levels counting the root."""
        return len(self.fanouts) + 1


#: 25 shapes: few or many units per level, equal or very unequal sizes, empty leaves,
#: ragged trees, 2 to 6 levels (root included), nodes kept under ~12,000
SHAPES = (
    Shape("flat-few", ((3, 3),), 5_000, 0.3),
    Shape("flat-wide", ((500, 500),), 40, 1.5, empty=0.3),
    Shape("flat-tiny", ((60, 60),), 3, 1.0, empty=0.6),
    Shape("flat-millions", ((8, 8),), 2_000_000, 2.0),
    Shape("swiss-like", ((7, 7), (2, 7), (20, 250)), 1_500, 1.3),
    Shape("swiss-small-eps", ((7, 7), (1, 8), (5, 300)), 300, 2.0, empty=0.1),
    Shape("one-child-level", ((10, 10), (1, 1), (20, 60)), 200, 1.0),
    Shape("chain-top", ((1, 1), (1, 1), (50, 50)), 500, 1.0),
    Shape("many-empty", ((12, 12), (10, 40)), 8, 1.5, empty=0.6),
    Shape("unequal-giants", ((5, 5), (3, 30)), 1_000, 3.0),
    Shape("millions-deep", ((4, 4), (3, 10), (5, 20)), 300_000, 1.5),
    Shape("ragged-3", ((6, 6), (2, 20), (2, 40)), 400, 1.2, ragged=0.3),
    Shape("ragged-5", ((4, 4), (2, 6), (2, 6), (2, 8), (2, 8)), 80, 1.2, empty=0.2,
          ragged=0.4),
    Shape("deep-binary", ((2, 2), (2, 2), (2, 2), (2, 2), (2, 2)), 1_000, 0.5),
    Shape("deep-mixed", ((3, 9), (1, 5), (2, 12), (1, 30), (1, 3)), 30, 1.5, empty=0.3),
    Shape("wide-then-one", ((300, 300), (1, 2)), 50, 1.0, empty=0.2),
    Shape("one-then-wide", ((2, 2), (1, 500)), 20, 2.0, empty=0.4),
    Shape("balanced-4", ((10, 10), (10, 10), (10, 10)), 100, 0.2),
    Shape("skewed-4", ((15, 15), (1, 80), (1, 40)), 60, 2.5, empty=0.25),
    Shape("tiny-units", ((20, 20), (5, 30)), 2, 0.8, empty=0.5),
    Shape("few-big-many-small", ((3, 3), (1, 200), (1, 5)), 150, 2.5, empty=0.15),
    Shape("counties-like", ((50, 50), (1, 200)), 20_000, 1.2),
    Shape("levels-6-small", ((3, 3), (2, 4), (2, 4), (2, 4), (2, 6)), 12, 1.0, empty=0.4),
    Shape("levels-5", ((4, 4), (2, 6), (2, 6), (3, 20)), 250, 1.3, empty=0.1),
    Shape("fanout-500-deep", ((3, 3), (100, 500), (1, 4)), 40, 1.4, empty=0.35, ragged=0.2),
)


def make_counts(shape: Shape, seed: int) -> CountData:
    """The shape's tree and leaf populations (one category), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    parents: list[np.ndarray] = []  # per level below the root: each node's parent index
    n = 1
    for depth, (low, high) in enumerate(shape.fanouts):
        fan = np.rint(np.exp(rng.uniform(np.log(low), np.log(high), n))).astype(np.int64)
        if depth >= 1 and shape.ragged:
            fan[rng.random(n) < shape.ragged] = 1
        fan = np.maximum(fan, 1)
        parents.append(np.repeat(np.arange(n), fan))
        n = int(fan.sum())
    codes = [np.arange(n)]  # the leaves' own codes, then their ancestors' up to level 1
    for parent in reversed(parents[1:]):
        codes.append(parent[codes[-1]])
    codes.reverse()
    names = [f"L{i + 1}" for i in range(len(codes))]
    h, leaf_of_row = build_from_codes(codes, names)
    pop = np.rint(shape.leaf_size * rng.lognormal(0.0, shape.spread, n)).astype(np.int64)
    pop[rng.random(n) < shape.empty] = 0
    leaves = np.zeros((h.n_leaves, 1), dtype=np.int64)
    leaves[leaf_of_row, 0] = pop
    return CountData(h, leaves)


#: the share of the people living in groups of 1, 2, 3 and 4 (households)
GROUP_SHARES = (0.3, 0.35, 0.2, 0.15)


def make_group_sizes(shape: Shape, seed: int) -> GroupSizeData:
    """The shape's tree and leaf populations (`make_counts`), each leaf's people in groups
    of 1-4: per size a Poisson number of groups, mean the leaf's people x `GROUP_SHARES` /
    size (an empty leaf has none)."""
    data = make_counts(shape, seed)
    sizes = np.arange(1, len(GROUP_SHARES) + 1)
    mean = data.leaf_counts[:, :1] * np.array(GROUP_SHARES) / sizes
    groups = np.random.default_rng(seed).poisson(mean).astype(np.int64)
    return GroupSizeData(data.hierarchy, groups, tuple(map(str, sizes)), ("size",),
                         max_size=int(sizes[-1]), min_size=1)


#: the ordered attribute of `make_ranges`: this many values (a power of two: H2's tree is full)
RANGE_VALUES = 32


def make_ranges(shape: Shape, seed: int) -> RangeData:
    """The shape's tree and leaf populations (`make_counts`), each leaf's people spread over
    `RANGE_VALUES` ordered values by a multinomial draw from a profile of its own: a
    declining curve (an age pyramid) whose slope varies from leaf to leaf, times a random
    factor per value (lumpy), so some values of a small leaf are empty and buckets differ
    between leaves. The workload is the public prefix ranges."""
    data = make_counts(shape, seed)
    rng = np.random.default_rng(seed)
    n = data.hierarchy.n_leaves
    slope = rng.uniform(0.0, 4.0, (n, 1))
    profile = np.exp(-slope * np.linspace(0, 1, RANGE_VALUES)) * rng.gamma(2.0, 0.5,
                                                                          (n, RANGE_VALUES))
    profile /= profile.sum(axis=1, keepdims=True)
    counts = rng.multinomial(data.leaf_counts[:, 0], profile).astype(np.int64)
    return RangeData(data.hierarchy, counts, tuple(map(str, range(RANGE_VALUES))), "value",
                     prefix_ranges(RANGE_VALUES))

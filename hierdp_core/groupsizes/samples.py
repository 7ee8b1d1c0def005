"""Bundled household sample for group-size release: synthetic households on a real
population hierarchy.

``us_households()`` spreads the real 2005 population of every US county (the bundled
``us-counties`` sample) over households whose sizes follow approximate national shares of
US household sizes (1: 26.7%, 2: 33.6%, 3: 15.8%, 4: 13.4%, 5: 6.2%, 6: 2.4%, 7+: 1.9%;
rounded 2010 Census figures), perturbed per county (Dirichlet), with a geometric tail for
7+ (ratio 0.45 between consecutive sizes, as in the augmentation Fioretto et al. and Kuo et
al. apply to the Census' "7+" bin) and, per state, 50 group quarters (dormitories, prisons,
care homes) with sizes uniform on 10..1000, placed in counties in proportion to their
population. Sizes are top-coded at ``max_size`` (default 1000, the Fioretto paper's N).
**Synthetic-from-real**: the geography and county populations are real, every household
is generated. Deterministic for a seed.

The table has one row per (county, size) with at least one household: ``state``,
``state_name``, ``county``, ``county_name``, ``size``, ``households``.

The number of households of every county is the model's first step, fixed before any size
is drawn: population / mean household size, plus the county's group quarters.
`us_household_groups` gives that step as the sample's groups table (``state``, ``county``,
``groups``), the public declaration `hierdp_core.groupsizes.declared_groups` reads (the
file ``hierdp sample us-households`` writes beside the sample): the sample's numbers of
households are declared, as a public register of dwellings would declare them, and only
the sizes are protected.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from hierdp_core.data.samples import us_counties

BASE_SHARES = np.array([0.267, 0.336, 0.158, 0.134, 0.062, 0.024, 0.019])  # sizes 1..6, 7+
TAIL_RATIO = 0.45
GROUP_QUARTERS_PER_STATE = 50
GROUP_QUARTERS_SIZES = (10, 1000)
DIRICHLET_CONCENTRATION = 400.0


@functools.lru_cache(maxsize=4)
def _us_households(seed: int, max_size: int,
                   largest_group: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the households table, the groups table: the households fixed per county first)."""
    rng = np.random.default_rng(seed)
    people = us_counties().groupby(["state", "state_name", "county", "county_name"],
                                   as_index=False, sort=True)["population"].sum()
    n = len(people)
    shares = rng.dirichlet(DIRICHLET_CONCENTRATION * BASE_SHARES / BASE_SHARES.sum(), size=n)
    tail_mean = 7 + TAIL_RATIO / (1 - TAIL_RATIO)
    mean_size = shares[:, :6] @ np.arange(1, 7) + shares[:, 6] * tail_mean
    households = np.maximum(1, np.rint(people["population"].to_numpy() / mean_size))
    counts = np.vstack([rng.multinomial(int(h), s) for h, s in zip(households, shares,
                                                                   strict=True)])
    county_of_tail = np.repeat(np.arange(n), counts[:, 6])
    tail_sizes = 6 + rng.geometric(1 - TAIL_RATIO, size=county_of_tail.size)
    # group quarters: per state, in counties drawn in proportion to population
    state_codes = people["state"].to_numpy()
    gq_county, gq_size = [], []
    for state in np.unique(state_codes):
        members = np.flatnonzero(state_codes == state)
        weight = people["population"].to_numpy()[members].astype(float)
        gq_county.append(rng.choice(members, size=GROUP_QUARTERS_PER_STATE, p=weight / weight.sum()))
        gq_size.append(rng.integers(GROUP_QUARTERS_SIZES[0], largest_group + 1,
                                    size=GROUP_QUARTERS_PER_STATE))
    groups = people[["state", "county"]].copy()
    groups["groups"] = (households.astype(np.int64)
                        + np.bincount(np.concatenate(gq_county), minlength=n))
    county = np.concatenate([county_of_tail, *gq_county])
    size = np.minimum(np.concatenate([tail_sizes, *gq_size]), max_size)
    hist = np.zeros((n, max_size + 1), dtype=np.int64)
    hist[:, 1:7] = counts[:, :6]
    np.add.at(hist, (county, size), 1)
    rows, sizes = np.nonzero(hist)
    out = people.iloc[rows][["state", "state_name", "county", "county_name"]].reset_index(
        drop=True)
    out["size"] = sizes.astype(np.int64)
    out["households"] = hist[rows, sizes]
    return out, groups


def us_households(seed: int = 2010, max_size: int = 1000,
                  largest_group: int = GROUP_QUARTERS_SIZES[1]) -> pd.DataFrame:
    """Synthetic households on the real US county populations (see the module docstring);
    ``largest_group`` is the largest group-quarters size (Kuo et al. used 10,000)."""
    return _us_households(int(seed), int(max_size), int(largest_group))[0].copy()


def us_household_groups(seed: int = 2010,
                        largest_group: int = GROUP_QUARTERS_SIZES[1]) -> pd.DataFrame:
    """The sample's groups table: every county's number of households (``state``,
    ``county``, ``groups``), fixed by the model before the sizes are drawn (see the module
    docstring); the same for every top-code."""
    return _us_households(int(seed), 1000, int(largest_group))[1].copy()


def us_blocks(seed: int = 2010, people_per_block: int = 80, mean_members: float = 40.0,
              max_size: int = 3000) -> pd.DataFrame:
    """A dense count-of-counts on the real US county tree, in the spirit of Kuo et al.'s
    race data (groups = census blocks, size = residents of one group in the block): every
    county has population / ``people_per_block`` blocks whose sizes are negative binomial
    with mean ``mean_members`` (many distinct sizes, zeros included). Synthetic-from-real,
    same columns as `us_households` (``households`` = number of blocks)."""
    rng = np.random.default_rng(seed)
    people = us_counties().groupby(["state", "state_name", "county", "county_name"],
                                   as_index=False, sort=True)["population"].sum()
    blocks = np.maximum(1, people["population"].to_numpy() // people_per_block)
    county = np.repeat(np.arange(len(people)), blocks)
    sizes = np.minimum(rng.negative_binomial(1, 1 / (1 + mean_members), size=county.size),
                       max_size)
    cells = pd.DataFrame({"c": county, "size": sizes}).value_counts().reset_index()
    out = people.iloc[cells["c"]][["state", "state_name", "county", "county_name"]]
    out = out.reset_index(drop=True)
    out["size"] = cells["size"].to_numpy().astype(np.int64)
    out["households"] = cells["count"].to_numpy().astype(np.int64)
    return out.sort_values(["county", "size"], ignore_index=True)

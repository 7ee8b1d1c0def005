"""Small inputs of every query kind and a budget of every privacy definition, shared by the
tests that release every registered mechanism (`test_privacy_plans`, `test_seeded_digests`),
and the stages the tests of the range estimators hand them (`UNIT_MEASUREMENT`, and DAWA's
Stage 1 `PRIVTREE_PARTITION`)."""

from __future__ import annotations

import pandas as pd

from hierdp_core.flows.data import flow_data_from_trips
from hierdp_core.groupsizes.data import group_size_data_from_people
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, Stage
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.ranges.privtree import selection_stage

#: a range mechanism's measurement as its privacy plan states it: L1 sensitivity 1 under
#: add/remove one person, Laplace noise, the whole budget
UNIT_MEASUREMENT = Stage("measurement", ADD_REMOVE_PERSON, 1.0, "laplace", 1.0)
#: DAWA's default Stage 1 as its plan states it (PrivTree: sensitivity 1, factor 3)
PRIVTREE_PARTITION = selection_stage()


def small_data(kind: str):
    """A two-level input of query kind ``kind`` (a few units, a few cells)."""
    if kind == "counts":
        table = pd.DataFrame({"region": ["N", "N", "S"], "town": ["n1", "n2", "s1"],
                              "count": [5, 7, 3]})
        return count_data_from_table(table, ["region", "town"], count_column="count")
    if kind == "group-sizes":
        people = pd.DataFrame({"state": ["GA"] * 5 + ["NY"] * 6,
                               "household": list("AAABC") + list("DDDEFF")})
        return group_size_data_from_people(people, ["state"], "household", max_size=4)
    if kind == "flows":
        trips = pd.DataFrame({"o_state": ["A", "A", "B", "B"], "o_city": ["a1", "a2", "b1", "b2"],
                              "d_state": ["B", "A", "B", "A"], "d_city": ["b1", "a1", "b2", "a2"]})
        return flow_data_from_trips(trips, ["o_state", "o_city"], ["d_state", "d_city"])
    rows = [(r, f"{r}{p}", a, 3 + a) for r in "AB" for p in "xy" for a in range(6)]
    table = pd.DataFrame(rows, columns=["region", "province", "age", "n"])
    return range_data_from_table(table, ["region", "province"], "age", count_column="n")


def budget_for(info) -> PrivacyBudget:
    """A budget of the privacy definition the mechanism ``info`` accounts in."""
    if info.privacy == "zcdp":
        return PrivacyBudget.zcdp(0.5, 1e-8)
    if info.privacy == "approx-dp":
        return PrivacyBudget.approx(1.0, 1e-8)
    return PrivacyBudget.pure(1.0)

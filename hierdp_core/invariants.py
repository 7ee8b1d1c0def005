"""What a release may publish exactly (its invariants, declared by the user) and which of
them a mechanism publishes exactly with given parameters. Shared by the CLI, the
configuration file and the dashboard's configuration boxes."""

from __future__ import annotations

#: the quantities a user can declare public: the total (root count, number of trips or
#: number of groups G), the root's count of every category (counts with categories) and
#: every region's number of groups
INVARIANTS = ("total", "category-totals", "groups")


def exact_quantities(mechanism, query: str, params: dict,
                     categories: bool = False) -> list[str]:
    """Which `INVARIANTS` a mechanism publishes exactly with these parameters: counts the
    total with ``root_invariant``, and with ``categories`` (the release has category
    columns) the root's count of every category too, since the root's cells are kept as
    they are; flows the number of trips under bounded neighbours; group sizes what the
    mechanism treats as public with these parameters (every region's number of groups
    for the cumulative-histogram and Kuo mechanisms and with ``groups=exact``, the total
    G for the others but gs-noisy). ``mechanism`` is read for group sizes only."""
    if query == "counts":
        if not params.get("root_invariant"):
            return []
        return ["total", "category-totals"] if categories else ["total"]
    if query == "flows":
        return ["total"] if params.get("neighbouring") == "bounded" else []
    if query == "group-sizes":
        from hierdp_core.mechanisms.group_sizes_base import G_PUBLIC, G_V_PUBLIC

        kept = set(mechanism.kept_invariants(**params))  # with groups=exact: every G_v
        return ["groups"] if G_V_PUBLIC in kept else ["total"] if G_PUBLIC in kept else []
    return []

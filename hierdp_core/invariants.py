"""What a release may publish exactly (its invariants, declared by the user) and which of
them a mechanism publishes exactly with given parameters. Shared by the CLI, the
configuration file and the dashboard's configuration boxes."""

from __future__ import annotations

#: the quantities a user can declare public: the total (root count, number of trips or
#: number of groups G) and every region's number of groups
INVARIANTS = ("total", "groups")


def exact_quantities(mechanism, query: str, params: dict) -> list[str]:
    """Which `INVARIANTS` a mechanism publishes exactly with these parameters: counts the
    total with ``root_invariant``; flows the number of trips under bounded neighbours;
    group sizes what the mechanism treats as public with these parameters (every region's
    number of groups for the cumulative-histogram and Kuo mechanisms and with
    ``groups=exact``, the total G for the others but gs-noisy)."""
    if query == "counts":
        return ["total"] if params.get("root_invariant") else []
    if query == "flows":
        return ["total"] if params.get("neighbouring") == "bounded" else []
    if query == "group-sizes":
        from hierdp_core.mechanisms.group_sizes_base import G_PUBLIC, G_V_PUBLIC

        kept = set(mechanism.kept_invariants(**params))  # with groups=exact: every G_v
        return ["groups"] if G_V_PUBLIC in kept else ["total"] if G_PUBLIC in kept else []
    return []

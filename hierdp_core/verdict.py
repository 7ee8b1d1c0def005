"""The publishable verdict of a release (DESIGN principle 8).

A release is publishable only when all three hold:

* its noise is secure: OS entropy through OpenDP measurements applied to the true values
  (a seeded generator lets anyone with the seed subtract the noise);
* its mechanism is differentially private as implemented (the registry's ``private``);
* its shape (units, categories, domains, sizes, O/D areas) was declared public, not read
  from the confidential data;
* everything it publishes exactly was declared too: a group-size release keeping numbers
  of groups (G, G_v) exactly needs them declared (a groups file), not counted from the
  records.

Otherwise the verdict lists, in plain words, every reason it is not.

Example
-------
>>> verdict(randomness={"mode": "exploration", "seed": 3}, mechanism_private=True,
...         mechanism_name="topdown", structure_declared=True)["publishable"]
False
"""

from __future__ import annotations

SEEDED = ("the noise comes from a seeded generator (exploration): anyone who knows the seed "
          "can subtract it; release again with secure noise (without a seed)")
FROM_DATA = ("the release's units, categories or domain were read from the confidential data "
             "(structure from data), so its shape can reveal who is in it; declare them: a "
             "public geography listing every unit, and the category values or domain")
GROUPS_FROM_DATA = ("group counts read from the confidential data, not declared: the release "
                    "publishes numbers of groups exactly, and removing the only member of a "
                    "one-person group would change them; declare them (a groups file, "
                    "--groups) or use a mechanism that keeps no number of groups exactly")


def not_private_reason(name: str, warning: str = "") -> str:
    """Why a mechanism is not private: its name and the registry's warning (the flaw and
    the private alternative)."""
    text = f"mechanism {name!r} is not differentially private as published"
    return f"{text} ({warning})" if warning else text


def verdict(*, randomness: dict, mechanism_private: bool, mechanism_name: str,
            structure_declared: bool, mechanism_warning: str = "",
            exact_groups_from_data: bool = False) -> dict:
    """``{"publishable": bool, "not_publishable_because": [plain-word reasons]}``.
    ``exact_groups_from_data``: numbers of groups published exactly but counted from the
    records (`GROUPS_FROM_DATA`)."""
    reasons = []
    if randomness.get("mode") != "secure":
        reasons.append(SEEDED)
    if not mechanism_private:
        reasons.append(not_private_reason(mechanism_name, mechanism_warning))
    if not structure_declared:
        reasons.append(FROM_DATA)
    if exact_groups_from_data:
        reasons.append(GROUPS_FROM_DATA)
    return {"publishable": not reasons, "not_publishable_because": reasons}


def release_verdict(release, *, structure_declared: bool) -> dict:
    """The verdict of a Release / FlowRelease / RangeRelease from its randomness and its
    mechanism's registry entry."""
    from hierdp_core.mechanisms.base import get_mechanism

    info = get_mechanism(release.mechanism).info
    privacy = getattr(release, "privacy", None) or {}
    return verdict(randomness=release.randomness, mechanism_private=info.private,
                   mechanism_name=info.name, structure_declared=structure_declared,
                   mechanism_warning=info.warning,
                   exact_groups_from_data=bool(privacy.get("invariants"))
                   and privacy.get("group_counts") == "from-data")


def short_reason_tag(result: dict) -> str:
    """A file-name tag saying why a release is not publishable (empty when it is), e.g.
    ``NOT-PUBLISHABLE_seeded_structure-from-data``."""
    if result["publishable"]:
        return ""
    tags = []
    for reason in result["not_publishable_because"]:
        if reason == SEEDED:
            tags.append("seeded")
        elif reason == FROM_DATA:
            tags.append("structure-from-data")
        elif reason == GROUPS_FROM_DATA:
            tags.append("groups-from-data")
        else:
            tags.append("not-private")
    return "NOT-PUBLISHABLE_" + "_".join(tags)


def describe(result: dict) -> str:
    """One line for the CLI: ``publishable: yes`` or ``publishable: NO (reason; reason)``."""
    if result["publishable"]:
        return "publishable: yes (secure noise, private mechanism, declared structure)"
    return "publishable: NO (" + "; ".join(result["not_publishable_because"]) + ")"

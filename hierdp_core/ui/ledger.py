"""The dashboard's budget across releases (`hierdp_core.privacy.ledger`): the running total
of the dataset's publishable releases beside the "Draw the publishable release" button, a
confirmation before a second draw ("this spends another ε X, total Y of Z"), a friendly
refusal beyond the total, and the declaration of the total.

The Export page keys the dataset by the HMAC of its true counts under the publisher's key
(`hierdp_core.privacy.dataset_key.counts_fingerprint`, as ``hierdp release`` keys a counts
release: the same records uploaded in any order or format, or released with the command
line, are one dataset), with the HMAC of the upload as read (`table_fingerprint`) or the
bundled sample's name (`sample_fingerprint`) as aliases; the Group sizes, Flows and Ranges
pages key an upload by `table_fingerprint` and a bundled sample by its name
(`page_charge`), so a sample's draws on every page are one dataset.
Each draw is reserved in the ledger before its noise is drawn and committed once made.

Session-state key: ``hd_ledger_fp`` holds, per kind of fingerprint, (the table or counts,
its fingerprint), so each is fingerprinted once.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.export import publisher_key
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.dataset_key import (
    counts_fingerprint,
    data_fingerprint,
    sample_fingerprint,
    table_fingerprint,
)
from hierdp_core.privacy.ledger import DatasetBudget, Ledger, charge_of, unit_of
from hierdp_core.ui import session
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import LEDGER_FP as FINGERPRINT
from hierdp_core.verdict import (
    DEFAULT_MAX_DELTA,
    DEFAULT_MAX_EPSILON,
    ceiling_breach,
    check_within_ceilings,
)

SYMBOL = {"epsilon": "ε", "rho": "ρ"}


@dataclass(frozen=True)
class Charge:
    """What a publishable draw of the current dataset spends: ``budget`` with
    ``mechanism``, on the dataset ``fingerprint`` or, failing it, the one an alias of
    ``aliases`` names (`hierdp_core.privacy.ledger.Ledger.reserve`; shown as ``label``)."""

    fingerprint: str
    label: str
    budget: PrivacyBudget
    mechanism: str
    aliases: tuple[str, ...] = ()


def _kept(what, fingerprint) -> str:
    """``fingerprint(what, key)`` under the publisher's key, kept while ``what`` (the same
    object, held here) is asked again: once per table or counts, not per rerun."""
    kept = st.session_state.setdefault(FINGERPRINT, {})
    name = fingerprint.__name__
    if name not in kept or kept[name][0] is not what:
        kept[name] = (what, fingerprint(what, publisher_key(None, None)[0]))
    return kept[name][1]


def current_charge(budget: PrivacyBudget, mechanism: str, data) -> Charge:
    """The `Charge` of a draw of ``budget`` on the session's dataset (the Export page's),
    built as the `CountData` ``data``: keyed by its true counts, with its table's key (or
    its bundled sample's name) as alias."""
    ds = session.ensure_dataset()
    alias = (sample_fingerprint(ds["sample"], publisher_key(None, None)[0]) if ds.get("sample")
             else _kept(ds.get("raw", ds["table"]), table_fingerprint))
    return Charge(_kept(data, counts_fingerprint), ds["name"], budget, mechanism, (alias,))


def page_charge(budget: PrivacyBudget, mechanism: str, upload: dict | None, sample: str,
                data) -> Charge:
    """The `Charge` of a query page's draw on its ``data`` (group sizes, trips, range
    histograms): keyed by their true content (`data_fingerprint`, as the command line keys
    a release of the same records: one dataset, one budget), with the uploaded table's key
    (`table_fingerprint`) or the bundled sample's name as alias."""
    if upload is not None:
        alias = _kept(upload.get("raw", upload["table"]), table_fingerprint)
        label = upload["name"]
    else:
        alias, label = sample_fingerprint(sample, publisher_key(None, None)[0]), \
            f"bundled sample {sample}"
    key = _kept(data, data_fingerprint)
    return Charge(key or alias, label, budget, mechanism, (alias,) if key else ())


def _amount(unit: str, value: float) -> str:
    return f"{SYMBOL[unit]} {value:g}"


def _above_ceiling(budget: PrivacyBudget) -> str | None:
    """Which public ceiling (the default ones: the dashboard sets none) ``budget`` is
    above, in a few words, or None."""
    breach = ceiling_breach(budget.as_dict(), DEFAULT_MAX_EPSILON, DEFAULT_MAX_DELTA)
    if breach is None:
        return None
    if "max_epsilon" in breach:
        return (f"ε {breach['epsilon']:.4g} is above the public ceiling of "
                f"{breach['max_epsilon']:g} (noise this small barely protects anyone)")
    return f"δ {breach['delta']:.4g} is above the public ceiling of {breach['max_delta']:g}"


def gate(charge: Charge, prefix: str) -> bool:
    """The running total of the dataset and, before a second draw, a confirmation; returns
    whether the draw may go ahead (never beyond the total, nor above the public ceilings:
    such a draw could not be published and would spend the dataset's budget)."""
    above = _above_ceiling(charge.budget)
    if above is not None:
        st.info(f"No publishable draw at this budget: {above}. Such a draw could not be "
                "published and would spend the dataset's budget: lower the budget on the "
                "Mechanism & budget page (exploration releases stay free at any budget; "
                "the command line's --max-epsilon and --max-delta raise the ceilings on "
                "purpose).", icon=":material/block:")
        return False
    try:
        now = Ledger().status(charge.fingerprint, charge.aliases)
        cost = charge_of(charge.budget, now.unit or unit_of(charge.budget))
    except HierdpError as exc:
        st.error(f"The budget of this dataset cannot be used for this draw: {exc}")
        return False
    unit = now.unit or unit_of(charge.budget)
    if not now.spends:
        st.caption(f":material/account_balance: Budget across releases: no publishable "
                   f"release of this dataset yet. This draw spends {_amount(unit, cost)}"
                   + (f" of the declared total {now.total:g}." if now.total is not None
                      else "; with no total declared, it becomes the dataset's total."))
    else:
        st.caption(f":material/account_balance: Budget across releases: this dataset's "
                   f"{len(now.spends)} publishable release(s) have spent "
                   f"{_amount(unit, now.spent)} of {now.total:g}"
                   + ("" if now.declared else " (not declared: the first release's budget)")
                   + f", {now.remaining:g} left; {latest_spend(now.spends[-1])}.")
    fits = now.fits(cost)
    if not fits:
        st.info(f"Another publishable draw would spend {_amount(unit, cost)}, more than the "
                f"{now.remaining:g} left of this dataset's total {now.total:g}. Publish the "
                "release already drawn, or declare a larger total below if your data "
                "protection plan allows it.", icon=":material/block:")
    declare_form(now, unit, prefix, charge.label)
    if not fits or not now.spends:
        return fits
    return st.checkbox(f"Draw again: this spends another {_amount(unit, cost)}, a total of "
                       f"{now.spent + cost:g} of {now.total:g} on this dataset",
                       key=wk.page_key(prefix, wk.BUDGET_CONFIRM, len(now.spends)))


#: where a dashboard draw was made, by its page's prefix (`counted`'s destination)
PAGES = {wk.EX: "the Export page", wk.GS: "the Group sizes page", wk.FL: "the Flows page",
         wk.RG: "the Range queries page"}


def latest_spend(spend) -> str:
    """Who spent last, in words: the same people may be released by another page (the
    count release and the residents by age of one sample) or the command line.

    >>> from types import SimpleNamespace as S
    >>> latest_spend(S(mechanism="topdown", reserved_utc="2026-12-02T03:12:40+00:00",
    ...                destination="dashboard (ex downloads, release 1a2b)"))
    'the latest by TopDown on the Export page, 2026-12-02 03:12 UTC'
    """
    from hierdp_core.mechanism_names import title

    prefix = spend.destination.removeprefix("dashboard (").split(" ", 1)[0]
    where = (PAGES.get(prefix, "the dashboard") if spend.destination.startswith("dashboard (")
             else f"the command line ({spend.destination})")
    when = spend.reserved_utc[:16].replace("T", " ")
    return f"the latest by {title(spend.mechanism)} on {where}, {when} UTC"


def declare_form(now: DatasetBudget, unit: str, prefix: str, label: str) -> None:
    """Declare (or, explicitly, change) the dataset's total across releases."""
    with st.expander("Declare this dataset's total budget across releases"):
        total = st.number_input(f"Total {SYMBOL[unit]} of every publishable release of this "
                                "dataset", min_value=0.0, value=float(now.total or 0.0),
                                step=0.5, key=wk.page_key(prefix, wk.BUDGET_TOTAL))
        change = True
        if now.declared:
            change = st.checkbox(f"Change the declared total ({now.total:g})",
                                 key=wk.page_key(prefix, wk.BUDGET_CHANGE))
        if st.button("Declare the total", key=wk.page_key(prefix, wk.BUDGET_DECLARE),
                     disabled=not change):
            try:
                Ledger().declare_total(now.fingerprint, total, unit=unit,
                                       label=now.label or label, change=change)
            except HierdpError as exc:
                st.error(f"The total was not declared: {exc}")
            else:
                st.rerun()


def counted(charge: Charge, prefix: str, draw):
    """``draw()`` (a publishable release), recorded in the dataset's ledger: reserved before
    its noise is drawn (a `BudgetError` when it does not fit, or is above the public
    ceilings: `hierdp_core.verdict.check_within_ceilings`), marked with its entry (the
    condition of its publishable verdict), committed once made and named by its content
    token."""
    from hierdp_core.ui.downloads import release_token

    check_within_ceilings(charge.budget.as_dict(), DEFAULT_MAX_EPSILON, DEFAULT_MAX_DELTA)
    ledger = Ledger()
    spend = ledger.reserve(charge.fingerprint, charge.budget, label=charge.label,
                           destination=f"dashboard ({prefix} downloads)",
                           mechanism=charge.mechanism, aliases=charge.aliases)
    release = draw().charged(spend.release_id)
    ledger.commit(spend.release_id, destination=f"dashboard ({prefix} downloads, release "
                                                f"{release_token(release)[:12]})")
    return release

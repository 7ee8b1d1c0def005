"""The dashboard's budget across releases (`hierdp_core.privacy.ledger`): the running total
of the dataset's publishable releases beside the "Draw the publishable release" button, a
confirmation before a second draw ("this spends another ε X, total Y of Z"), a friendly
refusal beyond the total, and the declaration of the total.

The dataset is keyed by the HMAC of its table's content under the publisher's key
(`table_fingerprint`: an upload as read, before any reshape, or the Export page's bundled
sample's table); the Group sizes, Flows and Ranges pages key their own bundled samples by
name (`page_charge`).
Each draw is reserved in the ledger before its noise is drawn and committed once made.

Session-state key: ``hd_ledger_fp`` holds (dataset version, fingerprint) of the current
dataset, so the table is fingerprinted once per version.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from hierdp_core.errors import HierdpError
from hierdp_core.export import keyed_fingerprint, publisher_key
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.ledger import (
    DatasetBudget,
    Ledger,
    charge_of,
    table_fingerprint,
    unit_of,
)
from hierdp_core.ui import session
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.session import LEDGER_FP as FINGERPRINT

SYMBOL = {"epsilon": "ε", "rho": "ρ"}


@dataclass(frozen=True)
class Charge:
    """What a publishable draw of the current dataset spends: ``budget`` with
    ``mechanism``, on the dataset ``fingerprint`` (shown as ``label``)."""

    fingerprint: str
    label: str
    budget: PrivacyBudget
    mechanism: str


def current_charge(budget: PrivacyBudget, mechanism: str, ds: dict | None = None) -> Charge:
    """The `Charge` of a draw of ``budget`` on a dataset: ``ds`` (an upload's dataset dict),
    else the session's dataset (the Export page's)."""
    ds = ds if ds is not None else session.ensure_dataset()
    kept = st.session_state.get(FINGERPRINT)
    if kept is None or kept[0] != ds["version"]:
        key, _ = publisher_key(None, None)
        kept = (ds["version"], table_fingerprint(ds.get("raw", ds["table"]), key))
        st.session_state[FINGERPRINT] = kept
    return Charge(kept[1], ds["name"], budget, mechanism)


def page_charge(budget: PrivacyBudget, mechanism: str, upload: dict | None,
                sample: str) -> Charge:
    """The `Charge` of a query page's draw: on the uploaded table (`current_charge`), or on
    the page's bundled sample, keyed by its name (its file is fixed)."""
    if upload is not None:
        return current_charge(budget, mechanism, upload)
    key, _ = publisher_key(None, None)
    return Charge(keyed_fingerprint(f"hierdp-sample/1\0{sample}".encode(), key),
                  f"bundled sample {sample}", budget, mechanism)


def _amount(unit: str, value: float) -> str:
    return f"{SYMBOL[unit]} {value:g}"


def gate(charge: Charge, prefix: str) -> bool:
    """The running total of the dataset and, before a second draw, a confirmation; returns
    whether the draw may go ahead (never beyond the total)."""
    try:
        now = Ledger().status(charge.fingerprint)
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
                   + f", {now.remaining:g} left.")
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
    its noise is drawn (a `BudgetError` when it does not fit), marked with its entry (the
    condition of its publishable verdict), committed once made and named by its content
    token."""
    from hierdp_core.ui.downloads import release_token

    ledger = Ledger()
    spend = ledger.reserve(charge.fingerprint, charge.budget, label=charge.label,
                           destination=f"dashboard ({prefix} downloads)",
                           mechanism=charge.mechanism)
    release = draw().charged(spend.release_id)
    ledger.commit(spend.release_id, destination=f"dashboard ({prefix} downloads, release "
                                                f"{release_token(release)[:12]})")
    return release

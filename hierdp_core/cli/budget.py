"""The budget across releases on the command line (`hierdp_core.privacy.ledger`):
``hierdp release --budget-total`` and the release's write-ahead spend, and ``hierdp budget``.

A release with secure noise reserves its budget in the dataset's ledger before any noise is
drawn (refused in one line when it would exceed the total), is marked with that entry
(`charged`: its manifest names it, and only a marked secure release is publishable) and
commits it once the release folder is written; a seeded (exploration) release never
touches the ledger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.interrupts import COUNTED

if TYPE_CHECKING:  # the ledger (sqlite) is imported by the functions that use it, so the
    # command line's parser, which adds this module's options, starts without it
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.ledger import DatasetBudget, Ledger, Spend

FINGERPRINT = re.compile(r"[0-9a-f]{8,64}")


def add_release_options(p) -> None:
    """``--budget-total`` and ``--change-budget-total`` of ``hierdp release``."""
    p.add_argument("--budget-total", metavar="TOTAL",
                   help="the dataset's privacy budget across all its publishable releases, "
                        "declared once (kept in ~/.hierdp/ledger.sqlite, or $HIERDP_HOME): "
                        "a number in the release's unit (epsilon, or rho with --rho) or "
                        "epsilon=N / rho=N; a release that would exceed it is refused. "
                        "Without it, the first release's own budget is the total")
    p.add_argument("--change-budget-total", action="store_true",
                   help="replace the dataset's declared --budget-total")


def add_command(sub) -> None:
    """The ``hierdp budget`` command."""
    p = sub.add_parser("budget", help="what each dataset's publishable releases spent, when "
                                      "and by which release, of its declared total")
    p.add_argument("--dataset", metavar="FILE|FINGERPRINT",
                   help="one dataset: its input file (or a Dask dataset's folder or glob) or "
                        "its fingerprint (the manifest's input.fingerprint.value, or a "
                        "prefix of it); default: every dataset of the ledger")
    p.add_argument("--budget-total", metavar="TOTAL",
                   help="with --dataset: declare its total (epsilon=N or rho=N; a plain "
                        "number is epsilon)")
    p.add_argument("--change-budget-total", action="store_true",
                   help="replace the dataset's declared total")
    p.add_argument("--key-file", help="the publisher's key the fingerprint is keyed with "
                                      "(default ~/.config/hierdp/fingerprint.key)")
    p.add_argument("--json", action="store_true")


def parse_total(text: str, default_unit: str) -> tuple[float, str]:
    """``--budget-total``: ``N`` (in ``default_unit``), ``epsilon=N`` or ``rho=N``."""
    from hierdp_core.privacy.ledger import UNITS

    unit, _, number = text.rpartition("=")
    unit = unit.strip().lower() or default_unit
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if unit not in UNITS or not value > 0 or value == float("inf"):
        raise InputError(f"--budget-total takes a positive number, epsilon=N or rho=N, got "
                         f"{text!r}")
    return value, unit


def release_budget(cfg) -> PrivacyBudget:
    """The budget of the `ReleaseConfig` ``cfg``: --epsilon [--delta] gives pure (or
    approximate) DP; --rho [--delta] gives zCDP; the total checked by `option_budget`.
    Implausible values get a warning from `hierdp_core.cli.release.budget_warnings`, said
    after the release."""
    from hierdp_core.privacy.budget import APPROX_DP, PURE_DP, ZCDP

    if (cfg.epsilon is None) == (cfg.rho is None):
        raise InputError("give exactly one of --epsilon or --rho")
    if cfg.rho is not None:
        return option_budget(ZCDP, cfg.rho, cfg.delta)
    return option_budget(PURE_DP if cfg.delta is None else APPROX_DP, cfg.epsilon, cfg.delta)


def check_release_budget(cfg, run) -> None:
    """`release_budget` as one of the early checks of ``hierdp release``
    (`hierdp_core.cli.main`; ``run`` unused): numpy is not imported yet."""
    release_budget(cfg)


def option_budget(definition: str, value: float, delta: float | None) -> PrivacyBudget:
    """The total budget given by the options (`total_budget`: within the ranges every
    release accepts), else a `BudgetError` naming the option (``--epsilon must ...``), its
    range and the value."""
    from hierdp_core.privacy.budget import total_budget

    try:
        return total_budget(definition, value, delta)
    except BudgetError as exc:  # "epsilon must ..." names the option: "--epsilon must ..."
        text = str(exc)
        raise BudgetError(f"--{text}" if text.startswith(("epsilon", "rho", "delta"))
                          else text) from None


def input_fingerprint(content, key_file, out: Path | None) -> str:
    """The keyed fingerprint of the input (the one its manifests carry)."""
    from hierdp_core.export import keyed_fingerprint, publisher_key

    key, _ = publisher_key(key_file, out)
    return keyed_fingerprint(content, key)


def dataset_keys(content, key_file, out: Path | None, data=None,
                 fingerprint: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(the ledger's key of the input, its aliases): the keyed fingerprint of ``data``'s
    true counts, group sizes, range histograms or trips (`data_fingerprint`: the same
    records in any order or format are one dataset, and the dashboard keys its draws the
    same way) with the file's (``fingerprint``, else hashed from ``content``) as its
    alias; the file's alone without such data (the Dask engine's, whose counts stay on the
    workers)."""
    from hierdp_core.export import publisher_key
    from hierdp_core.privacy.dataset_key import data_fingerprint

    file_key = fingerprint or input_fingerprint(content, key_file, out)
    key = data_fingerprint(data, publisher_key(key_file, out)[0]) if data is not None else None
    return (file_key, ()) if key is None else (key, (file_key,))


def reserve_release(cfg, run, budget, mechanism: str, source, content,
                    fingerprint: str | None = None, data=None) -> tuple | None:
    """The write-ahead spend of ``hierdp release`` of ``cfg`` with the `RunOptions` ``run``
    (its ``--out`` and ledger options) on the input ``data`` read from ``content``
    (`dataset_keys`): (ledger, fingerprint, `Spend`), or None for a seeded release; the
    total declared first when ``--budget-total`` is given. Called after the input is
    checked and before any noise is drawn."""
    if not source.secure:
        if run.budget_total is not None or run.change_budget_total:
            raise InputError("--budget-total counts publishable releases; a seeded "
                             "(exploration) release spends nothing: drop it, or --seed")
        return None
    from hierdp_core.atomic import check_target
    from hierdp_core.export import MANIFEST
    from hierdp_core.privacy.ledger import Ledger, unit_of
    from hierdp_core.verdict import check_within_ceilings

    check_within_ceilings(budget.as_dict(), run.max_epsilon, run.max_delta)  # nothing declared
    out = Path(run.out)
    ledger = Ledger()
    if ledger.path.resolve().is_relative_to(out.resolve()):
        raise InputError(f"the budget ledger {str(ledger.path)!r} lies inside the release "
                         f"folder {str(out)!r}; set HIERDP_HOME elsewhere")
    check_target(out, run.overwrite, MANIFEST)  # a refused --out spends nothing
    fingerprint, aliases = dataset_keys(content, run.key_file, out, data, fingerprint)
    label = Path(str(cfg.data.get("file"))).name
    declare_if_given(run, ledger, fingerprint, label, unit_of(budget), aliases)
    spend = ledger.reserve(fingerprint, budget, label=label, destination=str(out.resolve()),
                           mechanism=mechanism, max_delta=run.max_delta, aliases=aliases)
    COUNTED.append(spend_budget(spend))  # said if Ctrl-C stops the release from here
    return ledger, fingerprint, spend


def declare_if_given(args, ledger: Ledger, fingerprint: str, label: str,
                     default_unit: str, aliases: tuple[str, ...] = ()) -> None:
    """The dataset's total declared when ``--budget-total`` is given (a plain number in
    ``default_unit``); ``--change-budget-total`` alone is refused. ``args``: the parsed
    ``hierdp budget`` or a release's `RunOptions`; ``aliases``: the input's other keys
    (`dataset_keys`)."""
    if args.budget_total is not None:
        total, unit = parse_total(args.budget_total, default_unit)
        ledger.declare_total(fingerprint, total, unit=unit, label=label,
                             change=args.change_budget_total, aliases=aliases)
    elif args.change_budget_total:
        raise InputError("--change-budget-total goes with --budget-total N")


def check_release_fits(run, budget, source, content) -> str | None:
    """Refuse at once a secure release above the public ceilings (``--max-epsilon``,
    ``--max-delta``) or that its dataset's recorded total, or the delta ceiling, cannot
    hold (`BudgetError`), before a cluster is started;
    `reserve_release` checks again, in one transaction, when the noise is about to be
    drawn (give it the fingerprint returned here: the input is hashed once). None for a
    seeded release. Nothing is written."""
    if not source.secure:
        return None
    from hierdp_core.privacy.ledger import (
        DatasetBudget,
        Ledger,
        charge_of,
        delta_refusal,
        refusal,
    )
    from hierdp_core.verdict import check_within_ceilings

    check_within_ceilings(budget.as_dict(), run.max_epsilon, run.max_delta)

    fingerprint = input_fingerprint(content, run.key_file, Path(run.out))
    ledger = Ledger()
    now = ledger.status(fingerprint) if ledger.path.exists() else \
        DatasetBudget(fingerprint, "", None, None, False, ())
    if run.budget_total is None and now.total is not None:
        charge = charge_of(budget, now.unit)
        if not now.fits(charge):
            raise BudgetError(refusal(now, charge))
    if not now.delta_fits(budget, run.max_delta):
        raise BudgetError(delta_refusal(now.label or "this dataset", now.delta_spent,
                                        budget.delta, run.max_delta))
    return fingerprint


def charged(release, reserved: tuple | None):
    """``release`` marked with the ledger entry its charge was reserved under
    (`reserve_release`; `hierdp_core.releases.ReleaseRecord.charged`): the condition of a
    publishable verdict; unchanged for a seeded release (``reserved`` None)."""
    return release if reserved is None else release.charged(reserved[2].release_id)


def commit_release(reserved: tuple | None, manifest: Path) -> str | None:
    """Mark the reserved spend as the release written in ``manifest``'s folder; the line
    saying what the dataset has spent (None for a seeded release)."""
    if reserved is None:
        return None
    from hierdp_core.export import file_sha256

    ledger, fingerprint, spend = reserved
    ledger.commit(spend.release_id, manifest_sha256=file_sha256(manifest))
    return summary_line(ledger.status(fingerprint), spend)


def summary_line(now: DatasetBudget, spend: Spend) -> str:
    """``budget: ...``: this release's charge and the dataset's spent / total."""
    implicit = "" if now.declared else (" (not declared: the first release's budget; "
                                        "declare one with --budget-total)")
    return (f"budget: this release spent {now.unit} {spend.charge:g}; {now.label} has spent "
            f"{now.spent:g} of {now.total:g}{implicit}, {now.remaining:g} left "
            f"(release id {spend.release_id})")


def cmd_budget(args) -> int:
    from hierdp_core.privacy.ledger import Ledger

    ledger = Ledger()
    if args.dataset is None:
        if args.budget_total is not None or args.change_budget_total:
            raise InputError("--budget-total needs --dataset FILE")
        datasets = ledger.datasets()
        if args.json:
            print(json.dumps({"ledger": str(ledger.path),
                              "datasets": [as_dict(d) for d in datasets]}, indent=2))
        elif not datasets:
            print(f"no publishable release recorded in {ledger.path}")
        for d in [] if args.json else datasets:
            print(overview_line(d))
        return 0
    fingerprint, label = resolve_dataset(args.dataset, args.key_file, ledger)
    declare_if_given(args, ledger, fingerprint, label, "epsilon")
    now = ledger.status(fingerprint)
    if args.json:
        print(json.dumps(as_dict(now), indent=2))
        return 0
    print(f"dataset {now.label or label} (fingerprint {now.fingerprint[:16]}…)")
    for s in now.spends:
        state = ("committed " + (s.committed_utc or "") if s.finished
                 else "UNFINISHED: counted, its noise may have been drawn")
        print(f"  {s.reserved_utc}  {now.unit} {s.charge:g}  ({s.definition} "
              f"{spend_budget(s)})  {s.mechanism}  -> "
              f"{s.destination}  release {s.release_id}  {state}")
    print(overview_line(now))
    if not now.spends:
        print(NOT_BY_FILE)
    return 0


#: said of a file with no release recorded under it
NOT_BY_FILE = ("note: a release also counts against every earlier dataset with the same "
               "counts, whatever its file (the ledger keys a dataset by its file and by its "
               "counts at the release's levels): `hierdp budget` lists them all")


def spend_budget(s: Spend) -> str:
    """A spend's budget in the release's own unit: ``epsilon 0.5``, ``rho 0.1, delta 1e-06``."""
    return (f"{'rho' if s.definition == 'zcdp' else 'epsilon'} {s.budget:g}"
            + (f", delta {s.delta:g}" if s.delta else ""))


def overview_line(d: DatasetBudget) -> str:
    """One dataset's spent / total / remaining in one line."""
    if d.total is None:
        return f"{d.label or d.fingerprint[:16]}: no publishable release yet; no total declared"
    unfinished = sum(not s.finished for s in d.spends)
    delta = f", delta {d.delta_spent:g} spent" if d.delta_spent else ""
    return (f"{d.label} ({d.fingerprint[:16]}…): {d.unit} {d.spent:g} spent of "
            f"{d.total:g} ({'declared' if d.declared else 'implicit: not declared'}), "
            f"{d.remaining:g} left{delta}; {len(d.spends)} release(s)"
            + (f", {unfinished} unfinished (counted)" if unfinished else ""))


def as_dict(d: DatasetBudget) -> dict:
    return {"fingerprint": d.fingerprint, "label": d.label, "unit": d.unit, "total": d.total,
            "declared": d.declared, "spent": d.spent, "remaining": d.remaining,
            "delta_spent": d.delta_spent,
            "releases": [{**s.__dict__, "finished": s.finished} for s in d.spends]}


def resolve_dataset(text: str, key_file, ledger: Ledger) -> tuple[str, str]:
    """(fingerprint, label) of ``--dataset``: an input file (or a Dask dataset: its bytes'
    fingerprint, an alias of the dataset its release keyed by content), else a
    fingerprint, or a unique prefix of one, of a dataset or an alias in the ledger."""
    path = Path(text)
    if path.exists() or any(ch in text for ch in "*?["):
        from hierdp_core.engine.dask_engine import dataset_files

        content = path if path.is_file() else dataset_files(text)
        return input_fingerprint(content, key_file, None), path.name
    if not FINGERPRINT.fullmatch(text):
        raise InputError(f"--dataset {text!r} is neither a file nor a fingerprint")
    matches = ledger.matching(text)
    if len(matches) > 1:
        raise InputError(f"the fingerprint prefix {text!r} matches {len(matches)} datasets; "
                         "give more of it")
    if not matches and len(text) < 64:
        raise BudgetError(f"no dataset with a fingerprint starting {text!r} in "
                          f"{ledger.path}")
    return (matches[0].fingerprint, matches[0].label) if matches else (text, "")

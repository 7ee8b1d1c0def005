"""The budget of a dataset across releases: a write-ahead ledger that refuses to overspend.

A dataset is keyed by a keyed fingerprint of its content (an HMAC under the publisher's key:
`hierdp_core.privacy.dataset_key`, e.g. of a counts release's true counts, so the same
records in any order or format are one dataset), never by a plain hash of the data; its
other keys (the file's bytes, as in the manifest's ``input.fingerprint``, an upload's table,
a bundled sample's name) are recorded as its *aliases*: a release is counted against the
dataset any of its keys already names, and adds its other keys to it. The ledger is one
SQLite file, ``$HIERDP_HOME/ledger.sqlite`` (``~/.hierdp/ledger.sqlite``
without HIERDP_HOME), beside the publisher's key and never in a release folder.

Each dataset has a total in one unit:

* ``epsilon`` (pure and approximate DP, basic composition): the epsilons of its releases
  add up, and so do the deltas of its approximate-DP releases, which may not exceed the
  public delta ceiling (``max_delta``, `hierdp_core.privacy.budget.DEFAULT_MAX_DELTA`): a release
  that would take them above it is refused. A zCDP release cannot be counted against it
  and is refused.
* ``rho`` (zCDP): the rhos add up; a pure epsilon-DP release counts as epsilon^2 / 2
  (Bun & Steinke 2016, Prop. 1.4). An approximate-DP release is refused.

The total is declared once (`declare_total`; changing it needs ``change=True``, and it never
drops below what is spent). Without a declaration, the first release's own budget becomes
the total (marked *implicit*): a dataset never spends more than one release's budget until
the publisher declares a total.

Write-ahead: `reserve` checks the total and records the spend in one transaction BEFORE any
noise is drawn; `commit` marks it with where the release went once it is written. A
reservation that is never committed (a killed or failed run: its noise may have been drawn)
counts as spent and is listed as unfinished. Both are idempotent for one release id, so a
replayed step never counts a release twice. Exploration (seeded) releases never come here.

Example
-------
>>> import tempfile, pathlib
>>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
>>> ledger.declare_total("ab" * 32, 2.0, unit="epsilon", label="people.csv")
>>> spend = ledger.reserve("ab" * 32, PrivacyBudget.pure(1.5), label="people.csv",
...                        destination="out", mechanism="topdown")
>>> ledger.commit(spend.release_id, manifest_sha256="00")
>>> ledger.status("ab" * 32).remaining
0.5
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sqlite3
import uuid
from contextlib import closing, contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.budget import APPROX_DP, DEFAULT_MAX_DELTA, PURE_DP, ZCDP, PrivacyBudget

HOME_ENV = "HIERDP_HOME"
LEDGER_FILE = "ledger.sqlite"
UNITS = ("epsilon", "rho")
RESERVED, COMMITTED = "reserved", "committed"
_REL_TOL = 1e-9  # sums of float budgets: 0.1 + 0.2 fits a total of 0.3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY,
    unit TEXT NOT NULL CHECK (unit IN ('epsilon', 'rho')),
    total REAL NOT NULL CHECK (total > 0),
    declared INTEGER NOT NULL,
    set_utc TEXT NOT NULL,
    label TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    release_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL REFERENCES datasets (fingerprint),
    definition TEXT NOT NULL,
    budget REAL NOT NULL,
    delta REAL,
    charge REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('reserved', 'committed')),
    reserved_utc TEXT NOT NULL,
    committed_utc TEXT,
    destination TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    manifest_sha256 TEXT
);
CREATE TABLE IF NOT EXISTS aliases (
    alias TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL REFERENCES datasets (fingerprint)
);
"""


def hierdp_home() -> Path:
    """The per-user folder of the ledger: ``$HIERDP_HOME``, else ``~/.hierdp``."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".hierdp")


def default_ledger_path() -> Path:
    return hierdp_home() / LEDGER_FILE


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def charge_of(budget: PrivacyBudget, unit: str) -> float:
    """What ``budget`` costs in a dataset's ``unit`` (see the module docstring); a
    `BudgetError` when it cannot be counted in that unit."""
    if unit == "epsilon" and budget.definition in (PURE_DP, APPROX_DP):
        return budget.value
    if unit == "rho" and budget.definition == ZCDP:
        return budget.value
    if unit == "rho" and budget.definition == PURE_DP:
        return budget.value ** 2 / 2
    raise BudgetError(f"this dataset's budget is counted in {unit}; a {budget.definition} "
                      f"release cannot be counted against it (release with "
                      f"{'--epsilon' if unit == 'epsilon' else '--rho or a pure --epsilon'})")


def unit_of(budget: PrivacyBudget) -> str:
    """The unit a dataset's total takes from its first release's budget."""
    return "rho" if budget.definition == ZCDP else "epsilon"


@dataclass(frozen=True)
class Spend:
    """One release's entry: ``charge`` is in the dataset's unit; ``budget`` in the
    release's own (epsilon, or rho under zCDP). ``status`` is reserved (unfinished: counted,
    its noise may have been drawn) or committed."""

    release_id: str
    definition: str
    budget: float
    delta: float | None
    charge: float
    status: str
    reserved_utc: str
    committed_utc: str | None
    destination: str
    mechanism: str
    manifest_sha256: str | None

    @property
    def finished(self) -> bool:
        return self.status == COMMITTED


@dataclass(frozen=True)
class DatasetBudget:
    """A dataset's total (None before its first release or declaration), what its releases
    spent (unfinished ones included) and each spend, oldest first."""

    fingerprint: str
    label: str
    unit: str | None
    total: float | None
    declared: bool
    spends: tuple[Spend, ...]

    @property
    def spent(self) -> float:
        return math.fsum(s.charge for s in self.spends)

    @property
    def delta_spent(self) -> float:
        return math.fsum(s.delta for s in self.spends
                         if s.delta is not None and s.definition == APPROX_DP)

    @property
    def remaining(self) -> float | None:
        return None if self.total is None else max(self.total - self.spent, 0.0)

    def fits(self, charge: float) -> bool:
        """Whether one more release of ``charge`` stays within the total."""
        return self.total is None or self.spent + charge <= self.total * (1 + _REL_TOL)

    def delta_fits(self, budget: PrivacyBudget, max_delta: float = DEFAULT_MAX_DELTA) -> bool:
        """Whether one more release of ``budget`` keeps the deltas of the dataset's
        approximate-DP releases, added up, at or below ``max_delta``."""
        if budget.definition != APPROX_DP or not budget.delta:
            return True
        return self.delta_spent + budget.delta <= max_delta * (1 + _REL_TOL)


class Ledger:
    """The ledger in one SQLite file (created with its folder, owner-only, on first use)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_ledger_path()

    @contextmanager
    def _transaction(self):
        """A connection in an immediate (write-locked) transaction, committed on success."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fresh = not self.path.exists()
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            if fresh:
                os.chmod(self.path, 0o600)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the budget ledger {str(self.path)!r}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        with closing(connection):
            try:
                connection.execute("BEGIN IMMEDIATE")
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    connection.execute(statement)
                yield connection
                connection.execute("COMMIT")
            except BaseException as exc:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise InputError(f"the budget ledger {str(self.path)!r} cannot be used: "
                                     f"{exc}") from None
                raise

    def status(self, fingerprint: str, aliases: tuple[str, ...] = ()) -> DatasetBudget:
        """The budget and spends of the dataset ``fingerprint`` or, failing it, one of
        ``aliases`` names (as `reserve` finds it; an empty one for a dataset never seen)."""
        with self._transaction() as db:
            return _status(db, _resolved(db, fingerprint, aliases))

    def datasets(self) -> list[DatasetBudget]:
        """Every dataset of the ledger, in the order they were first set."""
        if not self.path.exists():
            return []
        with self._transaction() as db:
            rows = db.execute("SELECT fingerprint FROM datasets ORDER BY set_utc, rowid")
            return [_status(db, fp) for (fp,) in rows.fetchall()]

    def matching(self, prefix: str) -> list[DatasetBudget]:
        """The datasets whose fingerprint, or an alias of which, starts with ``prefix``."""
        if not self.path.exists():
            return []
        with self._transaction() as db:
            rows = db.execute(
                "SELECT fingerprint FROM datasets WHERE substr(fingerprint, 1, ?) = ? UNION "
                "SELECT fingerprint FROM aliases WHERE substr(alias, 1, ?) = ?",
                (len(prefix), prefix, len(prefix), prefix)).fetchall()
            return [_status(db, fp) for (fp,) in sorted(rows)]

    def declare_total(self, fingerprint: str, total: float, *, unit: str, label: str,
                      change: bool = False, aliases: tuple[str, ...] = ()) -> None:
        """Declare the total of the dataset ``fingerprint`` or one of ``aliases`` names
        (`reserve`). A declared total different from ``total`` is kept unless ``change``; a
        total below what is spent, or in another unit than its spends, is refused."""
        if unit not in UNITS:
            raise BudgetError(f"a budget total is in epsilon or rho, not {unit!r}")
        if not (isinstance(total, (int, float)) and math.isfinite(total) and total > 0):
            raise BudgetError(f"a budget total must be a positive number, got {total!r}")
        with self._transaction() as db:
            keys, fingerprint = (fingerprint, *aliases), _resolved(db, fingerprint, aliases)
            now = _status(db, fingerprint)
            if now.declared and not change:
                if now.unit == unit and math.isclose(now.total, total):
                    return
                raise BudgetError(f"the budget total of {now.label} is already declared as "
                                  f"{now.unit} {now.total:g}; to change it, add "
                                  "--change-budget-total")
            if now.spends and now.unit != unit:
                raise BudgetError(f"{now.label} has spent {now.unit} {now.spent:g} already; "
                                  f"its total is in {now.unit}, not {unit}")
            if now.spent > total * (1 + _REL_TOL):
                raise BudgetError(f"{now.label} has spent {now.unit} {now.spent:g} already; "
                                  f"a total of {total:g} is below it")
            db.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, 1, ?, ?)",
                       (fingerprint, unit, float(total), _now(), now.label or label))
            _add_aliases(db, fingerprint, keys)

    def reserve(self, fingerprint: str, budget: PrivacyBudget, *, label: str,
                destination: str, mechanism: str, release_id: str | None = None,
                max_delta: float = DEFAULT_MAX_DELTA, aliases: tuple[str, ...] = ()) -> Spend:
        """Record the spend of one release before its noise is drawn, or refuse it (a
        `BudgetError` naming spent, total and asked) when it would exceed the dataset's
        total, or take its deltas above ``max_delta`` (`DatasetBudget.delta_fits`). Without
        a total, the release's own budget becomes it (implicit). The dataset is the one
        ``fingerprint`` or, failing it, the first of ``aliases`` already names (itself or
        as an alias), else a new one keyed ``fingerprint``; the other keys become its
        aliases. An existing ``release_id`` returns its entry unchanged (a replay counts
        nothing twice)."""
        with self._transaction() as db:
            if release_id is not None:
                row = db.execute("SELECT * FROM spends WHERE release_id = ?",
                                 (release_id,)).fetchone()
                if row is not None:
                    return _spend_of(row)
            keys, fingerprint = (fingerprint, *aliases), _resolved(db, fingerprint, aliases)
            now = _status(db, fingerprint)
            unit = now.unit or unit_of(budget)
            charge = charge_of(budget, unit)
            if not now.delta_fits(budget, max_delta):
                raise BudgetError(delta_refusal(now.label or label, now.delta_spent,
                                                budget.delta, max_delta))
            if now.total is None:
                db.execute("INSERT INTO datasets VALUES (?, ?, ?, 0, ?, ?)",
                           (fingerprint, unit, charge, _now(), label))
            elif not now.fits(charge):
                raise BudgetError(refusal(now, charge))
            spend = Spend(release_id or uuid.uuid4().hex, budget.definition, budget.value,
                          budget.delta, charge, RESERVED, _now(), None, destination,
                          mechanism, None)
            db.execute("INSERT INTO spends VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (spend.release_id, fingerprint, *astuple(spend)[1:]))
            _add_aliases(db, fingerprint, keys)
            return spend

    def spend(self, release_id: str) -> Spend | None:
        """The entry ``release_id``, read without writing; None when the ledger does not
        exist or has no such entry; an `InputError` when it cannot be read."""
        if not self.path.exists():
            return None
        try:
            with closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro",
                                         uri=True, timeout=60)) as db:
                row = db.execute("SELECT * FROM spends WHERE release_id = ?",
                                 (release_id,)).fetchone()
        except sqlite3.Error as exc:
            raise InputError(f"the budget ledger {str(self.path)!r} cannot be read: "
                             f"{exc}") from None
        return None if row is None else _spend_of(row)

    def commit(self, release_id: str, *, manifest_sha256: str | None = None,
               destination: str | None = None) -> None:
        """Mark a reserved spend as a finished release (idempotent); an unknown id is an
        error."""
        with self._transaction() as db:
            row = db.execute("SELECT status FROM spends WHERE release_id = ?",
                             (release_id,)).fetchone()
            if row is None:
                raise BudgetError(f"no reservation {release_id!r} in the budget ledger")
            if row[0] == COMMITTED:
                return
            db.execute("UPDATE spends SET status = ?, committed_utc = ?, manifest_sha256 = ?, "
                       "destination = COALESCE(?, destination) WHERE release_id = ?",
                       (COMMITTED, _now(), manifest_sha256, destination, release_id))


def _spend_of(row: tuple) -> Spend:
    """A ``spends`` row as its `Spend` (the dataset's fingerprint, its second column, left
    out)."""
    return Spend(row[0], *row[2:])


def _resolved(db: sqlite3.Connection, fingerprint: str, aliases: tuple[str, ...] = ()) -> str:
    """The dataset the first of ``fingerprint`` and ``aliases`` the ledger knows names (as
    a dataset or an alias of one), else ``fingerprint``."""
    for key in (fingerprint, *aliases):
        if db.execute("SELECT 1 FROM datasets WHERE fingerprint = ?", (key,)).fetchone():
            return key
        row = db.execute("SELECT fingerprint FROM aliases WHERE alias = ?", (key,)).fetchone()
        if row is not None:
            return row[0]
    return fingerprint


def _add_aliases(db: sqlite3.Connection, fingerprint: str, keys) -> None:
    """Record ``keys`` as aliases of the dataset ``fingerprint``; a key already naming a
    dataset (its own, or another as an alias) keeps it."""
    for key in keys:
        if not db.execute("SELECT 1 FROM datasets WHERE fingerprint = ?", (key,)).fetchone():
            db.execute("INSERT OR IGNORE INTO aliases VALUES (?, ?)", (key, fingerprint))


def _status(db: sqlite3.Connection, fingerprint: str) -> DatasetBudget:
    row = db.execute("SELECT unit, total, declared, label FROM datasets WHERE fingerprint = ?",
                     (fingerprint,)).fetchone()
    rows = db.execute("SELECT * FROM spends WHERE fingerprint = ? ORDER BY reserved_utc, rowid",
                      (fingerprint,)).fetchall()
    spends = tuple(map(_spend_of, rows))
    if row is None:
        return DatasetBudget(fingerprint, "", None, None, False, spends)
    return DatasetBudget(fingerprint, row[3], row[0], row[1], bool(row[2]), spends)


def delta_refusal(label: str, spent: float, delta: float, max_delta: float) -> str:
    """The one line refusing a release of ``delta`` that takes the deltas of the dataset
    ``label`` (``spent`` so far) above ``max_delta``."""
    spent = f"{label} has spent delta {spent:g}; " if spent else ""
    return (f"this release's delta {delta:g} would take the deltas of "
            f"{label}'s releases above the public ceiling "
            f"{max_delta:g} ({spent}deltas of approximate-DP releases add up): release "
            "with a smaller --delta, well below 1/n (the number of people), or raise "
            "--max-delta on purpose")


def refusal(now: DatasetBudget, charge: float) -> str:
    """The one line refusing a release of ``charge`` that does not fit ``now``'s total."""
    unit = now.unit
    if not now.declared:
        return (f"{now.label}'s budget total is not declared: its first release spent "
                f"{unit} {now.spent:g}, the total until you declare one; this release asks "
                f"{unit} {charge:g} more: declare the total with --budget-total "
                f"(at least {now.spent + charge:g})")
    return (f"this release would exceed {now.label}'s budget: {unit} {now.spent:g} of "
            f"{now.total:g} spent, {now.remaining:g} left, this release asks {charge:g} "
            "(a larger total needs --budget-total N --change-budget-total)")

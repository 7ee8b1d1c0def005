"""A secure release marked as charged the way the charging paths mark it: its budget
reserved in the budget ledger first (the test's own, under HIERDP_HOME: `conftest`), so the
verdict finds the entry (`hierdp_core.verdict.ledger_mark_problem`)."""

import uuid

from hierdp_core.intervals.bootstrap import release_budget
from hierdp_core.privacy.ledger import Ledger


def charged_in_ledger(release, dataset: str | None = None):
    """``release`` marked with a ledger entry reserving its own budget for ``dataset`` (a
    new one by default)."""
    dataset = dataset or f"test-{uuid.uuid4().hex}"
    spend = Ledger().reserve(dataset, release_budget(release.privacy), label=dataset,
                             destination="test", mechanism=release.mechanism)
    return release.charged(spend.release_id)

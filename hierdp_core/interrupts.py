"""Whether Ctrl-C reached this process (standard library only: the command's entry point
records it before any other import). An interrupt can be swallowed on its way: an
extension's import turns it into an ImportError and a library that treats that module as
optional carries on (pandas does so with numpy's). So a release checks `received` before
it replaces its target (`hierdp_core.atomic.staged_folder`) and is abandoned, nothing
written, when Ctrl-C came at any moment before. A release whose budget was already counted
(its write-ahead spend) says so on the command's one line (`interrupted_line`)."""

from __future__ import annotations

#: the Ctrl-Cs received (their signal numbers), appended by the entry point's handler
RECEIVED: list[int] = []

#: the budgets this command counted in the ledger ahead of their noise ("epsilon 0.5"),
#: appended by `hierdp_core.cli.budget.reserve_release`; cleared as a command starts
COUNTED: list[str] = []


def received() -> bool:
    """Whether Ctrl-C reached the process at some point."""
    return bool(RECEIVED)


def interrupted_line() -> str:
    """The one line of a command stopped by Ctrl-C: ``interrupted``, and that the release's
    budget was counted when its write-ahead spend was made (`COUNTED`)."""
    if not COUNTED:
        return "interrupted"
    return (f"interrupted: the budget of this release ({', '.join(COUNTED)}) was counted in "
            "the ledger, as its noise may have been drawn; see `hierdp budget`")

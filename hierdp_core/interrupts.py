"""Whether Ctrl-C reached this process (standard library only: the command's entry point
records it before any other import). An interrupt can be swallowed on its way: an
extension's import turns it into an ImportError and a library that treats that module as
optional carries on (pandas does so with numpy's). So a release checks `received` before
it replaces its target (`hierdp_core.atomic.staged_folder`) and is abandoned, nothing
written, when Ctrl-C came at any moment before."""

from __future__ import annotations

#: the Ctrl-Cs received (their signal numbers), appended by the entry point's handler
RECEIVED: list[int] = []


def received() -> bool:
    """Whether Ctrl-C reached the process at some point."""
    return bool(RECEIVED)

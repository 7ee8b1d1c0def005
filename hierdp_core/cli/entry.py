"""The ``hierdp`` command's entry point (the console script and ``python -m hierdp_core``):
Ctrl-C at any moment prints one line, ``interrupted``, and exits with status 130, never a
traceback: while the command's modules are imported (numpy, pandas, ... take a second),
while its arguments are read, while it runs (`hierdp_core.cli.main.main` says it), and after it
ended. An interrupted release leaves nothing half-written (`hierdp_core.atomic`: the
staging folder is removed as the interrupt unwinds).

This module imports nothing but the standard library, so its handling is in place as soon
as the interpreter runs it.
"""

from __future__ import annotations

import os
import signal
import sys

from hierdp_core.interrupts import RECEIVED, received

INTERRUPTED = 130


def _say_interrupted() -> None:
    """One line on stderr, whatever state the streams are in."""
    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stderr: nothing to say it on
        pass


def _leave_now(signum, frame) -> None:
    """Ctrl-C once the command has ended (or said it was interrupted): nothing is left to
    write or clean, so the process leaves at once, with what it printed flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _say_interrupted()
    os._exit(INTERRUPTED)


def _interrupt(signum, frame) -> None:
    """Ctrl-C while the command runs: Python's own KeyboardInterrupt, remembered
    (`hierdp_core.interrupts`), since an extension's import may turn it into an ImportError
    with no link to it (pandas re-raises numpy's that way)."""
    RECEIVED.append(signum)
    raise KeyboardInterrupt


def run(argv: list[str] | None = None) -> int:
    """The command's exit status: `hierdp_core.cli.main.main`'s, or 130 after one
    ``interrupted`` line when Ctrl-C comes before it handles it (imports, arguments) or
    while it reports an error. Later Ctrl-Cs leave at once (`_leave_now`)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        from hierdp_core.cli.main import main

        code = main(argv, interrupt_received=received)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, _leave_now)
        _say_interrupted()
        return INTERRUPTED
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _interrupt):
        signal.signal(signal.SIGINT, _leave_now)  # interpreter shutdown: no traceback either
    return code


def entry() -> None:
    """The console script: exit with `run`'s status."""
    sys.exit(run())

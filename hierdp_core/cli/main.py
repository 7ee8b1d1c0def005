"""The ``hierdp`` command line: list mechanisms, release, evaluate, verify, audit, budget.

Bad input prints one line ``error: ...`` to stderr and exits with status 2; never a traceback.

Start-up is light: the parser and the checks of `EARLY_CHECKS` run on the standard library,
so ``--help``, a usage error or a release too big for memory (``--domain 0-100000000``)
answers in a fraction of a second; a command imports its modules (numpy, pandas, the
mechanisms of its query kind) only when it runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from contextlib import nullcontext

from hierdp_core.cli.parser import EXIT_BAD_INPUT, build_parser
from hierdp_core.errors import HierdpError
from hierdp_core.interrupts import COUNTED, interrupted_line

#: each command's function, as "module:function" under hierdp_core, imported when it runs
COMMANDS = {"mechanisms": "cli.commands:cmd_mechanisms", "release": "cli.release:cmd_release",
            "evaluate": "cli.evaluate:cmd_evaluate", "verify": "cli.commands:cmd_verify",
            "sample": "cli.commands:cmd_sample", "audit": "cli.commands:cmd_audit",
            "budget": "cli.budget:cmd_budget"}
#: a command whose parsed arguments are converted, at its boundary, into the settings it
#: runs on (``release``: its `ReleaseConfig` and `RunOptions`); the others take the arguments
SETTINGS = {"release": "cli.config_file:settings_of_args"}
#: checks on the settings alone that run, in turn, before the command's modules are
#: imported: the budget's ranges, then the sizes typed against the memory
EARLY_CHECKS = {"release": ("cli.budget:check_release_budget",
                            "cli.memory:check_declared_memory")}
#: what runs beside the command once its early checks pass, on the settings too (a context
#: manager): ``release`` reads its input ahead while its modules are imported
ALONGSIDE = {"release": "cli.early_read:reading_input"}
#: how a command words a core error in its options (``release``: levels named finest first,
#: by the option that named them), from the error and the settings
IN_OPTIONS = {"release": "cli.inputs:in_options"}


def _function(where: str):
    """The function named ``module:function`` under hierdp_core."""
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(f"hierdp_core.{module}"), name)


def run_command(args) -> int:
    """``args`` converted into the command's settings (`SETTINGS`), the early checks of
    ``args.command`` on them, then the command (with what runs `ALONGSIDE` it; its core
    errors worded `IN_OPTIONS`)."""
    convert = SETTINGS.get(args.command)
    settings = _function(convert)(args) if convert else (args,)
    for check in EARLY_CHECKS.get(args.command, ()):
        _function(check)(*settings)
    alongside = ALONGSIDE.get(args.command)
    try:
        with _function(alongside)(*settings) if alongside else nullcontext():
            return _function(COMMANDS[args.command])(*settings)
    except HierdpError as exc:
        said = _function(IN_OPTIONS[args.command])(exc, *settings) \
            if args.command in IN_OPTIONS else exc
        if said is exc:
            raise
        raise said from exc


def _interrupted_in(exc: BaseException, interrupt_received: Callable[[], bool]) -> bool:
    """Whether a KeyboardInterrupt lies in ``exc``'s chain of causes, or Ctrl-C reached the
    command at all (``interrupt_received()``, the entry point's): numpy turns Ctrl-C during the import
    of its C extension into an ImportError (its "IMPORTANT: PLEASE READ THIS" advice)
    raised from the interrupt, and pandas re-raises that as an ImportError of its own."""
    if interrupt_received():
        return True
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv: list[str] | None = None, *,
         interrupt_received: Callable[[], bool] = lambda: False) -> int:
    """Run the command of ``argv``: its exit status. ``interrupt_received``: whether Ctrl-C
    reached the command (`hierdp_core.cli.entry` tells, which runs this)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, 2), --help and --version (0)
        return int(exc.code or 0)
    COUNTED.clear()
    try:
        return run_command(args)
    except HierdpError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:  # a --max-memory above what this process may take, or a plan short
        if args.debug:
            raise
        print("error: out of memory: the release needs more than this process may use (the "
              "machine, ulimit -v or a container); lower the sizes or --max-memory",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(interrupted_line(), file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `hierdp mechanisms | head`: the reader left; stay quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # an unexpected failure: one line, details with --debug
        if _interrupted_in(exc, interrupt_received):  # Ctrl-C inside an extension's import, which wraps it
            print(interrupted_line(), file=sys.stderr)
            return 130
        if args.debug:
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (run with --debug for details)",
              file=sys.stderr)
        return 1

"""Kill `hierdp release --overwrite` at every step of its write, one step per trial.

Run as ``python tests/kill_during_write.py OUT ARGV_JSON`` (ARGV_JSON: the release's
arguments without ``--seed``, ``--out`` and ``--overwrite``). It writes a first release
(seed 0) to OUT, then for k = 1, 2, ... forks a child that overwrites it (seed k) and
SIGKILLs itself just before its k-th change to the file system beside OUT (a file opened
for writing, a folder made, renamed or removed, the atomic exchange), and reads OUT back
with `read_release`. One JSON line per trial: ``{"k", "killed", "seed"}`` (``seed``: the
seed of the release read back, or ``"error"`` with the reason); it stops after the first
child that finished without being killed. The children are forked from one process that
imported everything, so a trial costs the write, not Python's start-up.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from hierdp_core.cli.main import main
from hierdp_core.export import read_release

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "shutil.rmtree",
            "os.truncate", "os.symlink", "os.link"}


def _changes_beside(where: str, event: str, args: tuple) -> bool:
    """Whether an audit event changes the file system under the folder ``where``."""
    if event == "ctypes.call_function":  # renameat2(RENAME_EXCHANGE) of hierdp_core.atomic
        return any(isinstance(a, bytes) and a.startswith(os.fsencode(where)) for a in args[1])
    if event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else \
            bool((flags or 0) & _WRITE_FLAGS)
        return writes and isinstance(path, str | bytes | os.PathLike) and \
            os.fsdecode(path).startswith(where)
    if event in _CHANGES:
        return any(isinstance(a, str | bytes | os.PathLike) and
                   os.fsdecode(a).startswith(where) for a in args)
    return False


def main_loop(out: str, argv: list[str]) -> None:
    where = os.path.dirname(os.path.abspath(out))
    kill_at = {"k": 0, "seen": 0}

    def hook(event: str, args: tuple) -> None:
        if kill_at["k"] and _changes_beside(where, event, args):
            kill_at["seen"] += 1
            if kill_at["seen"] == kill_at["k"]:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
    if main([*argv, "--seed", "0", "--out", out]) != 0:
        raise SystemExit("the first release failed")
    for k in range(1, 200):
        pid = os.fork()
        if pid == 0:
            kill_at["k"] = k
            os._exit(main([*argv, "--seed", str(k), "--out", out, "--overwrite"]))
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        try:
            seed = read_release(out)[1]["randomness"]["seed"]
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            seed = f"error: {exc}"
        print(json.dumps({"k": k, "killed": killed, "seed": seed}), flush=True)
        if not killed:
            return


if __name__ == "__main__":
    main_loop(sys.argv[1], json.loads(sys.argv[2]))

"""The fuzzed command line (issue 32), shared by `test_cli_fuzz.py` (a short run in CI) and
`benchmarks/bench_cli_fuzz.py` (a long one): hypothesis draws a query kind, a mechanism
(or a bogus name), a small table with odd codes and the release flags, absurd numbers
included (huge domains, --max-size, many declared categories, large geographies, zero,
negative, NaN and infinite budgets, replicates and memory limits). `run_case` runs the
real command line in a subprocess under a hard address-space limit (`LIMIT_BYTES`) and a
timeout; `outcome` classifies the run and `problem` says what is wrong with it, if
anything: a release must be complete, a refusal exit 2 with one ``error:`` line and no
``--out`` folder, never a signal, a traceback, a MemoryError or an "unexpected" error.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from hypothesis import strategies as st

from hierdp_core.mechanisms.base import list_mechanisms

#: the address space a run may take (RLIMIT_AS)
LIMIT_BYTES = 2 * 2**30
ROOT = Path(__file__).resolve().parents[1]

CODES = ["A", "B", "06", "6", "é", "a b", "x/y", "%", ">", "NA", "0", "-", "日本", "q\"q"]
CODE = st.sampled_from(CODES)
BUDGETS = ["1", "0.5", "0", "-1", "nan", "inf", "1e-300", "1e300", "x", "20"]
BIG = [1, 3, 7, 100, 10_000, 10**6, 10**8, 10**12, 10**18]


@dataclass
class Case:
    """The files of a run (name -> text) and its flags (``{name}`` stands for a file)."""

    query: str
    files: dict[str, str]
    flags: list[str]
    notes: list[str] = field(default_factory=list)


def _rows(draw, columns: list[str], codes: dict[str, list], n: int) -> str:
    rows = [{c: draw(st.sampled_from(codes[c])) for c in columns} for _ in range(n)]
    return pd.DataFrame(rows, columns=columns).to_csv(index=False)


@st.composite
def counts_case(draw) -> Case:
    regions = draw(st.lists(CODE, min_size=1, max_size=3, unique=True))
    units = draw(st.lists(CODE, min_size=1, max_size=4, unique=True))
    table = _rows(draw, ["region", "unit", "sex", "age", "n"],
                  {"region": regions, "unit": units, "sex": ["F", "M"],
                   "age": ["0", "17", "90"], "n": [0, 1, 5, 40]}, draw(st.integers(1, 8)))
    flags = ["{input}", "--levels", "region,unit", "--count-column", "n"]
    categories = draw(st.sampled_from([[], ["sex"], ["sex", "age"]]))
    if categories:
        flags += ["--categories", ",".join(categories)]
    files = {"input": table}
    if draw(st.booleans()):  # declared: a geography and the categories' values
        flags += ["--geography", "{geography}"]
        many = draw(st.sampled_from([3, 20_000, 200_000]))
        files["geography"] = pd.DataFrame(
            {"region": [regions[i % len(regions)] for i in range(many)],
             "unit": [f"u{i}" for i in range(many)]}).to_csv(index=False)
        for column in categories:
            k = draw(st.sampled_from(BIG[:5]))  # argv stays under ARG_MAX
            flags += ["--category-values", f"{column}=" + "|".join(f"v{i}" for i in range(k))]
    else:
        flags.append("--structure-from-data")
    if draw(st.integers(0, 3)) == 0:
        flags += ["--invariant", "total"]
    return Case("counts", files, flags)


@st.composite
def ranges_case(draw) -> Case:
    ages = draw(st.lists(st.sampled_from(["0", "3", "7", "90", "-4", "1000000000000",
                                           "2.5", "x"]), min_size=1, max_size=6))
    lines = ["region,age,residents"] + [f"{draw(CODE)},{a},{draw(st.integers(0, 9))}"
                                        for a in ages]
    flags = ["{input}", "--levels", "region", "--attribute", "age", "--count-column",
             "residents", "--structure-from-data"]
    domain = draw(st.sampled_from([None, "0-100", "0-100000000", "0-1000000000000000",
                                   "-5-5", "5-1", "0-0", "a-b", "0-99999", "0-3000000"]))
    if domain is not None:
        flags += ["--domain", domain]
    workload = draw(st.sampled_from([None, "prefix", "all", "identity", "0-5,6-90", "9-1"]))
    if workload is not None:
        flags += ["--workload", workload]
    return Case("ranges", {"input": "\n".join(lines) + "\n"}, flags)


@st.composite
def group_sizes_case(draw) -> Case:
    table = _rows(draw, ["region", "size", "n"],
                  {"region": draw(st.lists(CODE, min_size=1, max_size=3, unique=True)),
                   "size": [1, 2, 3, 9, 0, -1], "n": [0, 1, 4]}, draw(st.integers(1, 8)))
    max_size = draw(st.sampled_from(["-1", "0", "1", "7", "1000", "100000", "1000000000",
                                     "1000000000000000000", "nan"]))
    flags = ["{input}", "--levels", "region", "--size-column", "size", "--count-column",
             "n", "--max-size", max_size, "--structure-from-data"]
    return Case("group-sizes", {"input": table}, flags)


@st.composite
def flows_case(draw) -> Case:
    areas = draw(st.sampled_from([3, 50, 3_000, 200_000]))
    states = max(1, areas // 10)
    codes = {"o_state": [f"S{i % states}" for i in range(4)],
             "o_area": [f"A{i}" for i in range(4)], "n": [1, 2, 7]}
    rows = [{"o_area": draw(st.sampled_from(codes["o_area"])),
             "d_area": draw(st.sampled_from(codes["o_area"])),
             "n": draw(st.sampled_from(codes["n"]))} for _ in range(draw(st.integers(1, 8)))]
    table = pd.DataFrame(rows)
    for end in ("o", "d"):
        table[f"{end}_state"] = [f"S{int(a[1:]) % states}" for a in table[f"{end}_area"]]
    files = {"input": table.to_csv(index=False),
             "geography": pd.DataFrame({"state": [f"S{i % states}" for i in range(areas)],
                                        "area": [f"A{i}" for i in range(areas)]}
                                       ).to_csv(index=False)}
    flags = ["{input}", "--origin-levels", "o_state,o_area", "--destination-levels",
             "d_state,d_area", "--count-column", "n", "--geography", "{geography}",
             "--delta", draw(st.sampled_from(["1e-6", "0", "1", "nan", "-1e-6"]))]
    if draw(st.booleans()):
        flags += ["--invariant", "total"]
    return Case("flows", files, flags)


KINDS = {"counts": counts_case, "ranges": ranges_case, "group-sizes": group_sizes_case,
         "flows": flows_case}


@st.composite
def fuzz_cases(draw) -> Case:
    """A case of any query kind with a mechanism and the budget, interval and memory
    flags drawn, absurd values included."""
    query = draw(st.sampled_from(list(KINDS)))
    case = draw(KINDS[query]())
    names = [m.name for m in list_mechanisms(query)]
    mechanism = draw(st.sampled_from([*names, *names, "nope"]))
    case.flags += ["--query", query, "--mechanism", mechanism, "--allow-nonprivate"]
    if draw(st.integers(0, 3)) == 0:
        case.flags += ["--rho", draw(st.sampled_from(BUDGETS))]
    else:
        case.flags += ["--epsilon", draw(st.sampled_from(BUDGETS))]
    interval = draw(st.sampled_from(["none", "none", "none", "0.9", "1.5", "nan", None]))
    if interval is not None:
        case.flags += ["--interval", interval]
    replicates = draw(st.sampled_from([None, None, "2", "5", "-1", "1000000000"]))
    if replicates is not None:
        case.flags += ["--interval-replicates", replicates]
    memory = draw(st.sampled_from([None, None, None, "1KB", "64MB", "0", "-5GB", "nan",
                                   "1e999GB", "10TB"]))
    if memory is not None:
        case.flags += ["--max-memory", memory]
    split = draw(st.sampled_from([None, None, "1,2", "0,0", "nan,1", "-1,2", "1,2,3,4,5"]))
    if split is not None:
        case.flags += ["--split", split]
    if draw(st.integers(0, 4)) == 0:
        case.flags.append("--secure")
    else:
        case.flags += ["--seed", "1"]
    return case


def _files_and_argv(case: Case, folder: Path) -> tuple[list[str], Path]:
    """Write the case's files into ``folder``: (the ``hierdp release`` arguments, the --out
    folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, text in case.files.items():
        paths[name] = folder / f"{name}.csv"
        paths[name].write_text(text, encoding="utf-8")
    out = folder / "release"
    argv = [flag.format(**{k: str(p) for k, p in paths.items()}) if flag.startswith("{")
            else flag for flag in case.flags]
    return ["release", *argv, "--key-file", str(folder / "key"), "--out", str(out)], out


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def run_case(case: Case, folder: Path, timeout: float = 240) -> tuple[int | None, str, Path]:
    """Run ``hierdp release`` on the case in ``folder`` (a subprocess, address space capped
    at `LIMIT_BYTES`): (exit status, negative for a signal, None for a timeout; stderr;
    the --out folder)."""
    argv, out = _files_and_argv(case, folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(folder)}
    try:
        done = subprocess.run([sys.executable, "-m", "hierdp_core", *argv],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              preexec_fn=_limit, cwd=folder)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return None, err or "", out
    return done.returncode, done.stderr, out


def warm_up() -> None:
    """Import, once in this process, every module a release may use, so that the children
    of `run_case_forked` start with them (the long run's cases then cost their work, not
    the seconds of numpy, pandas and scipy imports each)."""
    import hierdp_core.cli.commands  # noqa: F401
    import hierdp_core.cli.release  # noqa: F401
    import hierdp_core.export  # noqa: F401
    import hierdp_core.intervals  # noqa: F401

    list_mechanisms()


def run_case_forked(case: Case, folder: Path, timeout: float = 240
                    ) -> tuple[int | None, str, Path]:
    """`run_case` in a child forked from this (warmed-up: `warm_up`) process: the same
    entry (`hierdp_core.cli.entry.run`), address-space cap, HOME and working folder, and
    the same result; an exception escaping the entry is printed as the interpreter would
    (a traceback, exit 1). Only the start-up imports are not exercised (the CI run,
    `run_case`, does)."""
    argv, out = _files_and_argv(case, folder)
    err_path = folder / "stderr.txt"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.chdir(folder)
            os.environ["HOME"] = str(folder)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            _limit()
            from hierdp_core.cli.entry import run

            code = run(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = None
            break
        time.sleep(0.02)
    return code, err_path.read_text(errors="replace") if err_path.exists() else "", out


def outcome(code: int | None, err: str) -> str:
    """'released', 'refused', 'timeout', 'signal' or 'failed'."""
    if code is None:
        return "timeout"
    if code < 0:
        return "signal"
    return {0: "released", 2: "refused"}.get(code, "failed")


def problem(code: int | None, err: str, out: Path) -> str | None:
    """What is wrong with a run, or None: a release is complete, a refusal is one
    ``error:`` line and leaves no --out folder, and nothing is a crash."""
    from hierdp_core.export import read_release

    kind = outcome(code, err)
    if kind in ("timeout", "signal", "failed"):
        return f"{kind} (exit {code}): {err.strip()[-500:]}"
    for bad in ("Traceback", "MemoryError", "unexpected"):
        if bad in err:
            return f"{bad!r} on stderr: {err.strip()[-500:]}"
    if kind == "refused":
        lines = [line for line in err.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("error: "):
            return f"a refusal of {len(lines)} lines: {err.strip()[-500:]}"
        if out.exists():
            return "a refusal left the --out folder behind"
        return None
    try:
        table, manifest = read_release(out, out.parent / "key")  # the key run_case gave
    except Exception as exc:  # any failure to read it back is the finding
        return f"an incomplete release: {type(exc).__name__}: {exc}"
    if len(table) == 0 or not manifest.get("files"):
        return "a release without rows or files"
    return None

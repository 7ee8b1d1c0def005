"""Large-input benchmark: the whole ``hierdp release`` of a 10.8M-row, 330 MB CSV.

Generates, in a temporary folder, survey-style person records over a 3-level geography
(52 states > 3,200 counties > 80,000 tracts, GEOID-style codes with leading zeros) with a
sex and an age-group category and a count column ``n`` (1..4, the persons a record
stands for; rows in random order), plus the public geography file (one row per tract).
Then, in the same run, each side ``--repeat`` times (3 by default), in turn (read, release,
read, release, ...), since either moves by a third from one run to the next on a shared
machine:

* ``read_csv_seconds``: the median time of ``pyarrow.csv.read_csv`` of the file with the
  code columns read as strings (what a correct reader must do: codes keep their leading
  zeros), in this process; every run's in ``read_csv_seconds_runs``;
* ``seconds``: the median time of the CLI release as a subprocess, reading and writing
  included (``python -m hierdp_core release ... --mechanism topdown`` with secure noise, no
  seed, over the declared geography and category values, the default intervals), each with
  a budget ledger of its own; every run's in ``seconds_runs``, and the largest peak RSS of
  the runs (``/usr/bin/time``);
* with ``--stages``, the same release once more under cProfile: ``stages`` gives the
  seconds of read, build, noise, estimate, intervals and write (the profiler inflates the
  pure-Python parts a little; the timing above is without it).

The package is byte-compiled first, as an installed one is (`compile_package`). Both are
also given in CPU seconds (user + system, every thread, medians:
``read_csv_cpu_seconds``, ``cpu_seconds``, ``cpu_ratio``), which a loaded machine inflates
far less than wall time.

The acceptance target of issue 28: ``ratio`` (the medians' ratio) at most 3 and peak memory
under 1.5 GB. ``fixed_seconds`` is the same release of the file's first 1,000 rows (start-up,
imports, the geography, secure noise on every released cell, writing): what does not grow
with the input; ``input_seconds`` the rest. Prints ONE JSON object to stdout. See
benchmarks/README.md.

Examples::

    python benchmarks/bench_large_input.py                  # 10,800,000 rows
    python benchmarks/bench_large_input.py --rows 1000000   # a quick run
"""

from __future__ import annotations

import argparse
import compileall
import gc
import importlib.util
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from machine import machine_info

N_STATES, N_COUNTIES, N_TRACTS = 52, 3_200, 80_000
SEXES = ("F", "M")
AGE_GROUPS = ("0-17", "18-64", "65+")
TARGET_RATIO, TARGET_RSS_MB = 3.0, 1536.0
#: the release's stages (``--stages``): the functions of the CLI whose cumulative profiled
#: seconds make each (the noise is taken out of ``release``, giving ``estimate``; the
#: declared reader's reading, `place_rows`, out of its building)
STAGES = {
    "read": (("cli/table.py", ("read_input", "lookalike_warning", "prepare_input")),
             ("data/declared_rows.py", ("place_rows",))),
    "build": (("cli/inputs.py", ("input_data",)),
              ("cli/declared_input.py", ("declared_count_input",))),
    "noise": (("samplers.py", ("apply",)),),
    "release": (("mechanisms/counts.py", ("release",)),),
    "intervals": (("intervals/__init__.py", ("with_intervals",)),),
    "write": (("export.py", ("write_release",)),),
}


def _spread(n_children: int, n_parents: int, rng: np.random.Generator) -> np.ndarray:
    """The parent (sorted) of each of ``n_children`` nodes, every parent at least one."""
    weights = rng.lognormal(0.0, 0.9, n_parents)
    extra = rng.multinomial(n_children - n_parents, weights / weights.sum())
    return np.repeat(np.arange(n_parents), extra + 1)


def make_input(folder: Path, rows: int, seed: int) -> tuple[Path, Path]:
    """Write ``people.csv`` (rows records) and ``geography.csv`` (one row per tract)."""
    rng = np.random.default_rng(seed)
    county_state = _spread(N_COUNTIES, N_STATES, rng)
    tract_county = _spread(N_TRACTS, N_COUNTIES, rng)
    state_code = np.char.zfill(np.arange(1, N_STATES + 1).astype(str), 2)
    county_code = np.char.add(state_code[county_state],
                              np.char.zfill((np.arange(N_COUNTIES) % 997 + 1).astype(str), 3))
    tract_code = np.char.add(county_code[tract_county],
                             np.char.zfill((np.arange(N_TRACTS) * 7 % 999_999).astype(str), 6))
    tract_state = county_state[tract_county]
    geography = pa.table({"state": state_code[tract_state], "county": county_code[tract_county],
                          "tract": tract_code})
    geo_path = folder / "geography.csv"
    options = pacsv.WriteOptions(quoting_style="none")  # codes hold no delimiter or quote
    pacsv.write_csv(geography, geo_path, write_options=options)

    popularity = rng.lognormal(0.0, 1.0, N_TRACTS)
    tract = rng.choice(N_TRACTS, size=rows, p=popularity / popularity.sum()).astype(np.int32)

    def column(index: np.ndarray, values) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(index), pa.array(values)).cast(pa.string())

    table = pa.table({
        "state": column(tract_state[tract], state_code),
        "county": column(tract_county[tract], county_code),
        "tract": column(tract, tract_code),
        "sex": column(rng.integers(0, len(SEXES), rows, dtype=np.int8), SEXES),
        "age_group": column(rng.choice(len(AGE_GROUPS), rows, p=(0.22, 0.61, 0.17))
                            .astype(np.int8), AGE_GROUPS),
        "n": rng.integers(1, 5, rows, dtype=np.int64),
    })
    path = folder / "people.csv"
    pacsv.write_csv(table, path, write_options=options)
    return path, geo_path


def release_command(path: Path, geo_path: Path, out: Path, key: Path) -> list[str]:
    return [sys.executable, "-m", "hierdp_core", "release", str(path),
            "--levels", "state,county,tract", "--count-column", "n", "--duplicates", "sum",
            "--categories", "sex,age_group",
            "--category-values", "sex=" + "|".join(SEXES),
            "--category-values", "age_group=" + "|".join(AGE_GROUPS),
            "--geography", str(geo_path), "--mechanism", "topdown", "--epsilon", "1",
            "--format", "csv", "--key-file", str(key), "--out", str(out)]


def compile_package() -> None:
    """Byte-compiles hierdp_core where the release imports it from, as pip does when it
    installs a package: with ``PYTHONDONTWRITEBYTECODE`` set, a checkout's releases would
    otherwise compile every module again on each run (0.27 s of a release measured)."""
    folder = Path(importlib.util.find_spec("hierdp_core").origin).parent
    compileall.compile_dir(folder, quiet=1)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _env(folder: Path, home: str = "hierdp-home") -> dict:
    """The environment of a release: its budget ledger in ``folder / home`` (HIERDP_HOME),
    not the user's."""
    return {**os.environ, "HIERDP_HOME": str(folder / home)}


def run_release(command: list[str], folder: Path,
                home: str = "hierdp-home") -> tuple[float, float, float]:
    """(seconds, CPU seconds, peak RSS in MB) of the CLI subprocess, measured by
    /usr/bin/time: this process's own children counters would include the pages a forked
    child holds before it execs, i.e. this process's memory (the generated table, pandas'
    frame)."""
    report = folder / "time.txt"
    timed = ["/usr/bin/time", "-f", "%U %S %M", "-o", str(report), *command]
    start = time.perf_counter()
    proc = subprocess.run(timed, capture_output=True, text=True, env=_env(folder, home))
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the release failed ({proc.returncode}): {proc.stderr.strip()}")
    user, system, kilobytes = report.read_text().split()[-3:]
    return seconds, float(user) + float(system), round(int(kilobytes) / 1024, 1)


def read_with_strings(path: Path) -> int:
    """``pyarrow.csv.read_csv`` of ``path``, the code and category columns as strings; rows."""
    types = {c: pa.string() for c in ("state", "county", "tract", "sex", "age_group")}
    return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types)).num_rows


def timed_read(path: Path) -> tuple[int, float, float]:
    """(rows, seconds, CPU seconds) of `read_with_strings`, its table freed before returning."""
    gc.collect()
    start, start_cpu = time.perf_counter(), cpu_seconds()
    rows = read_with_strings(path)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
    gc.collect()
    return rows, seconds, cpu


def profiled_stages(command: list[str], folder: Path) -> dict[str, float]:
    """The release ``command`` once more under cProfile: seconds per stage (`STAGES`; the
    estimate is the mechanism's release less its noise, the rest start-up and checks)."""
    import pstats

    prof = folder / "release.prof"
    proc = subprocess.run([command[0], "-m", "cProfile", "-o", str(prof), *command[1:]],
                          capture_output=True, text=True, env=_env(folder))
    if proc.returncode != 0:
        raise SystemExit(f"the profiled release failed ({proc.returncode}): {proc.stderr}")
    stats = pstats.Stats(str(prof)).stats
    total = max(v[3] for v in stats.values())
    out = {}
    for stage, places in STAGES.items():
        out[stage] = sum(v[3] for (f, _, name), v in stats.items() for file, names in places
                         if f.endswith(file) and name in names and "hierdp_core" in f)
    out["estimate"] = out.pop("release") - out["noise"]
    out["build"] -= sum(v[3] for (f, _, name), v in stats.items()
                        if f.endswith("data/declared_rows.py") and name == "place_rows")
    out["other"] = total - sum(out.values())
    return {k: round(v, 2) for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_800_000)
    parser.add_argument("--seed", type=int, default=0, help="seeds the synthetic data only")
    parser.add_argument("--keep", metavar="DIR",
                        help="write the input and the release into DIR and keep them")
    parser.add_argument("--repeat", type=int, default=3,
                        help="times each side is timed, in turn (medians reported)")
    parser.add_argument("--stages", action="store_true",
                        help="run the release once more under cProfile for its stages")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hierdp-large-") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        path, geo_path = make_input(folder, args.rows, args.seed)
        generate_seconds = time.perf_counter() - start
        input_mb = path.stat().st_size / 1e6
        compile_package()
        gc.collect()

        reads, releases = [], []
        for run in range(args.repeat):  # in turn: both sides see the same load
            n_rows, *read = timed_read(path)
            reads.append(read)
            out = folder / f"release-{run + 1}"
            command = release_command(path, geo_path, out, folder / "fingerprint.key")
            releases.append(run_release(command, folder, f"hierdp-home-{run + 1}"))
        release_rows = sum(1 for _ in open(out / "release.csv", "rb")) - 1
        read_csv_seconds, read_csv_cpu = (statistics.median(r[i] for r in reads) for i in (0, 1))
        seconds, cpu = (statistics.median(r[i] for r in releases) for i in (0, 1))
        peak_mb = max(r[2] for r in releases)
        stages = profiled_stages(release_command(path, geo_path, folder / "release-profiled",
                                                 folder / "profile.key"), folder) \
            if args.stages else None

        head = folder / "head.csv"  # the same release of 1,000 rows: the fixed cost
        with open(path, "rb") as source, open(head, "wb") as sink:
            sink.writelines(itertools.islice(source, 1001))
        fixed_seconds, fixed_cpu, _ = run_release(release_command(head, geo_path, folder / "release-head",
                                                       folder / "fingerprint.key"), folder)

    ratio = seconds / read_csv_seconds
    print(json.dumps({
        "benchmark": "large_input",
        "rows": n_rows,
        "input_mb": round(input_mb, 1),
        "release_rows": release_rows,
        "seconds": round(seconds, 2),
        "read_csv_seconds": round(read_csv_seconds, 2),
        "ratio": round(ratio, 2),
        "seconds_runs": [round(r[0], 2) for r in releases],
        "read_csv_seconds_runs": [round(r[0], 2) for r in reads],
        "ratio_runs": [round(a[0] / b[0], 2) for a, b in zip(releases, reads, strict=True)],
        "cpu_seconds_runs": [round(r[1], 2) for r in releases],
        "peak_rss_mb_runs": [r[2] for r in releases],
        "cpu_seconds": round(cpu, 2),
        "read_csv_cpu_seconds": round(read_csv_cpu, 2),
        "cpu_ratio": round(cpu / read_csv_cpu, 2),
        "fixed_cpu_seconds": round(fixed_cpu, 2),
        "peak_rss_mb": peak_mb,
        "fixed_seconds": round(fixed_seconds, 2),
        "input_seconds": round(seconds - fixed_seconds, 2),
        "generate_seconds": round(generate_seconds, 2),
        "stages_profiled_seconds": stages,
        "load_average": list(os.getloadavg()),
        "targets": {"ratio": TARGET_RATIO, "peak_rss_mb": TARGET_RSS_MB},
        "meets_targets": bool(ratio <= TARGET_RATIO and peak_mb < TARGET_RSS_MB),
        "command": " ".join(command[1:]),
        "machine": machine_info(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

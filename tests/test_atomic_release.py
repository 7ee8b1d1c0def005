"""Intact releases: written whole or not at all, an existing one replaced only with
--overwrite and then whole, every file checked against the manifest's sha256 on reading, and
`hierdp release --overwrite` killed at random moments leaving the old or the new release."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.errors import InputError
from hierdp_core.export import read_release


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    n = 60_000
    table = pd.DataFrame({"state": [f"s{i % 50:02d}" for i in range(n)],
                          "county": [f"s{i % 50:02d}c{i:06d}" for i in range(n)],
                          "people": rng.integers(0, 500, n)})
    path = tmp_path_factory.mktemp("input") / "counties.csv"
    table.to_csv(path, index=False)
    return path


def release_argv(table_csv: Path, out: Path, seed: int, *extra) -> list:
    return ["release", table_csv, "--levels", "state,county", "--count-column", "people",
            "--structure-from-data", "--mechanism", "topdown", "--epsilon", "1", "--seed",
            str(seed), "--out", out, *extra]


def test_existing_release_is_refused_then_replaced_whole(capsys, table_csv, tmp_path):
    out = tmp_path / "out"
    code, _, _ = run(capsys, *release_argv(table_csv, out, 1, "--format", "csv,parquet"))
    assert code == 0 and (out / "release.parquet").exists()
    code, _, err = run(capsys, *release_argv(table_csv, out, 2))
    assert code == 2 and "--overwrite" in err and err.count("\n") == 1
    assert json.loads((out / "manifest.json").read_text())["randomness"]["seed"] == 1
    code, _, _ = run(capsys, *release_argv(table_csv, out, 2, "--overwrite"))
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "release.csv"]
    _, manifest = read_release(out)
    assert manifest["randomness"]["seed"] == 2
    assert not list(tmp_path.glob(".out*")), "no staging folder left beside the release"


def test_a_folder_that_is_not_a_release_is_never_replaced(capsys, table_csv, tmp_path):
    out = tmp_path / "documents"
    out.mkdir()
    (out / "thesis.txt").write_text("years of work")
    code, _, err = run(capsys, *release_argv(table_csv, out, 1, "--overwrite"))
    assert code == 2 and "not a release" in err
    assert (out / "thesis.txt").read_text() == "years of work"


@pytest.mark.parametrize("damage", ["tamper", "truncate", "delete", "unlisted"])
def test_damaged_release_is_refused_on_read(capsys, table_csv, tmp_path, damage):
    out = tmp_path / "out"
    assert run(capsys, *release_argv(table_csv, out, 1))[0] == 0
    csv = out / "release.csv"
    if damage == "tamper":
        text = csv.read_text()
        csv.write_text(text.replace(",", ";", 1))
    elif damage == "truncate":
        with open(csv, "r+b") as handle:
            handle.truncate(csv.stat().st_size // 2)
    elif damage == "delete":
        csv.unlink()
    else:
        csv.with_name("release.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match="sha256|missing|not listed"):
        read_release(out)
    code, _, err = run(capsys, "evaluate", table_csv, out)
    assert code == 2 and err.startswith("error:")


def test_killed_overwrite_leaves_the_old_or_the_new_release(table_csv, tmp_path):
    """SIGKILL `hierdp release --overwrite` at moments spread over its whole run (seeded),
    many times: the target always reads back complete and verified, old or new."""
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "hierdp_core"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    subprocess.run([*cli, *map(str, release_argv(table_csv, out, 0))], check=True, env=env,
                   capture_output=True)
    full_run = time.perf_counter() - t0
    rng = np.random.default_rng(7)
    seen = set()
    for trial, delay in enumerate(rng.uniform(0.2, 1.5, size=10) * full_run, start=1):
        proc = subprocess.Popen([*cli, *map(str, release_argv(table_csv, out, trial,
                                                              "--overwrite"))],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _, manifest = read_release(out)  # complete, and every file matches its sha256
        seed = manifest["randomness"]["seed"]
        assert seed <= trial
        seen.add("new" if seed == trial else "old")
    assert seen == {"old", "new"}, f"kill moments did not cover both outcomes: {seen}"

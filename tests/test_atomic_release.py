"""Intact releases: written whole or not at all, an existing one replaced only with
--overwrite and then whole, every file checked against the manifest's sha256 on reading, and
`hierdp release --overwrite` killed at random moments leaving the old or the new release."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.errors import InputError
from hierdp_core.export import read_release


def counties_csv(folder: Path, n: int) -> Path:
    """A table of ``n`` counties in 50 states with random counts, as a CSV in ``folder``."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"state": [f"s{i % 50:02d}" for i in range(n)],
                          "county": [f"s{i % 50:02d}c{i:06d}" for i in range(n)],
                          "people": rng.integers(0, 500, n)})
    path = folder / "counties.csv"
    table.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory) -> Path:
    return counties_csv(tmp_path_factory.mktemp("input"), 2_000)


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


def test_killed_overwrite_leaves_the_old_or_the_new_release(tmp_path):
    """SIGKILL `hierdp release --overwrite` just before each of its changes to the file
    system beside the target in turn (every file opened for writing, folder made, renamed or
    removed, the exchange; `kill_during_write`): after every kill the target reads back
    complete and verified, the old release or the new one. The kills are placed by the
    write's own steps, not by time, so a small table is enough."""
    out = tmp_path / "out"
    argv = [str(a) for a in release_argv(counties_csv(tmp_path, 600), out, 0)]
    argv = argv[:argv.index("--seed")]
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("kill_during_write.py")),
                          str(out), json.dumps(argv)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])})
    assert run.returncode == 0, run.stderr[-2000:]
    trials = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    old, outcomes = 0, []
    for trial in trials:
        assert trial["seed"] in (old, trial["k"]), trial  # complete: old or new, nothing else
        outcomes.append(("new" if trial["seed"] == trial["k"] else "old", trial["killed"]))
        old = trial["seed"]
    assert [killed for _, killed in outcomes] == [True] * (len(trials) - 1) + [False]
    assert len(trials) >= 5, f"too few steps to kill at: {trials}"
    assert ("old", True) in outcomes and ("new", True) in outcomes, outcomes  # both sides

"""The budget across releases on the command line: ``hierdp release --budget-total`` (a
release beyond the dataset's total refused in one line, exit 2, before any noise) and
``hierdp budget`` (what was spent, when, by which release; total and remaining)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
COUNTS = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b2"],
                       "people": [120, 0, 87, 413]})


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "counts.csv"
    COUNTS.to_csv(path, index=False)
    return path


def release(capsys, data: Path, out: Path, *extra, epsilon: str = "1"):
    return run(capsys, "release", data, "--levels", "state,county", "--count-column",
               "people", "--structure-from-data", "--mechanism", "topdown", "--interval",
               "none", "--epsilon", epsilon, "--out", out, *extra)


def test_releases_add_up_and_the_one_beyond_the_total_is_refused(capsys, data, tmp_path):
    code, out, _ = release(capsys, data, tmp_path / "r1", "--budget-total", "2.5")
    assert code == 0
    assert "budget: this release spent epsilon 1; counts.csv has spent 1 of 2.5, 1.5 left" in out
    assert release(capsys, data, tmp_path / "r2")[0] == 0
    code, out, err = release(capsys, data, tmp_path / "r3", epsilon="0.6")
    assert code == 2 and out == "" and not (tmp_path / "r3").exists()
    assert err.splitlines() == ["error: this release would exceed counts.csv's budget: "
                                "epsilon 2 of 2.5 spent, 0.5 left, this release asks 0.6 (a "
                                "larger total needs --budget-total N --change-budget-total)"]
    assert release(capsys, data, tmp_path / "r3", epsilon="0.5")[0] == 0
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    [spends] = Ledger().datasets()  # keyed by its counts; the file's bytes an alias
    assert Ledger().status(manifest["input"]["fingerprint"]["value"]) == spends
    assert [s.destination for s in spends.spends] == [str((tmp_path / n).resolve())
                                                      for n in ("r1", "r2", "r3")]


def test_the_refusal_comes_before_any_noise(capsys, data, tmp_path, monkeypatch):
    mechanism = type(get_mechanism("topdown"))
    drawn, draw = [], mechanism.release
    monkeypatch.setattr(mechanism, "release",
                        lambda self, *a, **k: drawn.append(1) or draw(self, *a, **k))
    assert release(capsys, data, tmp_path / "r1")[0] == 0 and drawn == [1]
    code, _, err = release(capsys, data, tmp_path / "r2")
    assert code == 2 and "not declared" in err and "--budget-total (at least 2)" in err
    assert drawn == [1]  # refused before the mechanism ran
    assert len(Ledger().datasets()[0].spends) == 1


def test_a_release_that_fails_after_reserving_counts_as_spent(capsys, data, tmp_path,
                                                              monkeypatch):
    """Killed or failed between the draw and the written folder: the spend stays, shown as
    unfinished, and a later release counts against it."""
    def crash(*args, **kwargs):
        raise RuntimeError("disk pulled out")

    with monkeypatch.context() as patch:
        patch.setattr("hierdp_core.export.write_release", crash)
        code, _, err = release(capsys, data, tmp_path / "r1", "--budget-total", "1.5")
    assert code == 1 and "disk pulled out" in err
    code, out, _ = run(capsys, "budget", "--dataset", data)
    assert code == 0 and "UNFINISHED: counted, its noise may have been drawn" in out
    assert "epsilon 1 spent of 1.5 (declared), 0.5 left; 1 release(s), 1 unfinished" in out
    code, _, err = release(capsys, data, tmp_path / "r1")
    assert code == 2 and "epsilon 1 of 1.5 spent" in err


def test_ctrl_c_says_whether_the_budget_was_counted(capsys, data, tmp_path, monkeypatch):
    """Ctrl-C after the write-ahead spend: the one line says the budget was counted (the
    ledger shows it unfinished); before it, ``interrupted`` alone and nothing counted."""
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr("hierdp_core.cli.release.reserve_release", ctrl_c)
        assert release(capsys, data, tmp_path / "r1", epsilon="0.5")[::2] == (
            130, "interrupted\n")
    assert not Ledger().path.exists() or Ledger().datasets() == []
    with monkeypatch.context() as patch:
        patch.setattr("hierdp_core.export.write_release", ctrl_c)
        code, _, err = release(capsys, data, tmp_path / "r1", epsilon="0.5")
    assert (code, err) == (130, "interrupted: the budget of this release (epsilon 0.5) was "
                           "counted in the ledger, as its noise may have been drawn; see "
                           "`hierdp budget`\n")
    assert "UNFINISHED" in run(capsys, "budget", "--dataset", data)[1]


def test_seeded_exploration_never_touches_the_ledger(capsys, data, tmp_path):
    for n in range(3):
        assert release(capsys, data, tmp_path / f"s{n}", "--seed", str(n))[0] == 0
    assert not Ledger().path.exists() or Ledger().datasets() == []
    code, _, err = release(capsys, data, tmp_path / "s9", "--seed", "1", "--budget-total", "3")
    assert code == 2 and "seeded (exploration) release spends nothing" in err


def test_the_declared_total_is_set_once(capsys, data, tmp_path):
    assert release(capsys, data, tmp_path / "r1", "--budget-total", "3")[0] == 0
    code, _, err = release(capsys, data, tmp_path / "r2", "--budget-total", "4")
    assert code == 2 and err.strip() == ("error: the budget total of counts.csv is already "
                                         "declared as epsilon 3; to change it, add "
                                         "--change-budget-total")
    assert release(capsys, data, tmp_path / "r2", "--budget-total", "4",
                   "--change-budget-total")[0] == 0
    code, _, err = release(capsys, data, tmp_path / "r3", "--change-budget-total")
    assert code == 2 and "goes with --budget-total" in err
    for bad in ("0", "-1", "abc", "delta=1", "inf"):
        code, _, err = release(capsys, data, tmp_path / "r3", "--budget-total", bad)
        assert code == 2 and "--budget-total takes a positive number" in err


def test_a_refused_out_folder_spends_nothing(capsys, data, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, _, err = release(capsys, data, tmp_path / "taken")
    assert code == 2 and "exists" in err
    assert not Ledger().path.exists() or Ledger().datasets() == []


def test_budget_lists_datasets_and_each_spend(capsys, data, tmp_path):
    code, out, _ = run(capsys, "budget")
    assert code == 0 and out.startswith("no publishable release recorded in")
    release(capsys, data, tmp_path / "r1", "--budget-total", "2")
    run(capsys, "release", data, "--levels", "state,county", "--count-column", "people",
        "--structure-from-data", "--mechanism", "topdown", "--interval", "none", "--epsilon",
        "0.5", "--delta", "1e-7", "--param", "noise=gaussian", "--out", tmp_path / "r2")
    code, out, _ = run(capsys, "budget")
    assert code == 0 and len(out.splitlines()) == 1
    assert "counts.csv (" in out and "epsilon 1.5 spent of 2 (declared), 0.5 left, delta " \
                                     "1e-07 spent; 2 release(s)" in out
    code, out, _ = run(capsys, "budget", "--dataset", data)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4 and lines[0].startswith("dataset counts.csv")
    assert "epsilon 1  (pure-dp epsilon 1)  topdown  -> " in lines[1] and "r1" in lines[1]
    assert "(approx-dp epsilon 0.5, delta 1e-07)" in lines[2] and "committed" in lines[2]
    fingerprint = Ledger().datasets()[0].fingerprint
    assert run(capsys, "budget", "--dataset", fingerprint[:12])[1] == out
    code, out, _ = run(capsys, "budget", "--dataset", fingerprint, "--json")
    record = json.loads(out)
    assert (record["spent"], record["total"], record["remaining"]) == (1.5, 2.0, 0.5)
    assert [r["status"] for r in record["releases"]] == ["committed", "committed"]


def test_budget_declares_a_total_ahead_of_the_first_release(capsys, data, tmp_path):
    code, out, _ = run(capsys, "budget", "--dataset", data, "--budget-total", "rho=0.5")
    assert code == 0 and "rho 0 spent of 0.5 (declared), 0.5 left; 0 release(s)" in out
    code, _, err = run(capsys, "release", data, "--levels", "state,county", "--count-column",
                       "people", "--structure-from-data", "--mechanism", "topdown",
                       "--interval", "none", "--rho", "0.4", "--out", tmp_path / "r1")
    assert code == 0
    code, _, err = release(capsys, data, tmp_path / "r2", epsilon="0.5")  # 0.125 in rho
    assert code == 2 and "rho 0.4 of 0.5 spent, 0.1 left, this release asks 0.125" in err


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "nosuchfile.csv"], "neither a file nor a fingerprint"),
    (["--dataset", "abcdef12"], "no dataset with a fingerprint starting 'abcdef12'"),
    (["--budget-total", "2"], "--budget-total needs --dataset FILE"),
    (["--dataset", "x" * 64], "neither a file nor a fingerprint"),
])
def test_budget_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, "budget", *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err


def test_a_ledger_inside_the_release_folder_is_refused(capsys, data, tmp_path, monkeypatch):
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path / "out" / "private"))
    code, _, err = release(capsys, data, tmp_path / "out")
    assert code == 2 and "lies inside the release folder" in err
    assert not (tmp_path / "out").exists()


def test_a_dask_dataset_is_refused_before_its_cluster_starts(capsys, tmp_path, monkeypatch):
    """The folder's files, in order, are the dataset (as its manifest's fingerprint); the
    refusal comes before any worker is started."""
    folder = tmp_path / "parts"
    folder.mkdir()
    COUNTS.iloc[:2].to_csv(folder / "a.csv", index=False)
    COUNTS.iloc[2:].to_csv(folder / "b.csv", index=False)
    code, out, _ = run(capsys, "budget", "--dataset", folder, "--budget-total", "0.5")
    assert code == 0 and "parts (" in out and "0 spent of 0.5 (declared)" in out
    monkeypatch.setattr("hierdp_core.engine.dask_engine.open_client",
                        lambda *a, **k: pytest.fail("a cluster was started"))
    code, _, err = run(capsys, "release", folder, "--engine", "dask", "--levels",
                       "state,county", "--count-column", "people", "--structure-from-data",
                       "--mechanism", "topdown", "--interval", "none", "--epsilon", "1",
                       "--out", tmp_path / "out")
    assert code == 2 and "epsilon 0 of 0.5 spent, 0.5 left, this release asks 1" in err


KILLED_CLI = """
import sys, time
import hierdp_core.export
def stalled(*args, **kwargs):  # the noise is drawn; the folder is never written
    print("drawn", flush=True)
    time.sleep(600)
hierdp_core.export.write_release = stalled
from hierdp_core.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_release_killed_between_its_draw_and_its_folder_stays_counted(capsys, data, tmp_path):
    argv = ["release", str(data), "--levels", "state,county", "--count-column", "people",
            "--structure-from-data", "--mechanism", "topdown", "--interval", "none",
            "--epsilon", "1", "--budget-total", "1.5", "--out", str(tmp_path / "r1")]
    proc = subprocess.Popen([sys.executable, "-c", KILLED_CLI, *argv], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "drawn"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (tmp_path / "r1").exists()
    (spend,) = Ledger().datasets()[0].spends
    assert spend.status == "reserved" and spend.charge == 1.0
    code, _, err = release(capsys, data, tmp_path / "r2")
    assert code == 2 and "epsilon 1 of 1.5 spent, 0.5 left, this release asks 1" in err
    assert release(capsys, data, tmp_path / "r2", epsilon="0.5")[0] == 0
    assert [s.status for s in Ledger().datasets()[0].spends] == ["reserved", "committed"]

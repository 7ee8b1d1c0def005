"""The command line under a hostile environment (issue 27, item 7): Ctrl-C at start-up and
during a release prints one line and exits 130 (`hierdp_core.cli.entry`), an ``--out`` that
cannot be written is one line naming it and the reason, exit 2, before any work
(`hierdp_core.atomic.check_writable`), and a Latin-1 table is read with ``--encoding``."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

from hierdp_core.data.samples import synthetic_us_like
from tests.browser_tools import cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ["--levels", "state,county", "--count-column", "count", "--duplicates", "sum"]


@pytest.fixture(scope="module")
def counties_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("input") / "counties.csv"
    synthetic_us_like(seed=3, n_states=4, n_counties=40).to_csv(path, index=False)
    return path


def release_args(csv: Path, out: Path, *extra) -> list:
    return ["release", csv, *LEVELS, "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
            "--structure-from-data", "--key-file", out.parent / "key", "--out", out, *extra]


# ---- Ctrl-C ---------------------------------------------------------------------------------
def _as_from_a_shell() -> None:
    """The child's Ctrl-C as a shell leaves it: default disposition, not blocked. A test
    worker may have SIGINT ignored or blocked by what ran in it before (the whole suite's
    run ignored it here twice: the release ran to its end, status 0), and a child inherits
    both; a command started with SIGINT ignored rightly keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def interrupted(argv: list, when, attempts: int = 5) -> subprocess.CompletedProcess:
    """Run ``python -m hierdp_core argv``, send SIGINT once ``when(pid)`` holds (checked
    every 5 ms), and return the finished process. A run that ended before the signal was
    sent (a busy machine can sleep through the moment) is run again, up to ``attempts``
    times; the test fails when the signal never lands."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(attempts):
        proc = subprocess.Popen([sys.executable, "-m", "hierdp_core", *map(str, argv)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=ROOT, preexec_fn=_as_from_a_shell)
        deadline = time.monotonic() + 300
        while proc.poll() is None and not when(proc.pid):
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(0.005)
        landed = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        if landed:
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        for path in Path(argv[argv.index("--out") + 1]).parent.iterdir():
            shutil.rmtree(path) if path.is_dir() else path.unlink()  # the next run: clean
    raise AssertionError(f"the release always finished before the signal ({attempts} runs)")


def loaded(library: str):
    """A moment: the process has mapped a shared library whose path holds ``library``."""
    def when(pid: int) -> bool:
        try:
            return library in Path(f"/proc/{pid}/maps").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return False
    return when


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_ctrl_c_while_the_modules_are_imported_is_one_line(counties_csv, tmp_path):
    """SIGINT as soon as numpy's extension is mapped: the command's modules (pandas, scipy,
    the mechanisms) are still being imported, before `cli.main` runs. It printed a
    traceback (KeyboardInterrupt in an import) and exited 1."""
    out = tmp_path / "rel"
    done = interrupted(release_args(counties_csv, out), loaded("_multiarray_umath"))
    assert done.stderr == "interrupted\n" and done.returncode == 130, done.stderr
    assert done.stdout == "" and not out.exists()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_ctrl_c_during_a_release_is_one_line_and_leaves_nothing(tmp_path_factory, tmp_path):
    """SIGINT once the process has used 2 s of CPU (its imports and the release before its
    intervals take about 1.2-1.5 s), in the middle of a release of 2,000 counties x 6
    categories whose intervals take a bootstrap of 2,000 replicates (about 3.5 s of CPU in
    all on the 2-core host of 30 Nov: at 3 s, with 1,500 replicates, the release could end
    before the signal, which then came during the interpreter's exit)."""
    csv = tmp_path_factory.mktemp("big") / "counties.csv"
    synthetic_us_like(seed=3, n_states=20, n_counties=2000).to_csv(csv, index=False)
    out = tmp_path / "rel"
    argv = release_args(csv, out, "--categories", "sex,age_group",
                        "--interval-replicates", 2000)
    done = interrupted(argv, lambda pid: (cpu_seconds(pid) or 0.0) > 2.0)
    assert done.returncode == 130 and done.stderr == "interrupted\n", done.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []


# ---- an --out that cannot be written --------------------------------------------------------
@pytest.fixture
def no_work(monkeypatch):
    """The input is never read: the refusal comes first."""
    import hierdp_core.cli.release as cli

    def refuse(*args, **kwargs):
        raise AssertionError("the input was read before --out was checked")
    monkeypatch.setattr(cli, "read_input", refuse)


def test_a_ctrl_c_swallowed_on_its_way_still_abandons_the_release(capsys, counties_csv,
                                                                   tmp_path, monkeypatch):
    """An interrupt a library swallowed (an optional import that caught the ImportError
    numpy made of it) never reaches the command as an exception: the release still runs,
    but it is abandoned before it replaces its folder: "interrupted", 130, nothing written.
    Both Ctrl-C tests above saw such releases finish (status 0) in whole-suite runs."""
    from hierdp_core import interrupts

    monkeypatch.setattr(interrupts, "RECEIVED", [signal.SIGINT])
    out = tmp_path / "rel"
    code, stdout, err = run_cli(capsys, *release_args(counties_csv, out))
    assert (code, err) == (130, "interrupted\n") and not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["key"]  # no staging folder left


def one_line_refusal(capsys, counties_csv, out: Path, *reasons: str) -> str:
    code, stdout, err = run_cli(capsys, *release_args(counties_csv, out))
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: cannot write the output folder {str(out)!r}: "), err
    assert any(reason in err for reason in reasons), err
    return err


@pytest.mark.parametrize("where", ["under a file", "deeper under a file", "a file"])
def test_out_in_the_way_of_a_file(capsys, counties_csv, tmp_path, no_work, where):
    (tmp_path / "afile").write_text("not a folder")
    out = {"under a file": tmp_path / "afile" / "rel",
           "deeper under a file": tmp_path / "afile" / "a" / "rel",
           "a file": tmp_path / "afile"}[where]
    one_line_refusal(capsys, counties_csv, out, "a file is in the way",
                     "exists and is not a folder")
    assert (tmp_path / "afile").read_text() == "not a folder"


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")
def test_out_in_a_folder_no_one_can_write(capsys, counties_csv, no_work):
    """/proc refuses a new folder even to root."""
    one_line_refusal(capsys, counties_csv, Path("/proc/hierdp-release"),
                     "no such file or directory", "permission denied",
                     "operation not permitted")


@pytest.mark.parametrize("error, reason", [
    (errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied")])
def test_out_on_a_read_only_mount_or_without_permission(capsys, counties_csv, tmp_path,
                                                         monkeypatch, no_work, error, reason):
    """A read-only mount and a folder without write permission, as the kernel reports them
    (root writes through a chmod, so the refusal is the kernel's answer, simulated); a
    real read-only folder too when not root."""
    import tempfile

    folder = tmp_path / "locked"
    folder.mkdir()
    real = tempfile.mkdtemp

    def kernel_says_no(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == folder:
            raise OSError(error, os.strerror(error), str(folder))
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(tempfile, "mkdtemp", kernel_says_no)
    err = one_line_refusal(capsys, counties_csv, folder / "rel", reason)
    assert str(folder) in err and list(folder.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a chmod")
def test_out_in_a_read_only_folder(capsys, counties_csv, tmp_path, no_work):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        one_line_refusal(capsys, counties_csv, folder / "rel", "permission denied")
    finally:
        folder.chmod(0o755)


def test_a_write_failing_midway_is_one_line_and_leaves_nothing(capsys, counties_csv,
                                                               tmp_path, monkeypatch):
    """The disk fills while the release is written: one line (it was "unexpected
    OSError", exit 1), no staging folder, no release."""
    import hierdp_core.export as export

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(export, "write_release_csv", full)
    out = tmp_path / "rel"
    one_line_refusal(capsys, counties_csv, out, "no space left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key"]


# ---- --encoding -----------------------------------------------------------------------------
def test_a_latin1_table_and_geography_are_read_with_encoding(capsys, tmp_path):
    """A table and geography saved in Latin-1 (codes with accents): without --encoding one
    line naming the option (it named ``encoding=``, which the CLI did not have); with
    ``--encoding latin-1`` the release holds the codes as they are."""
    table = pd.DataFrame({"region": ["Île-de-France", "Île-de-France", "Bretagne"],
                          "commune": ["Évry", "Créteil", "Brest"], "n": [120, 340, 95]})
    csv, geography = tmp_path / "communes.csv", tmp_path / "geography.csv"
    table.to_csv(csv, index=False, encoding="latin-1")
    table[["region", "commune"]].to_csv(geography, index=False, encoding="latin-1")
    argv = ["release", csv, "--levels", "region,commune", "--count-column", "n",
            "--geography", geography, "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
            "--key-file", tmp_path / "key"]
    code, _, err = run_cli(capsys, *argv, "--out", tmp_path / "utf8")
    assert code == 2 and err.count("\n") == 1, err
    assert "communes.csv" in err and "is not valid UTF-8" in err
    assert "--encoding latin-1" in err and not (tmp_path / "utf8").exists()
    code, _, err = run_cli(capsys, *argv, "--encoding", "latin-1", "--out", tmp_path / "rel")
    assert code == 0, err
    released = pd.read_csv(tmp_path / "rel" / "release.csv", dtype=str, encoding="utf-8")
    assert {"Île-de-France", "Bretagne", "Évry", "Créteil", "Brest"} <= set(released["label"])
    code, _, err = run_cli(capsys, *argv, "--encoding", "no-such-codec", "--out",
                           tmp_path / "bad")
    assert code == 2 and "unknown encoding 'no-such-codec'" in err
    # evaluate reads the table and the geography in the release's encoding (recorded in
    # the manifest), or in the one given: it read the geography as UTF-8 and refused it
    assert json.loads((tmp_path / "rel" / "manifest.json").read_text())["input"][
        "encoding"] == "latin-1"
    for given in ([], ["--encoding", "latin-1"]):
        code, report, err = run_cli(capsys, "evaluate", csv, tmp_path / "rel", *given,
                                    "--key-file", tmp_path / "key")
        assert code == 0 and "mae" in report, err


def test_a_utf8_geography_beside_a_cp1252_input(capsys, tmp_path):
    """An Excel (cp1252) extract with a UTF-8 register geography: ``--encoding cp1252``
    read the geography in cp1252 too, labelling 'Bodø' 'BodÃ¸' (with a BOM, its first
    column was 'ï»¿fylke'). The geography is read as UTF-8, saying so in one note, and
    evaluate reads it the same way."""
    geography = ("fylke,fylkesnavn,kommune,kommunenavn\n18,Nordland,1804,Bodø\n"
                 "15,Møre og Romsdal,1507,Ålesund\n")
    csv = tmp_path / "d.csv"
    csv.write_bytes("fylke,kommune,antall,merknad\n18,1804,500,Sør\n15,1507,300,\n"
                    .encode("cp1252"))
    for name, bom, why in (("geo.csv", b"", "its bytes are UTF-8"),
                           ("bom.csv", b"\xef\xbb\xbf", "its byte-order mark")):
        (tmp_path / name).write_bytes(bom + geography.encode())
        out = tmp_path / f"rel-{name}"
        code, _, err = run_cli(
            capsys, "release", csv, "--encoding", "cp1252", "--levels", "fylke,kommune",
            "--count-column", "antall", "--names", "fylke=fylkesnavn,kommune=kommunenavn",
            "--geography", tmp_path / name, "--mechanism", "topdown", "--epsilon", 1,
            "--seed", 1, "--key-file", tmp_path / "key", "--out", out)
        assert code == 0, err
        note = (f"note: {name} read as UTF-8 ({why}); --encoding cp1252 applies to the "
                "input\n")
        assert err.count(note) == 1, err
        labels = set(pd.read_csv(out / "release.csv", dtype=str)["label"])
        assert {"Bodø", "Møre og Romsdal", "Ålesund"} <= labels, labels
        code, _, err = run_cli(capsys, "evaluate", out, "--truth", csv,
                               "--key-file", tmp_path / "key")
        assert code == 0 and note in err, err


def test_an_import_error_raised_from_ctrl_c_is_an_interrupt(monkeypatch, capsys):
    """numpy wraps Ctrl-C during its extension's import in an ImportError (seen 1 run in 6
    of the test above): the command still says ``interrupted`` and exits 130."""
    import hierdp_core.cli.main as cli

    def wrapped(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("IMPORTANT: PLEASE READ THIS FOR ADVICE") from exc

    monkeypatch.setattr(cli, "run_command", wrapped)
    assert cli.main(["mechanisms"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    monkeypatch.setattr(cli, "run_command", lambda args: (_ for _ in ()).throw(ImportError("x")))
    assert cli.main(["mechanisms"]) == 1  # a plain ImportError stays an unexpected error


def test_an_import_error_after_a_received_ctrl_c_is_an_interrupt(monkeypatch, capsys):
    """pandas re-raises numpy's wrapped interrupt as an ImportError with no link to it: when
    the entry point says Ctrl-C was received, the command says ``interrupted``, 130."""
    import hierdp_core.cli.main as cli

    monkeypatch.setattr(cli, "run_command", lambda args: (_ for _ in ()).throw(ImportError("x")))
    assert cli.main(["mechanisms"], interrupt_received=lambda: True) == 130
    assert capsys.readouterr().err == "interrupted\n"

"""Command-line guards: usage errors as one line with exit 2, quiet broken pipes, and
warnings for valid but implausible budgets."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run_cli as run

from hierdp_core.cli.release import budget_warnings


@pytest.mark.parametrize("seed", ["-5", "1.5", "x"])
def test_bad_seed_is_one_line_exit_2(capsys, seed):
    code, _, err = run(capsys, "release", "x.csv", "--mechanism", "topdown", "--seed", seed,
                       "--out", "out")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: argument --seed")


def test_unknown_command_is_one_line_exit_2(capsys):
    code, _, err = run(capsys, "publish")
    assert code == 2 and err.count("\n") == 1 and "invalid choice" in err


def test_broken_pipe_is_quiet():
    reader = "import sys; sys.stdin.readline()"  # reads one line, then leaves
    cli = subprocess.Popen([sys.executable, "-m", "hierdp_core", "mechanisms"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run([sys.executable, "-c", reader], stdin=cli.stdout, check=True)
    cli.stdout.close()
    err = cli.stderr.read().decode()
    assert cli.wait() == 0 and head.returncode == 0
    assert "Traceback" not in err and "BrokenPipe" not in err


@pytest.mark.parametrize(("epsilon", "rho", "delta", "words"), [
    (1e-9, None, None, "drowns"), (50.0, None, None, "almost no protection"),
    (None, 1e-4, None, "drowns"), (1.0, None, 0.01, "delta")])
def test_implausible_budgets_are_warned(epsilon, rho, delta, words):
    (text,) = budget_warnings(epsilon, rho, delta)
    assert words in text


def test_plausible_budget_has_no_warning():
    assert budget_warnings(1.0, None, 1e-6) == [] and budget_warnings(None, 0.5, None) == []


def test_an_allowed_nonprivate_mechanism_warns_after_the_release_not_before_a_refusal(
        capsys, tmp_path):
    """Found by the long fuzz run: the not-private warning came before a refusal, so the
    refusal was two lines; it is said once the release is written."""
    path = tmp_path / "ages.csv"
    path.write_text("region,age,residents\nA,3,5\nB,7,2\n")
    argv = ["release", path, "--structure-from-data", "--levels", "region", "--query",
            "ranges", "--attribute", "age", "--count-column", "residents", "--domain", "0-20",
            "--mechanism", "dawa-reference", "--allow-nonprivate", "--seed", 1,
            "--key-file", tmp_path / "key"]
    code, out, err = run(capsys, *argv, "--epsilon", 0, "--out", tmp_path / "refused")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ")
    code, _, err = run(capsys, *argv, "--epsilon", 1, "--out", tmp_path / "released")
    assert code == 0 and "warning: mechanism 'dawa-reference' (DAWA, the authors' partition) is not " in err


def test_running_out_of_memory_is_one_line_exit_2(capsys, monkeypatch):
    """Found by the long fuzz run: --max-memory 10TB under a 2 GB address-space limit let a
    release start that numpy could not allocate ("unexpected MemoryError", exit 1)."""
    import hierdp_core.cli.main as cli

    def out_of_memory(args):
        raise MemoryError("Unable to allocate 22.9 MiB")

    monkeypatch.setattr(cli, "run_command", out_of_memory)
    code, out, err = run(capsys, "mechanisms")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: out of memory") and "--max-memory" in err


@pytest.mark.parametrize(("extra", "words"), [
    (["--max-size", 5], "--max-size does not apply to counts releases: it belongs to "
                        "group-sizes releases"),
    (["--min-size", 2], "--min-size does not apply to counts releases"),
    (["--groups", "groups.csv"], "--groups does not apply to counts releases: it belongs to "
                                 "group-sizes"),
    (["--tree", "origin"], "--tree does not apply to counts releases: it belongs to flows"),
    (["--domain", "0-9"], "--domain does not apply to counts releases: it belongs to ranges"),
    (["--workload", "all"], "--workload does not apply to counts releases: it belongs to "
                            "ranges"),
    (["--wide-name", "sex"], "--wide-name names the column of the --wide columns' names"),
    (["--interval", "none", "--interval-replicates", 50],
     "--interval-replicates sets the replicates of the intervals, which --interval none "
     "leaves out"),
    # a format that cannot be written was refused after the charge and the noise
    (["--format", "xlsx"], "unknown export format(s) ['xlsx']"),
    (["--format", "parquet,parquet-dataset"], "not both"),
])
def test_options_of_another_query_kind_are_refused(capsys, tmp_path, extra, words):
    """A counts release accepted --max-size, --groups (listed in its manifest), --tree,
    --domain, --workload, --min-size, --wide-name without --wide and
    --interval-replicates with --interval none without a word: each is one line naming
    the option and the query kind it belongs to, before anything is read or charged."""
    data = tmp_path / "d.csv"
    data.write_text("state,n\nA,5\n")
    code, out, err = run(capsys, "release", data, "--levels", "state", "--count-column", "n",
                         "--structure-from-data", "--mechanism", "topdown", "--epsilon", 1,
                         "--key-file", tmp_path / "key", "--out", tmp_path / "out", *extra)
    assert (code, out) == (2, "") and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "out").exists()
    code, out, _ = run(capsys, "budget", "--json")
    assert code == 0 and '"datasets": []' in out

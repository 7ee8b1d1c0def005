"""A release refuses an input file changed while it read it (`hierdp_core.data.file_state`):
written, truncated, replaced or removed between the command's start and the noise, it says
so in one line (exit status 2), writes nothing and spends no budget."""

from __future__ import annotations

import os
import time

import pytest
from conftest import run_cli

from hierdp_core.cli import release as cli_release
from hierdp_core.data.file_state import (
    changed,
    check_unchanged,
    file_states,
    states_at_start,
    unchanged_input,
    watching,
)
from hierdp_core.errors import HierarchyError, InputChangedError
from tests.test_declared_rows import GEO, ROWS


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,n\n1,2\n")
    return path


def _release_argv(tmp_path, declared: bool) -> list:
    """``hierdp release`` of `ROWS` over the geography `GEO` (``declared``: the reader that
    places rows straight from the file) or over the units the data holds (the careful
    reader)."""
    (tmp_path / "geo.csv").write_text(GEO)
    (tmp_path / "people.csv").write_text(ROWS)
    structure = (["--geography", tmp_path / "geo.csv", "--categories", "sex",
                  "--category-values", "sex=F|M"] if declared else ["--structure-from-data"])
    return ["release", tmp_path / "people.csv", "--levels", "state,county,tract",
            "--count-column", "n", "--duplicates", "sum", *structure, "--mechanism", "topdown",
            "--epsilon", 1,
            "--key-file", tmp_path / "key", "--out", tmp_path / "release"]


def _written_once_read(monkeypatch, path):
    """Make the release's reading of its input grow ``path`` by a row once it is read (as
    a program still writing it would); gives the reading's own function, to put back."""
    read = cli_release.memory_input

    def then_written(*a, **k):
        out = read(*a, **k)
        with open(path, "a") as handle:
            handle.write("06,06037,06037000100,F,1\n")
        _later(path)
        return out

    monkeypatch.setattr(cli_release, "memory_input", then_written)
    return read


def _later(path) -> None:
    """Move ``path``'s modification time on (a write within the clock's tick may not)."""
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


@pytest.mark.parametrize("how, words", [
    ("append", "its size went from 8 to 12 bytes"),
    ("same size", "it was written to"),
    ("replace", "it was replaced by another file"),
    ("remove", "it was removed"),
])
def test_each_change_is_named(table, how, words):
    states = file_states([table])
    assert changed(states) is None
    if how == "append":
        table.write_text("a,n\n1,2\n2,3\n")
    elif how == "same size":
        table.write_text("a,n\n1,5\n")
        _later(table)
    elif how == "replace":
        (table.parent / "new.csv").write_text("a,n\n1,2\n")
        os.replace(table.parent / "new.csv", table)
    else:
        table.unlink()
    with pytest.raises(InputChangedError, match=f"t.csv changed while the release read it "
                                                f"\\({words}\\)"):
        check_unchanged(states)


def test_the_state_at_start_is_the_one_watched(table):
    """Within `watching`, the state recorded on entering is the one given back (a file
    changed before the release looks is still caught); outside, the file as it is now."""
    with watching([table]):
        table.write_text("a,n\n1,2\n2,3\n")
        states = states_at_start([table])
        assert states[0].size == 8
        with watching([table]):  # an inner watch keeps the outer's record
            assert states_at_start([table])[0].size == 8
        assert "its size went from 8 to 12" in changed(states)
    assert states_at_start([table])[0].size == 12
    assert states_at_start([table.parent / "missing.csv"]) == []


@pytest.mark.parametrize("path_kind", ["declared", "careful"])
def test_a_release_refuses_an_input_changed_while_it_read_it(capsys, tmp_path, monkeypatch,
                                                             path_kind):
    """The file grows by a row once the release has read it (the declared reader that
    places rows straight from the file, or the careful one): exit status 2, one line,
    no release folder and nothing spent; the same release of the file left alone runs."""
    argv = _release_argv(tmp_path, path_kind == "declared")
    people = tmp_path / "people.csv"
    read = _written_once_read(monkeypatch, people)
    out = tmp_path / "release"
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path / "home"))
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 2 and stdout == "", err
    assert err.splitlines() == [err.strip()] and err.startswith(
        "error: people.csv changed while the release read it (its size went from")
    assert "nothing was released and no budget spent" in err
    assert not out.exists()
    assert not list((tmp_path / "home").rglob("*.sqlite"))  # no ledger, no spend
    monkeypatch.setattr(cli_release, "memory_input", read)
    people.write_text(ROWS)
    code, _, err = run_cli(capsys, *argv)
    assert code == 0 and out.exists(), err


def test_an_error_of_a_file_cut_short_is_told_as_the_change(capsys, tmp_path, monkeypatch):
    """A file cut in the middle of a row while the release reads it: the refusal names the
    change, not the broken last row the reader then finds."""
    argv = _release_argv(tmp_path, declared=True)
    people = tmp_path / "people.csv"
    read = cli_release.memory_input

    def cut_then_read(*a, **k):
        with open(people, "r+b") as handle:
            handle.truncate(people.stat().st_size - 3)  # the last row loses its count
        time.sleep(0.01)
        return read(*a, **k)

    monkeypatch.setattr(cli_release, "memory_input", cut_then_read)
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path / "home"))
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "people.csv changed while the release read it" in err, err


def test_an_error_of_reading_a_changed_file_is_told_as_the_change(table):
    """Within `unchanged_input` any typed error (a file cut short reads as malformed, or as
    a hierarchy that does not nest) becomes the change when the file changed; left alone,
    the error stands."""
    with pytest.raises(HierarchyError), unchanged_input([table]):
        raise HierarchyError("a child with two parents")
    with pytest.raises(InputChangedError, match="size went from 8 to 4"), \
            unchanged_input([table]) as check:
        check()
        table.write_text("a,n\n")
        raise HierarchyError("a child with two parents")


def test_the_python_api_refuses_an_input_changed_while_it_read_it(tmp_path, monkeypatch):
    """`hierdp_core.api.release` of a file path checks it as the command line does."""
    from hierdp_core import api

    (tmp_path / "geo.csv").write_text(GEO)
    people = tmp_path / "people.csv"
    people.write_text(ROWS)
    _written_once_read(monkeypatch, people)
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path / "home"))
    with pytest.raises(InputChangedError, match="people.csv changed while the release"):
        api.release(people, ["state", "county", "tract"], "n", mechanism="topdown",
                    epsilon=1.0, category_columns=["sex"], category_values={"sex": ["F", "M"]},
                    geography=tmp_path / "geo.csv", duplicates="sum", out=tmp_path / "out",
                    key_file=tmp_path / "key")
    assert not (tmp_path / "out").exists()

"""The input read ahead while ``hierdp release`` starts (`hierdp_core.data.prefetch`,
`hierdp_core.cli.early_read`, issue 28 point 5): the declared reader takes the parts read
ahead (the same batches, errors and data as reading the file then), a file changed or
asked for differently is read again, and leaving the reading stops its threads, taken or
not."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
from pathlib import Path

import pytest

from hierdp_core.cli.early_read import reading_input
from hierdp_core.data import arrow_text, prefetch
from hierdp_core.data.sources import resolve_source
from tests.test_declared_rows import GEO, ROWS, _input, _release_input, _write


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hierdp-read-ahead"]


@pytest.fixture
def small_parts(monkeypatch):
    """Any file is read in parts, a few rows a batch, few batches ahead."""
    monkeypatch.setattr(arrow_text, "SPLIT_FROM", 1)
    monkeypatch.setattr(arrow_text, "PART_BLOCK", 4096)
    monkeypatch.setattr(prefetch, "AHEAD", 2)


def _taken(monkeypatch) -> list:
    """The read-ahead of each `read_parts` call: whether it was taken."""
    calls = []
    read = prefetch.read_parts

    def spy(src, columns, encoding, parts):
        ahead = list(prefetch._AHEAD)
        before = bool(ahead) and ahead[0].taken
        try:
            return read(src, columns, encoding, parts)
        finally:  # an error read ahead is raised here
            calls.append(bool(ahead) and ahead[0].taken and not before)

    monkeypatch.setattr("hierdp_core.data.declared_rows.read_parts", spy)
    return calls


def test_the_parts_read_ahead_give_the_same_data(tmp_path, monkeypatch, small_parts):
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 400
    args = _write(tmp_path, ROWS.splitlines()[0] + "\n" + body, GEO, "--count-column", "n")
    expected = _release_input(args)
    taken = _taken(monkeypatch)
    with reading_input(*args):
        assert _release_input(args) == expected
        assert _release_input(args) == expected  # a second reader reads the file itself
    assert taken == [True, False]
    assert not _readers()


def test_an_error_read_ahead_is_raised_where_the_parts_are_taken(tmp_path, monkeypatch,
                                                                 small_parts):
    """A ragged row in the last part: the declared reader steps aside as it does without
    reading ahead, and the careful path names the row."""
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 400
    args = _write(tmp_path, ROWS.splitlines()[0] + "\n" + body + "06,06037,06037000100,F,3,9\n",
                  GEO, "--count-column", "n")
    expected = _release_input(args)
    assert expected[0] == "InputError" and "line 1602" in expected[1]
    taken = _taken(monkeypatch)
    with reading_input(*args):
        assert _release_input(args) == expected
    assert taken == [True] and not _readers()


def test_a_file_changed_since_is_read_again(tmp_path, monkeypatch, small_parts):
    args = _write(tmp_path, ROWS, GEO, "--count-column", "n")
    taken = _taken(monkeypatch)
    with reading_input(*args):
        changed = ROWS.replace("F,3", "F,5")
        # a new file moved over the old, as editors save (in place: the next test)
        (tmp_path / "people.new").write_text(changed)
        time.sleep(0.01)  # a later modification time than the file read ahead
        os.replace(tmp_path / "people.new", tmp_path / "people.csv")
        facts = _release_input(args)
    assert taken == [False] and not _readers()
    assert facts[0][0] == _facts_of(tmp_path, changed)


def test_a_file_truncated_in_place_while_read_ahead_stops_its_reader(tmp_path, small_parts):
    """The parts are read from the file, not memory-mapped: a file cut short under them
    stops a part's reader with an error (the careful reader then reads the file as it is
    now; a release refuses it: `tests/test_file_state.py`) where a mapped one killed the
    process (SIGBUS)."""
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 20_000  # 2 MB: beyond what
    rows = ROWS.splitlines()[0] + "\n" + body  # pyarrow reads ahead of its first batch
    args = _write(tmp_path, rows, GEO, "--count-column", "n")
    src = resolve_source(_input(args), None, 10**9)
    parts = arrow_text.text_string_parts(src, ["tract"], None, 2)
    assert len(parts) == 2
    with open(_input(args), "r+b") as handle:
        handle.truncate(len(rows) // 4)  # within the first part: both are cut short
    for part in parts:
        with pytest.raises(OSError, match="changed while it was read"):
            sum(batch.num_rows for batch in part)


def test_a_file_replaced_after_its_parts_are_cut_is_read_as_it_was(tmp_path, small_parts):
    """The parts read the file opened to cut them (a descriptor of its own each), never the
    one a rename put at the path since: not the new file's bytes at the old offsets."""
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 20_000
    rows = ROWS.splitlines()[0] + "\n" + body
    args = _write(tmp_path, rows, GEO, "--count-column", "n")
    src = resolve_source(_input(args), None, 10**9)
    parts = arrow_text.text_string_parts(src, ["tract"], None, 2)
    (tmp_path / "new.csv").write_text(ROWS)  # another file, as editors save
    os.replace(tmp_path / "new.csv", _input(args))
    assert sum(batch.num_rows for part in parts for batch in part) == body.count("\n")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux /proc")
def test_reading_ahead_leaves_no_thread_behind_and_no_file_open(tmp_path, small_parts):
    """Once a release's reading ahead is over, every thread left (pyarrow's pools among
    them) runs at the command's priority, and no descriptor of the input stays open."""
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 2000
    args = _write(tmp_path, ROWS.splitlines()[0] + "\n" + body, GEO, "--count-column", "n")
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with reading_input(*args):
        _release_input(args)
    nice = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(ProcessLookupError):  # a thread ending meanwhile: not left
            nice[int(task.name)] = os.getpriority(os.PRIO_PROCESS, int(task.name))
    assert set(nice.values()) == {mine}, nice
    gc.collect()
    held = [fd for fd in Path("/proc/self/fd").iterdir()
            if os.path.realpath(fd) == os.path.realpath(_input(args))]
    assert not held


def _facts_of(tmp_path, rows: str):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    return _release_input(_write(fresh, rows, GEO, "--count-column", "n"))[0][0]


def test_leaving_stops_a_reading_not_taken(tmp_path, small_parts):
    """A command that fails before its rows are placed leaves no thread reading."""
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 2000
    args = _write(tmp_path, ROWS.splitlines()[0] + "\n" + body, GEO, "--count-column", "n")
    with pytest.raises(KeyError), reading_input(*args):
        ahead = prefetch._AHEAD[0]
        ahead.starter.join()
        while not all(part.queue.full() for part in ahead.parts):
            threading.Event().wait(0.01)  # every part waits to hand over its batches
        raise KeyError("the command failed")
    assert not _readers() and not prefetch._AHEAD


def test_a_reader_that_stops_taking_stops_its_part(tmp_path, small_parts):
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 2000
    args = _write(tmp_path, ROWS.splitlines()[0] + "\n" + body, GEO, "--count-column", "n")
    src = resolve_source(_input(args), None, 10**9)
    columns = ["state", "county", "tract", "sex", "n"]
    with reading_input(*args):
        parts = prefetch.read_parts(src, columns, None, prefetch.PARTS)
        assert len(parts) == 2
        next(parts[0])
        assert prefetch._AHEAD[0].parts[0].thread.is_alive()  # many batches to go
        parts[0].close()  # the reader leaves the part after a batch
        part = prefetch._AHEAD[0].parts[0]
        part.thread.join(5)
        assert not part.thread.is_alive() and part.queue.empty()
    assert not _readers()


def test_only_a_declared_counts_release_in_memory_reads_ahead(tmp_path):
    args = _write(tmp_path, ROWS, GEO, "--count-column", "n")
    for flags in (["--engine", "dask"], ["--wide", "n"], ["--structure-from-data"]):
        cfg, run = _write(tmp_path, ROWS, GEO, "--count-column", "n", *flags)
        with reading_input(cfg, run):
            assert not prefetch._AHEAD
    with reading_input(*args):
        assert prefetch._AHEAD


def test_the_batches_read_ahead_stay_within_a_share_of_the_memory_limit(tmp_path):
    """`AHEAD` batches a part under a large ``--max-memory``; one under a small one, whose
    release is still read (and placed) the same."""
    expected = None
    for limit, batches in (("64GB", prefetch.AHEAD), ("1GB", 8), ("100MB", 1)):
        args = _write(tmp_path, ROWS, GEO, "--count-column", "n", "--max-memory", limit)
        with reading_input(*args):
            assert prefetch._AHEAD[0].ahead == batches
            facts = _release_input(args)
        assert facts == (expected or facts)
        expected = facts

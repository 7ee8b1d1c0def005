"""`hierdp sample`: every bundled sample can be written, and the release commands it prints
run as printed (on a subset of the large samples, with a seed so the test is fast)."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.data.sample_files import SAMPLE_FILES
from hierdp_core.verdict import SEEDED

#: first-level column of each sample: the tests keep its first two units (a smaller file that
#: still nests) so that the printed commands run in seconds
FIRST_LEVEL = {"us-counties": "state", "italy-municipalities": "region",
               "synthetic-us-like": "state", "us-households": "state", "us-flights": "o_state"}


def test_every_sample_is_listed(capsys):
    code, out, _ = run(capsys, "sample")
    assert code == 0
    listed = [line.split(":")[0] for line in out.splitlines()]
    assert listed == list(SAMPLE_FILES)
    assert {"us-households", "us-flights", "italy-municipalities"} <= set(listed)
    assert set(FIRST_LEVEL) == set(SAMPLE_FILES)


def _small(sample):
    """The sample, its geography and its groups file restricted to two first-level
    units."""
    column = FIRST_LEVEL[sample.name]
    keep = sample.loader()[column].drop_duplicates().iloc[:2]

    def load():
        table = sample.loader()
        if sample.name == "us-flights":  # both ends within the kept states
            return table[table["o_state"].isin(keep) & table["d_state"].isin(keep)]
        return table[table[column].isin(keep)]

    def geography():
        units = sample.geography()
        return units[units[column.removeprefix("o_")].isin(keep)]

    def groups():
        declared = sample.groups()
        return declared[declared[column].isin(keep)]
    return dataclasses.replace(sample, loader=load, geography=geography,
                               groups=groups if sample.groups else None)


@pytest.mark.parametrize("name", list(SAMPLE_FILES))
def test_printed_release_commands_run(capsys, monkeypatch, tmp_path, name):
    monkeypatch.setitem(SAMPLE_FILES, name, _small(SAMPLE_FILES[name]))
    path = tmp_path / f"{name}.csv"
    code, out, err = run(capsys, "sample", name, "--out", path)
    assert code == 0, err
    written = pd.read_csv(path)
    assert f"wrote {path} ({len(written):,} rows" in out
    geography = tmp_path / f"{name}-geography.csv"
    assert f"wrote {geography} (the public geography" in out and geography.is_file()
    groups = tmp_path / f"{name}-groups.csv"  # a group-size sample declares its groups
    assert groups.is_file() == (name == "us-households") == (f"wrote {groups}" in out)
    sample = SAMPLE_FILES[name]  # the files hold the bytes of pandas' to_csv
    for file, frame in [(path, sample.loader()), (geography, sample.geography()),
                        *([(groups, sample.groups())] if sample.groups else [])]:
        assert file.read_bytes() == frame.to_csv(index=False).encode(), file
    commands = [line.strip() for line in out.splitlines() if line.startswith("  hierdp release")]
    assert len(commands) == len(SAMPLE_FILES[name].release_examples) >= 1
    for i, command in enumerate(commands):
        argv = shlex.split(command)[1:]
        assert argv[:2] == ["release", str(path)] and "--seed" not in argv
        assert argv[argv.index("--geography") + 1] == str(geography)
        assert "--structure-from-data" not in argv
        out_dir = tmp_path / f"release{i}"
        argv[argv.index("--out") + 1] = str(out_dir)
        extra = ["--max-size", "30"] if "group-sizes" in argv else []  # a smaller table
        code, _, err = run(capsys, *argv, *extra, "--seed", "1")
        assert code == 0, (command, err)
        release = pd.read_csv(out_dir / "release.csv")
        assert len(release) > 0 and release["value"].ge(0).all()
        if name == "italy-municipalities" and "--query" not in argv:  # every level named
            assert list(release["level_name"].unique()) == [
                "total", "region", "province", "municipality"]
        manifest = json.loads((out_dir / "manifest.json").read_text())
        assert manifest["input"]["structure"] == "declared"
        if "--groups" in argv:
            assert manifest["privacy"]["group_counts"] == "declared"
            assert manifest["not_publishable_because"] == [SEEDED]  # only the seed


def test_sample_geographies_are_every_unit_of_the_source():
    """A unit with nobody in a sample is still in its geography: the geography is the list
    the source enumerates, never the units seen in the data."""
    from hierdp_core.structure import geography_from_table

    sizes = {"us-counties": 3141, "italy-municipalities": 7901, "synthetic-us-like": 3100,
             "us-households": 3141}
    for name, sample in SAMPLE_FILES.items():
        units = sample.geography()
        levels = ["state", "airport"] if name == "us-flights" else [
            c for c in units.columns if not c.endswith("_name")]
        geo = geography_from_table(units, levels)
        assert geo.n_leaves == sizes.get(name, len(units)) == len(units), name


def test_unknown_sample_and_unwritable_path(capsys, tmp_path):
    code, _, err = run(capsys, "sample", "us-household")
    assert code == 2 and "unknown sample 'us-household'" in err and "us-households" in err
    code, _, err = run(capsys, "sample", "us-flights", "--out", tmp_path / "no" / "x.csv")
    assert code == 2 and "cannot write" in err


def test_out_is_a_csv_or_an_existing_folder_and_never_overwritten(capsys, monkeypatch,
                                                                   tmp_path):
    """``--out DIR`` for a missing DIR wrote a file named DIR (and ``DIR-geography.csv``);
    an existing sample was replaced silently."""
    monkeypatch.setitem(SAMPLE_FILES, "us-counties", _small(SAMPLE_FILES["us-counties"]))
    code, out, err = run(capsys, "sample", "us-counties", "--out", tmp_path / "new")
    assert (code, out) == (2, "") and err == ("error: --out names the CSV file to write (e.g. "
                                              "sample.csv) or an existing folder\n")
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "s.csv"
    assert run(capsys, "sample", "us-counties", "--out", path)[0] == 0
    (tmp_path / "s-geography.csv").write_text("kept")
    code, out, err = run(capsys, "sample", "us-counties", "--out", path)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--overwrite" in err
    assert (tmp_path / "s-geography.csv").read_text() == "kept"
    code, _, err = run(capsys, "sample", "us-counties", "--out", path, "--overwrite")
    assert code == 0, err
    assert (tmp_path / "s-geography.csv").read_text() != "kept"


def test_a_folder_as_out_gets_the_sample_by_name(capsys, monkeypatch, tmp_path):
    """``--out .`` ended with "unexpected ValueError ... has an empty name" (exit 1)."""
    monkeypatch.setitem(SAMPLE_FILES, "us-counties", _small(SAMPLE_FILES["us-counties"]))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "sample", "us-counties", "--out", ".")
    assert code == 0, err
    assert (tmp_path / "us-counties.csv").exists()
    assert (tmp_path / "us-counties-geography.csv").exists()
    assert out.startswith("wrote us-counties.csv (") and "release us-counties.csv " in out

"""The Python API (`hierdp_core.api`, ``hierdp_core.release``): its doctests and the README's
Python example run; its release is the command line's, value for value and file for file,
for the same inputs and seed; a secure write is charged to the budget ledger; bad input
raises the typed errors."""

from __future__ import annotations

import doctest
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

import hierdp_core
from hierdp_core import api
from hierdp_core.data.loaders import read_table
from hierdp_core.data.sample_files import write_sample
from hierdp_core.errors import (
    BudgetError,
    ColumnRoleError,
    HierdpError,
    InputError,
    MechanismError,
    StructureError,
)

ROOT = Path(__file__).resolve().parents[1]
DECLARED = {"sex": ["F", "M"], "age_group": ["0-17", "18-64", "65+"]}
CLI_DECLARED = ["--category-values", "sex=F|M", "--category-values", "age_group=0-17|18-64|65+"]
SEALED = ("created_utc", "checksum", "signature")  # differ between any two writes


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> tuple[Path, Path]:
    """The bundled synthetic sample as `hierdp sample synthetic-us-like --out sample.csv`
    writes it: (table, geography)."""
    folder = tmp_path_factory.mktemp("sample")
    write_sample("synthetic-us-like", folder / "sample.csv")
    for name in ("sample.csv", "sample-geography.csv"):  # four states: a fast bootstrap
        text = (folder / name).read_text().splitlines(keepends=True)
        kept = [line for line in text[1:] if line[:2] in ("01", "02", "04", "05")]
        (folder / name).write_text("".join([text[0], *kept]))
    return folder / "sample.csv", folder / "sample-geography.csv"


def test_the_api_doctests_pass():
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0, result


def readme_python_example() -> str:
    """The README's first Python block (its first screen's example)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has no ```python example"
    return blocks[0]


def test_the_readme_python_example_runs(sample, tmp_path, monkeypatch):
    table, geography = sample
    for path in (table, geography):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    code = readme_python_example()
    assert "hierdp_core.release(" in code and len(code.strip().splitlines()) <= 7
    exec(compile(code, "README.md", "exec"), {})
    manifest = json.loads((tmp_path / "release-py" / "manifest.json").read_text())
    assert manifest["publishable"] is True
    assert (tmp_path / "release-py" / "release.csv").is_file()


@pytest.mark.parametrize(("interval", "cli_interval"), [(None, "none"), (0.9, "0.9")])
def test_api_release_is_the_cli_release(sample, tmp_path, capsys, interval, cli_interval):
    table, geography = sample
    code, _, err = run_cli(capsys, "release", table, "--levels", "state,county",
                           "--count-column", "count", "--geography", geography, *CLI_DECLARED,
                           "--mechanism", "topdown", "--epsilon", "1", "--seed", "11",
                           "--interval", cli_interval, "--out", tmp_path / "cli")
    assert code == 0, err
    made = hierdp_core.release(table, levels=["state", "county"], count_column="count",
                               geography=geography, category_values=DECLARED, seed=11,
                               interval=interval)
    paths = made.write(tmp_path / "api")
    cli_csv = (tmp_path / "cli" / "release.csv").read_bytes()
    assert paths["csv"].read_bytes() == cli_csv  # bit-identical values, intervals and ids
    cli_manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    api_manifest = json.loads(paths["manifest"].read_text())
    for key in SEALED:
        cli_manifest.pop(key), api_manifest.pop(key)
    assert api_manifest == cli_manifest
    assert {k: v for k, v in made.manifest.items() if k not in (*SEALED, "files", "input")} \
        == {k: v for k, v in cli_manifest.items() if k not in ("files", "input")}
    expected = pd.read_csv(tmp_path / "cli" / "release.csv", dtype=str, keep_default_na=False)
    assert made.to_frame().astype(str).equals(expected)
    assert (made.intervals is None) == (interval is None)


def test_a_dataframe_gives_the_release_of_its_file(sample):
    table, geography = sample
    common = {"levels": ["state", "county"], "count_column": "count",
              "category_values": DECLARED, "seed": 5}
    from_file = hierdp_core.release(table, geography=geography, **common)
    from_frames = hierdp_core.release(read_table(table), geography=read_table(geography),
                                      **common)
    assert from_frames.to_frame().equals(from_file.to_frame())
    assert from_frames.manifest["publishable"] is False  # seeded
    assert from_frames.manifest["input"]["file"] == api.DATAFRAME


def test_without_a_geography_the_release_says_it_is_not_publishable(sample, tmp_path):
    made = hierdp_core.release(sample[0], levels=["state"], count_column="count",
                               out=tmp_path / "r", duplicates="sum")
    assert made.manifest["structure"] == "from-data"
    assert made.manifest["publishable"] is False
    assert "not publishable" in repr(made) and "topdown" in repr(made)
    assert any("declared" in reason or "data" in reason
               for reason in made.manifest["not_publishable_because"])


def test_secure_noise_is_charged_before_it_is_drawn_and_written_once(sample, tmp_path,
                                                                      monkeypatch):
    from hierdp_core.privacy.ledger import Ledger

    table, geography = sample
    args = {"levels": ["state"], "count_column": "count", "geography": geography,
            "category_values": DECLARED, "epsilon": 1.0, "duplicates": "sum"}
    with pytest.raises(InputError, match="out=FOLDER"):
        hierdp_core.release(table, **args)  # a secure draw nobody charged: refused
    first = hierdp_core.release(table, **args, out=tmp_path / "one", budget_total="1.5")
    assert first.manifest["publishable"] is True
    assert (tmp_path / "one" / "manifest.json").is_file()
    [dataset] = Ledger().datasets()
    assert dataset.spent == 1.0
    with pytest.raises(InputError, match="written to"):
        first.write(tmp_path / "again")
    drawn = []
    monkeypatch.setattr(api, "release_of_config", _counting(api.release_of_config, drawn))
    with pytest.raises(BudgetError):
        hierdp_core.release(table, **args, out=tmp_path / "two")
    assert not (tmp_path / "two").exists() and drawn == ["checked"]  # no noise drawn
    seeded = hierdp_core.release(table, **{**args, "epsilon": 5.0}, seed=1)
    seeded.write(tmp_path / "three")  # exploration spends nothing
    assert Ledger().datasets()[0].spent == 1.0
    with pytest.raises(InputError, match="seeded"):
        hierdp_core.release(table, **args, seed=1, out=tmp_path / "four")


def test_the_api_reads_a_table_as_the_command_line_and_checks_its_formats_first(tmp_path):
    """The API lacked the command line's local_codes, missing, ragged, encoding and wide
    (its own errors told users to use them); a numeric budget_total crashed
    (AttributeError); a mistyped format was refused only after the budget was charged and
    the noise drawn."""
    from hierdp_core.privacy.ledger import Ledger

    table = pd.DataFrame({"state": ["A", "A", "B", "B"], "district": ["01", "02", "01", "02"],
                          "n": [30.0, None, 40.0, 50.0]})
    args = {"levels": ["state", "district"], "count_column": "n", "local_codes": True,
            "missing": "zero", "geography": table[["state", "district"]], "epsilon": 1.0,
            "budget_total": 2}
    with pytest.raises(InputError, match="unknown export format"):
        hierdp_core.release(table, **args, out=tmp_path / "x", formats=("xlsx",))
    assert Ledger().datasets() == [] and not (tmp_path / "x").exists()
    made = hierdp_core.release(table, **args, out=tmp_path / "ok")
    assert {"A/01", "A/02", "B/01", "B/02"} <= set(made.to_frame()["node_id"])
    [dataset] = Ledger().datasets()
    assert dataset.spent == 1.0


def _counting(release_of_config, drawn):
    """``release_of_config`` noting 'checked' when its input checks are done and 'drawn' once
    the mechanism has drawn its noise."""
    def wrapped(*a, before_noise=None, **k):
        def before(budget, data):
            drawn.append("checked")
            before_noise(budget, data)
        made = release_of_config(*a, before_noise=before, **k)
        drawn.append("drawn")
        return made
    return wrapped


@pytest.mark.parametrize(("change", "error"), [
    ({"mechanism": "no-such-mechanism"}, MechanismError),
    ({"epsilon": 1e300}, BudgetError),
    ({"epsilon": 1.0, "rho": 0.5}, InputError),
    ({"seed": -1}, InputError),
    ({"seed": 1.5}, InputError),
    ({"interval": 1.5}, InputError),
    ({"levels": ["state", "nowhere"]}, InputError),
    ({"count_column": "state"}, ColumnRoleError),
    ({"category_values": {"sex": ["F"], "age_group": DECLARED["age_group"]}},
     StructureError),
    ({"category_values": {"sex": ["F|M"]}}, InputError),
    ({"category_values": None, "category_columns": ["sex"]}, InputError),
    ({"mechanism": "gs-noisy"}, InputError),
    ({"invariants": ["total"], "mechanism": "raw-laplace"}, InputError),
    ({"geography": 3}, InputError),
    ({"split": [1, 2, 3, 4, 5]}, HierdpError),
])
def test_bad_input_raises_a_typed_error(sample, change, error):
    table, geography = sample
    args = {"levels": ["state", "county"], "count_column": "count", "geography": geography,
            "category_values": DECLARED, "seed": 1, **change}
    with pytest.raises(error):
        hierdp_core.release(table, **args)


def test_a_table_that_is_neither_a_frame_nor_an_existing_file_is_refused(tmp_path):
    with pytest.raises(InputError, match="DataFrame or the path"):
        hierdp_core.release([1, 2], levels=["a"])
    with pytest.raises(InputError, match="missing.csv"):
        hierdp_core.release(tmp_path / "missing.csv", levels=["a"], seed=1)


def test_importing_hierdp_core_stays_cheap():
    probe = "import sys, hierdp_core; print(sorted({'numpy', 'pandas'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "[]"


def test_hierdp_core_release_is_the_api_function(sample):
    assert hierdp_core.release is api.release
    made = hierdp_core.release(sample[0], levels=["state"], count_column="count", seed=2,
                               duplicates="sum")
    assert isinstance(made, api.CountRelease)

"""Reproduce a release outside the app (issue 31, item 8): the Export page shows the
release's ``hierdp`` commands and a Python script; run as shown, on the bundled sample the
commands write, both give the values of the page's seeded release. (The query pages' box:
`test_app_query_config`.)"""

from __future__ import annotations

import runpy
import shlex

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from test_app import assert_clean, page

from hierdp_core.config import FORMAT, ConfigError, config_from_dict, config_json
from hierdp_core.reproduce import release_commands, release_from_config
from hierdp_core.ui import config as config_ui
from hierdp_core.ui import session
from hierdp_core.ui.reproduce import SHOWN

READ = {"dtype": {"node_id": str, "parent_id": str, "label": str}, "keep_default_na": False}


def shown(at) -> tuple[list[str], str]:
    """(the command lines, the Python script) the page shows."""
    blocks = {c.language: c.value for c in at.code}
    return blocks["bash"].splitlines(), blocks["python"]


def run_shown(capsys, monkeypatch, folder, cfg, commands: list[str], script: str):
    """Save ``cfg`` under the name the commands read, run the commands and then the script
    in ``folder``: the release tables (of the command, of the script)."""
    monkeypatch.chdir(folder)
    words = [shlex.split(line) for line in commands]
    (folder / words[-1][words[-1].index("--config") + 1]).write_text(config_json(cfg))
    for line in words:
        assert line[0] == "hierdp"
        extra = ("--interval", "none") if line[1] == "release" else ()
        code, _, err = run_cli(capsys, *line[1:], *extra)
        assert code == 0, err
    (folder / "release.py").write_text(script)
    runpy.run_path(str(folder / "release.py"), run_name="__main__")
    return (pd.read_csv(folder / "release" / "release.csv", **READ),
            pd.read_csv(folder / "release.csv", **READ))


def test_the_export_pages_script_and_command_give_the_pages_release(capsys, monkeypatch,
                                                                   tmp_path):
    at = page("pages/4_Results.py", "us-counties")
    at.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.EXPLORATION,
                                              config_ui.SEED: 7}
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    cfg = at.session_state[SHOWN]["ex"]
    assert release.randomness["seed"] == 7 and cfg.seed == 7
    commands, script = shown(at)
    assert commands == ["hierdp sample us-counties --out us-counties.csv",
                        "hierdp release us-counties.csv --config hierdp_config.json "
                        "--names state=state_name,county=county_name --out release"]
    command, scripted = run_shown(capsys, monkeypatch, tmp_path, cfg, commands, script)
    page_table = release.to_frame()
    for table in (command, scripted):
        np.testing.assert_array_equal(table["value"].to_numpy(), release.values.ravel())
        # the units' names too ('Alabama', not '01': the commands read the name columns)
        assert table["label"].tolist() == page_table["label"].astype(str).tolist()
    assert "publishable: no" in capsys.readouterr().out  # seeded: the script says so


def test_the_api_names_what_it_cannot_use(tmp_path):
    cfg = config_from_dict({"format": FORMAT, "mechanism": "topdown", "epsilon": 1})
    with pytest.raises(ConfigError, match="names no data"):
        release_from_config(cfg)
    with pytest.raises(ConfigError, match="names no data"):
        release_commands(cfg)
    saved = tmp_path / "c.json"
    saved.write_text(config_json(cfg))
    with pytest.raises(ConfigError, match="names no data"):
        release_from_config(saved)

"""Saved configurations (hierdp_core.config): validation with typed errors naming the key,
a round trip through JSON, and ``hierdp release --config FILE`` giving the same release as
the same flags (flags override the file; bad files are one line and exit status 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from hierdp_core.config import (
    FORMAT,
    ConfigError,
    ReleaseConfig,
    config_from_dict,
    config_json,
    load_config,
)
from hierdp_core.errors import InputError

BASE = {"format": FORMAT, "mechanism": "topdown", "epsilon": 1.0}


def test_round_trip_through_json(tmp_path):
    cfg = ReleaseConfig(mechanism="least-squares", rho=0.5, delta=1e-6,
                        data={"sample": "us-counties"}, levels=("state", "county"),
                        count_column="population", category_columns=("age_group",),
                        category_values={"age_group": ("0-18", "19-64")},
                        params={"noise": "gaussian"}, split=(0.0, 0.5, 1.0), seed=4)
    path = tmp_path / "c.json"
    path.write_text(config_json(cfg))
    assert load_config(path) == cfg
    assert json.loads(path.read_text())["format"] == FORMAT
    assert cfg.budget().unit == "rho"


@pytest.mark.parametrize(("change", "named"), [
    ({"format": "hierdp-config/0"}, "'format'"),
    ({"bogus": 1}, "bogus"),
    ({"epsilon": -1}, "'epsilon'"),
    ({"epsilon": True}, "'epsilon'"),
    ({"rho": 0.5}, "exactly one"),
    ({"mechanism": 3}, "'mechanism'"),
    ({"seed": -2}, "'seed'"),
    ({"seed": 1.5}, "'seed'"),
    ({"split": [1, -1]}, "'split'"),
    ({"split": "sideways"}, "'split'"),
    ({"levels": "state,county"}, "'levels'"),
    ({"delta": 2}, "'delta'"),
    ({"query": "everything"}, "'query'"),
    ({"structure": "guessed"}, "'structure'"),
    ({"data": {"sample": "x", "file": "y.csv"}}, "both"),
    ({"data": {"url": "http://x"}}, "url"),
    ({"category_values": {"sex": []}}, "category_values.sex"),
    ({"category_values": {"sex": ["F", "M", "F"]}}, "category_values.sex"),
    ({"category_values": {"sex": ["F|M"]}}, "category_values.sex"),
    ({"category_values": {"sex": ["F", " "]}}, "category_values.sex"),
])
def test_bad_keys_are_typed_errors_naming_the_key(change, named):
    with pytest.raises(ConfigError, match=named) as info:
        config_from_dict({**BASE, **change})
    assert isinstance(info.value, InputError)


def test_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_config(tmp_path / "list.json")


# ---- the command line ----------------------------------------------------------------------
#: the sample has a row per age group too: its rows are summed, declared (a configuration
#: file does not hold how the table is read: `SUMMED` goes with it)
SUMMED = ["--duplicates", "sum"]
FLAGS = [*SUMMED, "--levels", "state,county", "--count-column", "count", "--categories", "sex",
         "--category-values", "sex=F|M", "--mechanism", "topdown", "--epsilon", "0.5",
         "--split", "1,2,4", "--seed", "7"]


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sample")
    from hierdp_core.cli.main import main

    assert main(["sample", "synthetic-us-like", "--out", str(folder / "s.csv")]) == 0
    config = {**BASE, "data": {"file": "s.csv", "geography": "s-geography.csv"},
              "levels": ["state", "county"], "count_column": "count",
              "category_columns": ["sex"], "category_values": {"sex": ["F", "M"]},
              "epsilon": 0.5, "split": [1, 2, 4], "seed": 7}
    (folder / "c.json").write_text(json.dumps(config))
    return folder


def release_csv(folder) -> str:
    return (folder / "release.csv").read_text()


def test_config_gives_the_same_release_as_the_flags(capsys, sample_files, tmp_path):
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "c.json", *SUMMED,
                           "--out", tmp_path / "a")
    assert code == 0, err
    code, _, err = run_cli(capsys, "release", sample_files / "s.csv", *FLAGS, "--geography",
                           sample_files / "s-geography.csv", "--out", tmp_path / "b")
    assert code == 0, err
    assert release_csv(tmp_path / "a") == release_csv(tmp_path / "b")
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["randomness"]["seed"] == 7 and manifest["privacy"]["epsilon"] == 0.5


def test_flags_override_the_file(capsys, sample_files, tmp_path):
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "c.json", *SUMMED,
                           "--seed", "8", "--out", tmp_path / "a")
    assert code == 0, err
    code, _, err = run_cli(capsys, "release", sample_files / "s.csv", *FLAGS[:-1], "8",
                           "--geography", sample_files / "s-geography.csv",
                           "--out", tmp_path / "b")
    assert code == 0, err
    assert release_csv(tmp_path / "a") == release_csv(tmp_path / "b")
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "c.json", *SUMMED,
                           "--epsilon", "2", "--mechanism", "raw-laplace", "--out",
                           tmp_path / "c")
    assert code == 0, err
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["mechanism"]["name"] == "raw-laplace"
    assert manifest["privacy"]["epsilon"] == 2


def test_a_budget_or_split_on_the_command_line_replaces_the_files(capsys, sample_files,
                                                                   tmp_path):
    config = json.loads((sample_files / "c.json").read_text())
    config.update(epsilon=None, rho=0.5, delta=1e-6, split="finer")
    (sample_files / "z.json").write_text(json.dumps(config))
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "z.json", *SUMMED,
                           "--epsilon", "1", "--split-preset", "coarser", "--out", tmp_path)
    assert code == 0, err
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["privacy"]["definition"] == "pure-dp"  # no delta from the file
    assert "delta" not in manifest["privacy"] or manifest["privacy"]["delta"] is None
    np.testing.assert_allclose([row["share"] for row in manifest["ledger"]],
                               [3 / 6, 2 / 6, 1 / 6])


@pytest.mark.parametrize(("content", "said"), [
    ({**BASE, "bogus": 1}, "unknown configuration key(s) ['bogus']"),
    ({**BASE, "epsilon": "one"}, "'epsilon' must be a number > 0"),
    ({**BASE, "data": {"sample": "us-counties"}}, "hierdp sample us-counties --out FILE"),
])
def test_bad_config_is_one_line_and_status_2(capsys, tmp_path, content, said):
    (tmp_path / "c.json").write_text(json.dumps(content))
    code, out, err = run_cli(capsys, "release", "--config", tmp_path / "c.json",
                             "--out", tmp_path / "o")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: --config: ") and said in err


def test_without_config_input_and_mechanism_are_still_required(capsys, tmp_path):
    code, _, err = run_cli(capsys, "release", "x.csv", "--out", tmp_path / "o")
    assert code == 2 and "--mechanism" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "release", "--mechanism", "topdown", "--out", tmp_path)
    assert code == 2 and "input" in err and err.count("\n") == 1


# ---- the dashboard (AppTest) ------------------------------------------------------------------
def _load_into_dashboard(raw: dict):
    """Load ``raw`` as the Export page does; the notes, or the error's message."""
    import streamlit as st

    from hierdp_core.config import config_from_dict
    from hierdp_core.errors import HierdpError
    from hierdp_core.ui import config as config_ui

    try:
        st.session_state["out"] = config_ui.apply_config(config_from_dict(raw))
    except HierdpError as exc:
        st.session_state["out"] = str(exc)


@pytest.mark.parametrize(("raw", "expected"), [
    ({**BASE, "data": {"sample": "synthetic-us-like"}, "epsilon": 0.7, "seed": 3,
      "split": [0, 1, 1]}, ["is used, but the Mechanism & budget page"]),
    ({**BASE, "data": {"file": "elsewhere.csv"}}, "upload it on the Data page first"),
    ({**BASE, "data": {"sample": "atlantis"}}, "unknown sample 'atlantis'"),
    ({**BASE, "data": {"sample": "us-counties"}, "split": [1, 1]}, "2 weights for 3 levels"),
    ({**BASE, "query": "flows"}, "load it on the Flows page (or use it with hierdp release"),
])
def test_loading_into_the_dashboard(raw, expected):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_load_into_dashboard, args=(raw,), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    out = at.session_state["out"]
    if isinstance(expected, list):
        assert len(out) == 1 and expected[0] in out[0]
        settings = at.session_state["hd_settings"]
        assert settings["epsilon"] == 0.7 and settings["weights"] == [0.0, 1.0, 1.0]
        assert at.session_state["hd_randomness"]["seed"] == 3
        assert at.session_state["hd_dataset"]["sample"] == "synthetic-us-like"
    else:
        assert expected in out


def test_the_results_page_reads_the_randomness_the_loader_writes():
    """`ui.config` keeps the randomness in a plain session key: the Results page must use it,
    a later change of the widgets must win over it, and a load must redraw the widgets."""
    from test_app import assert_clean, page

    from hierdp_core.ui import config as config_ui
    from hierdp_core.ui import session

    at = page("pages/4_Results.py", "synthetic-us-like")
    at.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.EXPLORATION,
                                              config_ui.SEED: 11}
    at.run()
    assert_clean(at)
    assert at.session_state[session.RELEASE].randomness["seed"] == 11
    assert at.number_input(key="seed_0").value == 11
    at.number_input(key="seed_0").set_value(12).run()
    at.button(key="run_release").click().run()
    assert at.session_state[session.RELEASE].randomness["seed"] == 12
    assert at.session_state[config_ui.RANDOMNESS][config_ui.SEED] == 12
    at.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.EXPLORATION,
                                              config_ui.SEED: 4}
    at.session_state[config_ui.GENERATION] = 1  # what a load does
    at.run()
    assert at.number_input(key="seed_1").value == 4
    at = page("pages/4_Results.py", "synthetic-us-like")
    at.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.SECURE}
    at.run()
    assert_clean(at)
    assert at.session_state[session.RELEASE].randomness["mode"] == "secure"


def test_an_exact_total_is_declared_in_the_file(capsys, sample_files, tmp_path):
    """root_invariant publishes the total exactly: the file declares it (the dashboard
    writes ``invariants``), as the command line asks for it."""
    config = json.loads((sample_files / "c.json").read_text())
    config["params"] = {"root_invariant": True}
    (sample_files / "t.json").write_text(json.dumps(config))
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "t.json", *SUMMED,
                           "--out", tmp_path / "a")
    assert code == 2 and "--invariant total" in err
    # with categories the root's cells are kept as they are: their counts are declared too
    (sample_files / "t.json").write_text(json.dumps({**config, "invariants": ["total"]}))
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "t.json", *SUMMED,
                           "--out", tmp_path / "b")
    assert code == 2 and "--invariant category-totals" in err
    (sample_files / "t.json").write_text(json.dumps(
        {**config, "invariants": ["total", "category-totals"]}))
    code, _, err = run_cli(capsys, "release", "--config", sample_files / "t.json", *SUMMED,
                           "--out", tmp_path / "b")
    assert code == 0, err
    invariants = json.loads((tmp_path / "b" / "manifest.json").read_text())["privacy"][
        "invariants"]
    assert invariants == ["root total", "root count of every category"]


def _saved_after_loading(raw: dict):
    import streamlit as st

    from hierdp_core.config import config_from_dict
    from hierdp_core.ui import config as config_ui

    config_ui.apply_config(config_from_dict(raw))
    st.session_state["out"] = config_ui.current_config().to_dict()


def test_the_dashboard_declares_an_exact_total():
    from streamlit.testing.v1 import AppTest

    raw = {**BASE, "data": {"sample": "synthetic-us-like"}, "params": {"root_invariant": True},
           "invariants": ["total"]}
    at = AppTest.from_function(_saved_after_loading, args=(raw,), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    # the sample has categories: the root's count of each is kept exactly too
    assert at.session_state["out"]["invariants"] == ["total", "category-totals"]
    at = AppTest.from_function(_saved_after_loading, args=({**raw, "params": {}},),
                               default_timeout=60).run()
    assert at.session_state["out"]["invariants"] == []


def test_the_seed_survives_a_visit_to_another_page():
    """Streamlit forgets a widget's value once another page has run: the seed typed on the
    Results page must still be there (and in the saved configuration) after a visit."""
    from test_app import assert_clean, page

    from hierdp_core.ui import config as config_ui

    at = page("pages/4_Results.py", "synthetic-us-like").run()
    at.number_input(key="seed_0").set_value(5).run()
    at.switch_page("pages/6_Export.py").run()
    at.switch_page("pages/2_Hierarchy.py").run()
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    assert at.number_input(key="seed_0").value == 5
    assert at.session_state[config_ui.RANDOMNESS][config_ui.SEED] == 5

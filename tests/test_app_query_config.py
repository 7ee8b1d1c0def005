"""Configurations of the Group sizes, Flows and Range queries pages (AppTest): the saved
configuration, read back and loaded into a fresh session (`ui.query_config.widget_state`,
what the page's loader writes), gives the same release with the same seed; configurations
a page cannot reproduce are refused with a message naming why."""

from __future__ import annotations

import json
import runpy
from dataclasses import replace

import numpy as np
import pytest
from test_app import assert_clean, page

from hierdp_core.config import FORMAT, ConfigError, config_from_dict, config_json
from hierdp_core.ui import session
from hierdp_core.ui.query_config import CONFIGS, widget_state
from hierdp_core.ui.reproduce import SHOWN


def _gs(at):
    at.selectbox(key="gs_mechanism").set_value("gs-mh-dp").run()
    at.radio(key="gs_gs-mh-dp_noise").set_value("laplace")
    at.radio(key="gs_gs-mh-dp_groups").set_value("exact")
    at.select_slider(key="gs_epsilon").set_value(2.0)
    at.number_input(key="gs_seed").set_value(3)


def _fl(at):
    at.selectbox(key="fl_mechanism").set_value("tda-l2").run()
    at.selectbox(key="fl_delta").set_value(1e-6)
    at.radio(key="fl_split").set_value("geometric")
    at.select_slider(key="fl_epsilon").set_value(0.5)
    at.number_input(key="fl_seed").set_value(2)


def _rg(at):
    at.selectbox(key="rg_mechanism").set_value("greedy-h").run()
    at.number_input(key="rg_greedy-h_branching").set_value(4)
    at.radio(key="rg_workload").set_value("bands").run()
    at.text_area(key="rg_bands").set_value("0-17,18-100")
    at.select_slider(key="rg_epsilon").set_value(2.0)
    at.number_input(key="rg_seed").set_value(5)


def released(release) -> list[np.ndarray]:
    if hasattr(release, "levels"):  # flows: the released nodes of every tree level
        return [np.concatenate([lv.origin, lv.destination, lv.value]) for lv in release.levels]
    return [release.values]


CASES = {"gs": ("pages/7_Group_sizes.py", session.GS_RELEASE, _gs),
         "fl": ("pages/8_Flows.py", session.FLOW_RELEASE, _fl),
         "rg": ("pages/9_Ranges.py", session.RANGE_RELEASE, _rg)}


def saved_and_loaded_back_gives_the_same_release(prefix: str, at, default: list) -> None:
    """The configuration of ``at`` (the page run with ``prefix``'s settings; ``default``:
    its release before them), saved, read back and loaded into a fresh session, gives the
    same release."""
    path, release_key, _ = CASES[prefix]
    saved = at.session_state[CONFIGS][prefix]
    first = released(at.session_state[release_key][1])
    cfg = config_from_dict(json.loads(config_json(saved)))  # the file, read back
    # all but how the table is read (`NOT_IN_CONFIG`: whether repeated rows are summed,
    # which the page does and its reproduce commands declare)
    assert cfg == replace(saved, duplicates="error") and cfg.seed is not None and cfg.seed > 0

    state, notes = widget_state(prefix, cfg, None)
    assert notes == []
    fresh = page(path)
    for key, value in state.items():
        fresh.session_state[key] = value
    fresh.run()
    assert_clean(fresh)
    assert fresh.session_state[CONFIGS][prefix] == saved, "loaded back: another configuration"
    again = released(fresh.session_state[release_key][1])
    assert len(again) == len(first)
    for a, b in zip(again, first, strict=True):
        np.testing.assert_array_equal(a, b, err_msg="loaded back: another release")
    assert any(a.shape != d.shape or (a != d).any() for a, d in zip(again, default,
                                                                      strict=True)), \
        "the chosen settings gave the default release"


BASE = {"format": FORMAT, "mechanism": "inftda", "epsilon": 1.0, "delta": 1e-8,
        "query": "flows", "data": {"sample": "us-flights"},
        "origin_levels": ["o_state", "o_airport"], "destination_levels": ["d_state", "d_airport"],
        "count_column": "flights", "seed": 1}


@pytest.mark.parametrize(("prefix", "change", "said"), [
    ("gs", {}, "for flows: load it on that page"),
    ("fl", {"epsilon": 0.3}, "ε in"),
    ("fl", {"delta": 1e-5}, "δ in"),
    ("fl", {"tree": "origin"}, "refines the destination first"),
    ("fl", {"mechanism": "dawa"}, "not a flows mechanism"),
    ("fl", {"params": {"order": "sideways"}}, "'order'"),
    ("fl", {"data": {"file": "trips.csv"}}, "upload it on the Data page first"),
    ("fl", {"count_column": "trips"}, "is released with"),
    ("fl", {"split": [1, 1, 1, 1, 1]}, "split"),
])
def test_what_a_page_cannot_reproduce_is_refused(prefix, change, said):
    cfg = config_from_dict({**BASE, **change})
    with pytest.raises(Exception, match=said) as info:
        widget_state(prefix, cfg, "other.csv")
    assert isinstance(info.value, ConfigError) or "order" in said


def test_an_upload_gets_its_role_pickers():
    cfg = config_from_dict({**BASE, "data": {"file": "trips.csv"}, "count_column": None,
                            "split": "geometric"})
    state, _ = widget_state("fl", cfg, "trips.csv")
    assert state["fl_source"] == "upload" and state["fl_up_count"].startswith("(none")
    assert state["fl_up_origin"] == ["o_state", "o_airport"] and state["fl_split"] == "geometric"
    secure = config_from_dict({**BASE, "seed": None})
    assert "secure noise" in widget_state("fl", secure, None)[1][0]


def sample_file(name: str, folder):
    """The bundled sample ``name`` written in ``folder`` as `hierdp sample` writes it (only
    the sample of the page tested: the households take the longest), once per folder (the
    Italian sample's CSV takes 5-25 s to write)."""
    from hierdp_core.cli.main import main

    path = folder / f"{name}.csv"
    if not path.exists():
        assert main(["sample", name, "--out", str(path)]) == 0
    return path


@pytest.mark.parametrize("prefix", list(CASES))
def test_a_pages_configuration_reproduces_its_release(capsys, monkeypatch, tmp_path,
                                                      tmp_path_factory, prefix):
    """One run of the page with ``prefix``'s settings for every check: its saved
    configuration, loaded back into a fresh session, gives the same release; the command
    line on the file and the sample gives the same values too; and (Flows, Range queries)
    the same settings given as flags are the page's configuration and give its release."""
    path, release_key, choose = CASES[prefix]
    at = page(path).run()
    default = released(at.session_state[release_key][1])
    choose(at)
    at.run()
    assert_clean(at)
    saved_and_loaded_back_gives_the_same_release(prefix, at, default)
    samples = tmp_path_factory.mktemp("samples")
    the_command_line_takes_the_pages_file_and_gives_the_same_release(
        capsys, monkeypatch, tmp_path, samples, prefix, at)
    if prefix != "gs":  # the same settings as command-line flags (one settings object)
        from test_settings_equivalence import the_flags_give_the_pages_configuration_and_release

        the_flags_give_the_pages_configuration_and_release(capsys, samples, prefix, at)


def the_command_line_takes_the_pages_file_and_gives_the_same_release(
        capsys, monkeypatch, tmp_path, samples_folder, prefix, at):
    """Give the configuration saved by ``at`` (the page with the chosen settings) and the
    sample (as `hierdp sample` writes it) to `hierdp release --config`: the same values;
    the Python script the page shows writes the same table."""
    import pandas as pd
    from conftest import run_cli

    _, release_key, _ = CASES[prefix]
    cfg = at.session_state[CONFIGS][prefix]
    (tmp_path / "c.json").write_text(config_json(cfg))
    sample = sample_file(cfg.data["sample"], samples_folder)
    # how the table is read is not in a configuration: the sample's rows are finer than the
    # release (Italy's single ages by sex), which the page summed and the command declares
    code, _, err = run_cli(capsys, "release", sample,
                           "--config", tmp_path / "c.json", "--interval", "none",
                           "--duplicates", "sum", "--out", tmp_path / "out")
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "release.csv", dtype={"parent_id": str,
                                                                  "label": str})
    release = at.session_state[release_key][1]
    if prefix == "fl":
        assert len(table) == sum(lv.size for lv in release.levels)
        assert table["value"].tolist() == release.to_frame()["value"].tolist()
        assert sorted(table["value"]) == sorted(int(v) for lv in release.levels
                                                for v in lv.value)
    else:
        np.testing.assert_array_equal(table["value"].to_numpy(), release.values.ravel())
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["randomness"]["seed"] == cfg.seed
    if prefix == "gs":  # the sample's declared groups file, written beside it, is used
        assert cfg.data["groups"] == "us-households-groups.csv"
        assert manifest["input"]["groups"]["file"] == "us-households-groups.csv"
        assert manifest["privacy"]["group_counts"] == "declared"
    # what the release publishes exactly is declared: gs-mh-dp with groups=exact keeps
    # every region's number of groups, inftda-like top-down flows the number of trips
    assert cfg.invariants == {"gs": ("groups",), "fl": ("total",), "rg": ()}[prefix]
    # the Python script the page shows writes the same table (issue 31, item 8); not for
    # the households, whose second release of 116 million households costs CI most
    assert at.session_state[SHOWN][prefix] == cfg
    if prefix == "gs":
        return
    script = next(c.value for c in at.code if c.language == "python")
    (tmp_path / "release.py").write_text(script)
    monkeypatch.chdir(samples_folder)
    runpy.run_path(str(tmp_path / "release.py"), run_name="__main__")
    assert (samples_folder / "release.csv").read_bytes() == \
        (tmp_path / "out" / "release.csv").read_bytes()

"""One settings object (issue 29 item 4): the same settings given as command-line flags
(`hierdp_core.cli.config_file.settings_of_args`), as a configuration file (`load_config`) and
as a dashboard session (`ui.config.current_config`, a query page's configuration) are one
`ReleaseConfig`, and give one release, for each query kind; ``--save-config`` writes that
object, and ``--config`` reads it back to the same release. The Flows and Range queries
pages' sessions are checked against the flags in `test_app_query_config`'s run of each page
(`the_flags_give_the_pages_configuration_and_release`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from test_app_query_config import CASES as PAGES
from test_app_query_config import sample_file
from test_config_queries import CASES as QUERY_CASES

from hierdp_core.cli.config_file import config_to_save, settings_of_args
from hierdp_core.cli.parser import build_parser
from hierdp_core.config import FORMAT, ReleaseConfig, load_config


def _census(folder) -> str:
    rng = np.random.default_rng(2)
    table = pd.DataFrame({"state": rng.choice(["A", "B"], 300),
                          "county": rng.choice(["1", "2", "3"], 300),
                          "sex": rng.choice(["F", "M"], 300), "n": rng.integers(0, 9, 300)})
    table["county"] = table["state"] + table["county"]
    table = table.groupby(["state", "county", "sex"], as_index=False)["n"].sum()  # a row a cell
    table.to_csv(folder / "census.csv", index=False)
    return "census.csv"


CASES = {
    "counts": (_census, {
        "levels": ["state", "county"], "count_column": "n", "category_columns": ["sex"],
        "category_values": {"sex": ["F", "M"]}, "mechanism": "topdown",
        "params": {"noise": "laplace", "root_invariant": True},
        "invariants": ["total", "category-totals"],
        "epsilon": 0.8, "split": [1, 2, 4]},
        ["--levels", "state,county", "--count-column", "n", "--categories", "sex",
         "--category-values", "sex=F|M", "--mechanism", "topdown", "--param", "noise=laplace",
         "--param", "root_invariant=true", "--invariant", "total",
         "--invariant", "category-totals", "--epsilon", "0.8",
         "--split", "1,2,4"]),
    **QUERY_CASES,
}


def flags_config(argv: list) -> ReleaseConfig:
    """The `ReleaseConfig` of ``hierdp release ARGV``, as the command line converts it at
    its boundary, saved (`config_to_save`: what a configuration file holds)."""
    config, _ = settings_of_args(build_parser().parse_args(["release", *map(str, argv)]))
    return config_to_save(config)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("query", list(CASES))
def test_flags_and_a_file_are_one_configuration_and_one_release(capsys, tmp_path, query):
    write, keys, flags = CASES[query]
    table = tmp_path / write(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps({
        "format": FORMAT, "query": query, "data": {"file": table.name},
        "structure": "from-data", "seed": 4, **keys}))
    given = [table, "--query", query, *flags, "--structure-from-data", "--seed", 4,
             "--interval", "none"]
    from_file = load_config(tmp_path / "c.json")
    assert flags_config([*given, "--out", tmp_path / "x"]) == from_file

    code, out, err = run_cli(capsys, "release", *given, "--out", tmp_path / "a",
                             "--save-config", tmp_path / "saved" / "s.json")
    assert code == 2 and "--save-config" in err and err.count("\n") == 1  # no folder
    assert not (tmp_path / "a").exists()  # refused before the release
    (tmp_path / "saved").mkdir()
    code, out, err = run_cli(capsys, "release", *given, "--out", tmp_path / "a",
                             "--save-config", tmp_path / "saved" / "s.json")
    assert code == 0, err
    assert "(the release's configuration)" in out
    saved = load_config(tmp_path / "saved" / "s.json")
    assert Path(saved.data["file"]).resolve() == table.resolve()
    assert replace(saved, data=from_file.data) == from_file
    assert json.loads((tmp_path / "saved" / "s.json").read_text())["data"] == \
        {"file": f"../{table.name}"}  # relative to the file's folder
    for config, side in ((tmp_path / "c.json", "b"), (tmp_path / "saved" / "s.json", "c")):
        code, _, err = run_cli(capsys, "release", "--config", config, "--interval", "none",
                               "--out", tmp_path / side)
        assert code == 0, err
    digests = {digest(tmp_path / side / "release.csv") for side in "abc"}
    assert len(digests) == 1


def test_a_saved_configuration_names_the_options_it_does_not_hold(capsys, tmp_path):
    write, _, flags = CASES["counts"]
    table = tmp_path / write(tmp_path)
    code, _, err = run_cli(capsys, "release", table, *flags, "--structure-from-data",
                           "--seed", 1, "--local-codes", "--missing", "zero",
                           "--out", tmp_path / "a", "--save-config", tmp_path / "s.json")
    assert code == 0, err
    assert "s.json does not hold --local-codes, --missing (how the table is read" in err
    code, _, err = run_cli(capsys, "release", table, *flags, "--structure-from-data",
                           "--seed", 1, "--interval", "0.8", "--max-epsilon", "5",
                           "--format", "csv,parquet", "--out", tmp_path / "b",
                           "--save-config", tmp_path / "t.json")
    assert code == 0, err  # they were left out without a word
    assert ("t.json does not hold --interval, --format, --max-epsilon (how the table is "
            "read, the intervals, the formats and the publishable ceilings)") in err


def test_a_chosen_split_is_saved_with_every_digit(capsys, tmp_path):
    write, _, flags = CASES["counts"]
    table = tmp_path / write(tmp_path)
    flags = [f for f in flags if f != "--split" and f != "1,2,4"]
    code, _, err = run_cli(capsys, "release", table, *flags, "--structure-from-data",
                           "--seed", 1, "--split-goal", "mse", "--interval", "none",
                           "--out", tmp_path / "a", "--save-config", tmp_path / "s.json")
    assert code == 0, err
    assert len(load_config(tmp_path / "s.json").split) == 3
    code, _, err = run_cli(capsys, "release", "--config", tmp_path / "s.json",
                           "--interval", "none", "--out", tmp_path / "b")
    assert code == 0, err
    assert digest(tmp_path / "a" / "release.csv") == digest(tmp_path / "b" / "release.csv")


# ---- the dashboard ------------------------------------------------------------------------
COUNT_SETTINGS = {"mechanism": "topdown", "params": {"noise": "laplace"}, "epsilon": 0.5,
                  "weights": [1.0, 2.0, 3.0]}


def _count_session(settings: dict, seed: int):
    """A dashboard session on the us-counties sample with ``settings``: its configuration
    and the release the Results page makes from it."""
    import streamlit as st

    from hierdp_core.ui import config as config_ui
    from hierdp_core.ui import session
    from hierdp_core.ui.count_data import count_data

    session.load_sample_into_state("us-counties")
    data = count_data()
    s = session.settings(data.hierarchy.n_levels)
    s.update(settings)
    st.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.EXPLORATION,
                                              config_ui.SEED: seed}
    cfg = config_ui.current_config()
    st.session_state["out"] = (cfg, session.release_for(data, cfg).values.ravel())


def _cli_on_sample(capsys, folder, sample, argv) -> tuple[ReleaseConfig, np.ndarray]:
    """The configuration of ``argv`` on the bundled ``sample`` as `hierdp sample` writes it
    (with its geography and groups files when it has them), and its released values."""
    table = sample_file(sample, folder)
    declared = [(flag, table.with_name(f"{table.stem}-{what}.csv"))
                for flag, what in (("--geography", "geography"), ("--groups", "groups"))]
    argv = [table, *argv, *(x for flag, path in declared if path.exists()
                            for x in (flag, path)), "--interval", "none"]
    code, _, err = run_cli(capsys, "release", *argv, "--out", folder / "out")
    assert code == 0, err
    values = pd.read_csv(folder / "out" / "release.csv", usecols=["value"])["value"]
    return flags_config([*argv, "--out", folder / "out"]), values.to_numpy()


def _same_but_the_data(dashboard: ReleaseConfig, cli: ReleaseConfig, sample: str) -> None:
    """The dashboard names the bundled sample, the command line its files (as `hierdp
    sample` writes them): the rest is one configuration."""
    assert dashboard.data["sample"] == sample
    assert cli.data["file"].endswith(f"{sample}.csv")
    # the command line's configuration as saved: without how the table is read (whether
    # repeated rows are summed: the dashboard's pages sum them, the command declares it;
    # the units' name columns, which label the release: the commands shown give --names)
    assert replace(dashboard, data={}, duplicates="error", names={}) == \
        replace(cli, data={}, names={})


def test_a_count_session_is_the_configuration_of_the_flags(capsys, tmp_path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_count_session, args=(COUNT_SETTINGS, 3),
                               default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    dashboard, values = at.session_state["out"]
    cli, released = _cli_on_sample(capsys, tmp_path, "us-counties", [
        "--levels", "state,county", "--count-column", "population", "--categories",
        "age_group", "--category-values", "age_group=0-18|19-64|65-84|85+",
        "--mechanism", "topdown", "--param", "noise=laplace", "--epsilon", "0.5",
        "--split", "1,2,3", "--seed", "3"])
    _same_but_the_data(dashboard, cli, "us-counties")
    np.testing.assert_array_equal(released, values)


PAGE_FLAGS = {
    "fl": ["--query", "flows", "--origin-levels", "o_state,o_airport",
           "--destination-levels", "d_state,d_airport", "--count-column", "flights",
           "--mechanism", "tda-l2", "--epsilon", "0.5", "--delta", "1e-6",
           "--split-preset", "geometric", "--seed", "2", "--invariant", "total"],
    "rg": ["--query", "ranges", "--levels", "region,province", "--attribute", "age",
           "--count-column", "residents", "--domain", "0-100", "--workload", "0-17,18-100",
           "--mechanism", "greedy-h", "--epsilon", "2", "--seed", "5",
           "--duplicates", "sum"],  # Italy's rows by sex repeat (unit, age): the page sums
}


def the_flags_give_the_pages_configuration_and_release(capsys, folder, prefix, at) -> None:
    """The Flows and Range queries pages (``at``: the page of ``prefix`` run with
    `test_app_query_config`'s settings, by its test, which shares that run): the command
    line's flags give the page's configuration and its release (the group sizes' sample
    takes the longest to release twice; `test_app_query_config` runs it through a
    configuration file)."""
    from test_app_query_config import released

    from hierdp_core.ui.query_config import CONFIGS

    _, release_key, _ = PAGES[prefix]
    dashboard = at.session_state[CONFIGS][prefix]
    params = [x for k, v in dashboard.params.items()
              for x in ("--param", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]
    cli, values = _cli_on_sample(capsys, folder, dashboard.data["sample"],
                                 [*PAGE_FLAGS[prefix], *params])
    _same_but_the_data(dashboard, cli, dashboard.data["sample"])
    release = at.session_state[release_key][1]
    np.testing.assert_array_equal(values, np.concatenate(
        [v.ravel() for v in released(release)]) if prefix == "rg"
        else release.to_frame()["value"].to_numpy())


# ---- one release path -----------------------------------------------------------------------
SEALED = ("created_utc", "checksum", "signature")  # differ between any two writes


def test_flags_a_file_and_the_api_run_the_release_from_one_config(capsys, tmp_path,
                                                                   monkeypatch):
    """The command line (flags, or a configuration file) and the Python API run the release
    path on one `ReleaseConfig` (as `hierdp_core.cli.release.check_invariants`, its first
    step, returns it), the same but for where the API's data is, and write one release and
    one manifest."""
    import hierdp_core
    from hierdp_core.cli import release as cli_release

    seen = []
    checked = cli_release.check_invariants
    monkeypatch.setattr(cli_release, "check_invariants",
                        lambda cfg, mechanism: seen.append(checked(cfg, mechanism)) or seen[-1])
    table = tmp_path / _census(tmp_path)
    geography = tmp_path / "geo.csv"
    pd.read_csv(table, dtype=str)[["state", "county"]].drop_duplicates().to_csv(
        geography, index=False)
    _, keys, flags = CASES["counts"]
    (tmp_path / "c.json").write_text(json.dumps({
        "format": FORMAT, "data": {"file": table.name, "geography": geography.name},
        "seed": 4, **keys}))
    code, _, err = run_cli(capsys, "release", table, *flags, "--geography", geography,
                           "--seed", 4, "--interval", "none", "--out", tmp_path / "flags")
    assert code == 0, err
    code, _, err = run_cli(capsys, "release", "--config", tmp_path / "c.json",
                           "--interval", "none", "--out", tmp_path / "file")
    assert code == 0, err
    made = hierdp_core.release(
        table, levels=keys["levels"], count_column="n", geography=geography,
        category_columns=keys["category_columns"], category_values=keys["category_values"],
        mechanism="topdown", params=keys["params"], invariants=keys["invariants"],
        epsilon=keys["epsilon"], split=keys["split"], seed=4)
    made.write(tmp_path / "api")
    from_flags, from_file, from_api = seen
    assert from_flags == from_file
    assert from_flags.data == {"file": str(table), "geography": str(geography)}
    assert from_api.data == {"file": table.name, "geography": str(geography)}
    assert replace(from_api, data={}) == replace(from_flags, data={})
    manifests = []
    for side in ("flags", "file", "api"):
        manifest = json.loads((tmp_path / side / "manifest.json").read_text())
        manifests.append({k: v for k, v in manifest.items() if k not in SEALED})
    assert manifests[0] == manifests[1] == manifests[2]
    assert len({digest(tmp_path / side / "release.csv") for side in ("flags", "file", "api")}) == 1

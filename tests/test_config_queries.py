"""Saved configurations of group sizes, flows and ranges (hierdp_core.config): ``hierdp
release --config FILE`` gives the same release as the same flags for every query kind, and
malformed configurations (hypothesis: every key with values of the wrong type or out of
range, keys of another query kind, unknown keys) raise `ConfigError` naming the key."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.config import (
    FORMAT,
    KEYS,
    QUERY_KEYS,
    ConfigError,
    config_from_dict,
    config_json,
)


def _people(folder) -> str:
    rng = np.random.default_rng(0)
    n = 400
    table = pd.DataFrame({"state": rng.choice(["A", "B"], n), "county": rng.choice(
        ["1", "2", "3"], n), "household": rng.integers(0, 120, n)})
    table["county"] = table["state"] + table["county"]
    table["household"] = table["county"] + "-" + table["household"].astype(str)
    table.to_csv(folder / "people.csv", index=False)
    return "people.csv"


def _flights(folder) -> str:
    from hierdp_core.flows.samples import load_airport_flows

    load_airport_flows().head(400).to_csv(folder / "flights.csv", index=False)
    return "flights.csv"


def _ages(folder) -> str:
    rng = np.random.default_rng(1)
    rows = [(r, f"{r}{p}", age, int(rng.poisson(30))) for r in "XYZ" for p in range(4)
            for age in range(21)]
    pd.DataFrame(rows, columns=["region", "province", "age", "count"]).to_csv(
        folder / "ages.csv", index=False)
    return "ages.csv"


CASES = {
    "group-sizes": (_people, {
        "levels": ["state", "county"], "group_column": "household", "max_size": 8,
        "mechanism": "gs-kuo-hierarchical", "params": {"methods": "hg-root"},
        "invariants": ["groups"], "epsilon": 0.7},
        ["--levels", "state,county", "--group-column", "household", "--max-size", "8",
         "--mechanism", "gs-kuo-hierarchical", "--param", "methods=hg-root",
         "--invariant", "groups", "--epsilon", "0.7"]),
    "flows": (_flights, {
        "origin_levels": ["o_state", "o_airport"],
        "destination_levels": ["d_state", "d_airport"], "count_column": "flights",
        "tree": "origin", "mechanism": "inftda", "params": {"order": "descending"},
        "invariants": ["total"], "epsilon": 2, "delta": 1e-7, "split": "geometric"},
        ["--origin-levels", "o_state,o_airport", "--destination-levels", "d_state,d_airport",
         "--count-column", "flights", "--tree", "origin", "--mechanism", "inftda",
         "--param", "order=descending", "--invariant", "total", "--epsilon", "2",
         "--delta", "1e-7", "--split-preset", "geometric"]),
    "ranges": (_ages, {
        "levels": ["region", "province"], "attribute": "age", "count_column": "count",
        "domain": [0, 20], "workload": "0-4,5-20", "mechanism": "dawa",
        "params": {"partition_if": "always"}, "epsilon": 1.5},
        ["--levels", "region,province", "--attribute", "age", "--count-column", "count",
         "--domain", "0-20", "--workload", "0-4,5-20", "--mechanism", "dawa",
         "--param", "partition_if=always", "--epsilon", "1.5"]),
}


@pytest.mark.parametrize("query", list(CASES))
def test_config_gives_the_same_release_as_the_flags(capsys, tmp_path, query):
    write, keys, flags = CASES[query]
    table = write(tmp_path)
    config = {"format": FORMAT, "query": query, "data": {"file": table},
              "structure": "from-data", "seed": 4, **keys}
    (tmp_path / "c.json").write_text(json.dumps(config))
    cfg = config_from_dict(config)
    assert config_from_dict(json.loads(config_json(cfg))) == cfg  # a round trip keeps all
    fixed = ("--interval-replicates", "20")  # intervals by time would differ run to run
    code, _, err = run_cli(capsys, "release", "--config", tmp_path / "c.json", *fixed,
                           "--out", tmp_path / "a")
    assert code == 0, err
    code, _, err = run_cli(capsys, "release", tmp_path / table, "--query", query, *flags,
                           "--structure-from-data", "--seed", "4", *fixed, "--out", tmp_path / "b")
    assert code == 0, err
    released = [(tmp_path / side / "release.csv").read_text() for side in "ab"]
    assert released[0] == released[1]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["randomness"]["seed"] == 4
    assert manifest["mechanism"]["name"] == keys["mechanism"]
    code, _, err = run_cli(capsys, "release", "--config", tmp_path / "c.json", "--seed", "5",
                           "--out", tmp_path / "c")  # a flag still overrides the file
    assert code == 0, err
    assert (tmp_path / "c" / "release.csv").read_text() != released[0]


def test_a_key_of_another_query_is_one_line_and_status_2(capsys, tmp_path):
    config = {"format": FORMAT, "query": "ranges", "mechanism": "dawa", "epsilon": 1,
              "data": {"file": "x.csv"}, "max_size": 8}
    (tmp_path / "c.json").write_text(json.dumps(config))
    code, out, err = run_cli(capsys, "release", "--config", tmp_path / "c.json",
                             "--out", tmp_path / "o")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "'max_size' is for group-sizes queries, not ranges" in err


# ---- malformed configurations (hypothesis) -------------------------------------------------
QUERY_OF = {key: kind for kind, keys in QUERY_KEYS.items() for key in keys}
NAMES = st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3)
ANY_SCALAR = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                       st.text(max_size=5))
NOT_A_NAME_LIST = st.one_of(ANY_SCALAR, st.lists(st.integers(), min_size=1, max_size=3),
                            st.dictionaries(st.text(max_size=3), st.integers(), min_size=1))
NOT_A_COLUMN = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                         st.just(""), NAMES)
NOT_POSITIVE = st.one_of(st.integers(max_value=0), st.floats(max_value=0), st.booleans(),
                         st.text(max_size=5), NAMES)
WRONG = {
    "data": st.one_of(ANY_SCALAR, NAMES, st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: k not in ("sample", "file",
                                                                     "geography")),
        st.text(max_size=3), min_size=1)),
    "query": st.text(max_size=8).filter(lambda q: q not in QUERY_KEYS),
    "levels": NOT_A_NAME_LIST, "category_columns": NOT_A_NAME_LIST,
    "origin_levels": NOT_A_NAME_LIST, "destination_levels": NOT_A_NAME_LIST,
    "count_column": NOT_A_COLUMN, "group_column": NOT_A_COLUMN, "size_column": NOT_A_COLUMN,
    "attribute": NOT_A_COLUMN,
    "category_values": st.one_of(ANY_SCALAR, NAMES, st.dictionaries(
        st.text(min_size=1, max_size=3), st.one_of(st.just([]), st.integers()), min_size=1)),
    "structure": st.text(max_size=8).filter(lambda s: s not in ("declared", "from-data")),
    "mechanism": st.one_of(st.integers(), st.just(""), NAMES, st.booleans()),
    "params": st.one_of(ANY_SCALAR, NAMES),
    "epsilon": NOT_POSITIVE, "rho": NOT_POSITIVE,
    "delta": st.one_of(st.floats(min_value=1), st.floats(max_value=0), st.text(max_size=3),
                       st.booleans()),
    "split": st.one_of(st.text(max_size=8).filter(lambda s: s not in (
        "uniform", "finer", "coarser", "leaves-only")), st.lists(st.floats(max_value=-0.1),
                                                               min_size=1), st.just([0, 0])),
    "seed": st.one_of(st.integers(max_value=-1), st.floats(allow_nan=False), st.text(max_size=3),
                      st.booleans()),
    "invariants": st.one_of(st.text(max_size=5), st.lists(st.text(max_size=5).filter(
        lambda s: s not in ("total", "groups")), min_size=1)),
    "max_size": st.one_of(st.integers(max_value=0), st.floats(allow_nan=False),
                          st.text(max_size=3), st.booleans()),
    "min_size": st.one_of(st.integers(max_value=-1), st.floats(allow_nan=False),
                          st.text(max_size=3), st.booleans()),
    "tree": st.one_of(st.text(max_size=8).filter(lambda t: t not in ("destination", "origin")),
                      st.integers()),
    "domain": st.one_of(ANY_SCALAR, st.lists(st.integers(), min_size=3, max_size=4),
                        st.tuples(st.integers(min_value=1), st.integers(max_value=0))
                        .map(list), st.lists(st.floats(allow_nan=False), min_size=2,
                                             max_size=2)),
    "workload": st.one_of(st.integers(), NAMES, st.just("  "), st.booleans()),
}


def test_every_key_has_a_malformed_strategy():
    assert set(WRONG) == set(KEYS) - {"format"}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(WRONG)).flatmap(lambda key: st.tuples(st.just(key),
                                                                      WRONG[key])))
def test_a_malformed_key_is_a_config_error_naming_it(case):
    key, value = case
    raw = {"format": FORMAT, "mechanism": "topdown", "query": QUERY_OF.get(key, "counts"),
           "epsilon": 1.0}
    if key == "rho":
        del raw["epsilon"]
    raw[key] = value
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    message = str(info.value)
    assert key in message or (key == "data" and "'data'" in message), message


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=12).filter(lambda k: k not in KEYS), ANY_SCALAR)
def test_an_unknown_key_is_named(key, value):
    with pytest.raises(ConfigError, match="unknown configuration key") as info:
        config_from_dict({"format": FORMAT, "mechanism": "topdown", "epsilon": 1, key: value})
    assert repr(key) in str(info.value)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(QUERY_OF)), st.sampled_from(list(QUERY_KEYS)))
def test_a_key_of_another_query_kind_is_named(key, query):
    values = {"levels": ["a"], "category_values": {"a": ["1"]}, "max_size": 3, "min_size": 1,
              "tree": "origin",
              "domain": [0, 1]}
    value = values.get(key, ["a"] if key.endswith(("levels", "columns")) else "a")
    raw = {"format": FORMAT, "mechanism": "topdown", "epsilon": 1, "query": query, key: value}
    if QUERY_OF[key] == query:
        config_from_dict(raw)  # its own kind takes it
    else:
        with pytest.raises(ConfigError, match=f"'{key}' is for {QUERY_OF[key]} queries"):
            config_from_dict(raw)

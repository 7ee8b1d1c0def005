"""``hierdp release --config FILE`` merges two `ReleaseConfig` objects (issue 29 item 4):
the command line's (`command_line_config`) and the file's (`load_config`), the options the
command line gave winning field by field (`merged`), with the groups of the rules: a
budget replaces epsilon, rho and delta, a split option the split and its goal, --seed or
--secure the seed, a structure option the structure and geography; the parameters merge
by name; the file's paths are relative to the file, a bundled sample's beside the input."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.cli.config_file import command_line_config, merged, settings_of_args
from hierdp_core.cli.parser import build_parser
from hierdp_core.config import FORMAT, KEYS, ReleaseConfig
from hierdp_core.errors import InputError


def parsed(*argv):
    return build_parser().parse_args(["release", *map(str, argv), "--out", "o"])


def settings_with(tmp_path, raw: dict, *argv) -> ReleaseConfig:
    """The settings of ``hierdp release --config FILE ARGV``, FILE holding ``raw`` in a
    folder of its own."""
    path = tmp_path / "sub" / "c.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"format": FORMAT, "mechanism": "topdown", **raw}))
    return settings_of_args(parsed("--config", path, *argv))[0]


FILE = {"data": {"file": "t.csv"}, "levels": ["state", "county"], "count_column": "n",
        "rho": 0.5, "delta": 1e-6, "split": [1, 2, 4], "seed": 7,
        "params": {"noise": "laplace", "root_invariant": True}}


def test_the_command_line_wins_field_by_field(tmp_path):
    cfg = settings_with(tmp_path, FILE, "--levels", "region", "--mechanism", "raw-laplace")
    assert (cfg.levels, cfg.mechanism) == (("region",), "raw-laplace")
    assert (cfg.count_column, cfg.rho, cfg.seed, cfg.split) == ("n", 0.5, 7, (1.0, 2.0, 4.0))
    assert settings_with(tmp_path, FILE).levels == ("state", "county")


def test_a_budget_on_the_command_line_replaces_the_files_epsilon_rho_and_delta(tmp_path):
    cfg = settings_with(tmp_path, FILE, "--epsilon", 1)
    assert (cfg.epsilon, cfg.rho, cfg.delta) == (1.0, None, None)
    cfg = settings_with(tmp_path, FILE, "--rho", 0.25)
    assert (cfg.epsilon, cfg.rho, cfg.delta) == (None, 0.25, None)
    cfg = settings_with(tmp_path, FILE, "--delta", 1e-7)  # a delta alone: the file's rho
    assert (cfg.epsilon, cfg.rho, cfg.delta) == (None, 0.5, 1e-7)
    cfg = settings_with(tmp_path, FILE)
    assert (cfg.epsilon, cfg.rho, cfg.delta) == (None, 0.5, 1e-6)


@pytest.mark.parametrize(("argv", "split", "goal"), [
    ((), (1.0, 2.0, 4.0), None),
    (("--split-goal", "mse"), None, "mse"),
    (("--split-preset", "coarser"), "coarser", None),
    (("--split-preset", "uniform"), None, None),
    (("--split", "1,1,3"), (1.0, 1.0, 3.0), None),
])
def test_a_split_option_replaces_the_files_split(tmp_path, argv, split, goal):
    cfg = settings_with(tmp_path, FILE, *argv)
    assert (cfg.split, cfg.split_goal) == (split, goal)


@pytest.mark.parametrize(("argv", "seed"), [((), 7), (("--seed", 3), 3), (("--secure",), None)])
def test_seed_or_secure_replaces_the_files_seed(tmp_path, argv, seed):
    assert settings_with(tmp_path, FILE, *argv).seed == seed


def test_parameters_merge_by_name_the_command_lines_winning(tmp_path):
    cfg = settings_with(tmp_path, FILE, "--param", "noise=gaussian")
    assert cfg.params == {"noise": "gaussian", "root_invariant": True}
    cfg = settings_with(tmp_path, FILE, "--param", "chunk=3")
    assert cfg.params == {"chunk": "3", "noise": "laplace", "root_invariant": True}


def test_the_files_paths_are_relative_to_it_and_the_command_lines_as_given(tmp_path):
    folder = tmp_path / "sub"
    raw = {**FILE, "query": "group-sizes",  # a groups file is theirs
           "data": {"file": "t.csv", "geography": "g.csv", "groups": "n.csv"}}
    assert settings_with(tmp_path, raw).data == {
        "file": str(folder / "t.csv"), "geography": str(folder / "g.csv"),
        "groups": str(folder / "n.csv")}
    cfg = settings_with(tmp_path, raw, "mine.csv", "--geography", "mine-g.csv")
    assert cfg.data == {"file": "mine.csv", "geography": "mine-g.csv",
                        "groups": str(folder / "n.csv")}
    cfg = settings_with(tmp_path, raw, "--structure-from-data")
    assert cfg.structure == "from-data" and "geography" not in cfg.data
    assert cfg.data["file"] == str(folder / "t.csv")


def test_a_structure_option_replaces_a_structure_read_from_the_data(tmp_path):
    raw = {**FILE, "structure": "from-data"}
    cfg = settings_with(tmp_path, raw)
    assert cfg.structure == "from-data" and "geography" not in cfg.data
    cfg = settings_with(tmp_path, raw, "--geography", "g.csv")
    assert (cfg.structure, cfg.data["geography"]) == ("declared", "g.csv")


def test_a_bundled_sample_needs_the_input_and_its_files_lie_beside_it(capsys, tmp_path):
    raw = {**FILE, "query": "group-sizes", "data": {"sample": "us-counties",
                                                    "groups": "any.csv"}}
    cfg = settings_with(tmp_path, raw, tmp_path / "t.csv")
    assert cfg.data == {"file": str(tmp_path / "t.csv"),
                        "geography": str(tmp_path / "t-geography.csv"),
                        "groups": str(tmp_path / "t-groups.csv")}
    (tmp_path / "c.json").write_text(json.dumps({"format": FORMAT, "mechanism": "topdown",
                                                 **raw}))
    code, out, err = run_cli(capsys, "release", "--config", tmp_path / "c.json", "--out",
                             tmp_path / "o")
    assert (code, out) == (2, "")
    assert err == ("error: --config: the configuration's data is the bundled sample "
                   "'us-counties': write it with `hierdp sample us-counties --out FILE` and "
                   "give FILE (see hierdp release --help)\n")


def test_no_input_in_either_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"format": FORMAT, "mechanism": "topdown",
                                                 "epsilon": 1}))
    code, _, err = run_cli(capsys, "release", "--config", tmp_path / "c.json", "--out",
                           tmp_path / "o")
    assert code == 2
    assert err == ("error: release needs the input table (or 'data' in --config) (see "
                   "hierdp release --help)\n")


def test_a_ranges_file_without_a_workload_takes_the_options_default(tmp_path):
    raw = {**FILE, "query": "ranges", "attribute": "age"}
    assert settings_with(tmp_path, raw).workload == "prefix"
    assert settings_with(tmp_path, {**raw, "workload": "all"}).workload == "all"
    with pytest.raises(InputError, match="--workload does not apply to counts releases"):
        settings_with(tmp_path, FILE, "--workload", "all")  # it was dropped without a word


def test_the_merge_runs_before_any_heavy_import(tmp_path):
    """A domain too big for memory, given by the file, is refused by the early checks:
    the merge imports only the standard library."""
    from test_cli_startup import HEAVY, run_importing

    (tmp_path / "ages.csv").write_text("region,age,residents\nA,30,5\n")
    (tmp_path / "c.json").write_text(json.dumps({
        "format": FORMAT, "data": {"file": "ages.csv"}, "query": "ranges",
        "levels": ["region"], "attribute": "age", "count_column": "residents",
        "domain": [0, 100_000_000], "structure": "from-data", "mechanism": "identity",
        "epsilon": 1, "seed": 1}))
    done, imported, said = run_importing("release", "--config", "c.json", "--out", "r",
                                         "--max-memory", "8GB", cwd=tmp_path)
    assert done.returncode == 2 and len(said) == 1 and "--domain" in said[0], said
    assert imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))


# ---- the property: for any options given, their fields are the command line's ----------
#: an option of each kind, its value unlike the file's below and unlike its default
OPTIONS = {
    "input": ["cli.csv"], "geography": ["--geography", "cli-g.csv"],
    "structure_from_data": ["--structure-from-data"], "groups": ["--groups", "cli-n.csv"],
    "query": ["--query", "flows"], "levels": ["--levels", "c1,c2"],
    "count_column": ["--count-column", "cli_n"], "categories": ["--categories", "cli_c"],
    "category_values": ["--category-values", "cli_c=x|y"],
    "mechanism": ["--mechanism", "identity"], "param": ["--param", "noise=gaussian"],
    "epsilon": ["--epsilon", "2"], "rho": ["--rho", "0.3"], "delta": ["--delta", "1e-7"],
    "split": ["--split", "1,3"], "split_preset": ["--split-preset", "coarser"],
    "split_goal": ["--split-goal", "mae"], "seed": ["--seed", "9"], "secure": ["--secure"],
    "invariant": ["--invariant", "groups"], "group_column": ["--group-column", "cli_g"],
    "size_column": ["--size-column", "cli_s"], "max_size": ["--max-size", "5"],
    "min_size": ["--min-size", "0"], "origin_levels": ["--origin-levels", "o1"],
    "destination_levels": ["--destination-levels", "d1"], "tree": ["--tree", "origin"],
    "attribute": ["--attribute", "cli_a"], "domain": ["--domain", "0-9"],
    "workload": ["--workload", "all"], "local_codes": ["--local-codes"],
    "missing": ["--missing", "zero"], "interval": ["--interval", "none"],
}
#: the fields an option decides where its name is not theirs, as issue 29 states the rules
DECIDES = {"input": {"data.file"}, "groups": {"data.groups"},
           **dict.fromkeys(("geography", "structure_from_data"), {"structure",
                                                                  "data.geography"}),
           **dict.fromkeys(("epsilon", "rho"), {"epsilon", "rho", "delta"}),
           **dict.fromkeys(("split", "split_preset", "split_goal"), {"split", "split_goal"}),
           **dict.fromkeys(("seed", "secure"), {"seed"}), "categories": {"category_columns"},
           "invariant": {"invariants"}, "param": set()}
FILES = [ReleaseConfig(
    mechanism="topdown", data={"file": "/f/t.csv", "geography": "/f/g.csv",
                               "groups": "/f/n.csv"},
    query="ranges", levels=("a", "b"), count_column="n", category_columns=("sex",),
    category_values={"sex": ("F", "M")}, params={"noise": "laplace", "chunk": 2},
    split=(1.0, 2.0, 4.0), seed=7, invariants=("total",), group_column="g",
    size_column="s", max_size=9, min_size=1, origin_levels=("o",), destination_levels=("d",),
    tree="destination", attribute="age", domain=(0, 99), workload="identity", **budget)
    for budget in ({"epsilon": 1.0}, {"rho": 0.5, "delta": 1e-6})]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(chosen=st.sets(st.sampled_from(list(OPTIONS))), file=st.sampled_from(FILES))
def test_given_fields_are_the_command_lines_and_the_others_the_files(chosen, file):
    args = parsed(*(token for dest in sorted(chosen) for token in OPTIONS[dest]))
    assert chosen <= args.given
    cli = command_line_config(args)
    out = merged(cli, file, args.given)
    decided = set().union(*(DECIDES.get(dest, {dest}) for dest in chosen))
    for key in ("file", "geography", "groups"):
        expected = (cli if f"data.{key}" in decided else file).data.get(key)
        assert out.data.get(key) == expected, key
    assert out.params == {**cli.params, **{k: v for k, v in file.params.items()
                                           if k not in cli.params}}
    for name in ReleaseConfig.__dataclass_fields__:
        if name in ("data", "params"):
            continue
        mine, theirs = getattr(cli, name), getattr(file, name)
        expected = theirs if name in KEYS and name not in decided and theirs is not None \
            else mine
        assert getattr(out, name) == expected, name

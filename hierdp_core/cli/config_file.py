"""The command line's release settings as the one settings object,
`hierdp_core.config.ReleaseConfig`, and back: the options of a release become that object,
with the `RunOptions` of the run, at the command's boundary (`settings_of_args`); a
``--config`` file's object is merged with the command line's, field by field, the options
given winning (`merged`, by the one table `FIELDS` of option -> field); ``--save-config``
writes it (`config_to_save`). Imports only the standard library until a configuration is
saved."""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path

from hierdp_core.cli.inputs import (
    csv_list,
    mechanism_params,
    name_columns,
    param_values,
    split_weights,
)
from hierdp_core.cli.parser import release_usage_error
from hierdp_core.config import (
    KEYS,
    QUERY_KEYS,
    ConfigError,
    ReleaseConfig,
    RunOptions,
    config_json,
    load_config,
    with_input,
)
from hierdp_core.declared_values import parse_category_values, parse_domain
from hierdp_core.errors import InputError
from hierdp_core.query_settings import check_settings
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON

#: release options a configuration does not hold (how the table is read), with the value
#: each has when not given: ``--save-config`` names those given, to be given again
NOT_IN_CONFIG = {"names": {}, "local_codes": False, "wide": None, "wide_name": "category",
                 "missing": "error", "ragged": False, "duplicates": "error", "encoding": None}
#: the other settings and run options a configuration does not hold (the intervals, the
#: files' formats, the publishable ceilings): ``--save-config`` names those given too
NOT_SAVED = {"interval": None, "interval_replicates": None}
#: ... and of the run options (option -> its `RunOptions` field and default)
RUN_NOT_SAVED = {"format": ("formats", None), "max-epsilon": ("max_epsilon", DEFAULT_MAX_EPSILON),
                 "max-delta": ("max_delta", DEFAULT_MAX_DELTA)}
#: each release option (argparse dest) -> the `ReleaseConfig` field it sets (``data.KEY``:
#: that key of ``data``; ``--split-preset`` sets the split when ``--split`` gives none)
FIELDS = {"input": "data.file", "geography": "data.geography", "groups": "data.groups",
          "structure_from_data": "structure", "categories": "category_columns",
          "param": "params", "invariant": "invariants", "split_preset": "split",
          **{dest: dest for dest in (
              "mechanism", "epsilon", "rho", "delta", "query", "levels", "count_column",
              "category_values", "split", "split_goal", "seed", "group_column",
              "size_column", "max_size", "min_size", "origin_levels", "destination_levels",
              "tree", "attribute", "domain", "workload", *NOT_IN_CONFIG, *NOT_SAVED)}}
#: each field (or ``data.KEY``) -> the option that sets it (argparse dest)
OPTIONS = {name: dest for dest, name in FIELDS.items()}
#: the fields of ``data`` an option sets
DATA_FIELDS = tuple(name for name in FIELDS.values() if name.startswith("data."))
#: options that, given on the command line, replace more of a ``--config`` file's fields
#: than their own: a budget all of epsilon, rho and delta, a split option the split and
#: its goal, ``--secure`` the seed, a structure option the structure and the geography
ALSO_REPLACES = {"epsilon": ("rho", "delta"), "rho": ("epsilon", "delta"),
                 "split": ("split_goal",), "split_preset": ("split_goal",),
                 "split_goal": ("split",), "secure": ("seed",),
                 "geography": ("structure",), "structure_from_data": ("data.geography",)}


def _columns(text: str | None) -> tuple[str, ...]:
    return tuple(csv_list(text))


#: how an option's parsed value reads as its field, where it is text to parse (a bad one
#: is an `InputError`); the others are taken as parsed
READ = {"levels": _columns, "categories": _columns, "origin_levels": _columns,
        "destination_levels": _columns, "category_values": parse_category_values,
        "param": param_values, "names": name_columns,
        "invariant": lambda names: tuple(dict.fromkeys(names or [])),
        "domain": lambda text: parse_domain(text) if text else None,
        "split": lambda text: tuple(split_weights(text) or ()) or None,
        "structure_from_data": lambda on: "from-data" if on else "declared"}


def command_line_config(args) -> ReleaseConfig:
    """The `ReleaseConfig` of a parsed ``release``'s options alone: each option sets its
    field (`FIELDS`), its text read (`READ`; a bad one is an `InputError`)."""
    values, data = {}, {}
    for dest, name in FIELDS.items():
        value = READ[dest](getattr(args, dest)) if dest in READ else getattr(args, dest)
        if name in DATA_FIELDS:
            if value:
                data[name.partition(".")[2]] = value
        elif dest != "split_preset":
            values[name] = value
    return ReleaseConfig(data=data, **{**values, "split": values["split"] or args.split_preset})


def merged(command_line: ReleaseConfig, file: ReleaseConfig, given) -> ReleaseConfig:
    """``command_line``'s settings over a ``--config`` ``file``'s (``given``: the options
    the command line gave, argparse dests): a field a given option sets or replaces
    (`FIELDS`, `ALSO_REPLACES`) is the command line's; any other the file holds is the
    file's where it has one (else the command line's default); the parameters merge by
    name, the command line's winning; the file's geography and groups are placed beside
    the input as `with_input` places them. Raises `ConfigError` for a file whose data is
    a bundled sample when the command line gives no input."""
    decided = {FIELDS[dest] for dest in given if dest in FIELDS} | {
        name for dest in given for name in ALSO_REPLACES.get(dest, ())}
    if "data.file" not in decided and "sample" in file.data and "file" not in file.data:
        sample = file.data["sample"]
        raise ConfigError(f"the configuration's data is the bundled sample {sample!r}: write "
                          f"it with `hierdp sample {sample} --out FILE` and give FILE")
    placed = with_input(file, (command_line if "data.file" in decided else file).data.get(
        "file")).data
    data = {}
    for name in DATA_FIELDS:
        key = name.partition(".")[2]
        data[key] = (command_line.data if name in decided else placed).get(key)
    kept = {name: getattr(file, name) for name in KEYS if name not in decided
            and name not in ("format", "data", "params") and getattr(file, name) is not None}
    params = {**command_line.params,
              **{k: v for k, v in file.params.items() if k not in command_line.params}}
    return replace(command_line, **kept, params=params,
                   data={key: path for key, path in data.items() if path})


def settings_of_args(args):
    """(`ReleaseConfig`, `RunOptions`) of a parsed ``release``, converted at the command's
    boundary: the command line's settings (`command_line_config`) merged over its
    ``--config`` file's (`merged`; ``args.given``: the options it gave). A bad
    configuration, or no input table or mechanism in either, is a usage error; a setting
    of another query kind, or without the one it needs, an `InputError`
    (`hierdp_core.query_settings.check_settings`). Standard
    library only: it runs before the early checks."""
    config = command_line_config(args)
    if args.config:
        try:
            config = merged(config, load_config(args.config), args.given)
        except ConfigError as exc:
            raise release_usage_error(f"--config: {exc}") from None
    if not config.data.get("file"):
        raise release_usage_error("release needs the input table (or 'data' in --config)")
    if config.mechanism is None:
        raise release_usage_error("release needs --mechanism (or 'mechanism' in --config)")
    if config.query == "ranges" and config.workload is None:
        config = replace(config, workload="prefix")  # the default workload
    check_settings(config, lambda name: f"--{OPTIONS[name].replace('_', '-')}")
    run = RunOptions(**{k: getattr(args, k) for k in RunOptions.__dataclass_fields__
                        if k != "formats"}, formats=args.format)
    return config, run


def check_save_config(run) -> None:
    """Refuse, before the release, a ``--save-config`` file that cannot be written."""
    path = Path(run.save_config)
    if path.is_dir() or not os.access(path.resolve().parent, os.W_OK):
        raise InputError(f"--save-config: cannot write the configuration {str(path)!r} (a "
                         "folder, or its folder is missing or not writable)")


def config_to_save(config, *, split=None, folder=None):
    """``config`` as a configuration file holds it (what `load_config` reads back: the
    settings of `NOT_IN_CONFIG` and the keys of other query kinds left out): ``split``,
    the weights the release used (a split chosen by ``--split-goal``); the data paths
    relative to ``folder`` (the folder of the file it is saved in); the parameters typed
    as the mechanism declares them."""
    from hierdp_core.mechanisms.base import get_mechanism

    raw = mechanism_params(config)
    typed = get_mechanism(config.mechanism, config.query).params(**raw)
    data = {k: v if folder is None else os.path.relpath(os.path.abspath(v), folder)
            for k, v in config.data.items()}
    config = replace(config, data=data, params={k: typed[k] for k in raw},
                     split=tuple(map(float, split)) if split is not None else config.split)
    other = {k for kind, keys in QUERY_KEYS.items() if kind != config.query for k in keys}
    return ReleaseConfig(**{f.name: getattr(config, f.name) for f in fields(config)
                            if f.name in KEYS and f.name not in other})


def save_config(config, run, split=None) -> str | None:
    """Write the configuration of a release (`config_to_save`) to ``--save-config``; the
    note naming the given options it does not hold, or None."""
    path = Path(run.save_config)
    path.write_text(config_json(config_to_save(config, split=split,
                                               folder=path.resolve().parent)),
                    encoding="utf-8")
    left = [f"--{dest.replace('_', '-')}" for dest, unset in {**NOT_IN_CONFIG, **NOT_SAVED}.items()
            if getattr(config, dest) != unset]
    left += [f"--{option}" for option, (dest, unset) in RUN_NOT_SAVED.items()
             if getattr(run, dest) != unset]
    return (f"{path} does not hold {', '.join(left)} (how the table is read, the intervals, "
            f"the formats and the publishable ceilings): give "
            f"{'it' if len(left) == 1 else 'them'} again with --config" if left else None)

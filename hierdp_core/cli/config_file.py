"""The command line's release settings as the one settings object,
`hierdp_core.config.ReleaseConfig`, and back: a ``--config`` file fills the options the
command line left silent (what the command line gives wins; `fill_from_config`); the
options of a release are converted into that object, with the `RunOptions` of the run, at
the command's boundary (`settings_of_args`); ``--save-config`` writes it
(`config_to_save`). Imports only the standard library until a file is read or written."""

from __future__ import annotations

#: release options a configuration does not hold (how the table is read), with the value
#: each has when not given: ``--save-config`` names those given, to be given again
NOT_IN_CONFIG = {"names": {}, "local_codes": False, "wide": None, "wide_name": "category",
                 "missing": "error", "ragged": False, "duplicates": "sum", "encoding": None}


def release_with_config(args, given: set[str]) -> None:
    """Fill ``args`` (a parsed ``release``) from its ``--config`` file where the command
    line (``given``: the options it gave) is silent. Raises `ConfigError`."""
    from hierdp_core.config import load_config

    fill_from_config(args, load_config(args.config), given)


def fill_from_config(args, cfg, given: set[str]) -> None:
    """Fill ``args`` (a parsed ``release``) from the configuration ``cfg`` (a
    `ReleaseConfig`) where the options in ``given`` are silent. Raises `ConfigError`."""
    from hierdp_core.config import ConfigError, with_input

    data = cfg.data
    if "input" not in given:
        if "sample" in data and "file" not in data:
            raise ConfigError(f"the configuration's data is the bundled sample "
                              f"{data['sample']!r}: write it with `hierdp sample "
                              f"{data['sample']} --out FILE` and give FILE")
        args.input = data.get("file")
    fill = {"query": cfg.query, "levels": ",".join(cfg.levels) or None,
            "count_column": cfg.count_column,
            "categories": ",".join(cfg.category_columns) or None,
            "mechanism": cfg.mechanism, "group_column": cfg.group_column,
            "size_column": cfg.size_column, "max_size": cfg.max_size,
            "min_size": cfg.min_size,
            "origin_levels": ",".join(cfg.origin_levels) or None,
            "destination_levels": ",".join(cfg.destination_levels) or None,
            "tree": cfg.tree, "attribute": cfg.attribute, "workload": cfg.workload,
            "domain": f"{cfg.domain[0]}-{cfg.domain[1]}" if cfg.domain else None,
            "invariant": list(cfg.invariants) or None}
    placed = with_input(cfg, args.input).data  # a bundled sample's files beside it
    if "geography" not in given and "structure_from_data" not in given:
        if cfg.structure == "from-data":
            fill["structure_from_data"] = True
        elif "geography" in placed:
            fill["geography"] = placed["geography"]
    if "groups" not in given and "groups" in placed:
        fill["groups"] = placed["groups"]
    if cfg.category_values:
        fill["category_values"] = [f"{c}={'|'.join(v)}" for c, v in cfg.category_values.items()]
    if not given & {"epsilon", "rho"}:  # a budget on the command line replaces the file's
        fill.update(epsilon=cfg.epsilon, rho=cfg.rho, delta=cfg.delta)
    if not given & {"split", "split_preset", "split_goal"}:
        if isinstance(cfg.split, tuple):
            args.split = ",".join(map(repr, cfg.split))  # every digit: a chosen split
        elif isinstance(cfg.split, str):
            args.split_preset = cfg.split
    if not given & {"seed", "secure"}:
        fill["seed"] = cfg.seed
    for dest, value in fill.items():
        if dest not in given and value is not None:
            setattr(args, dest, value)
    named = {pair.split("=", 1)[0].strip() for pair in args.param or []}
    args.param = [*(args.param or []), *(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in cfg.params.items() if k not in named)]


def settings_of_args(args):
    """(`ReleaseConfig`, `RunOptions`) of a parsed ``release`` (its options after any
    ``--config``): the command line's settings as the one settings object, converted at the
    command's boundary; the text of ``--levels``, ``--param``, ``--split``,
    ``--category-values``, ``--domain`` and ``--names`` parsed (a bad one is an
    `InputError`). Standard library only: it runs before the early checks."""
    from hierdp_core.cli.inputs import csv_list, name_columns, param_values, split_weights
    from hierdp_core.config import ReleaseConfig, RunOptions
    from hierdp_core.declared_values import parse_category_values, parse_domain

    paths = {"file": args.input, "geography": args.geography, "groups": args.groups}
    weights = split_weights(args.split)
    config = ReleaseConfig(
        mechanism=args.mechanism, epsilon=args.epsilon, rho=args.rho, delta=args.delta,
        data={k: v for k, v in paths.items() if v}, query=args.query,
        levels=tuple(csv_list(args.levels)), count_column=args.count_column,
        category_columns=tuple(csv_list(args.categories)),
        category_values=parse_category_values(args.category_values),
        structure="from-data" if args.structure_from_data else "declared",
        params=param_values(args.param),
        split=tuple(weights) if weights else args.split_preset, seed=args.seed,
        invariants=tuple(dict.fromkeys(args.invariant or [])),
        group_column=args.group_column, size_column=args.size_column,
        max_size=args.max_size, min_size=args.min_size,
        origin_levels=tuple(csv_list(args.origin_levels)),
        destination_levels=tuple(csv_list(args.destination_levels)), tree=args.tree,
        attribute=args.attribute, domain=parse_domain(args.domain) if args.domain else None,
        workload=args.workload if args.query == "ranges" else None,  # ranges only
        names=name_columns(args.names), local_codes=args.local_codes,
        ragged=args.ragged, encoding=args.encoding, wide=args.wide, wide_name=args.wide_name,
        missing=args.missing, duplicates=args.duplicates, split_goal=args.split_goal,
        interval=args.interval, interval_replicates=args.interval_replicates)
    run = RunOptions(**{k: getattr(args, k) for k in RunOptions.__dataclass_fields__
                        if k != "formats"}, formats=args.format)
    return config, run


def check_save_config(run) -> None:
    """Refuse, before the release, a ``--save-config`` file that cannot be written."""
    import os
    from pathlib import Path

    from hierdp_core.errors import InputError

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
    import os
    from dataclasses import fields, replace

    from hierdp_core.cli.inputs import mechanism_params
    from hierdp_core.config import KEYS, QUERY_KEYS, ReleaseConfig
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
    from pathlib import Path

    from hierdp_core.config import config_json

    path = Path(run.save_config)
    path.write_text(config_json(config_to_save(config, split=split,
                                               folder=path.resolve().parent)),
                    encoding="utf-8")
    left = [f"--{dest.replace('_', '-')}" for dest, unset in NOT_IN_CONFIG.items()
            if getattr(config, dest) != unset]
    return (f"{path} does not hold {', '.join(left)} (how the table is read): give "
            f"{'it' if len(left) == 1 else 'them'} again with --config" if left else None)

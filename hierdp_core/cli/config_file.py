"""The command line's release settings as the one settings object,
`hierdp_core.config.ReleaseConfig`, and back: a ``--config`` file fills the options the
command line left silent (what the command line gives wins; `fill_from_config`), and the
options of a release are that object again (`config_of_args`), which ``--save-config``
writes. Imports only the standard library until a file is read or written."""

from __future__ import annotations

#: release options a configuration does not hold (how the table is read), with the value
#: each has when not given: ``--save-config`` names those given, to be given again
NOT_IN_CONFIG = {"names": None, "local_codes": False, "wide": None, "wide_name": "category",
                 "missing": "error", "ragged": False, "duplicates": "sum", "encoding": None}


def release_with_config(args, given: set[str]) -> None:
    """Fill ``args`` (a parsed ``release``) from its ``--config`` file where the command
    line (``given``: the options it gave) is silent. Raises `ConfigError`."""
    from hierdp_core.config import load_config

    fill_from_config(args, load_config(args.config), given)


def fill_from_config(args, cfg, given: set[str]) -> None:
    """Fill ``args`` (a parsed ``release``) from the configuration ``cfg`` (a
    `ReleaseConfig`) where the options in ``given`` are silent. Raises `ConfigError`."""
    from hierdp_core.config import ConfigError

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
    if "geography" not in given and "structure_from_data" not in given:
        if cfg.structure == "from-data":
            fill["structure_from_data"] = True
        elif "geography" in data:
            fill["geography"] = data["geography"]
        elif "sample" in data and args.input:  # the geography `hierdp sample` writes
            from pathlib import Path

            fill["geography"] = str(Path(args.input).with_name(
                f"{Path(args.input).stem}-geography.csv"))
    if "groups" not in given and "groups" in data:
        fill["groups"] = _groups_path(data, args.input)
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


def _groups_path(data: dict, input_path: str | None) -> str:
    """The groups file of a configuration's ``data``: its path, or for a bundled sample the
    file `hierdp sample` writes beside the input."""
    if "sample" in data and input_path:
        from pathlib import Path

        return str(Path(input_path).with_name(f"{Path(input_path).stem}-groups.csv"))
    return data["groups"]


def config_of_args(args, *, split=None, folder=None):
    """The `ReleaseConfig` of a parsed ``release`` (its options after any ``--config``):
    the inverse of `fill_from_config`. ``split``: the weights the release used, for a split
    chosen by ``--split-goal``; ``folder``: the data paths are written relative to it (the
    folder of the file the configuration is saved in). Parameters are typed as the
    mechanism declares them; the keys of other query kinds are left empty."""
    import os

    from hierdp_core.cli.inputs import csv_list, param_values, split_weights
    from hierdp_core.config import QUERY_KEYS, ReleaseConfig
    from hierdp_core.declared_values import parse_category_values, parse_domain
    from hierdp_core.mechanisms.base import get_mechanism

    raw = param_values(args.param)
    typed = get_mechanism(args.mechanism, args.query).params(**raw)
    paths = {"file": args.input, "geography": args.geography, "groups": args.groups}
    data = {k: v if folder is None else os.path.relpath(os.path.abspath(v), folder)
            for k, v in paths.items() if v}
    given = {"category_columns": tuple(csv_list(args.categories)),
             "category_values": parse_category_values(args.category_values),
             "group_column": args.group_column, "size_column": args.size_column,
             "max_size": args.max_size, "min_size": args.min_size,
             "origin_levels": tuple(csv_list(args.origin_levels)),
             "destination_levels": tuple(csv_list(args.destination_levels)),
             "tree": args.tree, "attribute": args.attribute,
             "domain": parse_domain(args.domain) if args.domain else None,
             "workload": args.workload}
    mine = QUERY_KEYS[args.query]
    return ReleaseConfig(
        mechanism=args.mechanism, epsilon=args.epsilon, rho=args.rho, delta=args.delta,
        data=data, query=args.query, levels=tuple(csv_list(args.levels)),
        count_column=args.count_column,
        structure="from-data" if args.structure_from_data else "declared",
        params={k: typed[k] for k in raw},
        split=tuple(map(float, split if split is not None else split_weights(args.split)
                        or ())) or args.split_preset,
        seed=args.seed, invariants=tuple(dict.fromkeys(args.invariant or [])),
        **{k: v for k, v in given.items() if k in mine})


def check_save_config(args) -> None:
    """Refuse, before the release, a ``--save-config`` file that cannot be written."""
    import os
    from pathlib import Path

    from hierdp_core.errors import InputError

    path = Path(args.save_config)
    if path.is_dir() or not os.access(path.resolve().parent, os.W_OK):
        raise InputError(f"--save-config: cannot write the configuration {str(path)!r} (a "
                         "folder, or its folder is missing or not writable)")


def save_config(args, split=None) -> str | None:
    """Write the configuration of a release (`config_of_args`) to ``--save-config``; the
    note naming the given options it does not hold, or None."""
    from pathlib import Path

    from hierdp_core.config import config_json

    path = Path(args.save_config)
    cfg = config_of_args(args, split=split, folder=path.resolve().parent)
    path.write_text(config_json(cfg), encoding="utf-8")
    left = [f"--{dest.replace('_', '-')}" for dest, unset in NOT_IN_CONFIG.items()
            if getattr(args, dest, unset) != unset]
    return (f"{path} does not hold {', '.join(left)} (how the table is read): give "
            f"{'it' if len(left) == 1 else 'them'} again with --config" if left else None)

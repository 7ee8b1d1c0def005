"""A release's ``--config`` file (`hierdp_core.config.ReleaseConfig`) fills the options the
command line left silent: what the command line gives wins. Imports only the standard library
until a file is read."""

from __future__ import annotations


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
            args.split = ",".join(f"{w:g}" for w in cfg.split)
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

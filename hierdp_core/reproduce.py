"""Reproduce a release outside the dashboard from its configuration (`hierdp_core.config`):
`release_from_config` is the Python API (the release ``hierdp release --config`` makes,
built by the same code, returned rather than written), `release_script` a runnable Python
script that calls it, and `release_commands` the equivalent shell commands. A seeded
configuration gives the same values every time; one with ``seed`` null draws secure noise,
a new draw each run, charged to no budget ledger and so never publishable (its verdict says
so): the release to publish is ``hierdp release --config``'s, which charges the ledger.

A bundled sample is first written to a file as `hierdp sample NAME --out FILE` writes it
(the table and, beside it, its public geography ``FILE-geography.csv``).

Example
-------
>>> from hierdp_core.config import FORMAT, config_from_dict
>>> cfg = config_from_dict({"format": FORMAT, "data": {"sample": "us-counties"},
...                         "mechanism": "topdown", "epsilon": 1, "seed": 3})
>>> release_commands(cfg)[0]
'hierdp sample us-counties --out us-counties.csv'
"""

from __future__ import annotations

import pprint
import shlex
import textwrap
from pathlib import Path

from hierdp_core.config import ConfigError, ReleaseConfig, RunOptions, load_config, with_input

CONFIG_FILE = "hierdp_config.json"  # the name the Export page saves the configuration under


def table_file(cfg: ReleaseConfig) -> str:
    """The input table's file name: ``NAME.csv`` for the bundled sample NAME (as
    `release_commands` writes it), else the configuration's file."""
    if "sample" in cfg.data:
        return f"{cfg.data['sample']}.csv"
    if not cfg.data.get("file"):
        raise ConfigError("the configuration names no data: give 'data' a sample or a file")
    return cfg.data["file"]


def release_from_config(config: ReleaseConfig | str | Path, table: str | Path | None = None):
    """The release of ``config`` (a `ReleaseConfig`, or the path of a saved one) on
    ``table`` (default: `table_file`, relative to the working folder), made by the code of
    ``hierdp release --config`` (nothing is written, no budget is charged: a secure one is
    not publishable, `hierdp_core.verdict.NOT_CHARGED`). Raises a `HierdpError` for a bad
    configuration or table."""
    from hierdp_core.api import release_of_config
    from hierdp_core.privacy.samplers import NoiseSource

    cfg = config if isinstance(config, ReleaseConfig) else load_config(config)
    path = Path(table if table is not None else table_file(cfg))
    source = NoiseSource(seed=cfg.seed) if cfg.seed is not None else NoiseSource(secure=True)
    return release_of_config(with_input(cfg, str(path)), RunOptions(), path, source)[0]


def release_commands(cfg: ReleaseConfig, config_file: str = CONFIG_FILE,
                     out: str = "release") -> list[str]:
    """The shell commands that reproduce ``cfg`` saved as ``config_file``: write the bundled
    sample (when it is one), then ``hierdp release TABLE --config FILE --out OUT`` (with
    ``--duplicates sum`` when ``cfg`` sums repeated rows and ``--names`` for its units'
    name columns: how the table is read, which a configuration file does not hold)."""
    table = table_file(cfg)
    first = ([f"hierdp sample {shlex.quote(cfg.data['sample'])} --out {shlex.quote(table)}"]
             if "sample" in cfg.data else [])
    summed = " --duplicates sum" if cfg.duplicates == "sum" else ""
    named = ",".join(f"{level}={column}" for level, column in cfg.names.items())
    names = f" --names {shlex.quote(named)}" if named else ""
    return [*first, f"hierdp release {shlex.quote(table)} --config "
                    f"{shlex.quote(config_file)}{summed}{names} --out {shlex.quote(out)}"]


SCRIPT = '''"""Reproduce a hierdp release ({what}) with hierdp's Python API.

{about}
"""

from dataclasses import replace
from pathlib import Path

from hierdp_core.config import config_from_dict
from hierdp_core.export import release_table_bytes
from hierdp_core.reproduce import release_from_config, table_file
from hierdp_core.verdict import release_verdict
{write_sample}
CONFIG = replace(config_from_dict({config}), duplicates={duplicates!r}, names={names!r})

release = release_from_config(CONFIG, table_file(CONFIG))
Path("release.csv").write_bytes(release_table_bytes(release, "csv"))
verdict = release_verdict(release, structure_declared=CONFIG.structure == "declared")
print("wrote release.csv; publishable:", "yes" if verdict["publishable"] else
      "no (" + "; ".join(verdict["not_publishable_because"]) + ")")
'''

WRITE_SAMPLE = '''
if not Path({table!r}).exists():  # the bundled sample, as `hierdp sample` writes it
    from hierdp_core.data.sample_files import write_sample

    write_sample({sample!r}, {table!r})
'''


def release_script(cfg: ReleaseConfig, config_file: str = CONFIG_FILE) -> str:
    """A runnable Python script that makes the release of ``cfg`` with
    `release_from_config` and writes its table as ``release.csv``; for a bundled sample it
    first writes the sample file when it is missing."""
    table = table_file(cfg)
    sample = cfg.data.get("sample")
    noise = (f"Seeded exploration noise (seed {cfg.seed}): the same values every run."
             if cfg.seed is not None else
             "Secure noise (no seed): a new draw each run, charged to no budget, so not "
             "publishable (a draw made outside the budget ledger could be redrawn until "
             "one looked good).")
    what = f"{cfg.query}, {cfg.mechanism}, " + (f"ε = {cfg.epsilon:g}" if cfg.rho is None
                                                 else f"ρ = {cfg.rho:g}")
    config = pprint.pformat(cfg.to_dict(), sort_dicts=False, width=84)
    written = " (written there first if missing)" if sample else ""
    about = "\n\n".join(textwrap.fill(text, 80) for text in (
        f"Generated by the hierdp dashboard. {noise}",
        f"Run it with hierdp installed, in the folder holding {table}{written}. It writes "
        "release.csv, the table `hierdp release` writes. For a release to publish, "
        "charged to the dataset's budget ledger, with its signed manifest, save this "
        "configuration as "
        f"{config_file}" + (" (with the seed null, for secure noise)" if cfg.seed is not None
                            else "") + " and run:"))
    commands = "".join(f"\n    {line}" for line in release_commands(cfg, config_file))
    return SCRIPT.format(
        what=what, about=about + commands,
        write_sample=WRITE_SAMPLE.format(table=table, sample=sample) if sample else "",
        config=config, duplicates=cfg.duplicates, names=dict(cfg.names))

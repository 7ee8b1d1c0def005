"""The Python API of a counts release: `release` makes the release ``hierdp release`` makes,
with the same code (`hierdp_core.cli.release`) and the same rules, from a table in memory
(a DataFrame) or a file, and returns it as a `CountRelease`: ``to_frame()`` (the released
table), ``manifest`` (with the publishable verdict), ``intervals``, ``write(folder)``
(the folder ``hierdp release --out`` writes) and ``config``, its settings as the
configuration ``hierdp release --config`` and the dashboard read (`hierdp_core.config`). Bad input raises a
`hierdp_core.errors.HierdpError`. ``hierdp_core.release`` is this function.

Example, on the bundled synthetic sample (``hierdp sample synthetic-us-like``):

>>> import hierdp_core
>>> from hierdp_core.data.sample_files import SAMPLE_FILES
>>> sample = SAMPLE_FILES["synthetic-us-like"]
>>> table, geography = sample.loader(), sample.geography()
>>> rel = hierdp_core.release(table, levels=["state", "county"], count_column="count",
...                           geography=geography, seed=7,
...                           category_values={"sex": ["F", "M"],
...                                            "age_group": ["0-17", "18-64", "65+"]})
>>> rel.to_frame().columns.tolist()
['level', 'level_name', 'node_id', 'parent_id', 'label', 'category', 'value']
>>> len(rel.to_frame())  # (1 nation + 50 states + 3,100 counties) x 6 categories
18906
>>> rel.manifest["structure"], rel.manifest["publishable"]  # seeded: exploration
('declared', False)
>>> rel.manifest["not_publishable_because"][0][:40]
'the noise comes from a seeded generator '
>>> rel.config.mechanism, rel.config.levels, rel.config.seed
('topdown', ('state', 'county'), 7)

Without a seed the noise is secure and the release publishable. Secure noise is drawn
only once its charge is in the dataset's budget ledger, as on the command line: give the
folder to write it to (``out``); the release is then written there, whole or not at all.
``interval`` adds ``lower`` and ``upper`` (asked for here; the command line adds 90%
intervals unless ``--interval none``). The table's rows are per county, sex and age
group: released by state alone they repeat its cells, refused unless declared summed
(``duplicates="sum"``):

>>> import tempfile
>>> from pathlib import Path
>>> folder = tempfile.mkdtemp()
>>> secure = hierdp_core.release(table, levels=["state"], count_column="count",
...                              geography=geography, interval=0.9, out=folder + "/rel",
...                              duplicates="sum")
>>> secure.manifest["publishable"], secure.intervals is not None
(True, True)
>>> secure.to_frame().columns.tolist()
['level', 'level_name', 'node_id', 'parent_id', 'label', 'value', 'lower', 'upper']
>>> [Path(secure.paths[f]).name for f in ("csv", "manifest")]
['release.csv', 'manifest.json']

Without a geography the units and categories are read from the data, and the release
says it is not publishable:

>>> explored = hierdp_core.release(table, levels=["state"], count_column="count", seed=1,
...                                duplicates="sum")
>>> explored.manifest["structure"], explored.manifest["publishable"]
('from-data', False)
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hierdp_core.config import ReleaseConfig, RunOptions
from hierdp_core.errors import InputError
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON

DATAFRAME = "<DataFrame>"  # the manifest's input file name of a table given in memory


@dataclass(frozen=True, repr=False)
class CountRelease:
    """A counts release made by `release`: ``release`` (the core `Release`), ``manifest``
    (as ``hierdp release`` writes it, before its fingerprint, checksum and signature, which
    `write` adds), ``config`` (its settings, the `hierdp_core.config.ReleaseConfig` that
    ``hierdp release --config`` and the dashboard read: `hierdp_core.config.config_json`
    saves it) and what `write` needs to write the same folder."""

    release: object
    manifest: dict
    config: ReleaseConfig
    max_epsilon: float
    content: object
    paths: dict | None = None  # the written files, once written
    max_delta: float = DEFAULT_MAX_DELTA

    def __repr__(self) -> str:
        verdict = ("publishable" if self.manifest["publishable"] else "not publishable: "
                   + "; ".join(self.manifest["not_publishable_because"]))
        return (f"<CountRelease {self.release.mechanism}, {self.release.values.size:,} cells, "
                f"{verdict}>")

    def to_frame(self):
        """The released table, the rows and columns of ``release.csv``."""
        return self.release.to_frame()

    @property
    def intervals(self):
        """The cells' intervals (`hierdp_core.releases.CellIntervals`), or None when the
        release was made without ``interval``."""
        return self.release.intervals

    def write(self, folder, *, overwrite: bool = False, formats: Sequence[str] = ("csv",),
              key_file=None) -> dict:
        """Write an exploration (seeded) release as ``hierdp release --out folder`` writes
        it (whole or not at all; the manifest sealed and signed with the publisher's key,
        ``key_file`` or the default, kept outside the folder); returns the written files'
        paths. A secure release is written by `release` itself (``out``), once."""
        if self.paths is not None:
            raise InputError(f"this secure release is written to "
                             f"{str(Path(self.paths['manifest']).parent)!r} already; a "
                             "publishable release is written once (release again to draw "
                             "another, which spends budget again)")
        return _write(self.release, self.manifest, self.content, folder, overwrite,
                      tuple(formats), key_file, self.max_epsilon, self.max_delta)


def _write(made, manifest, content, folder, overwrite, formats, key_file, max_epsilon,
           max_delta) -> dict:
    from hierdp_core.export import write_release

    return write_release(made, folder, formats=formats,
                         structure_declared=manifest["structure"] == "declared",
                         input_spec={k: v for k, v in manifest["input"].items()
                                     if k != "fingerprint"},
                         input_content=content, key_file=key_file, overwrite=overwrite,
                         max_epsilon=max_epsilon, max_delta=max_delta)


def release(table, levels: Sequence[str], count_column: str | None = None, *,
            mechanism: str = "topdown", epsilon: float | None = None,
            rho: float | None = None, delta: float | None = None, geography=None,
            category_columns: Sequence[str] | None = None,
            category_values: Mapping[str, Sequence] | None = None,
            names: Mapping[str, str] | None = None, split: Sequence[float] | str = "uniform",
            params: Mapping[str, object] | None = None, invariants: Sequence[str] = (),
            seed: int | None = None, interval: float | None = None,
            max_epsilon: float = DEFAULT_MAX_EPSILON, max_delta: float = DEFAULT_MAX_DELTA,
            out=None, overwrite: bool = False,
            formats: Sequence[str] = ("csv",), key_file=None,
            budget_total: str | float | None = None, duplicates: str = "error",
            local_codes: bool = False, missing: str = "error", ragged: bool = False,
            encoding: str | None = None, wide: str | None = None,
            wide_name: str = "category") -> CountRelease:
    """The counts release of ``table`` (a DataFrame, or the path of a file
    ``hierdp release`` reads) at the ``levels`` (columns, coarse to fine), as ``hierdp
    release`` makes it: ``count_column`` (None: one row per person), ``mechanism``,
    ``epsilon`` (default 1; or ``rho``, zCDP; ``delta``), ``split`` (a weight per level, root first,
    or a preset name), ``params`` (``--param``), ``invariants`` (``--invariant``) and
    ``interval`` (a confidence level for ``lower``/``upper``, None for none).
    ``duplicates``: rows of a ``count_column`` table that repeat a unit and category are
    refused (``"error"``: a `DuplicateRowsError` naming the first and its rows, before any
    budget is charged) unless declared summed (``"sum"``, ``--duplicates sum``). How the
    table is read, as the command line's options of the same names: ``local_codes``
    (codes unique only within their parent), ``missing`` (empty count cells: ``"error"``,
    ``"zero"``, ``"drop"``), ``ragged`` (units may skip a level), ``encoding`` (of a file
    and its geography file), ``wide`` and ``wide_name`` (columns melted into a category).

    The shape is declared: ``geography`` (a DataFrame or file, one row per leaf unit, the
    level columns and the name columns of ``names``, level -> column) and
    ``category_values`` (column -> its public values, in release order;
    ``category_columns`` defaults to its keys). Without ``geography`` the units and
    categories are read from the data: exploration, not publishable. ``seed`` draws seeded
    noise (exploration, not publishable; `CountRelease.write` writes it). None draws secure
    noise, and only as the command line does: ``out`` (the release folder; ``overwrite``,
    ``formats``, ``key_file``, ``budget_total`` as ``--overwrite`` ...) is required, the
    charge is reserved in the dataset's budget ledger before the noise is drawn (an
    overspend raises a `BudgetError` and draws nothing), the release is marked with that
    entry (only then publishable) and written there. ``max_epsilon`` and ``max_delta``:
    the public ceilings of the verdict (``--max-epsilon``, ``--max-delta``). Bad input raises a `HierdpError`, as the command line's one-line errors."""
    from hierdp_core.cli.budget import charged, commit_release, reserve_release
    from hierdp_core.cli.inputs import csv_list, name_columns
    from hierdp_core.cli.table import input_spec
    from hierdp_core.data.file_state import unchanged_input
    from hierdp_core.export import build_manifest
    from hierdp_core.intervals import with_intervals
    from hierdp_core.privacy.samplers import NoiseSource

    path = Path(table) if isinstance(table, (str, Path)) else None
    if path is None and not hasattr(table, "columns"):
        raise InputError(f"table is a DataFrame or the path of a file, got "
                         f"{type(table).__name__}")
    name = path.name if path else DATAFRAME
    if epsilon is not None and rho is not None:
        raise InputError("give epsilon or rho (zCDP), not both")
    config = ReleaseConfig(
        mechanism=mechanism, epsilon=(1.0 if epsilon is None else epsilon) if rho is None
        else None, rho=rho, delta=delta,
        data={"file": name, **({"geography": str(geography)}
                               if isinstance(geography, (str, Path)) else {})},
        levels=tuple(csv_list(levels) if isinstance(levels, str) else map(str, levels)),
        count_column=count_column, category_columns=tuple(category_columns or ()),
        category_values=_category_values(category_values),
        structure="from-data" if geography is None else "declared",
        params=dict(params or {}),
        split=split if isinstance(split, str) else tuple(float(w) for w in split),
        seed=_seed(seed), invariants=tuple(invariants),
        names=name_columns(",".join(f"{lv}={col}" for lv, col in (names or {}).items())),
        interval=_interval(interval), duplicates=duplicates, local_codes=bool(local_codes),
        missing=missing, ragged=bool(ragged), encoding=encoding, wide=wide,
        wide_name=wide_name)
    source = NoiseSource(seed=seed) if seed is not None else NoiseSource(secure=True)
    if source.secure and out is None:
        raise InputError("secure noise is drawn only to be written, after its charge is in "
                         "the budget ledger: give out=FOLDER (or a seed, to explore)")
    if out is not None and not source.secure:
        raise InputError("out= writes a secure release; write an exploration (seeded) one "
                         "with .write(folder)")
    run = RunOptions(out=str(out) if out is not None else None, overwrite=overwrite,
                     key_file=key_file, max_epsilon=max_epsilon, max_delta=max_delta,
                     budget_total=None if budget_total is None else str(budget_total))
    content = path if path is not None else table.to_csv(index=False).encode()
    if source.secure:
        from hierdp_core.atomic import check_writable
        from hierdp_core.export import check_formats

        check_writable(out)
        check_formats(tuple(formats))  # before the charge, as the command line
    reserved = []  # the ledger's reservation, made after the checks, before the noise

    def reserve(budget, data) -> None:
        check_read()  # the file read is the one the command started on
        reserved.append(reserve_release(config, run, budget, mechanism, source, content,
                                        data=data))

    with unchanged_input([path] if path is not None else []) as check_read, \
            _geography_file(geography) as geography_path:
        settings = replace(config, data={"file": name, **(
            {"geography": geography_path} if geography_path else {})})
        made, settings, data, _ = release_of_config(
            settings, run, path or Path(DATAFRAME), source,
            table=None if path is not None else table.copy(), before_noise=reserve)
        made = charged(made, reserved[0])
        spec = input_spec(settings, run, data, path or Path(DATAFRAME))
    if interval is not None:
        made = with_intervals(made, interval, None)
    declared = bool(getattr(data, "declared_structure", False))
    manifest = build_manifest(made, structure_declared=declared, input_spec=spec,
                              max_epsilon=max_epsilon, max_delta=max_delta)
    if not source.secure:
        return CountRelease(made, manifest, config, max_epsilon, content, max_delta=max_delta)
    paths = _write(made, manifest, content, out, overwrite, tuple(formats), key_file,
                   max_epsilon, max_delta)
    commit_release(reserved[0], paths["manifest"])
    return CountRelease(made, manifest, config, max_epsilon, content, paths, max_delta)


def release_of_config(cfg: ReleaseConfig, run: RunOptions, path: Path, source, table=None,
                      before_noise=None):
    """(release, settings, data, budget) of the settings ``cfg`` with the run options
    ``run`` on the table at ``path`` (or ``table``, a DataFrame in memory) with the noise
    ``source``, made by the command line's code (`hierdp_core.cli.release`); nothing
    written; ``before_noise(budget, data)`` is called once the input (``data``) is checked,
    before any noise is drawn (to charge a ledger); the settings as the table's preparation left
    them. A mechanism that is not private is refused. Raises a `HierdpError` for bad
    input."""
    from hierdp_core.cli.release import checked_mechanism, memory_release

    mechanism, cfg, budget, _ = checked_mechanism(cfg, allow_nonprivate=False)

    def charge(_prepared_cfg, data) -> None:
        if before_noise is not None:
            before_noise(budget, data)

    made = memory_release(cfg, run, path, mechanism, budget, source, charge, table=table)
    return made.release, made.cfg, made.data, budget


def _category_values(category_values) -> dict[str, tuple[str, ...]]:
    """The declared category values as text, each a non-empty value without '|'."""
    values = {str(c): tuple(str(v) for v in vals) for c, vals in (category_values or {}).items()}
    for column, vals in values.items():
        if any("|" in v or not v.strip() for v in vals):
            raise InputError(f"category_values[{column!r}]: a value is empty or holds '|'")
    return values


def _seed(seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"a seed is an integer >= 0 (or None for secure noise), got {seed!r}")
    return seed


def _interval(level) -> float:
    """``--interval``'s value: 0.0 (none) for None, else a level strictly in (0, 1)."""
    if level is None:
        return 0.0
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"interval is a level between 0 and 1 (e.g. 0.9) or None, got "
                         f"{level!r}")
    return float(level)


@contextlib.contextmanager
def _geography_file(geography):
    """The path of the declared geography: its file, or a DataFrame written to a temporary
    ``geography.csv`` (read back as the command line reads a file); None without one."""
    if geography is None or isinstance(geography, (str, Path)):
        yield None if geography is None else str(geography)
        return
    if not hasattr(geography, "to_csv"):
        raise InputError(f"geography is a DataFrame or the path of a file, got "
                         f"{type(geography).__name__}")
    with tempfile.TemporaryDirectory(prefix="hierdp-geography-") as folder:
        target = Path(folder) / "geography.csv"
        geography.to_csv(target, index=False)
        yield str(target)

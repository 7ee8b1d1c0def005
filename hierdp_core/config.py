"""A release configuration saved as JSON (schema ``hierdp-config/1``), read back by the
dashboard (to reproduce a view) and by ``hierdp release --config FILE``.

A configuration holds public choices only, never a value of the data:

``format``          ``"hierdp-config/1"`` (required)
``data``            where the data comes from: ``{"sample": NAME}`` (a bundled sample) or
                    ``{"file": PATH, "geography": PATH or null}`` (paths relative to the
                    configuration file's folder); group sizes also ``"groups"``: the public
                    groups file (a sample: the one ``hierdp sample`` writes beside it)
``query``           ``"counts"`` (the default), ``"group-sizes"``, ``"flows"`` or ``"ranges"``
``levels``          level columns, coarse to fine (not flows)
``count_column``    the count column, or null for one row per person (per trip, per group)
``category_columns`` category columns; ``category_values`` their declared public values
``structure``       ``"declared"`` or ``"from-data"`` (exploration only)
``mechanism``, ``params`` the mechanism and its parameters
``epsilon`` | ``rho`` [``delta``] the budget: pure DP (epsilon, optionally with delta) or
                    zCDP (rho, delta)
``split``           one weight per level (root first) or a preset name; null (or "uniform"):
                    the uniform split
``seed``            an integer (seeded exploration noise) or null (secure noise)
``invariants``      what the release publishes exactly (not protected): ``"total"``,
                    ``"category-totals"`` and/or ``"groups"``, as ``hierdp release
                    --invariant`` declares them

Keys of one query kind only (`QUERY_KEYS`), null or absent for the others:

group sizes         ``group_column`` (one row per person: the group id) or ``size_column``
                    (one row per region and size, with ``count_column``), ``max_size``
                    (the public top-code N), ``min_size`` (the public smallest size m;
                    absent: 1)
flows               ``origin_levels``, ``destination_levels`` (coarse to fine), ``tree``
                    (``"destination"`` or ``"origin"``: which end is refined first); the
                    split may also be ``"geometric"``
ranges              ``attribute`` (the ordered column), ``domain`` ([LO, HI], its public
                    integer domain), ``workload`` (``prefix``, ``all``, ``random``,
                    ``identity`` or bands such as ``"0-17,18-64,65-100"``)

Every key but ``format``, ``mechanism`` and the budget may be left out. Bad or unknown keys
raise `ConfigError` naming the key.

`ReleaseConfig` is the one settings object of a release, whichever front end makes it (the
command line, a configuration file, the dashboard, the Python API). Besides the keys above
it holds how the table is read, the split goal and the intervals asked for (not saved in a
file: `hierdp_core.cli.config_file.NOT_IN_CONFIG`); `RunOptions` holds what only one run
needs (where it is written, the ledger, the engine, the limits of this machine).

Example
-------
>>> cfg = config_from_dict({"format": FORMAT, "data": {"sample": "us-counties"},
...                         "mechanism": "topdown", "epsilon": 1, "seed": 3})
>>> cfg.budget().value, cfg.seed
(1.0, 3)
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.invariants import INVARIANTS
from hierdp_core.privacy.budget import SPLIT_PRESETS, PrivacyBudget, check_total
from hierdp_core.query_settings import APPLIES_TO, QUERIES
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON

FORMAT = "hierdp-config/1"
#: the keys of one query kind only (`hierdp_core.query_settings.APPLIES_TO`)
QUERY_KEYS = {kind: tuple(k for k, kinds in APPLIES_TO.items() if kinds == (kind,)
                          and "." not in k) for kind in QUERIES}
KEYS = ("format", "data", "query", "levels", "count_column", "category_columns",
        "category_values", "structure", "mechanism", "params", "epsilon", "rho", "delta",
        "split", "seed", "invariants", *(k for kind in QUERIES[1:] for k in QUERY_KEYS[kind]))
DATA_KEYS = ("sample", "file", "geography", "groups")
TREES = ("destination", "origin")
FLOW_SPLITS = ("geometric",)  # a preset of flows only


class ConfigError(InputError):
    """A configuration file that cannot be used: not JSON, another format, an unknown key,
    or a value of the wrong type; the message names the key."""


@dataclass(frozen=True)
class ReleaseConfig:
    """A validated configuration (see the module doc for the keys)."""

    mechanism: str
    epsilon: float | None = None
    rho: float | None = None
    delta: float | None = None
    data: dict = field(default_factory=dict)
    query: str = "counts"
    levels: tuple[str, ...] = ()
    count_column: str | None = None
    category_columns: tuple[str, ...] = ()
    category_values: dict = field(default_factory=dict)
    structure: str = "declared"
    params: dict = field(default_factory=dict)
    split: tuple[float, ...] | str | None = None
    seed: int | None = None
    invariants: tuple[str, ...] = ()
    group_column: str | None = None
    size_column: str | None = None
    max_size: int | None = None
    min_size: int | None = None
    origin_levels: tuple[str, ...] = ()
    destination_levels: tuple[str, ...] = ()
    tree: str | None = None
    attribute: str | None = None
    domain: tuple[int, int] | None = None
    workload: str | None = None
    # not saved: how the table is read, the split goal and the intervals
    names: dict = field(default_factory=dict)  # level -> column of readable unit names
    local_codes: bool = False
    ragged: bool = False
    encoding: str | None = None
    wide: str | None = None  # the wide columns' names and patterns, comma-separated
    wide_name: str | None = "category"  # the column of the wide columns' names
    wide_columns: tuple[str, ...] = ()  # the wide columns the table was melted from
    missing: str = "error"
    duplicates: str = "error"  # aggregated rows repeating a cell: refused, or "sum"
    split_goal: str | None = None
    interval: float | None = None  # a confidence level; None the default, 0.0 none
    interval_replicates: int | None = None

    def __post_init__(self):
        if self.split == "uniform":  # the default split has one spelling: None
            object.__setattr__(self, "split", None)

    @property
    def has_categories(self) -> bool:
        """Whether a counts release has categories (category columns, declared values or
        wide columns): its root is then a row of cells, not one total."""
        return bool(self.category_columns or self.category_values or self.wide)

    def budget(self) -> PrivacyBudget:
        """The privacy budget: zCDP with ``rho``, else pure or (epsilon, delta) DP."""
        if self.rho is not None:
            return PrivacyBudget.zcdp(self.rho, self.delta)
        if self.delta is not None:
            return PrivacyBudget.approx(self.epsilon, self.delta)
        return PrivacyBudget.pure(self.epsilon)

    def to_dict(self) -> dict:
        """The JSON-ready dict (keys in `KEYS` order, ``format`` first)."""
        d = asdict(self)
        d.update({k: list(v) for k, v in d.items() if isinstance(v, tuple)})
        d["category_values"] = {k: list(v) for k, v in self.category_values.items()}
        other = {k for kind, keys in QUERY_KEYS.items() if kind != self.query for k in keys}
        return {"format": FORMAT, **{k: d[k] for k in KEYS if k != "format"
                                     and k not in other}}


@dataclass(frozen=True)
class RunOptions:
    """What one run of a release needs besides its settings (`ReleaseConfig`): where it is
    written (``out``, ``overwrite``, ``formats``: ``--format``'s text, ``key_file``,
    ``save_config``), the publishable ceiling and the budget ledger, the noise, the engine
    and this machine's limits. The defaults are the command line's."""

    out: str | None = None
    overwrite: bool = False
    formats: str | None = None
    key_file: str | None = None
    save_config: str | None = None
    max_epsilon: float = DEFAULT_MAX_EPSILON
    max_delta: float = DEFAULT_MAX_DELTA
    budget_total: str | None = None
    change_budget_total: bool = False
    allow_nonprivate: bool = False
    secure: bool = False
    noise_backend: str = "hierdp"
    engine: str = "memory"
    scheduler: str | None = None
    workers: int | None = None
    memory_per_worker: str = "auto"
    max_cells: int | None = None
    max_memory: int | None = None


def _fail(key: str, what: str, value) -> ConfigError:
    return ConfigError(f"configuration key {key!r} must be {what}, got {value!r}")


def _names(key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(key, "a list of column names", value)
    return tuple(value)


def _number(key: str, value, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise _fail(key, "a number > 0", value)
    return float(value)


def _data(value) -> dict:
    if not isinstance(value, dict):
        raise _fail("data", 'an object such as {"sample": NAME} or {"file": PATH}', value)
    unknown = sorted(set(value) - set(DATA_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in 'data'; it takes {list(DATA_KEYS)}")
    for key, text in value.items():
        if text is not None and not isinstance(text, str):
            raise _fail(f"data.{key}", "a string", text)
    if value.get("sample") and value.get("file"):
        raise ConfigError("'data' names both a sample and a file; give one")
    return {k: v for k, v in value.items() if v is not None}


def _given(raw: dict, key: str, empty):
    """``raw[key]``, or ``empty`` when it is absent or null (a falsy value of the wrong
    type, such as 0 or "", is kept: it is an error)."""
    value = raw.get(key)
    return empty if value is None else value


def _column(key: str, value) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise _fail(key, "a column name or null", value)
    return value


def _whole(key: str, value, minimum: int) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < minimum):
        raise _fail(key, f"an integer >= {minimum} or null", value)
    return value


def _choices(key: str, value, choices: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(v in choices for v in value):
        raise _fail(key, f"a list of {list(choices)}", value)
    return tuple(dict.fromkeys(value))


def _domain(value) -> tuple[int, int] | None:
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or value[0] > value[1]):
        raise _fail("domain", "[LO, HI], two integers with LO <= HI, or null", value)
    return (value[0], value[1])


def _query_keys(raw: dict, query: str) -> dict:
    """The query-specific keys, validated; a key of another query kind is an error."""
    for kind, keys in QUERY_KEYS.items():
        given = [k for k in keys if raw.get(k) not in (None, [], {})]
        if kind != query and given:
            raise ConfigError(f"configuration key {given[0]!r} is for {kind} queries, not "
                              f"{query}")
    tree = raw.get("tree")
    if tree is not None and tree not in TREES:
        raise _fail("tree", f"one of {list(TREES)} or null", tree)
    workload = raw.get("workload")
    if workload is not None and (not isinstance(workload, str) or not workload.strip()):
        raise _fail("workload", "a workload name or bands such as '0-17,18-64', or null",
                    workload)
    return {"group_column": _column("group_column", raw.get("group_column")),
            "size_column": _column("size_column", raw.get("size_column")),
            "max_size": _whole("max_size", raw.get("max_size"), 1),
            "min_size": _whole("min_size", raw.get("min_size"), 0),
            "origin_levels": _names("origin_levels", _given(raw, "origin_levels", [])),
            "destination_levels": _names("destination_levels",
                                         _given(raw, "destination_levels", [])),
            "tree": tree, "attribute": _column("attribute", raw.get("attribute")),
            "domain": _domain(raw.get("domain")), "workload": workload}


def _split(value, query: str = "counts"):
    presets = SPLIT_PRESETS + (FLOW_SPLITS if query == "flows" else ())
    if value is None or (isinstance(value, str) and value in presets):
        return value
    if isinstance(value, list) and value and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w)
            and w >= 0 for w in value) and sum(value) > 0:
        return tuple(float(w) for w in value)
    raise _fail("split", f"non-negative weights (one per level, root first) or one of "
                f"{list(presets)}", value)


def config_from_dict(raw) -> ReleaseConfig:
    """Validate a parsed configuration. Raises `ConfigError` naming the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"a configuration is a JSON object, got {type(raw).__name__}")
    if raw.get("format") != FORMAT:
        raise ConfigError(f"configuration key 'format' must be {FORMAT!r}, got "
                          f"{raw.get('format')!r}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ConfigError(f"unknown configuration key(s) {unknown}; known: {list(KEYS)}")
    mechanism = raw.get("mechanism")
    if not isinstance(mechanism, str) or not mechanism:
        raise _fail("mechanism", "a mechanism name", mechanism)
    epsilon, rho = _number("epsilon", raw.get("epsilon")), _number("rho", raw.get("rho"))
    if (epsilon is None) == (rho is None):
        raise ConfigError("give exactly one of the configuration keys 'epsilon' and 'rho'")
    delta = raw.get("delta")
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, (int, float))
                              or not 0 < delta < 1):
        raise _fail("delta", "a number between 0 and 1", delta)
    query = raw.get("query", "counts")
    if query not in QUERIES:
        raise _fail("query", f"one of {list(QUERIES)}", query)
    structure = raw.get("structure", "declared")
    if structure not in ("declared", "from-data"):
        raise _fail("structure", "'declared' or 'from-data'", structure)
    count_column = _column("count_column", raw.get("count_column"))
    values = _given(raw, "category_values", {})
    if not isinstance(values, dict):
        raise _fail("category_values", "an object of column: [values]", values)
    for column, declared in values.items():
        texts = [str(v) for v in declared] if isinstance(declared, list) else []
        if not texts or len(set(texts)) < len(texts) or any(
                not t.strip() or "|" in t for t in texts):
            raise _fail(f"category_values.{column}", "a non-empty list of distinct values, "
                        "none empty or holding '|'", declared)
    params = _given(raw, "params", {})
    if not isinstance(params, dict):
        raise _fail("params", "an object of parameter: value", params)
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise _fail("seed", "an integer >= 0 or null (secure noise)", seed)
    config = ReleaseConfig(
        mechanism=mechanism, epsilon=epsilon, rho=rho,
        delta=None if delta is None else float(delta), data=_data(_given(raw, "data", {})),
        query=query, levels=_names("levels", _given(raw, "levels", [])),
        count_column=count_column,
        category_columns=_names("category_columns", _given(raw, "category_columns", [])),
        category_values={str(c): tuple(map(str, v)) for c, v in values.items()},
        structure=structure, params=dict(params), split=_split(raw.get("split"), query),
        seed=seed, invariants=_choices("invariants", _given(raw, "invariants", []), INVARIANTS),
        **_query_keys(raw, query))
    try:
        check_total(config.budget())
    except BudgetError as exc:
        raise ConfigError(f"configuration: {exc}") from None
    return config


def load_config(path: str | Path) -> ReleaseConfig:
    """Read and validate a configuration file; a relative data or geography path is taken
    relative to the file's folder."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration {str(path)!r}: "
                          f"{exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the configuration {str(path)!r} is not valid JSON: {exc}") from None
    config = config_from_dict(raw)
    return replace(config, data={
        key: (value if key == "sample" or Path(value).is_absolute()
              else str(path.parent / value)) for key, value in config.data.items()})


def with_input(config: ReleaseConfig, input_path: str | None) -> ReleaseConfig:
    """``config`` run on the table at ``input_path``: its data that file, with the declared
    geography (none for a structure read from the data) and groups files; a bundled
    sample's are the files `hierdp sample` writes beside the table."""
    data = {"file": input_path} if input_path else {}
    sample = "sample" in config.data and input_path

    def beside(what: str) -> str:
        return str(Path(input_path).with_name(f"{Path(input_path).stem}-{what}.csv"))

    if config.structure != "from-data" and ("geography" in config.data or sample):
        data["geography"] = config.data.get("geography") or beside("geography")
    if "groups" in config.data:
        data["groups"] = beside("groups") if sample else config.data["groups"]
    return replace(config, data=data)


def config_json(config: ReleaseConfig) -> str:
    """The configuration as indented JSON text (what `load_config` reads back)."""
    return json.dumps(config.to_dict(), indent=2) + "\n"

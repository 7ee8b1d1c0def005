"""A release configuration saved as JSON (schema ``hierdp-config/1``), read back by the
dashboard (to reproduce a view) and by ``hierdp release --config FILE``.

A configuration holds public choices only, never a value of the data:

``format``          ``"hierdp-config/1"`` (required)
``data``            where the data comes from: ``{"sample": NAME}`` (a bundled sample) or
                    ``{"file": PATH, "geography": PATH or null}`` (paths relative to the
                    configuration file's folder)
``query``           ``"counts"`` (the only query the dashboard saves; the CLI takes all four)
``levels``          level columns, coarse to fine
``count_column``    the count column, or null for one row per person
``category_columns`` category columns; ``category_values`` their declared public values
``structure``       ``"declared"`` or ``"from-data"`` (exploration only)
``mechanism``, ``params`` the mechanism and its parameters
``epsilon`` | ``rho`` [``delta``] the budget: pure DP (epsilon, optionally with delta) or
                    zCDP (rho, delta)
``split``           one weight per level (root first) or a preset name
``seed``            an integer (seeded exploration noise) or null (secure noise)

Every key but ``format``, ``mechanism`` and the budget may be left out. Bad or unknown keys
raise `ConfigError` naming the key.

Example
-------
>>> cfg = config_from_dict({"format": FORMAT, "data": {"sample": "us-counties"},
...                         "mechanism": "topdown", "epsilon": 1, "seed": 3})
>>> cfg.budget().epsilon, cfg.seed
(1.0, 3)
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from hierdp_core.errors import InputError
from hierdp_core.privacy.budget import SPLIT_PRESETS, PrivacyBudget

FORMAT = "hierdp-config/1"
QUERIES = ("counts", "group-sizes", "flows", "ranges")
KEYS = ("format", "data", "query", "levels", "count_column", "category_columns",
        "category_values", "structure", "mechanism", "params", "epsilon", "rho", "delta",
        "split", "seed")
DATA_KEYS = ("sample", "file", "geography")


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
        d.update(levels=list(self.levels), category_columns=list(self.category_columns),
                 category_values={k: list(v) for k, v in self.category_values.items()},
                 split=list(self.split) if isinstance(self.split, tuple) else self.split)
        return {"format": FORMAT, **{k: d[k] for k in KEYS if k != "format"}}


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


def _split(value):
    if value is None or (isinstance(value, str) and value in SPLIT_PRESETS):
        return value
    if isinstance(value, list) and value and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w)
            and w >= 0 for w in value) and sum(value) > 0:
        return tuple(float(w) for w in value)
    raise _fail("split", f"non-negative weights (one per level, root first) or one of "
                f"{list(SPLIT_PRESETS)}", value)


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
    count_column = raw.get("count_column")
    if count_column is not None and (not isinstance(count_column, str) or not count_column):
        raise _fail("count_column", "a column name or null", count_column)
    values = raw.get("category_values") or {}
    if not isinstance(values, dict):
        raise _fail("category_values", "an object of column: [values]", values)
    for column, declared in values.items():
        if not isinstance(declared, list) or not declared:
            raise _fail(f"category_values.{column}", "a non-empty list of values", declared)
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise _fail("params", "an object of parameter: value", params)
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise _fail("seed", "an integer >= 0 or null (secure noise)", seed)
    return ReleaseConfig(
        mechanism=mechanism, epsilon=epsilon, rho=rho,
        delta=None if delta is None else float(delta), data=_data(raw.get("data") or {}),
        query=query, levels=_names("levels", raw.get("levels") or []),
        count_column=count_column,
        category_columns=_names("category_columns", raw.get("category_columns") or []),
        category_values={str(c): tuple(map(str, v)) for c, v in values.items()},
        structure=structure, params=dict(params), split=_split(raw.get("split")), seed=seed)


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


def config_json(config: ReleaseConfig) -> str:
    """The configuration as indented JSON text (what `load_config` reads back)."""
    return json.dumps(config.to_dict(), indent=2) + "\n"

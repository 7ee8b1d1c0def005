"""``hierdp evaluate``: the errors of a release against its true input, per level, and,
when the release carries intervals, how often they hold the true values per level
(``coverage``, beside the intervals' nominal ``interval_level``; `intervals.coverage`) and,
where its manifest estimates its error (`intervals.estimated_error`), that estimate beside
the error measured per released value (``estimated_mae``, ``mae_per_value``). Reads the
confidential input: its output is confidential."""

from __future__ import annotations

import hmac
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.cli.inputs import input_data
from hierdp_core.cli.table import evaluate_args, geography_note, prepare_input
from hierdp_core.errors import InputError
from hierdp_core.intervals.coverage import coverage_per_level

INTERVAL_COLUMNS = ("lower", "upper")


def cmd_evaluate(args) -> int:
    from hierdp_core.export import read_release
    from hierdp_core.metrics import error_metrics

    args.input, args.release_dir = truth_and_release(args.input, args.release_dir, args.truth)
    table, manifest = read_release(args.release_dir, args.key_file)
    spec = manifest.get("input") or {}
    if spec.get("query") != "flows" and not spec.get("levels"):
        raise InputError("the manifest does not say which level columns the input used")
    print("note: evaluate reads the confidential input; its output is confidential",
          file=sys.stderr)
    if warning := other_input_warning(args.input, manifest, args.key_file):
        print(warning, file=sys.stderr)
    from hierdp_core.config import RunOptions

    cfg, truth, _ = prepare_input(*evaluate_args(args, spec))
    if note := geography_note(cfg):
        print(f"note: {note}", file=sys.stderr)
    data = input_data(cfg, RunOptions(), truth)
    coverage = None
    if cfg.query == "flows":
        from hierdp_core.flows.metrics import flow_metrics
        from hierdp_core.flows.release import levels_from_table

        released = levels_from_table(data, table)
        metrics = flow_metrics(data, released)
        coverage = _flow_coverage(data, released, table)
        errors = [np.abs(lv.value - data.lookup(t, lv.origin, lv.destination))
                  for t, lv in enumerate(released.levels)]
    else:
        values = align_release(table, data)
        h, truth = data.hierarchy, data.node_counts()
        errors = [np.abs(values - truth)[h.level_slice(lv)] for lv in range(h.n_levels)]
        if cfg.query == "ranges":
            from hierdp_core.ranges.evaluation import range_metrics

            metrics = range_metrics(data, values)
        elif cfg.query == "group-sizes":
            from hierdp_core.groupsizes.data import group_size_metrics

            metrics = group_size_metrics(data, values)
        else:
            metrics = error_metrics(h, truth, values, categories=data.categories
                                    if data.has_categories else None)
        coverage = _node_coverage(data, table)
    if coverage is not None:
        metrics = with_coverage(metrics, coverage, manifest["intervals"]["level"])
    estimate = manifest.get("intervals", {}).get("estimated_error")
    if estimate is not None:
        metrics = with_estimate(metrics, estimate, errors)
    if args.json:
        print(metrics.to_json(orient="records", indent=2))
    else:
        print(metrics.to_string(index=False))
    return 0


def truth_and_release(first: str, second: str | None, truth: str | None) -> tuple[str, str]:
    """(true table, release folder) from ``evaluate INPUT RELEASE_DIR`` or ``evaluate
    RELEASE_DIR --truth INPUT``; `InputError` when neither or both name the table."""
    if truth is None and second is None:
        raise InputError("evaluate needs the true table and the release folder: evaluate "
                         "INPUT RELEASE_DIR, or evaluate RELEASE_DIR --truth INPUT")
    if truth is not None and second is not None:
        raise InputError(f"evaluate got the true table twice ({first!r} and --truth "
                         f"{truth!r}): give the release folder alone with --truth")
    return (first, second) if truth is None else (truth, first)


def other_input_warning(truth: str, manifest: dict, key_file) -> str | None:
    """The warning that the table ``truth`` is not the release's input, when the
    publisher's key is here (`local_key`) and the table's keyed fingerprint differs from the
    one the ``manifest`` records; None when they match, or without a key or fingerprint."""
    from hierdp_core.publisher_key import keyed_fingerprint, local_key

    recorded = ((manifest.get("input") or {}).get("fingerprint") or {}).get("value")
    key = local_key(key_file) if recorded else None
    if key is None or hmac.compare_digest(keyed_fingerprint(Path(truth), key), recorded):
        return None
    return (f"warning: {truth} is not the input this release was made from (its keyed "
            "fingerprint differs): the errors below compare with another table")


def with_coverage(metrics: pd.DataFrame, coverage: np.ndarray,
                  nominal: float) -> pd.DataFrame:
    """``metrics`` with ``coverage`` (per level) and ``interval_level`` on each level's
    overall row (`per_level_columns`)."""
    return per_level_columns(metrics, coverage=coverage,
                             interval_level=np.full(coverage.size, nominal))


def with_estimate(metrics: pd.DataFrame, estimate: dict,
                  errors: list[np.ndarray]) -> pd.DataFrame:
    """``metrics`` with the release's ``estimated_mae`` per level (its manifest's
    ``intervals.estimated_error``, NaN where not estimated) beside ``mae_per_value``, the
    mean of the level's ``errors`` (|released - true| per released value), to check the
    estimate on a table of one's own (`per_level_columns`)."""
    by_level = [np.nan if v is None else v for v in estimate["by_level"].values()]
    measured = [e.mean() if e.size else np.nan for e in errors]
    return per_level_columns(metrics, estimated_mae=np.array(by_level, dtype=float),
                             mae_per_value=np.array(measured, dtype=float))


def per_level_columns(metrics: pd.DataFrame, **columns: np.ndarray) -> pd.DataFrame:
    """``metrics`` with each of ``columns`` (a value per level) on each level's overall row
    (a counts table's ``bin`` "all"; every row of one-row-per-level tables), NaN on the
    rows of population bins."""
    out = metrics.copy()
    overall = (out["bin"] == "all").to_numpy() if "bin" in out else np.ones(len(out), bool)
    level = out["level"].to_numpy(dtype=np.int64)
    for name, per_level in columns.items():
        out[name] = np.where(overall, per_level[level], np.nan)
    return out


def _node_coverage(data, table: pd.DataFrame) -> np.ndarray | None:
    """Per level, the share of cells whose true value lies in the released interval (None
    for a release without intervals)."""
    if not set(INTERVAL_COLUMNS) <= set(table.columns):
        return None
    h = data.hierarchy
    lower, upper = (align_release(table, data, side) for side in INTERVAL_COLUMNS)
    return coverage_per_level(h.level_of_nodes()[:, None], data.node_counts(), lower, upper,
                              h.n_levels)


def _flow_coverage(data, released, table: pd.DataFrame) -> np.ndarray | None:
    """`_node_coverage` of a flow release: its released nodes, level by level."""
    if not set(INTERVAL_COLUMNS) <= set(table.columns):
        return None
    truth = np.concatenate([data.lookup(t, lv.origin, lv.destination)
                            for t, lv in enumerate(released.levels)])
    rows = [table[table["level"] == t] for t in range(data.depth + 1)]
    lower, upper = (np.concatenate([r[side].to_numpy(dtype=float) for r in rows])
                    for side in INTERVAL_COLUMNS)
    level = np.concatenate([np.full(len(r), t) for t, r in enumerate(rows)])
    return coverage_per_level(level, truth, lower, upper, data.depth + 1)


def align_release(table: pd.DataFrame, data, column: str = "value") -> np.ndarray:
    """A release table's ``column`` as an (n_nodes, k) array in the order of ``data``'s
    hierarchy."""
    h = data.hierarchy
    ids = pd.Index(h.node_ids())
    k = len(data.categories)
    if "category" in table.columns:
        cat_pos = pd.Index(data.categories).get_indexer(table["category"].astype(str))
    else:
        cat_pos = np.zeros(len(table), dtype=np.int64)
    node_pos = ids.get_indexer(table["node_id"].astype(str))
    if (node_pos < 0).any() or (cat_pos < 0).any() or len(table) != h.n_nodes * k:
        raise InputError("the release does not match the input's hierarchy and categories "
                         "(different file, levels or categories?)")
    out = np.zeros((h.n_nodes, k), dtype=table[column].to_numpy().dtype)
    out[node_pos, cat_pos] = table[column].to_numpy()
    return out

"""The commands of ``hierdp`` other than ``release`` and ``budget``: list the mechanisms,
evaluate a release against its confidential input, verify a release folder, write a
sample dataset, audit a mechanism."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.cli_input import input_data
from hierdp_core.cli_table import evaluate_args, prepare_input
from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms


def cmd_mechanisms(args) -> int:
    infos = list_mechanisms(args.query)
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
        return 0
    rows = [{"name": i.name, "queries": ",".join(i.queries),
             "privacy": ",".join(i.privacy_definitions or (i.privacy,)),
             "private": "yes" if i.private else "NO", "consistent": "yes" if i.consistent else "no",
             "description": i.description} for i in infos]
    print(pd.DataFrame(rows).to_string(index=False, max_colwidth=70))
    return 0


def cmd_evaluate(args) -> int:
    from hierdp_core.export import read_release
    from hierdp_core.metrics import error_metrics

    table, manifest = read_release(args.release_dir, args.key_file)
    spec = manifest.get("input") or {}
    if spec.get("query") != "flows" and not spec.get("levels"):
        raise InputError("the manifest does not say which level columns the input used")
    print("note: evaluate reads the confidential input; its output is confidential",
          file=sys.stderr)
    ns, truth, _ = prepare_input(*evaluate_args(args, spec))
    data = input_data(ns, truth)
    if ns.query == "flows":
        from hierdp_core.flows.metrics import flow_metrics
        from hierdp_core.flows.release import levels_from_table

        metrics = flow_metrics(data, levels_from_table(data, table))
    elif ns.query == "ranges":
        from hierdp_core.ranges.evaluation import range_metrics

        metrics = range_metrics(data, align_release(table, data))
    elif ns.query == "group-sizes":
        from hierdp_core.groupsizes.data import group_size_metrics

        metrics = group_size_metrics(data, align_release(table, data))
    else:
        released = align_release(table, data)
        metrics = error_metrics(data.hierarchy, data.node_counts(), released,
                                categories=data.categories if data.has_categories else None)
    if args.json:
        print(metrics.to_json(orient="records", indent=2))
    else:
        print(metrics.to_string(index=False))
    return 0


def align_release(table: pd.DataFrame, data) -> np.ndarray:
    """Release values as an (n_nodes, k) array in the order of ``data``'s hierarchy."""
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
    out = np.zeros((h.n_nodes, k), dtype=table["value"].to_numpy().dtype)
    out[node_pos, cat_pos] = table["value"].to_numpy()
    return out


def cmd_verify(args) -> int:
    """Exit 0 and one line when the release folder's files, manifest checksum and signature
    (with the key here) are sound; otherwise the error names what is wrong (exit 2)."""
    from hierdp_core.export import verify_release

    print(verify_release(args.release_dir, args.key_file, args.checksum_only))
    return 0


def cmd_sample(args) -> int:
    from hierdp_core.data.sample_files import SAMPLE_FILES

    if args.name is None:
        for sample in SAMPLE_FILES.values():
            print(f"{sample.name}: {sample.description}")
        return 0
    try:
        sample = SAMPLE_FILES[args.name]
    except KeyError:
        raise InputError(f"unknown sample {args.name!r}; available: "
                         f"{', '.join(SAMPLE_FILES)}") from None
    import shlex

    table = sample.loader()
    out = Path(args.out)
    geography_path = out.with_name(f"{out.stem}-geography.csv")
    geography = sample.geography()
    try:
        table.to_csv(out, index=False)
        geography.to_csv(geography_path, index=False)
    except OSError as exc:
        raise InputError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    print(f"wrote {args.out} ({len(table):,} rows; columns {', '.join(map(str, table.columns))})")
    print(f"wrote {geography_path} (the public geography: {len(geography):,} units; columns "
          f"{', '.join(map(str, geography.columns))})")
    print("release it with, e.g.:")
    for example in sample.release_examples:
        example = example.replace("{geography}", shlex.quote(str(geography_path)))
        print(f"  hierdp release {shlex.quote(str(args.out))} {example}")
    return 0


def cmd_audit(args) -> int:
    from hierdp_core.audit import audit_mechanism

    get_mechanism(args.mechanism)
    result = audit_mechanism(args.mechanism, args.epsilon, trials=args.trials, seed=args.seed,
                             whole=True if args.whole else None, secure=args.secure)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0 if result.passed else 1
    for key, value in result.as_dict().items():
        if key != "stages":
            print(f"{key:>20}: {value}")
    for stage in result.stages:  # a composite mechanism: one line per stage audit
        print(f"{'stage audit':>20}: {stage.summary()} ({stage.trials} trials, {stage.seconds:g} s)")
        print(f"{'':>20}  {stage.event}")
    print(result.summary())
    return 0 if result.passed else 1



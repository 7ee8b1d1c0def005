"""The commands of ``hierdp`` other than ``release`` and ``budget``: list the mechanisms,
evaluate a release against its confidential input, verify a release folder, write a
sample dataset, audit a mechanism."""

from __future__ import annotations

import json

import pandas as pd

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


def cmd_verify(args) -> int:
    """Exit 0 and one line when the release folder's files, manifest checksum and signature
    (with the key here) are sound; otherwise the error names what is wrong (exit 2)."""
    from hierdp_core.export import verify_release

    print(verify_release(args.release_dir, args.key_file, args.checksum_only))
    return 0


def cmd_sample(args) -> int:
    from hierdp_core.data.sample_files import SAMPLE_FILES, sample_target, write_sample

    if args.name is None:
        for sample in SAMPLE_FILES.values():
            print(f"{sample.name}: {sample.description}")
        return 0
    import shlex

    table, written = write_sample(args.name, args.out, args.overwrite)
    sample, out = SAMPLE_FILES[args.name], sample_target(args.name, args.out)
    titles = {"geography": ("the public geography", "units"),
              "groups": ("the public groups file", "leaf regions")}
    print(f"wrote {out} ({len(table):,} rows; columns {', '.join(map(str, table.columns))})")
    for what, (frame, path) in written.items():
        title, rows = titles[what]
        print(f"wrote {path} ({title}: {len(frame):,} {rows}; columns "
              f"{', '.join(map(str, frame.columns))})")
    print("release it with, e.g.:")
    for example in sample.release_examples:
        for what, (_, path) in written.items():
            example = example.replace("{" + what + "}", shlex.quote(str(path)))
        print(f"  hierdp release {shlex.quote(str(out))} {example}")
    return 0


def cmd_audit(args) -> int:
    from hierdp_core.audit import audit_mechanism
    from hierdp_core.cli.budget import option_budget
    from hierdp_core.privacy.budget import PURE_DP

    get_mechanism(args.mechanism)
    option_budget(PURE_DP, args.epsilon, None)  # the ranges of a release's epsilon
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



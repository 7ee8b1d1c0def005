"""The ``hierdp`` command line: list mechanisms, release, evaluate, verify, audit.

Bad input prints one line ``error: ...`` to stderr and exits with status 2; never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pandas as pd

from hierdp_core.cli_budget import cmd_budget, commit_release, reserve_release
from hierdp_core.cli_evaluate import align_release, cmd_evaluate  # noqa: F401  (API)
from hierdp_core.cli_input import csv_list, input_data
from hierdp_core.cli_memory import check_args_memory, check_data_memory
from hierdp_core.cli_parser import EXIT_BAD_INPUT, build_parser
from hierdp_core.cli_split import describe_choice, goal_split
from hierdp_core.cli_table import (  # noqa: F401  (input_columns: part of this module's API)
    input_columns,
    input_spec,
    lookalike_warning,
    prepare_input,
    read_input,
)
from hierdp_core.errors import HierdpError, InputError
from hierdp_core.intervals import DEFAULT_LEVEL, uncalibrated_warning, with_intervals
from hierdp_core.invariants import exact_quantities
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.table_rules import describe as describe_rules
from hierdp_core.verdict import describe as describe_verdict
from hierdp_core.verdict import not_private_reason


def _weights(text: str | None):
    if not text:
        return None
    try:
        return [float(w) for w in csv_list(text)]
    except ValueError:
        raise InputError(f"--split takes numbers separated by commas, got {text!r}") from None


def _params(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise InputError(f"--param takes NAME=VALUE, got {pair!r}")
        name, value = pair.split("=", 1)
        out[name.strip()] = value.strip()
    return out


def budget_from_args(args) -> PrivacyBudget:
    """--epsilon [--delta] gives pure (or approximate) DP; --rho [--delta] gives zCDP.
    Implausible values get a warning from `budget_warnings`, said after the release."""
    if (args.epsilon is None) == (args.rho is None):
        raise InputError("give exactly one of --epsilon or --rho")
    if args.rho is not None:
        budget = PrivacyBudget.zcdp(args.rho, args.delta)
    elif args.delta is not None:
        budget = PrivacyBudget.approx(args.epsilon, args.delta)
    else:
        budget = PrivacyBudget.pure(args.epsilon)
    return budget


def budget_warnings(epsilon: float | None, rho: float | None,
                    delta: float | None) -> list[str]:
    """Plain-word warnings for budgets that are valid but implausible."""
    out = []
    eps = epsilon if epsilon is not None else (rho * 2 if rho is not None else None)
    if eps is not None and eps < 0.01:
        out.append(f"a budget this small ({'epsilon' if epsilon is not None else 'rho'} = "
                   f"{epsilon if epsilon is not None else rho:g}) drowns every count in noise")
    if epsilon is not None and epsilon > 20:
        out.append(f"epsilon = {epsilon:g} gives almost no protection (e^epsilon = "
                   f"{math.exp(min(epsilon, 700)):.3g})")
    if delta is not None and delta > 1e-3:
        out.append(f"delta = {delta:g} is large: it should be well below 1/n, the inverse "
                   "of the number of people")
    return out


# ---- commands ---------------------------------------------------------------------------
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


def cmd_release(args) -> int:
    from hierdp_core.atomic import check_writable
    from hierdp_core.export import write_release

    check_writable(args.out)  # an --out that cannot be written is refused before the work
    mechanism = get_mechanism(args.mechanism)
    if args.query not in mechanism.info.queries:
        raise InputError(f"mechanism {args.mechanism!r} does not release {args.query}; it "
                         f"supports {list(mechanism.info.queries)}")
    refuse_nonprivate(mechanism.info, args.allow_nonprivate)
    check_invariants(args, mechanism)
    budget = budget_from_args(args)
    if args.seed is not None and args.secure:
        raise InputError("give --seed (exploration) or --secure (release), not both")
    source = NoiseSource(seed=args.seed) if args.seed is not None else NoiseSource(
        secure=True, backend=getattr(args, "noise_backend", "hierdp"))
    path = Path(args.input)
    dask = getattr(args, "engine", "memory") == "dask"
    if dask:  # the records stay on the cluster: no table here
        from hierdp_core.engine.dask_cli import check_dask_args, dask_release
        from hierdp_core.engine.dask_engine import dataset_files

        check_dask_args(args, mechanism)
        table, prepared = None, ""
        reserved = reserve_release(args, budget, mechanism.info.name, source,
                                   dataset_files(args.input))
        release, data, content, choice = dask_release(
            args, mechanism, budget, source, lambda d: _split(args, mechanism, d, budget),
            _params(args.param))
    else:
        args, table, prepared, data = memory_input(args, path)
        content = path
        choice, split = _split(args, mechanism, data, budget)
        reserved = reserve_release(args, budget, mechanism.info.name, source, content)
        release = mechanism.release(data, budget, split=split, source=source,
                                    **_params(args.param))
    if args.interval != 0.0:  # every query kind; --interval none gives none
        release = with_intervals(release, args.interval or DEFAULT_LEVEL,
                                 args.interval_replicates,
                                 workload=getattr(data, "workload", None))
    structure_declared = bool(getattr(data, "declared_structure", False))
    formats = csv_list(args.format) or [
        "csv" if not dask else "parquet" if args.query == "flows" else "parquet-dataset"]
    paths = write_release(release, args.out, formats=tuple(formats),
                          structure_declared=structure_declared,
                          input_spec=input_spec(args, data, path),
                          input_content=content, key_file=args.key_file,
                          overwrite=args.overwrite, max_epsilon=args.max_epsilon)
    spent = commit_release(reserved, paths["manifest"])
    # warnings and notes are said once the release is written: an error stays the only line
    said = [f"warning: {text}" for text in budget_warnings(args.epsilon, args.rho, args.delta)]
    said += [f"warning: {text}" for text in
             [lookalike_warning(args, table) if table is not None else None] if text]
    if release.intervals is not None and (text := uncalibrated_warning(release)):
        said.append(f"warning: {text}")
    merged = int(getattr(data, "merged_rows", 0) or 0)
    if merged:
        said.append(f"note: {merged:,} row(s) repeating the cell of an earlier row (the same unit "
                    "and category, size, value or O/D pair) were summed")
    if prepared:
        said.append(f"note: {prepared}")
    if choice is not None:
        said.append(f"note: {describe_choice(choice)}")
    for line in said:
        print(line, file=sys.stderr)
    if not release.privacy.get("invariants"):
        note = ""
    else:
        note = f" (published exactly, not private: {', '.join(release.invariants)})"
    print(f"wrote {', '.join(str(p) for k, p in paths.items() if k != 'key')}{note}")
    manifest = json.loads(paths["manifest"].read_text())
    print(describe_verdict(manifest))
    print(describe_rules(manifest["table_rules"]))
    print(f"the input fingerprint is keyed by {paths['key']}: keep it private")
    if spent:
        print(spent)
    return 0


def memory_input(args, path: Path):
    """(args, table, preparation note, data) of a release held in memory: the table at
    ``path`` read and prepared (`prepare_input`), its data object (`input_data`), both
    checked against the memory limit."""
    args, table, prepared = prepare_input(args, read_input(args, path))
    check_args_memory(args, table)  # before anything grows with a size typed
    data = input_data(args, table)
    check_data_memory(args, data)
    return args, table, prepared, data


def _split(args, mechanism, data, budget):
    """(the choice of ``--split-goal`` or None, the split: its shares, else ``--split``'s
    weights, else ``--split-preset``)."""
    choice = goal_split(args, mechanism.info.name, data, budget,
                        mechanism.params(**_params(args.param)))
    return choice, (choice.shares if choice is not None
                    else _weights(args.split) or args.split_preset)


def check_invariants(args, mechanism) -> list[str]:
    """The declared ``--invariant`` names, checked against what the mechanism would publish
    exactly (DESIGN principle 7: nothing exact unless declared, nothing declared that is not
    exact). For counts, ``--invariant total`` sets the ``root_invariant`` parameter (added
    to ``args.param``), and ``--param root_invariant=true`` without it is refused."""
    declared = list(dict.fromkeys(args.invariant or []))
    name, query = mechanism.info.name, args.query
    if query == "counts" and "total" in declared:
        if "root_invariant" not in {p.name for p in mechanism.info.parameters}:
            raise InputError(f"{name} cannot keep the total exactly; drop --invariant total "
                             "or use least-squares or topdown")
        if "root_invariant" not in _params(args.param):
            args.param = [*(args.param or []), "root_invariant=true"]
    params = mechanism.params(**_params(args.param))
    exact = exact_quantities(mechanism, query, params)
    if query == "counts" and params.get("root_invariant") and "total" not in declared:
        raise InputError("--param root_invariant=true publishes the total exactly: declare "
                         "it with --invariant total")
    missing = [q for q in exact if q not in declared]
    if missing:
        what = {"total": "the total (" + {"flows": "number of trips, under bounded "
                                          "neighbours", "group-sizes": "number of groups G"}
                .get(query, "root count") + ")",
                "groups": "every region's number of groups"}
        hint = {"flows": "; or --param neighbouring=unbounded to noise it too",
                "group-sizes": "; gs-noisy keeps nothing exact, gs-mh-dp and gs-topdown only "
                               "the total"}.get(query, "")
        raise InputError(f"{name} publishes {' and '.join(what[q] for q in missing)} exactly "
                         f"(not protected): declare it with "
                         f"{' '.join('--invariant ' + q for q in missing)}{hint}")
    extra = [q for q in declared if q not in exact]
    if extra:
        raise InputError(f"{name} does not publish {', '.join(extra)} exactly here; drop "
                         f"{' '.join('--invariant ' + q for q in extra)}")
    return declared


def refuse_nonprivate(info, allowed: bool) -> None:
    """A mechanism that is not differentially private as published is refused unless the
    user allows it explicitly (and the release then says it is not publishable)."""
    if info.private:
        return
    if not allowed:
        raise InputError(f"{not_private_reason(info.name, info.warning)}; use a private "
                         "mechanism, or --allow-nonprivate to run it anyway (the release "
                         "will say it is not publishable)")
    print(f"warning: {not_private_reason(info.name)}; the release is not publishable",
          file=sys.stderr)


def cmd_verify(args) -> int:
    """Exit 0 and one line when the release folder's files, manifest checksum and signature
    (with the key here) are sound; otherwise the error names what is wrong (exit 2)."""
    from hierdp_core.export import verify_release

    print(verify_release(args.release_dir, args.key_file, args.checksum_only))
    return 0


def cmd_sample(args) -> int:
    from hierdp_core.data.sample_files import SAMPLE_FILES, write_sample

    if args.name is None:
        for sample in SAMPLE_FILES.values():
            print(f"{sample.name}: {sample.description}")
        return 0
    import shlex

    table, written = write_sample(args.name, args.out)
    sample = SAMPLE_FILES[args.name]
    titles = {"geography": ("the public geography", "units"),
              "groups": ("the public groups file", "leaf regions")}
    print(f"wrote {args.out} ({len(table):,} rows; columns {', '.join(map(str, table.columns))})")
    for what, (frame, path) in written.items():
        title, rows = titles[what]
        print(f"wrote {path} ({title}: {len(frame):,} {rows}; columns "
              f"{', '.join(map(str, frame.columns))})")
    print("release it with, e.g.:")
    for example in sample.release_examples:
        for what, (_, path) in written.items():
            example = example.replace("{" + what + "}", shlex.quote(str(path)))
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


COMMANDS = {"mechanisms": cmd_mechanisms, "release": cmd_release, "evaluate": cmd_evaluate,
            "verify": cmd_verify, "sample": cmd_sample, "audit": cmd_audit,
            "budget": cmd_budget}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, 2), --help and --version (0)
        return int(exc.code or 0)
    try:
        return COMMANDS[args.command](args)
    except HierdpError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `hierdp mechanisms | head`: the reader left; stay quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # an unexpected failure: one line, details with --debug
        if args.debug:
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (run with --debug for details)",
              file=sys.stderr)
        return 1

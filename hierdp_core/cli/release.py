"""``hierdp release``: read the input, bound its memory, draw the noise and write the
release folder; the budget (``--epsilon``/``--rho``), its split, the declared invariants
and the refusal of a mechanism that is not private. Bad input raises a `HierdpError`
(one line and exit status 2 from `hierdp_core.cli.main.main`)."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from hierdp_core.cli.budget import (
    charged,
    check_release_fits,
    commit_release,
    release_budget,
    reserve_release,
)
from hierdp_core.cli.config_file import check_save_config, save_config
from hierdp_core.cli.inputs import csv_list, input_data, mechanism_params, split_argument
from hierdp_core.cli.limits import memory_limit
from hierdp_core.cli.memory import check_data_memory, check_table_memory
from hierdp_core.cli.split import describe_choice, goal_split
from hierdp_core.cli.table import (
    geography_note,
    input_spec,
    lookalike_warning,
    prepare_input,
    read_input,
    totals_warning,
)
from hierdp_core.data.file_state import unchanged_input
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.declared_groups import unkept_declaration
from hierdp_core.intervals import DEFAULT_LEVEL, uncalibrated_warning, with_intervals
from hierdp_core.intervals.estimated_error import describe as describe_estimate
from hierdp_core.invariants import exact_quantities
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.memory_sparse import sparse_note
from hierdp_core.privacy.levels import delta_unused
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.publisher_key import fingerprint_ahead
from hierdp_core.queries.sparse_ranges import SparseRangeData
from hierdp_core.table_rules import describe as describe_rules
from hierdp_core.verdict import describe as describe_verdict
from hierdp_core.verdict import not_private_reason


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
                   "of the number of people (above --max-delta the release is not "
                   "publishable)")
    return out


def cmd_release(cfg, run) -> int:
    """``hierdp release`` of the settings ``cfg`` (a `ReleaseConfig`) with the `RunOptions`
    ``run``, both converted from the command line at its boundary
    (`hierdp_core.cli.config_file.settings_of_args`): the release written to ``run.out``;
    status 0."""
    from hierdp_core.atomic import check_writable
    from hierdp_core.export import check_formats, write_release

    check_writable(run.out)  # an --out that cannot be written is refused before the work
    dask = run.engine == "dask"
    formats = csv_list(run.formats) or [
        "csv" if not dask else "parquet" if cfg.query == "flows" else "parquet-dataset"]
    check_formats(formats)  # so is a --format that cannot be written
    if run.save_config:
        check_save_config(run)
    mechanism, cfg, budget, nonprivate = checked_mechanism(cfg, run.allow_nonprivate)
    if cfg.seed is not None and run.secure:
        raise InputError("give --seed (exploration) or --secure (release), not both")
    source = NoiseSource(seed=cfg.seed) if cfg.seed is not None else NoiseSource(
        secure=True, backend=run.noise_backend)
    path = Path(cfg.data["file"])
    if dask:  # the records stay on the cluster: no table here
        from hierdp_core.cli.dask import check_dask_settings, dask_release
        from hierdp_core.engine.dask_engine import dataset_files

        check_dask_settings(cfg, run, mechanism)
        files = dataset_files(cfg.data["file"])
        fingerprint = check_release_fits(run, budget, source, files)
        table, prepared, sparse, spends = None, "", None, []
        with unchanged_input(files) as check_read:

            def split_then_reserve(shape):
                """The split of the public ``shape``, then the write-ahead spend: the
                engine asks for it once the data's size is checked and before any noise,
                so a release refused by those checks (or by a file changed since it
                started) spends nothing."""
                choice = _split(cfg, mechanism, shape, budget)
                check_read()
                spends.append(reserve_release(cfg, run, budget, mechanism.info.name,
                                              source, files, fingerprint))
                return choice

            release, data, content, choice = dask_release(
                cfg, run, mechanism, budget, source, split_then_reserve,
                mechanism_params(cfg))
        reserved = spends[0]
    else:
        content, spends = path, []
        if source.secure:  # the ledger's fingerprint of the input, hashed beside its reading
            fingerprint_ahead(path, run.key_file)
        with unchanged_input([path]) as check_read:

            def reserve(prepared_cfg, data) -> None:
                """The write-ahead spend, once the input read is checked unchanged."""
                check_read()
                spends.append(reserve_release(prepared_cfg, run, budget,
                                              mechanism.info.name, source, content, data=data))

            release, cfg, table, prepared, data, sparse, choice = memory_release(
                cfg, run, path, mechanism, budget, source, before_noise=reserve)
        reserved = spends[0]
    release = charged(release, reserved)
    if isinstance(data, SparseRangeData):  # no bounds: they re-run it over every value
        sparse = (f"{sparse}; " if sparse else "") + (
            f"domain kept sparse: {len(release.categories):,} intervals released for each "
            f"unit instead of {data.n:,} values, without lower and upper bounds")
    elif cfg.interval != 0.0:  # every query kind; --interval none gives none
        release = with_intervals(release, cfg.interval or DEFAULT_LEVEL,
                                 cfg.interval_replicates,
                                 workload=getattr(data, "workload", None))
    structure_declared = bool(getattr(data, "declared_structure", False))
    paths = write_release(release, run.out, formats=tuple(formats),
                          structure_declared=structure_declared,
                          input_spec=input_spec(cfg, run, data, path),
                          input_content=content, key_file=run.key_file,
                          overwrite=run.overwrite, max_epsilon=run.max_epsilon,
                          max_delta=run.max_delta)
    spent = commit_release(reserved, paths["manifest"])
    saved = save_config(cfg, run, choice and choice.shares) if run.save_config else None
    # warnings and notes are said once the release is written: an error stays the only line
    said = [f"warning: {text}" for text in [nonprivate] if text]
    said += [f"warning: {text}" for text in budget_warnings(cfg.epsilon, cfg.rho, cfg.delta)]
    if table is not None:
        said += [f"warning: {text}" for text in
                 (lookalike_warning(cfg, table), totals_warning(cfg, table)) if text]
    if release.intervals is not None and (text := uncalibrated_warning(release)):
        said.append(f"warning: {text}")
    merged = int(getattr(data, "merged_rows", 0) or 0)
    if merged:
        said.append(f"note: {merged:,} row(s) repeating the cell of an earlier row (the same unit "
                    "and category, size, value or O/D pair) were summed")
    if prepared:
        said.append(f"note: {prepared}")
    if geography := geography_note(cfg):
        said.append(f"note: {geography}")
    if sparse:
        said.append(f"note: {sparse}")
    if cfg.data.get("groups") and (unkept := unkept_declaration(release.parameters)):
        said.append(f"note: {unkept}; --param groups=exact --invariant groups keeps every "
                    "region's declared number")
    if choice is not None:
        said.append(f"note: {describe_choice(choice)}")
    if saved:
        said.append(f"note: {saved}")
    for line in said:
        print(line, file=sys.stderr)
    if not release.privacy.get("invariants"):
        note = ""
    else:
        note = f" (published exactly, not private: {', '.join(release.invariants)})"
    print(f"wrote {', '.join(str(p) for k, p in paths.items() if k != 'key')}{note}")
    if run.save_config:
        print(f"wrote {run.save_config} (the release's configuration)")
    manifest = json.loads(paths["manifest"].read_text())
    print(describe_verdict(manifest))
    print(describe_rules(manifest["table_rules"]))
    if estimate := describe_estimate(manifest.get("intervals")):
        print(estimate)
    print(f"the input fingerprint is keyed by {paths['key']}: keep it private")
    if spent:
        print(spent)
    return 0


def checked_mechanism(cfg, allow_nonprivate: bool):
    """(the mechanism, ``cfg`` with its invariants checked (`check_invariants`), its budget,
    the warning of an allowed non-private mechanism or None) of the settings ``cfg``; a
    mechanism that does not release ``cfg``'s query, or is not private and not allowed
    (`refuse_nonprivate`), or a ``--delta`` it would not spend (pure-DP noise:
    `hierdp_core.privacy.levels.delta_unused`), is refused."""
    mechanism = get_mechanism(cfg.mechanism, cfg.query)
    if cfg.query not in mechanism.info.queries:
        raise InputError(f"mechanism {cfg.mechanism!r} does not release {cfg.query}; it "
                         f"supports {list(mechanism.info.queries)}")
    nonprivate = refuse_nonprivate(mechanism.info, allow_nonprivate)
    cfg = check_invariants(cfg, mechanism)
    budget = release_budget(cfg)
    if noise := delta_unused(mechanism.privacy_plan(**cfg.params), budget):
        raise InputError(f"{cfg.mechanism} with {noise} noise is pure ε-DP: --delta does not "
                         "apply; drop it")
    return mechanism, cfg, budget, nonprivate


class MemoryRelease(NamedTuple):
    """A release made in memory and what it was made from (see `memory_input`)."""

    release: object
    cfg: object
    table: object
    prepared: str
    data: object
    sparse: str | None
    choice: object


def memory_release(cfg, run, path: Path, mechanism, budget, source, before_noise,
                   table=None) -> MemoryRelease:
    """The release of ``cfg`` held in memory: its input read and checked (`memory_input`),
    its split (`_split`: the choice of ``--split-goal`` kept), then ``before_noise(cfg,
    data)`` with the settings as the input's preparation left them and the input's data
    (the ledger's write-ahead spend), then the ``mechanism``'s noise from ``source``."""
    cfg, table, prepared, data, sparse = memory_input(cfg, run, path, table)
    choice, split = _split(cfg, mechanism, data, budget)
    before_noise(cfg, data)
    release = mechanism.release(data, budget, split=split, source=source,
                                **mechanism_params(cfg))
    return MemoryRelease(release, cfg, table, prepared, data, sparse, choice)


def memory_input(cfg, run, path: Path, table=None):
    """(the settings as the table's preparation left them, the table, the preparation note,
    the data, the sparse note or None) of the release of ``cfg`` (with the `RunOptions`
    ``run``) held in memory: the table at ``path`` (or ``table``, a DataFrame already in
    memory) read and prepared (`prepare_input`), its data object (`input_data`), both
    checked against the memory limit. A counts release over a declared structure is read
    straight to its leaf counts when it can (`declared_count_input`; the table is then the
    codes some row holds)."""
    from hierdp_core.cli.declared_input import declared_count_input

    placed = declared_count_input(cfg, run, path) if table is None else None
    if placed is not None:
        (table, data), prepared = placed, ""
    else:
        source = read_input(cfg, path) if table is None else table
        cfg, table, prepared = prepare_input(cfg, source)
        check_table_memory(cfg, run, table)  # before anything grows with a size typed
        data = input_data(cfg, run, table)
    sparse = sparse_note(check_data_memory(cfg, run, data), memory_limit(run))
    return cfg, table, prepared, data, sparse


def _split(cfg, mechanism, data, budget):
    """(the choice of ``--split-goal`` or None, the split: its shares, else ``--split``'s
    weights, else ``--split-preset``) for ``data`` or its public shape (the Dask engine's).
    The split is checked against the mechanism's levels here (its ledger of noise per
    level), before the budget is spent."""
    choice = goal_split(cfg, mechanism.info.name, data, budget,
                        mechanism.params(**mechanism_params(cfg)))
    split = choice.shares if choice is not None else split_argument(cfg)
    mechanism.ledger(data, budget, split=split, **mechanism_params(cfg))
    return choice, split


#: the declarations that keep a counts release's root (``root_invariant``)
ROOT_QUANTITIES = frozenset({"total", "category-totals"})


def check_invariants(cfg, mechanism):
    """``cfg`` as the release runs on it: its declared invariants checked against what the
    mechanism would publish exactly (DESIGN principle 7: nothing exact unless declared,
    nothing declared that is not exact) and its parameters typed as the mechanism declares
    them (``"true"`` and ``True`` are one setting). For counts, ``--invariant total`` (or
    ``category-totals``) sets the ``root_invariant`` parameter, and ``--param
    root_invariant=true`` without it is refused; with categories the root's cells are
    kept as they are, so both must be declared."""
    declared = list(cfg.invariants)
    name, query = mechanism.info.name, cfg.query
    if query == "counts" and ROOT_QUANTITIES & set(declared):
        if "root_invariant" not in {p.name for p in mechanism.info.parameters}:
            raise InputError(f"{name} cannot keep the total exactly; drop --invariant total "
                             "or use least-squares or topdown")
        if "root_invariant" not in mechanism_params(cfg):
            cfg = replace(cfg, params={**cfg.params, "root_invariant": "true"})
    params = mechanism.params(**mechanism_params(cfg))
    exact = exact_quantities(mechanism, query, params, cfg.has_categories)
    if (query == "counts" and params.get("root_invariant")
            and not ROOT_QUANTITIES & set(declared)):
        raise InputError("--param root_invariant=true publishes the total exactly: declare "
                         "it with --invariant total")
    missing = [q for q in exact if q not in declared]
    if missing:
        what = {"total": "the total (" + {"flows": "number of trips, under bounded "
                                          "neighbours", "group-sizes": "number of groups G"}
                .get(query, "root count") + ")",
                "category-totals": "the root's count of every category",
                "groups": "every region's number of groups"}
        hint = {"counts": "; the root's cells are kept as they are, so a category of a few "
                          "people would be published as it is: release without categories "
                          "to keep the total alone" if "category-totals" in missing else "",
                "flows": "; or --param neighbouring=unbounded to noise it too",
                "group-sizes": "; gs-noisy keeps nothing exact, gs-mh-dp and gs-topdown only "
                               "the total"}.get(query, "")
        raise InputError(f"{name} publishes {' and '.join(what[q] for q in missing)} exactly "
                         f"(not protected): declare it with "
                         f"{' '.join('--invariant ' + q for q in missing)}{hint}")
    extra = [q for q in declared if q not in exact]
    if extra:
        raise InputError(f"{name} does not publish {', '.join(extra)} exactly here; drop "
                         f"{' '.join('--invariant ' + q for q in extra)}")
    return replace(cfg, params={k: params[k] for k in mechanism_params(cfg)})


def refuse_nonprivate(info, allowed: bool) -> str | None:
    """A mechanism that is not differentially private as published is refused unless the
    user allows it explicitly; then the warning to say once the release is written (an
    error stays the only line), else None."""
    if info.private:
        return None
    if not allowed:
        raise InputError(f"{not_private_reason(info.name, info.warning)}; use a private "
                         "mechanism, or --allow-nonprivate to run it anyway (the release "
                         "will say it is not publishable)")
    return f"{not_private_reason(info.name)}; the release is not publishable"



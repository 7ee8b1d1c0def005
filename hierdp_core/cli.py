"""The ``hierdp`` command line: list mechanisms, release, evaluate, audit.

Bad input prints one line ``error: ...`` to stderr and exits with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core import __version__
from hierdp_core.errors import HierdpError, InputError
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.verdict import describe as describe_verdict
from hierdp_core.verdict import not_private_reason, release_verdict

EXIT_BAD_INPUT = 2
#: quantities a release may publish exactly, when declared with --invariant
INVARIANTS = ("total", "groups")


def _seed(text: str) -> int:
    """A non-negative integer seed (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {value}")
    return value


def _csv_list(text: str | None) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


def _weights(text: str | None):
    if not text:
        return None
    try:
        return [float(w) for w in _csv_list(text)]
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
    Implausible values (epsilon below 0.01 or above 20, delta above 1e-3) get a warning."""
    if (args.epsilon is None) == (args.rho is None):
        raise InputError("give exactly one of --epsilon or --rho")
    if args.rho is not None:
        budget = PrivacyBudget.zcdp(args.rho, args.delta)
    elif args.delta is not None:
        budget = PrivacyBudget.approx(args.epsilon, args.delta)
    else:
        budget = PrivacyBudget.pure(args.epsilon)
    for text in budget_warnings(args.epsilon, args.rho, args.delta):
        print(f"warning: {text}", file=sys.stderr)
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


def _input_data(args, table):
    """The data object of ``--query``: CountData (counts), GroupSizeData (person records
    with ``--group-column``, or size histograms with ``--size-column`` and
    ``--count-column``), FlowData or RangeData, shaped by the declared structure
    (``--geography``, ``--category-values``, ``--domain``) or, with
    ``--structure-from-data``, by the data (exploration)."""
    from hierdp_core.data.loaders import check_column_roles

    query = getattr(args, "query", "counts")
    if query == "flows":
        return _flow_data(args, table)
    levels, names = _csv_list(args.levels), _name_columns(getattr(args, "names", None))
    check_column_roles(args.count_column, levels=levels,
                       categories=_csv_list(getattr(args, "categories", None)),
                       attributes=getattr(args, "attribute", None),
                       group_columns=getattr(args, "group_column", None),
                       size_columns=getattr(args, "size_column", None))
    if not levels:
        raise InputError(f"{query} need --levels, the level columns coarse to fine")
    if query == "ranges":
        return _range_data(args, table, levels, names)
    if query == "group-sizes":
        from hierdp_core.groupsizes.data import (
            group_size_data_from_histograms,
            group_size_data_from_people,
        )

        if args.max_size is None:
            raise InputError("group sizes need --max-size N, the public top-code (sizes "
                             "above N count as N); choose it without looking at the data")
        if _csv_list(args.categories) or getattr(args, "category_values", None):
            raise InputError("--categories and --category-values do not apply to group sizes "
                             "(the sizes 0..--max-size are the categories)")
        if bool(args.group_column) == bool(args.size_column):
            raise InputError("group sizes need either --group-column (one row per person) or "
                             "--size-column with --count-column (groups per size)")
        geography = _geography(args, levels, names, query)
        shape = ({"geography": geography} if geography is not None
                 else {"local_codes": args.local_codes, "name_columns": names})
        if args.group_column:
            return group_size_data_from_people(
                table, levels, args.group_column, max_size=args.max_size,
                count_column=args.count_column, **shape)
        if not args.count_column:
            raise InputError("--size-column needs --count-column (the number of groups)")
        return group_size_data_from_histograms(
            table, levels, args.size_column, args.count_column, max_size=args.max_size,
            **shape)
    from hierdp_core.queries.counts import count_data_from_table

    categories, declared = _categories(args)
    geography = _geography(args, levels, names, query,
                           undeclared=[c for c in categories if c not in declared])
    shape = ({"geography": geography} if geography is not None
             else {"local_codes": args.local_codes, "name_columns": names})
    return count_data_from_table(table, levels, count_column=args.count_column,
                                 category_columns=categories, category_values=declared,
                                 duplicates=getattr(args, "duplicates", None) or "sum",
                                 max_cells=_max_cells(args), **shape)


def _max_cells(args) -> int:
    """``--max-cells``, else the default sized to this machine's memory."""
    from hierdp_core.data.loaders import default_max_cells

    value = getattr(args, "max_cells", None)
    return int(value) if value is not None else default_max_cells()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a whole number > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"wants a whole number > 0, got {value}")
    return value


def _categories(args) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """The category columns (``--categories``, else the columns of ``--category-values``)
    and their declared values."""
    from hierdp_core.structure import parse_category_values

    declared = parse_category_values(getattr(args, "category_values", None))
    categories = _csv_list(args.categories) or list(declared)
    extra = [c for c in declared if c not in categories]
    if extra:
        raise InputError(f"--category-values declares {extra}, which are not in --categories "
                         f"{categories}")
    return categories, declared


def _geography(args, levels, names, query: str, *, undeclared=(), flows=None):
    """The declared geography (``--geography``), or None with ``--structure-from-data``;
    without either, an error naming the flags. ``undeclared``: category columns without
    declared values (an error with a geography); ``flows``: (origin, destination) levels."""
    path = getattr(args, "geography", None)
    from_data = bool(getattr(args, "structure_from_data", False))
    needs = {"counts": "--geography FILE (the public units; with --category-values "
                       "COL=V1|V2|... for each category column)",
             "ranges": "--geography FILE (the public units) and --domain LO-HI",
             "group-sizes": "--geography FILE (the public regions)",
             "flows": "--geography FILE (the public areas of both ends)"}[query]
    if path and from_data:
        raise InputError("give --geography (a declared structure) or --structure-from-data "
                         "(exploration), not both")
    if from_data:
        return None
    if not path:
        raise InputError(f"a {query} release needs a declared public structure: {needs}; or "
                         "--structure-from-data to read it from the confidential data "
                         "(exploration only: the release is not publishable)")
    if undeclared:
        raise InputError(f"declare the values of the category column(s) {list(undeclared)} "
                         f"with --category-values COL=V1|V2|... (or use --structure-from-data "
                         "for exploration)")
    if flows is not None:
        from hierdp_core.flows.data import read_flow_geography

        return read_flow_geography(path, *flows)
    from hierdp_core.structure import read_geography

    return read_geography(path, levels, name_columns=names, local_codes=args.local_codes)


def _flow_data(args, table):
    """FlowData from trips (one row per trip) or an O/D table with ``--count-column``."""
    from hierdp_core.data.loaders import check_column_roles
    from hierdp_core.flows.data import flow_data_from_table

    origin, destination = _csv_list(args.origin_levels), _csv_list(args.destination_levels)
    check_column_roles(args.count_column, origin_levels=origin, destination_levels=destination)
    if not origin or not destination:
        raise InputError("flows need --origin-levels and --destination-levels, e.g. "
                         "--origin-levels o_state,o_county --destination-levels "
                         "d_state,d_county")
    if _csv_list(args.levels) or _csv_list(args.categories) \
            or getattr(args, "category_values", None):
        raise InputError("--levels and --categories do not apply to flows: use "
                         "--origin-levels and --destination-levels")
    if len(origin) != len(destination):
        raise InputError("give the same number (at least one) of origin and destination "
                         f"levels, coarse to fine; got {origin} and {destination}")
    geography = _geography(args, origin, {}, "flows", flows=(origin, destination))
    return flow_data_from_table(table, origin, destination, args.count_column,
                                tree=args.tree or "destination", geography=geography)


def _range_data(args, table, levels, names):
    """RangeData over ``--attribute`` with the ``--workload`` ranges."""
    from hierdp_core.queries.ranges import range_data_from_table
    from hierdp_core.ranges.workloads import (
        WORKLOAD_KINDS,
        bands,
        named_workload,
        read_workload_file,
    )
    from hierdp_core.structure import parse_domain

    if not args.attribute:
        raise InputError("ranges need --attribute, the ordered attribute column (e.g. age)")
    if _csv_list(args.categories) or getattr(args, "category_values", None):
        raise InputError("--categories and --category-values do not apply to ranges (the "
                         "attribute's values in --domain are the categories)")
    from hierdp_core.data.loaders import check_cells

    domain = parse_domain(args.domain) if args.domain else None
    max_cells = _max_cells(args)
    if domain is not None:  # before the domain's values are made: the domain alone, ...
        size = domain[1] - domain[0] + 1
        check_cells(size, max_cells, f"at least 1 unit x a domain of {size:,} values")
    geography = _geography(args, levels, names, "ranges")
    if domain is not None:  # ... then with the units (declared, or the data's leaves)
        leaves = (geography.hierarchy.n_leaves if geography is not None
                  else len(table[levels].drop_duplicates()) if set(levels) <= set(table)
                  else 1)
        check_cells(leaves * size, max_cells,
                    f"{leaves:,} units x a domain of {size:,} values")
    if geography is not None and domain is None:
        raise InputError("a ranges release over a declared --geography needs --domain LO-HI, "
                         "the public range of the attribute (or --structure-from-data for "
                         "exploration)")
    shape = {"geography": geography} if geography is not None else {"name_columns": names}
    data = range_data_from_table(table, levels, args.attribute, count_column=args.count_column,
                                 domain=domain, **shape)
    spec = args.workload or "prefix"
    n = len(data.values)
    if spec in WORKLOAD_KINDS:
        workload = named_workload(spec, n)
    elif Path(spec).suffix.lower() in (".csv", ".txt"):
        workload = read_workload_file(data.values, spec)
    else:
        workload = bands(data.values, spec)
    return data.with_workload(workload)


def input_columns(args) -> list[str]:
    """The input columns a release reads (level, count, category, name, attribute, group,
    size and O/D level columns), so that a large file is read by those columns only."""
    columns = [*_csv_list(getattr(args, "levels", None)),
               *_csv_list(getattr(args, "origin_levels", None)),
               *_csv_list(getattr(args, "destination_levels", None)),
               *_csv_list(getattr(args, "categories", None)),
               *_name_columns(getattr(args, "names", None)).values()]
    columns += [str(spec).partition("=")[0].strip()
                for spec in getattr(args, "category_values", None) or []]
    columns += [getattr(args, key, None) for key in
                ("count_column", "attribute", "group_column", "size_column")]
    return list(dict.fromkeys(c for c in columns if c))


def _name_columns(text: str | None) -> dict[str, str]:
    """'state=state_name,county=county_name' -> {'state': 'state_name', ...}."""
    pairs = {}
    for item in _csv_list(text):
        level, sep, column = item.partition("=")
        if not sep or not level.strip() or not column.strip():
            raise InputError(f"--names wants LEVEL=COLUMN pairs, got {item!r}")
        pairs[level.strip()] = column.strip()
    return pairs


def cmd_release(args) -> int:
    from hierdp_core.data.loaders import read_table
    from hierdp_core.export import write_release

    mechanism = get_mechanism(args.mechanism)
    if args.query not in mechanism.info.queries:
        raise InputError(f"mechanism {args.mechanism!r} does not release {args.query}; it "
                         f"supports {list(mechanism.info.queries)}")
    refuse_nonprivate(mechanism.info, args.allow_nonprivate)
    check_invariants(args, mechanism)
    budget = budget_from_args(args)
    if args.seed is not None and args.secure:
        raise InputError("give --seed (exploration) or --secure (release), not both")
    source = NoiseSource(seed=args.seed) if args.seed is not None else NoiseSource(secure=True)
    path = Path(args.input)
    table = read_table(path, columns=input_columns(args))
    _warn_lookalike_codes(args, table)
    data = _input_data(args, table)
    split = _weights(args.split) or args.split_preset
    release = mechanism.release(data, budget, split=split, source=source, **_params(args.param))
    input_spec = {"file": path.name, "query": args.query, "levels": _csv_list(args.levels),
                  "count_column": args.count_column,
                  "category_columns": _csv_list(args.categories),
                  "local_codes": args.local_codes}
    if args.query == "group-sizes":
        input_spec.update(group_column=args.group_column, size_column=args.size_column,
                          max_size=args.max_size)
    if args.query == "ranges":
        input_spec.update(attribute=args.attribute, workload=args.workload, domain=args.domain)
    if args.query == "flows":
        input_spec.update(origin_levels=_csv_list(args.origin_levels),
                          destination_levels=_csv_list(args.destination_levels),
                          tree=args.tree or "destination")
    input_spec.update(structure_spec(args, data))
    structure_declared = bool(getattr(data, "declared_structure", False))
    paths = write_release(release, args.out, formats=tuple(_csv_list(args.format)),
                          structure_declared=structure_declared, input_spec=input_spec,
                          input_content=path, key_file=args.key_file,
                          overwrite=args.overwrite)
    merged = int(getattr(data, "merged_rows", 0) or 0)
    if merged:  # said once the release is written, so that an error stays the only line
        print(f"note: {merged:,} duplicate rows of the same unit and category were summed",
              file=sys.stderr)
    if not release.privacy.get("invariants"):
        note = ""
    else:
        note = f" (published exactly, not private: {', '.join(release.invariants)})"
    print(f"wrote {', '.join(str(p) for k, p in paths.items() if k != 'key')}{note}")
    print(describe_verdict(release_verdict(release, structure_declared=structure_declared)))
    print(f"the input fingerprint is keyed by {paths['key']}: keep it private")
    return 0


def _warn_lookalike_codes(args, table) -> None:
    """One warning line naming up to five pairs of codes of the same level that differ only
    by leading zeros or surrounding whitespace (they stay distinct strings)."""
    from hierdp_core.data.loaders import lookalike_codes

    columns = [*_csv_list(getattr(args, "levels", None)),
               *_csv_list(getattr(args, "origin_levels", None)),
               *_csv_list(getattr(args, "destination_levels", None))]
    pairs = lookalike_codes(table, list(dict.fromkeys(columns)))
    if pairs:
        shown = ", ".join(f"{col} {a!r} and {b!r}" for col, a, b in pairs)
        print(f"warning: codes that differ only by leading zeros or whitespace: {shown} "
              "(codes are text: leading zeros make different units; check these are meant)", file=sys.stderr)


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


def exact_quantities(mechanism, query: str, params: dict) -> list[str]:
    """Which `INVARIANTS` a mechanism publishes exactly with these parameters: counts the
    total with ``root_invariant``; flows the number of trips under bounded neighbours;
    group sizes what the mechanism treats as public (every region's number of groups for
    the cumulative-histogram and Kuo mechanisms, the total G for the others but gs-noisy)."""
    if query == "counts":
        return ["total"] if params.get("root_invariant") else []
    if query == "flows":
        return ["total"] if params.get("neighbouring") == "bounded" else []
    if query == "group-sizes":
        from hierdp_core.mechanisms.group_sizes import G_PUBLIC, G_V_PUBLIC

        kept = set(getattr(mechanism, "invariants", ()))
        return ["groups"] if G_V_PUBLIC in kept else ["total"] if G_PUBLIC in kept else []
    return []


def structure_spec(args, data) -> dict:
    """The declarations of a release, for its manifest's ``input`` (so that `cmd_evaluate`
    can rebuild the data): ``structure`` ('declared' or 'from-data'), the geography file's
    name and sha256, the declared category values and the invariants."""
    from hierdp_core.export import file_sha256
    from hierdp_core.structure import parse_category_values

    spec = {"structure": "declared" if getattr(data, "declared_structure", False)
            else "from-data",
            "invariants": list(dict.fromkeys(args.invariant or []))}
    if getattr(args, "geography", None):
        path = Path(args.geography)
        spec["geography"] = {"file": path.name, "sha256": file_sha256(path)}
    values = parse_category_values(getattr(args, "category_values", None))
    if values:
        spec["category_values"] = {column: list(v) for column, v in values.items()}
    if getattr(args, "names", None):
        spec["names"] = args.names
    return spec


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


def cmd_evaluate(args) -> int:
    from hierdp_core.data.loaders import read_table
    from hierdp_core.export import read_release
    from hierdp_core.metrics import error_metrics

    table, manifest = read_release(args.release_dir)
    spec = manifest.get("input") or {}
    if spec.get("query") != "flows" and not spec.get("levels"):
        raise InputError("the manifest does not say which level columns the input used")
    print("note: evaluate reads the confidential input; its output is confidential",
          file=sys.stderr)
    ns = argparse.Namespace(levels=",".join(spec["levels"]),
                            count_column=spec.get("count_column"),
                            categories=",".join(spec.get("category_columns") or []),
                            local_codes=bool(spec.get("local_codes")),
                            query=spec.get("query", "counts"),
                            group_column=spec.get("group_column"),
                            size_column=spec.get("size_column"),
                            max_size=spec.get("max_size"),
                            origin_levels=",".join(spec.get("origin_levels") or []),
                            destination_levels=",".join(spec.get("destination_levels") or []),
                            tree=spec.get("tree"), attribute=spec.get("attribute"),
                            workload=spec.get("workload"), domain=spec.get("domain"),
                            names=None, **_evaluate_structure(args, spec))
    data = _input_data(ns, read_table(Path(args.input)))
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


def _evaluate_structure(args, spec: dict) -> dict:
    """The structure arguments that rebuild a release's data: its declarations from the
    manifest, and the geography file (``--geography``, else the manifest's file name beside
    the input or in the current folder), checked against the recorded sha256."""
    from hierdp_core.export import file_sha256

    if spec.get("structure", "from-data") != "declared" and not spec.get("geography"):
        return {"structure_from_data": True, "geography": None, "category_values": None,
                "invariant": None}
    recorded = spec.get("geography") or {}
    path = Path(args.geography) if args.geography else None
    if path is None and recorded.get("file"):
        near = [Path(args.input).parent / recorded["file"], Path(recorded["file"])]
        path = next((p for p in near if p.is_file()), None)
    if path is None or not path.is_file():
        raise InputError(f"the release was made over the geography {recorded.get('file')!r}; "
                         "give its path with --geography FILE")
    if recorded.get("sha256") and file_sha256(path) != recorded["sha256"]:
        raise InputError(f"{path} is not the geography of this release (its sha256 differs "
                         "from the manifest's)")
    values = spec.get("category_values") or {}
    return {"structure_from_data": False, "geography": str(path),
            "category_values": [f"{c}={'|'.join(v)}" for c, v in values.items()],
            "invariant": spec.get("invariants")}


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
                             whole=True if args.whole else None)
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


# ---- parser -----------------------------------------------------------------------------
class _OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``error:`` line and exit status 2."""

    def error(self, message: str):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineErrors(
        prog="hierdp",
        description="Hierarchical counts under differential privacy: consistent, non-negative "
                    "integer releases at every level of a geography.")
    parser.add_argument("--version", action="version", version=f"hierdp {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("mechanisms", help="list the registered mechanisms")
    p.add_argument("--json", action="store_true")
    p.add_argument("--query", choices=("counts", "group-sizes", "flows", "ranges"))
    p.set_defaults(func=cmd_mechanisms)

    p = sub.add_parser("release", help="release counts, group sizes or O/D flows from a CSV / "
                                       "Parquet / Excel table")
    p.add_argument("input")
    p.add_argument("--levels", help="level columns, coarse to fine: state,county (counts and "
                                    "group sizes)")
    p.add_argument("--count-column", help="count column of aggregated rows (default: one row "
                                          "per person)")
    p.add_argument("--categories", help="category columns, e.g. sex,age_group")
    p.add_argument("--names", help="columns of readable unit names, used as release labels: "
                                   "state=state_name,county=county_name")
    p.add_argument("--local-codes", action="store_true",
                   help="codes are unique only within their parent (e.g. 3-digit counties)")
    p.add_argument("--query", default="counts",
                   choices=("counts", "group-sizes", "flows", "ranges"))
    p.add_argument("--attribute", help="ranges: the ordered attribute column, e.g. age")
    p.add_argument("--workload", default="prefix",
                   help="ranges: the public ranges to answer: prefix, all, random, identity, "
                        "bands like 0-17,18-64,65-100, or a CSV file with columns lo,hi")
    p.add_argument("--geography", metavar="FILE",
                   help="the public geography: a CSV/Parquet file with the level columns, "
                        "one row per leaf unit (optional name columns, see --names); every "
                        "unit is released, with or without records (flows: the areas of both "
                        "ends, columns named as the origin or destination levels)")
    p.add_argument("--category-values", action="append", metavar="COL=V1|V2|...",
                   help="the public values of a category column, in release order "
                        "(repeatable; quote it in a shell: 'sex=F|M')")
    p.add_argument("--structure-from-data", action="store_true",
                   help="read the units, categories and domain from the confidential data "
                        "(exploration only: the release is not publishable)")
    p.add_argument("--invariant", action="append", choices=INVARIANTS, metavar="NAME",
                   help="a quantity published exactly (NOT protected), repeatable: total (the "
                        "root count; counts: the root_invariant parameter; flows: the number "
                        "of trips under bounded neighbours; group sizes: the number of "
                        "groups), groups (group sizes: every region's number of groups)")
    p.add_argument("--domain", help="ranges: the public integer domain LO-HI of the "
                                    "attribute, e.g. 0-100 (required with --geography)")
    p.add_argument("--group-column", help="group sizes: the group (household) id of each "
                                          "person record")
    p.add_argument("--size-column", help="group sizes: the size column of size histograms "
                                         "(with --count-column = number of groups)")
    p.add_argument("--max-size", type=int, help="group sizes: public top-code N (sizes 0..N)")
    p.add_argument("--origin-levels", help="flows: origin level columns, coarse to fine: "
                                           "o_state,o_county")
    p.add_argument("--destination-levels", help="flows: destination level columns, same "
                                                "geography: d_state,d_county")
    p.add_argument("--tree", choices=("destination", "origin"),
                   help="flows: refine the destination first (default) or the origin")
    p.add_argument("--mechanism", required=True)
    p.add_argument("--epsilon", type=float)
    p.add_argument("--rho", type=float)
    p.add_argument("--delta", type=float)
    p.add_argument("--split", help="one weight per level, root first: 1,2,4")
    p.add_argument("--split-preset", default="uniform",
                   choices=("uniform", "finer", "coarser", "leaves-only", "geometric"),
                   help="geometric (flows only): more budget to finer O/D levels")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="mechanism parameter, e.g. noise=laplace (repeatable)")
    p.add_argument("--seed", type=_seed, help="seeded noise, for exploration (an integer "
                                               ">= 0; the release is then not publishable)")
    p.add_argument("--secure", action="store_true",
                   help="noise from OS entropy through OpenDP (the default without --seed)")
    p.add_argument("--format", default="csv", help="csv, parquet or csv,parquet")
    p.add_argument("--allow-nonprivate", action="store_true",
                   help="run a mechanism that is not differentially private as published "
                        "(for comparison; the release says it is not publishable)")
    p.add_argument("--key-file", help="the publisher's secret key for the input fingerprint "
                                      "(default ~/.config/hierdp/fingerprint.key, created "
                                      "if absent); never inside the release folder")
    p.add_argument("--duplicates", choices=("sum", "error"), default="sum",
                   help="aggregated rows of the same unit and category: sum them (a note "
                        "says how many) or refuse the input")
    p.add_argument("--max-cells", type=_positive_int, metavar="N",
                   help="refuse a release of more than N cells (units x categories, or "
                        "units x domain values); default: total memory / 64 bytes")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing release in --out whole (written beside it, "
                        "then swapped in one step)")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("evaluate", help="error metrics of a release against the true input "
                                        "(reads confidential data)")
    p.add_argument("input")
    p.add_argument("release_dir")
    p.add_argument("--geography", metavar="FILE",
                   help="the release's geography file (default: the file named in the "
                        "manifest, beside the input or in the current folder)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sample", help="list bundled samples, or write one to a CSV file (and "
                                      "print commands that release it)")
    p.add_argument("name", nargs="?")
    p.add_argument("--out", default="sample.csv")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("audit", help="empirical lower bound on a mechanism's epsilon")
    p.add_argument("--mechanism", required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--trials", type=int,
                   help="trials per side (default 20,000, fewer for a mechanism that declares "
                        "a slow release; stages run on their own get 5 times as many)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--whole", action="store_true",
                   help="composite mechanisms: audit the whole mechanism against the whole "
                        "epsilon too, besides each stage against its share")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, 2), --help and --version (0)
        return int(exc.code or 0)
    try:
        return args.func(args)
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

"""The ``hierdp`` argument parser: its commands and options. Usage errors are one
``error:`` line and exit status 2 (`OneLineErrors`); `hierdp_core.cli.main` runs the command."""

from __future__ import annotations

import argparse
import re
import sys

from hierdp_core import __version__
from hierdp_core.cli import budget
from hierdp_core.defaults import DEFAULT_LEVEL, MAX_REPLICATES, MISSING_POLICIES
from hierdp_core.errors import InputError
from hierdp_core.invariants import INVARIANTS
from hierdp_core.privacy.budget import DELTA_MIN, EPSILON_RANGE, RHO_RANGE
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON

EXIT_BAD_INPUT = 2
KEY_FILE_HELP = ("the publisher's secret key, which keys the input fingerprint and signs the "
                 "manifest (default ~/.config/hierdp/fingerprint.key)")
#: quantities a release may publish exactly, when declared with --invariant


ENCODING_HELP = ("the text encoding of a CSV/TSV input table, e.g. latin-1 or cp1252 (Excel "
                 "on Windows), and of its --geography file unless that one is UTF-8; "
                 "default: UTF-8; a file's byte-order mark always wins")

def _seed(text: str) -> int:
    """A non-negative integer seed (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {value}")
    return value


def _interval_level(text: str) -> float:
    """``--interval``: a confidence level strictly between 0 and 1, or 0.0 for none."""
    if text.strip().lower() == "none":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"wants a level between 0 and 1 (e.g. 0.9) or none, "
                                         f"got {text!r}")
    return value


def _delta_ceiling(text: str) -> float:
    """``--max-delta``: a number from 0 to below 1."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"wants a number from 0 to below 1, got {text!r}")
    return value


def _ceiling(text: str) -> float:
    """``--max-epsilon``: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"wants a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a whole number > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"wants a whole number > 0, got {value}")
    return value


def _memory_size(text: str) -> int:
    """``--max-memory``: a size in bytes such as 4GB, 512MB or 1000000 (argparse type)."""
    from hierdp_core.memory_plan import parse_memory_size

    try:
        return parse_memory_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _with_help(prog: str, message: str) -> str:
    return f"{message} (see {prog} --help)"


def release_usage_error(message: str) -> InputError:
    """A usage error of ``hierdp release`` found once its options are read as settings
    (`hierdp_core.cli.config_file.settings_of_args`): one line as `OneLineErrors` says it,
    exit status 2."""
    return InputError(_with_help("hierdp release", message))


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``error:`` line and exit status 2.
    A word starting with a minus and a digit (``-1,1,1``, ``-.5``, ``-1e-6``) is a value,
    as an option's argument, never an option. A parsed ``release`` holds ``given``: the
    options its command line gave (which win over its ``--config`` file's)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse's own rule takes plain negative numbers only: `--split -1,1,1` was
        # "expected one argument"
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str):
        print(f"error: {_with_help(self.prog, message)}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        if getattr(parsed, "command", None) == "release":
            parsed.given = self._given(args)
        return parsed

    def _given(self, argv) -> set[str]:
        """The destinations of the release options given on the command line."""
        probe = build_parser()
        release = next(a for a in probe._actions
                       if isinstance(a, argparse._SubParsersAction)).choices["release"]
        for action in release._actions:
            action.default = argparse.SUPPRESS
        return set(vars(argparse.ArgumentParser.parse_args(probe, argv)))


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(
        prog="hierdp",
        description="Hierarchical counts under differential privacy: consistent, non-negative "
                    "integer releases at every level of a geography.")
    parser.add_argument("--version", action="version", version=f"hierdp {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("mechanisms", help="list the registered mechanisms")
    p.add_argument("--json", action="store_true")
    p.add_argument("--query", choices=("counts", "group-sizes", "flows", "ranges"))

    p = sub.add_parser("release", help="release counts, group sizes or O/D flows from a CSV / "
                                       "Parquet / Excel table")
    p.add_argument("input", nargs="?", help="the input table (or the configuration's data)")
    p.add_argument("--encoding", help=ENCODING_HELP)
    p.add_argument("--config", metavar="FILE",
                   help="a saved configuration (JSON, hierdp-config/1, as the dashboard "
                        "saves it): data, levels, query, mechanism, parameters, budget, split "
                        "and seed; options given on the command line override it")
    p.add_argument("--save-config", metavar="FILE",
                   help="write the release's settings as a configuration (JSON, "
                        "hierdp-config/1) once it is written, which --config FILE and the "
                        "dashboard read back")
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
    p.add_argument("--workload",
                   help="ranges: the public ranges to answer: prefix (default), all, random, "
                        "identity, bands like 0-17,18-64,65-100, or a CSV file with columns "
                        "lo,hi")
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
                        "groups), category-totals (counts with categories: the root's count "
                        "of every category, which the root_invariant parameter keeps too), "
                        "groups (group sizes: every region's number of groups)")
    p.add_argument("--domain", help="ranges: the public integer domain LO-HI of the "
                                    "attribute, e.g. 0-100 (required with --geography)")
    p.add_argument("--group-column", help="group sizes: the group (household) id of each "
                                          "person record")
    p.add_argument("--size-column", help="group sizes: the size column of size histograms "
                                         "(with --count-column = number of groups)")
    p.add_argument("--max-size", type=int, help="group sizes: public top-code N (larger "
                                                "groups count as N)")
    p.add_argument("--min-size", type=int, metavar="M",
                   help="group sizes: public smallest size m (default 1: a household has a "
                        "member); sizes m..N are released, smaller groups (a declared group "
                        "with no record) count as m; 0 releases size 0 too")
    p.add_argument("--groups", metavar="FILE",
                   help="group sizes: the public number of groups of every leaf region "
                        "(needs --geography): the level columns and 'groups' (one row per "
                        "leaf), or the level columns and 'group' (one row per group id); "
                        "every number of groups published exactly comes from it; without "
                        "it they are counted from the records and a release keeping them "
                        "exactly is not publishable")
    p.add_argument("--origin-levels", help="flows: origin level columns, coarse to fine: "
                                           "o_state,o_county")
    p.add_argument("--destination-levels", help="flows: destination level columns, same "
                                                "geography: d_state,d_county")
    p.add_argument("--tree", choices=("destination", "origin"),
                   help="flows: refine the destination first (default) or the origin")
    p.add_argument("--mechanism")
    p.add_argument("--epsilon", type=float,
                   help=f"the budget under pure (or with --delta approximate) DP, "
                        f"{EPSILON_RANGE[0]:g} to {EPSILON_RANGE[1]:g}")
    p.add_argument("--rho", type=float, help=f"the budget under zCDP, {RHO_RANGE[0]:g} to "
                                             f"{RHO_RANGE[1]:g}")
    p.add_argument("--delta", type=float,
                   help=f"with --epsilon: approximate DP; with --rho: the delta its epsilon "
                        f"is reported at; {DELTA_MIN:g} to 1 (exclusive)")
    p.add_argument("--max-epsilon", type=_ceiling, default=DEFAULT_MAX_EPSILON, metavar="EPS",
                   help="the public ceiling of a publishable release's epsilon (default "
                        f"{DEFAULT_MAX_EPSILON:g}; rho-zCDP: the epsilon it implies at its "
                        "delta, rho + 2 sqrt(rho ln(1/delta)), delta 1e-6 when none is "
                        "given), recorded in the manifest; above it the release is not "
                        "publishable")
    p.add_argument("--max-delta", type=_delta_ceiling, default=DEFAULT_MAX_DELTA,
                   metavar="DELTA",
                   help="the public ceiling of a publishable release's delta, and of the "
                        "deltas a dataset's approximate-DP releases add up to in the budget "
                        f"ledger (default {DEFAULT_MAX_DELTA:g}), recorded in the manifest; "
                        "above it the release is not publishable, and the ledger refuses it")
    p.add_argument("--split", help="one weight per level, root first: 1,2,4")
    p.add_argument("--split-preset", default="uniform",
                   choices=("uniform", "finer", "coarser", "leaves-only", "geometric"),
                   help="geometric (flows only): more budget to finer O/D levels")
    p.add_argument("--split-goal", metavar="GOAL",
                   help="counts: choose the split that minimises GOAL a priori, from the "
                        "tree's shape and the budget only: mse or mae (mean error per cell, "
                        "summed over levels; mse:W0,W1,... weights them, root first) or "
                        "relative:P0,P1,... (the worst level's mean |error| / a public "
                        "population per level, '-' leaves one out)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="mechanism parameter, e.g. noise=laplace (repeatable)")
    p.add_argument("--seed", type=_seed, help="seeded noise, for exploration (an integer "
                                               ">= 0; the release is then not publishable)")
    p.add_argument("--secure", action="store_true",
                   help="noise from OS entropy for a release (the default without --seed)")
    p.add_argument("--noise-backend", choices=("hierdp", "opendp"), default="hierdp",
                   help="who draws secure noise: hierdp's exact vectorised sampler "
                        "(default) or OpenDP's measurements; named in the manifest")
    p.add_argument("--format", help="csv, parquet or csv,parquet (default csv), or "
                                    "parquet-dataset: a Parquet file per top-level unit "
                                    "(the default with --engine dask; flows: parquet)")
    p.add_argument("--engine", choices=("memory", "dask"), default="memory",
                   help="memory (the default): the input read into this process; dask: "
                        "the input a dataset (a folder of CSV or Parquet files, or a glob) "
                        "read and released in parallel on a Dask cluster (counts only)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --engine dask: the address of a running Dask scheduler, "
                        "e.g. tcp://10.0.0.5:8786 (default: a local cluster)")
    p.add_argument("--workers", type=_positive_int, metavar="N",
                   help="with --engine dask and no --scheduler: the local cluster's worker "
                        "processes (default: this machine's cores)")
    p.add_argument("--memory-per-worker", default="auto", metavar="SIZE",
                   help="with --engine dask and no --scheduler: each local worker's memory "
                        "limit, e.g. 4GB (default: the machine's memory / workers)")
    p.add_argument("--interval", type=_interval_level, metavar="LEVEL",
                   help="add columns lower and upper (every query), an interval at this confidence "
                        f"level for every released value (default {DEFAULT_LEVEL}), computed "
                        "from the released values and public parameters only; none omits them")
    p.add_argument("--interval-replicates", type=int, metavar="N",
                   help="bootstrap replicates of the intervals that need them, 2 to "
                        f"{MAX_REPLICATES:,} (default: as many as fit in about 5 s, 20 to 200, "
                        "recorded in the manifest); give N for intervals that are the same on "
                        "every run of a seeded release")
    p.add_argument("--allow-nonprivate", action="store_true",
                   help="run a mechanism that is not differentially private as published "
                        "(for comparison; the release says it is not publishable)")
    p.add_argument("--key-file", help=KEY_FILE_HELP + ", created if absent; never inside "
                                                     "the release folder")
    p.add_argument("--duplicates", choices=("sum", "error"), default="error",
                   help="aggregated rows of the same unit and category (size, value or O/D "
                        "pair): refuse the input, naming the first and its rows (default), "
                        "or sum them (a note says how many)")
    p.add_argument("--wide", metavar="COLS",
                   help="a wide table: its columns COLS (names or patterns such as age_*, "
                        "comma-separated) hold the counts of one category each; they are "
                        "melted into long form, each column counting the declared value "
                        "(--category-values) it names by its name or the part its pattern "
                        "matched, a band being its own value (group sizes and ranges: the "
                        "one number of each, e.g. hh1..hh7, age_0..age_100; bands refused)")
    p.add_argument("--wide-name", metavar="NAME", default="category",
                   help="the column of the --wide columns' names (default category; group "
                        "sizes and ranges: --size-column or --attribute when given); counts: "
                        "declare its values with --category-values NAME=... (the header "
                        "gives them only with --structure-from-data)")
    p.add_argument("--missing", choices=MISSING_POLICIES, default="error",
                   help="empty count cells: refuse the input naming them (error, the "
                        "default), count them as 0 (zero) or leave their rows out (drop)")
    p.add_argument("--ragged", action="store_true",
                   help="units may skip a level: an empty level code means the unit above "
                        "passes through that level as its own child (a city outside any "
                        "county sits in its state, passing through the county level)")
    p.add_argument("--max-cells", type=_positive_int, metavar="N",
                   help="refuse a release of more than N cells (units x categories, or "
                        "units x domain values); default: what the default --max-memory "
                        "holds at the cheapest measured bytes per cell")
    p.add_argument("--max-memory", type=_memory_size, metavar="SIZE",
                   help="refuse, before allocating, a release whose estimated memory "
                        "(cells x the measured bytes per cell of its mechanism, intervals "
                        "included) exceeds SIZE, e.g. 4GB or 512MB; default: half of this "
                        "machine's memory (recorded in the manifest)")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing release in --out whole (written beside it, "
                        "then swapped in one step)")
    budget.add_release_options(p)

    p = sub.add_parser("evaluate", help="error metrics and interval coverage of a release "
                                        "against the true input (reads confidential data): "
                                        "evaluate INPUT RELEASE_DIR, or evaluate RELEASE_DIR "
                                        "--truth INPUT")
    p.add_argument("input", help="the true table (or the release folder with --truth)")
    p.add_argument("release_dir", nargs="?")
    p.add_argument("--truth", metavar="TABLE",
                   help="the true table, the release folder then given alone")
    p.add_argument("--encoding", help=ENCODING_HELP)
    p.add_argument("--geography", metavar="FILE",
                   help="the release's geography file (default: the file named in the "
                        "manifest, beside the input or in the current folder)")
    p.add_argument("--key-file", help=KEY_FILE_HELP + "; the manifest's signature is checked "
                                                     "with it when it exists")
    p.add_argument("--groups", metavar="FILE",
                   help="group sizes: the release's groups file (default: as --geography)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("verify", help="check a release folder: its files against the "
                                      "manifest's sha256, the manifest's checksum and its "
                                      "signature (with the publisher's key, when here)")
    p.add_argument("release_dir")
    p.add_argument("--key-file", help=KEY_FILE_HELP + " (without it here: checksum only)")
    p.add_argument("--checksum-only", action="store_true",
                   help="check the files and the manifest's checksum, not its signature (a "
                        "release signed by another publisher)")

    p = sub.add_parser("sample", help="list bundled samples, or write one to a CSV file (and "
                                      "print commands that release it)")
    p.add_argument("name", nargs="?")
    p.add_argument("--out", default="sample.csv",
                   help="the CSV file to write (e.g. sample.csv) or an existing folder")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the sample's files if they exist (refused without)")

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
    p.add_argument("--secure", action="store_true",
                   help="draw every trial's noise through the secure path a publishable "
                        "release uses (no seed: --seed is ignored and the run cannot be "
                        "repeated draw for draw; the bound needs only the draws)")
    p.add_argument("--json", action="store_true")
    budget.add_command(sub)
    return parser

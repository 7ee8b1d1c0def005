"""One memory estimate per release plan (issue 32): before allocating, a query kind says
how many cells its release will hold and what one cell costs with the chosen mechanism,
and a release whose estimate exceeds the limit (``--max-memory``, by default
`MEMORY_SHARE` of this machine's memory) is refused with a `MemoryLimitError` naming the
parameter that makes it too big and the largest value that would fit.

Cells per query kind (every node of every level):

* counts: nodes x the categories' combinations (the cartesian product of the declared
  or observed values);
* group sizes: nodes (regions) x sizes 0..``--max-size``;
* ranges: nodes (units) x the values of ``--domain``; the mechanisms in `SPARSE_RANGES`
  keep a domain too large to hold sparse (`hierdp_core.memory_sparse.sparse_ranges_plan`:
  units x the intervals released, `hierdp_core.mechanisms.range_sparse`);
* flows: per level of the geography, origin areas x destination areas (areas squared);
  the mechanisms that `mechanisms.base.keeps_flows_sparse` keep that space sparse
  (`hierdp_core.memory_sparse.sparse_flows_plan`: at most
  the trips times the fan-out per level of the O/D tree).

Example
-------
>>> plan = ranges_plan("identity", nodes=3, domain=(0, 100_000_000))
>>> plan.cells
300000003
>>> plan.largest_fit(2 * 2**30) < 100_000_001
True
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hierdp_core.defaults import MAX_REPLICATES
from hierdp_core.errors import InputError, MemoryLimitError, SizeLimitError

#: the default ``--max-memory``: this share of the memory this process may use
#: (`total_memory`: the machine's, or less under ``ulimit -v`` or a cgroup limit)
MEMORY_SHARE = 0.5

#: Peak bytes per release cell, by query kind, measured by
#: `benchmarks/bench_memory_per_cell.py`: each mechanism released through the command line
#: at two sizes (~200k and ~1M cells, default intervals on), the slope of the peak resident
#: memory (``ru_maxrss``) over the cells. It covers the input, the data object, the release
#: and its table of strings (one row per cell), the intervals' bootstrap (capped at 2**24
#: values, at least 20 per cell) and the files written. Measured (bytes per cell): counts
#: raw-laplace 390, raw-geometric 153, raw-discrete-gaussian 157, least-squares 422,
#: topdown 510; ranges h2 354, privelet 344, greedy-h 420, uniform 413, hb 399,
#: partition-laplace 368 (identity and dawa passed the 300 s timeout at 1M cells); group
#: sizes gs-noisy 136, gs-topdown 343, gs-mc-dp 346 (gs-mh-dp passed the timeout at 1M
#: cells, the others not yet measured); flows vanilla-gauss 509. Each kind's constant is
#: its largest measured slope with a margin.
BYTES_PER_CELL = {"counts": 600, "group-sizes": 450, "ranges": 500, "flows": 600}
#: peak bytes per O/D cell a sparse flow mechanism noises: InfTDA's release measured 114
#: (traced peak over the cells noised, 0.37M and 4.1M cells), with room for the positive
#: nodes it writes
SPARSE_FLOW_BYTES_PER_CELL = 250
#: peak bytes per cell of the Dask client that gathers a release: 7.3 GB for the 66.6M
#: cells of the 300M-person release with its bootstrap intervals (docs/scale-out.md), with a margin
DASK_CLIENT_BYTES_PER_CELL = 150

#: the range mechanisms whose `Capabilities` say ``sparse_ranges`` (a test keeps them equal):
#: named here for the refusal of a domain too large before the registry (numpy, 2 s) loads
SPARSE_RANGES = ("partition-laplace",)

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20,
          "mib": 2**20, "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40,
          "tib": 2**40}


def total_memory() -> int:
    """The memory this process may use, in bytes: the machine's total (the OS, else
    psutil; 8 GiB if unknown), or less under an address-space limit (``ulimit -v``,
    RLIMIT_AS) or a cgroup's memory limit (a container)."""
    try:  # POSIX: no import needed (psutil takes a tenth of a second to import)
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        try:
            import psutil

            total = int(psutil.virtual_memory().total)
        except Exception:  # psutil missing or unsupported
            total = 8 * 2**30
    return min([total, *_imposed_limits()])


def _imposed_limits() -> list[int]:
    """The address-space limit of this process and its cgroup's memory limit, when set."""
    limits = []
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(int(soft))
    except (ImportError, OSError, ValueError):  # not a POSIX system
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as cgroup:
            text = cgroup.read().strip()
        if text.isdigit():
            limits.append(int(text))
    except OSError:
        pass
    return limits


def default_max_memory() -> int:
    """The default ``--max-memory``: `MEMORY_SHARE` of `total_memory`."""
    return int(total_memory() * MEMORY_SHARE)


def parse_memory_size(text: str) -> int:
    """'4GB', '512 MB', '1.5g', '1000000' -> bytes (binary units: 1 GB = 2**30 bytes);
    ValueError for anything else or a size that is not positive."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = match and _UNITS.get(match.group(2).lower())
    if not match or unit is None:
        raise ValueError(f"wants a size such as 4GB, 512MB or a number of bytes, got {text!r}")
    size = float(match.group(1)) * unit
    if not math.isfinite(size) or size < 1:
        raise ValueError(f"wants a size of at least 1 byte, got {text!r}")
    return int(size)


def format_bytes(size: float) -> str:
    """Bytes in words: '512 B', '3.2 MB', '19.6 GB' (binary units)."""
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def bytes_per_cell(query: str, sparse_flows: bool = False) -> int:
    """The measured peak bytes per cell of a ``query`` release (the worst of its
    mechanisms), or of a flow mechanism that keeps the O/D space sparse (``sparse_flows``:
    its `Capabilities`, `hierdp_core.mechanisms.base.keeps_flows_sparse`)."""
    return SPARSE_FLOW_BYTES_PER_CELL if sparse_flows else BYTES_PER_CELL[query]


@dataclass(frozen=True)
class MemoryPlan:
    """The cells a release will hold as a function of the one user-given number that
    multiplies them (``parameter``, given as ``value``), and what a cell costs."""

    query: str
    mechanism: str | None
    parameter: str
    value: int
    cells_at: Callable[[int], int]
    #: what the cells are made of, in words
    what: str
    #: the largest value that fits, in words (the parameter's own terms)
    fits: Callable[[int], str]
    #: bytes per cell when not the mechanism's (`bytes_per_cell`)
    per_cell: int = 0
    #: the cells of the dense space a sparse plan does not hold (0: a dense plan), that
    #: space in words (opening a parenthesis the note closes) and how it is held instead
    dense_cells: int = 0
    space: str = ""
    held: str = ""
    #: what would fit instead of the dense space, when the refusal has an alternative
    alternative: str = ""
    #: the cells are a lower bound (the units not yet counted: at least one per level), so
    #: the largest value that fits is an upper bound
    at_least: bool = False

    @property
    def cells(self) -> int:
        return self.cells_at(self.value)

    @property
    def cell_bytes(self) -> int:
        return self.per_cell or bytes_per_cell(self.query)

    @property
    def bytes(self) -> int:
        return self.cells * self.cell_bytes

    def largest_fit(self, limit: int) -> int:
        """The largest value of the parameter (at most ``value``) whose release fits in
        ``limit`` bytes; 0 when none does."""
        lo, hi = 0, self.value
        while lo < hi:  # the cells grow with the value: bisect
            mid = (lo + hi + 1) // 2
            if self.cells_at(mid) * self.cell_bytes <= limit:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def check(self, limit: int | None) -> None:
        """`MemoryLimitError` when the estimate exceeds ``limit`` bytes (None: the
        default, `default_max_memory`)."""
        limit = default_max_memory() if limit is None else int(limit)
        if self.bytes <= limit:
            return
        fit = self.largest_fit(limit)
        hint = (f"{'at most ' if self.at_least else ''}{self.fits(fit)} would fit" if fit > 0
                else f"no {self.parameter} fits: the rest of the release alone is too big")
        who = f" with {self.mechanism}" if self.mechanism else ""
        about = "at least" if self.at_least else "about"
        raise MemoryLimitError(
            f"the release would need {about} {format_bytes(self.bytes)} of memory "
            f"({self.cells:,} cells: {self.what}{who}), above --max-memory "
            f"{format_bytes(limit)}: {self.parameter} is too large; {hint} (or raise "
            f"--max-memory{self.alternative})")


def ranges_plan(mechanism: str | None, nodes: int, domain: tuple[int, int], *,
                at_least: bool = False) -> MemoryPlan:
    """Ranges: ``nodes`` units (``at_least``: or more) x the values of ``domain`` (LO, HI).
    The refusal names the mechanisms that keep the domain sparse (`SPARSE_RANGES`): as
    ``--mechanism`` when a dense one was chosen; as what the command line runs sparse for
    the library's check, made before a mechanism is chosen (the dashboard's data)."""
    lo, hi = domain
    names = " or ".join(SPARSE_RANGES)
    sparse = "" if mechanism in SPARSE_RANGES else \
        f", or --mechanism {names}, which keeps the domain sparse" if mechanism else \
        f", or keep the domain sparse: the command line's --mechanism {names}"
    return MemoryPlan("ranges", mechanism, "--domain", hi - lo + 1, lambda v: nodes * v,
                      f"{_units(nodes, at_least)} x a domain of {hi - lo + 1:,} values",
                      lambda v: f"a domain of {v:,} values ({lo}-{lo + v - 1})",
                      at_least=at_least, alternative=sparse)


def group_sizes_plan(mechanism: str | None, nodes: int, max_size: int, *,
                     at_least: bool = False) -> MemoryPlan:
    """Group sizes: ``nodes`` regions (``at_least``: or more) x the sizes 0..``max_size``."""
    return MemoryPlan("group-sizes", mechanism, "--max-size", max_size,
                      lambda v: nodes * (v + 1),
                      f"{_units(nodes, at_least, 'regions')} x sizes 0..{max_size:,}",
                      lambda v: f"--max-size {v:,}", at_least=at_least)


def counts_plan(mechanism: str | None, nodes: int,
                categories: Mapping[str, int] | None = None,
                parameter: str = "--category-values", *, at_least: bool = False) -> MemoryPlan:
    """Counts: ``nodes`` units (``at_least``: or more) x the cartesian product of the
    ``categories`` (column -> number of values, named by ``parameter``); without categories
    the units are what multiplies."""
    combos = math.prod((categories or {}).values())
    if combos > 1:
        names = " x ".join(f"{k:,} {c}" for c, k in categories.items())
        return MemoryPlan("counts", mechanism, parameter, combos,
                          lambda v: nodes * v,
                          f"{_units(nodes, at_least)} x {names} categories",
                          lambda v: f"{v:,} category combinations", at_least=at_least)
    return MemoryPlan("counts", mechanism, "the geography", nodes, lambda v: v,
                      f"{nodes:,} units", lambda v: f"{v:,} units")


def _units(nodes: int, at_least: bool, what: str = "units") -> str:
    return f"{'at least ' if at_least else ''}{nodes:,} {what}"


def flows_plan(mechanism: str | None, areas: Sequence[int]) -> MemoryPlan:
    """Flows: the areas of each level of the geography, coarse to fine; a level holds
    areas x areas O/D cells, and the finest level is what multiplies."""
    coarse = sum(a * a for a in areas[:-1])
    finest = areas[-1]
    levels = " + ".join(f"{a:,}^2" for a in areas)
    return MemoryPlan("flows", mechanism, "the finest level's areas", finest,
                      lambda v: coarse + v * v, f"O/D pairs {levels}",
                      lambda v: f"{v:,} areas at the finest level")


def wide_plan(rows: int, columns: int, id_columns: int) -> MemoryPlan:
    """Melting ``columns`` wide columns of ``rows`` rows, ``id_columns`` repeated: one long
    row per wide cell holding a reference per id column, the column's code, its value and
    the row's position (8 bytes each), twice at the peak (the pieces, then the frame)."""
    return MemoryPlan("counts", None, "--wide", columns, lambda v: rows * v,
                      f"{rows:,} rows x {columns:,} wide columns melted",
                      lambda v: f"{v:,} wide columns", per_cell=2 * 8 * (id_columns + 3))


def check_replicates(replicates: int | None) -> None:
    """Interval replicates (None: chosen by time) from 2 to `MAX_REPLICATES`, else an
    `InputError` (too few) or a `SizeLimitError` (too many: a guard on time, which no
    ``--max-memory`` lifts) naming ``--interval-replicates``, its range and the value."""
    if replicates is None:
        return
    if replicates < 2:
        raise InputError(f"intervals need at least 2 replicates, got {replicates}")
    if replicates > MAX_REPLICATES:
        raise SizeLimitError(f"--interval-replicates is too large: an interval takes 2 to "
                             f"{MAX_REPLICATES:,} replicates (each a re-run or simulation of "
                             f"the release), got {replicates:,}")


def replicates_plan(values: int, replicates: int, *, at_least: bool = False) -> MemoryPlan:
    """Intervals simulated from ``replicates`` draws of ``values`` released values
    (``at_least``: or more; the least-squares simulation holds them all; the bootstraps at
    most 2**24, in chunks): the draws, their errors, absolute values and ratios (8 bytes
    each)."""
    return MemoryPlan("counts", None, "--interval-replicates", replicates,
                      lambda v: values * v,
                      f"{_units(values, at_least, 'values')} x {replicates:,} interval "
                      "replicates", lambda v: f"--interval-replicates {v:,}", per_cell=4 * 8,
                      at_least=at_least)


def level_sizes(table, *level_sets: Sequence[str]) -> list[int] | None:
    """Per level (coarse to fine), the most distinct paths any of ``level_sets`` has in
    ``table`` (a DataFrame); None when a column is missing."""
    if not level_sets or not all(set(levels) <= set(table.columns) for levels in level_sets):
        return None
    depth = min(len(levels) for levels in level_sets)
    return [max(len(table[list(levels[:i + 1])].drop_duplicates()) for levels in level_sets)
            for i in range(depth)]


def table_nodes(table, levels: Sequence[str]) -> int | None:
    """The units of every level ``table`` holds (the root included); None when a level
    column is missing."""
    sizes = level_sizes(table, levels)
    return None if sizes is None else 1 + sum(sizes)

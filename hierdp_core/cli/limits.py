"""``--max-memory`` of a release's `RunOptions`: the bytes a release may take
(`memory_limit`) and the cells that leaves it (`cells_within_memory`), for the input rules
(`hierdp_core.cli.inputs`) and the memory checks (`hierdp_core.cli.memory`)."""

from __future__ import annotations

from hierdp_core.memory_plan import bytes_per_cell, default_max_memory


def memory_limit(run) -> int:
    """``--max-memory`` (``run.max_memory``) in bytes, else the default (half of this
    machine's memory)."""
    value = run.max_memory
    return int(value) if value is not None else default_max_memory()


def cells_within_memory(cfg, run) -> int:
    """The most cells `memory_limit` holds for the release of ``cfg``."""
    query = cfg.query or "counts"
    sparse_flows = False
    if query == "flows":  # the registry imports numpy: flows only
        from hierdp_core.mechanisms.base import keeps_flows_sparse

        sparse_flows = keeps_flows_sparse(cfg.mechanism or None)
    per_cell = bytes_per_cell(query, sparse_flows)
    return max(1, memory_limit(run) // per_cell) if per_cell else memory_limit(run)

"""Markdown tables for the benchmarks' ``--markdown`` option: the rows of a README table,
printed by the command written beside it, so the README can be checked against a rerun
(tests/test_readme_tables.py)."""

from __future__ import annotations


def table(header: list[str], rows: list[list]) -> str:
    """A GitHub markdown table: the header, the separator, one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def grouped(x: float, decimals: int = 0) -> str:
    """``x`` with thousands separators and ``decimals`` decimals (1234.5 -> '1,234.5')."""
    return f"{x:,.{decimals}f}"

"""The documentation's tables say what the commands printed beside them print today (issue
17, item 5; the tables moved from the README to ``docs/`` in issue 29).

A few cheap tables are re-run here and compared cell by cell with the docs (parsed, not
copied), so drift is caught: benchmark subsets printed with ``--markdown`` (timing columns,
headed ``s / ...``, are skipped), the deterministic numbers quoted for ``bench_counts.py
--county`` and some rows of the command line's error-message table (docs/input-rules.md).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
INPUT_RULES = ROOT / "docs" / "input-rules.md"
BENCH_README = ROOT / "benchmarks" / "README.md"


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_after(path: Path, anchor: str) -> list[list[str]]:
    """The first markdown table after the line containing ``anchor``: header, then rows."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if anchor in line)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return [cells(r) for r in rows if not re.fullmatch(r"\|(-+\|)+", r.replace(" ", ""))]


def bench_markdown(*argv: str) -> list[list[str]]:
    """Run a benchmark with ``--markdown``; its table: header, then rows."""
    out = subprocess.run([sys.executable, *argv, "--markdown"], cwd=ROOT / "benchmarks",
                         capture_output=True, text=True, check=True, timeout=300).stdout
    return [cells(line) for line in out.splitlines()
            if line.startswith("|") and not line.startswith("|---")]


def assert_rows_in_readme(printed: list[list[str]], readme: list[list[str]], key: int) -> None:
    """Every printed row is in the README table (matched on its first ``key`` cells), equal
    in every column but timings."""
    assert printed[0] == readme[0], "the printed header differs from the README's"
    timing = [i for i, h in enumerate(printed[0]) if h.startswith("s /")]
    by_key = {tuple(r[:key]): r for r in readme[1:]}
    for row in printed[1:]:
        assert tuple(row[:key]) in by_key, f"row {row[:key]} missing from the README table"
        theirs = by_key[tuple(row[:key])]
        for i, (mine, readme_cell) in enumerate(zip(row, theirs, strict=True)):
            if i not in timing:
                assert mine == readme_cell, f"{row[:key]}, {printed[0][i]}: printed {mine}, " \
                                            f"README {readme_cell}"


def test_split_optimiser_table_matches_a_rerun():
    printed = bench_markdown("bench_split_optimiser.py", "--samples", "us-counties",
                             "--families", "raw")
    assert len(printed) == 7  # header + 2 definitions x 3 goals
    readme = table_after(BENCH_README, "bench_split_optimiser.py --markdown`")
    assert_rows_in_readme(printed, readme, key=4)


def test_flows_binary6_table_matches_a_rerun():
    printed = bench_markdown("bench_flows.py", "--shape", "binary6",
                             "--mechanisms", "inftda,tda-l2,vanilla-gauss")
    assert len(printed) == 10
    assert_rows_in_readme(printed, table_after(BENCH_README, "**`binary6`**"), key=2)


def message_rows() -> dict[str, tuple[str, int]]:
    """The bad-input table of docs/input-rules.md: input -> (the first message as a regex,
    its exit status)."""
    out = {}
    for what, said in table_after(INPUT_RULES, "Some of these inputs and what they get")[1:]:
        m = re.match(r"`([^`]*)` \((\d)\)", said)
        if m:
            out[what] = (re.escape(m[1]).replace(re.escape("..."), ".*"), int(m[2]))
    return out


@pytest.mark.parametrize(("row", "table", "argv"), [
    ("`--domain 0-1e8` (also on the dashboard)", "state,age,n\nA,3,1\n",
     ["--levels", "state", "--count-column", "n", "--query", "ranges", "--attribute", "age",
      "--domain", "0-1e8", "--mechanism", "identity"]),
    ("counts summing to more than 2^53 - 1 (e.g. two rows of 2^62)",
     f"a,b,n\nA,x,{2**62}\nA,y,{2**62}\n", ["--levels", "a,b", "--count-column", "n",
                                               "--mechanism", "raw-laplace"]),
    ("`--levels county,state` (finest first)", "state,county,n\nA,a1,1\nA,a2,2\nB,b1,3\n",
     ["--levels", "county,state", "--count-column", "n", "--mechanism", "raw-laplace"]),
    ("`--split -1,1,1` (or `--split=-1,1,1`; also `nan`, `inf`)", "a,b,n\nA,x,1\n",
     ["--levels", "a,b", "--count-column", "n", "--mechanism", "raw-laplace", "--split",
      "-1,1,1"]),
    ("`--count-column n` also in `--levels` or `--categories`", "a,n\nA,1\n",
     ["--levels", "a,n", "--count-column", "n", "--mechanism", "raw-laplace"]),
    ("`--wide 'pop_*'` matching no column", "state,age_0,age_1\nA,1,2\n",
     ["--levels", "state", "--wide", "pop_*", "--mechanism", "raw-laplace"]),
    ("empty count cells", "state,county,age_0_4,age_65_\nA,a1,1,3\nA,a2,,5\nB,b1,4,5\nB,b2,,\n",
     ["--levels", "state,county", "--wide", "age_*", "--mechanism", "raw-laplace"]),
    ("an empty level code below the first level", "state,county,n\nA,a1,1\nA,a2,2\nA,,3\nB,,4\nB,,5\n",
     ["--levels", "state,county", "--count-column", "n", "--mechanism", "raw-laplace"]),
    ("a `--wide` column that is also a level, category or name column",
     "state,county,age_0,age_1\nA,a1,1,2\n",
     ["--levels", "state,county", "--wide", "age_*,county", "--mechanism", "raw-laplace"]),
    ("with `--ragged`, an empty code at the first level, or a pass-through that is already a "
     "real unit", "state,county,n\n06,06001,1\n,x,2\n",
     ["--levels", "state,county", "--count-column", "n", "--ragged", "--mechanism",
      "raw-laplace"]),
    ("a `--wide` band column declared as single values (`age_0_19` with "
     "`--category-values category=0`)", "state,age_0_19\nA,1\n",
     ["--levels", "state", "--wide", "age_*", "--category-values", "category=0",
      "--mechanism", "raw-laplace"]),
    ("`--wide` with `--query flows`", "o,d,n\nA,B,1\n",
     ["--query", "flows", "--origin-levels", "o", "--destination-levels", "d",
      "--count-column", "n", "--wide", "n", "--mechanism", "inftda",
      "--invariant", "total", "--delta", "1e-8"]),
])
def test_cli_messages_table_matches_the_cli(capsys, tmp_path, row, table, argv):
    pattern, status = message_rows()[row]
    data = tmp_path / "data.csv"
    data.write_text(table)
    code, _, err = run_cli(capsys, "release", data, *argv, "--structure-from-data",
                           "--epsilon", "1", "--out", tmp_path / "out")
    first = err.strip().splitlines()[0]
    assert code == status and re.fullmatch(pattern, first), (code, first, pattern)


def test_bench_counts_county_numbers_match_a_rerun():
    text = BENCH_README.read_text(encoding="utf-8")
    quoted = re.search(r"bench_counts\.py --county` prints `\"ok\": true`, `\"level_sizes\": "
                       r"\[([\d, ]+)\]` and\s+`\"min_value\": (\d+)`", text)
    assert quoted, "the re-checked bench_counts sentence is gone from benchmarks/README.md"
    out = subprocess.run([sys.executable, "bench_counts.py", "--county", "--repeat", "1",
                          "--no-secure"], cwd=ROOT / "benchmarks", capture_output=True,
                         text=True, check=True, timeout=300).stdout
    printed = json.loads(out)
    assert printed["ok"] is True
    assert printed["level_sizes"] == [int(x) for x in quoted[1].split(",")]
    assert printed["checks"]["release"]["min_value"] == int(quoted[2])

"""A battery of malformed inputs (issue 16), generated with hypothesis: missing or renamed
columns, bad counts (negative, fractional, missing, huge, text), empty and header-only
files, levels that do not nest, blank codes, duplicate rows, odd codes (unicode, '/', '>',
'%', whitespace, leading zeros), wrong encodings, a BOM, ragged quoting, binary files.

Every input goes through the real command line in-process: the exit status is 0 or 2; on 2
stderr is one line and nothing is written; on 0 the release folder is complete and passes
`read_release`. The same inputs through the library raise only `HierdpError` subclasses.
Examples are derandomised and bounded, so the file runs in well under a minute.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierdp_core.cli.main import main
from hierdp_core.data.loaders import read_table
from hierdp_core.errors import HierdpError
from hierdp_core.export import read_release

BATTERY = settings(derandomize=True, max_examples=100, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])

ODD_CODES = ["06", "6", "006", " 06", "A/B", "A", "B/x", "x>y", ">", "/", "%", "%2F", "50%",
             "root", "total", "é", "日本", "a b", "NA", "-", "1e5", "TRUE", "0", "a,b", 'q"q',
             "tab\there", "line\nbreak"]
CODE = st.one_of(st.sampled_from(ODD_CODES),
                 st.text("aZ09/>%é _-.,;\"'", min_size=1, max_size=4))
BAD_COUNTS = [-1, 1.5, float("nan"), 2**63, 2**62, 1e300, "x", "", "1,000", "3.000", " 3 ", "inf",
              "-0", True, "0x10", None]
COUNT = st.one_of(st.integers(0, 50), st.sampled_from(BAD_COUNTS))


@dataclass
class Case:
    """An input file (its name and bytes) and the release flags that read it."""

    name: str
    content: bytes
    flags: list[str]
    geography: bytes | None = None
    defects: list[str] = field(default_factory=list)


# ---- generation ---------------------------------------------------------------------------
#: what may be wrong with a case (one or two of them; "none" keeps the table valid)
TABLE_DEFECTS = ("none", "drop-column", "rename-column", "spaced-column", "bad-count",
                 "bad-age", "huge-counts", "wide-ages", "non-nesting", "blank-code",
                 "duplicate-row", "odd-codes", "path-codes")
FILE_DEFECTS = ("latin-1", "bom", "utf-16", "open-quote", "ragged", "truncated",
                "header-only", "binary", "empty", "nul-byte", "tsv", "parquet")


@st.composite
def tables(draw, defects: list[str]) -> pd.DataFrame:
    """A small counts table (state, county, sex, age, n) with the table ``defects``."""
    odd = "odd-codes" in defects
    states = draw(st.lists(CODE if odd else st.sampled_from(["06", "36", "A"]),
                           min_size=1, max_size=3, unique=True))
    rows = []
    if "path-codes" in defects:  # a/b > c and a > b/c: one path once the codes are joined
        a, b, c = draw(st.lists(st.text("AB%>/", min_size=1, max_size=2), min_size=3,
                                max_size=3))
        sep = draw(st.sampled_from("/>"))
        rows += [{"state": f"{a}{sep}{b}", "county": c, "sex": "F", "age": 1, "n": 2},
                 {"state": a, "county": f"{b}{sep}{c}", "sex": "M", "age": 5, "n": 3}]
    for i in range(draw(st.integers(2, 8))):
        state = draw(st.sampled_from(states))
        county = draw(CODE) if odd and draw(st.booleans()) else f"{state}{i % 3}"
        rows.append({"state": state, "county": county, "sex": draw(st.sampled_from("FM")),
                     "age": draw(st.sampled_from([0, 1, 5, 17, 90])),
                     "n": draw(st.integers(0, 50))})
    table = pd.DataFrame(rows).astype(object)
    row = draw(st.integers(0, len(table) - 1))
    if "bad-count" in defects:
        table.loc[row, "n"] = draw(st.sampled_from(BAD_COUNTS))
    if "bad-age" in defects:
        table.loc[row, "age"] = draw(st.sampled_from(BAD_COUNTS))
    if "huge-counts" in defects:
        table["n"] = draw(st.sampled_from([2**50, 2**52, 2**62, 2**63 - 1]))
    if "wide-ages" in defects:
        table.loc[row, "age"] = draw(st.sampled_from([10**6, 10**12, -(10**15)]))
    if "non-nesting" in defects:
        table = pd.concat([table, table.iloc[[0]].assign(state="Z")], ignore_index=True)
    if "blank-code" in defects:
        table.loc[row, draw(st.sampled_from(["state", "county"]))] = draw(
            st.sampled_from(["", " ", None]))
    if "duplicate-row" in defects:
        table = pd.concat([table, table.iloc[[row]]], ignore_index=True)
    column = draw(st.sampled_from(list(table.columns)))
    if "drop-column" in defects:
        table = table.drop(columns=[column])
    if "rename-column" in defects:
        table = table.rename(columns={column: column.upper()})
    if "spaced-column" in defects:
        table = table.rename(columns={column: f" {column} "})
    return table


def _encode(draw, table: pd.DataFrame, name: str, defects: list[str]) -> bytes:
    """The table as the bytes of a file called ``name``, with the file ``defects``."""
    if name.endswith(".parquet"):
        buffer = io.BytesIO()
        table.astype(str).to_parquet(buffer)
        return buffer.getvalue()
    text = table.to_csv(index=False, sep="\t" if name.endswith(".tsv") else ",")
    encoding = next((e for d, e in (("latin-1", "latin-1"), ("bom", "utf-8-sig"),
                                    ("utf-16", "utf-16")) if d in defects), "utf-8")
    data = text.encode(encoding, errors="replace")
    if "open-quote" in defects:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + b'"' + data[cut:]
    if "ragged" in defects:
        data += b"a,b,c,d,e,f,g,h\n"
    if "truncated" in defects:
        data = data[: draw(st.integers(1, len(data)))]
    if "header-only" in defects:
        data = data.split(b"\n")[0] + b"\n"
    if "nul-byte" in defects:
        data = data.replace(b",", b"\x00", 1)
    if "binary" in defects:
        data = draw(st.binary(min_size=1, max_size=64))
    if "empty" in defects:
        data = b""
    return data


QUERIES = {
    "counts": ["--mechanism", "topdown", "--levels", "state,county", "--count-column", "n"],
    "counts-categories": ["--mechanism", "raw-geometric", "--levels", "state,county",
                          "--categories", "sex", "--count-column", "n"],
    "microdata": ["--mechanism", "least-squares", "--levels", "state"],
    "ranges": ["--query", "ranges", "--mechanism", "identity", "--levels", "state",
               "--attribute", "age", "--count-column", "n"],
    "group-sizes": ["--query", "group-sizes", "--mechanism", "gs-noisy", "--levels", "state",
                    "--size-column", "age", "--count-column", "n", "--max-size", "20"],
    "flows": ["--query", "flows", "--mechanism", "tda-l2", "--invariant", "total",
              "--origin-levels", "state", "--destination-levels", "county", "--delta", "1e-6",
              "--count-column", "n"],
}


@st.composite
def cases(draw) -> Case:
    defects = draw(st.lists(st.sampled_from(TABLE_DEFECTS + FILE_DEFECTS), min_size=1,
                            max_size=2))
    table = draw(tables(defects))
    name = "input" + (".parquet" if "parquet" in defects else
                      ".tsv" if "tsv" in defects else ".csv")
    query = draw(st.sampled_from(list(QUERIES)))
    flags = list(QUERIES[query])
    if query.startswith("counts") and draw(st.booleans()):
        flags += ["--duplicates", "error"]
    geography = None
    if query != "flows" and draw(st.integers(0, 2)) == 0:
        levels = ["state", "county"] if query.startswith("counts") else ["state"]
        present = [c for c in levels if c in table.columns]
        units = table[present].drop_duplicates() if present else pd.DataFrame({"x": [1]})
        if draw(st.booleans()) and len(units) > 1:
            units = units.iloc[1:]  # a unit of the data missing from the geography
        geography = units.to_csv(index=False).encode()
        flags += ["--geography", "GEOGRAPHY"]
        if query == "counts-categories":
            flags += ["--category-values", "sex=F|M"]
        if query == "ranges":
            flags += ["--domain", draw(st.sampled_from(["0-90", "0-10", "5-1"]))]
    else:
        flags.append("--structure-from-data")
    return Case(name, _encode(draw, table, name, defects), flags, geography, defects)


# ---- the command line -----------------------------------------------------------------------
def run_case(case: Case, tmp_path, capsys, tag: str) -> tuple[int, str, object]:
    """Release the case's file with its flags (seeded): (exit status, stderr, --out)."""
    folder = tmp_path / tag
    folder.mkdir()
    path = folder / case.name
    path.write_bytes(case.content)
    flags = list(case.flags)
    if case.geography is not None:
        geography = folder / "geography.csv"
        geography.write_bytes(case.geography)
        flags[flags.index("GEOGRAPHY")] = str(geography)
    out = folder / "release"
    capsys.readouterr()
    code = main(["release", str(path), *flags, "--epsilon", "1", "--seed", "1",
                 "--out", str(out)])
    _, err = capsys.readouterr()
    return code, err, out


def check_outcome(code: int, err: str, out) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        assert not out.exists()
    else:
        assert (out / "manifest.json").is_file()
        table, manifest = read_release(out)
        assert len(table) > 0 and manifest["files"]


def check_evaluate(case: Case, out, capsys) -> None:
    """A release made from a file can be evaluated against it."""
    code = main(["evaluate", str(out.parent / case.name), str(out), "--json"])
    _, err = capsys.readouterr()
    assert code == 0, err


_counter = iter(range(10**9))


@BATTERY
@given(case=cases())
def test_cli_gives_a_release_or_one_error_line(case, tmp_path, capsys):
    code, err, out = run_case(case, tmp_path, capsys, f"c{next(_counter)}")
    check_outcome(code, err, out)
    if code == 0:
        check_evaluate(case, out, capsys)


# ---- the library ---------------------------------------------------------------------------
def _library_release(case: Case) -> None:
    """What the command line does, through the library: read, shape, release."""
    from hierdp_core.flows.data import flow_data_from_table
    from hierdp_core.groupsizes.data import group_size_data_from_histograms
    from hierdp_core.mechanisms.base import get_mechanism
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.samplers import NoiseSource
    from hierdp_core.queries.counts import count_data_from_table
    from hierdp_core.queries.ranges import range_data_from_table

    table = read_table(io.BytesIO(case.content), name=case.name)
    flags = dict(zip(case.flags[::2], case.flags[1::2], strict=False))
    levels = flags.get("--levels", "state").split(",")
    query = flags.get("--query", "counts")
    if query == "flows":
        data = flow_data_from_table(table, ["state"], ["county"], "n")
    elif query == "ranges":
        data = range_data_from_table(table, levels, "age", count_column="n")
    elif query == "group-sizes":
        data = group_size_data_from_histograms(table, levels, "age", "n", max_size=20)
    else:
        data = count_data_from_table(
            table, levels, count_column=flags.get("--count-column"),
            category_columns=[flags["--categories"]] if "--categories" in flags else [],
            duplicates=flags.get("--duplicates", "sum"))
    budget = PrivacyBudget.approx(1.0, 1e-6) if query == "flows" else PrivacyBudget.pure(1.0)
    release = get_mechanism(flags["--mechanism"]).release(data, budget, source=NoiseSource(seed=1))
    frame = release.to_frame()
    key = ["level", "node_id"] + (["category"] if "category" in frame.columns else [])
    assert not frame.duplicated(key).any()  # one row per node (and category)


@BATTERY
@given(case=cases())
def test_library_raises_only_typed_errors(case):
    try:
        _library_release(case)
    except HierdpError:
        pass


# ---- cases found by the battery, kept as examples ----------------------------------------------
@pytest.mark.parametrize("content", [
    b"state,county,n\nA,a,1\nA,b,2\n",
    b"\xef\xbb\xbfstate,county,n\nA/B,x,1\nA,B/x,2\n",
    "state,county,n\nCôte,é,1\n".encode("latin-1"),
    b"state,county,n\n",
    b"",
    b'state,county,n\n"A,a,1\n',
    b"\x89PNG\r\n\x1a\n\x00\x00",
    b"state,county,n\nA,a,-1\n",
    b"state,county,n\nA,a,9223372036854775807\nA,b,1\n",
], ids=["plain", "bom-slashes", "latin-1", "header-only", "empty", "open-quote", "binary",
        "negative", "wraps"])
def test_known_cases(content, tmp_path, capsys):
    case = Case("input.csv", content, [*QUERIES["counts"], "--structure-from-data"])
    code, err, out = run_case(case, tmp_path, capsys, "known")
    check_outcome(code, err, out)
    assert code == (0 if content.startswith((b"state,county,n\nA,a,1", b"\xef\xbb\xbf"))
                    else 2), err
    np.testing.assert_equal(out.exists(), code == 0)


def test_a_warning_does_not_precede_an_error(tmp_path, capsys):
    case = Case("input.csv", b"state,county,n\n1,a,1\n01,b,-1\n",
                [*QUERIES["counts"], "--structure-from-data"])
    code, err, out = run_case(case, tmp_path, capsys, "warned")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err

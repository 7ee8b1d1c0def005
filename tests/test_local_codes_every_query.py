"""Local codes (unique only within their parent: county '001' in every state) are read so
by every query kind, on the command line and on the dashboard's query pages: ranges and
flows ignored ``--local-codes`` (and the Data page's box) and refused the table, telling the
user to use local codes; the pages ignored it over a declared geography too."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import run_cli as run

from hierdp_core.export import read_release

PEOPLE = pd.DataFrame({"state": ["A", "A", "A", "B", "B", "B"],
                       "county": ["001", "001", "002", "001", "002", "002"],
                       "household": ["h1", "h1", "h2", "h3", "h4", "h4"],
                       "age": [3, 40, 7, 65, 30, 31], "n": [2, 1, 4, 3, 5, 1]})
TRIPS = pd.DataFrame({"o_state": ["A", "B", "A"], "o_county": ["001", "001", "002"],
                      "d_state": ["B", "A", "A"], "d_county": ["001", "001", "001"],
                      "n": [3, 2, 4]})
COMMON = ["--structure-from-data", "--seed", "1", "--local-codes"]
RELEASES = {
    "ranges": (PEOPLE, ["--query", "ranges", "--levels", "state,county", "--attribute", "age",
                        "--count-column", "n", "--domain", "0-99", "--mechanism", "h2",
                        "--epsilon", "1"]),
    "ranges kept sparse": (PEOPLE, ["--query", "ranges", "--levels", "state,county",
                                    "--attribute", "age", "--count-column", "n",
                                    "--domain", "0-99999999", "--mechanism", "partition-laplace",
                                    "--interval", "none", "--epsilon", "1"]),
    "group sizes": (PEOPLE, ["--query", "group-sizes", "--levels", "state,county",
                             "--group-column", "household", "--max-size", "4",
                             "--mechanism", "gs-topdown", "--invariant", "total",
                             "--epsilon", "1"]),
}


@pytest.mark.parametrize("kind", RELEASES)
def test_every_query_reads_local_codes_on_the_command_line(capsys, tmp_path, kind):
    table, argv = RELEASES[kind]
    table.to_csv(tmp_path / "t.csv", index=False)
    code, _, err = run(capsys, "release", tmp_path / "t.csv", *argv, *COMMON,
                       "--out", tmp_path / "r")
    assert code == 0, err
    ids = set(read_release(tmp_path / "r")[0]["node_id"])
    assert {"A/001", "B/001", "B/002"} <= ids, sorted(ids)


FLOWS = ["--query", "flows", "--origin-levels", "o_state,o_county",
         "--destination-levels", "d_state,d_county",
         "--count-column", "n", "--mechanism", "inftda", "--invariant", "total", "--rho", "1",
         "--seed", "1"]
REFUSED = ("flows need area codes unique within each level, and code '001' of 'county' names "
           "areas of two parents (local codes)")


def test_flows_refuse_local_codes_that_repeat_naming_one(capsys, tmp_path):
    """A released pair is named by its areas' codes ('001>001'), which local codes would
    leave ambiguous: refused in one line, read from the table or a declared geography."""
    TRIPS.to_csv(tmp_path / "t.csv", index=False)
    argv = ["release", tmp_path / "t.csv", *FLOWS, "--local-codes", "--out", tmp_path / "r"]
    code, _, err = run(capsys, *argv, "--structure-from-data")
    assert code == 2 and err.count("\n") == 1 and REFUSED in err, err
    pd.DataFrame({"state": ["A", "A", "B"], "county": ["001", "002", "001"]}).to_csv(
        tmp_path / "g.csv", index=False)
    code, _, err = run(capsys, *argv, "--geography", tmp_path / "g.csv")
    assert code == 2 and err.count("\n") == 1 and REFUSED in err, err
    unique = TRIPS.assign(o_county=TRIPS["o_state"] + TRIPS["o_county"],
                          d_county=TRIPS["d_state"] + TRIPS["d_county"])
    unique.to_csv(tmp_path / "t.csv", index=False)
    code, _, err = run(capsys, *argv, "--structure-from-data")
    assert code == 0, err  # unique codes: local codes change nothing


def _page_with_local_codes(page_file: str, prefix: str, table, levels):
    from test_app import assert_clean, on_upload, page, uploaded

    from hierdp_core.ui import session

    at = on_upload(uploaded(page(page_file), table, levels), prefix)
    at.session_state[session.ROLES] = {**at.session_state[session.ROLES], "local_codes": True}
    at.run()
    return at, assert_clean


def test_the_query_pages_read_the_data_pages_local_codes():
    from test_app import use_guess

    at, clean = _page_with_local_codes("pages/7_Group_sizes.py", "gs", PEOPLE,
                                       ["state", "county"])
    at.selectbox(key="gs_up_group").select("household").run()
    clean(at)
    _, data = at.session_state["hd_src_cache"]["gs"]
    assert {"A/001", "B/001"} <= set(data.hierarchy.node_ids())
    [region] = [w for w in at.selectbox if w.key.startswith("gs_region")]  # not 001 twice
    assert region.options == ["A/001", "A/002", "B/001", "B/002"]
    at, clean = _page_with_local_codes("pages/9_Ranges.py", "rg", PEOPLE, ["state", "county"])
    at.selectbox(key="rg_up_attribute").select("age").run()
    at.selectbox(key="rg_up_count").select("n").run()
    clean(at)
    _, data = at.session_state["hd_src_cache"]["rg"]
    assert {"A/001", "B/001"} <= set(data.hierarchy.node_ids())
    at, clean = _page_with_local_codes("pages/8_Flows.py", "fl", TRIPS, [])
    use_guess(at, "fl")
    assert not at.exception
    assert any("names areas of two parents" in e.value for e in at.error)

"""The dashboard's downloads verify (AppTest): the manifest offered on Export lists the
sha256 of the CSV and Parquet offered beside it under their download names, so the three
files saved into one folder pass ``hierdp verify`` (and ``--checksum-only``), and a value
edited in the CSV is caught."""

from __future__ import annotations

import json

from conftest import run_cli
from test_app import assert_clean
from test_app_verdict import least_squares_results


def test_export_downloads_saved_together_verify(monkeypatch, tmp_path, capsys):
    at, contents = least_squares_results(monkeypatch, "zcdp")
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    manifest = json.loads(contents["ex_dl_manifest"])
    assert manifest["input"]["fingerprint"] is None
    names = dict(zip(("csv", "parquet"), manifest["files"], strict=True))
    assert names["csv"].endswith("_release.csv") and names["parquet"].endswith(
        "_release.parquet")
    (tmp_path / names["csv"]).write_bytes(contents["ex_dl_csv"])
    (tmp_path / names["parquet"]).write_bytes(contents["ex_dl_parquet"])
    (tmp_path / names["csv"].replace("_release.csv", "_manifest.json")).write_bytes(
        contents["ex_dl_manifest"])
    for extra in ((), ("--checksum-only",)):
        code, out, err = run_cli(capsys, "verify", tmp_path, *extra)
        assert code == 0 and out.startswith("verified: 2 file(s)"), err
    lines = contents["ex_dl_csv"].decode().splitlines()
    cells = lines[1].split(",")
    cells[-3] = str(float(cells[-3]) + 1)  # the first row's value
    (tmp_path / names["csv"]).write_text("\n".join([lines[0], ",".join(cells), *lines[2:]])
                                         + "\n")
    code, _, err = run_cli(capsys, "verify", tmp_path, "--checksum-only")
    assert code == 2 and "does not match the sha256 in the manifest" in err

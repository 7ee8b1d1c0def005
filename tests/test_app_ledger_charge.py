"""The dashboard's secure draws and the budget ledger (AppTest): the Results page's secure
noise is a preview (charged to nothing, shown beside the truth: not publishable), and
Export offers the publishable release, counted in the ledger and marked with its entry,
for it as for a seeded release."""

from __future__ import annotations

import json

from test_app import assert_clean
from test_app_verdict import export_secure_draw, least_squares_results, warnings_text

from hierdp_core.privacy.ledger import Ledger
from hierdp_core.ui import config as config_ui
from hierdp_core.ui import release as rel
from hierdp_core.ui import session
from hierdp_core.verdict import LEDGER_ENTRY

SAMPLE = "us-counties"


def test_a_secure_draw_on_results_is_a_preview_and_export_draws_the_charged_one(monkeypatch):
    at, contents = least_squares_results(monkeypatch, "pure-dp")
    at.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.SECURE,
                                              config_ui.SEED: 0}
    at.run()
    assert_clean(at)
    preview = at.session_state[session.RELEASE]
    assert preview.randomness["mode"] == "secure" and LEDGER_ENTRY not in preview.randomness
    assert "Not publishable as it is" in warnings_text(at)
    assert "not charged to a budget ledger" in warnings_text(at)
    at.button(key="run_release").click().run()  # another preview: still nothing charged
    assert Ledger().datasets() == []

    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert not any("Publishable as it is" in s.value for s in at.success)
    assert json.loads(contents["ex_dl_manifest"])["publishable"] is False
    assert any(b.key == "ex_secure" for b in at.button)  # offered as for a seeded release
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert any("Publishable as it is" in s.value for s in at.success)
    _, drawn = at.session_state[rel.PUBLISHABLE]["ex"]
    [dataset] = Ledger().datasets()
    [spend] = dataset.spends
    assert drawn.randomness[LEDGER_ENTRY] == spend.release_id
    manifest = json.loads(contents["ex_pub_dl_manifest"])
    assert manifest["publishable"] is True
    assert manifest["randomness"][LEDGER_ENTRY] == spend.release_id


def test_a_draw_on_export_and_the_command_line_on_the_same_sample_share_one_budget(
        monkeypatch, tmp_path, capsys):
    """The dashboard keys the sample by its counts, as ``hierdp release`` keys the file
    ``hierdp sample`` writes: the command line's release after a dashboard draw is the
    second of one dataset (refused until a total is declared)."""
    from conftest import run_cli

    _, contents = export_secure_draw(monkeypatch)
    config = json.loads(contents["cfg_save"])
    assert config["data"] == {"sample": SAMPLE}
    (tmp_path / "config.json").write_text(json.dumps({**config, "seed": None}))
    table = tmp_path / f"{SAMPLE}.csv"
    assert run_cli(capsys, "sample", SAMPLE, "--out", table)[0] == 0
    code, _, err = run_cli(capsys, "release", table, "--config", tmp_path / "config.json",
                           "--interval", "none", "--out", tmp_path / "r")
    assert code == 2 and "budget total is not declared" in err, err
    [dataset] = Ledger().datasets()
    assert len(dataset.spends) == 1

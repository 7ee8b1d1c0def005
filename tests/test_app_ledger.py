"""The budget across releases on the Export page (AppTest): the running total of the
dataset beside "Draw the publishable release", a confirmation before a second draw, a
friendly refusal beyond the total, the declaration of the total, and every draw recorded in
the ledger the command line reads."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_app import assert_clean, page

from hierdp_core.intervals import bootstrap
from hierdp_core.privacy.ledger import COMMITTED, Ledger
from hierdp_core.ui import release as rel
from hierdp_core.ui import session
from hierdp_core.verdict import LEDGER_ENTRY

SAMPLE = "us-counties"


def captions(at) -> str:
    return " | ".join(c.value for c in at.caption)


def export_page():
    """The Export page on the sample, least squares (intervals in closed form), ε 1."""
    at = page("pages/4_Results.py", SAMPLE)
    at.session_state[session.SETTINGS] = {
        "mechanism": "least-squares", "params": {}, "definition": "pure-dp", "epsilon": 1.0,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    return at


def spends():
    datasets = Ledger().datasets()
    return [] if not datasets else list(datasets[0].spends)


def test_a_second_publishable_draw_asks_first_and_none_goes_beyond_the_total():
    at = export_page()
    assert "no publishable release of this dataset yet. This draw spends ε 1; with no " \
           "total declared, it becomes the dataset's total" in captions(at)
    assert not at.button(key="ex_secure").disabled and spends() == []
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    first = spends()
    assert [(s.charge, s.status) for s in first] == [(1.0, COMMITTED)]
    assert first[0].destination.startswith("dashboard (ex downloads, release ")

    # a second draw: the implicit total (the first draw's ε) is spent: refused, kindly
    assert "1 publishable release(s) have spent ε 1 of 1 (not declared" in captions(at)
    assert at.button(key="ex_secure").disabled
    assert [i.value for i in at.info] == [
        "Another publishable draw would spend ε 1, more than the 0 left of this dataset's "
        "total 1. Publish the release already drawn, or declare a larger total below if your "
        "data protection plan allows it."]

    at.number_input(key="ex_budget_total").set_value(2.5).run()
    at.button(key="ex_budget_declare").click().run()
    assert_clean(at)
    confirm = at.checkbox(key="ex_budget_confirm_1")
    assert confirm.label == ("Draw again: this spends another ε 1, a total of 2 of 2.5 on "
                             "this dataset") and confirm.value is False
    assert at.button(key="ex_secure").disabled  # not before it is confirmed
    confirm.check().run()
    assert not at.button(key="ex_secure").disabled
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert [s.charge for s in spends()] == [1.0, 1.0]
    assert "have spent ε 2 of 2.5, 0.5 left; the latest by " in captions(at)
    assert " on the Export page, " in captions(at)  # which draw: another page's may have
    assert at.button(key="ex_secure").disabled
    assert "more than the 0.5 left of this dataset's total 2.5" in at.info[0].value

    # the declared total changes only when asked to
    at.number_input(key="ex_budget_total").set_value(4.0).run()
    assert at.button(key="ex_budget_declare").disabled
    at.checkbox(key="ex_budget_change").check().run()
    at.button(key="ex_budget_declare").click().run()
    assert Ledger().datasets()[0].total == 4.0
    third = at.checkbox(key="ex_budget_confirm_2")  # a third draw asks again
    assert third.value is False and third.label.endswith("a total of 3 of 4 on this dataset")
    assert at.button(key="ex_secure").disabled


def test_exploration_spends_nothing_and_a_first_draw_beyond_the_total_is_not_offered():
    at = export_page()
    assert at.session_state[session.RELEASE].randomness["mode"] == "exploration"
    assert spends() == []  # the seeded exploration release is not counted
    at.number_input(key="ex_budget_total").set_value(0.5).run()
    at.button(key="ex_budget_declare").click().run()
    assert_clean(at)
    assert "This draw spends ε 1 of the declared total 0.5." in captions(at)
    assert at.button(key="ex_secure").disabled
    assert "more than the 0.5 left of this dataset's total 0.5" in at.info[0].value
    assert Ledger().datasets()[0].spends == ()


def test_a_query_page_counts_its_draws_in_the_ledger_of_its_sample(monkeypatch):
    # the secure draw makes its intervals by a re-run bootstrap (DAWA: ~20 s of re-runs);
    # what is checked here is the ledger, so two replicates do
    monkeypatch.setattr(bootstrap, "MIN_REPLICATES", 2)
    monkeypatch.setattr(bootstrap, "RERUN_SECONDS", 0.0)
    at = page("pages/9_Ranges.py").run()
    assert_clean(at)
    assert "no publishable release of this dataset yet" in captions(at)
    at.button(key="rg_secure").click().run()
    assert_clean(at)
    (dataset,) = Ledger().datasets()
    assert dataset.label == "bundled sample italy-municipalities" and len(dataset.spends) == 1
    assert dataset.spends[0].destination.startswith("dashboard (rg downloads, release ")
    _, drawn = at.session_state[rel.PUBLISHABLE]["rg"]  # marked with its entry: publishable
    assert drawn.randomness[LEDGER_ENTRY] == dataset.spends[0].release_id
    assert any("Publishable as it is" in s.value for s in at.success)
    assert at.button(key="rg_secure").disabled  # its implicit total is spent
    assert any("Another publishable draw would spend ε 1" in i.value for i in at.info)


@pytest.mark.parametrize(("name", "page_path", "button"), [
    ("us-flights", "pages/8_Flows.py", "fl_secure"),
    ("us-households", "pages/7_Group_sizes.py", "gs_secure")])
def test_a_query_page_and_the_command_line_share_one_budget(capsys, tmp_path, monkeypatch,
                                                          name, page_path, button):
    """The sample released as `hierdp sample` prints it, then its page: one dataset (keyed
    by the data's content on both), so the page sees the budget spent and offers no draw.
    A new user spent epsilon 1 on each side and `hierdp budget` listed two datasets."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "sample", name, "--out", f"{name}.csv")
    assert code == 0, err
    command = out.splitlines()[-1].split()[2:]  # hierdp release ARGS
    code, out, err = run_cli(capsys, "release", *command, "--interval", "none")
    assert code == 0 and "has spent 1 of 1" in out, err
    at = page(page_path).run()
    assert_clean(at)
    assert "1 publishable release(s) have spent ε 1 of 1" in captions(at)
    assert "the latest by" in captions(at) and "on the command line (" in captions(at)
    assert at.button(key=button).disabled
    (dataset,) = Ledger().datasets()
    assert len(dataset.spends) == 1

"""No publishable verdict without a budget charge, and a public ceiling on delta.

A secure release is publishable only when the path that drew it reserved its budget in the
dataset's ledger first and marked it with that entry (``hierdp release``,
``hierdp_core.release(..., out=...)``, the dashboard's "Draw the publishable release");
secure noise drawn outside the ledger (``Mechanism.release`` called directly, the
reproduce script) could be redrawn and picked, so it is not. A delta above the public
ceiling (``--max-delta``) is not publishable, and the ledger refuses a dataset's deltas
adding up above it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli as run
from ledger_marks import charged_in_ledger

import hierdp_core
from hierdp_core.config import FORMAT, config_from_dict
from hierdp_core.errors import BudgetError
from hierdp_core.export import read_release, write_release
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget, epsilon_delta_to_rho
from hierdp_core.privacy.ledger import Ledger
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.reproduce import release_from_config, release_script
from hierdp_core.structure import geography_from_table
from hierdp_core.verdict import (
    DEFAULT_MAX_DELTA,
    LEDGER_ENTRY,
    NOT_CHARGED,
    OVER_DELTA,
    ledger_mark_problem,
    release_verdict,
    short_reason_tag,
    verdict,
)

COUNTS = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"],
                       "count": [1203, 877, 40]})


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    COUNTS.to_csv(tmp_path / "people.csv", index=False)
    COUNTS[["state", "county"]].to_csv(tmp_path / "geography.csv", index=False)
    return tmp_path / "people.csv", tmp_path / "geography.csv"


def cli_release(capsys, files, out, *extra):
    people, geography = files
    return run(capsys, "release", people, "--levels", "state,county", "--count-column",
               "count", "--geography", geography, "--mechanism", "topdown", "--interval",
               "none", "--out", out, *extra)


def only_spends() -> list:
    [dataset] = Ledger().datasets()
    return list(dataset.spends)


# ---- A: the charge is a condition of the verdict -----------------------------------------
def test_the_library_s_secure_draw_is_not_publishable_and_never_in_the_ledger(tmp_path):
    geography = geography_from_table(COUNTS[["state", "county"]], ["state", "county"])
    data = count_data_from_table(COUNTS, ["state", "county"], count_column="count",
                                 geography=geography)
    release = get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0))
    assert release.randomness["mode"] == "secure" and LEDGER_ENTRY not in release.randomness
    write_release(release, tmp_path / "r", structure_declared=data.declared_structure)
    _, manifest = read_release(tmp_path / "r")
    assert manifest["publishable"] is False
    assert manifest["not_publishable_because"] == [NOT_CHARGED]
    assert short_reason_tag(manifest) == "NOT-PUBLISHABLE_not-charged"
    assert Ledger().datasets() == []


def test_a_seeded_release_says_seeded_not_uncharged():
    result = verdict(randomness={"mode": "exploration", "seed": 3}, mechanism_private=True,
                     mechanism_name="topdown", structure_declared=True)
    assert NOT_CHARGED not in result["not_publishable_because"]


def test_the_command_line_marks_its_release_with_its_ledger_entry(capsys, files, tmp_path):
    code, out, _ = cli_release(capsys, files, tmp_path / "r", "--epsilon", "1")
    assert code == 0 and "publishable: yes (secure noise charged to the budget ledger" in out
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    [spend] = only_spends()
    assert manifest["randomness"][LEDGER_ENTRY] == spend.release_id
    assert f"release id {spend.release_id}" in out
    assert manifest["publishable"] is True


def test_the_python_api_marks_its_release_with_its_ledger_entry(files, tmp_path):
    people, geography = files
    made = hierdp_core.release(people, levels=["state", "county"], count_column="count",
                               geography=geography, out=tmp_path / "r")
    [spend] = only_spends()
    assert made.manifest["publishable"] is True
    assert made.release.randomness[LEDGER_ENTRY] == spend.release_id
    _, written = read_release(tmp_path / "r")
    assert written["randomness"][LEDGER_ENTRY] == spend.release_id


def test_the_reproduce_script_s_secure_draw_is_not_publishable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = config_from_dict({"format": FORMAT, "data": {"file": "people.csv",
                                                       "geography": "geography.csv"},
                            "mechanism": "topdown", "epsilon": 1, "seed": None,
                            "levels": ["state", "county"], "count_column": "count",
                            "structure": "declared"})
    COUNTS.to_csv("people.csv", index=False)
    COUNTS[["state", "county"]].to_csv("geography.csv", index=False)
    release = release_from_config(cfg)
    assert release.randomness["mode"] == "secure"
    result = release_verdict(release, structure_declared=True)
    assert result["not_publishable_because"] == [NOT_CHARGED]
    assert Ledger().datasets() == []
    script = " ".join(release_script(cfg).split())
    assert "charged to no budget, so not publishable" in script
    assert "as publishable as the original" not in script


def test_a_charged_mark_survives_intervals():
    geography = geography_from_table(COUNTS[["state", "county"]], ["state", "county"])
    data = count_data_from_table(COUNTS, ["state", "county"], count_column="count",
                                 geography=geography)
    release = get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(secure=True))
    from hierdp_core.intervals import with_intervals

    charged = charged_in_ledger(release)
    marked = with_intervals(charged, 0.9, None)
    assert marked.randomness[LEDGER_ENTRY] == charged.randomness[LEDGER_ENTRY]
    assert release_verdict(marked, structure_declared=True)["publishable"] is True


def test_a_mark_set_by_hand_is_no_charge():
    """A library user marking a secure release as charged without reserving its budget
    (an id of their own) or with an entry of a smaller budget: not publishable, the reason
    naming the entry."""
    geography = geography_from_table(COUNTS[["state", "county"]], ["state", "county"])
    data = count_data_from_table(COUNTS, ["state", "county"], count_column="count",
                                 geography=geography)
    release = get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                               source=NoiseSource(secure=True))
    faked = release_verdict(release.charged("ab12"), structure_declared=True)
    assert faked["publishable"] is False
    assert "'ab12' is not in the budget ledger" in " ".join(faked["not_publishable_because"])
    smaller = Ledger().reserve("another", PrivacyBudget.pure(0.5), label="another",
                               destination="test", mechanism="topdown")
    short = release_verdict(release.charged(smaller.release_id), structure_declared=True)
    assert short["publishable"] is False
    assert "does not cover the release's pure-dp 1.0" in " ".join(
        short["not_publishable_because"])
    assert release_verdict(charged_in_ledger(release), structure_declared=True)["publishable"]


@pytest.mark.parametrize(("charged", "privacy", "covered"), [
    # an (epsilon, delta) request drawn under rho-zCDP (the flows): the rho it was given
    (PrivacyBudget.approx(1.0, 1e-8), {"definition": "zcdp", "delta": 1e-8,
                                       "rho": epsilon_delta_to_rho(1.0, 1e-8)}, True),
    (PrivacyBudget.approx(1.0, 1e-8), {"definition": "zcdp", "delta": 1e-8,
                                       "rho": 1.1 * epsilon_delta_to_rho(1.0, 1e-8)}, False),
    # a rho-zCDP release is epsilon-DP for no epsilon: a pure charge never covers it
    (PrivacyBudget.pure(1.0), {"definition": "zcdp", "rho": 0.5}, False),
    (PrivacyBudget.approx(1.0, 1e-8), {"definition": "zcdp", "delta": 1e-8, "rho": 0.0},
     False),
    (PrivacyBudget.zcdp(0.5), {"definition": "pure-dp", "epsilon": 1.0}, True),
    (PrivacyBudget.approx(1.0, 1e-6), {"definition": "approx-dp", "epsilon": 1.0,
                                       "delta": 1e-5}, False),
    (PrivacyBudget.approx(1.0, 1e-6), {"definition": "pure-dp", "epsilon": 1.0}, True),
    (PrivacyBudget.pure(1.0), {"definition": "approx-dp", "epsilon": 0.5, "delta": 1e-9},
     False),
])
def test_a_ledger_entry_covers_a_release_through_the_conversions(charged, privacy, covered):
    spend = Ledger().reserve("conversions", charged, label="conversions",
                             destination="test", mechanism="topdown")
    problem = ledger_mark_problem({"mode": "secure", LEDGER_ENTRY: spend.release_id},
                                  privacy)
    assert (problem is None) == covered
    if not covered:  # the files say why: not charged
        assert short_reason_tag({"publishable": False, "not_publishable_because": [problem]}
                                ) == "NOT-PUBLISHABLE_not-charged"


# ---- B: a public ceiling on delta --------------------------------------------------------
@pytest.mark.parametrize(("privacy", "publishable"), [
    ({"definition": "zcdp", "rho": 0.5, "delta": 0.9}, False),  # epsilon 1.8 at delta 0.9
    ({"definition": "zcdp", "rho": 0.5, "delta": DEFAULT_MAX_DELTA}, True),
    ({"definition": "zcdp", "rho": 0.5}, True),  # at the reference delta 1e-6
    ({"definition": "approx-dp", "epsilon": 1.0, "delta": 0.99}, False),
    ({"definition": "approx-dp", "epsilon": 1.0, "delta": 2 * DEFAULT_MAX_DELTA}, False),
    ({"definition": "approx-dp", "epsilon": 1.0, "delta": 1e-8}, True),
    ({"definition": "pure-dp", "epsilon": 1.0}, True),
])
def test_a_delta_above_the_ceiling_is_not_publishable(privacy, publishable):
    result = verdict(randomness={"mode": "secure", LEDGER_ENTRY: "e1"},
                     mechanism_private=True, mechanism_name="topdown",
                     structure_declared=True, privacy=privacy)
    assert result["publishable"] is publishable
    assert result["delta_ceiling"]["max_delta"] == DEFAULT_MAX_DELTA
    if not publishable:
        [reason] = result["not_publishable_because"]
        assert reason.startswith(OVER_DELTA) and f"{privacy['delta']:.4g}" in reason
        assert short_reason_tag(result) == "NOT-PUBLISHABLE_over-delta-ceiling"


def test_the_command_line_s_rho_with_a_large_delta_is_refused_before_any_charge(
        capsys, files, tmp_path):
    code, out, err = cli_release(capsys, files, tmp_path / "r", "--rho", "0.5", "--delta",
                                 "0.9", "--budget-total", "1")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "delta is above the public ceiling: delta 0.9 > 1e-05" in err
    assert "nothing was charged or drawn" in err and not (tmp_path / "r").exists()
    assert Ledger().datasets() == []
    code, out, _ = cli_release(capsys, files, tmp_path / "r1", "--rho", "0.5", "--delta",
                               "0.9", "--seed", "1")  # seeded: spends nothing, says why
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert code == 0 and "delta is above the public ceiling" in out
    assert manifest["delta_ceiling"] == {"max_delta": DEFAULT_MAX_DELTA, "delta": 0.9,
                                         "within": False}
    code, out, _ = cli_release(capsys, files, tmp_path / "r2", "--rho", "0.5", "--delta",
                               "0.9", "--max-delta", "0.95")  # raised on purpose: recorded
    manifest = json.loads((tmp_path / "r2" / "manifest.json").read_text())
    assert code == 0 and manifest["publishable"] is True
    assert manifest["delta_ceiling"]["max_delta"] == 0.95


def test_the_ledger_refuses_deltas_adding_up_above_the_ceiling(capsys, files, tmp_path):
    gaussian = ("--param", "noise=gaussian")  # spends its delta (geometric noise has none)
    first = ("--epsilon", "1", "--delta", "6e-6", "--budget-total", "4", *gaussian)
    assert cli_release(capsys, files, tmp_path / "r1", *first)[0] == 0
    code, out, err = cli_release(capsys, files, tmp_path / "r2", "--epsilon", "1",
                                 "--delta", "6e-6", *gaussian)
    assert code == 2 and out == "" and not (tmp_path / "r2").exists()
    assert "delta 6e-06 would take the deltas of people.csv's releases above the public " \
           "ceiling 1e-05 (people.csv has spent delta 6e-06" in err
    assert len(only_spends()) == 1
    assert cli_release(capsys, files, tmp_path / "r2", "--epsilon", "1", "--delta",
                       "4e-6", *gaussian)[0] == 0
    code, _, err = cli_release(capsys, files, tmp_path / "r3", "--epsilon", "1", "--delta",
                               "0.99", *gaussian)
    assert code == 2 and "above the public ceiling" in err


def test_a_delta_that_pure_noise_does_not_spend_is_refused(capsys, files, tmp_path):
    """topdown --epsilon 1 --delta 1e-6 (geometric noise, pure epsilon-DP) recorded delta
    in a pure-dp manifest and charged it to the ledger, using up the dataset's delta
    allowance for nothing: one line says --delta does not apply, nothing charged; Gaussian
    noise spends it."""
    for param, noise in (("noise=auto", "geometric"), ("noise=laplace", "laplace")):
        code, out, err = cli_release(capsys, files, tmp_path / "r", "--epsilon", "1",
                                     "--delta", "1e-6", "--param", param)
        assert (code, out) == (2, "") and err == (
            f"error: topdown with {noise} noise is pure ε-DP: --delta does not apply; drop "
            "it\n")
        assert not (tmp_path / "r").exists() and Ledger().datasets() == []
    code, _, err = cli_release(capsys, files, tmp_path / "r", "--epsilon", "1", "--delta",
                               "1e-6", "--param", "noise=gaussian")
    assert code == 0, err
    assert [spend.delta for spend in only_spends()] == [1e-6]


def test_the_ledger_counts_no_delta_of_zcdp_or_pure_releases(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare_total("cd" * 32, 10.0, unit="epsilon", label="t")
    ledger.reserve("cd" * 32, PrivacyBudget.pure(1.0), label="t", destination="o",
                   mechanism="topdown")
    with pytest.raises(BudgetError, match="above the public ceiling 1e-05"):
        ledger.reserve("cd" * 32, PrivacyBudget.approx(1.0, 2e-5), label="t",
                       destination="o", mechanism="topdown")
    ledger.reserve("cd" * 32, PrivacyBudget.approx(1.0, 2e-5), label="t", destination="o",
                   mechanism="topdown", max_delta=1e-4)  # a ceiling raised on purpose
    assert ledger.status("cd" * 32).delta_spent == pytest.approx(2e-5)


def test_a_zcdp_release_without_delta_is_held_to_the_ceiling_at_its_reference_delta():
    """Its epsilon is stated at `REFERENCE_DELTA` (1e-6): a ceiling below that is not met."""
    result = verdict(randomness={"mode": "secure", LEDGER_ENTRY: "e1"},
                     mechanism_private=True, mechanism_name="topdown",
                     structure_declared=True, privacy={"definition": "zcdp", "rho": 0.5},
                     max_delta=1e-7)
    assert result["delta_ceiling"] == {"max_delta": 1e-7, "delta": 1e-6, "within": False}
    assert result["publishable"] is False


def test_an_unreadable_ledger_is_said_so_not_taken_for_a_missing_entry():
    """A ledger that cannot be read (here, not a database) is the reason given, never
    "no budget was reserved"."""
    spend = Ledger().reserve("unreadable", PrivacyBudget.pure(1.0), label="unreadable",
                             destination="test", mechanism="topdown")
    Ledger().path.write_bytes(b"not a database" * 100)
    problem = ledger_mark_problem({"mode": "secure", LEDGER_ENTRY: spend.release_id},
                                  {"definition": "pure-dp", "epsilon": 1.0})
    assert "could not be checked" in problem and "cannot be read" in problem
    assert "no budget was reserved" not in problem

"""The dashboard's honest verdict (AppTest): the public epsilon ceiling and the table rules
of the released values shown beside the verdict on Results and Export, and the manifest
offered on Export sealed and signed, with its ceiling and table rules."""

from __future__ import annotations

import json

from test_app import assert_clean, page
from test_app_verdict import file_names

from hierdp_core.export import local_key
from hierdp_core.manifest_seal import check_seal
from hierdp_core.privacy.ledger import Ledger
from hierdp_core.table_rules import table_rules
from hierdp_core.ui import session

SAMPLE = "us-counties"


def with_settings(path: str, mechanism: str, epsilon: float):
    at = page(path, SAMPLE)
    at.session_state[session.SETTINGS] = {
        "mechanism": mechanism, "params": {}, "definition": "pure-dp", "epsilon": epsilon,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}
    return at


def captions(at) -> str:
    return " | ".join(c.value for c in at.caption)


def test_results_show_the_table_rules_of_a_least_squares_release():
    at = with_settings("pages/4_Results.py", "least-squares", 0.01).run()
    assert_clean(at)
    rules = table_rules(at.session_state[session.RELEASE])
    assert not rules["non_negative"]["holds"] and not rules["integer"]["holds"]
    text = captions(at)
    assert "Table rules of the released values: :material/check: consistent" in text
    for name, shown in (("non_negative", "non-negative"), ("integer", "integer")):
        assert (f"**not {shown}**: {rules[name]['violating_cells']:,} of "
                f"{rules[name]['cells']:,} cells") in text
    assert "Privacy: epsilon 0.01 <= ceiling 10 (the public ceiling, default 10)" in text


def test_above_the_ceiling_no_publishable_draw_is_offered_and_the_manifest_is_sealed(
        monkeypatch):
    """A draw above the ceiling could not be published and would spend the dataset's
    budget (a new user's ε 20 draw spent 20 of an implicit total of 20): the button is
    disabled and says why; the exploration manifest states the ceiling and is sealed."""
    contents = {}
    file_names(monkeypatch, contents)
    at = with_settings("pages/4_Results.py", "topdown", 20.0).run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert at.button(key="ex_secure").disabled
    assert any("No publishable draw at this budget: ε 20 is above the public ceiling of 10"
               in i.value for i in at.info)
    assert not any("Secure noise alone" in c.value for c in at.caption)  # said once
    assert Ledger().datasets() == []
    assert "Privacy: epsilon 20 > ceiling 10" in captions(at)
    manifest = json.loads(contents["ex_dl_manifest"])
    assert manifest["publishable"] is False and manifest["epsilon_ceiling"]["within"] is False
    assert manifest["epsilon_ceiling"]["max_epsilon"] == 10.0
    assert all(manifest["table_rules"][name]["holds"]
               for name in ("consistent", "non_negative", "integer"))
    assert check_seal(manifest, local_key()) == "signature"

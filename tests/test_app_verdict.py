"""The dashboard's publishable verdict (AppTest): the verdict box on Results and Export, the
publishable release drawn with secure noise, file names of exploration downloads, red
warnings for non-private mechanisms, and where the structure of a release comes from."""

from __future__ import annotations

import pandas as pd
from test_app import assert_clean, page, uploaded

from hierdp_core import dashboard as ui
from hierdp_core import dashboard_release as rel
from hierdp_core.export import build_manifest

SAMPLE = "us-counties"


def warnings_text(at) -> str:
    return " | ".join(w.value for w in at.warning)


def test_seeded_release_is_not_publishable_on_results_and_export():
    at = page("pages/4_Results.py", SAMPLE).run()
    assert_clean(at)
    assert "Not publishable as it is" in warnings_text(at)
    assert "seeded generator" in warnings_text(at)
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert "Not publishable as it is" in warnings_text(at)
    assert len(at.get("download_button")) >= 3
    at.switch_page("pages/1_Data.py").run()
    assert "Structure: declared public" in " ".join(c.value for c in at.caption)


def test_export_draws_the_publishable_release_with_secure_noise():
    at = page("pages/4_Results.py", SAMPLE).run()
    at.switch_page("pages/6_Export.py").run()
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert any("Publishable as it is" in s.value for s in at.success)
    token, secure = at.session_state[rel.PUBLISHABLE]["ex"]
    exploration = at.session_state[ui.RELEASE]
    assert token == rel.release_token(exploration)
    assert secure.randomness["mode"] == "secure" and exploration.randomness["seed"] == 0
    assert secure.mechanism == exploration.mechanism
    assert secure.parameters == exploration.parameters
    manifest = build_manifest(secure, structure_declared=True)
    assert manifest["publishable"] is True
    assert secure.hierarchy.consistency_violations(secure.values) == 0
    assert len(at.get("download_button")) >= 6  # exploration and publishable downloads


def test_exploration_file_names_carry_the_reason():
    release = page("pages/4_Results.py", SAMPLE).run().session_state[ui.RELEASE]
    from hierdp_core.verdict import release_verdict, short_reason_tag

    tag = short_reason_tag(release_verdict(release, structure_declared=True))
    assert tag == "NOT-PUBLISHABLE_seeded"
    tag = short_reason_tag(release_verdict(release, structure_declared=False))
    assert tag == "NOT-PUBLISHABLE_seeded_structure-from-data"


def test_nonprivate_mechanisms_get_a_red_warning_naming_the_private_one():
    at = page("pages/7_Group_sizes.py").run()
    at.selectbox(key="gs_mechanism").select("gs-mc-chain-paper").run()
    assert not at.exception
    errors = " | ".join(e.value for e in at.error)
    assert "not differentially private" in errors and "gs-mc-chain," in errors
    assert "not differentially private" in warnings_text(at)  # the verdict says why too
    at = page("pages/9_Ranges.py").run()
    at.selectbox(key="rg_mechanism").select("dawa-reference").run()
    errors = " | ".join(e.value for e in at.error)
    assert "not differentially private" in errors and "use dawa" in errors


def test_uploaded_table_is_labelled_as_structure_from_data():
    table = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                          "n": [3, 4, 5]})
    at = uploaded(page("pages/1_Data.py"), table, ["state", "county"], "n").run()
    assert not at.exception
    assert "read from this table" in warnings_text(at)
    at.switch_page("pages/4_Results.py").run()
    assert "structure from data" in warnings_text(at)

"""The dashboard's publishable verdict (AppTest): the verdict box on Results and Export, the
publishable release drawn with secure noise, file names of exploration downloads, red
warnings for non-private mechanisms, and where the structure of a release comes from."""

from __future__ import annotations

import json

import pandas as pd
from test_app import assert_clean, on_upload, page, uploaded

from hierdp_core.export import build_manifest
from hierdp_core.intervals import bootstrap
from hierdp_core.ui import release as rel
from hierdp_core.ui import session

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


def least_squares_results(monkeypatch, definition: str) -> tuple:
    """The Results page (not yet run) set to least squares under ``definition`` on the
    sample, and the contents of the files its downloads would write (`file_names`)."""
    contents = {}
    file_names(monkeypatch, contents)
    at = page("pages/4_Results.py", SAMPLE)
    at.session_state[session.SETTINGS] = {
        "mechanism": "least-squares", "params": {}, "definition": definition, "epsilon": 1.0,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}
    return at, contents


def export_secure_draw(monkeypatch) -> tuple:
    """The sample's default release, then Export's publishable draw (secure noise); the
    AppTest and the contents of the files offered."""
    contents = {}
    file_names(monkeypatch, contents)
    at = page("pages/4_Results.py", SAMPLE).run()
    at.switch_page("pages/6_Export.py").run()
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    return at, contents


def test_export_draws_the_publishable_release_with_secure_noise(monkeypatch):
    at, contents = export_secure_draw(monkeypatch)
    assert any("Publishable as it is" in s.value for s in at.success)
    # one verdict box: the drawn release's (the exploration's orange box stood beside it)
    assert "Not publishable as it is" not in warnings_text(at)
    token, secure = at.session_state[rel.PUBLISHABLE]["ex"]
    exploration = at.session_state[session.RELEASE]
    assert token == rel.release_token(exploration)
    assert secure.randomness["mode"] == "secure" and exploration.randomness["seed"] == 0
    assert secure.mechanism == exploration.mechanism
    assert secure.parameters == exploration.parameters
    manifest = json.loads(contents["ex_pub_dl_manifest"])  # the manifest offered
    assert manifest["publishable"] is True and manifest["not_publishable_because"] == []
    assert manifest["randomness"]["mode"] == "secure" and "seed" not in manifest["randomness"]
    assert json.loads(contents["ex_dl_manifest"])["publishable"] is False
    assert secure.hierarchy.consistency_violations(secure.values) == 0
    assert manifest["intervals"]["level"] == 0.9  # the publishable file has lower, upper
    header = contents["ex_pub_dl_csv"].splitlines()[0]
    assert header.endswith(b"value,lower,upper"), header
    assert len(at.get("download_button")) >= 6  # exploration and publishable downloads


def file_names(monkeypatch, contents: dict | None = None) -> dict:
    """Record the file name (and in ``contents`` the data) of every download button drawn,
    by key (AppTest does not keep them)."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    names, original = {}, DeltaGenerator.download_button

    def recording(self, label, data, file_name=None, *args, **kwargs):
        names[kwargs.get("key") or label] = file_name
        if contents is not None:
            contents[kwargs.get("key") or label] = data
        return original(self, label, data, file_name, *args, **kwargs)
    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    monkeypatch.setattr(st, "download_button",
                        lambda *args, **kwargs: recording(st._main, *args, **kwargs))
    return names


def test_exploration_file_names_carry_the_reason(monkeypatch):
    names = file_names(monkeypatch)
    # the ranges files' intervals are a re-run bootstrap (DAWA: ~20 s of re-runs); what is
    # checked here is the files' names, so two replicates do
    monkeypatch.setattr(bootstrap, "MIN_REPLICATES", 2)
    monkeypatch.setattr(bootstrap, "RERUN_SECONDS", 0.0)
    at = page("pages/4_Results.py", SAMPLE).run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    for key in ("ex_dl_csv", "ex_dl_parquet", "ex_dl_manifest", "dl_geojson"):
        assert names[key].startswith("counts_") and "_NOT-PUBLISHABLE_seeded_" in names[key]
    at.button(key="ex_secure").click().run()
    for key in ("ex_pub_dl_csv", "ex_pub_dl_manifest", "dl_geojson_pub"):
        assert "NOT-PUBLISHABLE" not in names[key]
    assert names["ex_pub_dl_manifest"] == "counts_manifest.json"
    names.clear()
    at = page("pages/9_Ranges.py")  # a quick private mechanism: the names are checked
    at.session_state["rg_mechanism"] = "identity"
    at.run()
    at.button(key="rg_prepare").click().run()
    assert_clean(at)
    assert names["rg_dl_manifest"] == "ranges_NOT-PUBLISHABLE_seeded_manifest.json"
    at.selectbox(key="rg_mechanism").select("dawa-reference").run()
    at.button(key="rg_prepare").click().run()
    assert names["rg_dl_csv"] == "ranges_NOT-PUBLISHABLE_seeded_not-private_release.csv"


def test_nonprivate_mechanisms_get_a_red_warning_naming_the_private_one():
    # each page opens with the non-private mechanism already chosen (its widget state set
    # as a saved configuration sets it): the private default's release is not needed here
    at = page("pages/7_Group_sizes.py")
    at.session_state["gs_mechanism"] = "gs-mc-chain-paper"
    at.run()
    assert at.selectbox(key="gs_mechanism").value == "gs-mc-chain-paper"
    assert not at.exception
    errors = " | ".join(e.value for e in at.error)
    assert "not differentially private" in errors and "gs-mc-chain," in errors
    assert "not differentially private" in warnings_text(at)  # the verdict says why too
    assert any("Secure noise alone will not make this one publishable" in c.value
               for c in at.caption)
    at = page("pages/9_Ranges.py")
    at.session_state["rg_mechanism"] = "dawa-reference"
    at.run()
    assert at.selectbox(key="rg_mechanism").value == "dawa-reference"
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


def declared(at, geography: pd.DataFrame, values: dict | None = None):
    """``at`` with the declared structure chosen on the Data page: ``geography`` as the
    uploaded public geography file (AppTest cannot upload a file) and category values."""
    from hierdp_core.ui import structure as structure

    at.session_state[session.STRUCTURE] = {
        "declared": True, "category_values": dict(values or {}), "built": {},
        "geography": {"name": "units.csv", "sha256": "0" * 64, "table": geography}}
    return at


GEOGRAPHY = pd.DataFrame({"state": ["A", "A", "B", "C"], "county": ["a1", "a2", "b1", "c1"],
                          "county_name": ["Alpha", "Aleph", "Beta", "Gamma"]})


def test_uploaded_table_over_a_declared_geography_is_publishable():
    table = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b1"],
                          "sex": ["F", "M", "F", "M"], "n": [3, 4, 5, 6]})
    at = declared(uploaded(page("pages/1_Data.py"), table, ["state", "county"], "n"),
                  GEOGRAPHY)
    at.session_state[session.ROLES] = {**at.session_state[session.ROLES], "category_columns": ["sex"]}
    at.run()
    assert_clean(at)
    assert at.radio(key="structure_choice").value == "declared"
    assert "Values not declared for sex" in warnings_text(at)
    at.text_input(key="structure_values_sex").input("F|M|X").run()
    assert_clean(at)
    assert "Structure: declared public" in " ".join(c.value for c in at.caption)
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    assert "C/c1" in release.hierarchy.node_ids().tolist()  # a declared unit with nobody
    assert len(release.categories) == 3  # F, M and the declared X
    at.switch_page("pages/6_Export.py").run()
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert any("Publishable as it is" in s.value for s in at.success)
    secure = at.session_state[rel.PUBLISHABLE]["ex"][1]
    assert build_manifest(secure, structure_declared=True)["publishable"] is True


def test_query_pages_use_the_declared_geography_of_an_upload():
    people = pd.DataFrame({"state": ["A"] * 4 + ["B"] * 3, "county": ["a1"] * 4 + ["b1"] * 3,
                           "household": [1, 1, 2, 3, 4, 4, 4]})
    at = on_upload(declared(uploaded(page("pages/7_Group_sizes.py"), people, ["state", "county"]),
                            GEOGRAPHY), "gs")
    at.button(key="gs_up_suggest").click().run()  # the household id column
    assert_clean(at)
    assert "units declared by units.csv" in at.radio(key="gs_source").options[1]
    data = at.session_state["hd_src_cache"]["gs"][1]
    assert data.declared_structure and data.hierarchy.n_leaves == 4
    assert "Structure: declared public" in " ".join(c.value for c in at.caption)
    trips = pd.DataFrame({"o_state": ["A", "A", "B"], "o_county": ["a1", "a2", "b1"],
                          "d_state": ["B", "A", "A"], "d_county": ["b1", "a1", "a2"],
                          "count": [5, 2, 7]})
    at = on_upload(declared(uploaded(page("pages/8_Flows.py"), trips, ["o_state", "o_county"]),
                            GEOGRAPHY), "fl")
    at.button(key="fl_up_suggest").click().run()  # origin, destination and count columns
    assert_clean(at)
    data = at.session_state["hd_src_cache"]["fl"][1]
    assert data.declared_structure and data.geography.n_leaves == 4
    assert data.geography.level_names[1:] == ("state", "county")


def test_the_name_column_chosen_for_a_level_names_the_declared_units():
    """The geography file holds the names under the column chosen on the Data page
    (libelle_com): they label the units, as ``<level>_name`` columns do."""
    geography = pd.DataFrame({"dep": ["2A", "2A", "2B"],
                              "com": ["2A004", "2A041", "2B033"],
                              "libelle_com": ["Ajaccio", "Bocognano", "Bastia"]})
    table = geography.assign(n=[5, 1, 7])
    at = declared(uploaded(page("pages/1_Data.py"), table, ["dep", "com"], "n"), geography)
    at.session_state[session.ROLES] = {**at.session_state[session.ROLES],
                                       "name_columns": {"com": "libelle_com"}}
    at.run()
    assert_clean(at)
    assert "com ← libelle_com" in " ".join(c.value for c in at.caption)
    at.switch_page("pages/4_Results.py").run()
    labels = at.session_state[session.RELEASE].hierarchy.labels().tolist()
    assert {"Ajaccio", "Bocognano", "Bastia"} <= set(labels)


def test_an_upload_s_manifest_names_its_declared_geography(monkeypatch):
    """The file that makes the structure declared is named in the manifest with its
    sha256, as the command line's is (it said the data file only)."""
    contents = {}
    file_names(monkeypatch, contents)
    table = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b1"],
                          "n": [3, 4, 5, 6]})
    at = declared(uploaded(page("pages/4_Results.py"), table, ["state", "county"], "n"),
                  GEOGRAPHY)
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    spec = json.loads(contents["ex_dl_manifest"])["input"]
    assert spec["structure"] == "declared"
    assert spec["geography"] == {"file": "units.csv", "sha256": "0" * 64}


def test_no_publishable_draw_is_offered_for_a_structure_read_from_the_data():
    """Export offered the publishable draw on a table whose units were read from the data:
    the draw spent the dataset's whole budget on a release that could never be published,
    and every later draw was refused. The button is off and says why."""
    table = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                          "n": [30, 40, 50]})
    at = uploaded(page("pages/4_Results.py"), table, ["state", "county"], "n").run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert at.button(key="ex_secure").disabled
    assert any("The draw is offered once that is fixed" in c.value for c in at.caption)
    at = page("pages/4_Results.py", SAMPLE).run()  # declared: offered
    at.switch_page("pages/6_Export.py").run()
    assert not at.button(key="ex_secure").disabled

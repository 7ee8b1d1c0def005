"""The Group sizes page on an uploaded table (issue 27, AppTest): the public smallest size m,
an uploaded groups file that declares every region's number of households (the parser of
``hierdp release --groups``) and makes the release publishable, identical released numbers
of households for neighbours D and D' with it, a friendly message for a bad groups file,
and column roles that are never preset from a guess (Data page and query pages)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
from test_app import assert_clean, page, uploaded
from test_app_verdict import declared, file_names

from hierdp_core.ui import release as rel
from hierdp_core.ui import session
from hierdp_core.ui.query_config import CONFIGS, widget_state
from hierdp_core.verdict import GROUPS_FROM_DATA, release_verdict

GEOGRAPHY = pd.DataFrame({"state": ["A", "A", "B", "C"], "county": ["a1", "a2", "b1", "c1"]})
# D: households h1 (2 people), h2 (the only member of a one-person household), h3, h4, h5
PEOPLE = pd.DataFrame({"state": ["A"] * 4 + ["B"] * 3,
                       "county": ["a1", "a1", "a1", "a2", "b1", "b1", "b1"],
                       "household": ["h1", "h1", "h2", "h3", "h4", "h4", "h5"]})
NEIGHBOUR = PEOPLE[PEOPLE["household"] != "h2"]  # D': h2's only member removed
GROUPS = b"state,county,groups\nA,a1,2\nA,a2,1\nB,b1,2\nC,c1,0\n"


def gs_page(people: pd.DataFrame, groups: bytes | None = None, mechanism: str = "gs-mh-dp"):
    """The Group sizes page on ``people`` over the declared `GEOGRAPHY` (its household id
    column picked, ``mechanism`` keeping every region's number of households exactly: the
    widgets' values set as the user sets them), and the ``groups`` file uploaded (None:
    none)."""
    at = declared(uploaded(page("pages/7_Group_sizes.py"), people, ["state", "county"]),
                  GEOGRAPHY)
    for key, value in {"gs_source": "upload", "gs_up_group": "household",
                       "gs_mechanism": mechanism, f"gs_{mechanism}_groups": "exact"}.items():
        at.session_state[key] = value
    at.run()
    if groups is not None:
        at.file_uploader(key="gs_up_groups_file").set_value(("groups.csv", groups, "text/csv"))
        at.run()
    assert_clean(at)
    return at


def exploration(at):
    return at.session_state[session.GS_RELEASE][1]


def test_the_smallest_size_m_is_public_and_changes_the_released_sizes():
    at = gs_page(PEOPLE)
    assert at.number_input(key="gs_up_min").value == 1  # as the command line's --min-size
    assert exploration(at).categories[:2] == ("1", "2") and len(exploration(at).categories) == 64
    at.number_input(key="gs_up_min").set_value(2).run()
    assert_clean(at)
    release = exploration(at)
    assert release.categories[0] == "2" and len(release.categories) == 63  # sizes 2..64
    # h2's one person counts at the smallest size m: every household is still released
    assert release.values[0].sum() == 5 and release.values.shape[1] == 63
    cfg = at.session_state[CONFIGS]["gs"]
    assert cfg.min_size == 2
    state, _ = widget_state("gs", cfg, "mine.csv")  # the loader restores m
    assert state["gs_up_min"] == 2 and state["gs_up_max"] == 64
    at.number_input(key="gs_up_min").set_value(64).run()  # m must stay below N
    assert not at.exception
    assert any("min_size" in e.value and "cannot be used for group sizes" in e.value
               for e in at.error)


def test_a_groups_file_makes_the_release_publishable_and_neighbours_agree(monkeypatch):
    contents = {}
    file_names(monkeypatch, contents)
    without = [gs_page(people) for people in (PEOPLE, NEIGHBOUR)]
    groups_of = [exploration(at).values.sum(axis=1) for at in without]
    assert groups_of[0][0] == 5 and groups_of[1][0] == 4  # counted: D and D' differ
    for at in without:
        assert GROUPS_FROM_DATA in release_verdict(
            exploration(at), structure_declared=True)["not_publishable_because"]
        assert any("counted from your table" in c.value for c in at.caption)

    with_file = [gs_page(people, GROUPS) for people in (PEOPLE, NEIGHBOUR)]
    released = [exploration(at).values.sum(axis=1) for at in with_file]
    np.testing.assert_array_equal(released[0], released[1])  # nothing exact tells them apart
    np.testing.assert_array_equal(released[0], [5, 3, 2, 0, 2, 1, 2, 0])  # the declared G_v
    at = with_file[1]
    assert exploration(at).privacy["group_counts"] == "declared"
    assert any("declared by the groups file groups.csv" in c.value for c in at.caption)
    assert at.session_state[CONFIGS]["gs"].data == {"file": "mine.csv", "groups": "groups.csv"}
    at.button(key="gs_secure").click().run()
    assert_clean(at)
    assert any("Publishable as it is" in s.value for s in at.success)
    secure = at.session_state[rel.PUBLISHABLE]["gs"][1]
    assert release_verdict(secure, structure_declared=True)["publishable"] is True
    if "gs_pub_dl_manifest" not in contents:  # intervals by bootstrap: made on a click
        at.button(key="gs_pub_prepare").click().run()
    manifest = json.loads(contents["gs_pub_dl_manifest"])
    assert manifest["publishable"] is True
    assert manifest["input"]["groups"] == {"file": "groups.csv",
                                           "sha256": hashlib.sha256(GROUPS).hexdigest()}
    assert manifest["input"]["min_size"] == 1
    assert manifest["privacy"]["group_counts"] == "declared"


def test_a_bad_groups_file_gets_a_friendly_message():
    cases = [(b"state,county,n\nA,a1,1\n", "give exactly one of the columns 'groups'"),
             (b"state,county,groups\nA,a1,2\nA,a2,1\nB,b1,2\n", "missing"),
             (b"state,county,groups\nA,a1,2\nA,a2,1\nB,b1,2\nC,c1,-1\n", "groups"),
             (b"state,county,groups\nA,a1,1\nA,a2,1\nB,b1,2\nC,c1,0\n",
              "fewer groups than their records show")]
    at = gs_page(PEOPLE)
    for raw, said in cases:
        at.file_uploader(key="gs_up_groups_file").set_value(("groups.csv", raw, "text/csv"))
        at.run()
        assert not at.exception, raw
        errors = " ".join(e.value for e in at.error)
        assert "groups" in errors and said in errors, (raw, errors)


def test_upload_roles_are_not_preset_until_the_guess_is_used():
    from hierdp_core.ui import inputs as inp

    table = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                          "age": [30, 40, 50], "n": [4, 5, 6]})
    at = page("pages/1_Data.py")
    at.session_state[session.DATASET] = {"name": "mine.csv", "sample": None, "table": table,
                                          "version": 1, "loaded": 1}
    at.session_state[session.ROLES] = inp.default_roles(table)  # as "Use this file" sets them
    at.run()
    assert_clean(at)
    assert at.multiselect(key="roles_levels_1").value == []
    assert at.selectbox(key="roles_count_1").value is None
    assert any("Guessed from the table, not applied: levels state › county; no category "
               "column; the count column 'n' gives 15 people; with no count column each of "
               "the 3 rows" in i.value
               for i in at.info)
    assert not at.success  # nothing built from a guess
    at.switch_page("pages/4_Results.py").run()  # other pages wait for the roles too
    assert not at.exception
    assert any("choose the geography levels and the count column" in e.value
               for e in at.error)
    at.switch_page("pages/1_Data.py").run()
    at.button(key="roles_guess_1").click().run()
    assert_clean(at)
    assert at.multiselect(key="roles_levels_1").value == ["state", "county"]
    assert at.selectbox(key="roles_count_1").value == "n"
    assert any("15 people in total" in s.value for s in at.success)

    at.session_state["rg_source"] = "upload"  # on the upload at once: no sample release
    at.switch_page("pages/9_Ranges.py").run()  # the levels confirmed above carry over
    assert at.radio(key="rg_source").value == "upload"
    assert_clean(at)
    assert at.multiselect(key="rg_up_levels").value == ["state", "county"]
    assert at.selectbox(key="rg_up_attribute").value is None
    assert at.selectbox(key="rg_up_count").value is None
    at.button(key="rg_up_suggest").click().run()
    assert_clean(at)
    assert at.selectbox(key="rg_up_attribute").value == "age"
    assert at.selectbox(key="rg_up_count").value == "n"
    assert at.session_state[session.RANGE_RELEASE][1].values[0].sum() >= 0


def guessed_upload(table: pd.DataFrame, name: str = "mine.csv"):
    """The Data page just after "Use this file" on ``table``: its guess shown, not applied."""
    from hierdp_core.ui import inputs as inp

    at = page("pages/1_Data.py")
    at.session_state[session.DATASET] = {"name": name, "sample": None, "table": table,
                                          "version": 1, "loaded": 1}
    at.session_state[session.ROLES] = inp.default_roles(table)
    at.run()
    assert_clean(at)
    return at


def test_the_guess_offers_the_categories_and_applies_them():
    """A state, county, sex, age_group table: guessed levels state › county (not 'sex')
    and categories sex, age_group, applied by the button."""
    at = guessed_upload(pd.DataFrame({
        "state": list("AAAABB"), "county": ["a1", "a1", "a2", "a2", "b1", "b1"],
        "sex": list("FMFMFM"), "age_group": ["0-17", "18+", "18+", "0-17", "0-17", "18+"],
        "n": [4, 5, 6, 7, 8, 9]}))
    assert any("levels state › county; categories sex, age_group; the count column 'n'"
               in i.value for i in at.info)
    at.button(key="roles_guess_1").click().run()
    assert_clean(at)
    assert at.multiselect(key="roles_levels_1").value == ["state", "county"]
    assert at.multiselect(key="roles_categories_1").value == ["sex", "age_group"]


def test_the_guess_says_which_level_it_left_out():
    at = guessed_upload(pd.DataFrame({"state": ["01", "01", "02", "02"],
                                      "county": ["01001", "01003", "01001", "02005"],
                                      "n": [1, 2, 3, 4]}), "ragged.csv")
    assert any("Left out: state, which does not nest with these levels" in i.value
               for i in at.info)


def test_a_groups_file_a_release_does_not_keep_is_said_so(capsys, tmp_path):
    """With a groups file and groups=noisy (gs-topdown's default) a region declared with 0
    households was released with some, in silence: the page and the command line say the
    declaration is not kept and how to keep it; the manifest says the largest and smallest
    sizes are top- and bottom-coded."""
    from conftest import run_cli

    at = gs_page(PEOPLE, GROUPS, mechanism="gs-topdown")
    assert not any("is not kept" in i.value for i in at.info)  # groups=exact keeps it
    at.radio(key="gs_gs-topdown_groups").set_value("noisy").run()
    assert_clean(at)
    (note,) = [i.value for i in at.info if "is not kept" in i.value]
    assert "Choose groups = exact above" in note
    GEOGRAPHY.to_csv(tmp_path / "geo.csv", index=False)
    PEOPLE.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "groups.csv").write_bytes(GROUPS)
    argv = ["release", tmp_path / "people.csv", "--query", "group-sizes", "--levels",
            "state,county", "--group-column", "household", "--max-size", "3", "--geography",
            tmp_path / "geo.csv", "--groups", tmp_path / "groups.csv", "--mechanism",
            "gs-topdown", "--epsilon", "1", "--seed", "1", "--interval", "none"]
    code, _, err = run_cli(capsys, *argv, "--invariant", "total", "--out", tmp_path / "a")
    assert code == 0, err
    assert "note: the groups file's number of groups of every region is not kept" in err
    assert "--param groups=exact --invariant groups keeps" in err
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["size_coding"].startswith("size 3 counts every group of 3 or more")
    code, _, err = run_cli(capsys, *argv, "--param", "groups=exact", "--invariant", "groups",
                           "--out", tmp_path / "b")
    assert code == 0 and "is not kept" not in err, err

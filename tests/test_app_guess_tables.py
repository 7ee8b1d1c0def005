"""The Data and query pages' guesses on national tables (Streamlit AppTest): each guess is
made on the table as it is now and never proposes a role that would release wrong counts."""

from __future__ import annotations

import pandas as pd
from test_app import assert_clean, on_upload, page, uploaded, use_guess
from test_app_group_sizes_declared import guessed_upload
from test_app_verdict import declared

from hierdp_core.ui import session


def test_a_melted_table_is_guessed_again_and_its_row_total_is_no_count():
    """A CBS-style wide table with its 'Totaal': once melted, the guess is the long table's
    (count = the melted values, category = the melted columns), never the total."""
    table = pd.DataFrame({"provincie": ["20", "20", "21"], "gemeente": ["0014", "1966", "0080"],
                          "0 tot 15 jaar": [10, 20, 30], "15 tot 65 jaar": [40, 50, 60],
                          "65 jaar of ouder": [5, 6, 7]})
    table["Totaal"] = table.iloc[:, 2:].sum(axis=1)  # 228 people
    at = guessed_upload(table, "nl.csv")
    at.checkbox(key="shape_wide_1").check().run()
    assert any("the count column 'count' gives 228 people" in i.value for i in at.info)
    assert "Totaal" not in at.selectbox(key="roles_count_2").options
    at.button(key="roles_guess_2").click().run()
    assert_clean(at)
    roles = at.session_state[session.ROLES]
    assert (roles["count_column"], roles["category_columns"]) == ("count", ["category"])
    assert any("228 people in total" in s.value for s in at.success)


SPAIN = pd.DataFrame({"ccaa": ["01", "01", "07", "12", "13", "16"],
                      "ccaa_nombre": ["Andalucía", "Andalucía", "Castilla y León", "Galicia",
                                      "Comunidad de Madrid", "País Vasco"],
                      "provincia": ["11", "29", "05", "15", "28", "01"],
                      "provincia_nombre": ["Cádiz", "Málaga", "Ávila", "A Coruña", "Madrid",
                                           "Araba/Álava"],
                      "personas": [1581, 1764, 2431, 2778, 1362, 2625]})


def names_caption(at) -> str:
    return next(c.value for c in at.caption if "Unit names" in c.value)


def test_a_level_is_named_by_its_own_name_column_never_a_coarser_level_s():
    """Provinces were named by their region (Cádiz and Málaga both 'Andalucía'), both
    levels by one column, and a name column chosen twice over a declared geography raised
    a TypeError on every page."""
    at = guessed_upload(SPAIN, "es.csv")
    at.multiselect(key="roles_levels_1").set_value(["provincia"]).run()
    at.selectbox(key="roles_count_1").select("personas").run()
    assert names_caption(at).endswith("provincia ← provincia_nombre")
    at.multiselect(key="roles_levels_1").set_value(["ccaa", "provincia"]).run()
    assert names_caption(at).endswith("ccaa ← ccaa_nombre, provincia ← provincia_nombre")
    declared(at, SPAIN.drop(columns="personas")).run()
    assert_clean(at)
    at.selectbox(key="roles_names_provincia_1").select("ccaa_nombre").run()
    assert not at.exception
    assert any("name column 'ccaa_nombre' is chosen for the levels ['ccaa', 'provincia']"
               in e.value for e in at.error)


def test_the_flows_guess_takes_no_name_column_for_a_level_and_a_dutch_count():
    """A CBS commuter table: woon_gemeente_naam was guessed as a third origin level and
    'aantal' as no count, releasing 16 rows as trips instead of 1,864 commuters."""
    areas = [("20", "0014", "Groningen"), ("21", "0080", "Leeuwarden"),
             ("21", "1900", "Súdwest-Fryslân"), ("27", "0363", "Amsterdam")]
    table = pd.DataFrame([dict(woon_provincie=o[0], woon_gemeente=o[1], woon_gemeente_naam=o[2],
                               werk_provincie=d[0], werk_gemeente=d[1],
                               werk_gemeente_naam=d[2], aantal=100 + 10 * i + j)
                          for i, o in enumerate(areas) for j, d in enumerate(areas)])
    at = use_guess(on_upload(uploaded(page("pages/8_Flows.py"), table, []), "fl"), "fl")
    assert_clean(at)
    assert at.multiselect(key="fl_up_origin").value == ["woon_provincie", "woon_gemeente"]
    assert at.multiselect(key="fl_up_destination").value == ["werk_provincie", "werk_gemeente"]
    assert at.selectbox(key="fl_up_count").value == "aantal"
    assert table["aantal"].sum() == 1_864
    assert any("1,864 trips between 4 areas" in c.value for c in at.caption)


def test_local_district_codes_are_guessed_as_a_level_with_local_codes():
    """District codes 01-03 repeated in every state were guessed as a category: the release
    had cells for districts state 33 does not have."""
    rows = [("9", "01"), ("9", "02"), ("9", "03"), ("10", "01"), ("10", "02"), ("33", "01")]
    table = pd.DataFrame([dict(state=s, district=d, sex=x)
                          for s, d in rows for x in "FM" for _ in range(3)])
    at = guessed_upload(table, "in.csv")
    assert any("levels state › district, whose codes are local (unique only within their "
               "state); categories sex" in i.value for i in at.info)
    at.button(key="roles_guess_1").click().run()
    assert at.checkbox(key="roles_local").value is True
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    assert release.categories == ("F", "M")
    assert release.hierarchy.n_nodes == 1 + 3 + 6  # the total, the states, their districts


def test_communes_numbered_alike_in_every_region_are_guessed_as_local_codes():
    """Communes 1, 2, 9, 10, 21 in every region: every region has every code, which reads
    as a category's values, and the guess left the commune out; a column named as a
    geography level is a level with local codes (a column named otherwise still is not)."""
    table = pd.DataFrame([dict(region=r, commune=c, population=7)
                          for r in ("1", "2", "11") for c in ("1", "2", "9", "10", "21")])
    at = guessed_upload(table, "regions.csv")
    assert any("levels region › commune, whose codes are local" in i.value for i in at.info)
    at.button(key="roles_guess_1").click().run()
    assert at.checkbox(key="roles_local").value is True
    coded = pd.DataFrame([dict(state=s, sex_code=x, n=3) for s in "AB" for x in (1, 2)])
    at = guessed_upload(coded, "coded.csv")
    assert not any("whose codes are local" in i.value for i in at.info)

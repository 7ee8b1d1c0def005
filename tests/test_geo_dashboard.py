"""Maps of an uploaded table on the dashboard (Streamlit AppTest; AppTest cannot upload
files, so the table and the boundaries are put in session state as the Data page would):
a table from another country whose codes collide with the bundled ones gets no bundled map,
a table of bundled units gets it, the user's own boundaries draw the maps, and the column
roles get valid defaults."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.test_app import ROOT, TIMEOUT, assert_clean, figure_specs
from tests.test_geo_upload import squares_geojson

DATA_PAGE = "pages/1_Data.py"


def _app(path: str, table: pd.DataFrame, geo_state: dict | None = None,
         upload_on: str | None = None) -> AppTest:
    from hierdp_core.ui import geo as geo_ui
    from hierdp_core.ui import inputs as inp
    from hierdp_core.ui import session

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.switch_page(path)
    at.session_state[session.DATASET] = {"name": "mine.csv", "sample": None, "table": table,
                                          "version": 1, "loaded": 1}
    roles = inp.default_roles(table)
    at.session_state[session.ROLES] = roles if path == DATA_PAGE else {
        **roles, **roles["guessed"], "count_confirmed": True}  # as "Use the guessed columns"
    if geo_state is not None:
        at.session_state[geo_ui.GEO] = geo_state
    if upload_on is not None:  # the query page of this prefix on the upload from the start
        at.session_state[f"{upload_on}_source"] = "upload"  # (no bundled sample release first)
    at.run()
    if upload_on is not None:
        assert at.radio(key=f"{upload_on}_source").value == "upload"
    if path == DATA_PAGE:  # the guessed roles wait for the click
        at.button(key="roles_guess_1").click().run()
    return at


def colliding_table() -> pd.DataFrame:
    """Codes that are Italian region, province and municipality codes, nested differently
    (province 004 Cuneo under region '02', not Piemonte's '01'): another country's table."""
    rows = [(f"{r:02d}", f"{p:03d}", f"{p:03d}{c:03d}", 10 + c)
            for r, provinces in ((1, (1, 2)), (2, (3, 4)), (3, (5, 6)))
            for p in provinces for c in (1, 2, 3)]
    return pd.DataFrame(rows, columns=["region_code", "province_code", "commune_code", "count"])


def test_a_table_from_another_country_gets_no_bundled_map():
    at = _app("pages/1_Data.py", colliding_table())
    assert_clean(at)
    assert at.multiselect(key="roles_levels_1").value == ["region_code", "province_code",
                                                          "commune_code"]
    assert at.selectbox(key="roles_count_1").value == "count"
    assert any("No maps" in i.value for i in at.info)
    assert "no map (nothing fits)" in at.selectbox(key="geo_choice").format_func("auto")
    res = _app("pages/4_Results.py", colliding_table())
    assert not res.exception
    assert any("No map for this level" in i.value for i in res.info)
    assert not any("geo/italy" in s for s in figure_specs(res))
    assert not any("choropleth" in s for s in figure_specs(res))  # no map at all


def test_a_table_of_bundled_units_gets_their_map_and_can_refuse_it():
    rows = [("01", "001", "001001", 5), ("01", "001", "001002", 7), ("01", "002", "002004", 3)]
    table = pd.DataFrame(rows, columns=["region", "province", "municipality", "n"])
    at = _app("pages/1_Data.py", table)
    assert_clean(at)
    assert any("Maps drawn on bundled" in s.value and "100% matched" in s.value
               for s in at.success)
    at.selectbox(key="geo_choice").set_value("none").run()
    assert not at.exception and any("you chose none" in i.value for i in at.info)


def test_own_boundaries_draw_the_maps(tmp_path):
    from hierdp_core.geo.upload import build_geometry, read_boundaries

    table = pd.DataFrame({"zone": ["A", "A", "B", "B"], "tract": ["a1", "a2", "b1", "b2"],
                          "tract_name": ["North", "East", "South", "West"],
                          "people": [5, 8, 13, 21]})
    b = read_boundaries(squares_geojson(["a1", "a2", "b1", "b2"]), "tracts.geojson")
    units = table[["zone", "tract"]]
    g = build_geometry(b, ["zone", "tract"], {"tract": "code"}, units)
    at = _app("pages/1_Data.py", table, {"choice": "auto", "boundaries": b, "geometry": g})
    assert_clean(at)
    assert any("your boundaries (tracts.geojson)" in s.value for s in at.success)
    assert at.selectbox(key="roles_names_tract_1").value == "tract_name"
    res = _app("pages/4_Results.py", table, {"choice": "auto", "boundaries": b,
                                             "geometry": g})
    assert not res.exception
    specs = [s.replace("\\u002f", "/") for s in figure_specs(res)]
    assert sum(f"geo/{g.source}/tract.overview.geojson" in spec for spec in specs) == 1
    assert (ROOT / "static" / "geo" / g.source / "tract.overview.geojson").is_file()


def test_group_sizes_never_pick_a_code_column_as_the_size():
    from hierdp_core import column_roles
    from hierdp_core.data.loaders import read_table

    table = pd.DataFrame({"region_code": np.repeat([1, 2], 4), "commune": list("abcdefgh"),
                          "hh_size": [1, 2, 3, 4] * 2, "households": [9, 8, 7, 6] * 2})
    assert column_roles.size_candidates(table, ["region_code", "commune"])[0] == "hh_size"
    assert "region_code" not in column_roles.count_candidates(table)
    at = _app("pages/7_Group_sizes.py", table, upload_on="gs")
    at.radio(key="gs_up_rows").set_value("size").run()
    assert not at.exception
    assert at.selectbox(key="gs_up_size").value is None  # a guess waits for a click
    at.button(key="gs_up_suggest").click().run()
    assert at.selectbox(key="gs_up_size").value == "hh_size"
    assert at.selectbox(key="gs_up_count").value == "households"
    assert "region_code" not in at.selectbox(key="gs_up_size").options
    # the browser's upload: another country's codes (three code columns), read from a CSV
    # as the Data page reads a file; after the click the size is hh_size, no code offered
    uploaded = colliding_table().rename(columns={"count": "households"})
    uploaded.insert(3, "hh_size", [1 + i % 5 for i in range(len(uploaded))])
    at = _app("pages/7_Group_sizes.py", read_table(io.BytesIO(
        uploaded.to_csv(index=False).encode()), name="communes_sizes.csv"), upload_on="gs")
    at.radio(key="gs_up_rows").set_value("size").run()
    assert at.selectbox(key="gs_up_size").value is None  # not preset
    at.button(key="gs_up_suggest").click().run()
    assert_clean(at)
    assert at.selectbox(key="gs_up_size").value == "hh_size"
    assert not any("code" in o for o in at.selectbox(key="gs_up_size").options)
    text = table.assign(hh_size=table["hh_size"].astype(str) + " persons")
    at = _app("pages/7_Group_sizes.py", text.drop(columns="households"), upload_on="gs")
    at.radio(key="gs_up_rows").set_value("size").run()
    assert not at.exception
    assert any("no column can be the size column" in e.value for e in at.error)


def test_a_table_of_households_per_size_opens_on_its_layout():
    """A French table of households per commune and size (taille_menage, nb_menages) opened
    the page on "one row per person" with nothing to guess; it opens on "region and size"
    with its columns offered, and a table of persons still opens on persons."""
    table = pd.DataFrame({"departement": ["01", "01", "02"], "commune": ["01001", "01002",
                                                                         "02001"],
                          "taille_menage": [1, 2, 3], "nb_menages": [9, 8, 7]})
    at = _app("pages/7_Group_sizes.py", table, upload_on="gs")
    assert not at.exception
    assert at.radio(key="gs_up_rows").value == "size"
    at.button(key="gs_up_suggest").click().run()
    assert_clean(at)
    assert at.selectbox(key="gs_up_size").value == "taille_menage"
    assert at.selectbox(key="gs_up_count").value == "nb_menages"
    people = pd.DataFrame({"commune": ["a", "a", "b"], "household": ["h1", "h1", "h2"]})
    at = _app("pages/7_Group_sizes.py", people, upload_on="gs")
    assert at.radio(key="gs_up_rows").value == "person"


def _own_geometry(codes: list[str], zones: list[str]):
    from hierdp_core.geo.upload import build_geometry, read_boundaries

    b = read_boundaries(squares_geojson(codes), "tracts.geojson")
    units = pd.DataFrame({"zone": zones, "tract": codes})
    return {"choice": "auto", "boundaries": b,
            "geometry": build_geometry(b, ["zone", "tract"], {"tract": "code"}, units)}


def test_own_boundaries_give_flow_and_group_size_maps_and_a_geojson_export():
    codes, zones = ["a1", "a2", "b1", "b2"], ["A", "A", "B", "B"]
    own = _own_geometry(codes, zones)
    rng = np.random.default_rng(7)
    o, d = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    trips = pd.DataFrame({"o_zone": np.array(zones)[o], "o_tract": np.array(codes)[o],
                          "d_zone": np.array(zones)[d], "d_tract": np.array(codes)[d]})
    at = _app("pages/8_Flows.py", trips, own, upload_on="fl")
    at.button(key="fl_up_suggest").click().run()
    assert_clean(at)
    assert not any("No flow map" in i.value for i in at.info)
    assert any("scattergeo" in s for s in figure_specs(at))

    people = pd.DataFrame({"zone": np.repeat(zones, 3), "tract": np.repeat(codes, 3),
                           "household": [f"h{i // 3}" for i in range(12)]})
    at = _app("pages/7_Group_sizes.py", people, own, upload_on="gs")
    at.button(key="gs_up_suggest").click().run()
    assert_clean(at)
    assert any(own["geometry"].source in s.replace("\\u002f", "/") for s in figure_specs(at))

    table = pd.DataFrame({"zone": zones, "tract": codes, "people": [5, 8, 13, 21]})
    at = _app("pages/4_Results.py", table, own)
    assert not at.exception
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception
    assert any(b.proto.label.startswith("Release GeoJSON") for b in at.get("download_button"))


def test_us_drill_down_zooms_to_the_unit():
    from tests.test_app import page

    at = page("pages/4_Results.py", "us-counties").run()
    assert not at.exception
    specs = [s for s in figure_specs(at) if "choropleth" in s]
    assert specs and all('"albers usa"' in s for s in specs)
    at.selectbox(key="res_within").set_value(4).run()  # the counties of California
    assert not at.exception
    specs = [s for s in figure_specs(at) if "choropleth" in s]
    assert specs and all('"mercator"' in s and '"fitbounds":"locations"' in s for s in specs)
    for spec in specs:  # California's 58 counties, and only them
        locations = next(t["locations"] for t in json.loads(spec)["data"]
                         if t["type"] == "choropleth")
        assert len(locations) == 58 and all(str(c).startswith("06") for c in locations)


def test_level_picker_and_names_after_an_upload():
    from hierdp_core.ui import session

    table = pd.DataFrame({"prov": ["P1", "P1", "P2"], "town": ["t1", "t2", "t3"],
                          "town_label": ["Alba", "Bra", "Cuneo"], "n": [4, 5, 6]})
    at = _app("pages/2_Hierarchy.py", table)
    assert_clean(at)
    assert at.multiselect(key="hierarchy_levels_1").value == ["prov", "town"]
    at = _app("pages/1_Data.py", table)
    assert at.selectbox(key="roles_names_town_1").value == "town_label"
    assert any("town ← town_label" in c.value for c in at.caption)
    at.selectbox(key="roles_names_town_1").set_value("(no names)").run()
    assert_clean(at)
    assert at.session_state[session.ROLES]["name_columns"] == {"prov": None, "town": None}
    assert at.selectbox(key="roles_names_town_1").value == "(no names)"  # not guessed again


def test_no_bundled_boundaries_are_called_closest_to_a_table_they_barely_match():
    """A Spanish table was told its closest boundaries were the US counties (24% of its
    codes matched) or Italy's (0%): a set is named closest only when it matches half."""
    from test_app import page, uploaded

    table = pd.DataFrame({"provincia": ["01", "01", "02", "03"], "personas": [3, 4, 5, 6],
                          "municipio": ["01901", "01902", "02903", "03904"]})
    at = uploaded(page("pages/1_Data.py"), table, ["provincia", "municipio"], "personas").run()
    (said,) = [i.value for i in at.info if i.value.startswith("No maps")]
    assert "closest" not in said and "Upload your own boundaries" in said

"""Column-role candidates of an uploaded table (`hierdp_core.column_roles`): a size or a
count is only ever a column of whole numbers >= 0 that is not a level or a code; levels
are the nested code columns, coarse to fine; names are one-to-one text columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames

from hierdp_core import column_roles as roles
from hierdp_core import query_columns as qc
from hierdp_core.data.shape_guess import guess_wide


def test_moroccan_style_table():
    table = pd.DataFrame({
        "region_code": np.repeat([1, 2], 4), "region_name": np.repeat(["Oriental", "Souss"], 4),
        "commune_code": np.arange(101, 109), "commune": [f"c{i}" for i in range(8)],
        "population": [900, 450, 300, 120, 80, 77, 60, 30], "share": np.linspace(0, 1, 8)})
    levels = roles.guess_levels(table)
    assert levels == ["region_code", "commune_code"]
    assert roles.guess_name_columns(table, levels) == {"region_code": "region_name"}
    assert roles.count_candidates(table, levels) == ["population"]
    assert roles.size_candidates(table, levels) == ["population"]
    assert roles.attribute_candidates(table, levels) == ["population"]
    assert roles.group_candidates(table, levels)[0] == "region_name"


def test_microdata_levels_skip_the_household_id_and_the_age():
    table = pd.DataFrame({"state": list("AAAABB"), "county": list("xxyyzz"),
                          "household": ["h1", "h1", "h2", "h3", "h4", "h4"],
                          "age": [30, 5, 41, 77, 18, 19]})
    assert roles.guess_levels(table) == ["state", "county"]
    assert roles.group_candidates(table, ["state", "county"])[0] == "household"
    assert roles.attribute_candidates(table, ["state", "county"]) == ["age"]


def test_no_valid_column_gives_no_candidate():
    table = pd.DataFrame({"zone": ["a", "b"], "size": ["1 person", "2 persons"],
                          "weight": [0.5, 1.5], "zone_id": [1, 2], "neg": [-1, 2]})
    assert roles.size_candidates(table, ["zone"]) == []
    assert roles.count_candidates(table, ["zone"]) == []


@settings(max_examples=40, deadline=None, database=None)
@given(data_frames([column("region_code", dtype=int), column("size", dtype=float),
                    column("n", elements=st.text(max_size=3)), column("people", dtype=int),
                    column("flag", dtype=bool)]))
def test_candidates_are_always_whole_numbers_and_never_codes(table):
    for found in (roles.size_candidates(table, ["n"]), roles.count_candidates(table, ["n"])):
        assert "region_code" not in found and "n" not in found and "flag" not in found
        for c in found:
            v = table[c].dropna().to_numpy(float)
            assert v.size and (v >= 0).all() and (v == np.floor(v)).all()
    levels = roles.guess_levels(table)
    assert not set(levels) & set(roles.count_candidates(table)) and "size" not in levels


def test_origin_and_destination_columns_by_name():
    table = pd.DataFrame(columns=["o_state", "o_county", "d_state", "d_county", "n"])
    assert qc.od_candidates(table) == (["o_state", "o_county"], ["d_state", "d_county"])
    table = pd.DataFrame(columns=["home_tract", "work_tract", "workers", "date"])
    assert qc.od_candidates(table) == (["home_tract"], ["work_tract"])
    assert qc.od_candidates(pd.DataFrame(columns=["state", "county"])) == ([], [])


def test_a_column_with_an_infinity_is_not_a_count():
    table = pd.DataFrame({"size": [-np.inf, 0.0], "people": [3, 4]})
    assert "size" not in roles.count_candidates(table) + roles.size_candidates(table)
    assert not roles.integer_valued(pd.Series([np.inf, 1.0]))


def test_a_table_fits_the_query_pages_its_columns_name():
    trips = pd.DataFrame({"o_state": ["06", "36"], "o_county": ["06037", "36061"],
                          "d_state": ["36", "06"], "d_county": ["36061", "06037"]})
    counts = pd.DataFrame({"state": ["A", "B"], "county": ["a", "b"], "n": [3, 4],
                           "county_code": [1, 2]})
    sizes = pd.DataFrame({"county": ["a", "a"], "size": [1, 2], "households": [5, 3]})
    bands = pd.DataFrame({"county": ["a", "b"], "age_group": ["0-17", "18+"], "n": [4, 4]})
    people = pd.DataFrame({"county": ["a", "a"], "household": [1, 2], "person": [1, 1]})
    for table, levels, fitted in [(trips, ["o_state", "o_county"], ["flows"]),
                                  (counts, ["state", "county"], []),
                                  (sizes, ["county"], ["group-sizes"]),  # size: no attribute
                                  (bands, ["county"], []),  # age bands: no household
                                  (people, ["county"], ["group-sizes"])]:  # ids: no ages
        assert [q for q in ("flows", "group-sizes", "ranges")
                if qc.fits(table, q, levels)] == fitted, fitted


def test_a_low_cardinality_column_never_replaces_the_geography():
    """A new user's state, county, sex, age_group table was guessed as levels 'sex' (the
    greedy chain started at the fewest distinct values); sex and age_group are categories."""
    rng = np.random.default_rng(0)
    county = rng.integers(0, 40, 2_000)
    table = pd.DataFrame({"state": (county // 8).astype(str), "county": county.astype(str),
                          "sex": rng.choice(["F", "M"], 2_000),
                          "age_group": rng.choice(["0-17", "18-64", "65+"], 2_000),
                          "count": rng.integers(0, 50, 2_000)})
    levels = roles.guess_levels(table)
    assert levels == ["state", "county"]
    assert roles.guess_categories(table, levels, "count") == ["sex", "age_group"]
    assert roles.guess_categories(table, levels, "count", most=2) == ["sex"]


def test_a_level_that_does_not_nest_is_named_as_left_out():
    """A county under two states: the guess keeps one level and says which column it left
    out and why (it dropped it without a word)."""
    table = pd.DataFrame({"state": ["01", "01", "02", "02"],
                          "county": ["01001", "01003", "01001", "02005"], "n": [1, 2, 3, 4]})
    levels = roles.guess_levels(table)
    assert len(levels) == 1
    assert roles.left_out_levels(table, levels, ["n"]) == \
        [c for c in ("state", "county") if c not in levels]
    nested = table.assign(county=["01001", "01003", "02001", "02005"])
    assert roles.left_out_levels(nested, roles.guess_levels(nested), ["n"]) == []


# ---- tables from other countries ------------------------------------------------------
def _guess(table: pd.DataFrame) -> dict:
    from hierdp_core.ui.inputs import default_roles

    return default_roles(table)["guessed"]


def _people(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    wijk = rng.integers(0, 40, n)
    return pd.DataFrame({"persoon_id": np.arange(n) + 10_000, "provincie": "PV" + (wijk // 20)
                         .astype(str), "gemeente": "GM" + (wijk // 4).astype(str),
                         "wijk": "WK" + wijk.astype(str), "geslacht": rng.choice(["M", "V"], n),
                         "leeftijd": rng.integers(0, 99, n),
                         "huishouden_id": rng.integers(0, n // 2, n)})


def test_swiss_numbers_are_codes_and_a_german_count_is_the_count():
    """BFS numbers (1, 101, 3: no leading zeros) were taken for counts, and the table for
    a wide one; anzahl (German) was no count."""
    kantone = [1, 1, 1, 2, 2, 26]
    table = pd.DataFrame({"kanton": kantone, "bezirk": [101, 101, 102, 201, 201, 2601],
                          "gemeinde": [1, 2, 3, 301, 302, 6800], "anzahl": [10, 20, 5, 7, 8, 9]})
    table = pd.concat([table.assign(geschlecht="m"), table.assign(geschlecht="w")])
    guessed = _guess(table)
    assert guessed["levels"] == ["kanton", "bezirk", "gemeinde"]
    assert guessed["count_column"] == "anzahl" and guessed["category_columns"] == ["geschlecht"]
    assert roles.count_candidates(table, ["kanton"]) == ["anzahl"]
    assert guess_wide(table, ["kanton", "bezirk", "gemeinde"]).columns == []


def test_a_french_table_with_repeated_commune_names():
    table = pd.DataFrame({"reg": ["84", "84", "84", "93", "93", "93"],
                          "dep": ["01", "01", "07", "13", "13", "83"],
                          "com": ["01001", "01002", "07001", "13001", "13002", "83001"],
                          "libelle_com": ["Sainte-Croix", "Ambérieu", "Accons", "Aix",
                                          "Sainte-Croix", "Brignoles"]})
    table = pd.concat([table.assign(sexe="F", effectif=[300, 120, 9, 900, 40, 7]),
                       table.assign(sexe="H", effectif=[280, 110, 8, 850, 38, 6])])
    guessed = _guess(table)
    assert guessed["levels"] == ["reg", "dep", "com"] and guessed["count_column"] == "effectif"
    assert guessed["left_out"] == []  # a name shared by two communes is still a name
    assert roles.guess_name_columns(table, guessed["levels"]) == {"com": "libelle_com"}


def test_a_dutch_person_file_has_no_id_for_a_level_and_no_age_for_a_count():
    guessed = _guess(_people(3000))
    assert guessed["levels"] == ["provincie", "gemeente", "wijk"]
    assert guessed["count_column"] is None and guessed["category_columns"] == ["geslacht"]
    renamed = _people(3000).rename(columns={"persoon_id": "lopnr", "huishouden_id": "hhnr"})
    assert _guess(renamed)["levels"][-1] == "wijk"  # ids by their many values, any name


def test_a_count_named_in_no_known_language_is_the_table_s_only_count():
    table = pd.DataFrame({"okres": ["A", "A", "B"], "obec": ["A1", "A2", "B1"],
                          "pocet": [120, 35, 80]})
    assert _guess(table)["count_column"] == "pocet"
    persons = table.loc[table.index.repeat([3, 2, 2])].rename(columns={"pocet": "vek"})
    assert _guess(persons)["count_column"] is None  # cells repeat: one row per person


def test_counts_written_with_a_thousands_separator_are_said_so():
    table = pd.DataFrame({"reg": ["84", "93"], "com": ["01001", "13001"],
                          "effectif": ["1 234", "987"], "note": ["a b", "c"]})
    assert roles.separated_numbers(table) == ["effectif"]
    guessed = _guess(table)
    assert guessed["separated"] == ["effectif"] and "effectif" not in guessed["left_out"]


def test_a_table_of_one_row_per_unit_keeps_its_finest_level():
    """A wide census table or a geography file (one row per unit, no count column) lost its
    finest level to the rule meant for a person's id."""
    wide = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"],
                         "age_0_19": [5, 7, 9], "age_20_64": [10, 12, 3],
                         "age_65_plus": [4, 1, 2]})
    assert _guess(wide)["levels"] == ["state", "county"]
    geography = pd.DataFrame({"reg": ["84", "84", "84", "93", "93"],
                              "dep": ["01", "01", "07", "13", "83"],
                              "com": ["01001", "01002", "07001", "13001", "83001"],
                              "denominazione": ["Ambérieu", "Belley", "Accons", "Aix",
                                                "Brignoles"]})
    guessed = _guess(geography)
    assert guessed["levels"] == ["reg", "dep", "com"]
    assert guessed["left_out"] == []  # a name column in Italian is a name, not a level
    ids = _people(3000).rename(columns={"persoon_id": "id_osoby"})
    assert _guess(ids)["levels"][-1] == "wijk"


def test_an_austrian_bundesland_number_is_a_level():
    table = pd.DataFrame({"bundesland": [1, 1, 1, 2, 2], "bezirk": [101, 101, 102, 201, 202],
                          "gemeinde": [10101, 10102, 10201, 20101, 20201],
                          "anzahl": [5, 6, 7, 8, 9]})
    assert _guess(table)["levels"] == ["bundesland", "bezirk", "gemeinde"]


def test_swiss_commuters_are_a_flow_table():
    """German compounds: Wohnkanton (home), Arbeitsbezirk (work), Pendler (commuters)."""
    table = pd.DataFrame({"wohnkanton": [1, 1, 2], "wohnbezirk": [101, 102, 201],
                          "arbeitskanton": [1, 2, 2], "arbeitsbezirk": [101, 201, 201],
                          "pendler": [120, 35, 80]})
    assert qc.od_candidates(table) == (["wohnkanton", "wohnbezirk"],
                                          ["arbeitskanton", "arbeitsbezirk"])
    assert roles.count_candidates(table) == ["pendler"] and qc.fits(table, "flows")


def test_more_foreign_query_tables():
    """Spanish flows (residencia/trabajo, personas), a French household-size table
    (taille_menage, nombre_menages), an age column with '100+' (read as text)."""
    flows = pd.DataFrame({"municipio_residencia": ["28079", "28005", "08019"],
                          "provincia_residencia": ["28", "28", "08"],
                          "provincia_trabajo": ["28", "08", "08"],
                          "municipio_trabajo": ["28079", "08019", "08015"],
                          "personas": [10, 2, 7]})
    # coarse to fine, whatever the table's order
    assert qc.od_candidates(flows) == (["provincia_residencia", "municipio_residencia"],
                                          ["provincia_trabajo", "municipio_trabajo"])
    assert roles.count_candidates(flows)[0] == "personas"
    sizes = pd.DataFrame({"dep": ["01", "01", "2A"], "taille_menage": [1, 2, 1],
                          "nombre_menages": [40, 25, 9]})
    assert "taille_menage" not in roles.group_candidates(sizes, ["dep"])
    assert qc.fits(sizes, "group-sizes", ["dep"])
    ages = pd.DataFrame({"comune": ["001", "002"], "eta": ["5", "100+"], "residenti": [3, 4]})
    assert roles.attribute_candidates(ages, ["comune"]) == ["residenti"]  # may be picked ...
    assert not qc.fits(ages, "ranges", ["comune"])  # ... but it is a count: no guess

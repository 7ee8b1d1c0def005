"""Every dashboard page renders without exception on the bundled samples (Streamlit AppTest),
and bad input shows a message instead of a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from hierdp_core.data.samples import SAMPLES
from hierdp_core.number_text import significant
from hierdp_core.ui import plotly_view

PAGES = ["app.py", "pages/1_Data.py", "pages/2_Hierarchy.py",
         "pages/3_Mechanism_and_budget.py", "pages/4_Results.py", "pages/5_Trade-offs.py",
         "pages/6_Export.py"]
TIMEOUT = 120
ROOT = Path(__file__).resolve().parents[1]


def page(path: str, sample: str | None = None) -> AppTest:
    """An AppTest of the app (entry point app.py) switched to ``path``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if path != "app.py":
        at.switch_page(path)
    if sample is not None:
        from hierdp_core.ui import session

        s = SAMPLES[sample]
        at.session_state[session.DATASET] = {"name": s.title, "sample": sample,
                                              "table": s.loader(), "version": 1}
        at.session_state[session.ROLES] = {"levels": list(s.levels), "count_column": s.count_column,
                                            "category_columns": list(s.category_columns),
                                            "local_codes": False}
    return at


def figure_specs(at: AppTest) -> list[str]:
    """The JSON of every figure the run drew, with ``st.plotly_chart`` or
    `hierdp_core.ui.plotly_view.show`, in page order within each kind."""
    specs = [chart.proto.spec for chart in at.get("plotly_chart")]
    return specs + [json.loads(element.proto.json)["figure"]
                    for element in at.get("bidi_component")
                    if element.proto.component_name == plotly_view.COMPONENT_NAME]


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("sample", list(SAMPLES))
@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_on_every_sample(path, sample):
    at = page(path, sample).run()
    assert_clean(at)
    assert at.title, "every page has a title"


def test_results_page_runs_a_consistent_release():
    from hierdp_core.ui import session

    at = page("pages/4_Results.py", next(iter(SAMPLES))).run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    h = release.hierarchy
    assert h.consistency_violations(release.values) == 0
    assert (release.values >= 0).all() and release.is_integer
    assert len(at.dataframe) == 1, "the metrics; the table of every unit waits to be opened"
    metrics = at.dataframe[0].value  # three significant figures; the % columns say so
    assert "Mean absolute percentage error (%)" in metrics.columns
    for column in metrics.select_dtypes("float"):
        values = metrics[column].dropna().to_numpy()
        np.testing.assert_array_equal(values, significant(values), err_msg=column)
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    assert "**Release:** ready" in sidebar  # refreshed after the run on the same page
    at.session_state["res_units"] = True  # the expander "Every unit" opened
    at.run()
    units = at.dataframe[1].value
    assert len(units) == h.level_size(h.n_levels - 1)
    assert (units.iloc[:, 4] == release.values[h.level_slice(h.n_levels - 1)].sum(axis=1)).all()


def test_bad_table_shows_a_message_not_a_traceback():
    from hierdp_core.ui import session

    bad = pd.DataFrame({"state": ["A", "B"], "county": ["x", "x"], "n": [3, -1]})
    at = page("pages/1_Data.py")
    at.session_state[session.DATASET] = {"name": "bad.csv", "sample": None, "table": bad,
                                          "version": 1}
    at.session_state[session.ROLES] = {"levels": ["state", "county"], "count_column": "n",
                                        "category_columns": [], "local_codes": False}
    at.run()
    assert not at.exception
    assert at.error and "more than one" in at.error[0].value
    for path in ("pages/4_Results.py", "pages/2_Hierarchy.py"):
        at2 = page(path)
        at2.session_state[session.DATASET] = at.session_state[session.DATASET]
        at2.session_state[session.ROLES] = at.session_state[session.ROLES]
        at2.run()
        assert not at2.exception and at2.error


def test_mechanism_page_changes_the_ledger():
    at = page("pages/3_Mechanism_and_budget.py", "synthetic-us-like").run()
    assert_clean(at)
    at.select_slider(key="epsilon").set_value(0.1).run()
    assert_clean(at)
    from hierdp_core.ui import session

    assert at.session_state[session.SETTINGS]["epsilon"] == 0.1
    at.radio(key="definition").set_value("zcdp").run()
    assert_clean(at)
    assert at.session_state[session.SETTINGS]["definition"] == "zcdp"


def test_tradeoff_sweep_runs():
    at = page("pages/5_Trade-offs.py", "synthetic-us-like").run()
    at.multiselect(key="sw_eps").set_value([0.5, 2.0])
    at.slider(key="sw_trials").set_value(2)
    at.button(key="sw_run").click().run()
    assert_clean(at)
    from hierdp_core.ui import session

    assert len(at.session_state[session.SWEEP]) > 0
    assert "one panel per mechanism" in figure_specs(at)[0]  # the default view (issue 31)
    for view, title in (("relative", "relative to Geometric noise"), ("overlaid", " vs epsilon")):
        at.button_group(key="sw_view").set_value(view).run()
        assert_clean(at)
        assert title in figure_specs(at)[0]


def test_group_sizes_page_releases_and_sweeps():
    from hierdp_core.ui import samples, session

    at = page("pages/7_Group_sizes.py").run()
    assert_clean(at)
    _, release, metrics, _ = at.session_state[session.GS_RELEASE]
    h = release.hierarchy
    assert release.mechanism == samples.GS_DEFAULT_MECHANISM == "gs-kuo-hierarchical"
    assert h.consistency_violations(release.values) == 0 and (release.values >= 0).all()
    assert (metrics["faithfulness_gap"] == 0).all()
    at.selectbox(key="gs_mechanism").select("gs-noisy").run()
    assert_clean(at)
    assert at.session_state[session.GS_RELEASE][1].mechanism == "gs-noisy"
    at.button(key="gs_sw_run").click().run()
    assert_clean(at)
    runs = at.session_state[session.GS_SWEEP]
    assert set(runs["mechanism"]) == {"gs-topdown", "gs-kuo-hierarchical"}
    assert len(runs) == 2 * 3 * 2 * 3  # mechanisms x epsilons x trials x levels
    assert "12 releases in" in at.session_state[f"{session.GS_SWEEP}_timing"]
    at.button(key="gs_sw_run").click().run()  # the same settings again: the kept sweep
    assert at.session_state[session.GS_SWEEP] is runs
    assert at.session_state[f"{session.GS_SWEEP}_timing"].endswith("(kept).")


def test_flows_page_releases_maps_and_sweeps():
    from hierdp_core.ui import samples, session

    at = page("pages/8_Flows.py").run()
    assert_clean(at)
    _, release, metrics, _ = at.session_state[session.FLOW_RELEASE]
    assert release.mechanism == "inftda" and release.consistency_violations() == 0
    assert release.total() == samples.flow_data().n
    [shown] = [d.value for d in at.dataframe if "Largest absolute error" in d.value.columns]
    assert len(shown) == 5 and shown["Largest absolute error"].iloc[0] == 0
    assert len(figure_specs(at)) >= 5  # levels, map, three matrices
    specs = [spec.replace(" ", "") for spec in figure_specs(at)]
    assert sum('"text":"flights"' in spec for spec in specs) >= 3  # levels, two matrices
    at.selectbox(key="fl_mechanism").select("tda-l2").run()
    assert_clean(at)
    at.select_slider(key="fl_epsilon").set_value(0.1).run()
    assert_clean(at)
    key, release, metrics, _ = at.session_state[session.FLOW_RELEASE]
    assert release.mechanism == "tda-l2" and key[1] == 0.1
    assert release.privacy["epsilon_tight"] == pytest.approx(0.1)
    for level, show in [(4, "false positives"), (2, "true")]:
        at.selectbox(key="fl_map_level").select(level).run()
        at.radio(key="fl_map_show").set_value(show).run()
        assert_clean(at)
    charts = len(figure_specs(at))
    at.button(key="fl_sw_run").click().run()
    assert_clean(at)
    runs = at.session_state[session.FLOW_SWEEP]
    assert set(runs["mechanism"]) == set(samples.FLOW_SWEEP_DEFAULT)
    assert len(runs) == 3 * 3 * 2 * 5  # mechanisms x epsilons x trials x levels
    assert at.selectbox(key="fl_sw_level").value == "airport>airport"
    assert len(figure_specs(at)) == charts + 1  # the sweep
    at.selectbox(key="fl_mechanism").select("stability-histogram").run()
    assert_clean(at)


def test_ranges_page_releases_compares_and_sweeps():
    from hierdp_core.ui import samples, session, widgets

    at = page("pages/9_Ranges.py").run()
    assert_clean(at)
    # the partition's display: by default DAWA skips it on the provinces at epsilon 1 (their
    # release says it does not pay), "always" runs it
    at.radio(key="rg_dawa_partition_if").set_value("always").run()
    key, release, metrics, seconds = at.session_state[session.RANGE_RELEASE]
    data = samples.range_data(("region", "province"))
    h = data.hierarchy
    assert release.mechanism == "dawa" and key[0] == ("region", "province")
    assert h.consistency_violations(release.values) == 0 and (release.values >= 0).all()
    assert release.values.shape == (h.n_nodes, 101) and release.edges is not None
    assert list(metrics["level_name"]) == ["total", "region", "province"]
    unit = at.selectbox(key="rg_unit_2").value  # the largest released province: Rome
    assert widgets.node_display_names(data, 2)[unit] == "Roma (058)"
    assert len(figure_specs(at)) == 2  # histogram with buckets, cumulative curves
    fig = figure_specs(at)[0]
    assert "buckets" in fig and '"type":"rect"' in fig.replace(" ", "")
    provinces = release.edges[h.level_slice(2)]  # DAWA partitions the finest level only
    assert all(e is None for e in release.edges[:h.level_slice(2).start])
    kept = sum(e.size - 1 for e in provinces) / len(provinces)  # ages at epsilon 1
    hint = [i.value for i in at.info if "buckets of their own" in i.value]
    assert kept > 60 and len(hint) == 1 and f"kept on average {kept:.0f} of the 101" in hint[0]
    at.radio(key="rg_workload").set_value("bands").run()
    assert_clean(at)
    assert at.session_state[session.RANGE_RELEASE][0][4] == "bands"
    at.selectbox(key="rg_mechanism").select("greedy-h").run()
    assert_clean(at)
    assert at.session_state[session.RANGE_RELEASE][1].mechanism == "greedy-h"
    assert "no partition" in figure_specs(at)[0]
    assert not [i for i in at.info if "buckets of their own" in i.value]
    at.multiselect(key="rg_cmp_mechs").set_value(["identity", "privelet", "h2"])
    at.button(key="rg_cmp_run").click().run()
    assert_clean(at)
    _, runs = at.session_state[session.RANGE_COMPARE]
    assert list(pd.unique(runs["mechanism"])) == ["greedy-h (this release)", "identity",
                                                  "privelet", "h2"]
    assert len(figure_specs(at)) == 3
    at.multiselect(key="rg_sw_mechs").set_value(["greedy-h", "identity"])
    at.multiselect(key="rg_sw_eps").set_value([0.1, 1.0])
    at.button(key="rg_sw_run").click().run()
    assert_clean(at)
    assert len(at.session_state[session.RANGE_SWEEP]) == 2 * 2 * 2 * 3  # mechs x eps x trials x levels
    assert at.selectbox(key="rg_sw_level").value == "province"
    at.selectbox(key="rg_mechanism").select("dawa-reference").run()
    assert not at.exception
    assert any("privacy not established" in e.value for e in at.error)


def uploaded(at: AppTest, table: pd.DataFrame, levels: list[str],
             count_column: str | None = None) -> AppTest:
    """``at`` with ``table`` as the table uploaded on the Data page."""
    from hierdp_core.ui import session

    at.session_state[session.DATASET] = {"name": "mine.csv", "sample": None, "table": table,
                                          "version": 1}
    at.session_state[session.ROLES] = {"levels": levels, "count_column": count_column,
                                        "category_columns": [], "local_codes": False}
    return at


def on_upload(at: AppTest, prefix: str) -> AppTest:
    """Run ``at`` (a query page) with its source set to the uploaded table from the start,
    as a user's choice kept in the session sets it: the bundled sample's default release,
    which a first run on the sample makes, is not needed by a test of the upload."""
    at.session_state[f"{prefix}_source"] = "upload"
    at.run()
    assert at.radio(key=f"{prefix}_source").value == "upload"
    return at


def use_guess(at: AppTest, prefix: str) -> AppTest:
    """Click a query page's "Use the guessed columns" (its roles are never preset)."""
    return at.button(key=f"{prefix}_up_suggest").click().run()


def test_query_pages_without_an_upload_say_where_to_get_one():
    for path, prefix in [("pages/7_Group_sizes.py", "gs"), ("pages/8_Flows.py", "fl"),
                         ("pages/9_Ranges.py", "rg")]:
        at = page(path).run()
        at.radio(key=f"{prefix}_source").set_value("upload").run()
        assert_clean(at)
        assert any("Upload your table on the Data page" in i.value for i in at.info)


def release_files(at) -> list:
    """The download buttons of release files (not the configuration's save button or the
    script that reproduces the release)."""
    return [b for b in at.get("download_button")
            if not b.key.endswith(("_cfg_save", "_script"))]


def test_group_sizes_page_on_an_uploaded_table():
    from hierdp_core.ui import session

    people = pd.DataFrame({"state": ["A"] * 7 + ["B"] * 5,
                           "county": ["A1", "A1", "A1", "A2", "A2", "A2", "A2"] + ["B1"] * 5,
                           "household": ["h1", "h1", "h2", "h3", "h3", "h3", "h4",
                                         "h5", "h5", "h6", "h7", "h7"]})
    at = on_upload(uploaded(page("pages/7_Group_sizes.py"), people, ["state", "county"]), "gs")
    assert_clean(at)
    assert at.selectbox(key="gs_up_group").value is None  # a guess waits for a click
    use_guess(at, "gs")
    assert_clean(at)
    assert at.selectbox(key="gs_up_group").value == "household"
    _, release, metrics, _ = at.session_state[session.GS_RELEASE]
    assert release.hierarchy.level_size(2) == 3
    assert release.values[0].sum() == 7 and (release.values >= 0).all()
    assert release.hierarchy.consistency_violations(release.values) == 0
    assert any("No map" in i.value for i in at.info)
    assert not release_files(at)  # no file without intervals
    at.button(key="gs_prepare").click().run()  # gs-kuo-hierarchical: a bootstrap
    assert_clean(at)
    assert len(release_files(at)) == 3  # CSV, Parquet, manifest
    at.number_input(key="gs_up_max").set_value(3).run()  # a new top-code: a new release
    assert_clean(at)
    assert at.session_state[session.GS_RELEASE][1].values.shape[1] == 3  # sizes 1..3
    at.radio(key="gs_up_rows").set_value("size").run()  # wrong roles: a message, no crash
    assert not at.exception
    assert any("cannot be used for group sizes" in e.value for e in at.error)

    split = people.assign(county=people["county"].where(people.index != 1, "A2"))
    at = on_upload(uploaded(page("pages/7_Group_sizes.py"), split, ["state", "county"]), "gs")
    use_guess(at, "gs")
    assert not at.exception
    assert any("['h1']" in e.value and "more than one" in e.value for e in at.error)


def test_flows_page_on_an_uploaded_table():
    from hierdp_core.ui import session

    trips = pd.DataFrame({"o_state": ["A", "A", "A", "B", "B", "A"],
                          "o_county": ["A1", "A1", "A3", "B10", "B10", "A3"],
                          "d_state": ["A", "B", "A", "B", "A", "A"],
                          "d_county": ["A3", "B10", "A3", "B10", "A1", "A1"]})
    at = on_upload(uploaded(page("pages/8_Flows.py"), trips, []), "fl")
    assert_clean(at)
    assert at.multiselect(key="fl_up_origin").value == []  # a guess waits for a click
    assert at.selectbox(key="fl_up_count").value is None
    assert any("Guessed from the table, not applied: origin levels: o_state, o_county"
               in i.value for i in at.info)
    use_guess(at, "fl")
    assert_clean(at)
    assert at.multiselect(key="fl_up_origin").value == ["o_state", "o_county"]
    _, release, metrics, _ = at.session_state[session.FLOW_RELEASE]
    assert release.total() == 6 and release.consistency_violations() == 0
    assert list(metrics["level_name"]) == ["total", "total>state", "state>state",
                                           "state>county", "county>county"]
    assert any("No flow map" in i.value for i in at.info)  # codes unknown to hierdp
    assert any("O/D matrices, state → state" in h.value for h in at.subheader)
    specs = figure_specs(at)
    assert any('"text":"trips"' in spec.replace(" ", "") for spec in specs)  # the data's unit
    assert not any('"text":"flights"' in spec.replace(" ", "") for spec in specs)
    counted = trips.drop_duplicates().assign(n=[3, 1, 1, 2, 1, 1])
    at = on_upload(uploaded(page("pages/8_Flows.py"), counted, []), "fl")
    use_guess(at, "fl")
    assert_clean(at)
    assert at.selectbox(key="fl_up_count").value == "n"
    assert at.session_state[session.FLOW_RELEASE][1].total() == 9
    at.multiselect(key="fl_up_destination").set_value(["d_state"]).run()  # 2 vs 1 levels
    assert not at.exception
    assert any("cannot be used for flows" in e.value and "same number" in e.value
               for e in at.error)


def test_ranges_page_on_an_uploaded_table():
    from hierdp_core.ui import session

    rows = [(r, f"{r}{p}", minutes, 5 + (minutes * 7 + len(p)) % 11)
            for r in ("N", "S") for p in ("a", "b", "c") for minutes in range(0, 60, 5)]
    travel = pd.DataFrame(rows, columns=["region", "district", "minutes", "commuters"])
    at = on_upload(uploaded(page("pages/9_Ranges.py"), travel, ["region", "district"]), "rg")
    assert not at.exception
    assert at.selectbox(key="rg_up_attribute").value is None  # chosen, never preset
    at.selectbox(key="rg_up_attribute").select("minutes").run()
    assert not at.exception
    at.selectbox(key="rg_up_count").select("commuters").run()
    assert_clean(at)
    _, release, metrics, _ = at.session_state[session.RANGE_RELEASE]
    assert release.values.shape == (1 + 2 + 6, 56)  # every minute 0..55 of the observed range
    assert (release.values >= 0).all() and release.values.dtype.kind == "i"
    assert release.hierarchy.consistency_violations(release.values) == 0
    assert any("One unit: released and true values" in h.value for h in at.subheader)
    at.text_input(key="rg_up_domain").input("0-59").run()  # the public domain
    assert_clean(at)
    assert at.session_state[session.RANGE_RELEASE][1].values.shape[1] == 60
    at.radio(key="rg_workload").set_value("bands").run()
    assert_clean(at)
    assert at.text_area(key="rg_up_bands_0_59").value == "0-29,30-59"  # follows the domain
    at.text_input(key="rg_up_domain").input("10-20").run()  # values outside: a message
    assert not at.exception
    assert any("cannot be used for range queries" in e.value and "outside the domain" in e.value
               for e in at.error)


def test_level_names_in_the_plural():
    from hierdp_core.ui.widgets import plural

    assert [plural(w) for w in ("county", "municipality", "region", "day", "class")] == [
        "counties", "municipalities", "regions", "days", "classes"]


def test_uploaded_us_codes_get_the_bundled_maps():
    """A user's table with US state and county FIPS codes (here the US sample, uploaded)
    is drawn on the bundled boundaries on the Results page, the Export page and, as
    households, on the Group sizes page; a table with unknown codes gets no map."""
    table = SAMPLES["us-counties"].loader().rename(columns={"county": "fips"})
    at = uploaded(page("pages/4_Results.py"), table, ["state", "fips"], "population").run()
    assert_clean(at)
    assert any("Boundaries: bundled: " in c.value and "level county" in c.value
               for c in at.caption)
    assert len([s for s in figure_specs(at) if "choropleth" in s]) == 1
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert any(b.proto.label.startswith("Release GeoJSON") for b in at.get("download_button"))

    households = pd.DataFrame({"state": ["06", "06", "36"], "county": ["06037", "06073", "36061"],
                               "household": ["a", "b", "c"]})
    at = on_upload(uploaded(page("pages/7_Group_sizes.py"), households, ["state", "county"]), "gs")
    use_guess(at, "gs")
    assert_clean(at)
    assert any("choropleth" in s for s in figure_specs(at))
    at = uploaded(page("pages/4_Results.py"), table.assign(fips="X" + table["fips"]),
                  ["state", "fips"], "population").run()
    assert_clean(at)
    assert any("no bundled boundaries match" in i.value for i in at.info)

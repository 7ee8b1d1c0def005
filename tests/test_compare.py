"""Two configurations side by side (hierdp_core.compare) and the Compare page (AppTest):
the same seed gives the same noise draw, maps share one colour scale, the difference map
is centred at 0, the error table has a row per level."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import square_geojson
from test_app import assert_clean, page

from hierdp_core import compare as cmp
from hierdp_core.errors import InputError


@pytest.fixture(scope="module")
def comparison(small_county_data):
    return cmp.compare(small_county_data, cmp.Side("topdown", 1.0, seed=3),
                       cmp.Side("raw-geometric", 0.5, split="finer", seed=3))


def test_each_side_is_its_own_seeded_release(small_county_data, comparison):
    a, b = comparison.releases
    assert (a.mechanism, b.mechanism) == ("topdown", "raw-geometric")
    assert a.randomness["seed"] == b.randomness["seed"] == 3
    np.testing.assert_array_equal(a.values, cmp.release_side(
        small_county_data, cmp.Side("topdown", 1.0, seed=3)).values)
    assert b.privacy["epsilon"] == 0.5
    np.testing.assert_allclose(b.ledger["share"], np.arange(1, 4) / 6)


def test_the_same_configuration_twice_differs_by_nothing_with_the_same_seed(
        small_county_data):
    side = cmp.Side("raw-laplace", 1.0, seed=5)
    same = cmp.compare(small_county_data, side, side)
    view = cmp.level_view(same, small_county_data, 2)
    assert (view["difference"] == 0).all()
    other = cmp.compare(small_county_data, side, cmp.Side("raw-laplace", 1.0, seed=6))
    assert (cmp.level_view(other, small_county_data, 2)["difference"] != 0).any()


def test_level_view_and_by_level_table(small_county_data, comparison):
    h = small_county_data.hierarchy
    view = cmp.level_view(comparison, small_county_data, 2)
    assert len(view) == h.level_size(2)
    np.testing.assert_array_equal(view["difference"], view["B"] - view["A"])
    np.testing.assert_array_equal(view["truth"], small_county_data.node_counts()[
        h.level_slice(2)].sum(axis=1))
    parent = h.level_offsets[1]
    assert len(cmp.level_view(comparison, small_county_data, 2, parent=parent)) == \
        len(h.children(parent))
    table = cmp.by_level_table(comparison, "mae")
    assert list(table["level"]) == list(h.level_names)
    np.testing.assert_allclose(table.iloc[:, 3], table.iloc[:, 2] - table.iloc[:, 1])
    with pytest.raises(InputError):
        cmp.by_level_table(comparison, "nonsense")
    with pytest.raises(InputError):
        cmp.level_view(comparison, small_county_data, 0)
    fig = cmp.error_by_level_figure(comparison, "rmse")
    assert [t.name for t in fig.data] == comparison.labels()


def test_maps_share_one_scale_and_the_difference_is_centred(small_county_data, comparison):
    view = cmp.level_view(comparison, small_county_data, 2)
    maps = cmp.comparison_maps(square_geojson(view["code"]), view, comparison.labels())
    a, b, diff = (m.data[0] for m in maps)
    assert (a.zmin, a.zmax) == (b.zmin, b.zmax)
    top = max(view["A"].max(), view["B"].max())
    assert a.zmax == pytest.approx(np.log10(1 + top))
    assert diff.zmid == 0 and diff.zmin == -diff.zmax
    assert diff.zmax == pytest.approx(np.abs(view["difference"]).max() or 1.0)


# ---- the page (AppTest) ---------------------------------------------------------------------
PATH = "pages/10_Compare.py"


def test_page_compares_two_configurations():
    at = page(PATH, "synthetic-us-like").run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert [r.randomness["seed"] for r in comparison.releases] == [0, 0]
    at.selectbox(key="cmp_mech_B").set_value("raw-laplace").run()
    at.number_input(key="cmp_seed_A").set_value(4).run()
    assert any("press **Compare**" in i.value for i in at.info)
    at.button(key="cmp_run").click().run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert [r.mechanism for r in comparison.releases] == ["topdown", "raw-laplace"]
    assert [r.randomness["seed"] for r in comparison.releases] == [4, 4]  # same seed
    table = at.dataframe[0].value
    assert len(table) == 3 and "B − A" in table.columns
    at.checkbox(key="cmp_same_seed").uncheck().run()
    at.number_input(key="cmp_seed_B").set_value(9).run()
    at.button(key="cmp_run").click().run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert [r.randomness["seed"] for r in comparison.releases] == [4, 9]


@pytest.mark.parametrize("sample", ["us-counties", "italy-municipalities"])
def test_page_renders_on_the_other_samples(sample):
    at = page(PATH, sample).run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert len(comparison.metrics[0]) == comparison.releases[0].hierarchy.n_levels


def test_new_data_compares_again():
    at = page(PATH, "synthetic-us-like").run()
    from hierdp_core.ui import session

    at.switch_page("app.py").run()
    at.button(key="start_us-counties").click().run()  # another sample: the Results page
    at.switch_page(PATH).run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert comparison.releases[0].hierarchy.level_size(2) == 3141
    assert at.session_state[session.DATASET]["sample"] == "us-counties"


def test_the_page_follows_zcdp_and_names_a_side_it_cannot_release():
    """Under zCDP (Mechanism & budget) both sides were released under pure ε-DP whatever
    ρ said; now at ρ, among the mechanisms that give zCDP. A split with no share for the
    national total failed the whole page with a message naming neither side: the side
    (and the sweep's mechanism) is named."""
    from hierdp_core.ui import session

    at = page(PATH, "synthetic-us-like")
    at.session_state[session.SETTINGS] = {**session.settings(3), "definition": "zcdp",
                                          "rho": 0.1}
    at.run()
    assert_clean(at)
    comparison = at.session_state["hd_compare_ab"][1]
    assert [r.privacy["definition"] for r in comparison.releases] == ["zcdp", "zcdp"]
    assert [r.privacy["rho"] for r in comparison.releases] == [0.1, 0.1]
    assert "raw-geometric" not in at.selectbox(key="cmp_mech_B").options
    at = page(PATH, "synthetic-us-like")
    at.session_state[session.SETTINGS] = {**session.settings(3), "weights": [0, 1, 1]}
    at.run()
    assert not at.exception
    assert any(e.value.startswith("configuration B (Geometric noise, ε = 1): the raw "
                                  "mechanism publishes every level") for e in at.error)


def test_a_sweep_names_the_mechanism_a_split_does_not_fit():
    import pandas as pd

    from hierdp_core.errors import BudgetError
    from hierdp_core.experiments import sweep
    from hierdp_core.queries.counts import count_data_from_table

    data = count_data_from_table(pd.DataFrame({"s": ["A", "B"], "c": ["a", "b"], "n": [3, 4]}),
                                 ["s", "c"], count_column="n")
    with pytest.raises(BudgetError, match="^Geometric noise: the raw mechanism publishes"):
        sweep(data, ["topdown", "raw-geometric"], [1.0], 1, split=[0, 1, 1])

"""The dashboard's publishable flow and range releases (secure redraw) carry ``lower`` and
``upper`` at 90%, recorded in their manifests; a page warns exactly when the release's
intervals are flagged as not calibrated (none is: stability-histogram's coarser levels carry
the suppression bound); the downloads say the error the re-runs estimate per level
(none for stability-histogram, whose suppression they do not reproduce). (The Group sizes page's default, the whole
us-households sample, takes about a minute to redraw with intervals: left to the CLI tests.)"""

from __future__ import annotations

import pytest
from test_app import assert_clean, page

from hierdp_core.export import build_manifest
from hierdp_core.intervals import uncalibrated_warning
from hierdp_core.mechanism_names import title
from hierdp_core.ui import release as rel


@pytest.mark.parametrize(("path", "prefix", "mechanism"), [
    ("pages/8_Flows.py", "fl", None), ("pages/8_Flows.py", "fl", "stability-histogram"),
    ("pages/9_Ranges.py", "rg", None)])
def test_publishable_releases_of_the_query_pages_carry_intervals(path, prefix, mechanism):
    at = page(path).run()
    assert_clean(at)
    if mechanism:
        at.selectbox(key=f"{prefix}_mechanism").set_value(mechanism).run()
        assert_clean(at)
    at.button(key=f"{prefix}_secure").click().run()
    assert_clean(at)
    secure = at.session_state[rel.PUBLISHABLE][prefix][1]
    table = secure.to_frame()
    assert {"lower", "upper"} <= set(table.columns)
    assert ((table["lower"] <= table["value"].clip(lower=0))
            & (table["value"] <= table["upper"])).all()
    record = build_manifest(secure, structure_declared=True)["intervals"]
    assert record["level"] == 0.9
    assert any(method.startswith(("parametric bootstrap", "bias-widened bootstrap"))
               for method in record["method"].values())
    said = [c.value for c in at.caption if "Error estimated from the release" in c.value]
    estimate = record["estimated_error"]["by_level"]  # none for stability-histogram
    assert bool(said) == (mechanism != "stability-histogram") == any(estimate.values())
    if said:
        assert all(f"{name} " in said[-1] for name in estimate)
    caveat = uncalibrated_warning(secure, title(secure.mechanism))  # its plain name
    assert [w.value for w in at.warning if "not calibrated" in w.value] == \
        ([caveat] if caveat else [])
    assert caveat is None


def test_a_query_page_names_the_mechanism_of_uncalibrated_intervals_as_it_shows_it():
    """The Group sizes page warned of 'the intervals of gs-kuo-hierarchical', the code's
    key, where the page says 'Kuo et al., hierarchical'."""
    at = page("pages/7_Group_sizes.py").run()
    (caveat,) = [w.value for w in at.warning if "not calibrated" in w.value]
    assert caveat.startswith("the intervals of Kuo et al., hierarchical at total")

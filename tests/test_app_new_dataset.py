"""Loading another dataset resets the count release's settings (docs/dashboard.md: "loading
another dataset resets them"): a mechanism, its parameters, ε, the split and the Results
page's seed chosen for one table do not carry over into the first release of the next
(AppTest: set on the Mechanism & budget page, then Home's "Start with this sample")."""

from __future__ import annotations

import pytest
from test_app import assert_clean, page

from hierdp_core.ui import session
from hierdp_core.ui import widget_keys as wk


@pytest.mark.parametrize("sample", ["us-counties", "synthetic-us-like"])
def test_starting_with_a_sample_resets_the_mechanism_and_budget(sample):
    at = page("pages/3_Mechanism_and_budget.py", "us-counties").run()
    at.radio(key=wk.parameter_key(wk.PARAM, "topdown", "noise")).set_value("laplace")
    at.select_slider(key="epsilon").set_value(0.01).run()
    at.selectbox(key=wk.SPLIT_PRESET).set_value("finer").run()
    assert_clean(at)
    changed = dict(at.session_state[session.SETTINGS])
    assert changed["epsilon"] == 0.01 and changed["params"]["noise"] == "laplace"
    at.session_state[session.RANDOMNESS] = {"mode": "Exploration (seeded)", "seed": 9}
    at.switch_page("app.py").run()
    at.button(key=wk.start_key(sample)).click().run()
    assert_clean(at)
    s = at.session_state[session.SETTINGS]
    assert (s["mechanism"], s["epsilon"], s["definition"]) == ("topdown", 1.0, "pure-dp")
    assert s["params"].get("noise", "auto") == "auto"
    assert len(set(s["weights"])) == 1  # the uniform split
    release = at.session_state[session.RELEASE]  # the new data's first release
    assert release.privacy["epsilon"] == 1.0 and release.parameters["noise"] == "auto"
    assert release.randomness["seed"] == 0

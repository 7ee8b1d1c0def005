"""Plain mechanism names (`hierdp_core.mechanism_names`): every registered mechanism has one,
each its own, and the dashboard shows them where a person reads a mechanism (pickers,
captions, the sidebar, Compare's labels, Trade-offs' charts) while the files keep the keys."""

from __future__ import annotations

from test_app import assert_clean, page

from hierdp_core.compare import Side
from hierdp_core.mechanism_names import TITLES, title
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.ui import session

SAMPLE = "us-counties"


def test_every_registered_mechanism_has_a_plain_name_of_its_own():
    keys = [info.name for info in list_mechanisms()]
    assert sorted(keys) == sorted(TITLES)  # none missing, none left over
    assert len(set(TITLES.values())) == len(TITLES)
    assert all(title(k) != k for k in keys)
    assert title("not-registered") == "not-registered"
    assert Side("gs-kuo-hierarchical", 1.0).label() == "Kuo et al., hierarchical, ε = 1"


def shown_text(at) -> str:
    """Every text a person reads on the page: markdown, captions, headers, the sidebar,
    and the options and values of its select boxes and multiselects."""
    parts = [e.value for kind in ("markdown", "caption", "subheader", "info", "warning")
             for e in getattr(at, kind)]
    parts += [e.value for e in at.sidebar.markdown]
    for box in [*at.selectbox, *at.multiselect]:
        parts += [str(o) for o in box.options]
    return "\n".join(parts)


def test_pages_show_plain_names_and_no_mechanism_key():
    keys = [info.name for info in list_mechanisms("counts")]
    at = page("pages/4_Results.py", SAMPLE).run()  # a release first: Export shows it
    for path in ("pages/4_Results.py", "pages/3_Mechanism_and_budget.py",
                 "pages/5_Trade-offs.py", "pages/6_Export.py", "pages/10_Compare.py"):
        at.switch_page(path).run()
        assert_clean(at)
        text = shown_text(at).replace("least-squares estimate", "")  # prose, not a key
        assert "TopDown" in text, path
        raw = [k for k in keys if k in text]
        assert raw == [], (path, raw)
    release = at.session_state[session.RELEASE]
    assert release.mechanism == "topdown"  # the release (and its files) keep the key

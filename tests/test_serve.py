"""The warm start of the dashboard (`hierdp_core.ui.serve`): the modules the pages import are
read from their import statements and imported before the server starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hierdp_core.ui import serve


def test_the_pages_imports_are_read_from_their_source(tmp_path: Path):
    app = tmp_path / "app.py"
    app.write_text("import json\nfrom os import path\nfrom . import sibling\n"
                   "def f():\n    import email.mime\n", encoding="utf-8")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "1_A.py").write_text("from hierdp_core.ui import widgets\n",
                                               encoding="utf-8")
    assert serve.page_scripts(app) == [app, tmp_path / "pages" / "1_A.py"]
    assert sorted(serve.imported_modules(app)) == ["email.mime", "json", "os", "os.path"]
    assert sorted(serve.imported_modules(tmp_path / "pages" / "1_A.py")) == [
        "hierdp_core.ui", "hierdp_core.ui.widgets"]


def test_warm_imports_every_page_module_and_skips_names_that_are_not_modules(tmp_path):
    app = tmp_path / "app.py"
    app.write_text("from hierdp_core.palette import use\nimport hierdp_core.geo.svg_map\n",
                   encoding="utf-8")
    done = serve.warm(app)
    assert "hierdp_core.geo.svg_map" in sys.modules and "hierdp_core.geo.svg_map" in done
    assert "hierdp_core.palette.use" not in done  # a function, imported with its module


def test_a_page_whose_import_fails_fails_the_start(tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import hierdp_core.no_such_module_here\n", encoding="utf-8")
    assert serve.warm(app) == []  # a missing module is left to the page to report
    (tmp_path / "broken_dep.py").write_text("import no_such_dependency_xyz\n",
                                            encoding="utf-8")
    app.write_text("import broken_dep\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
            serve.warm(app)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("broken_dep", None)


def test_the_dashboards_own_pages_are_all_warmed():
    done = serve.warm()
    assert {"hierdp_core.ui.widgets", "hierdp_core.ui.plotly_view", "streamlit"} <= set(done)


def test_warming_the_samples_prepares_what_start_opens(monkeypatch):
    from hierdp_core.data.samples import SAMPLES
    from hierdp_core.ui import count_data, map_layers

    built = []
    monkeypatch.setattr(count_data, "sample_count_data", built.append)
    monkeypatch.setattr(map_layers, "top_level_preview",
                        lambda sample, look: built.append((sample, look)))
    map_layers.warm_bundled_samples()
    assert built[-len(SAMPLES):] == list(SAMPLES)  # every sample's counts, after Home's maps
    assert {look for item in built[:-len(SAMPLES)] for look in [item[1]]} == {
        ("standard", False), ("standard", True)}


def test_the_query_pages_samples_are_warmed_after_home_and_results(monkeypatch):
    from hierdp_core.mechanisms import base
    from hierdp_core.ui import map_layers, samples

    order, released = [], []
    monkeypatch.setattr(map_layers, "warm_bundled_samples", lambda: order.append("home"))
    monkeypatch.setattr(samples, "warm_query_pages", lambda: order.append("query pages"))
    serve.warm_samples()
    assert order == ["home", "query pages"]
    monkeypatch.undo()

    class Recorder:
        def __init__(self, name):
            self.name = name

        def release(self, data, budget, source):
            released.append((self.name, type(data).__name__, budget.delta, source.secure))

    monkeypatch.setattr(base, "get_mechanism", Recorder)
    samples.warm_query_pages()
    # each page's default mechanism on its bundled data, seeded, at a budget it accepts
    assert released == [
        (samples.GS_DEFAULT_MECHANISM, "GroupSizeData", None, False),
        (samples.FLOW_DEFAULT_MECHANISM, "FlowData", samples.FLOW_DEFAULT_DELTA, False),
        (samples.RANGE_DEFAULT_MECHANISM, "RangeData", None, False)]

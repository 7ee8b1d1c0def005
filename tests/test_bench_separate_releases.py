"""The separate-releases benchmark (`benchmarks/bench_separate_releases.py`) on the bundled
sample: one JSON object, every level's coverage over its values x releases."""

from __future__ import annotations

import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_separate_releases  # noqa: E402


def test_separate_releases_on_the_bundled_sample(monkeypatch, tmp_path):
    monkeypatch.setattr(bench_separate_releases, "SHARED", tmp_path / "absent")
    out = StringIO()
    with redirect_stdout(out), redirect_stderr(StringIO()):
        assert bench_separate_releases.main(["--cases", "topdown:1:2,least-squares:1:2"]) == 0
    run = json.loads(out.getvalue())
    assert run["data"] == "us-counties" and set(run["results"]) == {"topdown:1:2",
                                                                   "least-squares:1:2"}
    data = bench_separate_releases.sample_data("us-counties")
    h, k = data.hierarchy, data.node_counts().shape[1]
    for case in run["results"].values():
        levels = case["levels"]
        assert [lv["cells"] for lv in levels] == [h.level_size(lv) * k * 2
                                                  for lv in range(h.n_levels)]
        assert all(0 <= lv["coverage"] <= 1 and lv["se"] > 0 for lv in levels)
    leaves = run["results"]["topdown:1:2"]["levels"][-1]
    assert leaves["coverage"] > 0.8  # thousands of counties at eps 1: near the nominal 0.9

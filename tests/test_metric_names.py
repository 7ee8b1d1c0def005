"""hierdp_core.metric_names: one friendly name and exact definition per metric, covering
every metric column the core's evaluations produce, and the table helper."""

from __future__ import annotations

import pandas as pd

from hierdp_core import metric_names as mn
from hierdp_core.flows.metrics import FLOW_METRICS
from hierdp_core.metrics import COLUMNS, metric_descriptions


def test_every_metric_column_has_a_name_and_definition():
    keys = [*COLUMNS, *FLOW_METRICS, "l1", "emd_mean", "emd_max", "faithfulness_gap",
            "regions", "queries", "mean_query_error", "max_unit_query_error",
            "max_query_error", "cell_mae", "expected_abs_error", "ci95_abs_error"]
    missing = [k for k in keys if k not in mn.REGISTRY]
    assert not missing
    assert not [k for k, e in mn.REGISTRY.items() if "_" in e.name or not e.definition]
    assert len({e.name for e in mn.REGISTRY.values()}) == len(mn.REGISTRY)  # no two alike


def test_metrics_descriptions_are_the_registrys():
    assert metric_descriptions()["mae"] == mn.definition("mae")
    assert mn.label("mae") == ("Mean absolute error — mean over the level's cells of "
                               "|released − true|")
    assert mn.axis_title("mae") == "Mean absolute error (count per cell)"
    assert mn.is_percent("ghost_rate") and not mn.is_percent("mae")


def test_an_unknown_key_stays_readable():
    assert mn.name("new_metric") == "New metric" and mn.definition("new_metric") == ""
    assert mn.label("new_metric") == "New metric"


def test_friendly_table():
    frame = pd.DataFrame({"level_name": ["state"], "mae": [1.5], "new_metric": [2]})
    table = mn.friendly_table(frame, level_name="origin → destination")
    assert list(table["data"].columns) == ["origin → destination", "Mean absolute error",
                                           "New metric"]
    assert table["column_config"]["Mean absolute error"] == {"help": mn.definition("mae")}
    assert table["column_config"]["origin → destination"]["help"] == "the geography level"
    assert "New metric" not in table["column_config"] and table["hide_index"]
    assert list(frame.columns) == ["level_name", "mae", "new_metric"]  # input untouched

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


def test_friendly_table_labels_percentages():
    frame = pd.DataFrame({"mape": [0.00002, 0.4694], "ghost_rate": [0.1, 0.25]})
    table = mn.friendly_table(frame)
    assert list(table["data"].columns) == ["Mean absolute percentage error (%)",
                                           "Ghost rate (false positives)"]
    config = table["column_config"]
    assert config["Ghost rate (false positives)"]["type_config"]["format"] == "percent"
    assert "type_config" not in config["Mean absolute percentage error (%)"]  # already in %


def test_friendly_table_rounds_to_significant_figures_on_request():
    frame = pd.DataFrame({"level_name": ["total", "county"], "units": [1, 3141],
                          "mae": [2.9755, 0.00002345], "ci95_abs_error": [898.7197, 12345.6]})
    assert mn.friendly_table(frame)["data"]["Mean absolute error"].tolist() == [2.9755,
                                                                              0.00002345]
    table = mn.friendly_table(frame, digits=3)
    shown, config = table["data"], table["column_config"]
    assert shown["Mean absolute error"].tolist() == [2.98, 0.0000234]
    assert shown["95% of errors within ±"].tolist() == [899.0, 12300.0]
    assert shown["Units"].tolist() == [1, 3141]  # whole numbers stay as they are
    # thousands separators where a column reaches 1,000; the default display elsewhere
    assert config["95% of errors within ±"]["type_config"]["format"] == "localized"
    assert config["Units"]["type_config"]["format"] == "localized"
    assert "type_config" not in config["Mean absolute error"]
    assert frame["mae"].iloc[0] == 2.9755  # input untouched

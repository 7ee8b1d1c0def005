"""The Data and query pages' guesses on national tables (Streamlit AppTest): each guess is
made on the table as it is now and never proposes a role that would release wrong counts."""

from __future__ import annotations

import pandas as pd
from test_app import assert_clean
from test_app_group_sizes_declared import guessed_upload

from hierdp_core.ui import session


def test_a_melted_table_is_guessed_again_and_its_row_total_is_no_count():
    """A CBS-style wide table with its 'Totaal': once melted, the guess is the long table's
    (count = the melted values, category = the melted columns), never the total."""
    table = pd.DataFrame({"provincie": ["20", "20", "21"], "gemeente": ["0014", "1966", "0080"],
                          "0 tot 15 jaar": [10, 20, 30], "15 tot 65 jaar": [40, 50, 60],
                          "65 jaar of ouder": [5, 6, 7]})
    table["Totaal"] = table.iloc[:, 2:].sum(axis=1)  # 228 people
    at = guessed_upload(table, "nl.csv")
    at.checkbox(key="shape_wide_1").check().run()
    assert any("the count column 'count' gives 228 people" in i.value for i in at.info)
    assert "Totaal" not in at.selectbox(key="roles_count_2").options
    at.button(key="roles_guess_2").click().run()
    assert_clean(at)
    roles = at.session_state[session.ROLES]
    assert (roles["count_column"], roles["category_columns"]) == ("count", ["category"])
    assert any("228 people in total" in s.value for s in at.success)

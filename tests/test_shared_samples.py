"""A bundled sample is loaded and prepared once per server and shared by every session: its
table and its CountData are the same objects, and the counts cannot be changed in place."""

from __future__ import annotations

import numpy as np
import pytest

from hierdp_core.ui import session
from hierdp_core.ui.count_data import sample_count_data
from hierdp_core.ui.samples import sample_table
from tests.test_app import assert_clean, page


def started(sample: str):
    at = page("app.py").run()
    at.button(key=f"start_{sample}").click().run()
    assert_clean(at)
    return at


def test_two_sessions_share_the_sample_and_its_counts():
    first, second = started("us-counties"), started("us-counties")
    tables = [at.session_state[session.DATASET]["table"] for at in (first, second)]
    assert tables[0] is tables[1] is sample_table("us-counties")  # no copy per session
    data = [at.session_state[session.DATA_CACHE][1] for at in (first, second)]
    assert data[0] is data[1] is sample_count_data("us-counties")
    with pytest.raises(ValueError, match="read-only"):
        data[0].leaf_counts[0, 0] = 1
    assert np.array_equal(data[0].node_counts()[0], data[1].node_counts()[0])

"""Small words on the query pages (issue 31, item 1, AppTest): the Flows ledger says "not
measured" where a level gets no noise (it showed "None" in the σ column), and DAWA's
partition share is not labelled "Rho" beside ρ, the zCDP budget; Results' drill-down reads
"all of Italy" (it read "all of total")."""

from __future__ import annotations

from test_app import assert_clean, page


def test_the_flow_ledger_says_not_measured_instead_of_none():
    at = page("pages/8_Flows.py").run()
    assert_clean(at)
    ledger = next(d.value for d in at.dataframe if "σ (noise sd)" in d.value.columns)
    sigma = ledger["σ (noise sd)"]
    assert not sigma.isna().any()
    assert sigma.iloc[0] == "not measured"  # the root: share 0 (InfTDA's default)
    assert all(float(v) > 0 for v in sigma.iloc[1:])


def test_dawa_partition_share_is_not_called_rho():
    at = page("pages/9_Ranges.py").run()
    assert_clean(at)
    labels = [n.label for n in at.number_input]
    assert "Rho" not in labels
    assert "Partition share of ε (DAWA's rho)" in labels


def test_dawa_without_a_partition_says_so_and_claims_no_private_buckets():
    """At the default levels of the Italian sample no level is partitioned: the page said
    "The buckets are released privately (DAWA's Stage 1)" under a chart of none."""
    at = page("pages/9_Ranges.py").run()
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("No level was partitioned here") for c in captions)
    assert any(c.startswith("No partition for this unit") for c in captions)
    assert not any("buckets are released privately" in c for c in captions)


def test_the_drill_down_names_the_whole_country():
    at = page("pages/4_Results.py", "italy-municipalities").run()
    assert_clean(at)
    assert at.selectbox(key="res_within").options[0] == "all of Italy"  # was 'all of total'

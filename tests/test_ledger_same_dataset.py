"""What counts as "the same dataset" in the budget ledger: a counts release is keyed by a
keyed fingerprint of its true counts (`hierdp_core.privacy.dataset_key`), so the same
records in another row order, file format, with a blank line, one row per person, or over
a geography declaring more empty units spend one budget; the file's bytes stay an alias, so
the same file released over other levels does too."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import run_cli as run

import hierdp_core
from hierdp_core.errors import BudgetError
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.dataset_key import counts_fingerprint
from hierdp_core.privacy.ledger import Ledger
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.structure import geography_from_table

COUNTS = pd.DataFrame({"state": ["01", "01", "02", "02"],
                       "county": ["01001", "01003", "02013", "02013"],
                       "sex": ["F", "M", "F", "M"], "count": [1203, 877, 40, 9]})
GEOGRAPHY = pd.DataFrame({"state": ["01", "01", "02"], "county": ["01001", "01003", "02013"]})
CATEGORIES = ("--categories", "sex", "--category-values", "sex=F|M")


def release(capsys, folder, name, out, *extra, geography="geography.csv"):
    return run(capsys, "release", folder / name, "--levels", "state,county",
               "--count-column", "count", "--geography", folder / geography, *CATEGORIES,
               "--mechanism", "topdown", "--interval", "none", "--epsilon", "1",
               "--out", folder / out, *extra)


@pytest.fixture
def folder(tmp_path):
    COUNTS.to_csv(tmp_path / "people.csv", index=False)
    GEOGRAPHY.to_csv(tmp_path / "geography.csv", index=False)
    return tmp_path


def test_the_same_records_in_any_order_or_format_are_one_dataset(capsys, folder):
    code, _, err = release(capsys, folder, "people.csv", "r0", "--budget-total", "10")
    assert code == 0, err
    COUNTS.iloc[::-1].to_csv(folder / "reordered.csv", index=False)
    COUNTS.to_parquet(folder / "people.parquet")
    (folder / "newline.csv").write_text((folder / "people.csv").read_text() + "\n")
    persons = COUNTS.loc[COUNTS.index.repeat(COUNTS["count"])].drop(columns="count")
    persons.sample(frac=1.0, random_state=3).to_csv(folder / "persons.csv", index=False)
    wider = pd.concat([GEOGRAPHY, pd.DataFrame({"state": ["03"], "county": ["03001"]})])
    wider.to_csv(folder / "wider.csv", index=False)  # one more unit, with nobody in it
    for i, name in enumerate(["reordered.csv", "people.parquet", "newline.csv"], start=1):
        code, _, err = release(capsys, folder, name, f"r{i}")
        assert code == 0, err
    code, _, err = run(capsys, "release", folder / "persons.csv", "--levels", "state,county",
                       "--geography", folder / "geography.csv", *CATEGORIES, "--mechanism",
                       "topdown", "--interval", "none", "--epsilon", "1", "--out",
                       folder / "r4")
    assert code == 0, err
    assert release(capsys, folder, "people.csv", "r5", geography="wider.csv")[0] == 0
    hierdp_core.release(COUNTS.sample(frac=1.0, random_state=1), levels=["state", "county"],
                        count_column="count", geography=GEOGRAPHY, category_columns=["sex"],
                        category_values={"sex": ["F", "M"]}, out=folder / "r6")
    [dataset] = Ledger().datasets()
    assert len(dataset.spends) == 7 and dataset.spent == 7.0 and dataset.total == 10.0


def test_the_same_file_over_other_levels_is_the_same_dataset(capsys, folder):
    assert release(capsys, folder, "people.csv", "r1")[0] == 0
    code, _, err = run(capsys, "release", folder / "people.csv", "--levels", "state",
                       "--count-column", "count", "--structure-from-data", "--mechanism",
                       "topdown", "--interval", "none", "--epsilon", "1",
                       "--duplicates", "sum", "--out", folder / "r2")  # counties summed
    assert code == 2 and "budget total is not declared" in err  # its file's bytes: an alias


def test_other_counts_are_another_dataset_and_the_file_finds_its_dataset(capsys, folder):
    assert release(capsys, folder, "people.csv", "r1")[0] == 0
    COUNTS.assign(count=COUNTS["count"] + [0, 0, 0, 1]).to_csv(folder / "other.csv",
                                                                index=False)
    assert release(capsys, folder, "other.csv", "r2")[0] == 0
    assert len(Ledger().datasets()) == 2
    code, out, _ = run(capsys, "budget", "--dataset", folder / "people.csv")
    assert code == 0 and "epsilon 1 spent of 1" in out and "1 release(s)" in out
    assert "note:" not in out
    # another file of the same counts: none under its own name; the note says where
    COUNTS.iloc[::-1].to_csv(folder / "reordered.csv", index=False)
    code, out, _ = run(capsys, "budget", "--dataset", folder / "reordered.csv")
    assert code == 0 and "no publishable release yet" in out
    assert "counts against every earlier dataset with the same counts" in out


def test_the_counts_key_ignores_order_and_empty_units_but_not_counts():
    key = b"k" * 32

    def data(table, geography):
        geo = geography_from_table(geography, ["state", "county"])
        return count_data_from_table(table, ["state", "county"], count_column="count",
                                     category_columns=["sex"], geography=geo,
                                     category_values={"sex": ["F", "M", "X"]})

    base = counts_fingerprint(data(COUNTS, GEOGRAPHY), key)
    assert counts_fingerprint(data(COUNTS.iloc[[2, 0, 3, 1]], GEOGRAPHY.iloc[::-1]),
                              key) == base
    more = pd.concat([GEOGRAPHY, pd.DataFrame({"state": ["09"], "county": ["09009"]})])
    assert counts_fingerprint(data(COUNTS, more), key) == base
    assert counts_fingerprint(data(COUNTS.assign(count=COUNTS["count"] * 2), GEOGRAPHY),
                              key) != base
    assert counts_fingerprint(data(COUNTS, GEOGRAPHY), b"j" * 32) != base  # keyed


def test_a_release_counts_against_the_dataset_an_alias_names(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    first = ledger.reserve("a" * 64, PrivacyBudget.pure(1.0), label="t", destination="o",
                           mechanism="topdown", aliases=("b" * 64,))
    assert ledger.status("b" * 64).spends == (first,)
    ledger.declare_total("c" * 64, 3.0, unit="epsilon", label="t", aliases=("b" * 64,))
    ledger.reserve("c" * 64, PrivacyBudget.pure(2.0), label="t", destination="o",
                   mechanism="topdown")  # "c" is an alias of the dataset "a" now
    [dataset] = ledger.datasets()
    assert dataset.fingerprint == "a" * 64 and dataset.spent == 3.0
    assert [d.fingerprint for d in ledger.matching("ccc")] == ["a" * 64]
    with pytest.raises(BudgetError, match="would exceed"):
        ledger.reserve("d" * 64, PrivacyBudget.pure(0.5), label="t", destination="o",
                       mechanism="topdown", aliases=("c" * 64,))

"""Every release file the dashboard offers carries intervals (issue 17, AppTest): the
exploration downloads of the Export and Flows pages have ``lower`` and ``upper`` and the
manifest its ``intervals`` record, at the level picked (90% by default; at 95% every
interval at least as wide); on the Flows page a bootstrap waits for the "Prepare" click, on
Export it is made as the page opens (issue 31: the buttons at once), a closed form needs
nothing; the publishable release gets its intervals with the secure draw, computed once; a
release's content token is hashed once per release object."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from release_inputs import small_data
from test_app import assert_clean, page
from test_app_verdict import file_names, least_squares_results

from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ui import downloads, session

SAMPLE = "us-counties"


def header(csv: bytes) -> list[str]:
    return csv.splitlines()[0].decode().split(",")


def widths(csv: bytes) -> pd.Series:
    """``upper - lower`` of every row of a release CSV."""
    table = pd.read_csv(io.BytesIO(csv), dtype={"node_id": str}, keep_default_na=False)
    return table["upper"] - table["lower"]


def offered(at) -> set[str]:
    return {b.proto.label for b in at.get("download_button")}


def test_export_offers_the_release_files_with_intervals_only(monkeypatch):
    contents = {}
    file_names(monkeypatch, contents)
    at = page("pages/4_Results.py", SAMPLE).run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)  # TopDown: a bootstrap, made as Export opens, no click
    assert "ex_prepare" not in [b.key for b in at.button]
    assert {"Release table (CSV)", "Release table (Parquet)", "Manifest (JSON)",
            "Release GeoJSON (county)"} <= offered(at)
    assert header(contents["ex_dl_csv"])[-3:] == ["value", "lower", "upper"]
    table = pq.read_table(io.BytesIO(contents["ex_dl_parquet"])).to_pandas()
    assert ((table["lower"] <= table["value"]) & (table["value"] <= table["upper"])).all()
    record = json.loads(contents["ex_dl_manifest"])["intervals"]
    assert record["level"] == 0.9 and any(
        method.startswith("parametric bootstrap") for method in record["method"].values())
    feature = json.loads(contents["dl_geojson"])["features"][0]["properties"]
    release = at.session_state[session.RELEASE]
    assert {f"{side} {band}" for side in ("lower", "upper") for band in release.categories
            } <= set(feature)  # per age band
    assert release.intervals is None  # the release kept is unchanged


def test_the_level_is_chosen_and_the_secure_draw_computes_it_once(monkeypatch):
    contents, calls = {}, []
    file_names(monkeypatch, contents)
    counted = downloads.with_intervals
    monkeypatch.setattr(downloads, "with_intervals",
                        lambda release, level, **kw: calls.append(level) or counted(
                            release, level, **kw))
    at = page("pages/4_Results.py", SAMPLE).run()
    at.switch_page("pages/6_Export.py").run()
    at90 = widths(contents["ex_dl_csv"])
    at.radio(key="ex_iv_level").set_value(0.95).run()  # made at once, as the page opened
    assert_clean(at)
    assert json.loads(contents["ex_dl_manifest"])["intervals"]["level"] == 0.95
    at95 = widths(contents["ex_dl_csv"])  # the file made again: every interval as wide
    assert at95.index.equals(at90.index) and (at95 >= at90).all() and (at95 > at90).any()
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert calls[1:] == [0.95, 0.95]  # the exploration release's, then the secure one's
    assert calls[0] == 0.9  # the default level, made as the page first opened
    assert "ex_pub_prepare" not in [b.key for b in at.button]
    manifest = json.loads(contents["ex_pub_dl_manifest"])
    assert manifest["publishable"] is True and manifest["intervals"]["level"] == 0.95
    assert header(contents["ex_pub_dl_csv"])[-2:] == ["lower", "upper"]
    at.radio(key="ex_iv_level").set_value(0.9).run()  # back to 90%: made for the secure one
    assert not {"ex_prepare", "ex_pub_prepare"} & {b.key for b in at.button}
    assert calls == [0.9, 0.95, 0.95, 0.9]  # the exploration release's 90% was kept
    at.radio(key="ex_iv_level").set_value(0.95).run()  # kept: not computed again
    assert not {"ex_prepare", "ex_pub_prepare"} & {b.key for b in at.button}
    assert calls == [0.9, 0.95, 0.95, 0.9]


def test_closed_form_intervals_need_no_click(monkeypatch):
    at, contents = least_squares_results(monkeypatch, "zcdp")
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert "ex_prepare" not in [b.key for b in at.button]
    assert header(contents["ex_dl_csv"])[-2:] == ["lower", "upper"]
    record = json.loads(contents["ex_dl_manifest"])["intervals"]
    assert set(record["method"].values()) == {"normal"}  # GLS variance, Gaussian noise


def test_flow_downloads_carry_intervals(monkeypatch):
    contents = {}
    file_names(monkeypatch, contents)
    at = page("pages/8_Flows.py").run()
    assert_clean(at)
    assert "fl_dl_csv" not in contents
    assert at.button(key="fl_prepare").label.startswith(
        "Prepare the downloads with 90% intervals (a bootstrap: ")  # about how long
    at.button(key="fl_prepare").click().run()
    assert_clean(at)
    assert header(contents["fl_dl_csv"])[-3:] == ["value", "lower", "upper"]
    record = json.loads(contents["fl_dl_manifest"])["intervals"]
    assert record["level"] == 0.9 and record["replicates"] >= 20
    assert set(record["method"].values()) <= {"bias-widened bootstrap", "exact (invariant)"}


def test_the_interval_methods_are_named_once_with_their_levels():
    from hierdp_core.ui.downloads import methods_by_level

    inverted = "parametric bootstrap, inverted near 0"
    assert methods_by_level({"total": "parametric bootstrap", "state": inverted,
                             "county": inverted}) == (
        f"parametric bootstrap (total); {inverted} (state, county)")
    assert methods_by_level({"total": "closed form", "county": "closed form"}) == "closed form"


def test_a_release_token_is_hashed_once_per_release(monkeypatch):
    release = get_mechanism("gs-topdown").release(small_data("group-sizes"),
                                                  PrivacyBudget.pure(1.0),
                                                  source=NoiseSource(seed=3))
    token = downloads.release_token(release)
    twin = dataclasses.replace(release, values=release.values.copy())
    other = dataclasses.replace(release, values=release.values + np.ones_like(release.values))
    assert downloads.release_token(twin) == token != downloads.release_token(other)
    hashed = []
    monkeypatch.setattr(downloads, "hashlib", SimpleNamespace(
        blake2b=lambda **kw: hashed.append(1) or hashlib.blake2b(**kw)))
    assert downloads.release_token(release) == token and hashed == []  # kept
    with_intervals = downloads.attach_intervals(release, 0.9)
    assert with_intervals is not release  # a new object, its token known at once
    assert downloads.release_token(with_intervals) == token and hashed == []

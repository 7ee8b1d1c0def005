"""Shared test helpers: a hypothesis strategy for random geographic trees given as tables,
a small synthetic county dataset (fixture ``small_county_data``) and square map features.

``tree_tables()`` draws a `TreeTable`: a pandas DataFrame with one column per level
(coarse to fine, ``levels``), a non-negative integer count column ``n`` and, when asked,
category columns. Every leaf appears in one or more rows (duplicates are summed by the
loaders) and the rows are shuffled. Codes are unique within their level (the parent's
code is a prefix) unless ``local=True``, where a code is only unique within its parent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st

from hierdp_core.data.samples import synthetic_us_like
from hierdp_core.queries.counts import count_data_from_table

ALPHABET = "abcxyz019"


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's AppTest installs the script it ran as ``sys.modules["__main__"]`` and
    leaves it there; a Dask worker process started later in the same test process would
    re-run that script (multiprocessing's spawn imports ``__main__``'s file) and fail.
    Every test leaves ``__main__`` as it found it."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture(autouse=True, scope="session")
def _installed_components_scanned_once():
    """Every new Streamlit AppTest scans the metadata of every installed package for
    Streamlit components (0.2 s of CPU and 0.6-1.7 s of disk reads each, for ~190 AppTests
    in the suite). The installed packages do not change while the tests run: the scan is
    made once per test process and its answer given to every AppTest."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests",
                      functools.cache(manifest_scanner.scan_component_manifests))
        yield


@pytest.fixture(autouse=True, scope="session")
def _publisher_key_in_a_temporary_config(tmp_path_factory):
    """Releases made by the tests key their fingerprints with a key in a temporary config
    folder (XDG_CONFIG_HOME) and record their budget in a temporary ledger (HIERDP_HOME),
    both inherited by the CLI and dashboard subprocesses: never the developer's own
    ~/.config/hierdp/fingerprint.key or ~/.hierdp."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        patch.setenv("HIERDP_HOME", str(tmp_path_factory.mktemp("hierdp_home")))
        yield


@pytest.fixture(autouse=True)
def _a_fresh_ledger_per_test(_publisher_key_in_a_temporary_config, tmp_path_factory,
                             monkeypatch):
    """Each test starts with an empty budget ledger: releases of the same sample by
    different tests do not add up."""
    monkeypatch.setenv("HIERDP_HOME", str(tmp_path_factory.mktemp("hierdp_home")))


@pytest.fixture(scope="session")
def shared_dashboard(_publisher_key_in_a_temporary_config, tmp_path_factory):
    """One dashboard per test process (per xdist worker) for the browser tests, started on
    first use: (its URL, its HIERDP_HOME). Tests take it through ``test_browser.server``,
    which empties that folder first, so each test still starts with an empty budget ledger
    (its imports and sample caches stay warm, as for a user's next session)."""
    from tests.browser_tools import running_dashboard

    home = tmp_path_factory.mktemp("dashboard_home")
    with running_dashboard(home=home) as url:
        yield url, home


@pytest.fixture(scope="session")
def shared_dask_cluster(_publisher_key_in_a_temporary_config):
    """One Dask cluster of two single-threaded worker processes (1 GB each) per test process,
    started on first use and shared by the Dask tests (a process cluster takes seconds to
    start and to import hierdp in each worker): a `distributed.Client` of it. Its workers
    are separate processes, as on a real cluster (everything pickled, each keying its own
    keystream); the CLI tests reach it with ``--scheduler client.scheduler.address``."""
    pytest.importorskip("distributed")
    from hierdp_core.engine import dask_engine

    client = dask_engine.open_client(workers=2, memory_limit="1GB")
    yield client
    dask_engine.close_client(client)


@pytest.fixture(scope="session")
def shared_chromium():
    """One headless Chromium (Debian's, driven by Playwright) per test process for the
    browser tests, started on first use; each test opens its own context (cookies, storage
    and session of its own). Tests take it through ``test_browser.browser``, which skips
    (or fails, under HIERDP_REQUIRE_BROWSER) when Chromium or Playwright is missing."""
    import shutil

    from playwright.sync_api import sync_playwright

    from tests.browser_tools import CHROMIUM_ARGS

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class TreeTable:
    table: pd.DataFrame
    levels: list[str]
    categories: list[str]


@st.composite
def tree_tables(
    draw,
    *,
    max_depth: int = 3,
    max_children: int = 3,
    categories: tuple[tuple[str, ...], ...] = (),
    local: bool = False,
    max_count: int = 30,
    max_repeat: int = 2,
) -> TreeTable:
    """A random tree as a table. ``categories``: the values of each category column
    (columns ``cat0``, ``cat1``, ...); each row gets a random value of each."""
    depth = draw(st.integers(1, max_depth))
    levels = [f"level{d}" for d in range(1, depth + 1)]
    child_codes = st.lists(st.text(ALPHABET, min_size=1, max_size=2), min_size=1,
                           max_size=max_children, unique=True)
    paths: list[list[str]] = []

    def grow(path: list[str], d: int) -> None:
        if d == depth:
            paths.append(path)
            return
        for code in draw(child_codes):
            grow(path + [code], d + 1)

    grow([], 0)
    rows = []
    for path in paths:
        for _ in range(draw(st.integers(1, max_repeat))):
            rows.append(path)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = [rows[i] for i in rng.permutation(len(rows))]
    data = {}
    for d, name in enumerate(levels):
        if local:
            data[name] = [r[d] for r in rows]
        else:  # globally unique: the code carries its ancestors' codes
            data[name] = ["".join(f"{c}." for c in r[:d]) + r[d] for r in rows]
    data["n"] = rng.integers(0, max_count + 1, len(rows))
    cat_cols = []
    for i, values in enumerate(categories):
        cat_cols.append(f"cat{i}")
        data[f"cat{i}"] = rng.choice(np.asarray(values, dtype=object), len(rows))
    return TreeTable(pd.DataFrame(data), levels, cat_cols)


def path_ids(table: pd.DataFrame, levels: list[str], depth: int) -> pd.Series:
    """The node id ('a/a.b') of every row's ancestor at ``depth`` (1-based; 0 = 'root')."""
    if depth == 0:
        return pd.Series(["root"] * len(table), index=table.index)
    return table[levels[:depth]].astype(str).agg("/".join, axis=1)


@pytest.fixture(scope="module")
def small_county_data():
    """6 synthetic states, 60 counties, counts only (CountData)."""
    table = synthetic_us_like(seed=1, n_states=6, n_counties=60)
    return count_data_from_table(table, ["state", "county"], count_column="count")


def square_geojson(ids) -> dict:
    """One 1x1 degree square per id, on a grid of 10 columns."""
    features = []
    for i, fid in enumerate(ids):
        x, y = -120 + (i % 10), 30 + i // 10
        ring = [[x, y], [x, y + 1], [x + 1, y + 1], [x + 1, y], [x, y]]
        features.append({"type": "Feature", "id": str(fid), "properties": {},
                         "geometry": {"type": "Polygon", "coordinates": [ring]}})
    return {"type": "FeatureCollection", "features": features}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """Run the `hierdp` command line in-process: (exit code, stdout, stderr)."""
    from hierdp_core.cli.main import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err

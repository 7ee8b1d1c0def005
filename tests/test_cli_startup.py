"""The command line starts light (issue 32): a release too big for memory, ``--help`` and a
usage error are answered before numpy, pandas, scipy or any mechanism module is imported,
and the registry imports only the mechanism module of the query kind asked for.

Which modules a run imported is read from ``python -X importtime`` (one stderr line per
module), in the real entry point (``python -m hierdp_core``): a deterministic stand-in for
"under a second", which a loaded machine cannot promise but an import it never makes can.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hierdp_core.mechanisms as base_package
from hierdp_core.mechanisms import base
from hierdp_core.mechanisms.base import MODULES

ROOT = Path(__file__).resolve().parents[1]
#: modules that cost a second or more to import, or only matter once a release runs
HEAVY = ("numpy", "pandas", "scipy", "scipy.optimize", "opendp", "dask", "geopandas",
         "plotly", "pyarrow", "psutil", "hierdp_core.mechanisms.base",
         *(f"hierdp_core.mechanisms.{module}" for module in MODULES.values()))


def run_importing(*argv, cwd: Path) -> tuple[subprocess.CompletedProcess, set[str], list[str]]:
    """(the finished ``hierdp`` run, the modules it imported, its stderr lines that are not
    import timings)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "hierdp_core",
                           *map(str, argv)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines
                if line.startswith("import time:") and "|" in line}
    said = [line for line in lines if not line.startswith("import time:")]
    return done, imported, said


@pytest.mark.parametrize("mechanism", ["identity", "dawa"])
def test_a_domain_too_big_for_memory_is_refused_before_any_heavy_import(tmp_path, mechanism):
    (tmp_path / "ages.csv").write_text("region,age,residents\nA,30,5\nB,40,3\n")
    start = time.perf_counter()
    done, imported, said = run_importing(
        "release", "ages.csv", "--structure-from-data", "--levels", "region", "--query",
        "ranges", "--attribute", "age", "--count-column", "residents", "--domain",
        "0-100000000", "--mechanism", mechanism, "--epsilon", 1, "--seed", 1, "--out", "r",
        "--max-memory", "8GB", cwd=tmp_path)
    seconds = time.perf_counter() - start
    assert done.returncode == 2 and done.stdout == "", done.stderr[-2000:]
    assert len(said) == 1 and said[0].startswith("error: ") and "--domain" in said[0], said
    assert "at most a domain of" in said[0] and "--max-memory 8.0 GB" in said[0]
    assert not (tmp_path / "r").exists()
    assert imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert seconds < 60  # a loose guard only: the imports above are what keeps it fast


def test_the_early_refusal_covers_sizes_and_declared_categories(tmp_path):
    (tmp_path / "t.csv").write_text("region,sex,size,n\nA,F,1,3\n")
    common = ("release", "t.csv", "--structure-from-data", "--levels", "region",
              "--count-column", "n", "--epsilon", 1, "--seed", 1, "--out", "o",
              "--max-memory", "1MB")
    for extra, parameter in (
            (("--query", "group-sizes", "--size-column", "size", "--max-size", 10**9,
              "--mechanism", "gs-noisy"), "--max-size"),
            (("--category-values", "sex=" + "|".join(f"v{i}" for i in range(10_000)),
              "--mechanism", "topdown"), "--category-values"),
            (("--category-values", "sex=F|M", "--mechanism", "topdown",
              "--interval-replicates", 10**12), "--interval-replicates")):
        done, imported, said = run_importing(*common, *extra, cwd=tmp_path)
        assert done.returncode == 2 and len(said) == 1, said
        assert f"{parameter} is too large" in said[0], said
        assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_help_and_usage_errors_import_nothing_heavy(tmp_path):
    for argv, code in ((("--help",), 0), (("release", "--help"), 0),
                       (("release", "--epsilon", "x"), 2)):
        done, imported, said = run_importing(*argv, cwd=tmp_path)
        assert done.returncode == code, done.stderr[-2000:]
        assert not imported & set(HEAVY), (argv, sorted(imported & set(HEAVY)))


@pytest.mark.parametrize("kind", list(MODULES))
def test_the_registry_imports_only_the_kind_asked_for(monkeypatch, kind):
    """A kind's mechanisms, listed with only its module loaded, are the same as with every
    module loaded, and no other kind's module is imported."""
    everything = sorted(i.name for i in base.list_mechanisms(kind))
    kinds = [f"hierdp_core.mechanisms.{module}" for module in MODULES.values()]
    for name in kinds:  # unloaded for this test; monkeypatch puts them back
        if name in sys.modules:
            monkeypatch.delitem(sys.modules, name)
            monkeypatch.delattr(base_package, name.rsplit(".", 1)[1], raising=False)
    monkeypatch.setattr(base, "_REGISTRY", {})
    alone = sorted(i.name for i in base.list_mechanisms(kind))
    assert alone == everything and alone
    assert [m for m in kinds if m in sys.modules] == [f"hierdp_core.mechanisms.{MODULES[kind]}"]
    assert base.get_mechanism(alone[0], kind).info.name == alone[0]


def test_a_count_release_without_gaussian_noise_or_simulation_skips_scipy_special(tmp_path):
    """scipy.special (normal quantiles, the binomial kernel of the simulated intervals) is
    imported on first use: a seeded TopDown release with --interval none never needs it."""
    (tmp_path / "t.csv").write_text("state,county,n\nA,a1,5\nA,a2,3\nB,b1,7\n")
    done, imported, said = run_importing(
        "release", "t.csv", "--structure-from-data", "--levels", "state,county",
        "--count-column", "n", "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
        "--interval", "none", "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "numpy" in imported and "scipy.special" not in imported


def test_a_count_release_with_its_intervals_imports_no_range_module_nor_scipy(tmp_path):
    """The intervals' bootstrap asks a releaser for its trials, so a counts release (TopDown,
    the default intervals: the bootstrap and the least-squares simulation) never imports the
    range releaser and what it pulls in (DAWA, scipy.sparse), nor any of scipy."""
    (tmp_path / "t.csv").write_text("state,county,n\nA,a1,5\nA,a2,3\nB,b1,7\n")
    done, imported, said = run_importing(
        "release", "t.csv", "--structure-from-data", "--levels", "state,county",
        "--count-column", "n", "--mechanism", "topdown", "--epsilon", 1, "--seed", 1,
        "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hierdp_core.intervals.bootstrap" in imported
    assert not {m for m in imported if m.startswith(("scipy", "hierdp_core.ranges"))
                or m == "hierdp_core.mechanisms.range_releaser"}

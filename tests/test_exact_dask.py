"""A secure release on a Dask process cluster: the workers (separate processes, each keying
its own keystream) draw with hierdp's exact sampler and the merged log says so."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

import numpy as np  # noqa: E402

from hierdp_core.engine import dask_engine  # noqa: E402
from hierdp_core.privacy.budget import PrivacyBudget  # noqa: E402
from hierdp_core.privacy.samplers import NoiseSource  # noqa: E402
from tests.test_engine_dask import LEVELS, persons  # noqa: E402


@pytest.mark.slow
def test_a_secure_dask_release_draws_exact_noise_in_every_worker(tmp_path,
                                                                 shared_dask_cluster):
    persons(6_000).to_parquet(tmp_path / "p.parquet", index=False)
    release, _ = dask_engine.release_dataset(
        tmp_path / "p.parquet", LEVELS, "topdown", PrivacyBudget.pure(1.0),
        source=NoiseSource(secure=True), client=shared_dask_cluster)
    randomness = release.randomness
    assert randomness["sampler"] == "hierdp-exact"
    measured = randomness["measurements"]
    assert measured and all(m["sampler"] == "hierdp-exact" for m in measured)
    assert all(m["privacy_loss"] <= m["budget_share"] * (1 + 1e-9) for m in measured)
    h = release.hierarchy
    assert sum(m["cells"] for m in measured) == sum(
        h.level_size(lv) for lv in range(h.n_levels))
    assert np.issubdtype(release.values.dtype, np.integer) and release.values.min() >= 0

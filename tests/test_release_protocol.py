"""Every query kind's release is a `ReleaseRecord` (issue 29, item 3): the shared fields
declared once (how it was made, its privacy claim, randomness, invariants, intervals) and the
methods the export writes any release through, so the manifest, the verdict and the
intervals take a release of any kind."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from release_inputs import budget_for, small_data

from hierdp_core.export import build_manifest
from hierdp_core.intervals import with_intervals
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.release import ReleaseRecord
from hierdp_core.verdict import release_verdict

KINDS = {"counts": "topdown", "group-sizes": "gs-topdown", "flows": "inftda",
         "ranges": "dawa"}


@pytest.mark.parametrize(("kind", "name"), list(KINDS.items()))
def test_every_kind_of_release_is_a_release_record(kind, name):
    mechanism = get_mechanism(name)
    release = mechanism.release(small_data(kind), budget_for(mechanism.info),
                                source=NoiseSource(seed=3))
    assert isinstance(release, ReleaseRecord)
    assert release.mechanism == name and release.intervals is None
    assert release.is_integer
    table = release.to_frame()
    assert {"level", "node_id", "value"} <= set(table.columns)
    assert release.to_arrow().num_rows == len(table)
    assert "hierarchy" in release.manifest_structure()
    kept = with_intervals(release, 0.9, replicates=5)
    assert type(kept) is type(release) and kept.intervals is not None
    assert {"lower", "upper"} <= set(kept.to_frame().columns)
    manifest = build_manifest(kept, structure_declared=True)
    assert manifest["mechanism"]["name"] == name and manifest["intervals"]["level"] == 0.9
    assert release_verdict(kept, structure_declared=True)["publishable"] is False  # seeded


def test_a_release_kind_must_give_its_table_and_shape():
    @dataclass(frozen=True, eq=False)
    class Incomplete(ReleaseRecord):
        values: list

        @property
        def is_integer(self) -> bool:
            return True

    with pytest.raises(TypeError, match="abstract"):
        Incomplete([1], mechanism="m", parameters={}, privacy={}, ledger=None, randomness={})

"""O/D flows block by block (`hierdp_core.engine.blockwise_flows`): the same released tree,
bit for bit, as the whole-tree top-down loop from the same seed (every parent's children
depend on that parent alone, and every block of top-level areas draws from its own
stream), in both trees and under both neighbouring relations; the leaf baselines refused;
secure releases measure every level once over the same cells."""

from __future__ import annotations

import numpy as np
import pytest

from hierdp_core.engine import blockwise_flows
from hierdp_core.errors import InputError
from hierdp_core.flows.synthetic import synthetic_flows
from hierdp_core.mechanisms import streams
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource

RHO = PrivacyBudget.zcdp(0.5)


def assert_same_tree(whole, parts) -> None:
    assert len(whole.levels) == len(parts.levels)
    for a, b in zip(whole.levels, parts.levels, strict=True):
        for name in ("origin", "destination", "value", "parent"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert whole.diagnostics == parts.diagnostics


@pytest.mark.parametrize("max_blocks", [streams.MAX_BLOCKS, 3])
@pytest.mark.parametrize(("name", "tree", "neighbouring"), [
    ("inftda", "destination", "bounded"), ("inftda", "origin", "unbounded"),
    ("tda-l2", "origin", "bounded")])
def test_blockwise_flows_are_the_whole_tree_release_bit_for_bit(monkeypatch, max_blocks, name,
                                                                tree, neighbouring):
    monkeypatch.setattr(streams, "MAX_BLOCKS", max_blocks)  # 3: two blocks of 2 areas
    data = synthetic_flows(3, 4, 0.9, max_flow=40, seed=5, tree=tree)
    mechanism = get_mechanism(name)
    whole = mechanism.release(data, RHO, source=NoiseSource(seed=9), neighbouring=neighbouring)
    parts = blockwise_flows.release_flow_data(mechanism, data, RHO, source=NoiseSource(seed=9),
                                              neighbouring=neighbouring)
    assert_same_tree(whole, parts)
    assert whole.randomness == parts.randomness and whole.ledger.equals(parts.ledger)
    assert whole.privacy == parts.privacy and whole.invariants == parts.invariants
    assert whole.levels[-1].size > 10  # a tree worth comparing


def test_secure_blockwise_flows_measure_every_level_once_over_the_noised_cells():
    data = synthetic_flows(3, 4, 0.5, max_flow=40, seed=6)
    release = blockwise_flows.release_flow_data(get_mechanism("inftda"), data, RHO,
                                                source=NoiseSource(secure=True))
    cells = [m["cells"] for m in release.randomness["measurements"]]
    assert cells == [d["noised"] for d in release.diagnostics[1:]]


@pytest.mark.parametrize("name", ["vanilla-gauss", "stability-histogram"])
def test_leaf_baselines_are_refused(name):
    with pytest.raises(InputError, match="cannot run block by block"):
        blockwise_flows.release_flow_data(get_mechanism(name), synthetic_flows(2, 2, 0.5),
                                          RHO, source=NoiseSource(seed=1))

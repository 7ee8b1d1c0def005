"""A guard for refactors of the privacy plumbing: seeded releases of every registered
mechanism are bit-identical to the ones recorded here. Each mechanism is released twice on a
small input of its query kind (its default split, and an uneven split), with a fixed seed and
budget; the test compares the sha256 of the released numbers and, separately, of the
manifest's privacy record, so a failure says which of the two changed.

A new mechanism fails here until its digests are recorded; a change that is meant to alter a
digest records the new one in the same commit (``python tests/test_seeded_digests.py`` prints
the current table)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from release_inputs import budget_for, small_data

from hierdp_core.export import build_manifest
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.samplers import NoiseSource

SEED = 20261128
#: the manifest's keys that state the privacy claim and the budget spent
PRIVACY_KEYS = ("privacy", "privacy_plan", "split", "ledger", "publishable",
                "not_publishable_because", "epsilon_ceiling")
#: the number of levels of each kind's `small_data` input (for the uneven split)
LEVELS = {"counts": 3, "group-sizes": 2, "flows": 5, "ranges": 3}
SPLITS = ("default", "uneven")


def _array_digest(h, array) -> None:
    if array is None:
        h.update(b"none")
        return
    a = np.ascontiguousarray(np.asarray(array))
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())


def _digests(name: str, split: str) -> tuple[str, str]:
    """(values digest, privacy-record digest) of the seeded release of ``name``."""
    mechanism = get_mechanism(name)
    kind = mechanism.info.queries[0]
    weights = None if split == "default" else [k + 1 for k in range(LEVELS[kind])]
    release = mechanism.release(small_data(kind), budget_for(mechanism.info), split=weights,
                                source=NoiseSource(seed=SEED))
    values = hashlib.sha256()
    for attr in ("values", "noisy"):
        _array_digest(values, getattr(release, attr, None))
    values.update(repr(getattr(release, "edges", None)).encode())
    values.update(release.to_frame().to_csv(index=False).encode())
    manifest = build_manifest(release, structure_declared=True)
    record = {key: manifest.get(key) for key in PRIVACY_KEYS}
    privacy = hashlib.sha256(json.dumps(record, sort_keys=True).encode())
    return values.hexdigest()[:16], privacy.hexdigest()[:16]


CASES = [(info.name, split) for info in list_mechanisms() for split in SPLITS]

#: (mechanism, split) -> (values digest, privacy-record digest), recorded on the code before
#: the per-level budget moved into the plan
RECORDED = {
    ('raw-laplace', 'default'): ('befc3f53416de957', 'e43e659c64d59798'),
    ('raw-laplace', 'uneven'): ('3a25b6d6fd8b88aa', 'ccb4271a4b70641d'),
    ('raw-geometric', 'default'): ('8d7dd5734b6fafd0', 'b45b12a11c30bf27'),
    ('raw-geometric', 'uneven'): ('d10c2c2f4cb89666', '0d89d7190fd1b7c1'),
    ('raw-discrete-gaussian', 'default'): ('16431f6fa56d6d9f', 'a120346431361abe'),
    ('raw-discrete-gaussian', 'uneven'): ('8526ff387aa266bc', '9caa889c993e1765'),
    ('least-squares', 'default'): ('7c531ac8960d71da', 'dc07f5440d079f74'),
    ('least-squares', 'uneven'): ('784b405da18d423b', 'ed45a7e28e6a69f6'),
    ('topdown', 'default'): ('2163243928751c3b', '7b9cdb6794417638'),
    ('topdown', 'uneven'): ('7c94b078d9240c9c', 'ebc8692443a6c26f'),
    ('gs-noisy', 'default'): ('c7d579b1be80adf6', 'e51b4cd928422f07'),
    ('gs-noisy', 'uneven'): ('97c8a6d1c9bc8082', '1a55b5cc66afe8cf'),
    ('gs-mh-relaxed', 'default'): ('0b47cb1d396915ee', '6af6cde171a92a3b'),
    ('gs-mh-relaxed', 'uneven'): ('7ddab78dd69f811c', '64cffb598625a09a'),
    ('gs-mh-dp', 'default'): ('0b47cb1d396915ee', '562423d7507b0f83'),
    ('gs-mh-dp', 'uneven'): ('7ddab78dd69f811c', 'a2443931104a0c53'),
    ('gs-mc-relaxed', 'default'): ('db9c99835c1c4f30', 'd32a330539306880'),
    ('gs-mc-relaxed', 'uneven'): ('9219befae4648fd6', 'e6620e53038b63ae'),
    ('gs-mc-dp', 'default'): ('9205823c597ff21b', 'd83d8dae70670ba4'),
    ('gs-mc-dp', 'uneven'): ('d630fd124091b2c7', 'e95ca999e0b79fa9'),
    ('gs-mc-chain', 'default'): ('9205823c597ff21b', '16ca2cb35dc2e66c'),
    ('gs-mc-chain', 'uneven'): ('d4246ba190c559cd', '0eaa4ceb41cdede4'),
    ('gs-mc-chain-paper', 'default'): ('d4827577e456c1f8', '07b269e1c7fe6c51'),
    ('gs-mc-chain-paper', 'uneven'): ('bf5d0db7d68bd6f1', '0a9e5cb61871a488'),
    ('gs-topdown', 'default'): ('683c547d7d2dd335', 'fec3e9b8aab15d1b'),
    ('gs-topdown', 'uneven'): ('98a8edf31801fbff', '25ec377e43e64236'),
    ('gs-kuo-hc', 'default'): ('b1dbb2176b70a0de', 'faa4664dfbdfb442'),
    ('gs-kuo-hc', 'uneven'): ('b966d5e6d7dfff62', '3525d80359825202'),
    ('gs-kuo-hg', 'default'): ('09f8d58c379b57ed', 'ad9bc9e90766971f'),
    ('gs-kuo-hg', 'uneven'): ('06eb546ff1c63972', '76cefaeb4dac0fc0'),
    ('gs-kuo-hierarchical', 'default'): ('f5473a394948789d', '06a795ff517c82b6'),
    ('gs-kuo-hierarchical', 'uneven'): ('d0e4fd3643c29c7f', '058dd80bf2760d56'),
    ('inftda', 'default'): ('daac91902529957f', 'e3e4170b74331c89'),
    ('inftda', 'uneven'): ('9700ae6c84290b42', 'e299a81a38bee452'),
    ('tda-l2', 'default'): ('daac91902529957f', '74b696e6af05788f'),
    ('tda-l2', 'uneven'): ('7f913a3aaafc69f0', '47d96d1e3fc66354'),
    ('tda-linf-milp', 'default'): ('daac91902529957f', '375934f3a104869e'),
    ('tda-linf-milp', 'uneven'): ('7f913a3aaafc69f0', '693f79dc74c8d98f'),
    ('vanilla-gauss', 'default'): ('b2ec70995a21e2e2', 'bf202653155167f4'),
    ('vanilla-gauss', 'uneven'): ('b2ec70995a21e2e2', 'bf202653155167f4'),
    ('stability-histogram', 'default'): ('db9639cf72e484b9', '8994a27f26245654'),
    ('stability-histogram', 'uneven'): ('db9639cf72e484b9', '8994a27f26245654'),
    ('dawa', 'default'): ('796e987532d9aa85', '2fbd01e66687b08f'),
    ('dawa', 'uneven'): ('6c3faf16ee410c4a', 'e433dcaba4be0455'),
    ('dawa-reference', 'default'): ('8f33ab35361bea7f', '61dcdd38decaca90'),
    ('dawa-reference', 'uneven'): ('204ce12814653ed7', 'e6f66eaa8a58365f'),
    ('greedy-h', 'default'): ('1487d306eff4d0e1', '93cd972eb3206638'),
    ('greedy-h', 'uneven'): ('fa1feeaf10b4fb22', 'c24c9864e6daed55'),
    ('partition-laplace', 'default'): ('f3d680155c20b77a', '13deceec5ef5abf8'),
    ('partition-laplace', 'uneven'): ('6a61c9dfef44ddf7', '8d7468281c614cb5'),
    ('identity', 'default'): ('1487d306eff4d0e1', 'c1cb5061f07e6b4f'),
    ('identity', 'uneven'): ('fa1feeaf10b4fb22', 'cda89aef284a8cb5'),
    ('uniform', 'default'): ('1305ea7830c4dab5', '102d4e0181797de3'),
    ('uniform', 'uneven'): ('39aa99cea44dc5e8', '9dc51592e7c68315'),
    ('h2', 'default'): ('b69e1435a4ecc430', '509833d0554e7da2'),
    ('h2', 'uneven'): ('9d175c215cbe3390', '6b0ade253f27d77c'),
    ('hb', 'default'): ('a004768d57f46e33', '51733eb3f7cb3635'),
    ('hb', 'uneven'): ('970ba6b6be189320', '33f1725a98612511'),
    ('privelet', 'default'): ('b7fb353cb1efb529', '1024a13eb65d7af9'),
    ('privelet', 'uneven'): ('cac2a50e43d93055', 'a1362645f57d4651'),
}


@pytest.mark.parametrize(("name", "split"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_seeded_release_is_bit_identical(name, split):
    assert (name, split) in RECORDED, f"record the digests of {name} ({split} split)"
    values, privacy = _digests(name, split)
    want_values, want_privacy = RECORDED[name, split]
    assert values == want_values, "the released numbers changed"
    assert privacy == want_privacy, "the manifest's privacy record changed"


if __name__ == "__main__":
    for case in CASES:
        print(f"    {case!r}: {_digests(*case)!r},")

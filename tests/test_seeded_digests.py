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
PRIVACY_KEYS = ("privacy", "split", "ledger", "publishable",
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
#: the per-level budget moved into the plan; the privacy digests re-recorded when the
#: manifest's ``privacy_plan`` moved into ``privacy["plan"]`` (checked: the old manifests'
#: records with that one move give these digests), and those of privelet, dawa,
#: dawa-reference and partition-laplace when their plans' stages stated their sensitivities
RECORDED = {
    ('raw-laplace', 'default'): ('befc3f53416de957', '831042b73c1ea117'),
    ('raw-laplace', 'uneven'): ('3a25b6d6fd8b88aa', 'e042fe17777f973e'),
    ('raw-geometric', 'default'): ('8d7dd5734b6fafd0', 'e36d3f43d20cbc89'),
    ('raw-geometric', 'uneven'): ('d10c2c2f4cb89666', '3a2f92edb46eedda'),
    ('raw-discrete-gaussian', 'default'): ('16431f6fa56d6d9f', '71a65e00dcda2697'),
    ('raw-discrete-gaussian', 'uneven'): ('8526ff387aa266bc', '01b00e61bf5e88d3'),
    ('least-squares', 'default'): ('7c531ac8960d71da', '0f88191fd3464993'),
    ('least-squares', 'uneven'): ('784b405da18d423b', '732cd725b878eb24'),
    ('topdown', 'default'): ('2163243928751c3b', '1cee084b2d1d4242'),
    ('topdown', 'uneven'): ('7c94b078d9240c9c', '68e61739af2d2f0d'),
    ('gs-noisy', 'default'): ('c7d579b1be80adf6', 'b0d42f2a097925f6'),
    ('gs-noisy', 'uneven'): ('97c8a6d1c9bc8082', 'f08162a637e0e46d'),
    ('gs-mh-relaxed', 'default'): ('0b47cb1d396915ee', '2cbdde62f946f330'),
    ('gs-mh-relaxed', 'uneven'): ('7ddab78dd69f811c', '7a418905aaac04c2'),
    ('gs-mh-dp', 'default'): ('0b47cb1d396915ee', '431f369161bf2208'),
    ('gs-mh-dp', 'uneven'): ('7ddab78dd69f811c', 'e38f54f39ff733bd'),
    ('gs-mc-relaxed', 'default'): ('db9c99835c1c4f30', '2ec97359c9d24d3e'),
    ('gs-mc-relaxed', 'uneven'): ('9219befae4648fd6', 'a3ff58745856e67d'),
    ('gs-mc-dp', 'default'): ('9205823c597ff21b', 'e2fea912db819fdd'),
    ('gs-mc-dp', 'uneven'): ('d630fd124091b2c7', 'a3667e949ffe315f'),
    ('gs-mc-chain', 'default'): ('9205823c597ff21b', '57407127cc20c168'),
    ('gs-mc-chain', 'uneven'): ('d4246ba190c559cd', '492da903f48bd8a8'),
    ('gs-mc-chain-paper', 'default'): ('d4827577e456c1f8', '1ce8409fe5272054'),
    ('gs-mc-chain-paper', 'uneven'): ('bf5d0db7d68bd6f1', 'e692a0888961db21'),
    ('gs-topdown', 'default'): ('683c547d7d2dd335', 'bc5b593bd2e97c56'),
    ('gs-topdown', 'uneven'): ('98a8edf31801fbff', '4f005072729295fb'),
    ('gs-kuo-hc', 'default'): ('b1dbb2176b70a0de', 'a06c1ad980a3c967'),
    ('gs-kuo-hc', 'uneven'): ('b966d5e6d7dfff62', '1f44f9aa7a135e12'),
    ('gs-kuo-hg', 'default'): ('09f8d58c379b57ed', 'aaf2510e0f3685f0'),
    ('gs-kuo-hg', 'uneven'): ('06eb546ff1c63972', '808367390e241c52'),
    ('gs-kuo-hierarchical', 'default'): ('f5473a394948789d', '4a48f25d75667cfd'),
    ('gs-kuo-hierarchical', 'uneven'): ('d0e4fd3643c29c7f', '1963f3ad347f9890'),
    ('inftda', 'default'): ('daac91902529957f', '2689d99caeedae88'),
    ('inftda', 'uneven'): ('9700ae6c84290b42', '6da9179505153828'),
    ('tda-l2', 'default'): ('daac91902529957f', '8cb4188ed967bf11'),
    ('tda-l2', 'uneven'): ('7f913a3aaafc69f0', 'ef93f187d6b8de07'),
    ('tda-linf-milp', 'default'): ('daac91902529957f', 'dc094d2fcdf04dd6'),
    ('tda-linf-milp', 'uneven'): ('7f913a3aaafc69f0', '6f97377a678e6e0b'),
    ('vanilla-gauss', 'default'): ('b2ec70995a21e2e2', '8e33d896e948be82'),
    ('vanilla-gauss', 'uneven'): ('b2ec70995a21e2e2', '8e33d896e948be82'),
    ('stability-histogram', 'default'): ('db9639cf72e484b9', '031ae7b16ad7a85d'),
    ('stability-histogram', 'uneven'): ('db9639cf72e484b9', '031ae7b16ad7a85d'),
    ('dawa', 'default'): ('796e987532d9aa85', '28f9716357b7e630'),
    ('dawa', 'uneven'): ('6c3faf16ee410c4a', '50380b548e320433'),
    ('dawa-reference', 'default'): ('8f33ab35361bea7f', '295ad27bbd0f6b30'),
    ('dawa-reference', 'uneven'): ('204ce12814653ed7', '3c23dbc3328f128c'),
    ('greedy-h', 'default'): ('1487d306eff4d0e1', '532eb82b0b8e01a9'),
    ('greedy-h', 'uneven'): ('fa1feeaf10b4fb22', '951c43b0ba7d7f3d'),
    ('partition-laplace', 'default'): ('f3d680155c20b77a', '7e0f0ab93e3dd943'),
    ('partition-laplace', 'uneven'): ('6a61c9dfef44ddf7', 'e448087cd37f1f3f'),
    ('identity', 'default'): ('1487d306eff4d0e1', '8737283cda6cf4cb'),
    ('identity', 'uneven'): ('fa1feeaf10b4fb22', 'c81e03cea0d4765b'),
    # uniform's values digests re-recorded when it stated its one bucket per unit (edges);
    # its values, noisy values and table were checked unchanged
    ('uniform', 'default'): ('aef42ed61549529e', '7557a85697270595'),
    ('uniform', 'uneven'): ('899da2fa882c2827', '5798a1c9939f4c2d'),
    ('h2', 'default'): ('b69e1435a4ecc430', '56b53e9f5e12393e'),
    ('h2', 'uneven'): ('9d175c215cbe3390', 'eb66c64291cba3ad'),
    ('hb', 'default'): ('a004768d57f46e33', 'd8fc01136c3b7854'),
    ('hb', 'uneven'): ('970ba6b6be189320', '5db85c588de211fa'),
    ('privelet', 'default'): ('b7fb353cb1efb529', '4309a555fc1de8fd'),
    ('privelet', 'uneven'): ('cac2a50e43d93055', '9a92e066c47e0609'),
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

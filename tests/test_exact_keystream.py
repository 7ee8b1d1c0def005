"""The secure keystream: one per thread and process, re-keyed after fork, never seeded;
and the secure source's hierdp backend (its log, its refusals)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from hierdp_core.errors import BudgetError
from hierdp_core.privacy import secure_apply
from hierdp_core.privacy.exact import add_checked, apply_exact, exact_noise
from hierdp_core.privacy.exact.apply import NoiseOverflowError
from hierdp_core.privacy.exact.keystream import CHUNK_BYTES, secure_words
from hierdp_core.privacy.samplers import DiscreteGaussian, Geometric, NoiseSource


def test_a_forked_child_never_repeats_its_parents_stream():
    words = secure_words()
    words.random_bytes(100)  # the parent holds a buffer of keystream not yet handed out
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next bytes, to the parent
        try:
            os.write(write, secure_words().random_bytes(64).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    child = b""
    while len(child) < 64:
        child += os.read(read, 64)
    os.waitpid(pid, 0)
    parent = words.random_bytes(64).tobytes()
    assert child != parent and len(child) == 64


def test_threads_get_distinct_keystreams():
    got = {}
    # the generators are kept (a finished thread's one was freed and its address, ``id``,
    # reused by the next: seen once in the suite) and the three threads live at once
    all_drawn = threading.Barrier(3)

    def draw(name):
        words = secure_words()
        got[name] = (words, words.random_bytes(32).tobytes())
        all_drawn.wait(timeout=30)

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(g[0]) for g in got.values()}) == 3
    assert len({g[1] for g in got.values()}) == 3


def test_bytes_are_never_handed_out_twice_across_chunks():
    words = secure_words()
    a = words.random_bytes(CHUNK_BYTES + 1000)
    b = words.random_bytes(CHUNK_BYTES // 2)
    c = words.random_bytes(3 * CHUNK_BYTES)
    blocks = {bytes(x[i:i + 64]) for x in (a, b, c) for i in range(0, x.size - 63, 64)}
    assert len(blocks) == sum((x.size - 63 + 63) // 64 for x in (a, b, c))
    bits = words.bits(100_000, 5)
    assert bits.dtype == np.uint32 and bits.max() == 31 and bits.min() == 0


def test_secure_mode_refuses_a_seed_or_a_generator_on_every_backend():
    for backend in ("hierdp", "opendp"):
        with pytest.raises(ValueError, match="cannot be seeded"):
            NoiseSource(secure=True, seed=1, backend=backend)
        with pytest.raises(ValueError, match="cannot be seeded"):
            NoiseSource(secure=True, generator=np.random.default_rng(1), backend=backend)
    with pytest.raises(ValueError, match="unknown noise backend"):
        NoiseSource(secure=True, backend="numpy")
    with pytest.raises(TypeError):
        NoiseSource(secure=True, words=object())  # no word source can be slipped in


def test_overflow_is_refused_not_wrapped():
    top = np.array([2**63 - 5], dtype=np.int64)
    with pytest.raises(NoiseOverflowError):
        add_checked(top, np.array([10], dtype=np.int64))
    with pytest.raises(NoiseOverflowError):
        add_checked(-top - 1, np.array([-10], dtype=np.int64))
    assert add_checked(top, np.array([4]))[0] == 2**63 - 1
    with pytest.raises(NoiseOverflowError):
        apply_exact(np.full(1000, 2**63 - 1, dtype=np.int64), exact_noise("discrete-laplace", 5))


@pytest.mark.parametrize(("cls", "budget", "sensitivity"),
                         [(Geometric, 0.3, 1.0), (Geometric, 1 / 3, 2.0),
                          (DiscreteGaussian, 0.2, 2 ** 0.5), (DiscreteGaussian, 0.05, 1.0)])
def test_the_loss_logged_is_that_of_the_rational_sampled(cls, budget, sensitivity):
    noise = cls.for_epsilon(budget, sensitivity) if cls is Geometric else \
        cls.for_zcdp(budget, sensitivity)
    src = NoiseSource(secure=True)
    noisy = noise.apply(np.arange(1000, dtype=np.int64), src, sensitivity=sensitivity,
                        budget=budget, label="level 1")
    assert noisy.dtype == np.int64 and noisy.shape == (1000,)
    (entry,) = src.as_dict()["measurements"]
    sampled = exact_noise(noise.name if cls is DiscreteGaussian else "discrete-laplace",
                          noise.scale)
    assert entry["sampled"] == sampled.parameter and entry["sampler"] == "hierdp-exact"
    assert entry["privacy_loss"] == sampled.privacy_loss(sensitivity)
    assert entry["privacy_loss"] <= budget * (1 + 1e-12)
    assert entry["privacy_loss"] == pytest.approx(budget, rel=1e-6)  # sigma^2 rounded up


def test_the_hierdp_backend_never_asks_opendp(monkeypatch):
    """The production loss is ours; OpenDP's map is only the tests' cross-check
    (`test_exact_privacy_map`)."""
    def refuse(*args, **kwargs):
        raise AssertionError("OpenDP called on the hierdp backend")

    monkeypatch.setattr(secure_apply, "opendp_privacy_loss", refuse)
    monkeypatch.setattr(secure_apply, "opendp_apply", refuse)
    src = NoiseSource(secure=True)
    for noise in (Geometric.for_epsilon(0.5, 1.0), DiscreteGaussian.for_zcdp(0.1, 1.0)):
        noise.apply(np.zeros(10, dtype=np.int64), src, sensitivity=1.0, budget=1.0)
    assert [m["sampler"] for m in src.measurements] == ["hierdp-exact"] * 2


def test_a_loss_above_the_share_is_refused():
    with pytest.raises(BudgetError, match="more than its share"):
        Geometric.for_epsilon(1.0, 1.0).apply(np.zeros(4, dtype=np.int64),
                                              NoiseSource(secure=True), sensitivity=2.0,
                                              budget=1.0)


def test_the_source_names_its_backend_and_algorithm():
    src = NoiseSource(secure=True)
    Geometric(2.0).apply(np.zeros(3, dtype=np.int64), src, sensitivity=1.0, budget=1.0)
    d = src.as_dict()
    assert d["sampler"] == "hierdp-exact" and "Canonne-Kamath-Steinke" in d["algorithm"]
    assert "ChaCha20" in d["algorithm"] and d["backend"] == "hierdp"
    src = NoiseSource(secure=True, backend="opendp")
    Geometric(2.0).apply(np.zeros(3, dtype=np.int64), src, sensitivity=1.0, budget=1.0)
    assert (src.as_dict()["sampler"], src.as_dict()["backend"]) == ("opendp", "opendp")

"""The per-parent projections of the O/D mechanisms: IntOpt (batched) against a literal
transcription of the paper's Alg. 4, brute force and the MILP objective; the spec's test
vectors; the L2 projection with rounding."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import MechanismError
from hierdp_core.flows.projections import intopt, l2_rounded, linf_milp

# (x, c, IntOpt ascending, IntOpt descending, TDA-l2 with the authors' rounding): the spec's
# test vectors (od-flows-topdown.md, section 2.4).
SPEC_VECTORS = [
    ((0, -1, 1), 2, (0, 0, 2), (1, 0, 1), (0, 0, 2)),
    ((5, -3, 2, 0, 10), 10, (2, 0, 0, 0, 8), (2, 0, 1, 0, 7), (2, 0, 0, 0, 8)),
    ((5, -3, 2, 0, 10), 20, (7, 0, 1, 0, 12), (7, 0, 4, 2, 7), (6, 0, 3, 0, 11)),
    ((3, 1, 1, 1, 0, -2), 4, (3, 0, 0, 1, 0, 0), (1, 1, 1, 1, 0, 0), (3, 1, 0, 0, 0, 0)),
    ((100, 2, 1, 1, -1), 90, (90, 0, 0, 0, 0), (90, 0, 0, 0, 0), (90, 0, 0, 0, 0)),
    ((0, 0, 0, 0), 3, (0, 1, 1, 1), (0, 1, 1, 1), (0, 1, 1, 1)),
]


def alg4(x, c, descending=False):
    """Alg. 4 of Boninsegna & Silvestri transcribed literally (one vector, Python loop)."""
    x = [int(v) for v in x]
    d = len(x)
    if c == 0:
        return [0] * d
    target = c - sum(x)
    a = -((-target) // d)
    z = [max(a, -v) for v in x]
    t = max(abs(v) for v in z)
    order = sorted(range(d), key=lambda i: (-x[i], i) if descending else (x[i], i))
    active = [i for i in order if z[i] > -x[i]]
    j, s = 0, sum(z)
    while s > target:
        delta = s - target
        i = active[j]
        new = max(z[i] - delta, -x[i], -t)
        s -= z[i] - new
        z[i] = new
        j += 1
        if j == len(active):
            active = [i for i in active if z[i] > -x[i]]
            t += max(1, (s - target) // len(active)) if active else 1
            j = 0
    return [v + w for v, w in zip(x, z, strict=True)]


def batch(rows):
    xs = np.concatenate([np.asarray(r[0], dtype=np.int64) for r in rows])
    starts = np.cumsum([0] + [len(r[0]) for r in rows])[:-1]
    return xs, starts, np.array([r[1] for r in rows], dtype=np.int64)


def split(values, starts):
    return [v.tolist() for v in np.split(values, starts[1:])]


def test_spec_vectors():
    xs, starts, c = batch(SPEC_VECTORS)
    assert split(intopt(xs, starts, c), starts) == [list(r[2]) for r in SPEC_VECTORS]
    assert split(intopt(xs, starts, c, "descending"), starts) == [list(r[3])
                                                                   for r in SPEC_VECTORS]
    assert split(l2_rounded(xs, starts, c), starts) == [list(r[4]) for r in SPEC_VECTORS]


def test_reference_transcription_gives_the_spec_vectors():
    for x, c, asc, desc, _ in SPEC_VECTORS:
        assert alg4(x, c) == list(asc)
        assert alg4(x, c, descending=True) == list(desc)


segments = st.lists(
    st.tuples(st.lists(st.integers(-60, 200), min_size=1, max_size=12), st.integers(0, 400)),
    min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(segments, st.booleans())
def test_batched_intopt_equals_alg4(rows, descending):
    xs, starts, c = batch(rows)
    out = intopt(xs, starts, c, "descending" if descending else "ascending")
    assert split(out, starts) == [alg4(x, ci, descending) for x, ci in rows]


def brute_force_linf(x, c):
    """min ||y - x||_inf over non-negative integer y summing to c (tiny inputs)."""
    best = None
    for y in itertools.product(range(c + 1), repeat=len(x)):
        if sum(y) == c:
            dist = max(abs(a - b) for a, b in zip(y, x, strict=True))
            best = dist if best is None else min(best, dist)
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-6, 9), min_size=1, max_size=4), st.integers(0, 9))
def test_intopt_is_optimal_against_brute_force(x, c):
    xs, starts, cs = batch([(x, c)])
    for order in ("ascending", "descending"):
        y = intopt(xs, starts, cs, order)
        assert y.min() >= 0 and y.sum() == c
        assert np.abs(y - xs).max() == brute_force_linf(x, c)


def test_intopt_matches_the_milp_objective_on_random_instances():
    rng = np.random.default_rng(3)
    rows = [(rng.integers(-30, 300, size=rng.integers(1, 60)), int(rng.integers(0, 3000)))
            for _ in range(200)]
    xs, starts, c = batch(rows)
    y_int, y_milp = intopt(xs, starts, c), linf_milp(xs, starts, c, batch=500)
    for a, b, x in zip(split(y_int, starts), split(y_milp, starts), split(xs, starts),
                       strict=True):
        assert sum(a) == sum(b)
        assert min(b) >= 0
        assert np.abs(np.subtract(a, x)).max() == np.abs(np.subtract(b, x)).max()


@settings(max_examples=200, deadline=None)
@given(segments, st.sampled_from(["authors", "largest-remainder"]))
def test_l2_rounded_is_non_negative_integer_with_exact_sums(rows, rounding):
    xs, starts, c = batch(rows)
    y = l2_rounded(xs, starts, c, rounding)
    assert y.dtype.kind == "i" and y.min() >= 0
    assert np.add.reduceat(y, starts).tolist() == c.tolist()


def test_l2_rounding_modes_differ_as_documented():
    # the projection of (1, 3) onto sum 3 is (0.5, 2.5); half to even gives (0, 2): the
    # authors' repair adds the missing unit to the largest value, the largest-remainder
    # rounding to the first of the (equal) fractional parts
    xs, starts, c = batch([((1, 3), 3)])
    assert l2_rounded(xs, starts, c, "authors").tolist() == [0, 3]
    assert l2_rounded(xs, starts, c, "largest-remainder").tolist() == [1, 2]


def test_large_totals_stay_exact():
    x = np.array([28_805_440 // 3] * 3 + [-5], dtype=np.int64)
    y = intopt(x, np.array([0]), np.array([28_805_440]))
    assert y.sum() == 28_805_440 and y.min() >= 0


def test_bad_arguments_are_refused():
    with pytest.raises(MechanismError, match="order"):
        intopt([1], [0], [1], order="sideways")
    with pytest.raises(MechanismError, match="non-negative"):
        intopt([1], [0], [-1])
    with pytest.raises(MechanismError, match="one total per segment"):
        l2_rounded([1, 2], [0, 1], [3])
    with pytest.raises(MechanismError, match="rounding"):
        l2_rounded([1], [0], [1], rounding="up")


@given(st.lists(st.integers(1, 6), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_milp_constraints_are_the_programme_row_by_row(lengths, draw):
    """The MILP's matrix, built at once in compressed columns, holds the rows y_i - alpha_s,
    y_i + alpha_s and the segment sums (checked densely), in canonical form (sorted row
    indices, no explicit zeros), with the limits x, x and c."""
    from hierdp_core.flows.projections import _milp_limits, _milp_matrix

    rng = np.random.default_rng(draw)
    k = len(lengths)
    seg = np.repeat(np.arange(k), lengths)
    m = seg.size
    a = _milp_matrix(seg, k)
    assert a.has_canonical_format and np.all(a.data != 0)
    y, alpha = rng.integers(-9, 9, m), rng.integers(-9, 9, k)
    rows = a.toarray() @ np.concatenate([y, alpha])
    sums = np.bincount(seg, weights=y, minlength=k)
    assert np.array_equal(rows, np.concatenate([y - alpha[seg], y + alpha[seg], sums]))
    x, c = rng.integers(-5, 9, m), rng.integers(0, 20, k)
    lower, upper = _milp_limits(x, c)
    assert np.array_equal(lower, np.concatenate([np.full(m, -np.inf), x, c]))
    assert np.array_equal(upper, np.concatenate([x, np.full(m, np.inf), c]))


def test_milp_skips_highs_only_where_the_optimum_is_unique(monkeypatch):
    """linf_milp returns, on every segment, what HiGHS alone returns, calling HiGHS only for
    batches with a segment of several optima (small instances with both kinds: every
    segment with one optimum passes the uniqueness test, and some batches are solved
    without HiGHS)."""
    import hierdp_core.flows.projections as projections

    solve = projections._milp_block
    calls = []
    monkeypatch.setattr(projections, "_milp_block",
                        lambda x, seg, c: calls.append(x.size) or solve(x, seg, c))
    rng = np.random.default_rng(11)
    skipped = 0
    for _ in range(60):
        rows = [(rng.integers(-12, 20, size=rng.integers(1, 4)), int(rng.integers(0, 25)))
                for _ in range(rng.integers(1, 4))]
        xs, starts, c = batch(rows)
        seg = np.repeat(np.arange(len(rows)), [len(x) for x, _ in rows])
        alone = solve(xs, seg, c)  # HiGHS on the whole batch
        calls.clear()
        assert np.array_equal(linf_milp(xs, starts, c), alone)
        skipped += not calls
        if not calls:  # only when no segment has another y at HiGHS's optimum
            for x, y, total in zip(split(xs, starts), split(alone, starts), c, strict=True):
                alpha = np.abs(np.subtract(y, x)).max()
                box = [range(max(v - alpha, 0), v + alpha + 1) for v in x]
                assert sum(sum(p) == total for p in itertools.product(*box)) == 1
    assert 5 < skipped < 55, skipped


def test_milp_answers_a_batch_solved_before_as_highs_does():
    """A batch asked again (the audits' small batches recur) is answered from the cache:
    what HiGHS, deterministic, gives when it solves that batch afresh."""
    import hierdp_core.flows.projections as projections

    rng = np.random.default_rng(5)
    instances = [batch([(rng.integers(-12, 20, size=3), int(rng.integers(0, 25)))
                        for _ in range(2)]) for _ in range(8)]
    projections._milp_solved.cache_clear()
    first = [linf_milp(*instance) for instance in instances]
    asked = projections._milp_solved.cache_info().misses
    assert asked > 3  # most batches have several optima: HiGHS was asked
    for (xs, starts, c), y in zip(instances, first, strict=True):
        assert np.array_equal(linf_milp(xs, starts, c), y)  # from the cache
        seg = np.repeat(np.arange(starts.size), np.diff(np.append(starts, xs.size)))
        afresh = projections._milp_solved.__wrapped__(
            *(np.asarray(a, dtype=np.int64).tobytes() for a in (xs, seg, c)))
        assert np.array_equal(np.frombuffer(afresh, dtype=np.int64), y)
    assert projections._milp_solved.cache_info().hits == asked

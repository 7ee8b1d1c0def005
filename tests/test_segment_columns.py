"""Tests of the column-major layout of narrow segments (issue 19 point 5: a flat time per leaf):
its sorting networks sort, and TopDown's projection and rounding through it are bit for bit
those of the row layout, on segments of every narrow width, with ties, zeros, signed zeros
and zero totals, however the segments are cut into blocks."""

from __future__ import annotations

import doctest
import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.consistency.segment_columns as columns_module
import hierdp_core.consistency.segment_rows as rows_module
import hierdp_core.consistency.segments as seg_module
from hierdp_core.consistency.segment_columns import NARROW, network, sort_rows
from hierdp_core.consistency.segment_rows import ColumnBlock, row_blocks, row_width
from hierdp_core.consistency.segments import project_and_round, project_segments, round_segments


def test_module_doctest_passes():
    result = doctest.testmod(columns_module)
    assert result.attempted >= 1 and result.failed == 0


@pytest.mark.parametrize("width", range(1, NARROW + 1))
def test_every_network_sorts_every_zero_one_input(width):
    pairs = network(width)
    assert all(0 <= i < j < width for i, j in pairs)
    # a comparator network sorting every 0/1 input sorts every input (the 0-1 principle)
    cases = np.array(list(itertools.product([0.0, 1.0], repeat=width))).T
    assert np.array_equal(sort_rows(cases), np.sort(cases, axis=0))
    assert np.array_equal(sort_rows(cases, descending=True), np.sort(cases, axis=0)[::-1])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, NARROW), st.integers(0, 2**32 - 1))
def test_networks_sort_values_with_ties_like_numpy(width, seed):
    rng = np.random.default_rng(seed)
    values = rng.choice([-2.5, -0.0, 0.0, 1.0, 1.0, 3.0, np.inf, -np.inf], (width, 50))
    assert np.array_equal(sort_rows(values), np.sort(values, axis=0))
    keys = rng.integers(0, 4, (width, 50)).astype(np.uint64)
    assert np.array_equal(sort_rows(keys, descending=True), np.sort(keys, axis=0)[::-1])


def _segments(data, max_length: int):
    lengths = np.array(data.draw(st.lists(st.integers(1, max_length), min_size=1,
                                          max_size=60)))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return lengths, starts


def _values(rng: np.random.Generator, size: int) -> np.ndarray:
    """Near-ties on purpose: integers plus one shared fraction, repeats, exact and signed
    zeros, large and negative values."""
    y = rng.integers(-5, 30, size) + rng.choice([0.0, 0.3, 1 / 3, 1 - 1e-10])
    y[rng.random(size) < 0.2] = rng.normal(10, 20)
    y[rng.random(size) < 0.1] = rng.choice([0.0, -0.0])
    y[rng.random(size) < 0.05] = rng.choice([1e6, -1e6])
    return y


def _both_layouts(fn, block_cells: int, merged_cells: int = 0):
    """fn() with every narrow width column-major (however few its segments; with
    ``merged_cells`` 0, none laid out at a wider width), and fn() with every block
    row-major."""
    cut = mock.patch.object(seg_module, "row_blocks",
                            lambda *a, **k: row_blocks(*a, block_cells=block_cells, **k))
    made, original = [], rows_module._column_blocks

    def recorded(*args):
        for block in original(*args):
            made.append(block)
            yield block

    with cut, mock.patch.object(rows_module, "COLUMN_MIN_SEGMENTS", 1), \
            mock.patch.object(rows_module, "MERGED_CELLS", merged_cells):
        with mock.patch.object(rows_module, "_column_blocks", recorded):
            column = fn()
        with mock.patch.object(seg_module, "NARROW", 0):
            row = fn()
    return column, row, made


@settings(max_examples=120, deadline=None)
@given(st.data(), st.integers(0, 2**32 - 1), st.sampled_from([1, 5, 64, 1 << 17]),
       st.sampled_from([0, 50, 4096, 1 << 40]))
def test_column_layout_gives_the_row_layouts_release(data, seed, block_cells, merged_cells):
    lengths, starts = _segments(data, NARROW + 4)  # some rows wider than NARROW too
    rng = np.random.default_rng(seed)
    y = _values(rng, int(lengths.sum()))
    totals = rng.integers(0, 60, lengths.size).astype(float)
    totals[rng.random(totals.size) < 0.2] = 0.0
    cut = block_cells, merged_cells
    column, row, made = _both_layouts(lambda: project_and_round(y, starts, totals), *cut)
    assert all(isinstance(b, ColumnBlock) for b in made)
    if merged_cells == 0:
        narrow = (totals > 0) & (row_width(lengths) <= NARROW)
        assert sum(b.segments.size for b in made) == narrow.sum()
    assert column.dtype == row.dtype == np.int64 and np.array_equal(column, row)
    x_col, x_row, _ = _both_layouts(lambda: project_segments(y, starts, totals), *cut)
    assert x_col.tobytes() == x_row.tobytes()  # bit for bit
    r_col, r_row, _ = _both_layouts(lambda: round_segments(x_row, starts, totals), *cut)
    assert np.array_equal(r_col, r_row) and np.array_equal(r_col, row)


def test_only_children_get_their_parents_total():
    starts = np.arange(5, dtype=np.int64)
    y = np.array([3.7, -2.0, 0.0, 100.5, 7.0])
    totals = np.array([4.0, 9.0, 0.0, 1.0, 7.0])
    with mock.patch.object(rows_module, "COLUMN_MIN_SEGMENTS", 1):
        assert project_and_round(y, starts, totals).tolist() == [4, 9, 0, 1, 7]


def test_nan_takes_the_row_layout():
    y = np.array([1.0, np.nan, 2.0, 0.5])
    starts, totals = np.array([0, 2]), np.array([3.0, 2.0])
    with mock.patch.object(rows_module, "COLUMN_MIN_SEGMENTS", 1):
        column = project_segments(y, starts, totals)
    with mock.patch.object(seg_module, "NARROW", 0):
        row = project_segments(y, starts, totals)
    np.testing.assert_array_equal(column, row)
    assert seg_module._narrow(y, None) == 0 and seg_module._narrow(y[2:], None) == NARROW


def test_small_width_groups_are_laid_out_at_the_next_width():
    starts = np.array([0, 1, 3, 6, 10], dtype=np.int64)  # lengths 1, 2, 3, 4, 30
    blocks = list(row_blocks(starts, 40))
    assert [b.index.shape for b in blocks] == [(5, 32)]
    with mock.patch.object(rows_module, "MERGED_CELLS", 10):
        blocks = list(row_blocks(starts, 40))
    assert [b.index.shape for b in blocks] == [(3, 3), (1, 4), (1, 32)]
    assert [b.segments.tolist() for b in blocks] == [[0, 1, 2], [3], [4]]


def test_few_segments_of_a_width_stay_row_major():
    starts = np.arange(0, 30, 3, dtype=np.int64)
    blocks = list(row_blocks(starts, 30, column_major_up_to=NARROW))
    assert blocks and not any(b.column_major for b in blocks)
    many = np.arange(0, 3 * rows_module.COLUMN_MIN_SEGMENTS, 3, dtype=np.int64)
    blocks = list(row_blocks(many, many.size * 3, column_major_up_to=NARROW))
    assert blocks and all(b.column_major for b in blocks)


@settings(max_examples=120, deadline=None)
@given(st.data(), st.integers(0, 2**32 - 1))
def test_few_small_segments_in_one_block_give_the_merged_layouts_release(data, seed):
    """Few small segments are laid out at once in one block at the widest width (in index
    order): bit for bit what the layout merging every width into the next gives, weighted
    or not, with NaN, ties and zero totals."""
    lengths, starts = _segments(data, 40)
    rng = np.random.default_rng(seed)
    y = _values(rng, int(lengths.sum()))
    y_nan = y.copy()  # NaN in the projection only (rounding needs numbers)
    y_nan[rng.integers(y.size)] = np.nan
    w = rng.uniform(0.5, 3.0, y.size)
    totals = rng.integers(0, 60, lengths.size).astype(float)
    totals[rng.random(totals.size) < 0.2] = 0.0

    def released():
        return [project_and_round(y, starts, totals).tobytes(),
                project_segments(y, starts, totals).tobytes(),
                project_segments(y_nan, starts, totals).tobytes(),
                project_segments(y, starts, totals, w).tobytes(),
                round_segments(project_segments(y, starts, totals), starts,
                               totals).tobytes()]

    at_once = released()
    assert rows_module._one_block(lengths.size, int(row_width(lengths).max()),
                                  rows_module.BLOCK_CELLS) == (
        lengths.size * int(row_width(lengths).max()) <= rows_module.MERGED_CELLS
        and lengths.size < rows_module.COLUMN_MIN_SEGMENTS)
    with mock.patch.object(rows_module, "_one_block", lambda *a: False):
        assert released() == at_once

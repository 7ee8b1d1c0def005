"""Arrays of text made, sorted and carried by pyarrow, without a Python string per value:
the sorted texts of distinct integer codes (`sorted_int_texts`, for
`hierdp_core.hierarchy.level_codes`), any codes as text (`as_texts`), and object arrays of text packed into pyarrow string
arrays for pickling (`packed` / `unpacked`, for `Hierarchy.__reduce__`: a geography sent to
every Dask worker).

Example
-------
>>> import numpy as np
>>> texts, rank = sorted_int_texts(np.array([9, 10, -1]))
>>> texts.tolist(), rank.tolist()
(['-1', '10', '9'], [2, 1, 0])
>>> unpacked(packed(np.array(["a", None], dtype=object))).tolist()
['a', None]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def sorted_int_texts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique` of the texts of distinct integers (``str(v)``), with every value's index
    into them: byte order, which is code point order in UTF-8, as numpy sorts."""
    text = pc.cast(pa.array(values), pa.string())
    order = pc.array_sort_indices(text).to_numpy().astype(np.int64)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return text.take(pa.array(order)).to_numpy(zero_copy_only=False), rank


def as_texts(values) -> pa.Array:
    """The text of every value (``str(v)``) as a pyarrow string array: text as it is,
    integers cast by pyarrow, anything else through numpy's ``str``."""
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return pc.cast(pa.array(values), pa.string())
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowException, TypeError, ValueError):
        return pa.array(values.astype(str), pa.string())


def packed(values):
    """An object array of text (None allowed) as a pyarrow string array, else itself."""
    if type(values) is not np.ndarray or values.dtype != object:
        return values
    try:
        out = pa.array(values, from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError):
        return values
    return out if out.type == pa.string() else values


def unpacked(values):
    """What `packed` took: an object array back from a pyarrow array, else itself."""
    if isinstance(values, np.ndarray):
        return values
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)

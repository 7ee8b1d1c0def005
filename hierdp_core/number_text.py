"""How a number is written in text and tables: an error figure with enough decimals that a
small one shows (0.03, not 0.0), one from 1 on (`error_figure`, shared by `explain` and the
release's estimated error, `intervals.estimated_error.describe`); a figure to three
significant figures with thousands separators and no exponent (`figure_text`: 899, 522,000,
0.0033), the rounding of tables to significant figures (`significant`).

>>> figure_text(898.7197), figure_text(5.22e5), figure_text(0.00333)
('899', '522,000', '0.00333')
"""

from __future__ import annotations

import math

import numpy as np

#: from here on `figure_text` writes powers of ten: past ordinary magnitudes
EXPONENT_FROM = 1e15


def error_digits(value: float) -> int:
    """Decimals that show a positive error below 1 (0.03, not 0.0); 1 from 1 on."""
    return 1 if not 0 < value < 1 else min(4, 1 - math.floor(math.log10(value)))


def error_figure(value: float) -> str:
    """``value`` with `error_digits` decimals and thousands separators: 1,234.5, 0.03."""
    return f"{value:,.{error_digits(value)}f}"


def significant(values, digits: int = 3):
    """``values`` (a number or an array) rounded to ``digits`` significant figures: 898.7197
    -> 899, 0.000023456 -> 0.0000235; 0 and NaN stay as they are."""
    x = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.floor(np.log10(np.where(np.isfinite(x) & (x != 0), np.abs(x), 1.0)))
    decimals = (digits - 1 - magnitude).astype(int)
    rounded = x.copy()
    for d in np.unique(decimals):  # one rounding per magnitude, not per value
        at = decimals == d
        rounded[at] = np.round(x[at], int(d))
    return rounded if x.ndim else float(rounded)


def figure_text(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures with thousands separators, trailing zeros
    dropped: 899, 522,000, 2.98, 0.0033, 0.00002 (from `EXPONENT_FROM` on: 2.69e+43)."""
    if abs(value) >= EXPONENT_FROM:
        return f"{value:.{digits}g}"
    v = significant(value, digits)
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text

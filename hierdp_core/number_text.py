"""How an error figure is written in text: enough decimals that a small one shows (0.03,
not 0.0), one from 1 on. Shared by `explain` and the release's estimated error
(`intervals.estimated_error.describe`)."""

from __future__ import annotations

import math


def error_digits(value: float) -> int:
    """Decimals that show a positive error below 1 (0.03, not 0.0); 1 from 1 on."""
    return 1 if not 0 < value < 1 else min(4, 1 - math.floor(math.log10(value)))


def error_figure(value: float) -> str:
    """``value`` with `error_digits` decimals and thousands separators: 1,234.5, 0.03."""
    return f"{value:,.{error_digits(value)}f}"

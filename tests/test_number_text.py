"""hierdp_core.number_text: numbers as a statistician writes them (significant figures,
thousands separators, no exponent for ordinary magnitudes)."""

from __future__ import annotations

import numpy as np

from hierdp_core.number_text import figure_text, significant


def test_significant_rounds_to_figures_not_decimals():
    assert significant(898.7197) == 899 and significant(2.9755) == 2.98
    assert significant(0.0000234) == 0.0000234 and significant(0.000023456) == 0.0000235
    assert significant(0.0) == 0.0 and significant(-4.288) == -4.29
    np.testing.assert_array_equal(significant(np.array([522_134.0, 0.46941, 0.0, np.nan])),
                                  [522_000.0, 0.469, 0.0, np.nan])


def test_figure_text_has_separators_and_no_exponent():
    texts = [figure_text(v) for v in (898.7197, 522_134.0, 485_165_195.4, 2.9755, 2.5, 0.0033,
                                      0.00002, 0.0, -1234.5, 22026.47)]
    assert texts == ["899", "522,000", "485,000,000", "2.98", "2.5", "0.0033", "0.00002", "0",
                     "-1,230", "22,000"]
    assert figure_text(2.69e43) == "2.69e+43"  # beyond ordinary magnitudes: powers of ten

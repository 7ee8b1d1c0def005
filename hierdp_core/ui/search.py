"""The Results page's search of its unit table: case and accents aside, so an audience
typing 'valencia' or 'ecija' finds 'València' and 'Écija'."""

from __future__ import annotations

import pandas as pd


def _folded(text: pd.Series) -> pd.Series:
    """Text without case or accents ('València' -> 'valencia')."""
    decomposed = text.astype(str).str.normalize("NFKD")
    return decomposed.str.replace(r"[\u0300-\u036f]", "", regex=True).str.casefold()


def matching(table: pd.DataFrame, columns: list[str], query: str) -> pd.Series:
    """Rows of ``table`` one of whose ``columns`` holds ``query``, case and accents aside.

    >>> t = pd.DataFrame({"name": ["València", "Écija", "Sevilla"], "id": ["46", "41", "41"]})
    >>> t[matching(t, ["name", "id"], "ecija")]["name"].tolist()
    ['Écija']
    >>> t[matching(t, ["name", "id"], "VALENCIA")]["name"].tolist()
    ['València']
    """
    wanted = _folded(pd.Series([query])).iloc[0]
    found = pd.Series(False, index=table.index)
    for column in columns:
        found |= _folded(table[column]).str.contains(wanted, regex=False)
    return found

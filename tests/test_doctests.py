"""Every example in a docstring of hierdp_core runs and shows what it says (a module's
doctests, with ``...`` matching any text): an example that has drifted from the code fails
here, not in a reader's notebook."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hierdp_core"


def modules_with_examples() -> list[str]:
    """The dotted names of hierdp_core's modules whose source holds a doctest prompt."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = modules_with_examples()


def test_the_search_finds_the_documented_modules():
    assert {"hierdp_core.api", "hierdp_core.config", "hierdp_core.viz"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_a_module_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS,
                             verbose=False, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"

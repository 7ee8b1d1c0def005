"""Tests' changes to what a registered mechanism declares (`Capabilities`), undone by
``monkeypatch`` at the end of the test."""

from __future__ import annotations

from dataclasses import replace

from hierdp_core.mechanisms.base import get_mechanism


def declare(monkeypatch, name: str, **changes) -> None:
    """Let the registered mechanism ``name`` declare ``changes`` to its capabilities for
    the test (e.g. ``split_optimiser=False``)."""
    mechanism = get_mechanism(name)
    info = mechanism.info
    monkeypatch.setattr(mechanism, "info", replace(
        info, capabilities=replace(info.capabilities, **changes)))

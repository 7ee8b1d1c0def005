"""hierdp: hierarchical counts under differential privacy.

Consistent, non-negative integer releases of counts at every level of a geography.
``hierdp_core.release(table, levels=..., ...)`` makes one from Python (`hierdp_core.api`).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``release``, imported on first use (importing hierdp_core stays cheap): the module
    `hierdp_core.release`, which calls `hierdp_core.api.release` when called."""
    if name == "release":
        import importlib

        return importlib.import_module("hierdp_core.release")
    raise AttributeError(f"module 'hierdp_core' has no attribute {name!r}")

"""hierdp: hierarchical counts under differential privacy.

Consistent, non-negative integer releases of counts at every level of a geography.
``hierdp_core.release(table, levels=..., ...)`` makes one from Python (`hierdp_core.api`).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``release``, imported on first use (importing hierdp_core stays cheap): the Python
    API's function `hierdp_core.api.release` (the release objects are in
    `hierdp_core.releases`)."""
    if name == "release":
        from hierdp_core.api import release

        return release
    raise AttributeError(f"module 'hierdp_core' has no attribute {name!r}")

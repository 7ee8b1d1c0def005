"""hierdp: hierarchical counts under differential privacy.

Consistent, non-negative integer releases of counts at every level of a geography.
"""

__version__ = "0.1.0"

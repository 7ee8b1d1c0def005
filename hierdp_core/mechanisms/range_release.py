"""RangeRelease: what a range mechanism publishes (`hierdp_core.mechanisms.ranges`, and
over a domain kept sparse `hierdp_core.mechanisms.range_sparse`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hierdp_core.release import Release


@dataclass(frozen=True, eq=False)
class RangeRelease(Release):
    """A range-query release: the consistent integer histograms (``values``), the real-valued
    per-level estimates before consistency (``noisy``), each node's private bucket edges
    (None for methods without a partition) and the public workload's name and size."""

    edges: tuple | None = None
    attribute: str = ""
    workload: dict = field(default_factory=dict)

    def manifest_structure(self) -> dict:
        out = super().manifest_structure()
        out.update(attribute=self.attribute, workload=self.workload)
        return out

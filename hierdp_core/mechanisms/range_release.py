"""RangeRelease: what a range mechanism publishes (`hierdp_core.mechanisms.ranges`, and
over a domain kept sparse `hierdp_core.mechanisms.range_sparse`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hierdp_core.releases import Release

#: the manifest's words on the single values of a release for a workload of bands
BAND_VALUES = ("each band's count is the sum of its released values; the values within a "
               "band are shares of that estimate, not estimates of each value (their "
               "intervals bound them by the band's: share-of-band bound)")


@dataclass(frozen=True, eq=False)
class RangeRelease(Release):
    """A range-query release: the consistent integer histograms (``values``), the real-valued
    per-level estimates before consistency (``noisy``), each node's private bucket edges
    (None for methods without a partition) and the public workload's name and size."""

    edges: tuple | None = None
    attribute: str = ""
    workload: dict = field(default_factory=dict)

    def manifest_structure(self) -> dict:
        """`Release`'s, with the attribute and the workload; a workload of bands says what
        the released single values within a band are."""
        out = super().manifest_structure()
        workload = dict(self.workload)
        if workload.get("name") == "bands":
            workload["values_within_a_band"] = BAND_VALUES
        out.update(attribute=self.attribute, workload=workload)
        return out

"""Bundled samples as files for the command line: ``hierdp sample NAME --out FILE`` writes
one, and says which ``hierdp release`` commands release it.

Besides the count samples of `hierdp_core.data.samples` (the dashboard's), two samples serve
the other queries: ``us-households`` (group sizes: synthetic-from-real households per US
county and size) and ``us-flights`` (O/D flows: 2008 flights between US airports).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from hierdp_core.data.samples import SAMPLES, Sample


@dataclass(frozen=True)
class SampleFile:
    """A sample the CLI can write, and example release arguments (each line of
    ``release_examples`` follows ``hierdp release FILE``)."""

    name: str
    description: str
    loader: Callable[[], pd.DataFrame]
    release_examples: tuple[str, ...]


def _counts_example(sample: Sample) -> str:
    categories = (f" --categories {','.join(sample.category_columns)}"
                  if sample.category_columns else "")
    return (f"--levels {','.join(sample.levels)} --count-column {sample.count_column}"
            f"{categories} --mechanism topdown --epsilon 1 --out release-counts")


def _households() -> pd.DataFrame:
    from hierdp_core.groupsizes.samples import us_households
    return us_households()


def _flights() -> pd.DataFrame:
    from hierdp_core.flows.samples import load_airport_flows
    return load_airport_flows()


AGES_EXAMPLE = ("--levels region,province,municipality --count-column residents --query ranges "
                "--attribute age --workload 0-17,18-64,65-100 --mechanism dawa --epsilon 1 "
                "--out release-ages")

SAMPLE_FILES: dict[str, SampleFile] = {
    **{name: SampleFile(name, sample.description, sample.loader,
                        (_counts_example(sample),)
                        + ((AGES_EXAMPLE,) if name == "italy-municipalities" else ()))
       for name, sample in SAMPLES.items()},
    "us-households": SampleFile(
        "us-households",
        "Group sizes: synthetic-from-real households on the real populations of 3,141 US "
        "counties (116 million households, sizes 1..1,000 incl. group quarters); one row "
        "per county and size with the number of households (hierdp_core.groupsizes.samples).",
        _households,
        ("--levels state,county --query group-sizes --size-column size --count-column "
         "households --max-size 1000 --mechanism gs-mc-dp --epsilon 1 --out release-sizes",)),
    "us-flights": SampleFile(
        "us-flights",
        "O/D flows: flights between US airports in 2008, state > airport at both ends; one "
        "row per airport pair with the number of flights (npm vega-datasets 3.2.1, "
        "BSD-3-Clause; US Bureau of Transportation Statistics).",
        _flights,
        ("--query flows --origin-levels o_state,o_airport --destination-levels "
         "d_state,d_airport --count-column flights --mechanism inftda --epsilon 1 "
         "--delta 1e-8 --out release-flows",)),
}

"""Bundled samples as files for the command line: ``hierdp sample NAME --out FILE`` writes
one and, beside it, its public geography (``FILE``'s stem + ``-geography.csv``: every unit
the sample's source enumerates, with their names), and says which ``hierdp release``
commands release it over that declared structure.

Besides the count samples of `hierdp_core.data.samples` (the dashboard's), two samples serve
the other queries: ``us-households`` (group sizes: synthetic-from-real households per US
county and size) and ``us-flights`` (O/D flows: 2008 flights between US airports).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hierdp_core.data.samples import AGE_GROUPS, ITALY_AGE_GROUPS, ITALY_MAX_AGE, SAMPLES, Sample
from hierdp_core.structure import Geography, geography_from_table

GEOGRAPHY = "{geography}"  # stands for the geography file's path in release_examples
GROUPS = "{groups}"  # stands for the groups file's path in release_examples


@dataclass(frozen=True)
class SampleFile:
    """A sample the CLI can write, its public geography (one row per leaf unit, level
    columns and names) and example release arguments (each line of ``release_examples``
    follows ``hierdp release FILE``; ``{geography}`` and ``{groups}`` stand for the paths of
    the geography and of the groups file). ``groups``: a group-size sample's public groups
    table (`hierdp_core.groupsizes.declared_groups`), None for the others."""

    name: str
    description: str
    loader: Callable[[], pd.DataFrame]
    release_examples: tuple[str, ...]
    geography: Callable[[], pd.DataFrame]
    groups: Callable[[], pd.DataFrame] | None = None


#: the public category values of the count samples (their sources' code lists)
CATEGORY_VALUES = {
    "us-counties": {"age_group": ("0-18", "19-64", "65-84", "85+")},
    "italy-municipalities": {"sex": ("F", "M"),
                             "age_group": tuple(label for _, _, label in ITALY_AGE_GROUPS)},
    "synthetic-us-like": {"sex": ("F", "M"), "age_group": AGE_GROUPS},
}


#: the count samples whose rows are finer than the released cells, summed as declared by
#: ``--duplicates sum`` (Italy: a row per sex and single year of age, released by age band)
SUMMED_ROWS = ("italy-municipalities",)


def _counts_example(sample: Sample) -> str:
    categories = ""
    if sample.category_columns:
        declared = CATEGORY_VALUES[sample.name]
        categories = f" --categories {','.join(sample.category_columns)}" + "".join(
            " --category-values " + shlex.quote(f"{c}={'|'.join(declared[c])}")
            for c in sample.category_columns)
    summed = " --duplicates sum" if sample.name in SUMMED_ROWS else ""
    return (f"--levels {','.join(sample.levels)} --count-column {sample.count_column}"
            f"{categories}{summed} --geography {GEOGRAPHY} --mechanism topdown --epsilon 1 "
            "--out release-counts")


def _units(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return table[columns].drop_duplicates().reset_index(drop=True)


def _us_counties_geography() -> pd.DataFrame:
    from hierdp_core.data.samples import us_counties
    return _units(us_counties(), ["state", "state_name", "county", "county_name"])


def _italy_geography() -> pd.DataFrame:
    from hierdp_core.data.samples import sample_file
    return pd.read_parquet(sample_file("italy_municipalities_units.parquet"))


def _synthetic_geography() -> pd.DataFrame:
    from hierdp_core.data.samples import synthetic_us_like
    return _units(synthetic_us_like(), ["state", "county"])


def _airports_geography() -> pd.DataFrame:
    from hierdp_core.flows.samples import load_airports
    airports = load_airports().rename(columns={"name": "airport_name"})
    return airports[["state", "airport", "airport_name"]]


GEOGRAPHIES = {"us-counties": _us_counties_geography,
               "italy-municipalities": _italy_geography,
               "synthetic-us-like": _synthetic_geography}


def _households() -> pd.DataFrame:
    from hierdp_core.groupsizes.samples import us_households
    return us_households()


def _household_groups() -> pd.DataFrame:
    from hierdp_core.groupsizes.samples import us_household_groups
    return us_household_groups()


def _flights() -> pd.DataFrame:
    from hierdp_core.flows.samples import load_airport_flows
    return load_airport_flows()


AGES_EXAMPLE = ("--levels region,province,municipality --count-column residents --duplicates sum "
                f"--query ranges --attribute age --domain 0-{ITALY_MAX_AGE} --workload 0-17,18-64,65-100 "
                f"--geography {GEOGRAPHY} --mechanism dawa --epsilon 1 --out release-ages")

SAMPLE_FILES: dict[str, SampleFile] = {
    **{name: SampleFile(name, sample.description, sample.loader,
                        (_counts_example(sample),)
                        + ((AGES_EXAMPLE,) if name == "italy-municipalities" else ()),
                        GEOGRAPHIES[name])
       for name, sample in SAMPLES.items()},
    "us-households": SampleFile(
        "us-households",
        "Group sizes: synthetic-from-real households on the real populations of 3,141 US "
        "counties (116 million households, sizes 1..1,000 incl. group quarters); one row "
        "per county and size with the number of households (hierdp_core.groupsizes.samples).",
        _households,
        ("--levels state,county --query group-sizes --size-column size --count-column "
         f"households --max-size 1000 --geography {GEOGRAPHY} --groups "
         f"{GROUPS} --mechanism gs-mc-dp --invariant groups --epsilon 1 --out release-sizes",),
        _us_counties_geography, _household_groups),
    "us-flights": SampleFile(
        "us-flights",
        "O/D flows: flights between US airports in 2008, state > airport at both ends; one "
        "row per airport pair with the number of flights (npm vega-datasets 3.2.1, "
        "BSD-3-Clause; US Bureau of Transportation Statistics).",
        _flights,
        ("--query flows --origin-levels o_state,o_airport --destination-levels "
         f"d_state,d_airport --count-column flights --geography {GEOGRAPHY} --mechanism "
         "inftda --invariant total --epsilon 1 --delta 1e-8 --out release-flows",),
        _airports_geography),
}


def sample_geography(name: str, levels: Sequence[str],
                     name_columns: Mapping[str, str] | None = None) -> Geography:
    """The declared public geography of the bundled sample ``name`` (a key of
    `SAMPLE_FILES`) over ``levels`` (columns of its geography, coarse to fine), with the
    unit names of ``name_columns`` (level -> column) that the geography has."""
    table = SAMPLE_FILES[name].geography()
    levels = list(levels)
    names = {lv: col for lv, col in (name_columns or {}).items()
             if lv in levels and col in table.columns}
    units = table[levels + list(names.values())].drop_duplicates(subset=levels)
    return geography_from_table(units, levels, name_columns=names,
                                source=f"bundled sample {name}")


def sample_category_values(name: str, columns: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The public values of those ``columns`` of a bundled count sample that its source's
    code lists declare (`CATEGORY_VALUES`)."""
    declared = CATEGORY_VALUES.get(name, {})
    return {c: declared[c] for c in columns if c in declared}


def sample_target(name: str, out) -> Path:
    """The CSV file ``write_sample`` writes the sample ``name`` to for ``out``: ``out``
    itself when it ends in ``.csv``, or ``<name>.csv`` in it when it is an existing folder
    (``--out .``); anything else is an `InputError`."""
    from hierdp_core.errors import InputError

    out = Path(out)
    if out.is_dir() or not out.name:
        return out / f"{name}.csv"
    if out.suffix.lower() != ".csv":
        raise InputError("--out names the CSV file to write (e.g. sample.csv) or an existing "
                         "folder")
    return out


def write_sample(name: str, out, overwrite: bool = False) -> tuple[pd.DataFrame, dict]:
    """Write the bundled sample ``name`` to the CSV ``out`` and its public files beside it
    (``out``'s stem + ``-geography.csv``, and ``-groups.csv`` for a group-size sample; an
    ``out`` that is a folder gets ``<name>.csv`` in it: `sample_target`); returns (table,
    {"geography" or "groups": (table written, its path)}). Raises `InputError` for an
    unknown sample, a file that cannot be written, or one that exists (unless
    ``overwrite``), before writing any."""
    from hierdp_core.data.arrow_io import table_from_frame, write_release_csv
    from hierdp_core.errors import InputError

    try:
        sample = SAMPLE_FILES[name]
    except KeyError:
        raise InputError(f"unknown sample {name!r}; available: "
                         f"{', '.join(SAMPLE_FILES)}") from None
    out = sample_target(name, out)
    table = sample.loader()
    beside = {"geography": sample.geography()}
    if sample.groups is not None:
        beside["groups"] = sample.groups()
    written = {what: (frame, out.with_name(f"{out.stem}-{what}.csv"))
               for what, frame in beside.items()}
    paths = [out, *(path for _, path in written.values())]
    if not overwrite and (existing := [str(p) for p in paths if p.exists()]):
        raise InputError(f"{', '.join(map(repr, existing))} exists; choose another --out, or "
                         "--overwrite to replace it")
    try:  # pyarrow's writer, bytes as pandas' to_csv (4-5x faster on the Italian sample)
        for frame, path in [(table, out), *written.values()]:
            write_release_csv(table_from_frame(frame), path)
    except OSError as exc:
        raise InputError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
    return table, written

"""The Group sizes page's uploaded table (`ui.sources`): its level and column roles (each
picked by the user, or a guess applied on one click), the public size domain m..N and the
optional public groups file that declares every region's number of groups
(`hierdp_core.groupsizes.declared_groups`, the parser of ``hierdp release --groups``).

Without a groups file the numbers of groups are counted from the records: a release that
keeps them exactly is then not publishable (`hierdp_core.verdict.GROUPS_FROM_DATA`).
"""

from __future__ import annotations

import hashlib

import streamlit as st

from hierdp_core import column_roles, query_columns
from hierdp_core.cli.inputs import DEFAULT_MIN_SIZE
from hierdp_core.groupsizes.data import MAX_SIZE_LIMIT
from hierdp_core.ui import session
from hierdp_core.ui import structure as structure
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.sources import (
    build_once,
    confirm_roles,
    level_columns,
    pick_column,
    prepared,
    suggestion,
    units_read,
    upload_choices,
    valid_columns,
)

#: words of a column holding numbers of groups (``nb_menages``, ``anzahl_haushalte``)
GROUP_COUNT_WORDS = ("households", "count", "groups", "n", "nb", "nombre", "menages", "ménages",
                     "haushalte", "anzahl", "huishoudens", "aantal", "hogares", "famiglie",
                     "numero", "domicilios", "liczba", "gospodarstwa", "antal")
GROUPS_FILE_TYPES = ["csv", "tsv", "txt", "gz", "parquet", "xlsx", "xls", "feather"]
WHAT = "group sizes"


def _roles(table, levels: list[str], layout: str) -> tuple:
    """The column pickers of ``layout`` (person: the group id; size: the size and the number
    of groups) and the guesses offered for the ones still empty."""
    guessed = levels or column_roles.guess_levels(table)
    if layout == "person":
        groups = valid_columns("household id", column_roles.group_candidates(table, levels), WHAT,
                        "any column other than the levels")
        roles = (pick_column("Household id column", groups, wk.GS_UP_GROUP),)
        hints = [c for c in column_roles.group_candidates(table, guessed)
                 if column_roles.hinted(c, column_roles.GROUP_HINTS)]
        guesses = {wk.GS_UP_GROUP: ("household id", hints[0] if hints else None)}
    else:
        sizes = valid_columns("size column", column_roles.size_candidates(table, levels), WHAT,
                       "whole numbers of 1 or more, not a level or a code column")
        size = pick_column("Size column", sizes, wk.GS_UP_SIZE)
        counts = valid_columns("number of households", column_roles.count_candidates(
            table, [*levels, size]), WHAT, "whole numbers, not a level, code or the size")
        roles = (size, pick_column("Number of households column", counts, wk.GS_UP_COUNT))
        size_guess = next(iter(column_roles.size_candidates(table, guessed)), None)
        count_guess = [c for c in column_roles.count_candidates(table, [*guessed, size_guess])
                       if column_roles.hinted(c, GROUP_COUNT_WORDS)]
        guesses = {wk.GS_UP_SIZE: ("size", size_guess),
                   wk.GS_UP_COUNT: ("households", count_guess[0] if count_guess else None)}
    return roles, {wk.GS_UP_LEVELS: ("levels", guessed), **guesses}


def _size_domain() -> tuple[int, int]:
    """(m, N): the public smallest and largest sizes (m defaults to 1, as on the command
    line: a household has a member)."""
    max_size = st.number_input("Largest size N (public)", min_value=1, max_value=MAX_SIZE_LIMIT,
                               value=64, step=1, key=wk.GS_UP_MAX,
                               help="Sizes above N count as N. Choose N without looking at "
                                    "the data: it is part of the public model.")
    min_size = st.number_input("Smallest size m (public)", min_value=0,
                               max_value=MAX_SIZE_LIMIT - 1, value=DEFAULT_MIN_SIZE, step=1,
                               key=wk.GS_UP_MIN,
                               help="Sizes m..N are released; a smaller group (a declared "
                                    "group with no member in the records) counts as m. 1: "
                                    "every household has a member; 0 releases size 0 too.")
    return int(min_size), int(max_size)


def groups_file_input():
    """The optional public groups file (None: the numbers of groups are counted from the
    records) and its record for the manifest (``{"file", "sha256"}``, as the command line's
    ``input.groups``)."""
    uploaded = st.file_uploader(
        "Groups file (public, optional): the level columns and 'groups' (every finest "
        "region's number of households, 0 for none), or the level columns and 'group' (one "
        "row per household id)", type=GROUPS_FILE_TYPES, key=wk.GS_UP_GROUPS_FILE,
        help="The same file as `hierdp release --groups`. With it every number of "
             "households a release keeps exactly is declared, and the release can be "
             "publishable; without it they are counted from your table (exploration only "
             "for a mechanism that keeps them exactly). It needs the declared geography "
             "(Data page).")
    if uploaded is None:
        return None, None
    return uploaded, {"file": uploaded.name,
                      "sha256": hashlib.sha256(uploaded.getvalue()).hexdigest()}


def _declared_groups(uploaded, geography, levels: list[str]):
    """The `DeclaredGroups` of the uploaded groups file over the declared ``geography``; a
    `StructureError` naming what is wrong (the command line's message)."""
    from hierdp_core.errors import StructureError
    from hierdp_core.groupsizes.declared_groups import read_declared_groups

    if geography is None:
        raise StructureError(f"groups file {uploaded.name!r}: it declares the households of "
                             "the declared regions; choose the declared structure and upload "
                             "the public geography file on the Data page first")
    return read_declared_groups(uploaded, geography, levels, name=uploaded.name)


def group_sizes_from_upload(ds: dict):
    """GroupSizeData from the uploaded table: person records with a group id, or numbers of
    groups per size; levels, columns, the public sizes m..N and the optional groups file
    chosen here. Returns (data, key, the input description for the manifest: with
    ``groups`` recording the groups file as the command line does)."""
    from hierdp_core.groupsizes.data import (
        group_size_data_from_histograms,
        group_size_data_from_people,
    )

    left, middle, right = st.columns(3)
    with left:
        levels = level_columns(ds, wk.GS_UP_LEVELS)
    with middle:
        layout = st.radio("One row per", ["person", "size"], horizontal=True, key=wk.GS_UP_ROWS,
                          index=int(query_columns.groups_per_size(ds["table"], levels)),
                          format_func={"person": "person (household id)",
                                       "size": "region and size"}.get)
        roles, guesses = _roles(ds["table"], levels, layout)
    with right:
        min_size, max_size = _size_domain()
    uploaded, groups_record = groups_file_input()
    offered = suggestion(wk.GS_UP_SUGGEST, guesses)
    confirm_roles([levels, *roles], "the geography level columns (coarse to fine) and the "
                                    "columns of your table", offered)

    _, ragged, local = upload_choices()
    groups = None if uploaded is None else build_once(
        "gs_groups", (groups_record["sha256"], tuple(levels), session.structure_key(), ragged,
                      local), WHAT,
        lambda: _declared_groups(uploaded, structure.declared_geography(
            levels, ragged=ragged, local_codes=local), levels),
        failure="This groups file cannot be used")

    def build():
        units = units_read(ds, levels)
        sizes = {"min_size": min_size, "max_size": max_size, "group_counts": groups}
        table = prepared(ds, [levels], None if layout == "person" else roles[1])
        if layout == "person":
            return group_size_data_from_people(table, levels, roles[0], **sizes, **units)
        return group_size_data_from_histograms(table, levels, roles[0], roles[1], **sizes,
                                               **units)
    key = (ds["version"], tuple(levels), layout, roles, min_size, max_size, session.structure_key(),
           upload_choices(), groups_record and groups_record["sha256"])
    spec = {"query": "group-sizes", "levels": levels, "max_size": max_size,
            "min_size": min_size,
            **({"group_column": roles[0]} if layout == "person" else
               {"size_column": roles[0], "count_column": roles[1]}),
            **({"groups": groups_record} if groups_record else {}),
            **structure.manifest_record()}
    return build_once(wk.GS, key, WHAT, build), key, spec

"""The keys of the dashboard's widgets, per page. A widget's key is its session-state key in
Streamlit (and its ``st-key-<key>`` CSS class, by which the browser tests find it), so with
`hierdp_core.ui.session` (the ``hd_*`` keys of the data, settings and results) this module
names every session key: no other module writes one out (``tests/test_session_keys.py``).

A key made per page joins the page's prefix (`GS`, `FL`, `RG`, `RES`, `EX`) and the widget's
name (`page_key`); a key made per view, side, level or file is built by the function named
after it. Nothing here imports Streamlit.
"""

from __future__ import annotations

#: the prefixes of the pages whose widgets share names (group sizes, flows, range queries,
#: Results, Export)
GS, FL, RG, RES, EX = "gs", "fl", "rg", "res", "ex"


def page_key(prefix: str, *parts: object) -> str:
    """The key ``{prefix}_{part}_{part}...``: a widget of the page of ``prefix``, or one of
    the widgets ``prefix`` made per side, level or file."""
    return "_".join(map(str, (prefix, *parts)))


# ---- widgets the query pages share (keys ``{prefix}_{name}``) --------------------------------
MECHANISM, EPSILON, SEED, RUN, SOURCE = "mechanism", "epsilon", "seed", "run", "source"
SW_MECHS, SW_EPS, SW_TRIALS, SW_METRIC = "sw_mechs", "sw_eps", "sw_trials", "sw_metric"
SW_LEVEL, SW_RUN = "sw_level", "sw_run"  # the trade-off sweep (`widgets.sweep_controls`)
IV_LEVEL, PREPARE, DL, DL_MANIFEST = "iv_level", "prepare", "dl", "dl_manifest"  # downloads
SECURE, CFG_SAVE, SCRIPT = "secure", "cfg_save", "script"  # publishable draw, configuration
BUDGET_CONFIRM, BUDGET_TOTAL = "budget_confirm", "budget_total"  # the budget ledger
BUDGET_CHANGE, BUDGET_DECLARE = "budget_change", "budget_declare"


def parameter_key(prefix: str, mechanism: str, parameter: str) -> str:
    """The widget of a mechanism's parameter on the page of ``prefix``."""
    return page_key(prefix, mechanism, parameter)


# ---- Home (app.py; the sidebar's palette: `session.PALETTE_PICK`) -----------------------------
HOME_PRELOAD = "home_preload"


def start_key(sample: str) -> str:
    """Home's button that starts with the bundled ``sample``."""
    return f"start_{sample}"


# ---- Data ---------------------------------------------------------------------------------------
DATA_SAMPLE, LOAD_SAMPLE, UPLOAD, ENCODING = "data_sample", "load_sample", "upload", "encoding"
USE_UPLOAD, ROLES_LOCAL = "use_upload", "roles_local"
#: names of the widgets of one upload (`ui.inputs.upload_key` adds the upload's number)
SHAPE_WIDE, SHAPE_COLUMNS, SHAPE_NAME = "shape_wide", "shape_columns", "shape_name"
ROLES_MISSING, ROLES_RAGGED = "roles_missing", "roles_ragged"
#: names of the widgets of one table's columns (`ui.inputs.table_key` adds its version)
ROLES_LEVELS, ROLES_CATEGORIES, ROLES_COUNT = "roles_levels", "roles_categories", "roles_count"
ROLES_GUESS, HIERARCHY_LEVELS = "roles_guess", "hierarchy_levels"


def roles_names(level: str) -> str:
    """The name (before `ui.inputs.table_key`) of the picker of ``level``'s name column."""
    return f"roles_names_{level}"


#: an upload's boundaries (`ui.geo`) and declared structure (`ui.structure`)
GEO_CHOICE, GEO_UPLOAD, GEO_USE = "geo_choice", "geo_upload", "geo_use"
GEO_ACCEPT = "geo_accept"
STRUCTURE_CHOICE, STRUCTURE_GEOGRAPHY = "structure_choice", "structure_geography"


def geo_property(digest: str, level: str) -> str:
    """The picker of the boundaries file ``digest``'s property holding ``level``'s codes."""
    return f"geo_prop_{digest}_{level}"


def structure_values(column: str) -> str:
    """The declared values of the category ``column``."""
    return f"structure_values_{column}"


# ---- Hierarchy, Mechanism and budget (with `ui.split`) -----------------------------------------
TREEMAP = "treemap"
TREEMAP_ROOT = "treemap_root"  # the unit the treemap zooms into (+ the table and levels)


def treemap_zoom(key: str, unit: int) -> str:
    """The key of the "Zoom into" box listing the units under ``unit`` (``key``: the
    treemap's, with its table and levels)."""
    return f"{key}/{unit}"
MECH_NAME, DEFINITION, DELTA, LEDGER_FIG = "mech_name", "definition", "delta", "ledger_fig"
PARAM = "param"  # the prefix of the counts mechanism's parameters
SPLIT_PRESET, SPLIT_GOAL, SPLIT_GOAL_METRIC = "split_preset", "split_goal", "split_goal_metric"
SPLIT_GOAL_APPLY, SPLIT_GOAL_FIG = "split_goal_apply", "split_goal_fig"
SPLIT_GOAL_OPEN = "split_goal_open"  # the "Optimise the split" expander (open: True)
#: the split goal's weights and populations (+ the tree and the level) and their confirmation
#: (+ the tree), as `page_key` joins them
SPLIT_GOAL_W, SPLIT_GOAL_POP, SPLIT_GOAL_PUBLIC = ("split_goal_w", "split_goal_pop",
                                                   "split_goal_public")


def weight_key(level: int) -> str:
    """The split's weight slider of ``level``."""
    return f"weight_{level}"


# ---- Results (with `ui.coverage`, `ui.explain_panel`) ------------------------------------------
RUN_RELEASE, RES_LEVEL, RES_WITHIN, RES_CATEGORY = ("run_release", "res_level", "res_within",
                                                    "res_category")
RES_MAP, RES_MAP_FIGURE, RES_METRIC, RES_CHART = ("res_map", "res_map_figure", "res_metric",
                                                  "res_chart")
BY_LEVEL, BY_BIN, SCATTER, NOISY_LEVELS = "by_level", "by_bin", "scatter", "noisy_levels"
RES_UNITS, RES_SEARCH, RES_VIEW = "res_units", "res_search", "res_view"
RES_IV_LEVEL, RES_IV_MAKE = page_key(RES, IV_LEVEL), "res_iv_make"
EXPLAIN_PANEL = "explain_panel"  # the panel's container (CSS class st-key-explain_panel)

# ---- Trade-offs ------------------------------------------------------------------------------
SWEEP_VIEW, SWEEP_FIG = "sw_view", "sweep_fig"
CMP_A, CMP_B, CMP_MECH, CMP_EPS, CMP_RUN, CMP_FIG = ("cmp_a", "cmp_b", "cmp_mech", "cmp_eps",
                                                     "cmp_run", "cmp_fig")

# ---- Export ----------------------------------------------------------------------------------
DL_GEO_LEVEL, DL_GEOJSON, DL_GEOJSON_PUB = "dl_geo_level", "dl_geojson", "dl_geojson_pub"
REPORT_TRUTH = "report_truth"
PREP_STAKEHOLDER, DL_STAKEHOLDER = "prep_stakeholder", "dl_stakeholder"
PREP_PDF, DL_STAKEHOLDER_PDF = "prep_pdf", "dl_stakeholder_pdf"
PREP_REPORT, DL_REPORT = "prep_report", "dl_report"

# ---- Group sizes (with `ui.gs_upload`) -------------------------------------------------------
GS_MECHANISM, GS_EPSILON, GS_SEED, GS_RUN = (page_key(GS, k) for k in (MECHANISM, EPSILON,
                                                                       SEED, RUN))
GS_LEVEL, GS_REGION = "gs_level", "gs_region"  # + the view (`ui.sources.on_data`)
GS_HIST, GS_MAP, GS_SWEEP_LEVEL, GS_SWEEP_FIG = "gs_hist", "gs_map", "gs_sw_level", "gs_sweep_fig"
GS_UP_LEVELS, GS_UP_ROWS, GS_UP_GROUP = "gs_up_levels", "gs_up_rows", "gs_up_group"
GS_UP_SIZE, GS_UP_COUNT, GS_UP_MAX, GS_UP_MIN = ("gs_up_size", "gs_up_count", "gs_up_max",
                                                 "gs_up_min")
GS_UP_GROUPS_FILE, GS_UP_SUGGEST = "gs_up_groups_file", "gs_up_suggest"

# ---- Flows (uploads: `ui.sources`) -----------------------------------------------------------
FL_MECHANISM, FL_EPSILON, FL_SEED, FL_RUN = (page_key(FL, k) for k in (MECHANISM, EPSILON,
                                                                       SEED, RUN))
FL_DELTA, FL_SPLIT, FL_LEVELS = "fl_delta", "fl_split", "fl_levels"
FL_TRUE, FL_REL, FL_ERR = "fl_true", "fl_rel", "fl_err"  # the matrices of the first level
FL_MAP_LEVEL, FL_MAP_SHOW, FL_MAP_TOP, FL_MAP = ("fl_map_level", "fl_map_show", "fl_map_top",
                                                 "fl_map")  # FL_MAP_LEVEL + the view
FL_SWEEP_LEVEL, FL_SWEEP_FIG = "fl_sw_level", "fl_sweep_fig"
FL_UP_ORIGIN, FL_UP_DESTINATION = "fl_up_origin", "fl_up_destination"
FL_UP_COUNT, FL_UP_SUGGEST = "fl_up_count", "fl_up_suggest"

# ---- Range queries (uploads: `ui.sources`) ---------------------------------------------------
RG_MECHANISM, RG_EPSILON, RG_SEED, RG_RUN = (page_key(RG, k) for k in (MECHANISM, EPSILON,
                                                                       SEED, RUN))
RG_MUNICIPALITIES, RG_WORKLOAD, RG_BANDS = "rg_municipalities", "rg_workload", "rg_bands"
RG_LEVEL, RG_UNIT = "rg_level", "rg_unit"  # + the view (the unit: + the view and level)
RG_HIST, RG_CUM, RG_SWEEP_LEVEL, RG_SWEEP_FIG = "rg_hist", "rg_cum", "rg_sw_level", "rg_sweep_fig"
RG_CMP_MECHS, RG_CMP_RUN, RG_CMP_FIG = "rg_cmp_mechs", "rg_cmp_run", "rg_cmp_fig"
RG_UP_LEVELS, RG_UP_ATTRIBUTE, RG_UP_COUNT = "rg_up_levels", "rg_up_attribute", "rg_up_count"
RG_UP_DOMAIN, RG_UP_SUGGEST = "rg_up_domain", "rg_up_suggest"


def range_unit(view: str, level: int) -> str:
    """The Range page's unit picker of ``level`` in the data ``view``."""
    return f"{RG_UNIT}{view}_{level}"


def range_upload_bands(low: int, high: int) -> str:
    """The bands of an uploaded table whose attribute runs from ``low`` to ``high``."""
    return f"rg_up_bands_{low}_{high}"


# ---- Compare -----------------------------------------------------------------------------------
CMP_SAME_SEED, CMP_LEVEL, CMP_CATEGORY = "cmp_same_seed", "cmp_level", "cmp_category"
CMP_METRIC, CMP_BY_LEVEL = "cmp_metric", "cmp_by_level"
#: a side's widgets (+ the side: A or B; with `CMP_MECH` and `CMP_EPS`) and the maps (+ their
#: tag), as `page_key` joins them
CMP_SPLIT, CMP_SEED, CMP_MAP = "cmp_split", "cmp_seed", "cmp_map"
CMP_RHO = "cmp_rho"  # a side's total ρ under zCDP (+ the side)

"""Export: save or load the configuration; download the release (CSV, Parquet, GeoJSON)
with its manifest, the release report for stakeholders, and, separately, a confidential
evaluation report."""

import json

import streamlit as st

from hierdp_core.config import config_from_dict, config_json
from hierdp_core.errors import HierdpError
from hierdp_core.geo.maps import level_geojson
from hierdp_core.mechanism_names import DEFINITIONS
from hierdp_core.mechanism_names import title as mechanism_title
from hierdp_core.metrics import error_metrics
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.report.evaluation import evaluation_report_html
from hierdp_core.report.pdf import chromium_path, report_pdf
from hierdp_core.report.stakeholder import report_file_stem, report_html
from hierdp_core.ui import config as config_ui
from hierdp_core.ui import downloads, map_layers, session, structure, widgets
from hierdp_core.ui import release as rel
from hierdp_core.ui import widget_keys as wk
from hierdp_core.ui.ledger import current_charge
from hierdp_core.ui.reproduce import reproduce_box
from hierdp_core.verdict import release_verdict
from hierdp_core.viz import metric_by_level, true_vs_released_scatter


def load_config() -> None:
    """Apply the uploaded configuration (on upload, before the page is drawn)."""
    uploaded = st.session_state.get(session.CONFIG_UPLOAD)
    if uploaded is None:
        return
    try:
        notes = config_ui.apply_config(config_from_dict(json.loads(uploaded.getvalue())))
    except (HierdpError, ValueError) as exc:
        st.session_state[session.LOADED] = (False, f"The configuration cannot be loaded: {exc}")
    else:
        st.session_state[session.LOADED] = (True, "Loaded " + uploaded.name + ". " + " ".join(
            f"Note: {n}." for n in notes))


widgets.page_header("Export", "Download the released tables and their manifest.")
data = widgets.require_count_data()
h = data.hierarchy
release = session.current_release()
with st.expander("Configuration: save it, or load a saved one", icon=":material/settings:",
                 expanded=release is None):
    st.download_button("Save the configuration (JSON)",
                       config_json(config_ui.current_config(release)),
                       "hierdp_config.json", "application/json", key=wk.CFG_SAVE)
    st.file_uploader("Load a configuration (JSON)", type=["json"], key=session.CONFIG_UPLOAD,
                     on_change=load_config)
    st.caption("Data, levels, mechanism, parameters, budget, split and seed; the same file "
               "works on the command line: `hierdp release --config hierdp_config.json`.")
    loaded = st.session_state.pop(session.LOADED, None)
    if loaded:
        (st.success if loaded[0] else st.error)(loaded[1])
        if loaded[0]:
            widgets.next_page("pages/4_Results.py", "See the release on the Results page")
if release is not None:
    reproduce_box(config_ui.current_config(release), "hierdp_config.json", wk.EX)
if release is None:
    st.info("No release for the current settings yet.")
    widgets.next_page("pages/4_Results.py", "Run it on the Results page")
    st.stop()
ds = session.ensure_dataset()
r = session.roles()
input_spec = {"file": ds["name"], "query": "counts", "levels": r["levels"],
              "count_column": r["count_column"], "category_columns": r["category_columns"],
              "local_codes": r["local_codes"],
              **(structure.manifest_record() if ds["sample"] is None else {})}

st.subheader("The release")
st.caption(f"{mechanism_title(release.mechanism)} · "
           f"{DEFINITIONS.get(release.privacy.get('definition'), '')} · "
           f"randomness: {release.randomness.get('mode')}")
if release.invariants:
    st.warning(f"Published exactly, not protected: {', '.join(release.invariants)}.")
settings = session.settings(h.n_levels)
offered = rel.release_downloads(release, wk.EX, "counts", input_spec, release.values.size,
                                structure_declared=data.declared_structure, heading=False,
                                wait=True,  # the files at once: no "Prepare" click
                                redraw=lambda: session.release_for(
                                    data, config_ui.current_config(release),
                                    NoiseSource(secure=True)),
                                ledger=current_charge(session.budget_of(settings),
                                                      settings["mechanism"], data))
secure = offered.secure
shown = next(one for one in (secure, offered.exploration, release) if one is not None)
table = shown.to_frame()
shown_stem = downloads.tagged("counts", release_verdict(
    shown, structure_declared=data.declared_structure))
manifest = downloads.offered_manifest(downloads.kept_tables(), shown, shown_stem,
                                      structure_declared=data.declared_structure,
                                      input_spec=input_spec)

st.markdown(f"**{'The publishable release' if secure is not None else 'The release'}: "
            "its table and manifest**")
preview, about = st.columns([3, 2])
with preview:
    st.dataframe(table.head(500), hide_index=True, width="stretch", height=280)
    st.caption(f"{len(table):,} rows (first 500 shown). "
               + rel.rules_text(json.loads(manifest)["table_rules"]))
with about:
    st.json(json.loads(manifest), expanded=1)

sources = map_layers.map_sources(ds["sample"], h)
geo_levels = list(sources)
if geo_levels:
    level = st.selectbox("GeoJSON level", geo_levels, index=len(geo_levels) - 1,
                         format_func=lambda lv: h.level_names[lv], key=wk.DL_GEO_LEVEL)
    missing = []
    for label, key, one in (("", wk.DL_GEOJSON, offered.exploration),
                            ("Secure: ", wk.DL_GEOJSON_PUB, secure)):
        if one is None:
            continue
        geojson, missing = rel.geojson_bytes(one, level_geojson(*sources[level]), level)
        stem = downloads.tagged(f"counts_{h.level_names[level]}",
                                release_verdict(one, structure_declared=data.declared_structure))
        st.download_button(f"{label}Release GeoJSON ({h.level_names[level]})",
                           geojson, f"{stem}_release.geojson",
                           "application/geo+json", key=key,
                           type="primary" if one is secure else "secondary")
    if missing:
        st.caption(f"{len(missing)} units have no geometry and are listed under "
                   "'missing_geometry' in the file.")

st.divider()
st.subheader("Release report for stakeholders (HTML)")
# the publishable release once drawn; the exploration one with its intervals when made
reported = secure if secure is not None else offered.exploration or release
st.caption("One self-contained file that opens offline and prints cleanly (or as a PDF): a "
           "five-line summary, the verdict, the error by level in people and relative, maps "
           "of every level (or why not), figures with intervals, an explanation in plain "
           "words, and the configuration and budget ledger in an appendix. "
           + ("It reports the release drawn above with secure noise." if secure is not None else
              "It reports the exploration release (marked EXPLORATION - NOT FOR "
              "PUBLICATION); draw the publishable release above to report that one."))
evaluate = st.checkbox("Add the error against the true data (the report is then "
                       "CONFIDENTIAL)", key=wk.REPORT_TRUTH)
if st.button("Prepare the report", key=wk.PREP_STAKEHOLDER, type="primary"):
    with st.spinner("Writing the report…"):
        html = report_html(
            reported, data, config_ui.current_config(reported).to_dict(),
            structure_declared=data.declared_structure, evaluation=evaluate,
            geometries={lv: (level_geojson(*src), map_layers.map_projection(src[0]))
                        for lv, src in sources.items()},
            sweep=st.session_state.get(session.SWEEP) if evaluate else None)
        st.session_state[session.STAKEHOLDER] = ((rel.release_token(reported), evaluate), html)
prepared = st.session_state.get(session.STAKEHOLDER)
if prepared and prepared[0] == (rel.release_token(reported), evaluate):
    stem = report_file_stem(reported, structure_declared=data.declared_structure,
                            evaluation=evaluate)
    html_col, pdf_col = st.columns(2)
    html_col.download_button("Download the report (HTML)", prepared[1], f"{stem}.html",
                             "text/html", key=wk.DL_STAKEHOLDER)
    if chromium_path() is None:
        pdf_col.caption("A PDF needs Chromium on this server; print the HTML from a browser.")
    elif pdf_col.button("Make a PDF of it", key=wk.PREP_PDF):
        try:
            with st.spinner("Printing the report with Chromium…"):
                st.session_state[session.PDF] = (prepared[0], report_pdf(prepared[1]))
        except HierdpError as exc:
            pdf_col.error(str(exc))
    pdf = st.session_state.get(session.PDF)
    if pdf and pdf[0] == prepared[0]:
        pdf_col.download_button("Download the report (PDF)", pdf[1], f"{stem}.pdf",
                                "application/pdf", key=wk.DL_STAKEHOLDER_PDF)

st.divider()
st.subheader(":material/warning: Evaluation report (CONFIDENTIAL — do not publish)")
st.caption("Contains error metrics computed against the true data. For internal review only.")
if st.button("Prepare the evaluation report", key=wk.PREP_REPORT):
    metrics = error_metrics(h, data.node_counts(), release.values,
                            categories=data.categories if data.has_categories else None)
    leaf = h.level_slice(h.depth)
    figures = {
        "Mean absolute error by level": metric_by_level(metrics, "mae"),
        "True vs released (finest level)": true_vs_released_scatter(
            data.node_counts()[leaf].sum(axis=1), release.values[leaf].sum(axis=1),
            level_name=h.level_names[h.depth]),
    }
    st.session_state[session.REPORT] = (rel.release_token(release),
                                        evaluation_report_html(release, data, metrics, figures))
report = st.session_state.get(session.REPORT)
if report and report[0] == rel.release_token(release):
    st.download_button("Download the CONFIDENTIAL report (HTML)", report[1],
                       "CONFIDENTIAL_evaluation_report.html", "text/html", key=wk.DL_REPORT)

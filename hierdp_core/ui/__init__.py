"""The Streamlit layer of the dashboard (the only part of hierdp that imports Streamlit):
session state (`session`), bundled samples (`samples`), map boundaries (`map_layers`), shared
widgets and page chrome (`widgets`), upload sources and input shape (`sources`, `inputs`),
release widgets (`release`), budget split (`split`), declared structure (`structure`),
boundaries of the user's data (`geo`) and saved configurations (`config`)."""

"""Geography for maps: bundled boundaries (`maps`), a user's boundary files (`upload`), how
well a geometry fits a table (`match`, `guess`) and the lighter whole-level shapes
(`overview`). Importing this package imports nothing."""

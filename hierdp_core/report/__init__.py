"""Reports of a release as self-contained HTML: the confidential evaluation report against
the truth (`evaluation`) and the publishable stakeholder report (`stakeholder`, with its
`summary`, `figures` and `pdf` printing). Importing this package imports nothing."""

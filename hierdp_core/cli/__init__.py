"""The ``hierdp`` command line: `entry` (the console script), `main` (parse and run a
command), `parser`, and one module per command or step. Importing this package imports
nothing: start-up stays light (`hierdp_core.cli.main`)."""

from hierdp_core.cli.entry import entry

entry()

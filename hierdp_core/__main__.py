from hierdp_core.cli_entry import entry

entry()

from hierdp_core.cli import main

raise SystemExit(main())

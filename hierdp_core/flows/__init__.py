"""Origin/destination flows: data model and O/D tree (`data`), per-parent projections
(`projections`), the top-down loop and leaf aggregation (`tree`), the release (`release`),
metrics (`metrics`), the paper's synthetic generator (`synthetic`) and the bundled US
airport flights sample (`samples`). Mechanisms are
registered in `hierdp_core.mechanisms.flows`."""

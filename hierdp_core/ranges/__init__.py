"""Range queries over ordered attributes: workloads, DAWA and its baselines (1-D and
Hilbert-ordered 2-D), and their release inside the geographic hierarchy."""

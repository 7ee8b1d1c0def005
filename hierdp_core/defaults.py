"""Defaults and choices the command line shows before it imports anything heavy (its help
and its early refusals run on the standard library alone): the modules that use them
import them from here."""

#: the confidence level of the intervals a release carries by default
DEFAULT_LEVEL = 0.9
#: what ``--missing`` may do with a missing cell of a wide or ragged table
MISSING_POLICIES = ("error", "zero", "drop")
#: the most bootstrap replicates an interval takes (``--interval-replicates``): ten times the
#: most chosen by time, far more than its quantiles need; each re-runs or simulates the
#: release, so time grows with each whatever the memory (10,000 re-runs of greedy-h on a
#: two-row table took 226 s)
MAX_REPLICATES = 2_000

"""Defaults and choices the command line shows before it imports anything heavy (its help
and its early refusals run on the standard library alone): the modules that use them
import them from here."""

#: the confidence level of the intervals a release carries by default
DEFAULT_LEVEL = 0.9
#: what ``--missing`` may do with a missing cell of a wide or ragged table
MISSING_POLICIES = ("error", "zero", "drop")
#: the most bootstrap replicates an interval takes (``--interval-replicates``): far more than
#: its quantiles need, while each replicate re-runs the release (time grows with each)
MAX_REPLICATES = 10_000

"""Plain names of the mechanisms, for whoever reads the dashboard or a report: the registry's
keys ("topdown", "gs-kuo-hierarchical") name a mechanism in files, manifests, configurations
and the command line, and a person reads "TopDown" or "Kuo et al., hierarchical".

A key missing here is shown as it is (a newly registered mechanism never breaks a page);
``tests/test_mechanism_names.py`` checks that every registered mechanism has its name.

Example
-------
>>> title("topdown"), title("gs-kuo-hierarchical"), title("some-new-key")
('TopDown', 'Kuo et al., hierarchical', 'some-new-key')
"""

from __future__ import annotations

import pandas as pd

TITLES: dict[str, str] = {
    # counts
    "raw-laplace": "Laplace noise",
    "raw-geometric": "Geometric noise",
    "raw-discrete-gaussian": "Discrete Gaussian noise",
    "least-squares": "Least squares",
    "topdown": "TopDown",
    # group sizes
    "gs-noisy": "Noisy size histograms",
    "gs-mh-relaxed": "Histograms, relaxed program (M_H^r)",
    "gs-mh-dp": "Histograms, exact integer hierarchy (M_H^dp)",
    "gs-mc-relaxed": "Cumulative, relaxed program (M_c^r)",
    "gs-mc-dp": "Cumulative, exact integer hierarchy (M_c^dp)",
    "gs-mc-chain": "Cumulative chain, private (M_c^ch)",
    "gs-mc-chain-paper": "Cumulative chain as published (M_c^ch)",
    "gs-topdown": "TopDown on size histograms",
    "gs-kuo-hc": "Kuo et al., cumulative (Hc)",
    "gs-kuo-hg": "Kuo et al., sorted sizes (Hg)",
    "gs-kuo-hierarchical": "Kuo et al., hierarchical",
    # flows
    "inftda": "InfTDA",
    "tda-l2": "TopDown, Euclidean (TDA-l2)",
    "tda-linf-milp": "TopDown, integer program (TDA-l-inf)",
    "vanilla-gauss": "Gaussian noise on every pair",
    "stability-histogram": "Stability-based histogram",
    # ranges
    "dawa": "DAWA",
    "dawa-reference": "DAWA, the authors' partition",
    "greedy-h": "Greedy H",  # the baselines by their published names (DPBench's)
    "partition-laplace": "DAWA partition, Laplace noise",
    "identity": "Identity",
    "uniform": "Uniform",
    "h2": "H2",
    "hb": "HB",
    "privelet": "Privelet",
}

#: the privacy definitions' plain names (keys as in `hierdp_core.privacy.budget`)
DEFINITIONS = {"pure-dp": "ε-differential privacy", "zcdp": "ρ-zero-concentrated DP"}


def title(key: str) -> str:
    """The plain name of the mechanism ``key`` (the key itself when it has none)."""
    return TITLES.get(key, key)


def titled(table: pd.DataFrame, column: str = "mechanism") -> pd.DataFrame:
    """A copy of ``table`` whose ``column`` of mechanism keys holds their plain names."""
    return table.assign(**{column: table[column].map(title)})

"""What the O/D flow mechanisms share (`hierdp_core.mechanisms.flows`, the top-down loop;
`hierdp_core.mechanisms.flow_baselines`, the leaf baselines): the query, the reference, the
neighbouring relations and their sensitivities, the data check, and `FlowMechanism`, whose
releases can be made many at once."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable

from hierdp_core.errors import MechanismError
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.tree import Forest
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import ADD_REMOVE_TRIP, SUBSTITUTE_TRIP
from hierdp_core.privacy.samplers import NoiseSource

QUERY = "flows"
REFERENCE = ("Boninsegna & Silvestri (2025), Differentially private release of hierarchical "
             "origin/destination data with a TopDown approach")
NEIGHBOURING = {
    "bounded": "bounded DP: one user's trip substituted (n public); per tree level L2 "
               "sensitivity sqrt(2), discrete Gaussian noise of variance 1/rho_l on level l, "
               "so the release is (rho_1 + ... + rho_T)-zCDP",
    "unbounded": "unbounded DP: one trip added or removed; per tree level (root included) "
                 "L2 sensitivity 1, discrete Gaussian noise of variance 1/(2 rho_l), so the "
                 "release is (rho_0 + ... + rho_T)-zCDP",
}
#: L2 sensitivity of one level's (or the leaves') O/D histogram, by neighbouring relation
SENSITIVITY = {"bounded": math.sqrt(2.0), "unbounded": 1.0}
RELATION = {"bounded": SUBSTITUTE_TRIP, "unbounded": ADD_REMOVE_TRIP}


def check_flow_data(name: str, data) -> FlowData:
    """``data`` if it is a `FlowData`, else a `MechanismError` naming mechanism ``name``."""
    if not isinstance(data, FlowData):
        raise MechanismError(f"{name} releases origin/destination flows: load trips or an O/D "
                             "table as flows (e.g. `--query flows`)")
    return data


class FlowMechanism(Mechanism):
    """An O/D flow mechanism whose releases can be made many at once (`trees`); a release
    is its `releaser`'s draw (secure noise unless a source is given)."""

    def release(self, data, budget: PrivacyBudget, *, split=None,
                source: NoiseSource | None = None, **params):
        return self.releaser(data, budget, split=split, **params)(
            source or NoiseSource(secure=True))

    @abstractmethod
    def trees(self, data, budget: PrivacyBudget, *, split=None,
              **params) -> Callable[[list[NoiseSource]], Forest]:
        """``f`` with ``f(sources)`` the released trees of ``len(sources)`` releases at once
        (audits, bootstraps): release t is the tree `releaser`'s ``f(sources[t])`` gives,
        releases made in turn (bit for bit with seeded sources)."""

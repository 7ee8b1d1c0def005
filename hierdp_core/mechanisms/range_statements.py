"""The privacy statements of the range mechanisms, in words (the notes of their plans'
stages and their descriptions): what each stage measures, its sensitivity and its noise."""

from __future__ import annotations

NEIGHBOURING = ("add/remove one person; per level one cell of one unit's histogram changes "
                "by 1; units of a level are disjoint (parallel composition); levels compose "
                "sequentially")
DAWA_REF = ("Li, Hay, Miklau & Wang (2014), A data- and workload-aware algorithm for range "
            "queries under differential privacy, PVLDB 7(5)")
NOT_PRIVATE = ("privacy not established: the authors' code's Stage 1 (half the noise, none on "
               "single cells, costs clamped at 1/epsilon2) exceeds its epsilon in this "
               "project's audit; for reproducing published numbers only; use dawa, whose "
               "Stage 1 is provably private")
#: Privelet measures in parts: the groups of its weighted coefficients
PRIVELET_PARTS = "1 + log2 N"
PRIVELET_SENSITIVITY = ("sensitivity per group of weighted Haar coefficients (W c, weight W: "
                        "N for the base, s for a node over s cells): one record moves one "
                        "coefficient of each of the 1 + log2 N groups by 1/W (N: the public "
                        "padded domain size); the groups share epsilon equally: Laplace((1 + "
                        "log2 N)/(epsilon W)) on each coefficient")
STAGE1_SELECTION = ("Stage 1 selects a partition from noisy scores, its privacy the "
                    "selection's argument (not a composition of its draws): PrivTree's scores "
                    "have sensitivity 1 and get scale_factor 3 (Laplace(3/epsilon1)); the "
                    "least-cost candidates' costs have sensitivity at most 2 (Delta_bcost) and "
                    "get scale_factor 2 over the mean of Delta and Delta_b (the Remark's "
                    "Laplace((Delta + Delta_b)/epsilon1)), the reference code factor 1")
STAGE1_PRIVACY = ("Stage 1 epsilon1 = rho epsilon_l: PrivTree bisection (median-deviation "
                  "score, sensitivity 1, monotone; Laplace(3/epsilon1), depth bias "
                  "(3 ln 2)/epsilon1) or the least-cost partition with Laplace((Delta + "
                  "Delta_b)/epsilon1) on every candidate cost")
REFERENCE_STAGE1 = ("Stage 1 epsilon1 = rho epsilon_l as claimed by the authors' code: half "
                    "the Laplace noise of the proof, none on single cells, costs clamped at "
                    "1/epsilon2 (the claim the audit refutes)")
STAGE2_PRIVACY = ("Stage 2 epsilon2 = (1 - rho) epsilon_l: weighted queries with column L1 norm "
                  "1, Laplace(1/epsilon2)")

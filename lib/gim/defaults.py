"""The paper's settings for chapter 04 (Schneider, Lorch, Kilbertus, Schölkopf, Krause, ICML 2025).

Verified from the paper (quoted by a reproducibility summary of its Sec. 5): the synthetic split
sizes -- 40 Hill functions x 4 training doses = 160 perturbational contexts of ``n_k = 50`` cells,
``n_0 = 800`` observational cells, a partially OOD test set of the same 40 Hill functions at 5 new
doses (200 contexts) and a fully OOD set of 20 new Hill functions at the 4 training doses (80
contexts), with the test doses ``c in {0.25, 0.75, 1.25, 1.75, 2.25}`` and ``{0.5, 1, 1.5, 2}``.

Everything else (graph density, weight ranges, Hill parameter ranges, the feature map, network
widths, learning rate, penalties, ``S``) is a **reconstruction**: the paper's body and its code
(``NoraSchneider/gim``) could not be read here. The training doses are inferred to be
``{0.5, 1, 1.5, 2}`` (the fully OOD doses, "the training dosages").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GIMDefaults:
    """Settings of the synthetic Hill benchmark and of the GIM fit.

    Attributes:
        d: variables of the causal system.
        exp_degree: expected degree of the Erdős–Rényi DAG (reconstruction).
        n_train_drugs, n_new_drugs: Hill functions ("drugs") in training / in the fully OOD set.
        doses_train, doses_partial: training doses / the partially OOD doses (verified).
        n_k, n0: cells per perturbational context / observational cells (verified).
        q_latent: dimension of a drug's feature vector ``z`` (reconstruction).
        hidden: width of the two hidden layers of the GIM network (reconstruction).
        n_steps: full-batch Adam steps of a fit; ``lr`` its learning rate (reconstruction).
        S: Monte-Carlo intervention samples per context in the ``"mc"`` objective; ``S_map``: the
            relaxed samples per context of the ``"map"``/``"free"`` objectives (they only smooth
            the Bernoulli relaxation, so fewer suffice).
        lam1: l1 weight on the SCM's adjacency; ``lamI``: sparse-mechanism-shift weight on the
            expected number of targets per context (reconstruction).
        threshold: |W| above which an edge is kept in the read-out graph (NOTEARS' 0.3).
        temperature: Gumbel-sigmoid temperature at the end of the annealing (start: 1).
    """

    d: int = 10
    exp_degree: float = 2.0
    n_train_drugs: int = 40
    n_new_drugs: int = 20
    doses_train: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0)
    doses_partial: tuple[float, ...] = (0.25, 0.75, 1.25, 1.75, 2.25)
    n_k: int = 50
    n0: int = 800
    q_latent: int = 16
    hidden: int = 64
    n_steps: int = 3000
    lr: float = 1e-2
    S: int = 16
    S_map: int = 4
    lam1: float = 0.02
    lamI: float = 10.0
    threshold: float = 0.3
    temperature: float = 0.5


DEFAULTS = GIMDefaults()

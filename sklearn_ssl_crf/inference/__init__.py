"""Inference kernels for linear-chain CRFs, on potentials only (no features, no estimators).

Single-chain functions (`forward_backward`, `viterbi`, `sequence_entropy`, `entropy_gradient`,
`subsequence_entropy`, `additive_expectation`) are for users and tests; the batched
ones (`chain_lattice`, `viterbi_batch`) run over many chains packed in a `ChainLayout` and are
what the estimators use; `chain_statistics` serves stochastic training, one chain at a time
with little overhead per call. Every function takes first-order transitions (S, S) or a
second-order transition tensor (S + 1, S, S), scored as in `second_order`.
"""

from .batching import ChainLayout
from .chain import (
    Workspace,
    chain_lattice,
    chain_statistics,
    forward_backward,
    viterbi,
)
from .covariance import covariance_entropy_gradient
from .decoding import viterbi_batch
from .entropy import (
    additive_expectation,
    entropy_gradient,
    sequence_entropy,
    subsequence_entropy,
)

__all__ = [
    "forward_backward",
    "viterbi",
    "sequence_entropy",
    "entropy_gradient",
    "covariance_entropy_gradient",
    "subsequence_entropy",
    "additive_expectation",
    "chain_lattice",
    "chain_statistics",
    "viterbi_batch",
    "ChainLayout",
    "Workspace",
]

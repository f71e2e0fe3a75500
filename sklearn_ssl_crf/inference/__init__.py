"""Inference kernels for linear-chain CRFs, on potentials only (no features, no estimators).

Single-chain functions (`forward_backward`, `viterbi`) are for users and tests; the batched
ones (`chain_lattice`, `viterbi_batch`) run over many chains packed in a `ChainLayout` and are
what the estimators use.
"""

from .batching import ChainLayout
from .chain import Workspace, chain_lattice, forward_backward, viterbi, viterbi_batch

__all__ = [
    "forward_backward",
    "viterbi",
    "chain_lattice",
    "viterbi_batch",
    "ChainLayout",
    "Workspace",
]

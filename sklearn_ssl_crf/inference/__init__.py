"""Inference kernels for linear-chain CRFs, on potentials only (no features, no estimators).

Single-chain functions (`forward_backward`, `viterbi`) are for users and tests; the batched
ones (`chain_lattice`, `viterbi_batch`) run over equal-length chains grouped by
`LengthBuckets` and are what the estimators use.
"""

from .batching import LengthBuckets
from .chain import chain_lattice, forward_backward, viterbi, viterbi_batch

__all__ = ["forward_backward", "viterbi", "chain_lattice", "viterbi_batch", "LengthBuckets"]

"""Prediction over packed sequences: Viterbi paths and node marginals, in original order."""

from .inference import chain_lattice, viterbi_batch

__all__ = ["decode", "posterior_marginals"]


def decode(packed, unary, transition):
    """Best label index of every token (original token order), shape (n_tokens,)."""
    return packed.unpack(viterbi_batch(unary, transition, packed.layout)[0])


def posterior_marginals(packed, unary, transition):
    """``p(y_t = s | x)`` of every token (original token order), shape (n_tokens, S)."""
    return packed.unpack(chain_lattice(unary, transition, packed.layout).node_marginals())

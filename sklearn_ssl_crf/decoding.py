"""Prediction over packed sequences: Viterbi paths and node marginals, in original order."""

import numpy as np

from .inference import chain_lattice, viterbi_batch

__all__ = ["decode", "posterior_marginals"]


def decode(packed, unary, transition):
    """Best label index of every token (original token order), shape (n_tokens,)."""
    paths = np.empty(packed.n_tokens, dtype=np.int64)
    views = zip(packed.buckets.views(unary), packed.buckets.views(paths))
    for (_, bucket_unary), (_, bucket_paths) in views:
        bucket_paths[...] = viterbi_batch(bucket_unary, transition)[0]
    return packed.unpack(paths)


def posterior_marginals(packed, unary, transition):
    """``p(y_t = s | x)`` of every token (original token order), shape (n_tokens, S)."""
    marginals = np.empty_like(unary)
    views = zip(packed.buckets.views(unary), packed.buckets.views(marginals))
    for (_, bucket_unary), (_, bucket_marginals) in views:
        bucket_marginals[...] = chain_lattice(bucket_unary, transition).node_marginals()
    return packed.unpack(marginals)

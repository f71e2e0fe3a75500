"""Objective terms, each a value and its gradient with respect to the potentials.

Mapping these gradients to weights is `PackedSequences.weight_gradient`, written once.
"""

import numpy as np

from .inference import chain_lattice

__all__ = ["log_likelihood"]


def log_likelihood(packed, unary, transition):
    """Conditional log-likelihood of labelled sequences and its gradient.

    Parameters
    ----------
    packed : PackedSequences
        With labels.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)

    Returns
    -------
    value : float
        ``sum_i log p(y_i | x_i)``.
    d_unary : ndarray of shape (n_tokens, S)
        Observed label indicators minus node marginals.
    d_transition : ndarray of shape (S, S)
        Observed transition counts minus expected ones.
    """
    d_unary = np.empty_like(unary)
    d_transition = packed.transition_counts.astype(np.float64)
    log_z = 0.0
    views = zip(packed.buckets.views(unary), packed.buckets.views(d_unary))
    for (_, bucket_unary), (_, bucket_d_unary) in views:
        lattice = chain_lattice(bucket_unary, transition)
        log_z += lattice.log_z.sum()
        np.negative(lattice.node_marginals(), out=bucket_d_unary)
        d_transition -= lattice.edge_marginal_sum()
    rows = np.arange(packed.n_tokens)
    d_unary[rows, packed.labels] += 1.0
    gold_score = unary[rows, packed.labels].sum() + (packed.transition_counts * transition).sum()
    return gold_score - log_z, d_unary, d_transition

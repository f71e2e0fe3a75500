"""Objective terms, each a value and its gradient with respect to the potentials.

Mapping these gradients to weights is `PackedSequences.weight_gradient`, written once.
"""

import numpy as np

from .inference import chain_lattice

__all__ = ["log_likelihood"]


def log_likelihood(packed, unary, transition, workspace=None):
    """Conditional log-likelihood of labelled sequences and its gradient.

    Parameters
    ----------
    packed : PackedSequences
        With labels.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
    workspace : Workspace, default=None
        Where the lattice keeps its work arrays.

    Returns
    -------
    value : float
        ``sum_i log p(y_i | x_i)``.
    d_unary : ndarray of shape (n_tokens, S)
        Observed label indicators minus node marginals (a work array of ``workspace``,
        overwritten by its next use).
    d_transition : ndarray of shape (S, S)
        Observed transition counts minus expected ones.
    """
    lattice = chain_lattice(unary, transition, packed.layout, workspace)
    d_transition = packed.transition_counts - lattice.edge_marginal_sum()
    d_unary = lattice.node_marginals(overwrite=True)
    np.negative(d_unary, out=d_unary)
    gold = packed.flat_label_index(unary.shape[1])
    d_unary.reshape(-1)[gold] += 1.0
    gold_score = unary.reshape(-1)[gold].sum() + (packed.transition_counts * transition).sum()
    return gold_score - lattice.log_z.sum(), d_unary, d_transition

"""Objective terms, each a value and its gradient with respect to the potentials.

Mapping these gradients to weights is `PackedSequences.weight_gradient`, written once.
"""

import numpy as np

from ..inference import chain_lattice
from ..inference.covariance import covariance_entropy_gradient
from ..inference.entropy import additive_expectation_batch


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
    gold = packed.label_index
    d_unary.reshape(-1)[gold] += 1.0
    gold_score = unary.reshape(-1)[gold].sum() + (packed.transition_counts * transition).sum()
    return gold_score - lattice.log_z.sum(), d_unary, d_transition


def log_partition(packed, unary, transition, workspace=None):
    """Summed log partition function of some sequences and its gradient.

    The gradient of ``log Z`` w.r.t. the potentials is the marginals; with the potentials of
    an auxiliary distribution q they are q's, whose expected features give the unlabelled
    term of the posterior-regularisation M-step, ``E_q[log p] = <E_q[F], theta> - log Z``.

    Returns
    -------
    log_z : float
        ``sum_i log Z(x_i)``.
    node_marginals : ndarray of shape (n_tokens, S)
        A work array of ``workspace``, overwritten by its next use.
    edge_marginal_sum : ndarray of shape (S, S)
    """
    lattice = chain_lattice(unary, transition, packed.layout, workspace)
    edge_marginal_sum = lattice.edge_marginal_sum()
    return float(lattice.log_z.sum()), lattice.node_marginals(overwrite=True), edge_marginal_sum


def unlabelled_terms(packed, unary, transition, workspace=None, entropy_gradient=None):
    """Negative entropy of unlabelled sequences, its gradient, and their label marginals.

    Parameters
    ----------
    packed : PackedSequences
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
    workspace : Workspace, default=None
    entropy_gradient : {None, 'lattice', 'covariance'}, default=None
        How to compute the gradient: the entropy lattices (O(n S^2), Mann & McCallum), Jiao
        et al.'s covariance form (O(n^2 S^3), one sequence at a time), or not at all.

    Returns
    -------
    negative_entropy : float
        ``sum_sequences sum_y p(y|x) log p(y|x)``.
    d_unary : ndarray of shape (n_tokens, S) or None
    d_transition : ndarray of shape (S, S) or None
    label_sums : ndarray of shape (S,)
        Sum over tokens of ``p(y_t = s | x)``.
    """
    lattice = chain_lattice(unary, transition, packed.layout, workspace)
    # H = log Z - E[score]: the score is additive, so its expectation and (for the lattice
    # method) its covariance with the features, the entropy gradient, come from one pass.
    expected_score, d_unary, d_transition = additive_expectation_batch(
        lattice, unary, transition, gradient=entropy_gradient == "lattice")
    label_sums = np.ones(unary.shape[0]) @ lattice.node_marginals(overwrite=True)
    if entropy_gradient == "covariance":
        d_unary, d_transition = _covariance_gradient(unary, transition, packed.layout)
    return float(expected_score.sum() - lattice.log_z.sum()), d_unary, d_transition, label_sums


def label_count_gradient(packed, unary, transition, label_weights, workspace=None):
    """Gradient of ``E[sum_t label_weights[y_t]]`` over the sequences w.r.t. the potentials.

    With ``label_weights = dKL / d(expected label counts)`` this is the gradient of the
    label-proportion term; it costs one pass of the entropy lattices.

    Returns
    -------
    d_unary : ndarray of shape (n_tokens, S)
    d_transition : ndarray of shape (S, S)
    """
    lattice = chain_lattice(unary, transition, packed.layout, workspace)
    terms = np.broadcast_to(label_weights, unary.shape)
    _, d_unary, d_transition = additive_expectation_batch(lattice, terms)
    return d_unary, d_transition


def _covariance_gradient(unary, transition, layout):
    """`covariance_entropy_gradient` of each chain of a layout (the published method: one
    sequence at a time)."""
    d_unary = np.empty_like(unary)
    d_transition = np.zeros_like(transition)
    for slot, length in enumerate(layout.lengths[layout.sequence_order]):
        if length == 0:
            break  # sorted by decreasing length: only empty chains follow
        rows = layout.block_starts[:length] + slot
        chain_unary, chain_transition = covariance_entropy_gradient(unary[rows], transition)
        d_unary[rows] = chain_unary
        d_transition += chain_transition
    return d_unary, d_transition

"""Objectives over packed chunks of sequences, as functions of the weight vector: what the
optimisers minimise. Each chunk term is summed by `ChunkedSequences.sum` (in any number of
processes) and maps its gradient from potentials to weights (`PackedSequences.weight_gradient`).
"""

import numpy as np

from ._penalties import LabelProportionPenalty
from ._potentials import label_count_gradient, log_likelihood, unlabelled_terms


def chunk_log_likelihood(chunk, workspace, state, transition):
    """A chunk's log-likelihood and its gradient w.r.t. the weights."""
    value, d_unary, d_transition = log_likelihood(chunk, chunk.unary(state), transition,
                                                  workspace)
    return value, chunk.weight_gradient(d_unary), d_transition


def chunk_unlabeled_terms(chunk, workspace, state, transition, method):
    """A chunk's negative entropy (summed over its sequences), its gradient w.r.t. the
    weights by ``method`` (None: no gradient), and its label sums."""
    unary = chunk.unary(state)
    negative_entropy, d_unary, d_transition, label_sums = unlabelled_terms(
        chunk, unary, transition, workspace, method)
    d_state = 0.0 if d_unary is None else chunk.weight_gradient(d_unary)
    return negative_entropy, d_state, 0.0 if d_transition is None else d_transition, label_sums


def chunk_label_count_gradient(chunk, workspace, state, transition, label_weights):
    """The gradient w.r.t. the weights of ``sum_t label_weights @ mu_t`` over a chunk's
    tokens' marginals."""
    d_unary, d_transition = label_count_gradient(chunk, chunk.unary(state), transition,
                                                 label_weights, workspace)
    return chunk.weight_gradient(d_unary), d_transition


def l2_penalty(theta, c2):
    """``sum c2 * theta^2``, ``c2`` a float or one strength per parameter."""
    return float(theta @ (c2 * theta)) if np.ndim(c2) else c2 * float(theta @ theta)


def penalised_negative_log_likelihood(data, layout, c2):
    """``theta -> (value, gradient)`` of ``-log-likelihood + sum c2 * theta^2`` over the
    chunks of ``data`` (a `ChunkedSequences`); ``c2`` is a float or one strength per
    parameter."""

    def objective(theta):
        state, transition = layout.unpack(theta)
        value, d_state, d_transition = data.sum(chunk_log_likelihood, state, transition)
        gradient = layout.pack(d_state, d_transition)
        # In place: on a million weights every temporary array counts.
        np.negative(gradient, out=gradient)
        gradient += 2.0 * c2 * theta
        return -value + l2_penalty(theta, c2), gradient

    return objective


def add_unlabeled_terms(sum_chunks, add_gradient, state, transition, gamma, weight,
                         proportions, entropy_gradient="lattice"):
    """Adds the gradient of the unlabelled sequences' terms

        -gamma * H(unlabelled) + weight * proportion penalty

    to a gradient, and returns ``(negative entropy, penalty)``.

    ``sum_chunks(term, state, transition, *args)`` sums a chunk term (`chunk_unlabeled_terms`,
    `chunk_label_count_gradient`) over the unlabelled sequences; ``add_gradient(scale, d_state,
    d_transition)`` adds ``scale`` times a gradient w.r.t. ``state``, ``transition`` to the
    caller's gradient; ``proportions(label_sums)`` gives the penalty and its gradient w.r.t. a
    token's marginals, both of shape (1, n_labels), from the unlabelled tokens' summed
    marginals, shape (1, n_labels) (a `LabelProportionPenalty`'s ``value_and_gradient`` for
    L-BFGS; for stochastic steps, one that keeps a running estimate). The entropy's gradient is
    computed only when ``gamma > 0``, the penalty's only when ``weight > 0``.
    """
    negative_entropy, d_state, d_transition, label_sums = sum_chunks(
        chunk_unlabeled_terms, state, transition, entropy_gradient if gamma > 0 else None)
    if gamma > 0:
        add_gradient(-gamma, d_state, d_transition)
    penalty, label_weights = proportions(label_sums[None, :])
    # An infinite penalty (a label's share underflowed) rejects the point: no gradient.
    if weight > 0 and np.isfinite(penalty):
        d_state, d_transition = sum_chunks(chunk_label_count_gradient, state, transition,
                                           label_weights[0])
        add_gradient(weight, d_state, d_transition)
    return negative_entropy, penalty


def entropy_regularised_objective(labelled, unlabeled, layout, c2, target, gamma, weight,
                                  entropy_gradient="lattice"):
    """``theta -> (value, gradient)`` of minus the entropy-regularised objective

        log-likelihood(labelled) - sum c2 theta^2 - gamma * H(unlabelled)
            - weight * N_u * KL(target || mean marginal of the unlabelled tokens)

    and a dict holding the parts of the last evaluation (``likelihood``, ``objective``,
    ``unlabelled_entropy``, ``proportion_kl``). ``labelled`` and ``unlabelled`` are
    `ChunkedSequences`; ``entropy_gradient`` names the entropy gradient's algorithm."""
    supervised = penalised_negative_log_likelihood(labelled, layout, c2)
    n_unlabeled = sum(chunk.n_tokens for chunk in unlabeled.chunks)
    # N_u KL(pi || pi_hat) and its gradient w.r.t. each token's label marginals.
    proportions = LabelProportionPenalty(target, n_unlabeled).value_and_gradient
    parts = {}

    def objective(theta):
        value, gradient = supervised(theta)
        parts["likelihood"] = float(-(value - l2_penalty(theta, c2)))

        def add_gradient(scale, d_state, d_transition):
            np.add(gradient, scale * layout.pack(d_state, d_transition), out=gradient)

        state, transition = layout.unpack(theta)
        negative_entropy, penalty = add_unlabeled_terms(
            unlabeled.sum, add_gradient, state, transition, gamma, weight, proportions,
            entropy_gradient)
        if gamma > 0:
            value -= gamma * negative_entropy
        if weight > 0:
            value += weight * penalty
        parts.update(objective=float(-value), unlabelled_entropy=float(-negative_entropy),
                     proportion_kl=penalty / n_unlabeled)
        return value, gradient

    return objective, parts

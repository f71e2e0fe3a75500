"""Entropies of linear chains and their gradients in O(n S^2), after Mann & McCallum (2007).

Mann & McCallum's entropy lattices H^alpha and H^beta (their §4) are conditional expectations
of ``log p(y)``, an *additive* function of the labels, given one label. This module writes
those recursions once for any additive function

    g(y) = sum_t a[t, y_t] + sum_{t>=1} b[y_{t-1}, y_t],

giving ``E[g]`` and its gradient with respect to the potentials, ``Cov(g, F)`` with ``F`` the
indicator features of the potentials (`additive_expectation`). The entropy gradient is the case
``g = score`` (``log p = score - log Z``, and the constant does not change a covariance); the
gradient of expected label counts (label proportions) is ``a[t, s] = c_s``, ``b = 0``.

Forward, ``A_t(s) = E[sum of the terms up to t | y_t = s]``; backward,
``B_t(s) = E[sum of the terms after t | y_t = s]``. A chain CRF's posterior is a Markov chain,
so ``p(y_{t-1} | y_t, x)`` and ``p(y_{t+1} | y_t, x)`` carry the recursions, and
``E[g | y_t = s] = A_t(s) + B_t(s)``. The same Markov property gives the entropy of any span
of labels from per-position conditional entropies, ``H(Y_a..b) = H(Y_a) +
sum_{a<t<=b} H(Y_t | Y_{t-1})``, in constant time per span with prefix sums (their §4-5).
"""

import numpy as np
from scipy.special import xlogy

from .batching import ChainLayout
from .chain import LogSpaceLattice, ScaledLattice, chain_lattice, check_potentials
from .second_order import pair_additive_expectation, pair_position_entropies

__all__ = [
    "sequence_entropy",
    "entropy_gradient",
    "subsequence_entropy",
    "additive_expectation",
    "additive_expectation_batch",
    "entropy_batch",
    "position_entropies",
]


def sequence_entropy(unary, transition):
    """Entropy ``H(Y | x)`` of a chain's label sequence, in nats.

    By the Markov property of the chain's posterior, the sum of the entropy of the first
    label and the conditional entropies ``H(Y_t | Y_{t-1})``, in O(n S^2) (Mann & McCallum
    2007).

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S) or (S + 1, S, S)
        Transition potentials, as in `forward_backward`.

    Returns
    -------
    entropy : float
        The entropy of the distribution ``p(y | x)`` over label sequences.

    See Also
    --------
    subsequence_entropy : The joint entropy of a span of labels.
    entropy_gradient : The gradient of the negative entropy.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(sequence_entropy(np.zeros((3, 2)), np.zeros((2, 2))), 3 * np.log(2)))
    True
    """
    unary, transition = check_potentials(unary, transition)
    layout = ChainLayout([unary.shape[0]])
    _, _, conditional = position_entropies(chain_lattice(unary, transition, layout))
    return float(conditional.sum())


def entropy_gradient(unary, transition):
    """Gradient of ``sum_y p(y|x) log p(y|x)`` (the negative entropy) w.r.t. the potentials.

    Computed with the entropy lattices in O(n S^2) (Mann & McCallum 2007, §3-4); it equals
    Jiao et al.'s covariance form `covariance_entropy_gradient`.

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S) or (S + 1, S, S)
        Transition potentials, as in `forward_backward`.

    Returns
    -------
    d_unary : ndarray of shape (n, S)
        Derivative with respect to ``unary[t, s]``.
    d_transition : ndarray of shape (S, S) or (S + 1, S, S), as ``transition``
        Derivative with respect to each transition potential.

    See Also
    --------
    covariance_entropy_gradient : The same gradient in Jiao et al.'s covariance form.
    sequence_entropy : The entropy itself.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import covariance_entropy_gradient, entropy_gradient
    >>> unary = np.array([[0.5, 0.0], [0.0, 1.0], [0.2, 0.0]])
    >>> transition = np.array([[0.3, -0.2], [0.0, 0.1]])
    >>> d_unary, d_transition = entropy_gradient(unary, transition)
    >>> c_unary, c_transition = covariance_entropy_gradient(unary, transition)
    >>> np.allclose(d_unary, c_unary), np.allclose(d_transition, c_transition)
    (True, True)
    """
    unary, transition = check_potentials(unary, transition)
    _, d_unary, d_transition = entropy_batch(unary, transition, ChainLayout([unary.shape[0]]))
    return d_unary, d_transition


def subsequence_entropy(unary, transition, start, stop):
    """Joint entropy ``H(Y_start, ..., Y_{stop-1} | x)`` of a span of labels, in nats.

    By the Markov property of the chain's posterior, ``H(Y_a..b) = H(Y_a) +
    sum_{a<t<=b} H(Y_t | Y_{t-1})`` (Mann & McCallum 2007, §4-5).

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S) or (S + 1, S, S)
        Transition potentials, as in `forward_backward`.
    start, stop : int
        The span, ``0 <= start < stop <= n``.

    Returns
    -------
    entropy : float
        The joint entropy of the labels of positions ``start`` to ``stop - 1``.

    See Also
    --------
    sequence_entropy : The entropy of the whole label sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import subsequence_entropy
    >>> entropy = subsequence_entropy(np.zeros((3, 2)), np.zeros((2, 2)), 1, 3)
    >>> bool(np.isclose(entropy, 2 * np.log(2)))
    True
    """
    unary, transition = check_potentials(unary, transition)
    n = unary.shape[0]
    if not 0 <= start < stop <= n:
        raise ValueError(f"need 0 <= start < stop <= {n}, got start={start}, stop={stop}")
    node, pair_conditional, conditional = position_entropies(
        chain_lattice(unary, transition, ChainLayout([n])))
    # One chain: packed row t is position t.
    return float(node[start] + pair_conditional[start + 1:min(start + 2, stop)].sum()
                 + conditional[start + 2:stop].sum())


def additive_expectation(unary, transition, unary_terms=None, transition_terms=None):
    """Expectation of an additive function of the labels and its gradient.

    For ``g(y) = sum_t unary_terms[t, y_t] + sum_{t>=1} transition_terms[y_{t-1}, y_t]``,
    returns ``E_p[g]`` and its derivative with respect to the potentials with ``g`` held
    fixed, ``Cov_p(g, F)``.

    Parameters
    ----------
    unary, transition : array-like of shapes (n, S) and (S, S) or (S + 1, S, S)
        The chain's potentials.
    unary_terms : array-like of shape (n, S), default=None
        The per-position terms of ``g``; None: zero.
    transition_terms : array-like of shape (S, S) or (S + 1, S, S), as ``transition``, default=None
        The transition terms of ``g``; None: zero.

    Returns
    -------
    expectation : float
        ``E_p[g]``.
    d_unary : ndarray of shape (n, S)
        Derivative of ``E_p[g]`` with respect to ``unary[t, s]``.
    d_transition : ndarray of shape (S, S) or (S + 1, S, S), as ``transition``
        Derivative of ``E_p[g]`` with respect to each transition potential.

    See Also
    --------
    entropy_gradient : The case ``g = score``.

    Examples
    --------
    The expected number of tokens labelled 0 in a uniform chain of 3 tokens:

    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import additive_expectation
    >>> expectation, d_unary, d_transition = additive_expectation(
    ...     np.zeros((3, 2)), np.zeros((2, 2)), unary_terms=[[1.0, 0.0]] * 3)
    >>> expectation, d_unary[0].tolist()
    (1.5, [0.25, -0.25])
    """
    unary, transition = check_potentials(unary, transition)
    layout = ChainLayout([unary.shape[0]])
    expectation, d_unary, d_transition = additive_expectation_batch(
        chain_lattice(unary, transition, layout),
        None if unary_terms is None else np.asarray(unary_terms, dtype=np.float64),
        None if transition_terms is None else np.asarray(transition_terms, dtype=np.float64),
    )
    return float(expectation[0]), d_unary, d_transition


def entropy_batch(unary, transition, layout, workspace=None):
    """Entropies of all chains of a layout and the gradient of their negative sum.

    Parameters
    ----------
    unary : ndarray of shape (layout.n_rows, S)
    transition : ndarray of shape (S, S) or (S + 1, S, S)
    layout : ChainLayout
    workspace : Workspace, default=None

    Returns
    -------
    entropies : ndarray of shape (n_sequences,)
        ``H(Y | x)`` of each sequence, input order.
    d_unary : ndarray of shape (n_rows, S)
        Gradient of ``sum_sequences sum_y p log p`` w.r.t. the unary potentials.
    d_transition : ndarray of shape (S, S) or (S + 1, S, S), as ``transition``
    """
    lattice = chain_lattice(unary, transition, layout, workspace)
    # H = log Z - E[score]; the gradient is the score's covariance with the features.
    expected_score, d_unary, d_transition = additive_expectation_batch(lattice, unary,
                                                                       transition)
    return lattice.log_z - expected_score, d_unary, d_transition


def position_entropies(lattice):
    """Per-row entropies from a lattice.

    Returns
    -------
    node : ndarray of shape (n_rows,)
        ``H(Y_t | x)`` of every row.
    pair_conditional : ndarray of shape (n_rows,)
        ``H(Y_t | Y_{t-1}, x)`` for rows at positions ``t >= 1``, ``H(Y_0 | x)`` at ``t = 0``.
    conditional : ndarray of shape (n_rows,)
        The chain rule's terms ``H(Y_t | Y_{t-1}, ..., Y_0, x)``: ``pair_conditional`` for a
        first-order chain, ``H(Y_t | Y_{t-1}, Y_{t-2}, x)`` from ``t = 2`` for a second-order
        one. A chain's entropy is the sum of its rows; a span's is ``node`` at its first row,
        ``pair_conditional`` at its second and ``conditional`` over the rest.
    """
    if not isinstance(lattice, (ScaledLattice, LogSpaceLattice)):
        return pair_position_entropies(lattice)
    node, conditional = _first_order_position_entropies(lattice)
    return node, conditional, conditional


def _first_order_position_entropies(lattice):
    if isinstance(lattice, ScaledLattice):
        return _scaled_position_entropies(lattice)
    layout = lattice.layout
    node_marginals = lattice.node_marginals()
    node = -_xlogx(node_marginals).sum(axis=1)
    conditional = node.copy()
    for t in range(1, layout.max_length):
        # H(Y_t | Y_{t-1}) = H(Y_{t-1}, Y_t) - H(Y_{t-1})
        joint = -_xlogx(lattice.edge_block(t)).sum(axis=(1, 2))
        conditional[layout.block(t)] = joint - node[layout.block(t - 1, layout.batch_sizes[t])]
    return node, conditional


def _scaled_position_entropies(lattice):
    """`position_entropies` from a `ScaledLattice`'s factors, for all rows at once.

    ``p(y_t = j | y_{t-1} = i) = E(i, j) weighted_t(j) / beta_{t-1}(i)``, so
    ``H(Y_t | Y_{t-1}) = -sum_ij p(i, j) log E(i, j) - sum_j p_t(j) log weighted_t(j)
    + sum_i p_{t-1}(i) log beta_{t-1}(i)``, and the first sum is
    ``alpha_{t-1} . (weighted_t @ (E log E).T)``: no edge tensors, no loop over positions.
    """
    layout, beta = lattice.layout, lattice.beta
    later = layout.later_rows
    ones = np.ones(beta.shape[1])
    marginals = lattice.node_marginals()
    node = -_xlogx(marginals) @ ones
    conditional = node.copy()
    weighted = lattice.weighted[later]
    previous_marginals = np.take(marginals, layout.previous_rows, axis=0)
    transition_part = (lattice.previous_alpha
                       * (weighted @ _xlogx(lattice.exp_transition).T))
    terms = (xlogy(previous_marginals, np.take(beta, layout.previous_rows, axis=0))
             - xlogy(marginals[later], weighted) - transition_part)
    # A conditional entropy is non-negative; rounding of the three sums can dip below 0.
    conditional[later] = np.maximum(terms @ ones, 0.0)
    return node, conditional


def additive_expectation_batch(lattice, unary_terms=None, transition_terms=None,
                               gradient=True):
    """`additive_expectation` for all chains of a lattice.

    Parameters
    ----------
    lattice : ScaledLattice or LogSpaceLattice
    unary_terms : ndarray of shape (n_rows, S), default=None
    transition_terms : ndarray of shape (S, S) or (S + 1, S, S), default=None
        Of the lattice's transition shape.
    gradient : bool, default=True
        False: only the expectations (the forward pass); the gradients are None.

    Returns
    -------
    expectation : ndarray of shape (n_sequences,)
    d_unary : ndarray of shape (n_rows, S) or None
        With a `ScaledLattice`, a work array of its workspace, overwritten by the next use.
    d_transition : ndarray of shape (S, S) or (S + 1, S, S), as ``transition`` or None
    """
    if not isinstance(lattice, (ScaledLattice, LogSpaceLattice)):
        return pair_additive_expectation(lattice, unary_terms, transition_terms, gradient)
    if isinstance(lattice, ScaledLattice):
        return _scaled_additive_expectation(lattice, unary_terms, transition_terms, gradient)
    return _conditional_additive_expectation(lattice, unary_terms, transition_terms, gradient)


def _scaled_additive_expectation(lattice, a, b, gradient):
    """The entropy-lattice recursions on a `ScaledLattice`'s own factors, without forming
    conditional or edge tensors.

    With ``A_t(s) = E[terms up to t | y_t = s]`` and ``B_t(s) = E[terms after t | y_t = s]``,
    the recursions carry ``G = alpha * A`` and ``Z = beta * (B - E[g])``: both are linear in
    the previous position, like forward-backward, so the conditionals' normalisers cancel and
    nothing is divided. Per position, each pass costs one (batch, S) x (S, S) product.
    """
    layout, workspace = lattice.layout, lattice.workspace
    alpha, beta, scaled_emission = lattice.alpha, lattice.beta, lattice.scaled_emission
    exp_transition = lattice.exp_transition
    n_labels = alpha.shape[1]
    later, last_rows = layout.later_rows, layout.last_rows
    alpha_previous = lattice.previous_alpha

    # Forward: G_t = alpha_t * a_t + scaled_emission_t * (G_{t-1} @ E + alpha_{t-1} @ (E * b)).
    forward = workspace.array("additive_forward", alpha.shape)
    if a is None:
        forward[...] = 0.0
    else:
        np.multiply(alpha, a, out=forward)
    if b is not None:
        forward[later] += scaled_emission[later] * (alpha_previous @ (exp_transition * b))
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows = layout.block(t)
        carried = forward[layout.block(t - 1, size)] @ exp_transition
        carried *= scaled_emission[rows]
        forward[rows] += carried

    # E[g] of a chain: sum_s p(y_t = s) A_t(s) at its last position, where beta = 1.
    slot_expectation = forward[last_rows] @ np.ones(n_labels)
    expectation = layout.by_sequence(slot_expectation)
    if not gradient:
        return expectation, None, None

    # Backward: Z_{t-1} = ahead_t @ E.T + weighted_t @ (E * b).T, where
    # ahead_t = scaled_emission_t * (beta_t * a_t + Z_t), and Z = -E[g] at a chain's end.
    weighted = lattice.weighted
    backward = workspace.array("additive_backward", alpha.shape)
    ahead = workspace.array("additive_ahead", alpha.shape)
    if a is None:
        ahead[...] = 0.0
    else:
        first = layout.block(0)
        np.multiply(weighted[later], a[later], out=ahead[later])
        np.multiply(beta[first] * scaled_emission[first], a[first], out=ahead[first])
    backward[last_rows] = -slot_expectation[:, None]
    ahead[last_rows] -= scaled_emission[last_rows] * slot_expectation[:, None]
    if b is not None:
        transition_terms = weighted[later] @ (exp_transition * b).T
    carried = np.empty((layout.batch_sizes[1] if layout.max_length > 1 else 0, n_labels))
    for t in range(layout.max_length - 1, 0, -1):
        rows = layout.block(t)
        continuing = layout.block(t - 1, layout.batch_sizes[t])
        np.matmul(ahead[rows], exp_transition.T, out=backward[continuing])
        if b is not None:
            backward[continuing] += transition_terms[rows.start - later.start:
                                                     rows.stop - later.start]
        step = np.multiply(backward[continuing], scaled_emission[continuing],
                           out=carried[:rows.stop - rows.start])
        ahead[continuing] += step

    # p_t(s) (A_t + B_t - E[g]) = beta * G + alpha * Z
    d_unary = workspace.array("additive_gradient", alpha.shape)
    np.multiply(beta, forward, out=d_unary)
    backward *= alpha
    d_unary += backward
    # sum_t p(y_{t-1} = i, y_t = j) (A_{t-1}(i) + b(i, j) + a_t(j) + B_t(j) - E[g])
    # np.take is several times faster than fancy indexing for gathering rows.
    forward_previous = np.take(forward, layout.previous_rows, axis=0)
    d_transition = exp_transition * (forward_previous.T @ weighted[later]
                                     + alpha_previous.T @ ahead[later])
    if b is not None:
        d_transition += b * lattice.edge_marginal_sum()
    return expectation, d_unary, d_transition


def _conditional_additive_expectation(lattice, unary_terms, transition_terms, gradient):
    """The entropy-lattice recursions through the conditionals ``p(y_{t-1} | y_t)`` and
    ``p(y_t | y_{t-1})``, from edge and node marginals: any lattice, including log space."""
    layout = lattice.layout
    node = lattice.node_marginals()
    n_rows, n_labels = node.shape
    a = np.zeros((n_rows, n_labels)) if unary_terms is None else unary_terms
    b = transition_terms
    forward = np.empty((n_rows, n_labels))
    backward = np.empty((n_rows, n_labels))
    forward[layout.block(0)] = a[layout.block(0)]
    for t in range(1, layout.max_length):
        rows = layout.block(t)
        previous = layout.block(t - 1, layout.batch_sizes[t])
        # p(y_{t-1} = i | y_t = s): the edge marginal over the node marginal of y_t.
        given_current = _conditional(lattice.edge_block(t), node[rows][:, None, :])
        carried = forward[previous][:, :, None]
        if b is not None:
            carried = carried + b
        forward[rows] = a[rows] + (given_current * carried).sum(axis=1)

    # E[g] of a chain is sum_s p(y_t = s) A_t(s) at its last position (nothing follows), so it
    # is known now, and the backward pass can accumulate the transition gradient as it goes.
    last_rows = layout.last_rows
    slot_expectation = np.einsum("ns,ns->n", node[last_rows], forward[last_rows])
    expectation = layout.by_sequence(slot_expectation)
    if not gradient:
        return expectation, None, None
    row_expectation = slot_expectation[layout.row_slots]

    d_transition = np.zeros((n_labels, n_labels))
    last = layout.max_length - 1
    backward[layout.block(last)] = 0.0
    for t in range(last, 0, -1):
        rows = layout.block(t)
        previous = layout.block(t - 1, layout.batch_sizes[t])
        edges = lattice.edge_block(t)
        ahead = a[rows] + backward[rows]
        # E[g | y_{t-1}=i, y_t=j] - E[g] = A_{t-1}(i) + b(i, j) + a_t(j) + B_t(j) - E[g]
        d_transition += np.einsum("nij,ni->ij", edges,
                                  forward[previous] - row_expectation[rows][:, None])
        d_transition += np.einsum("nij,nj->ij", edges, ahead)
        if b is not None:
            d_transition += b * edges.sum(axis=0)
        # p(y_t = j | y_{t-1} = i): the edge marginal over the node marginal of y_{t-1}.
        given_previous = _conditional(edges, node[previous][:, :, None])
        ahead = ahead[:, None, :] if b is None else ahead[:, None, :] + b
        backward[previous] = (given_previous * ahead).sum(axis=2)
        backward[previous.stop:layout.block(t - 1).stop] = 0.0

    d_unary = node * (forward + backward - row_expectation[:, None])
    return expectation, d_unary, d_transition


def _conditional(joint, marginal):
    """``joint / marginal``, 0 where the marginal is 0 (the joint is 0 there too)."""
    return np.divide(joint, marginal, out=np.zeros_like(joint), where=marginal > 0)


def _xlogx(p):
    """``p * log(p)`` with ``0 log 0 = 0``."""
    return p * np.log(np.where(p > 0, p, 1.0))

"""Gradient of the negative entropy of a linear chain in Jiao et al.'s covariance form.

Jiao, Wang, Lee, Greiner & Schuurmans (2006), "Semi-supervised conditional random fields for
improved sequence segmentation and labeling", §3 and Appendix A. This module implements

* the entropy term of eq. (3), proved as eq. (5) in Appendix A: the gradient of
  ``sum_y p(y|x) log p(y|x)`` is ``cov_p[f] theta``;
* eq. (4), each covariance entry as ``E[f_j f_k] - E[f_j] E[f_k]``;
* the three "quadratic feature expectations" of §3 (edge-edge, edge-vertex, vertex-vertex),
  built from the summary matrices ``M_{s+1,t-1} = prod_l M_l`` by the nested dynamic program
  whose cost §4 gives as O(n^2 s^3) per sequence.

The "features" are the potentials themselves: one per (position, label) with weight
``unary[t, s]`` and one per label pair with weight ``transition[i, j]``, summed over edges.
Jiao et al.'s start and stop states are absent, which is the same as giving their transitions
potential 0. As in §4, the covariance matrix is never stored: only its product with theta
is accumulated, pair of positions by pair of positions.

The summary matrices are used divided by the backward vectors, ``M_{s+1,t}(u, v) beta_t(v) /
beta_s(u) = p(y_t = v | y_s = u, x)``: products of row-stochastic matrices, which neither
overflow nor underflow where the raw products of ``exp`` potentials would.

Notes on the paper's text (§3, as transcribed in ``shared/papers``):

* Eq. (4) writes the left-hand side as ``cov[f_j f_k]``; it is ``cov[f_j, f_k]``.
* The diagonal is announced as "j = l", an index used nowhere else (it means j = k).
* "Since each feature is an indicator, f_j^2 = f_j, so the diagonal terms are linear
  expectations" holds only for a feature that can fire at one position. The features of
  eq. (3) are sums over positions, so ``f_j^2`` also has the cross terms of two distinct
  positions, which need the same pairwise recursion as the off-diagonal entries (done here).
* The recursions omit the terms where two different features fire at the same position:
  null for the paper's one-label indicator features, not for arbitrary overlapping features.
* Edge-edge expectation: ``beta_t(y''', y'' | x)`` has two label arguments (it is
  ``beta_t(y''' | x)``). In the t < s term the labels in the product do not match those given
  to f_j and f_k; it should read ``alpha_{t-1}(y') M_t(y', y) M_{t+1,s-1}(y, y'')
  M_s(y'', y''') beta_s(y''')``.
* Edge-vertex expectation: ``M_{s+1,t-1}`` should be ``M_{s+1,t}`` (the factor ``M_t``
  carries the vertex potential at t), the identity when ``s = t``, where the text's product
  is undefined. The second term writes the edge before the vertex again (``f_j(e_t)``,
  ``g_k(v_s)``, t < s: the first term's case) while its product describes vertex t before
  edge s; that product should start from ``alpha_t``, not ``alpha_{t-1}``, and end with
  ``beta_s``, not ``beta_t``.
* Vertex-vertex expectation: ``alpha_s(y') M_{s+1,t}(y', y) beta_t(y)`` is written
  ``alpha_{s-1}(y') M_{s+1,t-1}(y', y) beta_t(y)``, and likewise in the t < s term, which also
  ends with ``beta_t`` instead of ``beta_s``, sums over ``y'`` twice, and swaps the two labels
  between the indicators and the product.
"""

import numpy as np

from .chain import check_potentials, forward_backward

__all__ = ["covariance_entropy_gradient"]


def covariance_entropy_gradient(unary, transition):
    """Gradient of the negative entropy of one chain, as a feature covariance times theta.

    Computes ``d/dtheta sum_y p(y|x) log p(y|x)`` (in nats) with respect to every potential,
    in the form of Jiao et al. (2006), §3, eqs. (3)-(5): the derivative with respect to the
    weight of feature ``F_k`` is ``sum_j theta_j Cov_p(F_k, F_j) = Cov_p(F_k, score(y))``.
    Here the features are the potentials' indicators: ``F_(t,s)(y) = 1[y_t = s]`` with weight
    ``unary[t, s]`` and ``F_(i,j)(y) = sum_{t>=1} 1[y_{t-1} = i, y_t = j]`` with weight
    ``transition[i, j]``. The covariance form says that raising a weight lowers the entropy
    exactly when its feature is positively correlated, under the model, with the score of
    the whole sequence, i.e. with ``log p(y|x)``.

    The expectations of products ``E[F_k F_j]`` need the joint marginals of every pair of
    positions, obtained with the nested dynamic program of §3: for each lag ``b - a`` the
    summary matrices ``M_{a+1} ... M_b`` of all first positions ``a`` are extended by one
    factor. Their product with theta is accumulated pair by pair, so that the covariance
    matrix itself is never formed (§4).

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S)
        ``transition[i, j]`` is the potential of label ``i`` followed by label ``j``.

    Returns
    -------
    d_unary : ndarray of shape (n, S)
        Derivative with respect to ``unary[t, s]``: ``Cov_p(1[y_t = s], score(y))``.
    d_transition : ndarray of shape (S, S)
        Derivative with respect to ``transition[i, j]`` (all zeros when ``n == 1``).

    See Also
    --------
    entropy_gradient : The same gradient in O(n S^2), with the entropy lattices.

    Notes
    -----
    Cost O(n^2 S^3) time per sequence (§4: the supervised O(n S^2) times an extra ``n S``
    for the nested loop) and O(n S^2) memory. Probability space is used throughout, with the
    marginals of `forward_backward`, so the result is exact and finite for any potentials
    that `forward_backward` handles.

    References
    ----------
    F. Jiao, S. Wang, C.-H. Lee, R. Greiner and D. Schuurmans (2006). Semi-supervised
    conditional random fields for improved sequence segmentation and labeling. ACL, 209-216.

    Examples
    --------
    >>> import numpy as np
    >>> d_unary, d_transition = covariance_entropy_gradient(np.array([[1.0, 0.0]]),
    ...                                                     np.zeros((2, 2)))
    >>> p = np.exp(1.0) / (1 + np.exp(1.0))  # p(y = 0); Cov(1[y = 0], score) = p (1 - p)
    >>> bool(np.isclose(d_unary[0, 0], p * (1 - p) * 1.0)), d_transition.tolist()
    (True, [[0.0, 0.0], [0.0, 0.0]])
    """
    unary, transition = check_potentials(unary, transition)
    _, node, edge = forward_backward(unary, transition)
    n = unary.shape[0]

    # The covariance is unchanged by adding a constant to one position's unary row or to the
    # whole transition matrix (the matching feature sums are constant), so the potentials
    # are centred on their expectations: E[score] becomes 0 and the second moments below
    # stay small, instead of growing with n and cancelling against E[F] E[score].
    unary = unary - np.einsum("ts,ts->t", node, unary)[:, None]
    if n > 1:
        transition = transition - np.einsum("tij,ij->", edge, transition) / (n - 1)

    # conditional[t - 1] = p(y_t = j | y_{t-1} = i, x), the summary matrix M_t divided by the
    # backward vectors (see the module docstring). Labels of zero probability have zero edge
    # mass too; their rows are never weighted by anything but zero, so they are left at 0.
    previous = node[:-1, :, None]
    conditional = np.divide(edge, previous, out=np.zeros_like(edge), where=previous > 0)
    # Pieces of the edge features' weight seen from either end of an edge:
    # edge_ahead[t - 1, i] = E[transition[i, y_t] | y_{t-1} = i] and
    # edge_behind[t - 1, j] = sum_i p(y_{t-1} = i, y_t = j) transition[i, j].
    edge_ahead = np.einsum("tij,ij->ti", conditional, transition)
    edge_behind = np.einsum("tij,ij->tj", edge, transition)
    weighted_node = node * unary

    # Pairs of occurrences at the same position (lag 0): a feature with itself, and the
    # vertex b with the edge (b - 1, b) into it. The edge with the vertex b - 1 before it is
    # the lag-1 "vertex then edge" case below.
    d_unary = weighted_node.copy()
    d_unary[1:] += edge_behind
    d_transition = np.einsum("tij,ij->ij", edge, transition)
    d_transition += np.einsum("tij,tj->ij", edge, unary[1:])

    # summary[a] = p(y_{a+d} | y_a, x) for a = 0 .. n-1-d: the product of d conditional
    # matrices, extended by one factor per lag d (the nested dynamic program). It starts as
    # the identity (d = 0).
    summary = np.broadcast_to(np.eye(unary.shape[1]), (n,) + transition.shape)
    for lag in range(1, n):
        last = n - lag  # number of position pairs (a, a + lag)
        shorter = summary[:last]  # lag - 1: from a up to the vertex before edge a + lag
        # Vertex a, then edge (a + lag - 1, a + lag).
        ahead = (shorter @ edge_ahead[lag - 1:, :, None])[:, :, 0]
        d_unary[:last] += node[:last] * ahead
        reach = (weighted_node[:last, None, :] @ shorter)[:, 0]
        d_transition += np.einsum("ai,aij->ij", reach, conditional[lag - 1:])
        # Edge (a - 1, a), then edge (a + lag - 1, a + lag), for a >= 1.
        ahead = (shorter[1:] @ edge_ahead[lag:, :, None])[:, :, 0]
        d_transition += np.einsum("aij,aj->ij", edge[:last - 1], ahead)
        reach = (edge_behind[:last - 1, None, :] @ shorter[1:])[:, 0]
        d_transition += np.einsum("ak,akl->kl", reach, conditional[lag:])

        summary = shorter @ conditional[lag - 1:]
        # Vertex a, then vertex a + lag.
        joint = node[:last, :, None] * summary
        d_unary[:last] += (joint @ unary[lag:, :, None])[:, :, 0]
        d_unary[lag:] += (unary[:last, None, :] @ joint)[:, 0]
        # Edge (a - 1, a), then vertex a + lag, for a >= 1.
        ahead = (summary[1:] @ unary[lag + 1:, :, None])[:, :, 0]
        d_transition += np.einsum("aij,aj->ij", edge[:last - 1], ahead)
        d_unary[lag + 1:] += (edge_behind[:last - 1, None, :] @ summary[1:])[:, 0]

    # Cov = E[F score] - E[F] E[score] (eq. 4). E[score] is 0 only up to rounding after the
    # centring, and that residual times E[F] (up to n - 1 for edges) would otherwise be the
    # largest error left.
    expected_score = weighted_node.sum() + np.einsum("tij,ij->", edge, transition)
    d_unary -= node * expected_score
    d_transition -= edge.sum(axis=0) * expected_score
    return d_unary, d_transition

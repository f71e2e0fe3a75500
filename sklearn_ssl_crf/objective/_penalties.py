"""Convex differentiable penalties on the node marginals of unlabelled tokens.

A penalty here is a function of the token node marginals ``mu`` (tokens x labels) through
their sums over groups of tokens, ``M[g] = sum of mu[t] over the tokens t of group g``
(tokens of group -1 do not count). Its gradient with respect to a token's marginals is then
the gradient with respect to its group's sum, one (groups x labels) table. That is all
training needs: group sums add up over chunks of sequences (so they are computed chunk by
chunk, in any number of processes), and the posterior-regularisation E-step moves each
token's factors by its group's row (He et al. 2013, eq. 20).

Two penalties are defined: `GraphLaplacianPenalty` (groups are graph vertices, those with
a token or a seed) and `LabelProportionPenalty` (one group: every token), whose target is
`target_proportions`.
"""

import numpy as np
import scipy.sparse as sp

from ..potentials import group_indicator
from ..utils import row_blocks

# Rows of a (groups x labels) table worked on at a time where a whole temporary copy of
# it would be gigabytes.
_BLOCK_ROWS = 1 << 16


class MarginalPenalty:
    """Base class: a convex differentiable function of grouped token node marginals.

    Subclasses set ``token_groups`` (the group of every token, -1 for none) and
    ``n_groups``, and define `value_and_gradient` on group sums.

    See Also
    --------
    GraphLaplacianPenalty : Groups are graph vertices.
    LabelProportionPenalty : One group: every token.

    Examples
    --------
    A penalty on the squares of the group sums, with the first two of three tokens in its
    one group:

    >>> import numpy as np
    >>> from sklearn_ssl_crf.objective import MarginalPenalty
    >>> class SumOfSquares(MarginalPenalty):
    ...     def __init__(self, token_groups, n_groups):
    ...         self.token_groups, self.n_groups = np.asarray(token_groups), n_groups
    ...     def value_and_gradient(self, group_sums):
    ...         return float((group_sums ** 2).sum()), 2 * group_sums
    >>> penalty = SumOfSquares([0, 0, -1], n_groups=1)
    >>> value, gradient = penalty(np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))
    >>> value, gradient.tolist()
    (2.5, [[3.0, 1.0], [3.0, 1.0], [0.0, 0.0]])
    """

    token_groups = None
    n_groups = 0

    def value_and_gradient(self, group_sums):
        """The penalty and its gradient from the groups' marginal sums.

        Parameters
        ----------
        group_sums : ndarray of shape (n_groups, n_labels)
            Per group, the sum of the node marginals of its tokens.

        Returns
        -------
        value : float
            The penalty.
        gradient : ndarray of shape (n_groups, n_labels)
            The gradient with respect to ``group_sums``, which is also the gradient with
            respect to the node marginals of every token of the group.
        """
        raise NotImplementedError

    def group_matrix(self):
        """Build the sparse indicator of each token's group.

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_groups, n_tokens)
            A 1 at (group of ``t``, ``t``) for every token ``t`` with a group; the tokens of
            group -1 have none.
        """
        return group_indicator(self.token_groups, self.n_groups)

    def __call__(self, node_marginals):
        """The penalty and its gradient with respect to the tokens' node marginals.

        Parameters
        ----------
        node_marginals : ndarray of shape (n_tokens, n_labels)

        Returns
        -------
        value : float
            The penalty.
        gradient : ndarray of shape (n_tokens, n_labels)
            Zero for tokens without a group.
        """
        node_marginals = np.asarray(node_marginals, dtype=np.float64)
        if node_marginals.ndim != 2 or node_marginals.shape[0] != self.token_groups.size:
            raise ValueError(f"node_marginals must have shape ({self.token_groups.size}, "
                             f"n_labels), got {node_marginals.shape}")
        indicator = self.group_matrix()
        value, gradient = self.value_and_gradient(np.asarray(indicator @ node_marginals))
        return value, np.asarray(indicator.T @ gradient)


class GraphLaplacianPenalty(MarginalPenalty):
    """The graph Laplacian penalty of He, Gillenwater & Taskar (2013) on vertex averages.

    ``h = 1/2 sum_k sum_ab w_ab (m_ak - m_bk)^2 = sum_k m_k' L m_k``, where ``m_a`` is the
    average node marginal over the tokens of vertex ``a``: labelled tokens count with their
    gold labels (one-hot, fixed), which seeds the graph; unlabelled tokens with their
    marginals. The gradient with respect to an unlabelled token's marginals is
    ``2 (L m)_a / count_a`` for its vertex ``a`` (the paper's eq. 15 leaves out the
    ``1 / count_a`` of the average). Vertices without any token have no average: their edges
    are left out, and so are they: the penalty's groups are the vertices with a token or a
    seed, in order (``vertices``), so that tokens of a sample of the graph's text cost what
    the sample has, not what the graph has.

    Parameters
    ----------
    weights : scipy.sparse matrix of shape (n_vertices, n_vertices)
        Symmetric non-negative edge weights (a `SimilarityGraph`'s ``weights``).
    token_vertices : ndarray of int of shape (n_tokens,)
        Vertex of every unlabelled token (-1: none).
    seed_sums : ndarray or scipy.sparse matrix of shape (n_vertices, n_labels)
        Per vertex, the count of each gold label among its labelled tokens (held sparse:
        few vertices have a labelled token).
    keep_degrees : bool, default=False
        Where some of a vertex's neighbours have no token (the tokens are a sample of
        those the graph was built on), scale each kept edge ``ab`` by
        ``sqrt(d_a d_b / (d'_a d'_b))``, ``d`` a vertex's weighted degree in ``weights``
        and ``d'`` in the kept edges, so that a sampled vertex is pulled towards its
        neighbours about as strongly as on the whole graph.

    Attributes
    ----------
    vertices : ndarray of int of shape (n_groups,)
        The vertex of each group: those with a token or a seed.
    token_groups : ndarray of int of shape (n_tokens,)
        The group of every token (-1: none).
    n_labels : int
        The number of labels (``seed_sums``' columns).
    weights : scipy.sparse.csr_matrix of shape (n_groups, n_groups)
        The edges between the groups' vertices (scaled with ``keep_degrees``): when every
        vertex has a token or a seed, the arrays of the CSR ``weights`` given, not a copy.
    degrees : ndarray of shape (n_groups,)
        Each group's weighted degree in ``weights``: ``L = diag(degrees) - weights``.

    See Also
    --------
    MarginalPenalty : The base class and its contract.
    LabelProportionPenalty : A penalty on the mean node marginal.
    GraphPRCRF : Trains with this penalty.

    Examples
    --------
    Two tokens on vertices joined by an edge of weight 2: ``h = 2 * ||mu_0 - mu_1||^2``.

    >>> import numpy as np, scipy.sparse as sp
    >>> penalty = GraphLaplacianPenalty(sp.csr_matrix([[0.0, 2.0], [2.0, 0.0]]),
    ...                                 token_vertices=np.array([0, 1]),
    ...                                 seed_sums=np.zeros((2, 2)))
    >>> value, gradient = penalty(np.array([[1.0, 0.0], [0.5, 0.5]]))
    >>> float(value), gradient.tolist()
    (1.0, [[2.0, -2.0], [-2.0, 2.0]])
    """

    def __init__(self, weights, token_vertices, seed_sums, keep_degrees=False):
        token_vertices = np.asarray(token_vertices, dtype=np.int64)
        seed_sums = sp.csr_matrix(seed_sums, dtype=np.float64)
        n_vertices, self.n_labels = seed_sums.shape
        outside = (token_vertices < -1) | (token_vertices >= n_vertices)
        if outside.any():
            raise ValueError(f"token_vertices must be -1 (none) or one of the {n_vertices} "
                             f"vertices of seed_sums' rows, got {token_vertices[outside][0]}")
        counts = np.asarray(seed_sums.sum(axis=1)).ravel() + np.bincount(
            token_vertices[token_vertices >= 0], minlength=n_vertices)
        present = counts > 0
        self.vertices = np.flatnonzero(present)
        self.n_groups = self.vertices.size
        group_of = np.full(n_vertices + 1, -1, dtype=np.int64)  # the last: no vertex (-1)
        group_of[self.vertices] = np.arange(self.n_groups)
        self.token_groups = group_of[token_vertices]
        seeds = sp.coo_matrix(seed_sums[present])
        seeds.sum_duplicates()
        self._seed_entries, self._seed_values = (seeds.row, seeds.col), seeds.data
        self.inverse_counts = 1.0 / counts[present][:, None]
        weights = sp.csr_matrix(weights)
        # Rows and columns taken in order keep each row's entries in order, so the sums
        # below add what the whole graph's rows would, in the same order.
        kept = weights if self.n_groups == n_vertices else weights[present][:, present]
        if keep_degrees:
            kept_degrees = np.asarray(kept.sum(axis=1)).ravel()
            degrees = np.asarray(weights.sum(axis=1)).ravel()[present]
            ratio = np.divide(degrees, kept_degrees, out=np.zeros(self.n_groups),
                              where=kept_degrees > 0)
            root = sp.diags(np.sqrt(ratio))
            kept = root @ kept @ root
        # L m = D m - W m from the edges themselves: in a fit on the whole graph they are
        # the graph's own matrix, and L as a matrix would be a second copy of it.
        self.weights = kept
        self.degrees = np.asarray(kept.sum(axis=1)).ravel()

    def value_and_gradient(self, group_sums, overwrite_sums=False, dtype=np.float64):
        """The penalty ``h`` and its gradient from the vertices' marginal sums.

        Parameters
        ----------
        group_sums : ndarray of shape (n_groups, n_labels)
            Per group (vertex of ``vertices``), the sum of the node marginals of its
            unlabelled tokens.
        overwrite_sums : bool, default=False
            Make the vertex averages in ``group_sums`` instead of a new table (on a graph
            of millions of vertices one such table is gigabytes).
        dtype : dtype, default=np.float64
            The gradient's (graph-PR's E-step holds it in single precision); it is
            computed in double either way.

        Returns
        -------
        value : float
            ``sum_k m_k' L m_k`` of the vertex averages ``m``.
        gradient : ndarray of shape (n_groups, n_labels)
            ``2 (L m)_a / count_a`` for the vertex ``a`` of each group.
        """
        averages = group_sums if overwrite_sums else np.array(group_sums, dtype=np.float64)
        np.add.at(averages, self._seed_entries, self._seed_values)  # each entry once
        averages *= self.inverse_counts
        gradient = np.empty(averages.shape, dtype=dtype)
        value = 0.0
        # L m = D m - W m a block of rows at a time, written as the gradient's rows: no
        # (groups x labels) table of L m beside the gradient.
        bounds = np.append(np.arange(0, self.n_groups, _BLOCK_ROWS), self.n_groups)
        for start, block_weights in zip(bounds.tolist(), row_blocks(self.weights, bounds)):
            rows = slice(start, start + block_weights.shape[0])
            block = np.asarray(block_weights @ averages)
            np.subtract(self.degrees[rows, None] * averages[rows], block, out=block)
            value += float(np.vdot(averages[rows], block))
            block *= 2.0 * self.inverse_counts[rows]
            gradient[rows] = block
        return value, gradient


class LabelProportionPenalty(MarginalPenalty):
    """Penalty ``n_tokens * KL(target || mean node marginal)`` of the tokens' labels.

    It keeps the predicted label distribution of the tokens near a target (Mann & McCallum
    2007's expectation regularisation, weighted per token).

    Parameters
    ----------
    target : ndarray of shape (n_labels,)
        Target label distribution (non-negative, sums to 1).
    n_tokens : int
        Number of tokens; all of them form the one group.

    See Also
    --------
    MarginalPenalty : The base class and its contract.
    GraphLaplacianPenalty : A penalty over the vertices of a graph.
    EntropyRegularizedCRF : Trains with this term (``proportion_weight``).

    Examples
    --------
    >>> import numpy as np
    >>> penalty = LabelProportionPenalty(np.array([0.5, 0.5]), n_tokens=2)
    >>> value, gradient = penalty(np.array([[0.5, 0.5], [0.5, 0.5]]))
    >>> float(value), gradient.tolist()
    (0.0, [[-1.0, -1.0], [-1.0, -1.0]])
    """

    def __init__(self, target, n_tokens):
        self.target = np.asarray(target, dtype=np.float64)
        self.n_tokens = int(n_tokens)
        self.token_groups = np.zeros(self.n_tokens, dtype=np.int64)
        self.n_groups = 1

    def value_and_gradient(self, group_sums):
        """The penalty and its gradient from the sum of all tokens' node marginals.

        Parameters
        ----------
        group_sums : ndarray of shape (1, n_labels)
            The sum of the node marginals of all tokens.

        Returns
        -------
        value : float
            ``n_tokens * KL(target || group_sums[0] / n_tokens)``.
        gradient : ndarray of shape (1, n_labels)
            ``-target / (group_sums[0] / n_tokens)``.
        """
        predicted = group_sums[0] / self.n_tokens
        present = self.target > 0
        target = self.target[present]
        # A label whose predicted share underflows to 0 makes the KL infinite, its true
        # value: the optimiser's line search then steps back (no warning for it).
        with np.errstate(divide="ignore", over="ignore"):
            kl = float(target @ np.log(target / predicted[present]))
            # d/dM_s of -n_tokens * sum_s target_s log(M_s / n_tokens)
            return self.n_tokens * kl, (-self.target / predicted)[None, :]


def target_proportions(label_proportions, classes, codes):
    """The target label distribution ``pi`` in the order of ``classes``: normalised
    ``label_proportions`` (label -> proportion; None: the frequencies of the labelled tokens'
    ``codes`` (-1, unknown, not counted), add-one smoothed)."""
    if label_proportions is None:
        counts = np.bincount(codes[codes >= 0], minlength=len(classes)) + 1.0
        return counts / counts.sum()
    unknown = set(label_proportions) - set(classes)
    if unknown:
        raise ValueError(f"label_proportions has labels not in the training data: "
                         f"{sorted(map(str, unknown))}")
    target = np.array([float(label_proportions.get(label, 0.0)) for label in classes])
    if not np.isfinite(target).all() or (target < 0).any() or target.sum() <= 0:
        raise ValueError("label_proportions must be non-negative numbers with a positive sum")
    return target / target.sum()

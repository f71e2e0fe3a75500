"""Objective terms, each a value and its gradient with respect to the potentials.

Mapping these gradients to weights is `PackedSequences.weight_gradient`, written once.
"""

import numpy as np

from ..inference import chain_lattice, chain_statistics
from ..inference.covariance import covariance_entropy_gradient
from ..inference.entropy import additive_expectation_batch


def log_likelihood(packed, unary, transition, workspace=None):
    """Conditional log-likelihood of labelled sequences and its gradient.

    The gradient with respect to the potentials is the observed label and transition
    counts minus their expectations under the model (one forward-backward pass). Where some
    labels are unknown (label -1, partial annotation), a sequence's likelihood is that of
    its known labels, summed over every labelling of the others, and the observed counts
    become their expectations given the known labels (a second, clamped pass). With
    ``packed.weights`` each sequence's term is weighted (``sample_weight``); with
    ``packed.margins`` a wrong label of a token adds its gold label's cost to the partition
    function's potentials (softmax-margin, Gimpel & Smith 2010: ``class_weight``), so that
    the model must score the gold labels of costly tokens higher by that margin.

    Parameters
    ----------
    packed : PackedSequences
        The sequences in their packed layout, with labels.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
        Transition potentials, shared by all sequences.
    workspace : Workspace, default=None
        Where the lattice keeps its work arrays.

    Returns
    -------
    value : float
        ``sum_i w_i log p(y_i | x_i)`` (all ``w_i`` 1 without weights).
    d_unary : ndarray of shape (n_tokens, S)
        Observed label indicators minus node marginals (a work array of ``workspace``,
        overwritten by its next use).
    d_transition : ndarray of shape (S, S)
        Observed transition counts minus expected ones.

    See Also
    --------
    log_partition : The log partition function alone and the marginals.
    unlabelled_terms : The terms of unlabelled sequences.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.objective import log_likelihood
    >>> from sklearn_ssl_crf.potentials import PackedSequences
    >>> packed = PackedSequences(sp.csr_matrix(np.ones((3, 1))), lengths=[2, 1],
    ...                          labels=[0, 1, 0], n_labels=2)
    >>> unary = packed.unary(np.zeros((1, 2)))                   # all potentials 0
    >>> value, d_unary, d_transition = log_likelihood(packed, unary, np.zeros((2, 2)))
    >>> bool(np.isclose(value, 3 * np.log(0.5)))                # 3 tokens, 2 labels
    True
    """
    return _log_likelihood(packed, unary, transition, chain_lattice, workspace)


def sequence_log_likelihood(packed, unary, transition):
    """`log_likelihood` of one sequence by the per-chain kernel `chain_statistics`:
    stochastic training's single-sequence steps, where the batched lattice's set-up would
    cost more than the recursions."""
    return _log_likelihood(packed, unary, transition, _one_chain_lattice, None)


class _OneChain:
    """`chain_statistics`'s results, read as `log_likelihood` reads a lattice."""

    def __init__(self, log_z, node_marginals, edge_marginal_sum):
        self.log_z = np.array([log_z])
        self._node_marginals, self._edge_marginal_sum = node_marginals, edge_marginal_sum

    def node_marginals(self, overwrite=False):
        return self._node_marginals

    def edge_marginal_sum(self, row_weights=None):
        # One sequence: every row has its weight.
        return (self._edge_marginal_sum if row_weights is None
                else row_weights[0] * self._edge_marginal_sum)


def _one_chain_lattice(unary, transition, layout, workspace):
    # At order 2 `chain_statistics` itself runs the pair lattice on the one chain.
    return _OneChain(*chain_statistics(unary, transition))


def _log_likelihood(packed, unary, transition, lattice_of, workspace):
    """`log_likelihood`, with ``lattice_of(unary, transition, layout, workspace)`` the
    forward-backward."""
    partition_unary = (unary if packed.margins is None
                       else cost_augmented(unary, packed.labels, packed.margins))
    if packed.partial:
        return _partial_log_likelihood(packed, unary, partition_unary, transition,
                                       lattice_of, workspace)
    row_weights = packed.row_weights
    lattice = lattice_of(partition_unary, transition, packed.layout, workspace)
    d_transition = packed.transition_counts - lattice.edge_marginal_sum(row_weights)
    d_unary = lattice.node_marginals(overwrite=True)
    np.negative(d_unary, out=d_unary)
    gold = packed.label_index
    d_unary.reshape(-1)[gold] += 1.0
    gold_unary = unary.reshape(-1)[gold]
    if row_weights is not None:
        d_unary *= row_weights[:, None]
        gold_unary = gold_unary * row_weights
    seen = packed.transition_entries
    gold_score = (gold_unary.sum()
                  + packed.transition_counts.ravel()[seen] @ transition.ravel()[seen])
    return gold_score - _weighted_sum(lattice.log_z, packed), d_unary, d_transition


def _weighted_sum(per_sequence, packed):
    """``sum_i w_i * per_sequence[i]`` (input order)."""
    return float(per_sequence.sum() if packed.weights is None
                 else per_sequence @ packed.weights)


def cost_augmented(unary, labels, margins):
    """The unary potentials with every wrong label of a token raised by the token's margin
    (the cost of mislabelling it, `PackedSequences.margins`); gold labels keep theirs, and
    tokens of unknown label (-1) have margin 0."""
    augmented = unary + margins[:, None]
    known = np.flatnonzero(labels >= 0)
    gold = known * unary.shape[1] + labels[known]
    augmented.reshape(-1)[gold] = unary.reshape(-1)[gold]
    return augmented


def clamp_unary(unary, labels):
    """Unary potentials with every label but the known one (``labels[t] >= 0``) at -inf:
    the lattice of the labellings that keep the known labels."""
    clamped = np.full_like(unary, -np.inf)
    unknown = labels < 0
    clamped[unknown] = unary[unknown]
    known = np.flatnonzero(~unknown)
    clamped[known, labels[known]] = unary[known, labels[known]]
    return clamped


def _partial_log_likelihood(packed, unary, partition_unary, transition, lattice_of,
                            workspace):
    """`log_likelihood` where some labels are unknown (Tsuboi et al. 2008): each
    sequence's ``log sum_{y consistent with its known labels} p(y | x)``, the log partition
    function of the lattice clamped to the known labels minus the free one's (over
    ``partition_unary``: with label costs, `cost_augmented`); the gradient is the clamped
    lattice's marginals minus the free ones'."""
    clamped = clamp_unary(unary, packed.labels)
    # Its own work arrays: the free lattice below reuses the workspace's.
    clamped_lattice = lattice_of(clamped, transition, packed.layout, None)
    clamped_log_z = clamped_lattice.log_z
    impossible = np.flatnonzero(np.isneginf(clamped_log_z))
    if impossible.size:
        raise ValueError(
            f"{impossible.size} labelled sequence(s) have known labels that no labelling of "
            "the allowed label pairs holds (order 2 with all_possible_transitions=False "
            "allows only the pairs seen among known labels): set "
            "all_possible_transitions=True")
    row_weights = packed.row_weights
    clamped_edges = clamped_lattice.edge_marginal_sum(row_weights)
    d_unary = clamped_lattice.node_marginals(overwrite=True)
    lattice = lattice_of(partition_unary, transition, packed.layout, workspace)
    d_transition = clamped_edges - lattice.edge_marginal_sum(row_weights)
    d_unary -= lattice.node_marginals()
    if row_weights is not None:
        d_unary *= row_weights[:, None]
    return _weighted_sum(clamped_log_z - lattice.log_z, packed), d_unary, d_transition


def log_partition(packed, unary, transition, workspace=None):
    """Summed log partition function of some sequences and its gradient.

    The gradient of ``log Z`` w.r.t. the potentials is the marginals; with the potentials of
    an auxiliary distribution q they are q's, whose expected features give the unlabelled
    term of the posterior-regularisation M-step, ``E_q[log p] = <E_q[F], theta> - log Z``.

    Parameters
    ----------
    packed : PackedSequences
        The sequences in their packed layout.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
        Transition potentials, shared by all sequences.
    workspace : Workspace, default=None
        Where the lattice keeps its work arrays.

    Returns
    -------
    log_z : float
        ``sum_i log Z(x_i)``.
    node_marginals : ndarray of shape (n_tokens, S)
        ``p(y_t = s | x)`` in packed order; a work array of ``workspace``, overwritten by
        its next use.
    edge_marginal_sum : ndarray of shape (S, S)
        The edge marginals summed over all positions and sequences.

    See Also
    --------
    log_likelihood : The log-likelihood of labelled sequences.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.objective import log_partition
    >>> from sklearn_ssl_crf.potentials import PackedSequences
    >>> packed = PackedSequences(sp.csr_matrix(np.ones((3, 1))), lengths=[2, 1],
    ...                          labels=[0, 1, 0], n_labels=2)
    >>> unary = packed.unary(np.zeros((1, 2)))                   # all potentials 0
    >>> log_z, node_marginals, edge_marginal_sum = log_partition(packed, unary,
    ...                                                          np.zeros((2, 2)))
    >>> bool(np.isclose(log_z, 3 * np.log(2))), edge_marginal_sum.tolist()
    (True, [[0.25, 0.25], [0.25, 0.25]])
    """
    lattice = chain_lattice(unary, transition, packed.layout, workspace)
    edge_marginal_sum = lattice.edge_marginal_sum()
    return float(lattice.log_z.sum()), lattice.node_marginals(overwrite=True), edge_marginal_sum


def unlabelled_terms(packed, unary, transition, workspace=None, entropy_gradient=None):
    """Negative entropy of unlabelled sequences, its gradient, and their label marginals.

    The entropy is ``log Z - E[score]``; the expected score and, with the entropy lattices,
    its gradient come from one pass over each sequence.

    Parameters
    ----------
    packed : PackedSequences
        The sequences in their packed layout.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
        Transition potentials, shared by all sequences.
    workspace : Workspace, default=None
        Where the lattice keeps its work arrays.
    entropy_gradient : {None, 'lattice', 'covariance'}, default=None
        How to compute the gradient: the entropy lattices (O(n S^2), Mann & McCallum), Jiao
        et al.'s covariance form (O(n^2 S^3), one sequence at a time), or not at all.

    Returns
    -------
    negative_entropy : float
        ``sum_sequences sum_y p(y|x) log p(y|x)``.
    d_unary : ndarray of shape (n_tokens, S) or None
        Gradient of the negative entropy with respect to the unary potentials (packed
        order); None when ``entropy_gradient`` is None.
    d_transition : ndarray of shape (S, S) or None
        Its gradient with respect to the transition potentials; None when
        ``entropy_gradient`` is None.
    label_sums : ndarray of shape (S,)
        Sum over tokens of ``p(y_t = s | x)``.

    See Also
    --------
    sklearn_ssl_crf.inference.entropy_gradient : The gradient for one chain.
    label_count_gradient : The gradient of the label-proportion term.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.objective import unlabelled_terms
    >>> from sklearn_ssl_crf.potentials import PackedSequences
    >>> packed = PackedSequences(sp.csr_matrix(np.ones((3, 1))), lengths=[2, 1],
    ...                          labels=[0, 1, 0], n_labels=2)
    >>> unary = packed.unary(np.zeros((1, 2)))                   # all potentials 0
    >>> negative_entropy, _, _, label_sums = unlabelled_terms(packed, unary, np.zeros((2, 2)))
    >>> bool(np.isclose(negative_entropy, -3 * np.log(2))), label_sums.tolist()
    (True, [1.5, 1.5])
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

    Parameters
    ----------
    packed : PackedSequences
        The sequences in their packed layout.
    unary : ndarray of shape (n_tokens, S)
        Unary potentials in packed order.
    transition : ndarray of shape (S, S)
        Transition potentials, shared by all sequences.
    label_weights : ndarray of shape (S,)
        The weight of each label in the expected count.
    workspace : Workspace, default=None
        Where the lattice keeps its work arrays.

    Returns
    -------
    d_unary : ndarray of shape (n_tokens, S)
        Gradient with respect to the unary potentials, in packed order.
    d_transition : ndarray of shape (S, S)
        Gradient with respect to the transition potentials.

    See Also
    --------
    unlabelled_terms : The entropy term of unlabelled sequences.
    LabelProportionPenalty : The label-proportion penalty itself.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.objective import label_count_gradient
    >>> from sklearn_ssl_crf.potentials import PackedSequences
    >>> packed = PackedSequences(sp.csr_matrix(np.ones((3, 1))), lengths=[2, 1],
    ...                          labels=[0, 1, 0], n_labels=2)
    >>> unary = packed.unary(np.zeros((1, 2)))                   # all potentials 0
    >>> d_unary, d_transition = label_count_gradient(packed, unary, np.zeros((2, 2)),
    ...                                              label_weights=np.array([1.0, 0.0]))
    >>> d_unary[0].tolist(), d_transition.tolist()
    ([0.25, -0.25], [[0.25, 0.0], [0.0, -0.25]])
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

"""`PackedSequences`: feature rows packed once into a chain layout, and the one mapping between
weights and potentials: ``unary = X @ W`` forward, ``dW = X.T @ d_unary`` back.
"""

import numpy as np
import scipy.sparse as sp

from ..inference import ChainLayout


class PackedSequences:
    """Token rows of some sequences reordered into a `ChainLayout` for the batched kernels.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_attributes)
        Token rows, sequences laid end to end.
    lengths : ndarray of int of shape (n_sequences,)
    labels : ndarray of int of shape (n_tokens,), default=None
        Label index of every token, in the same order as ``matrix``.
    n_labels : int, default=None
        Needed with ``labels``, to count observed transitions.
    groups : ndarray of int of shape (n_tokens,), default=None
        Group of every token (a graph vertex; -1 for none), in the same order as
        ``matrix``, for penalties on grouped marginals (`penalties`).
    n_groups : int, default=None
        Needed with ``groups``.
    order : {1, 2}, default=1
        Order of the chains, for ``transition_counts``.
    weights : ndarray of shape (n_sequences,), default=None
        Weight of each sequence's likelihood (``sample_weight``); None: all 1.
    label_costs : ndarray of shape (n_labels,), default=None
        With ``labels``: the cost of mislabelling a token of each gold label, in nats
        (``class_weight``'s logarithms), added to every wrong label's potential in the
        likelihood's partition function (softmax-margin); None: none.

    Attributes
    ----------
    layout : ChainLayout
    matrix : csr_matrix
        Rows in packed order; float32 values when that loses nothing.
    labels : ndarray or None
        Labels in packed order; -1 where a token's label is unknown (partial annotation).
    partial : bool
        Whether some labels are unknown.
    transition_counts : ndarray of shape (n_labels, n_labels) or None
        How often label ``i`` is followed by label ``j`` in the labelled sequences (both
        known); at order 2, of shape (n_labels + 1, n_labels, n_labels), the counts of the
        transition tensor's entries (`inference.second_order`) whose labels are all known.
    transition_entries : ndarray of int64 or None
        The flat indices of ``transition_counts``' non-zero entries (the others' potentials
        may be -inf: not allowed).
    label_index : ndarray of int64 or None
        Index of every token's label in a raveled (n_tokens, n_labels) array; None when
        some labels are unknown.
    weights, row_weights : ndarray or None
        The sequences' weights (input order) and each packed row's sequence's weight; None
        when every weight is 1.
    margins : ndarray of shape (n_tokens,) or None
        Each packed token's cost of a wrong label (``label_costs`` of its gold label; 0
        where unknown); None without costs.
    group_ids : ndarray of int64 or None
        The groups the packed tokens have, in increasing order.
    group_matrix : scipy.sparse.csr_matrix of shape (len(group_ids), n_tokens) or None
        Indicator of each packed token's group among ``group_ids`` (`group_indicator`):
        a chunk's share of a large graph's vertices, not all of them.
    state_pairs : scipy.sparse.csr_matrix of shape (n_attributes, n_labels) or None
        With ``labels``: how many tokens of known label hold each attribute, by label,
        counting the attributes stored with value 0 (python-crfsuite's ``False``), which
        CRFsuite pairs with the label as it does any other (`observed_weight_masks`).
    """

    def __init__(self, matrix, lengths, labels=None, n_labels=None, groups=None,
                 n_groups=None, order=1, weights=None, label_costs=None):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.layout = ChainLayout(self.lengths)
        self.matrix = matrix[self.layout.order]
        self.state_pairs = None
        if labels is not None:
            self.state_pairs = _state_pairs(self.matrix, np.asarray(labels)[self.layout.order],
                                            n_labels)
        # Stored zeros add nothing to a product: the kernels never see them.
        self.matrix.eliminate_zeros()
        # Feature values are almost all 1 (indicators): held as float32 where that is exact,
        # a third less memory for the packed data. Products upcast them to float64, so
        # every result is the same to the bit.
        values = self.matrix.data
        if values.dtype == np.float64 and np.array_equal(values.astype(np.float32), values):
            self.matrix.data = values.astype(np.float32)
        self.weights = self.row_weights = None
        if weights is not None and not np.all(weights == 1.0):
            self.weights = np.asarray(weights, dtype=np.float64)
            self.row_weights = self.weights[self.layout.sequence_order][self.layout.row_slots]
        self.labels = self.transition_counts = self.transition_entries = None
        self.label_index = self.margins = None
        self.partial = False
        if labels is not None:
            labels = np.asarray(labels, dtype=np.int64)
            self.labels = labels[self.layout.order]
            self.transition_counts = transition_counts(labels, self.lengths, n_labels, order,
                                                       self.weights)
            self.transition_entries = np.flatnonzero(self.transition_counts)
            self.partial = bool((labels < 0).any())
            if label_costs is not None and np.any(label_costs != 0):
                self.margins = np.where(self.labels >= 0, label_costs[self.labels], 0.0)
            if not self.partial:
                self.label_index = np.arange(self.labels.size) * n_labels + self.labels
        self.group_ids = self.group_matrix = None
        self.n_groups = n_groups
        if groups is not None:
            groups = np.asarray(groups, dtype=np.int64)[self.layout.order]
            self.group_ids, local = np.unique(groups[groups >= 0], return_inverse=True)
            local_groups = np.full(groups.size, -1, dtype=np.int64)
            local_groups[groups >= 0] = local
            self.group_matrix = group_indicator(local_groups, self.group_ids.size)

    @property
    def n_tokens(self):
        return self.layout.n_rows

    def unary(self, state_weights):
        """Unary potentials ``X @ W`` of every packed token, shape (n_tokens, n_labels)."""
        return np.asarray(self.matrix @ state_weights)

    def group_sums(self, values):
        """The rows of ``values`` (n_tokens, k; packed order) summed by group, as
        `GroupSums` over the chunk's groups."""
        return GroupSums(self.group_ids, np.asarray(self.group_matrix @ values),
                         self.n_groups)

    def marginal_sums(self, marginals, unit):
        """The rows of ``marginals`` (n_tokens, k; packed order; values in [0, 1]) summed by
        group, as exact `MarginalSums` in units of ``unit`` over the chunk's groups."""
        sums = np.asarray(self.group_matrix @ marginals)
        return MarginalSums(self.group_ids, np.rint(sums / unit).astype(np.int64),
                            self.n_groups, unit)

    def group_rows(self, table):
        """Each packed token's row of ``table`` (n_groups, k), zeros for tokens without
        a group."""
        return np.asarray(self.group_matrix.T @ table[self.group_ids])

    def weight_gradient(self, d_unary):
        """Map a gradient w.r.t. the unary potentials to one w.r.t. the state weights."""
        # X.T of a CSR matrix is a free CSC view; its product scatters into the small dW
        # instead of gathering from the large d_unary, several times faster than a CSR
        # transpose here.
        return np.asarray(self.matrix.T @ d_unary)

    def unpack(self, packed_values):
        """Rows of a packed-order array back in the sequences' original token order."""
        values = np.empty_like(packed_values)
        values[self.layout.order] = packed_values
        return values


def transition_counts(labels, lengths, n_labels, order=1, weights=None):
    """Counts of each transition potential's entry in labelled sequences laid end to end:
    shape (n_labels, n_labels) at order 1, (n_labels + 1, n_labels, n_labels) at order 2
    (`inference.second_order`); with ``weights`` (one per sequence), weighted counts."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[lengths > 0]
    # position[k]: position of token k in its sequence
    position = np.arange(labels.size) - np.repeat(starts, lengths[lengths > 0])
    # Entries with an unknown label (-1) are not counted.
    later = np.flatnonzero(position >= 1)
    later = later[(labels[later] >= 0) & (labels[later - 1] >= 0)]
    token_weights = None if weights is None else np.repeat(weights, lengths)
    if order == 1:
        entries = labels[later - 1] * n_labels + labels[later]
        return np.bincount(entries, None if weights is None else token_weights[later],
                           minlength=n_labels ** 2).reshape(n_labels, n_labels)
    # y_{t-2}, with the start (index n_labels) at position 1
    before = np.where(position[later] >= 2, labels[np.maximum(later - 2, 0)], n_labels)
    later, before = later[before >= 0], before[before >= 0]
    entries = (before * n_labels + labels[later - 1]) * n_labels + labels[later]
    return np.bincount(entries, None if weights is None else token_weights[later],
                       minlength=(n_labels + 1) * n_labels ** 2).reshape(
        n_labels + 1, n_labels, n_labels)


def _state_pairs(matrix, labels, n_labels):
    """(attribute x label) counts of the tokens of known label (``labels`` >= 0) holding
    each attribute of ``matrix``, whatever its stored value."""
    known = np.flatnonzero(labels >= 0)
    pattern = sp.csr_matrix((np.ones(matrix.nnz, dtype=np.float32), matrix.indices,
                             matrix.indptr), shape=matrix.shape)
    indicators = sp.csr_matrix((np.ones(known.size, dtype=np.float32),
                                (known, labels[known])), shape=(labels.size, n_labels))
    return sp.csr_matrix(pattern.T @ indicators)


def group_indicator(token_groups, n_groups):
    """Sparse (n_groups x n_tokens) matrix with a 1 at (group of t, t); tokens of group -1
    have none. ``indicator @ values`` sums token rows by group, ``indicator.T @ table``
    gives each token its group's row (zeros for -1)."""
    tokens = np.flatnonzero(token_groups >= 0)
    return sp.csr_matrix((np.ones(tokens.size), (token_groups[tokens], tokens)),
                         shape=(n_groups, token_groups.size))


class GroupSums:
    """Sums of token rows by group, held for the groups some token has (``ids``, in
    increasing order) and zero for the others: a chunk's sums over a graph of millions of
    vertices hold its own few thousand. ``a + b`` is the dense arrays' sum, to the bit (a
    missing row adds nothing), so chunks are added along `ChunkedSequences`' tree as
    before; `toarray` gives the (n_groups, k) array.
    """

    def __init__(self, ids, rows, n_groups):
        self.ids, self.rows, self.n_groups = ids, rows, n_groups

    def __add__(self, other):
        # Two sorted runs: a stable sort merges them in linear time (np.union1d hashes).
        ids = np.sort(np.concatenate([self.ids, other.ids]), kind="stable")
        ids = ids[np.concatenate([[True], ids[1:] != ids[:-1]])]
        rows = np.zeros((ids.size, self.rows.shape[1]))
        rows[np.searchsorted(ids, self.ids)] = self.rows
        rows[np.searchsorted(ids, other.ids)] += other.rows
        return GroupSums(ids, rows, self.n_groups)

    def toarray(self):
        dense = np.zeros((self.n_groups, self.rows.shape[1]))
        dense[self.ids] = self.rows
        return dense


def marginal_unit(group_token_counts):
    """The finest unit of `MarginalSums` in which sums of marginals by group stay below
    2**62 in int64: a group's sums are at most its tokens (the most of any group in
    ``group_token_counts``). With 10^5 tokens of one group it is 2**-45."""
    most = int(np.max(group_token_counts, initial=0))
    return 2.0 ** -(62 - most.bit_length())


# Rows converted at a time by `MarginalSums.take_array`.
_BLOCK_ROWS = 1 << 16


class MarginalSums:
    """Sums by group of token rows of marginals (values in [0, 1]) as integers in units of
    ``unit`` (`marginal_unit`): their additions are exact, so a total is the same whatever
    the order it was added in. `ChunkedSequences.sum` adds each chunk's into one table as
    it comes (``exact``), where float sums take a fixed tree of partial sums, several
    (groups x labels) tables at its top: gigabytes each on a graph of millions of
    vertices.

    ``ids``: the groups of ``rows``, in increasing order; None for a total, whose ``rows``
    is the (n_groups, k) table.
    """

    exact = True

    def __init__(self, ids, rows, n_groups, unit):
        self.ids, self.rows, self.n_groups, self.unit = ids, rows, n_groups, unit

    def zero_total(self):
        """An empty total of sums like these (`add` adds into it)."""
        return MarginalSums(None, np.zeros((self.n_groups, self.rows.shape[1]),
                                           dtype=np.int64), self.n_groups, self.unit)

    def add(self, other):
        """Adds ``other``'s sums into this total, in place."""
        if other.ids is None:
            self.rows += other.rows
        else:
            self.rows[other.ids] += other.rows  # a chunk's groups are distinct

    def take_array(self):
        """The (n_groups, k) array of the sums as floats, made in a total's own memory (a
        block of rows at a time: no second table): this one's, which holds nothing after,
        or a new total's of a chunk's sums."""
        if self.ids is not None:
            total = self.zero_total()
            total.add(self)
            return total.take_array()
        table, self.rows = self.rows, None
        values = table.view(np.float64)
        for start in range(0, table.shape[0], _BLOCK_ROWS):
            block = slice(start, start + _BLOCK_ROWS)
            values[block] = table[block] * self.unit
        return values

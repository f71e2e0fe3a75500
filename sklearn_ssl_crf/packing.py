"""Feature rows packed once into a chain layout, and the one mapping between weights and
potentials: ``unary = X @ W`` forward, ``dW = X.T @ d_unary`` back."""

import numpy as np

from .inference import ChainLayout, Workspace

__all__ = ["PackedSequences"]


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

    Attributes
    ----------
    layout : ChainLayout
    matrix : csr_matrix
        Rows in packed order.
    labels : ndarray or None
        Labels in packed order.
    transition_counts : ndarray of shape (n_labels, n_labels) or None
        How often label ``i`` is followed by label ``j`` in the labelled sequences.
    workspace : Workspace
        Work arrays reused by every objective evaluation on these sequences.
    """

    def __init__(self, matrix, lengths, labels=None, n_labels=None):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.layout = ChainLayout(self.lengths)
        self.workspace = Workspace()
        self.matrix = matrix[self.layout.order]
        self.labels = None
        self.transition_counts = None
        if labels is not None:
            labels = np.asarray(labels, dtype=np.int64)
            self.labels = labels[self.layout.order]
            self.transition_counts = _transition_counts(labels, self.lengths, n_labels)

    def flat_label_index(self, n_labels):
        """Index of every token's gold label in a raveled (n_tokens, n_labels) array."""
        return np.arange(self.n_tokens) * n_labels + self.labels

    @property
    def n_tokens(self):
        return self.layout.n_rows

    def unary(self, state_weights):
        """Unary potentials ``X @ W`` of every packed token, shape (n_tokens, n_labels)."""
        return np.asarray(self.matrix @ state_weights)

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


def _transition_counts(labels, lengths, n_labels):
    follows = np.ones(labels.size, dtype=bool)
    follows[np.concatenate([[0], np.cumsum(lengths)[:-1]])[lengths > 0]] = False
    pairs = labels[:-1][follows[1:]] * n_labels + labels[1:][follows[1:]]
    return np.bincount(pairs, minlength=n_labels * n_labels).reshape(n_labels, n_labels)

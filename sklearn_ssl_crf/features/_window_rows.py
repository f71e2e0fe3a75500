"""`WindowRows`: tokens given as rows of numbers (the pixels of letter images, say) and
their neighbours' rows, directly as sparse matrices.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

from ..utils import (
    KeywordOnlyParameters,
    SequenceMatrix,
    SequenceTagsMixin,
    as_sequence_list,
    matrices_to_sequence_matrix,
    row_blocks,
)
from ._window_features import _check_window


class _StatelessTransformer(KeywordOnlyParameters, SequenceTagsMixin, TransformerMixin,
                            BaseEstimator):
    """Base of the transformers that learn nothing: ``fit`` only checks the parameters
    (subclasses define ``_check_params``)."""

    def fit(self, X, y=None):
        """Check the parameters; nothing is learned.

        Parameters
        ----------
        X : list of sequences
            Ignored.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The transformer itself.
        """
        self._check_params()
        return self

    def _requires_fit(self):
        return False


class WindowRows(_StatelessTransformer):
    """Window features from sequences of feature vectors.

    A token's features are its row and its neighbours' rows side by side. The matrix-input
    counterpart of `WindowFeatures`: where a token is already a row of numbers (the 128
    pixels of a letter image, an embedding), the features of token ``t`` are a bias, the rows
    of tokens ``t - window .. t + window`` of the same sequence, and markers of the sequence
    ends. For handwriting this gives "pixel indicators of the letter and its neighbours" as
    CRF features.

    With ``d`` input columns, row ``t`` of a sequence's output has, in this order:

    - with ``bias``, one column of 1;
    - for each offset ``o = -window, ..., window``, the ``d`` columns of row ``t + o`` of the
      sequence, zeros where ``t + o`` falls outside it (offset 0 is the token's own row);
    - with ``bos_eos``, two indicator columns: BOS (1 on the first token of the sequence)
      and EOS (1 on the last). A one-token sequence has both.

    That is ``bias + (2 * window + 1) * d + 2 * bos_eos`` columns; the block of offset ``o``
    starts at column ``bias + (o + window) * d``.

    Parameters
    ----------
    window : int, default=1
        Number of neighbours on each side whose rows are included.
    bias : bool, default=True
        Whether to add the constant column.
    bos_eos : bool, default=True
        Whether to add the BOS and EOS columns. The zero blocks already tell where a
        neighbour is missing, but only as the absence of features; the indicators give the
        model a weight of its own for the first and last label of a sequence (a chain CRF
        here has no start or end transition weights).

    See Also
    --------
    WindowFeatures : The same for sequences of words, as feature dicts.

    Notes
    -----
    The transformer is stateless: ``fit`` only checks the parameters. All sequences of one
    call must have the same number of columns. The output is float64 CSR with sorted indices.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.features import WindowRows
    >>> word = np.array([[1, 2], [3, 4], [5, 6]])  # 3 tokens, 2 columns each
    >>> WindowRows(window=1).transform([word])[0].toarray().astype(int)
    array([[1, 0, 0, 1, 2, 3, 4, 1, 0],
           [1, 1, 2, 3, 4, 5, 6, 0, 0],
           [1, 3, 4, 5, 6, 0, 0, 0, 1]])
    """

    def __init__(self, *, window=1, bias=True, bos_eos=True):
        self.window = window
        self.bias = bias
        self.bos_eos = bos_eos

    def transform(self, X):
        """Build the window rows of every token.

        Parameters
        ----------
        X : list of 2-d arrays or sparse matrices, or SequenceMatrix
            One (tokens x d) matrix of numbers per sequence, all with the same ``d``.

        Returns
        -------
        features : list of scipy.sparse.csr_matrix
            One (tokens x columns) matrix per sequence, columns as in the class docstring.
        """
        window = self._check_params()
        sequences = _matrix_sequences(X)
        matrix, offsets = sequences.matrix, sequences.offsets
        lengths = np.diff(offsets)
        # Every token's distance from the start and from the end of its sequence.
        before = np.arange(matrix.shape[0]) - np.repeat(offsets[:-1], lengths)
        after = np.repeat(lengths, lengths) - 1 - before
        blocks = []
        if self.bias:
            blocks.append(sp.csr_matrix(np.ones((matrix.shape[0], 1))))
        for offset in range(-window, window + 1):
            blocks.append(_shifted_rows(matrix, offset, (before >= -offset) & (after >= offset)))
        if self.bos_eos:
            blocks.append(sp.csr_matrix(np.column_stack([before == 0, after == 0]),
                                        dtype=np.float64))
        windows = sp.hstack(blocks, format="csr")
        windows.sort_indices()
        return list(row_blocks(windows, offsets))

    def _check_params(self):
        for name in ("bias", "bos_eos"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        return _check_window(self.window)


def _matrix_sequences(X):
    """Per-sequence matrices of numbers (or a `SequenceMatrix`) stacked in a `SequenceMatrix`."""
    X = as_sequence_list(X)
    if isinstance(X, SequenceMatrix):
        return matrices_to_sequence_matrix(X)
    for i, sequence in enumerate(X):
        if sp.issparse(sequence):
            continue
        if not isinstance(sequence, np.ndarray):
            raise TypeError(
                f"sequence {i} is a {type(sequence).__name__}; WindowRows takes one 2-d "
                "array or sparse matrix (tokens x columns) per sequence; for words or "
                "token dicts use WindowFeatures"
            )
        if sequence.dtype.kind not in "biuf":
            raise TypeError(f"sequence {i} has dtype {sequence.dtype}; expected numbers")
    dense = all(isinstance(sequence, np.ndarray) for sequence in X)
    widths = {sequence.shape[1:] for sequence in X} if dense else set()
    if len(widths) == 1 and len(widths.pop()) == 1:
        # All dense with one width (images, embeddings): one conversion instead of one per
        # sequence, several times faster. The general path gives the errors.
        offsets = np.concatenate([[0], np.cumsum([len(sequence) for sequence in X])])
        X = SequenceMatrix(sp.csr_matrix(np.concatenate(X), dtype=np.float64), offsets)
    return matrices_to_sequence_matrix(X)


def _shifted_rows(matrix, offset, valid):
    """Row ``t + offset`` of ``matrix`` in row ``t`` where ``valid[t]``, zeros elsewhere: one
    product with a sparse selection matrix."""
    rows = np.flatnonzero(valid)
    n_rows = matrix.shape[0]
    selection = sp.csr_matrix((np.ones(rows.size), (rows, rows + offset)),
                              shape=(n_rows, n_rows))
    return selection @ matrix

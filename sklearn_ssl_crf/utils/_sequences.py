"""`SequenceMatrix`: the one container for featurised sequences.

All tokens of all sequences are rows of a single CSR matrix (tokens x attributes); ``offsets``
marks where each sequence starts. Keeping one matrix (rather than a list of per-sequence
matrices) lets the potentials of a whole corpus be computed with one sparse product.
"""

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = ["SequenceMatrix", "UnlabeledSequences", "row_blocks", "sequence_lists"]


class SequenceMatrix:
    """Featurised sequences: a CSR matrix of tokens plus sequence boundaries.

    All tokens of all sequences are rows of one CSR matrix (tokens x attributes), the
    sequences one after the other; ``offsets`` marks where each sequence starts. Every
    estimator accepts it as ``X``, and `SequenceVectorizer` and `WindowRows` produce it.

    Parameters
    ----------
    matrix : scipy.sparse matrix of shape (n_tokens, n_attributes)
        One row per token, sequences stored one after the other. Converted to CSR float64,
        except that float32 values are kept as they are (streamed blocks hold exact float32
        values; every product with the weights upcasts them).
    offsets : array-like of int, shape (n_sequences + 1,)
        Sequence ``i`` is rows ``offsets[i]:offsets[i + 1]``. Starts at 0, ends at
        ``n_tokens``, never decreases (empty sequences are allowed).
    feature_names : array-like of str of shape (n_attributes,), default=None
        Attribute names, when known (the featurizer sets them).

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
    offsets : ndarray of int64
    feature_names : ndarray of object or None

    See Also
    --------
    SequenceVectorizer : Turns feature dicts into a `SequenceMatrix`.
    WindowRows : Turns sequences of rows of numbers into a `SequenceMatrix`.

    Notes
    -----
    The object has ``len`` and integer/slice/array indexing over sequences, but no ``shape``:
    scikit-learn's cross-validation then splits it like a list (yielding per-sequence CSR
    matrices, which every estimator here accepts).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf import SequenceMatrix
    >>> X = SequenceMatrix(sp.csr_matrix(np.eye(3)), offsets=[0, 2, 3])
    >>> X
    <SequenceMatrix of 2 sequences, 3 tokens, 3 attributes>
    >>> len(X), X.lengths.tolist()
    (2, [2, 1])
    >>> X[1].toarray()
    array([[0., 0., 1.]])
    """

    def __init__(self, matrix, offsets, feature_names=None):
        if not sp.issparse(matrix):
            raise TypeError(f"matrix must be a scipy.sparse matrix, got {type(matrix).__name__}")
        matrix = sp.csr_matrix(matrix)
        if matrix.dtype != np.float32:
            matrix = matrix.astype(np.float64, copy=False)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0:
            raise ValueError("offsets must be a 1-d array starting at 0")
        if offsets[-1] != matrix.shape[0]:
            raise ValueError(
                f"offsets end at {offsets[-1]} but the matrix has {matrix.shape[0]} rows"
            )
        if np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must not decrease")
        if feature_names is not None:
            feature_names = np.asarray(feature_names, dtype=object)
            if feature_names.shape != (matrix.shape[1],):
                raise ValueError(
                    f"{feature_names.shape[0]} feature names for {matrix.shape[1]} columns"
                )
        self.matrix = matrix
        self.offsets = offsets
        self.feature_names = feature_names

    @property
    def lengths(self):
        """Number of tokens in each sequence, ndarray of shape (n_sequences,)."""
        return np.diff(self.offsets)

    @property
    def n_tokens(self):
        return self.matrix.shape[0]

    @property
    def n_features(self):
        return self.matrix.shape[1]

    def __len__(self):
        return self.offsets.size - 1

    def __iter__(self):
        for i in range(len(self)):
            yield self.matrix[self.offsets[i]:self.offsets[i + 1]]

    def __getitem__(self, key):
        """An int gives that sequence's CSR rows; a slice, index array or mask gives a
        `SequenceMatrix` of the selected sequences."""
        n = len(self)
        if isinstance(key, numbers.Integral):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise IndexError(f"sequence index {key} out of range for {n} sequences")
            return self.matrix[self.offsets[i]:self.offsets[i + 1]]
        if isinstance(key, slice):
            key = np.arange(n)[key]
        key = np.asarray(key)
        if key.dtype == bool:
            if key.shape != (n,):
                raise IndexError(f"boolean mask of shape {key.shape} for {n} sequences")
            key = np.flatnonzero(key)
        elif key.size == 0:
            key = key.astype(np.int64)
        elif not np.issubdtype(key.dtype, np.integer):
            raise IndexError("SequenceMatrix indices must be integers, slices or boolean masks")
        key = np.where(key < 0, key + n, key)
        if key.size and (key.min() < 0 or key.max() >= n):
            raise IndexError(f"sequence index out of range for {n} sequences")
        starts, stops = self.offsets[key], self.offsets[key + 1]
        lengths = stops - starts
        rows = _concatenated_ranges(starts, lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        return SequenceMatrix(self.matrix[rows], offsets, self.feature_names)

    def __repr__(self):
        return (
            f"<SequenceMatrix of {len(self)} sequences, {self.n_tokens} tokens, "
            f"{self.n_features} attributes>"
        )


def sequence_lists(values, offsets):
    """Per-token ``values`` (an array over the tokens of all sequences, in order) as one
    list per sequence; ``offsets``: where each sequence starts, and the end."""
    return [part.tolist() for part in np.split(values, offsets[1:-1])]


def row_blocks(matrix, bounds):
    """The CSR matrices of rows ``bounds[i]:bounds[i + 1]`` of a CSR ``matrix``, one at a
    time, built on views of its arrays (several times faster than slicing it, and no copy
    of its entries)."""
    data, indices, indptr = matrix.data, matrix.indices, matrix.indptr
    n_columns = matrix.shape[1]
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        first, last = indptr[start], indptr[stop]
        yield sp.csr_matrix(
            (data[first:last], indices[first:last], indptr[start:stop + 1] - first),
            shape=(stop - start, n_columns),
        )


def _concatenated_ranges(starts, lengths):
    """Concatenation of ``arange(s, s + n)`` for each pair, without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    # Position of each output element within its range, plus its range's start.
    range_ids = np.repeat(np.arange(lengths.size), lengths)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return starts[range_ids] + (np.arange(total) - first[range_ids])


class UnlabeledSequences:
    """Unlabelled sequences for ``fit(..., X_unlabeled=...)`` that a search passes whole.

    `~sklearn.model_selection.GridSearchCV` and `~sklearn.model_selection.cross_validate`
    split every fit parameter that has as many items as X together with X: a list of
    unlabelled sequences that happens to have ``len(X)`` items would reach each fit as the
    fold's share of it. This wrapper has no length, so they pass it on whole; the
    estimators read the sequences it wraps, anew at every fit.

    Parameters
    ----------
    sequences : list of sequences, SequenceMatrix, or re-iterable
        What ``X_unlabeled`` would otherwise be; it must give its sequences at every
        iteration (not a one-shot iterator such as a generator).

    See Also
    --------
    EntropyRegularizedCRF : An estimator whose ``fit`` takes ``X_unlabeled``.
    sklearn.model_selection.GridSearchCV : The search that would split a plain list.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_ssl_crf import EntropyRegularizedCRF, UnlabeledSequences
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(80, features="dict", random_state=0)
    >>> search = GridSearchCV(EntropyRegularizedCRF(c1=0.0, c2=0.1, early_stopping=False,
    ...                                             max_iterations=5), {"gamma": [0, 0.1]})
    >>> search = search.fit(X[:40], y[:40], X_unlabeled=UnlabeledSequences(X[40:]))
    """

    def __init__(self, sequences):
        if iter(sequences) is sequences:
            raise TypeError("UnlabeledSequences needs sequences it can read at every fit "
                            "(a list, a SequenceMatrix, WindowFeatures().transform(path)), "
                            f"not a one-shot {type(sequences).__name__}")
        self.sequences = sequences

    def __iter__(self):
        return iter(self.sequences)

    def __repr__(self):
        return f"UnlabeledSequences({type(self.sequences).__name__})"

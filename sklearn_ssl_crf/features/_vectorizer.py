"""`SequenceVectorizer`: sequences of token feature dicts (sklearn-crfsuite's input) to one
CSR matrix of tokens x attributes, the attributes named exactly as python-crfsuite names
them, so that a model trained here and one trained with CRFsuite see the same attributes.
"""

import numbers
from collections.abc import Mapping
from itertools import islice

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils import KeywordOnlyParameters, SequenceMatrix, SequenceTagsMixin
from ._encoding import ColumnCache, _encode, _growing_cache


class SequenceVectorizer(KeywordOnlyParameters, SequenceTagsMixin, TransformerMixin,
                         BaseEstimator):
    """Turn sequences of token feature dicts into a `SequenceMatrix`.

    Each token becomes one row of a sparse matrix whose columns are attributes. Attribute
    names and weights follow python-crfsuite (and so sklearn-crfsuite) exactly, for every
    ``key: value`` pair of a token dict:

    - ``str`` value: attribute ``"key:value"`` with weight 1 (``bytes`` are decoded as UTF-8);
    - ``bool`` value: attribute ``"key"`` with weight 1 when True, 0 when False (a 0 adds
      nothing to a token's scores, but, as in CRFsuite, pairs the attribute with the
      token's label where a model keeps only the pairs seen, ``all_possible_states=False``);
    - ``int`` or ``float`` value: attribute ``"key"`` weighted by the value;
    - ``dict`` value: its attributes, each prefixed with ``"key:"`` (recursively);
    - ``list``, ``tuple`` or ``set`` of strings: attribute ``"key:element"`` with weight 1 for
      each element.

    Keys must be str (UTF-8 ``bytes`` are decoded). A token may also be a list (or tuple or
    set) of attribute names, each with weight 1, and may be empty. An attribute occurring
    twice in one token gets the sum of its weights.

    Parameters
    ----------
    min_freq : float, default=0
        Attributes occurring in no more than ``min_freq`` training tokens are dropped (the
        ``feature.minfreq`` cut-off of CRFsuite and sklearn-crfsuite). 0 keeps every
        attribute.

    Attributes
    ----------
    vocabulary_ : dict
        Maps each attribute name to its column.
    feature_names_ : list of str
        Attribute names in column order: the order in which attributes first occur in the
        training data.

    See Also
    --------
    WindowFeatures : Builds token feature dicts from plain tokens.
    sklearn.feature_extraction.DictVectorizer : The same for flat dicts, one row per sample.

    Notes
    -----
    Attributes not seen during ``fit`` (or dropped by ``min_freq``) are ignored by
    ``transform``: they have no weight in the model.

    The matrix has sorted, unique column indices in each row. An attribute of weight
    0 (a number, or False) is stored as an explicit zero (and counts as an occurrence for
    ``min_freq``). The
    elements of a set are taken in sorted order, so that the column order does not depend
    on string hashing.

    A key that is not a str, a value of another type (None, arbitrary objects) or a list
    element that is not a str raises TypeError; a NaN or infinite weight raises ValueError.
    Both messages give the sequence and token index.

    Examples
    --------
    >>> from sklearn_ssl_crf.features import SequenceVectorizer
    >>> X = [[{"word": "The", "title": True}, {"word": "dog", "len": 3}]]
    >>> vec = SequenceVectorizer()
    >>> Xs = vec.fit_transform(X)
    >>> Xs
    <SequenceMatrix of 1 sequences, 2 tokens, 4 attributes>
    >>> vec.get_feature_names_out()
    array(['word:The', 'title', 'word:dog', 'len'], dtype=object)
    >>> Xs.matrix.toarray()
    array([[1., 1., 0., 0.],
           [0., 0., 1., 3.]])
    >>> vec.transform([[{"word": "dog", "title": False}, {"word": "cat"}]]).matrix.toarray()
    array([[0., 0., 1., 0.],
           [0., 0., 0., 0.]])
    """

    _token_kinds = ("dict",)

    def __init__(self, *, min_freq=0):
        self.min_freq = min_freq

    def fit(self, X, y=None):
        """Learn the attribute vocabulary from token feature dicts.

        Parameters
        ----------
        X : iterable of sequences of token dicts
            Each sequence is a list of tokens; each token a dict of features (see the class
            docstring) or a list of attribute names.
        y : None
            Ignored.

        Returns
        -------
        self : SequenceVectorizer
            The fitted vectorizer.
        """
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Learn the attribute vocabulary and return the featurised sequences.

        Equivalent to ``fit(X).transform(X)``, in a single pass over the data.

        Parameters
        ----------
        X : iterable of sequences of token dicts
            Each sequence is a list of tokens; each token a dict of features (see the class
            docstring) or a list of attribute names.
        y : None
            Ignored.

        Returns
        -------
        Xs : SequenceMatrix
            One row per token, one column per attribute.
        """
        Xs, _ = self.fit_transform_stream(X, ())
        return Xs

    def fit_transform_stream(self, X, stream, block_size=2000):
        """Learn the vocabulary from X and a stream of more sequences, and featurise both.

        At most ``block_size`` sequences of the stream are held as dicts at a time. The
        same vocabulary and row values as ``fit_transform`` of X followed by the stream's
        sequences; the stream is read once, so it may be a generator.

        Parameters
        ----------
        X : iterable of sequences of token dicts
            The first sequences, featurised into one matrix.
        stream : iterable of sequences of token dicts
            More sequences, read once (it may be a generator), featurised in blocks.
        block_size : int, default=2000
            Sequences of ``stream`` featurised at a time.

        Returns
        -------
        Xs : SequenceMatrix
            The sequences of X.
        blocks : list of SequenceMatrix
            The sequences of ``stream``, ``block_size`` at a time, as unlabelled sequences
            are used: without stored zeros (``False`` values, which add nothing to a
            sequence's scores and pair no attribute with a label where there is none), and
            with float32 values where that is exact (indicators), a third less memory.
        """
        min_freq = self.min_freq
        if (
            not isinstance(min_freq, numbers.Real)
            or isinstance(min_freq, bool)
            or not min_freq >= 0
        ):
            raise ValueError(f"min_freq must be a non-negative number, got {min_freq!r}")
        if isinstance(stream, (str, bytes, Mapping)) or not hasattr(stream, "__iter__"):
            raise TypeError(f"the stream must be an iterable of sequences, got "
                            f"{type(stream).__name__}")
        cache = _growing_cache({})
        parts = [_encode(X, cache)]
        sequences = iter(stream)
        while True:
            block = list(islice(sequences, block_size))
            if not block:
                break
            matrix, offsets = _encode(block, cache, first=block_size * (len(parts) - 1),
                                      name="the stream", stored_zeros=False)
            del block  # before the next is read: one block of dicts at a time
            # As the packed chunks will hold them (`PackedSequences`): until then the whole
            # stream is held in blocks, so they take no more memory than the chunks.
            if np.array_equal(matrix.data.astype(np.float32), matrix.data):
                matrix.data = matrix.data.astype(np.float32)
            parts.append((matrix, offsets))
        names = list(cache.vocabulary)
        # Blocks read early have fewer columns than the final vocabulary.
        matrices = [sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                                  shape=(matrix.shape[0], len(names)))
                    for matrix, _ in parts]
        new_columns = None
        if min_freq > 0:
            # Rows hold unique indices, so the count of a column is its number of tokens.
            counts = sum(np.bincount(matrix.indices, minlength=len(names))
                         for matrix in matrices)
            keep = counts > min_freq
            if not keep.all():
                kept = np.flatnonzero(keep)
                matrices = [matrix[:, kept] for matrix in matrices]
                names = [name for name, kept in zip(names, keep) if kept]
                new_columns = np.where(keep, np.cumsum(keep) - 1, -1)
        self.feature_names_ = names
        self.vocabulary_ = {name: column for column, name in enumerate(names)}
        # The lookups made while growing serve every later transform (see `ColumnCache`).
        cache.freeze(self.vocabulary_, new_columns)
        self._column_cache = cache
        feature_names = self.get_feature_names_out()
        featurised = [SequenceMatrix(matrix, offsets, feature_names=feature_names)
                      for matrix, (_, offsets) in zip(matrices, parts)]
        return featurised[0], featurised[1:]

    def extend_transform(self, X):
        """Add the attributes of X not yet in the vocabulary, and featurise X.

        The new attributes become new columns after the existing ones; for streaming
        training (``partial_fit``). Before any fit, this is `fit_transform`.

        Parameters
        ----------
        X : iterable of sequences of token dicts
            The sequences to featurise.

        Returns
        -------
        Xs : SequenceMatrix
            One row per token, one column per attribute of the grown vocabulary.
        """
        if not hasattr(self, "vocabulary_"):
            return self.fit_transform(X)
        if self.min_freq:
            raise ValueError("min_freq needs the whole corpus; it cannot be used when the "
                             "vocabulary grows with streamed data")
        cache = _growing_cache(self.vocabulary_)
        matrix, offsets = _encode(X, cache)
        self.feature_names_ = list(cache.vocabulary)
        self.vocabulary_ = dict(cache.vocabulary)
        cache.freeze(self.vocabulary_)
        self._column_cache = cache
        return SequenceMatrix(matrix, offsets, feature_names=self.get_feature_names_out())

    def transform(self, X):
        """Featurise sequences with the fitted vocabulary.

        Parameters
        ----------
        X : iterable of sequences of token dicts
            Each sequence is a list of tokens; each token a dict of features (see the class
            docstring) or a list of attribute names.

        Returns
        -------
        Xs : SequenceMatrix
            One row per token, one column per attribute of ``vocabulary_``. Attributes not in
            the vocabulary are dropped.
        """
        return self._transform(X, stored_zeros=True)

    def _transform(self, X, stored_zeros):
        """`transform`; ``stored_zeros`` False stores no entry of value 0 (False values),
        which scoring sequences (prediction, dev sets) does not need."""
        check_is_fitted(self, "vocabulary_")
        cache = getattr(self, "_column_cache", None)
        if cache is None or cache.vocabulary is not self.vocabulary_:
            # vocabulary_ was set by hand rather than by fit.
            cache = ColumnCache(self.vocabulary_)
        matrix, offsets = _encode(X, cache, stored_zeros=stored_zeros)
        return SequenceMatrix(matrix, offsets, feature_names=self.get_feature_names_out())

    def get_feature_names_out(self, input_features=None):
        """Attribute names in column order.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The name of each column.
        """
        check_is_fitted(self, "feature_names_")
        return np.asarray(self.feature_names_, dtype=object)

    def __getstate__(self):
        # The cache is derived from vocabulary_: rebuilt on loading, not pickled.
        state = dict(super().__getstate__())
        state.pop("_column_cache", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "vocabulary_" in self.__dict__:
            self._column_cache = ColumnCache(self.vocabulary_)

"""Featurisation: token feature dicts to a `SequenceMatrix`, and ready-made window features.

`SequenceVectorizer` maps sequences of token feature dicts (the input format of
sklearn-crfsuite and python-crfsuite) to one CSR matrix of tokens x attributes, naming the
attributes exactly as python-crfsuite does, so a model trained here and one trained with
CRFsuite see the same attributes. `WindowFeatures` builds such dicts from plain tokens;
`WindowRows` does the same for tokens given as rows of numbers (the pixels of letter images,
say), directly as sparse matrices.

Both run inside ``fit`` and ``predict`` of every estimator, so their inner loops are written
for speed: one pass over the tokens, locals bound to methods, the common value types tested
first, and NumPy only on whole arrays at the end.
"""

import math
import numbers
import os
from array import array
from collections import defaultdict
from collections.abc import Mapping
from itertools import chain, islice
from operator import itemgetter

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._tags import SequenceTagsMixin
from ._validation import as_sequence_list, matrices_to_sequence_matrix
from .datasets import iter_text
from .sequences import SequenceMatrix
from .word_clusters import WordClusters

__all__ = ["SequenceVectorizer", "WindowFeatures", "WindowRows"]

# Containers whose elements are attribute names (python-crfsuite: "string_key" items).
_NAME_COLLECTIONS = (list, tuple, set, frozenset)


class SequenceVectorizer(SequenceTagsMixin, TransformerMixin, BaseEstimator):
    """Turn sequences of token feature dicts into a `SequenceMatrix`.

    Each token becomes one row of a sparse matrix whose columns are attributes. Attribute
    names and weights follow python-crfsuite (and so sklearn-crfsuite) exactly, for every
    ``key: value`` pair of a token dict:

    - ``str`` value: attribute ``"key:value"`` with weight 1 (``bytes`` are decoded as UTF-8);
    - ``bool`` value: attribute ``"key"`` with weight 1 when True; nothing when False
      (CRFsuite stores weight 0, which is the same model);
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

    The matrix has sorted, unique column indices in each row. A numeric attribute of weight
    0 is stored as an explicit zero (and counts as an occurrence for ``min_freq``). The
    elements of a set are taken in sorted order, so that the column order does not depend
    on string hashing.

    A key that is not a str, a value of another type (None, arbitrary objects) or a list
    element that is not a str raises TypeError; a NaN or infinite weight raises ValueError.
    Both messages give the sequence and token index.

    Examples
    --------
    >>> from sklearn_ssl_crf.featurize import SequenceVectorizer
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

    def __init__(self, min_freq=0):
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
        """Learn the vocabulary from X and a stream of more sequences, and featurise both,
        holding at most ``block_size`` sequences of the stream as dicts at a time.

        The same vocabulary and rows as ``fit_transform`` of X followed by the stream's
        sequences; the stream is read once, so it may be a generator.

        Parameters
        ----------
        X : iterable of sequences of token dicts
        stream : iterable of sequences of token dicts
        block_size : int, default=2000
            Sequences of ``stream`` featurised at a time.

        Returns
        -------
        Xs : SequenceMatrix
            The sequences of X.
        blocks : list of SequenceMatrix
            The sequences of ``stream``, ``block_size`` at a time; their values are float32
            where that is exact (indicators), a third less memory.
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
                                      name="the stream")
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
        # The lookups made while growing serve every later transform (see `_ColumnCache`).
        cache.freeze(self.vocabulary_, new_columns)
        self._column_cache = cache
        feature_names = self.get_feature_names_out()
        featurised = [SequenceMatrix(matrix, offsets, feature_names=feature_names)
                      for matrix, (_, offsets) in zip(matrices, parts)]
        return featurised[0], featurised[1:]

    def extend_transform(self, X):
        """Add the attributes of X not yet in the vocabulary, as new columns after the
        existing ones, and featurise X; for streaming training (``partial_fit``).

        Parameters
        ----------
        X : iterable of sequences of token dicts

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
        check_is_fitted(self, "vocabulary_")
        cache = getattr(self, "_column_cache", None)
        if cache is None or cache.vocabulary is not self.vocabulary_:
            # vocabulary_ was set by hand rather than by fit.
            cache = _ColumnCache(self.vocabulary_)
        matrix, offsets = _encode(X, cache)
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
            self._column_cache = _ColumnCache(self.vocabulary_)


def _encode(X, cache, first=0, name="X"):
    """Featurise ``X`` into a CSR matrix and the sequence offsets.

    Columns come from ``cache`` (a `_ColumnCache`); the matrix has as many columns as its
    vocabulary once all of ``X`` is read. Error messages number the sequences from ``first``
    and, unless ``name`` is X, name their source.
    """
    _check_corpus(X)
    # Column of every stored attribute, token by token; -1 marks entries to drop. Weights
    # are almost always 1, so only the others are recorded, with their positions.
    indices = array("q")
    indptr = array("q", [0])
    offsets = array("q", [0])
    positions = []
    weights = []
    add = indices.append
    end_token = indptr.append
    end_sequence = offsets.append
    add_position = positions.append
    add_weight = weights.append
    # Columns are looked up by the key and value objects themselves, whose hashes Python
    # caches, rather than by a freshly built "key:value" string: this halves the time. The
    # caches are plain dicts (faster to index than subclasses); a KeyError fills them.
    column_of = cache.column_of
    key_columns = cache.key_columns
    key_value_columns = cache.key_value_columns
    key_column = cache.key_column
    key_value_column = cache.key_value_column
    source = "" if name == "X" else f"{name}, "
    for i, sequence in enumerate(X, first):
        if type(sequence) is not list:
            _check_sequence(sequence, i, source)
        t = 0
        try:
            for t, token in enumerate(sequence):
                if type(token) is dict:
                    for key, value in token.items():
                        kind = type(value)
                        if kind is str:
                            try:
                                add(key_value_columns[key][value])
                            except KeyError:
                                add(key_value_column(key, value))
                        elif kind is bool:
                            if value:
                                try:
                                    add(key_columns[key])
                                except KeyError:
                                    add(key_column(key))
                            elif type(key) is not str:
                                _key(key)  # raises unless a bytes key
                        elif kind is float:
                            if value != 1.0:
                                if value - value != 0.0:
                                    raise _non_finite(key, value)
                                add_position(len(indices))
                                add_weight(value)
                            try:
                                add(key_columns[key])
                            except KeyError:
                                add(key_column(key))
                        else:
                            for name, weight in _expand(key, value):
                                if weight != 1.0:
                                    add_position(len(indices))
                                    add_weight(weight)
                                add(column_of(name))
                else:
                    for name, weight in _token_attributes(token):
                        if weight != 1.0:
                            add_position(len(indices))
                            add_weight(weight)
                        add(column_of(name))
                end_token(len(indices))
        except (TypeError, ValueError) as exc:
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(f"{source}sequence {i}, token {t}: {exc}") from exc
        end_sequence(len(indptr) - 1)
    matrix = _assemble(indices, indptr, positions, weights, len(cache.vocabulary))
    return matrix, np.frombuffer(offsets, dtype=np.int64)



def _growing_cache(vocabulary):
    """A `_ColumnCache` that gives each attribute not in ``vocabulary`` (name -> column,
    columns 0 .. len - 1) the next free column."""
    # The vocabulary grows in order of first appearance, the same whether the sequences
    # come at once or in blocks, without a test in the inner loop.
    grown = defaultdict()
    grown.update(vocabulary)
    grown.default_factory = grown.__len__
    return _ColumnCache(grown, grow=True)


class _ColumnCache:
    """Columns of attributes, by token-dict key (bool and float values) and by key and str
    value.

    ``key_columns[key]`` and ``key_value_columns[key][value]`` are filled on first use by
    `key_column` and `key_value_column`, which also check the key. They hold only attributes
    of the vocabulary, so they stay bounded however much unseen data is transformed; the
    cache built while fitting is kept for transform, where most lookups then hit.

    Parameters
    ----------
    vocabulary : dict
        Attribute name to column.
    grow : bool, default=False
        If True, ``vocabulary`` is a defaultdict giving new names the next column (fit);
        otherwise unknown names get column -1, meaning "drop" (transform).
    """

    def __init__(self, vocabulary, grow=False):
        self.vocabulary = vocabulary
        self.column_of = vocabulary.__getitem__ if grow else self._known_column
        self.key_columns = {}
        self.key_value_columns = {}

    def _known_column(self, name):
        return self.vocabulary.get(name, -1)

    def key_column(self, key):
        column = self.column_of(_key(key))
        if column >= 0:
            self.key_columns[key] = column
        return column

    def key_value_column(self, key, value):
        column = self.column_of(f"{_key(key)}:{value}")
        if column >= 0:
            columns = self.key_value_columns.get(key)
            if columns is None:
                columns = self.key_value_columns[key] = {}
            columns[value] = column
        return column

    def freeze(self, vocabulary, new_columns=None):
        """Stop growing: use the final ``vocabulary``, whose column ``new_columns[j]``
        (-1: dropped) is the former column ``j``."""
        self.vocabulary = vocabulary
        self.column_of = self._known_column
        if new_columns is None:
            return
        new = new_columns.tolist()
        self.key_columns = {
            key: new[column] for key, column in self.key_columns.items() if new[column] >= 0
        }
        self.key_value_columns = {
            key: {value: new[column] for value, column in columns.items() if new[column] >= 0}
            for key, columns in self.key_value_columns.items()
        }


def _assemble(indices, indptr, positions, weights, n_columns):
    """Build the canonical CSR matrix from the encoder's buffers."""
    indices = np.frombuffer(indices, dtype=np.int64)
    indptr = np.frombuffer(indptr, dtype=np.int64)
    data = np.ones(indices.size)
    if positions:
        data[np.asarray(positions, dtype=np.intp)] = weights
    dropped = indices < 0
    if dropped.any():
        kept = ~dropped
        indptr = np.concatenate(([0], np.cumsum(kept)))[indptr]
        indices = indices[kept]
        data = data[kept]
    matrix = sp.csr_matrix((data, indices, indptr), shape=(indptr.size - 1, n_columns))
    # Sorts each row and adds the weights of an attribute repeated within a token.
    matrix.sum_duplicates()
    return matrix


def _text_file_or_corpus(X):
    """The sentences of the text file X names (read lazily), or X itself."""
    if isinstance(X, os.PathLike) or (isinstance(X, str) and os.path.isfile(X)):
        if not os.path.isfile(X):
            raise FileNotFoundError(f"X is a path, read as a text file of sentences, but "
                                    f"{os.fspath(X)!r} is not a file")
        return _TextFile(X)
    if isinstance(X, str):
        raise TypeError(
            "X must be a list of sequences of tokens, got str (and no file of that name): "
            "split text into sequences of tokens first, or give the path of a text file"
        )
    return X


class _TextFile:
    """A text file of sentences, read lazily by `datasets.iter_text` at every iteration."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        return iter_text(self.path)


class _TextFileFeatures:
    """The feature dicts of a text file's sentences (`WindowFeatures.transform` of a path),
    built as the file is read, anew at every iteration: every fit of a search reads the
    whole file. It has no length, so scikit-learn's model selection passes it on whole."""

    def __init__(self, featurizer, text_file, settings):
        self.featurizer, self.text_file, self.settings = featurizer, text_file, settings

    def __iter__(self):
        return self.featurizer._features(iter(self.text_file), *self.settings)

    def __repr__(self):
        return f"<feature dicts of the sentences of {os.fspath(self.text_file.path)!r}>"


def _check_corpus(X):
    if isinstance(X, (str, bytes)):
        raise TypeError(
            f"X must be a list of sequences of tokens, got {type(X).__name__}; "
            "split text into sequences of tokens first"
        )
    if isinstance(X, Mapping):
        raise TypeError(
            "X must be a list of sequences of tokens, got a dict; a single token dict "
            "must be wrapped twice: [[token]]"
        )
    try:
        iter(X)
    except TypeError:
        raise TypeError(
            f"X must be a list of sequences of tokens, got {type(X).__name__}"
        ) from None


def _check_sequence(sequence, i, source=""):
    if isinstance(sequence, (str, bytes)):
        raise TypeError(
            f"{source}sequence {i} is a {type(sequence).__name__}, not a list of tokens; "
            "split it into tokens first (and build features with WindowFeatures)"
        )
    if isinstance(sequence, Mapping):
        raise TypeError(
            f"{source}sequence {i} is a dict, not a list of tokens; X must be a list of "
            "sequences, so wrap a single sequence in a list: [sequence]"
        )
    try:
        iter(sequence)
    except TypeError:
        raise TypeError(
            f"{source}sequence {i} is a {type(sequence).__name__}, not a list of tokens"
        ) from None


def _non_finite(name, value):
    return ValueError(f"attribute {name!r} has the non-finite value {value!r}")


def _key(key):
    """An attribute key as str (UTF-8 bytes are decoded, as by python-crfsuite)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise TypeError(
        f"attribute key {key!r} has type {type(key).__name__}; keys must be str"
    )


def _expand(key, value, prefix=""):
    """Yield the ``(name, weight)`` attributes of one ``key: value`` pair of a token dict.

    The general (slow) path of `_encode`: every type python-crfsuite accepts, plus NumPy
    scalars, with type checks and clear errors. ``prefix`` is the path of enclosing keys of
    a nested dict, ending in ``":"``.
    """
    name = prefix + _key(key)
    if isinstance(value, str):
        yield f"{name}:{str(value)}", 1.0
    elif isinstance(value, bytes):
        yield f"{name}:{value.decode('utf-8')}", 1.0
    elif isinstance(value, (bool, np.bool_)):
        if value:
            yield name, 1.0
    elif isinstance(value, numbers.Real):
        weight = float(value)
        if not math.isfinite(weight):
            raise _non_finite(name, value)
        yield name, weight
    elif isinstance(value, Mapping):
        for inner_key, inner_value in value.items():
            yield from _expand(inner_key, inner_value, f"{name}:")
    elif isinstance(value, _NAME_COLLECTIONS):
        for element in _names(value, f"the value of {name!r}"):
            yield f"{name}:{element}", 1.0
    else:
        raise TypeError(
            f"attribute {name!r} has a value of type {type(value).__name__}; expected str, "
            "bytes, bool, int, float, dict, or a list, tuple or set of str"
        )


def _token_attributes(token):
    """Yield the ``(name, weight)`` attributes of a token that is not a plain dict."""
    if isinstance(token, Mapping):
        for key, value in token.items():
            yield from _expand(key, value)
    elif isinstance(token, _NAME_COLLECTIONS):
        for name in _names(token, "the token"):
            yield name, 1.0
    elif isinstance(token, (str, bytes)):
        raise TypeError(
            f"the token is a {type(token).__name__}, {token!r}; a token must be a dict of "
            "features or a list of attribute names (build features from plain tokens "
            "with WindowFeatures)"
        )
    else:
        raise TypeError(
            f"the token is a {type(token).__name__}; a token must be a dict of features "
            "or a list of attribute names"
        )


def _names(collection, what):
    """The attribute names in a list, tuple or set (sets in sorted order, so that column
    order does not depend on string hashing)."""
    names = []
    for name in collection:
        if isinstance(name, str):
            names.append(name)
        elif isinstance(name, bytes):
            names.append(name.decode("utf-8"))
        else:
            raise TypeError(
                f"{what} contains a {type(name).__name__}; attribute names must be str"
            )
    if isinstance(collection, (set, frozenset)):
        names.sort()
    return names


_DIGITS = frozenset("0123456789")


class _StatelessTransformer(SequenceTagsMixin, TransformerMixin, BaseEstimator):
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


def _is_fitted(estimator):
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        return False
    return True


def _check_window(window):
    """``window`` as an int, or a ValueError unless it is a non-negative int."""
    if not isinstance(window, numbers.Integral) or isinstance(window, bool) or window < 0:
        raise ValueError(f"window must be a non-negative int, got {window!r}")
    return int(window)


class WindowFeatures(SequenceTagsMixin, TransformerMixin, BaseEstimator):
    """Standard token features from plain token sequences, in sklearn-crfsuite's format.

    Turns each token into a dict of features of the token and of its neighbours, ready for
    `SequenceVectorizer` or any estimator of this package, so that a tagger needs no
    feature code. A token is a word (str), or a tuple ``(word, tag1, tag2, ...)`` of str
    whose further columns are annotations such as part-of-speech tags.

    Features of a token with word ``w`` and extra columns ``c1, c2, ...``:

    - ``"word.lower"``: ``w.lower()``;
    - ``"word[-k:]"`` for each ``k`` in ``suffixes``, ``"word[:k]"`` for each ``k`` in
      ``prefixes``;
    - with ``word_shape``, the flags ``"word.isupper"``, ``"word.istitle"``,
      ``"word.isdigit"`` (the str methods), ``"word.has_hyphen"`` (contains ``-``) and
      ``"word.has_digit"`` (contains one of ``0-9``), as bools;
    - ``"col1"``: ``c1``, and ``"col1[:k]"`` for each ``k`` in ``column_prefixes``; likewise
      for ``col2``, ...

    The dict of a token holds ``"bias": 1.0``, the features of each neighbour at offsets
    ``-window .. -1`` with keys prefixed by the offset (``"-1:word.lower"``, ...), its own
    features, those of the neighbours at ``+1 .. +window`` (``"+1:col1"``, ...), and the
    ``"BOS"`` and ``"EOS"`` markers. Each token's features are computed once and reused for
    its neighbours.

    Parameters
    ----------
    window : int, default=1
        Number of neighbours on each side whose features are included.
    suffixes : tuple of int, default=(2, 3)
        Lengths of the word suffixes used as features.
    prefixes : tuple of int, default=()
        Lengths of the word prefixes used as features.
    word_shape : bool, default=True
        Whether to add the shape flags listed above.
    column_prefixes : tuple of int, default=(2,)
        Lengths of the prefixes of each extra column used as features (``"NNP"[:2]`` is
        ``"NN"``: the coarse part of a Penn Treebank tag).
    bos_eos : bool, default=True
        Whether to add ``"BOS": True`` to the first token of each sequence and
        ``"EOS": True`` to the last.
    clusters : WordClusters or None, default=None
        Word clusters whose features (``"cluster64"``, ...: see
        `WordClusters.get_feature_names_out`) are added to each token's own features, and
        so, within ``window``, to its neighbours' (``"-1:cluster64"``, ...). Words outside
        the clusters' vocabulary get none. ``fit`` learns the clusters from the sentences of
        ``X`` (labelled and unlabelled alike) unless they are fitted already.
    refit_clusters : bool, default=False
        Whether ``fit`` refits ``clusters`` even when they are fitted already.
    word_vectors : float or None, default=None
        With ``clusters``, the scale of the word's dense vector (`WordClusters.vectors_`,
        of unit length) added to the token's own features as ``"vector0"``,
        ``"vector1"``, ... (None: not added). Only the token's own: on BC2GM its neighbours'
        vectors added nothing, at three times the features. The scale sets how strongly
        the L2 prior holds their weights back; 3 did best there with ``c2=0.01``.

    Attributes
    ----------
    clusters_ : WordClusters
        Only with ``clusters``: the clusters ``transform`` uses, fitted on ``fit``'s ``X``
        (a clone of ``clusters``), or ``clusters`` itself when it was fitted already.

    See Also
    --------
    SequenceVectorizer : Turns the feature dicts into a `SequenceMatrix`.
    WordClusters : Word clusters learned from unlabelled sentences.

    Notes
    -----
    Without ``clusters`` the transformer is stateless: ``fit`` only checks the parameters,
    and ``transform`` needs no ``fit``. In a `~sklearn.pipeline.Pipeline` whose ``X`` holds
    the unlabelled sentences too (their labels None), the clusters are learned from all of
    them. All tokens of a sequence must have the same number of columns. False flags are
    kept in the dicts (as in the sklearn-crfsuite tutorial) so that every token has the same
    keys; `SequenceVectorizer` and CRFsuite give them no weight.

    Examples
    --------
    >>> from sklearn_ssl_crf.featurize import WindowFeatures
    >>> wf = WindowFeatures(suffixes=(2,), word_shape=False)
    >>> X = wf.fit_transform([[("He", "PRP"), ("ran", "VBD")]])
    >>> X[0][0]  # doctest: +NORMALIZE_WHITESPACE
    {'bias': 1.0, 'word.lower': 'he', 'word[-2:]': 'He', 'col1': 'PRP', 'col1[:2]': 'PR',
     '+1:word.lower': 'ran', '+1:word[-2:]': 'an', '+1:col1': 'VBD', '+1:col1[:2]': 'VB',
     'BOS': True}
    >>> WindowFeatures(window=0, suffixes=(), bos_eos=False).transform([["Oslo"]])
    ... # doctest: +NORMALIZE_WHITESPACE
    [[{'bias': 1.0, 'word.lower': 'oslo', 'word.isupper': False, 'word.istitle': True,
       'word.isdigit': False, 'word.has_hyphen': False, 'word.has_digit': False}]]
    """

    _token_kinds = ("string",)

    def __init__(
        self,
        window=1,
        suffixes=(2, 3),
        prefixes=(),
        word_shape=True,
        column_prefixes=(2,),
        bos_eos=True,
        clusters=None,
        refit_clusters=False,
        word_vectors=None,
    ):
        self.window = window
        self.suffixes = suffixes
        self.prefixes = prefixes
        self.word_shape = word_shape
        self.column_prefixes = column_prefixes
        self.bos_eos = bos_eos
        self.clusters = clusters
        self.refit_clusters = refit_clusters
        self.word_vectors = word_vectors

    def fit(self, X, y=None):
        """Check the parameters and learn the word clusters, if any, from ``X``.

        Parameters
        ----------
        X : sequence of sequences of tokens
            As for ``transform``; every sentence counts for the clusters, labelled or not.
        y : None
            Ignored.

        Returns
        -------
        self : WindowFeatures
        """
        self._check_params()
        if self.clusters is None:
            return self  # stateless
        if _is_fitted(self.clusters) and not self.refit_clusters:
            self.clusters_ = self.clusters
        else:
            self.clusters_ = clone(self.clusters).fit(X)
        return self

    def _requires_fit(self):
        return self.clusters is not None

    def _fitted_clusters(self):
        """The clusters ``transform`` uses (None without clusters)."""
        if self.clusters is None:
            return None
        if hasattr(self, "clusters_"):
            return self.clusters_
        if _is_fitted(self.clusters):
            return self.clusters
        raise NotFittedError(
            "This WindowFeatures has unfitted clusters: call fit (which learns them from "
            "X) before transform, or pass fitted WordClusters"
        )

    def transform(self, X):
        """Build the feature dicts of every token.

        Parameters
        ----------
        X : iterable of sequences, or path of a text file
            Each sequence is a list of tokens; a token is a word (str) or a tuple or list
            ``(word, column1, ...)`` of str. A path (a str naming a file, or a
            `pathlib.Path`) is read lazily with `datasets.iter_text`: one sentence a line,
            tokens split on whitespace, blank lines skipped (gzip when it ends in ``.gz``).

        Returns
        -------
        features : list of list of dict, or an iterator of them
            One dict per token, in the input's order. When X is an iterator (a generator,
            say), an iterator that builds each sequence's dicts as it is read, for
            streaming unlabelled text into ``fit(..., X_unlabeled=...)``. When X is a path,
            an iterable that does so anew at every iteration (so that each fit of a search
            reads the whole file), without a length; in a
            `~sklearn.pipeline.Pipeline` with ``transform_input=["X_unlabeled"]`` the path
            can be given as the pipeline's ``X_unlabeled``.
        """
        settings = self._check_params()
        X = _text_file_or_corpus(X)
        if isinstance(X, _TextFile):
            self._fitted_clusters()  # an unfitted model fails now, not when read
            return _TextFileFeatures(self, X, settings)
        _check_corpus(X)
        sequences = self._features(X, *settings)
        return sequences if iter(X) is X else list(sequences)

    def _features(self, X, window, suffixes, prefixes, column_prefixes):
        """The feature dicts of the sequences of X, a generator (set up here, so that a
        model that is not fitted fails at once)."""
        clusters = self._fitted_clusters()
        token_values = _TokenValues(
            suffixes, prefixes, self.word_shape, column_prefixes, clusters
        )
        keys_by_length = _WindowKeys(
            window, token_values.word_names, token_values.column_names
        )
        vectors = None if self.word_vectors is None else _VectorFeatures(
            clusters, self.word_vectors
        )
        bos_eos = self.bos_eos

        def sequences():
            for i, sequence in enumerate(X):
                if type(sequence) is not list:
                    _check_sequence(sequence, i)
                    if vectors is not None:
                        sequence = list(sequence)  # read twice: for the values, the vectors
                values = token_values.of_sequence(sequence, i)
                if not values:
                    yield []
                    continue
                # Every token has m values, so the values of tokens j - left .. j + right are
                # one slice of their concatenation, named by keys[left][right].
                m = len(values[0])
                keys = keys_by_length[m]
                flat = list(chain.from_iterable(values))
                last = len(values) - 1
                token_dicts = []
                for j in range(last + 1):
                    left = j if j < window else window
                    right = last - j if last - j < window else window
                    token_features = {"bias": 1.0}
                    token_features.update(
                        zip(keys[left][right], flat[(j - left) * m:(j + right + 1) * m])
                    )
                    if clusters is not None:
                        # Words outside the clusters' vocabulary have None: no feature.
                        token_features = {
                            key: value for key, value in token_features.items()
                            if value is not None
                        }
                        if vectors is not None:
                            token = sequence[j]
                            token_features.update(
                                vectors[token if type(token) is str else token[0]]
                            )
                    if bos_eos:
                        if j == 0:
                            token_features["BOS"] = True
                        if j == last:
                            token_features["EOS"] = True
                    token_dicts.append(token_features)
                yield token_dicts

        return sequences()

    def _check_params(self):
        window = _check_window(self.window)
        lengths = []
        for name in ("suffixes", "prefixes", "column_prefixes"):
            value = getattr(self, name)
            try:
                value = tuple(value)
            except TypeError:
                value = (value,)
            if not all(
                isinstance(k, numbers.Integral) and not isinstance(k, bool) and k > 0
                for k in value
            ):
                raise ValueError(f"{name} must be a tuple of positive ints, got {value!r}")
            lengths.append(tuple(int(k) for k in value))
        if self.clusters is not None and not isinstance(self.clusters, WordClusters):
            raise TypeError(
                f"clusters must be a WordClusters or None, got {type(self.clusters).__name__}"
            )
        if self.word_vectors is not None:
            if (not isinstance(self.word_vectors, numbers.Real)
                    or isinstance(self.word_vectors, bool)
                    or not 0 < self.word_vectors < math.inf):
                raise ValueError(
                    f"word_vectors must be a positive float or None, got {self.word_vectors!r}"
                )
            if self.clusters is None:
                raise ValueError("word_vectors needs clusters: the vectors are theirs")
        return (window, *lengths)


class _TokenValues(dict):
    """The values of a token's own features, by token (a str or a tuple of str).

    Words and whole tokens repeat (Zipf's law), so each distinct token is featurised once,
    on first use, and checked then.
    """

    def __init__(self, suffixes, prefixes, word_shape, column_prefixes, clusters=None):
        super().__init__()
        self.word_shape = word_shape
        self.clusters = clusters
        self.word_slices = _slicer(
            [slice(-k, None) for k in suffixes] + [slice(None, k) for k in prefixes]
        )
        self.column_slices = _slicer([slice(None, k) for k in column_prefixes])
        self.word_names = ["word.lower"]
        self.word_names += [f"word[-{k}:]" for k in suffixes]
        self.word_names += [f"word[:{k}]" for k in prefixes]
        if word_shape:
            self.word_names += [
                "word.isupper",
                "word.istitle",
                "word.isdigit",
                "word.has_hyphen",
                "word.has_digit",
            ]
        if clusters is not None:
            self.word_names += list(clusters.get_feature_names_out())
        self.column_names = [""] + [f"[:{k}]" for k in column_prefixes]

    def __missing__(self, token):
        if isinstance(token, str):
            word, columns = str(token), ()
        elif type(token) is tuple and token and all(isinstance(c, str) for c in token):
            word, columns = str(token[0]), tuple(map(str, token[1:]))
        else:
            raise _BadToken
        values = (word.lower(), *self.word_slices(word))
        if self.word_shape:
            values += (
                word.isupper(),
                word.istitle(),
                word.isdigit(),
                "-" in word,
                not _DIGITS.isdisjoint(word),
            )
        if self.clusters is not None:
            values += self.clusters.word_features(word)
        for column in columns:
            values += (column, *self.column_slices(column))
        self[token] = values
        return values

    def of_sequence(self, sequence, i):
        """The values of each token of sequence ``i``, all of the same length."""
        try:
            values = [self[token] for token in sequence]
        except (TypeError, _BadToken):
            # Lists are unhashable: look them up as tuples, and locate any bad token.
            values = []
            for t, token in enumerate(sequence):
                try:
                    values.append(self[tuple(token) if type(token) is list else token])
                except (TypeError, _BadToken):
                    raise TypeError(
                        f"sequence {i}, token {t}: a token must be a word (str) or a "
                        f"non-empty tuple or list of str, got {token!r}"
                    ) from None
        if values and len(set(map(len, values))) > 1:
            raise ValueError(
                f"sequence {i}: tokens with different numbers of columns; all tokens of "
                "a sequence must have the same columns"
            )
        return values


class _VectorFeatures(dict):
    """The scaled vector features of a word, ``(("vector0", v0), ...)``, by word; empty
    for words outside the clusters' vocabulary. Filled on first use of each word."""

    def __init__(self, clusters, scale):
        super().__init__()
        self.clusters, self.scale = clusters, float(scale)
        self.names = [f"vector{k}" for k in range(clusters.n_components_)]

    def __missing__(self, word):
        vector = self.clusters.word_vector(word)
        items = () if vector is None else tuple(
            zip(self.names, (self.scale * vector).tolist())
        )
        self[word] = items
        return items


class _BadToken(Exception):
    """Raised by `_TokenValues` for a token of the wrong type."""


def _slicer(slices):
    """A function returning the tuple of ``text[s]`` for each slice ``s``."""
    if len(slices) > 1:
        return itemgetter(*slices)  # slices all at once in C
    if slices:
        only = slices[0]
        return lambda text: (text[only],)
    return lambda text: ()


class _WindowKeys(dict):
    """Feature names of `WindowFeatures` for tokens with ``m`` values each.

    ``keys[m][left][right]`` is the tuple of names of the values of tokens
    ``j - left .. j + right`` seen from token ``j``: prefixed by the offset (``"-1:"``,
    ``"+2:"``, ...) except for the token's own values. Built on first use of each ``m``.
    """

    def __init__(self, window, word_names, column_names):
        super().__init__()
        self._window = window
        self._word_names = word_names
        self._column_names = column_names

    def __missing__(self, m):
        n_columns = (m - len(self._word_names)) // len(self._column_names)
        own = list(self._word_names)
        for c in range(1, n_columns + 1):
            own += [f"col{c}{suffix}" for suffix in self._column_names]
        window = self._window
        named = {
            offset: [f"{offset:+d}:{name}" for name in own] if offset else own
            for offset in range(-window, window + 1)
        }
        keys = self[m] = [
            [
                tuple(name for offset in range(-left, right + 1) for name in named[offset])
                for right in range(window + 1)
            ]
            for left in range(window + 1)
        ]
        return keys


class WindowRows(_StatelessTransformer):
    """Window features from sequences of feature vectors: each token's row and its
    neighbours' rows side by side.

    The matrix-input counterpart of `WindowFeatures`: where a token is already a row of
    numbers (the 128 pixels of a letter image, an embedding), the features of token ``t``
    are a bias, the rows of tokens ``t - window .. t + window`` of the same sequence, and
    markers of the sequence ends. For handwriting this gives "pixel indicators of the letter
    and its neighbours" as CRF features.

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
    >>> from sklearn_ssl_crf.featurize import WindowRows
    >>> word = np.array([[1, 2], [3, 4], [5, 6]])  # 3 tokens, 2 columns each
    >>> WindowRows(window=1).transform([word])[0].toarray().astype(int)
    array([[1, 0, 0, 1, 2, 3, 4, 1, 0],
           [1, 1, 2, 3, 4, 5, 6, 0, 0],
           [1, 3, 4, 5, 6, 0, 0, 0, 1]])
    """

    def __init__(self, window=1, bias=True, bos_eos=True):
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
        return _split_rows(windows, offsets)

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


def _split_rows(matrix, offsets):
    """The CSR matrices of rows ``offsets[i]:offsets[i + 1]`` of a CSR ``matrix``, built on
    views of its arrays (several times faster than slicing it)."""
    data, indices, indptr = matrix.data, matrix.indices, matrix.indptr
    n_columns = matrix.shape[1]
    blocks = []
    for start, stop in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        first, last = indptr[start], indptr[stop]
        blocks.append(sp.csr_matrix(
            (data[first:last], indices[first:last], indptr[start:stop + 1] - first),
            shape=(stop - start, n_columns),
        ))
    return blocks


def _shifted_rows(matrix, offset, valid):
    """Row ``t + offset`` of ``matrix`` in row ``t`` where ``valid[t]``, zeros elsewhere: one
    product with a sparse selection matrix."""
    rows = np.flatnonzero(valid)
    n_rows = matrix.shape[0]
    selection = sp.csr_matrix((np.ones(rows.size), (rows, rows + offset)),
                              shape=(n_rows, n_rows))
    return selection @ matrix

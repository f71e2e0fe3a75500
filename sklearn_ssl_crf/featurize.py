"""Featurisation: token feature dicts to a `SequenceMatrix`, and ready-made window features.

`SequenceVectorizer` maps sequences of token feature dicts (the input format of
sklearn-crfsuite and python-crfsuite) to one CSR matrix of tokens x attributes, naming the
attributes exactly as python-crfsuite does, so a model trained here and one trained with
CRFsuite see the same attributes. `WindowFeatures` builds such dicts from plain tokens.

Both run inside ``fit`` and ``predict`` of every estimator, so their inner loops are written
for speed: one pass over the tokens, locals bound to methods, the common value types tested
first, and NumPy only on whole arrays at the end.
"""

import math
import numbers
import re
from array import array
from collections import defaultdict
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .sequences import SequenceMatrix

__all__ = ["SequenceVectorizer", "WindowFeatures"]

# Containers whose elements are attribute names (python-crfsuite: "string_key" items).
_NAME_COLLECTIONS = (list, tuple, set, frozenset)


class SequenceVectorizer(TransformerMixin, BaseEstimator):
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

    A token may also be a list (or tuple or set) of attribute names, each with weight 1, and
    may be empty. An attribute occurring twice in one token gets the sum of its weights.

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

    The matrix has sorted, unique column indices in each row; a numeric attribute of weight 0
    is stored as an explicit zero, so it counts towards ``min_freq`` as in CRFsuite.

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
        min_freq = self.min_freq
        if (
            not isinstance(min_freq, numbers.Real)
            or isinstance(min_freq, bool)
            or not min_freq >= 0
        ):
            raise ValueError(f"min_freq must be a non-negative number, got {min_freq!r}")
        # A missing name gets the next free column: the vocabulary grows in order of first
        # appearance without a test in the inner loop.
        vocabulary = defaultdict()
        vocabulary.default_factory = vocabulary.__len__
        matrix, offsets = _encode(X, vocabulary.__getitem__, vocabulary.__len__)
        names = list(vocabulary)
        if min_freq > 0:
            # Rows hold unique indices, so the count of a column is its number of tokens.
            counts = np.bincount(matrix.indices, minlength=len(names))
            keep = counts > min_freq
            if not keep.all():
                matrix = matrix[:, np.flatnonzero(keep)]
                names = [name for name, kept in zip(names, keep) if kept]
        self.feature_names_ = names
        self.vocabulary_ = {name: column for column, name in enumerate(names)}
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
        get = self.vocabulary_.get
        n_columns = len(self.vocabulary_)
        matrix, offsets = _encode(X, lambda name: get(name, -1), lambda: n_columns)
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


def _encode(X, column_of, n_columns):
    """Featurise ``X`` into a CSR matrix and the sequence offsets.

    ``column_of(name)`` gives the column of an attribute, or -1 to drop it;
    ``n_columns()`` the number of columns once all of ``X`` is read.
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
    # caches, rather than by a freshly built "key:value" string: this halves the time.
    key_columns = _KeyColumns(column_of)
    key_value_columns = _KeyValueColumns(column_of)
    for i, sequence in enumerate(X):
        if type(sequence) is not list:
            _check_sequence(sequence, i)
        t = 0
        try:
            for t, token in enumerate(sequence):
                if type(token) is dict:
                    for key, value in token.items():
                        kind = type(value)
                        if kind is str:
                            add(key_value_columns[key][value])
                        elif kind is bool:
                            if value:
                                add(key_columns[key])
                            elif type(key) is not str:
                                _key(key)  # raises unless a bytes key
                        elif kind is float:
                            if value != 1.0:
                                if value - value != 0.0:
                                    raise _non_finite(key, value)
                                add_position(len(indices))
                                add_weight(value)
                            add(key_columns[key])
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
            raise kind(f"sequence {i}, token {t}: {exc}") from exc
        end_sequence(len(indptr) - 1)
    matrix = _assemble(indices, indptr, positions, weights, n_columns())
    return matrix, np.frombuffer(offsets, dtype=np.int64)


class _KeyColumns(dict):
    """Column of the attribute named by a key, looked up (and the key checked) on first use."""

    __slots__ = ("column_of",)

    def __init__(self, column_of):
        super().__init__()
        self.column_of = column_of

    def __missing__(self, key):
        column = self[key] = self.column_of(_key(key))
        return column


class _KeyValueColumns(dict):
    """For each key, a `_ValueColumns` giving the column of ``"key:value"`` by value."""

    __slots__ = ("column_of",)

    def __init__(self, column_of):
        super().__init__()
        self.column_of = column_of

    def __missing__(self, key):
        columns = self[key] = _ValueColumns(f"{_key(key)}:", self.column_of)
        return columns


class _ValueColumns(dict):
    """Column of the attribute ``prefix + value``, looked up on first use of ``value``."""

    __slots__ = ("prefix", "column_of")

    def __init__(self, prefix, column_of):
        super().__init__()
        self.prefix = prefix
        self.column_of = column_of

    def __missing__(self, value):
        column = self[value] = self.column_of(self.prefix + value)
        return column


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


def _check_sequence(sequence, i):
    if isinstance(sequence, (str, bytes)):
        raise TypeError(
            f"sequence {i} is a {type(sequence).__name__}, not a list of tokens; "
            "split it into tokens first (and build features with WindowFeatures)"
        )
    if isinstance(sequence, Mapping):
        raise TypeError(
            f"sequence {i} is a dict, not a list of tokens; X must be a list of "
            "sequences, so wrap a single sequence in a list: [sequence]"
        )
    try:
        iter(sequence)
    except TypeError:
        raise TypeError(
            f"sequence {i} is a {type(sequence).__name__}, not a list of tokens"
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


def _expand(key, value):
    """Yield the ``(name, weight)`` attributes of one ``key: value`` pair of a token dict.

    The general (slow) path of `_encode`: every type python-crfsuite accepts, plus NumPy
    scalars, with type checks and clear errors.
    """
    key = _key(key)
    if isinstance(value, str):
        yield f"{key}:{str(value)}", 1.0
    elif isinstance(value, bytes):
        yield f"{key}:{value.decode('utf-8')}", 1.0
    elif isinstance(value, (bool, np.bool_)):
        if value:
            yield key, 1.0
    elif isinstance(value, numbers.Real):
        weight = float(value)
        if not math.isfinite(weight):
            raise _non_finite(key, value)
        yield key, weight
    elif isinstance(value, Mapping):
        for inner_key, inner_value in value.items():
            for name, weight in _expand(inner_key, inner_value):
                yield f"{key}:{name}", weight
    elif isinstance(value, _NAME_COLLECTIONS):
        for name in _names(value, f"the value of {key!r}"):
            yield f"{key}:{name}", 1.0
    else:
        raise TypeError(
            f"attribute {key!r} has a value of type {type(value).__name__}; expected str, "
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


_HAS_DIGIT = re.compile(r"\d").search


class WindowFeatures(TransformerMixin, BaseEstimator):
    """Standard token features from plain token sequences, in sklearn-crfsuite's format.

    Turns each token into a dict of features of the token and of its neighbours, ready for
    `SequenceVectorizer` or any estimator of this package, so that a tagger needs no
    feature code. A token is a word (str), or a tuple ``(word, tag1, tag2, ...)`` whose
    further columns are annotations such as part-of-speech tags.

    Features of a token with word ``w`` and extra columns ``c1, c2, ...``:

    - ``"word.lower"``: ``w.lower()``;
    - ``"word[-k:]"`` for each ``k`` in ``suffixes``, ``"word[:k]"`` for each ``k`` in
      ``prefixes``;
    - with ``word_shape``, the flags ``"word.isupper"``, ``"word.istitle"``,
      ``"word.isdigit"`` (the str methods), ``"word.has_hyphen"`` (contains ``-``) and
      ``"word.has_digit"`` (contains a decimal digit), as bools;
    - ``"col1"``: ``c1``, and ``"col1[:k]"`` for each ``k`` in ``column_prefixes``; likewise
      for ``col2``, ...

    The output dict of a token holds ``"bias": 1.0``, its own features, and the features of
    each neighbour at offsets ``-window .. -1`` and ``+1 .. +window`` with keys prefixed by
    the offset (``"-1:word.lower"``, ``"+2:col1"``, ...). Neighbour features are computed
    once per token and reused.

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

    See Also
    --------
    SequenceVectorizer : Turns the feature dicts into a `SequenceMatrix`.

    Notes
    -----
    The transformer is stateless: ``fit`` only checks the parameters. False flags are kept
    in the dicts (as in the sklearn-crfsuite tutorial) so that every token has the same
    keys; `SequenceVectorizer` and CRFsuite give them no weight.

    Examples
    --------
    >>> from sklearn_ssl_crf.featurize import WindowFeatures
    >>> wf = WindowFeatures(suffixes=(2,), word_shape=False)
    >>> X = wf.fit_transform([[("He", "PRP"), ("ran", "VBD")]])
    >>> X[0][0]  # doctest: +NORMALIZE_WHITESPACE
    {'bias': 1.0, 'word.lower': 'he', 'word[-2:]': 'He', 'col1': 'PRP', 'col1[:2]': 'PR',
     'BOS': True, '+1:word.lower': 'ran', '+1:word[-2:]': 'an', '+1:col1': 'VBD',
     '+1:col1[:2]': 'VB'}
    >>> WindowFeatures(window=0, suffixes=(), bos_eos=False).transform([["Oslo"]])
    ... # doctest: +NORMALIZE_WHITESPACE
    [[{'bias': 1.0, 'word.lower': 'oslo', 'word.isupper': False, 'word.istitle': True,
       'word.isdigit': False, 'word.has_hyphen': False, 'word.has_digit': False}]]
    """

    def __init__(
        self,
        window=1,
        suffixes=(2, 3),
        prefixes=(),
        word_shape=True,
        column_prefixes=(2,),
        bos_eos=True,
    ):
        self.window = window
        self.suffixes = suffixes
        self.prefixes = prefixes
        self.word_shape = word_shape
        self.column_prefixes = column_prefixes
        self.bos_eos = bos_eos

    def fit(self, X=None, y=None):
        """Check the parameters; nothing is learned.

        Parameters
        ----------
        X : None or iterable of sequences
            Ignored.
        y : None
            Ignored.

        Returns
        -------
        self : WindowFeatures
            The transformer itself.
        """
        self._check_params()
        return self

    def transform(self, X):
        """Build the feature dicts of every token.

        Parameters
        ----------
        X : iterable of sequences
            Each sequence is a list of tokens; a token is a word (str) or a tuple or list
            ``(word, column1, ...)`` of str.

        Returns
        -------
        features : list of list of dict
            One dict per token, in the input's order.
        """
        window, suffixes, prefixes, column_prefixes = self._check_params()
        _check_corpus(X)
        token_values = self._token_values_function(suffixes, prefixes, column_prefixes)
        key_sets = _WindowKeys(window, suffixes, prefixes, self.word_shape, column_prefixes)
        before = range(-window, 0)
        after = range(1, window + 1)
        bos_eos = self.bos_eos
        features = []
        for i, sequence in enumerate(X):
            if type(sequence) is not list:
                _check_sequence(sequence, i)
            t = 0
            try:
                values = [token_values(token) for t, token in enumerate(sequence)]
            except (TypeError, AttributeError, IndexError) as exc:
                raise TypeError(
                    f"sequence {i}, token {t}: a token must be a word (str) or a non-empty "
                    f"tuple or list of str, got {sequence[t]!r}"
                ) from exc
            n = len(values)
            sequence_features = []
            for j, own in enumerate(values):
                token_features = {"bias": 1.0}
                token_features.update(zip(key_sets[len(own)][0], own))
                for offset in before:
                    if j + offset >= 0:
                        other = values[j + offset]
                        token_features.update(zip(key_sets[len(other)][offset], other))
                if bos_eos and j == 0:
                    token_features["BOS"] = True
                for offset in after:
                    if j + offset < n:
                        other = values[j + offset]
                        token_features.update(zip(key_sets[len(other)][offset], other))
                if bos_eos and j == n - 1:
                    token_features["EOS"] = True
                sequence_features.append(token_features)
            features.append(sequence_features)
        return features

    def _check_params(self):
        window = self.window
        if not isinstance(window, numbers.Integral) or isinstance(window, bool) or window < 0:
            raise ValueError(f"window must be a non-negative int, got {window!r}")
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
        return (int(window), *lengths)

    def _token_values_function(self, suffixes, prefixes, column_prefixes):
        """A function giving a token's own feature values, in `_WindowKeys` order."""
        word_shape = self.word_shape
        has_digit = _HAS_DIGIT

        def token_values(token):
            if type(token) is str:
                word, columns = token, ()
            elif type(token) is tuple or type(token) is list:
                "".join(token)  # raises TypeError unless every column is a str
                word, columns = token[0], token[1:]
            else:
                raise TypeError
            values = [word.lower()]
            values += [word[-k:] for k in suffixes]
            values += [word[:k] for k in prefixes]
            if word_shape:
                values += (
                    word.isupper(),
                    word.istitle(),
                    word.isdigit(),
                    "-" in word,
                    has_digit(word) is not None,
                )
            for column in columns:
                values.append(column)
                values += [column[:k] for k in column_prefixes]
            return values

        return token_values


class _WindowKeys(dict):
    """Feature names of `WindowFeatures`, built once per number of values in a token.

    ``keys[n_values][offset]`` is the tuple of names for a token's values seen from
    ``offset`` (0: the token itself; otherwise names prefixed by ``"-1:"``, ``"+2:"``, ...).
    """

    def __init__(self, window, suffixes, prefixes, word_shape, column_prefixes):
        super().__init__()
        word = ["word.lower"]
        word += [f"word[-{k}:]" for k in suffixes]
        word += [f"word[:{k}]" for k in prefixes]
        if word_shape:
            word += [
                "word.isupper",
                "word.istitle",
                "word.isdigit",
                "word.has_hyphen",
                "word.has_digit",
            ]
        self._word = word
        self._column_prefixes = column_prefixes
        self._offsets = [*range(-window, 0), *range(1, window + 1)]

    def __missing__(self, n_values):
        per_column = 1 + len(self._column_prefixes)
        n_columns = (n_values - len(self._word)) // per_column
        names = list(self._word)
        for c in range(1, n_columns + 1):
            names.append(f"col{c}")
            names += [f"col{c}[:{k}]" for k in self._column_prefixes]
        by_offset = {0: tuple(names)}
        for offset in self._offsets:
            by_offset[offset] = tuple(f"{offset:+d}:{name}" for name in names)
        self[n_values] = by_offset
        return by_offset

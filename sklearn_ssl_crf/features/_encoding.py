"""Feature dicts to attribute columns: python-crfsuite's naming of nested and list values,
the column cache, and the checks of a corpus of dicts.

This runs inside ``fit`` and ``predict`` of every estimator given dicts, so the inner loop
is written for speed: one pass over the tokens, locals bound to methods, the common value
types tested first, and NumPy only on whole arrays at the end.
"""

import numbers
from array import array
from collections import defaultdict
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from ..utils import MAX_FEATURE_VALUE, feature_value_error

# Containers whose elements are attribute names (python-crfsuite: "string_key" items).
_NAME_COLLECTIONS = (list, tuple, set, frozenset)


def _encode(X, cache, first=0, name="X", stored_zeros=True):
    """Featurise ``X`` into a CSR matrix and the sequence offsets.

    Columns come from ``cache`` (a `ColumnCache`); the matrix has as many columns as its
    vocabulary once all of ``X`` is read. Error messages number the sequences from ``first``
    and, unless ``name`` is X, name their source. ``stored_zeros`` False stores no entry of
    value 0 (False values; the vocabulary is the same), which only training's pairing of
    attributes with labels needs: a third fewer entries on the sklearn-crfsuite tutorial's
    features.
    """
    _check_corpus(X)
    # Column of every stored attribute, token by token; -1 marks entries to drop, and
    # -2 - column an entry of value 0 (False: one append, as for True). Other weights are
    # recorded with their positions (they are almost always 1).
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
    zero_columns = cache.zero_columns
    zero_column = cache.zero_column
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
                            else:
                                # python-crfsuite's False: the attribute with value 0 (in
                                # the vocabulary even where the entry is not stored).
                                try:
                                    column = zero_columns[key]
                                except KeyError:
                                    column = zero_column(key)
                                if stored_zeros:
                                    add(column)
                        elif kind is float:
                            if value != 1.0:
                                if not -MAX_FEATURE_VALUE <= value <= MAX_FEATURE_VALUE:
                                    raise ValueError(feature_value_error(key, value))
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
    if not stored_zeros:
        matrix.eliminate_zeros()  # numbers 0, and False values of nested dicts
    return matrix, np.frombuffer(offsets, dtype=np.int64)


def _growing_cache(vocabulary):
    """A `ColumnCache` that gives each attribute not in ``vocabulary`` (name -> column,
    columns 0 .. len - 1) the next free column."""
    # The vocabulary grows in order of first appearance, the same whether the sequences
    # come at once or in blocks, without a test in the inner loop.
    grown = defaultdict()
    grown.update(vocabulary)
    grown.default_factory = grown.__len__
    return ColumnCache(grown, grow=True)


class ColumnCache:
    """Columns of attributes, by token-dict key (bool and float values) and by key and str
    value.

    ``key_columns[key]``, ``key_value_columns[key][value]`` and ``zero_columns[key]``
    (``-2 - column``: the attribute with value 0, for False values) are filled on first
    use by `key_column`, `key_value_column` and `zero_column`, which also check the key.
    They hold only attributes of the vocabulary, so they stay bounded however much unseen
    data is transformed; the cache built while fitting is kept for transform, where most
    lookups then hit.

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
        self.zero_columns = {}

    def _known_column(self, name):
        return self.vocabulary.get(name, -1)

    def key_column(self, key):
        column = self.column_of(_key(key))
        if column >= 0:
            self.key_columns[key] = column
        return column

    def zero_column(self, key):
        column = self.key_column(key)
        if column < 0:
            return column
        self.zero_columns[key] = -2 - column
        return -2 - column

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
        self.zero_columns = {key: -2 - new[-2 - marker]
                             for key, marker in self.zero_columns.items()
                             if new[-2 - marker] >= 0}


def _assemble(indices, indptr, positions, weights, n_columns):
    """Build the canonical CSR matrix from the encoder's buffers."""
    indices = np.frombuffer(indices, dtype=np.int64)
    indptr = np.frombuffer(indptr, dtype=np.int64)
    data = np.ones(indices.size)
    if positions:
        data[np.asarray(positions, dtype=np.intp)] = weights
    zeros = np.flatnonzero(indices <= -2)
    if zeros.size:
        indices[zeros] = -2 - indices[zeros]
        data[zeros] = 0.0
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
        yield name, 1.0 if value else 0.0
    elif isinstance(value, numbers.Real):
        # Compared before float(): an int too large for a float is too large here.
        if not abs(value) <= MAX_FEATURE_VALUE:
            raise ValueError(feature_value_error(name, value))
        yield name, float(value)
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

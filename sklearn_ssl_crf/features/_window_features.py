"""`WindowFeatures`: the usual feature dicts of plain tokens (the word, its suffixes and
shape, extra columns such as part-of-speech tags, word clusters), and the same for the
neighbours in a window; text files are read lazily.
"""

import math
import numbers
import os
import warnings
from itertools import chain
from operator import itemgetter

from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..datasets import iter_text
from ..utils import KeywordOnlyParameters, SequenceTagsMixin
from ._encoding import _check_corpus, _check_sequence
from ._word_clusters import WordClusters


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


_DIGITS = frozenset("0123456789")


def _first_token_columns(X):
    """The columns of the first token of X, a list of token lists (1 for a word), or None
    for anything else (an iterator would be read up by looking; transform says what is
    wrong with other input)."""
    if not isinstance(X, (list, tuple)):
        return None
    for sequence in X:
        if isinstance(sequence, (list, tuple)):
            for token in sequence:
                if isinstance(token, (tuple, list)):
                    return len(token)
                return 1 if isinstance(token, str) else None
    return None


def _warn_other_columns(fitted, sequence, i):
    token = next(iter(sequence))
    columns = 1 if isinstance(token, str) else len(token)
    warnings.warn(
        f"WindowFeatures was fitted on tokens of {fitted} column(s) but sequence {i} has "
        f"tokens of {columns}: a model would see other features than it was trained on. "
        "Give every input the same columns (with raw text beside (word, tag) tokens, train "
        "on the words alone)", UserWarning, stacklevel=4)


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


class WindowFeatures(KeywordOnlyParameters, SequenceTagsMixin, TransformerMixin, BaseEstimator):
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
    token_columns_ : int or None
        The number of columns of the first token ``fit`` saw (1: words); None when ``fit``
        was given no list of token lists (an iterator, a text file) or no token.

    See Also
    --------
    SequenceVectorizer : Turns the feature dicts into a `SequenceMatrix`.
    WordClusters : Word clusters learned from unlabelled sentences.

    Notes
    -----
    Without ``clusters`` ``transform`` needs no ``fit``, which only checks the parameters
    and notes the number of columns of the first token (``token_columns_``): ``transform``
    warns of tokens with another number, whose features a model trained on the first kind
    would not know (raw words beside ``(word, tag)`` tokens). In a
    `~sklearn.pipeline.Pipeline` whose ``X`` holds the unlabelled sentences too (their
    labels None), the clusters are learned from all of them. All tokens of a sequence must
    have the same number of columns. False flags are kept in the dicts (as in the
    sklearn-crfsuite tutorial) so that every token has the same keys; `SequenceVectorizer`
    stores them as the value 0, as python-crfsuite does.

    Examples
    --------
    >>> from sklearn_ssl_crf.features import WindowFeatures
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
        *,
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
            The fitted transformer.
        """
        self._check_params()
        self.token_columns_ = _first_token_columns(X)
        if self.clusters is None:
            return self
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
        # Tokens of another number of columns than fit saw make other features (the CLI
        # refuses them): said once, at the first such sequence.
        fitted_values = None if getattr(self, "token_columns_", None) is None else (
            len(token_values.word_names)
            + (self.token_columns_ - 1) * len(token_values.column_names))

        def sequences():
            nonlocal fitted_values
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
                if fitted_values is not None and m != fitted_values:
                    _warn_other_columns(self.token_columns_, sequence, i)
                    fitted_values = None
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

"""Word clusters learned from unlabelled token sequences.

`WordClusters` gives every word type of a corpus a dense vector and cluster ids at several
granularities, learned from the words around it (distributional similarity): counts of
(word, context word at offset d) over a window, positive pointwise mutual information, a
randomized truncated SVD, and mini-batch k-means on the unit-length vectors. Words that
occur in the same contexts (gene names, verbs in the past tense, units) share clusters, so a
tagger trained on a few hundred labelled sentences can generalise from a labelled word to the
unlabelled words of its cluster. Optionally the finest clusters are joined into a binary tree
(Ward linkage of their centroids), whose bit-string prefixes give nested clusters in the
style of Brown clusters' paths.
"""

import numbers
import time
from collections import Counter
from itertools import repeat

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import linkage
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.cluster import MiniBatchKMeans
from sklearn.utils._param_validation import Interval
from sklearn.utils.extmath import randomized_svd
from sklearn.utils.validation import check_is_fitted

from ..utils import KeywordOnlyParameters, SequenceTagsMixin, fit_random_state

# Tokens per block of the co-occurrence count: bounds the temporary arrays of `fit`.
_BLOCK_TOKENS = 1 << 18
# Context distribution smoothing (Levy, Goldberg and Dagan 2015): raising the context counts
# to this power before normalising keeps rare contexts from dominating the PMI.
_CONTEXT_SMOOTHING = 0.75


class WordClusters(KeywordOnlyParameters, SequenceTagsMixin, TransformerMixin, BaseEstimator):
    """Distributional word clusters from unlabelled token sequences.

    Fitted on raw token sequences (labels are not used, so fit on the labelled and the
    unlabelled sentences together), it gives each word type seen at least ``min_count``
    times:

    - a cluster id for each number of clusters in ``n_clusters`` (features
      ``"cluster64"``, ``"cluster256"``, ...);
    - with ``path_lengths``, the prefixes of its cluster's bit-string path in a binary tree
      over the finest clusters (features ``"path4"``, ``"path8"``, ...);
    - a dense unit-length vector, ``vectors_``.

    Words not in the vocabulary get no cluster feature. Give it to
    ``WindowFeatures(clusters=...)`` to add the cluster features of each token and of its
    neighbours to the standard features.

    Parameters
    ----------
    n_clusters : tuple of int, default=(64, 256, 1024)
        Numbers of clusters, one granularity each (capped at the vocabulary size).
    n_components : int, default=50
        Dimension of the word vectors (capped below the size of the count matrix).
    context_window : int, default=2
        A word's contexts are the words at offsets ``-context_window .. -1`` and
        ``1 .. context_window``, each offset a separate set of contexts; positions beyond the
        sentence are a start or end marker.
    max_contexts : int, default=10000
        Context words kept: the most frequent ones. Rarer words count as one "rare word"
        context, so memory is bounded by the vocabulary times the contexts kept.
    min_count : int, default=2
        Words seen fewer times get no vector and no cluster: the vector of a word seen once
        rests on a handful of contexts, too few to place it.
    lowercase : bool, default=True
        Whether words are lowercased first (at ``fit`` and at lookup).
    path_lengths : tuple of int, default=()
        Lengths of the path prefixes used as features (empty: no path features).
    random_state : int, RandomState instance or None, default=None
        Seeds the SVD and k-means: the same seed gives the same clusters. None is a fixed
        seed: every fit on the same text gives the same clusters.
    verbose : int, default=0
        Print the steps and their time.

    Attributes
    ----------
    vocabulary_ : dict
        Word (lowercased when ``lowercase``) to row of ``vectors_`` and ``labels_``; rows
        are in order of decreasing count.
    counts_ : ndarray of shape (n_words,)
        Occurrences of each word in the fitted sequences.
    vectors_ : ndarray of shape (n_words, n_dimensions), float32
        Unit-length word vectors; ``n_dimensions`` is ``n_components_``.
    labels_ : ndarray of shape (n_words, len(n_clusters))
        Cluster id of each word at each granularity.
    n_clusters_ : tuple of int
        Numbers of clusters after capping at the vocabulary size.
    paths_ : ndarray of str of shape (n_clusters_[-1],) or None
        Bit-string path of each finest cluster in the tree over them (None without
        ``path_lengths``).
    n_components_ : int
        Dimension of the word vectors.
    n_contexts_ : int
        Number of columns of the count matrix.

    See Also
    --------
    WindowFeatures : Uses the clusters as token features.

    Notes
    -----
    Fitting takes two passes over the sequences (counting the words, then their contexts,
    in blocks), so ``X`` must be a sequence, not a one-shot iterator.

    Examples
    --------
    >>> from sklearn_ssl_crf import WordClusters
    >>> sentences = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"],
    ...              ["a", "dog", "ran"]] * 5
    >>> clusters = WordClusters(n_clusters=(2, 4), n_components=2, random_state=0)
    >>> clusters = clusters.fit(sentences)
    >>> clusters.get_feature_names_out().tolist()
    ['cluster2', 'cluster4']
    >>> cat, dog, unknown = clusters.transform([["cat", "dog", "axolotl"]])[0]
    >>> cat == dog, unknown
    (True, {})
    """

    _token_kinds = ("string",)

    _parameter_constraints = {
        "n_clusters": ["array-like"],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "context_window": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_contexts": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_count": [Interval(numbers.Integral, 1, None, closed="left")],
        "lowercase": ["boolean"],
        "path_lengths": ["array-like"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        n_clusters=(64, 256, 1024),
        n_components=50,
        context_window=2,
        max_contexts=10000,
        min_count=2,
        lowercase=True,
        path_lengths=(),
        random_state=None,
        verbose=0,
    ):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.context_window = context_window
        self.max_contexts = max_contexts
        self.min_count = min_count
        self.lowercase = lowercase
        self.path_lengths = path_lengths
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the vectors and clusters of the words of ``X``.

        Parameters
        ----------
        X : sequence of sequences of tokens
            A token is a word (str) or a tuple or list whose first element is the word
            (the format of `WindowFeatures`).
        y : None
            Ignored: the clusters use no labels.

        Returns
        -------
        self : WordClusters
            The fitted transformer.
        """
        n_clusters = _positive_ints(self.n_clusters, "n_clusters")
        path_lengths = _positive_ints(self.path_lengths, "path_lengths", allow_empty=True)
        if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
            raise TypeError(f"X must be a list of sequences of tokens, got {type(X).__name__}")
        if iter(X) is X:
            raise TypeError(
                "X must be a sequence (fitting reads it twice), not a one-shot iterator; "
                "pass list(X)"
            )
        random_state = fit_random_state(self.random_state)
        timer = _Timer(self.verbose)

        counts = Counter()
        for i, sequence in enumerate(X):
            counts.update(self._words(sequence, i))
        kept = sorted(
            ((n, word) for word, n in counts.items() if n >= self.min_count),
            key=lambda item: (-item[0], item[1]),
        )
        if not kept:
            raise ValueError(
                f"X has no word seen at least min_count={self.min_count} times; "
                "WordClusters needs a non-empty corpus"
            )
        self.vocabulary_ = {word: row for row, (_, word) in enumerate(kept)}
        self.counts_ = np.array([n for n, _ in kept], dtype=np.int64)
        timer.report(f"vocabulary of {len(kept):,} words")

        cooccurrences = self._count_contexts(X)
        self.n_contexts_ = cooccurrences.shape[1]
        timer.report(f"counts: {cooccurrences.nnz:,} distinct (word, context) pairs")
        ppmi = _positive_pmi(cooccurrences)
        self.vectors_ = self._embed(ppmi, random_state)
        timer.report(f"SVD to {self.n_components_} dimensions")

        n_words = len(kept)
        self.n_clusters_ = tuple(min(k, n_words) for k in n_clusters)
        labels, centroids = [], None
        for k in self.n_clusters_:
            kmeans = MiniBatchKMeans(
                n_clusters=k,
                n_init=3,
                batch_size=4096,
                random_state=random_state.randint(np.iinfo(np.int32).max),
            ).fit(self.vectors_)
            labels.append(kmeans.labels_)
            centroids = kmeans.cluster_centers_
            timer.report(f"k-means with {k} clusters")
        self.labels_ = np.column_stack(labels).astype(np.int32)
        # The tree joins the clusters of the last granularity given.
        self.paths_ = _tree_paths(centroids) if path_lengths else None
        self._path_lengths = path_lengths
        self._feature_values = {}
        return self

    def _words(self, sequence, i):
        """The words of sequence ``i`` (lowercased when ``lowercase``)."""
        if isinstance(sequence, (str, bytes)) or not hasattr(sequence, "__iter__"):
            raise TypeError(
                f"sequence {i} is a {type(sequence).__name__}, not a list of tokens"
            )
        words = []
        for t, token in enumerate(sequence):
            word = token if isinstance(token, str) else _first_column(token, i, t)
            words.append(word.lower() if self.lowercase else word)
        return words

    def _count_contexts(self, X):
        """Sparse counts of (word, context) over ``X``, built block by block."""
        n_words = len(self.vocabulary_)
        # Rows are in order of decreasing count, so the contexts kept are the first rows;
        # three more contexts stand for the sentence start, its end and a rarer word.
        n_kept = min(self.max_contexts, n_words)
        start, end, rare = n_kept, n_kept + 1, n_kept + 2
        per_offset = n_kept + 3
        offsets = [d for d in range(-self.context_window, self.context_window + 1) if d]
        shape = (n_words, per_offset * len(offsets))
        total = sp.csr_matrix(shape, dtype=np.float64)
        lookup = self.vocabulary_.get

        def count_block(words, lengths):
            rows = np.fromiter(map(lookup, words, repeat(-1)), dtype=np.int64,
                               count=len(words))
            lengths = np.asarray(lengths)
            length_of = np.repeat(lengths, lengths)
            position = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            context = np.where((rows >= 0) & (rows < n_kept), rows, rare)
            known = rows >= 0
            block_rows, block_cols = [], []
            for k, d in enumerate(offsets):
                target = position + d
                inside = (target >= 0) & (target < length_of)
                shifted = context[np.clip(np.arange(len(rows)) + d, 0, len(rows) - 1)]
                column = np.where(inside, shifted, start if d < 0 else end)
                block_rows.append(rows[known])
                block_cols.append(k * per_offset + column[known])
            rows_, cols_ = np.concatenate(block_rows), np.concatenate(block_cols)
            return sp.csr_matrix((np.ones(len(rows_)), (rows_, cols_)), shape=shape)

        words, lengths = [], []
        for i, sequence in enumerate(X):
            sequence_words = self._words(sequence, i)
            if not sequence_words:
                continue
            words.extend(sequence_words)
            lengths.append(len(sequence_words))
            if len(words) >= _BLOCK_TOKENS:
                total = total + count_block(words, lengths)
                words, lengths = [], []
        if words:
            total = total + count_block(words, lengths)
        return total

    def _embed(self, ppmi, random_state):
        """Unit-length rows of the truncated SVD of ``ppmi``, U sqrt(S)."""
        limit = min(ppmi.shape) - 1
        self.n_components_ = max(1, min(self.n_components, limit))
        if limit < 1:
            left, singular = ppmi.toarray(), np.ones(1)
        else:
            left, singular, _ = randomized_svd(
                ppmi, self.n_components_, random_state=random_state
            )
        vectors = (left * np.sqrt(singular)).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # A word whose contexts all have PMI <= 0 has a zero vector; it stays at zero.
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        return vectors

    def get_feature_names_out(self, input_features=None):
        """Get the names of the cluster features: ``"cluster<k>"`` then ``"path<length>"``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored: the names do not depend on the input.

        Returns
        -------
        names : ndarray of str
            One ``"cluster<k>"`` per number of clusters, then one ``"path<length>"`` per
            path length.
        """
        check_is_fitted(self, "labels_")
        names = [f"cluster{k}" for k in self.n_clusters_]
        names += [f"path{length}" for length in self._path_lengths]
        return np.asarray(names, dtype=object)

    def word_features(self, word):
        """Get the cluster feature values of a word.

        Parameters
        ----------
        word : str
            The word (lowercased first when ``lowercase``).

        Returns
        -------
        values : tuple
            One str per name of `get_feature_names_out`; every value None when the word is
            not in the vocabulary.
        """
        try:
            return self._feature_values[word]
        except (KeyError, AttributeError):  # not seen yet, or not fitted
            check_is_fitted(self, "labels_")
        row = self.vocabulary_.get(word.lower() if self.lowercase else word)
        if row is None:
            values = (None,) * (len(self.n_clusters_) + len(self._path_lengths))
        else:
            values = tuple(str(label) for label in self.labels_[row])
            if self._path_lengths:
                path = self.paths_[self.labels_[row, -1]]
                values += tuple(path[:length] for length in self._path_lengths)
        self._feature_values[word] = values
        return values

    def word_vector(self, word):
        """Get the unit-length vector of a word.

        Parameters
        ----------
        word : str
            The word (lowercased first when ``lowercase``).

        Returns
        -------
        vector : ndarray of shape (n_dimensions,) or None
            The word's row of ``vectors_`` (``n_dimensions`` is ``n_components_``); None
            when the word is not in the vocabulary.
        """
        check_is_fitted(self, "vectors_")
        row = self.vocabulary_.get(word.lower() if self.lowercase else word)
        return None if row is None else self.vectors_[row]

    def transform(self, X):
        """The cluster features of every token.

        Parameters
        ----------
        X : iterable of sequences of tokens
            A token is a word (str) or a tuple or list whose first element is the word.

        Returns
        -------
        features : list of list of dict
            Per token, ``{name: value}`` for each name of `get_feature_names_out`; empty for
            words outside the vocabulary.
        """
        names = self.get_feature_names_out()
        features = []
        for i, sequence in enumerate(X):
            if isinstance(sequence, (str, bytes)) or not hasattr(sequence, "__iter__"):
                raise TypeError(
                    f"sequence {i} is a {type(sequence).__name__}, not a list of tokens"
                )
            features.append([
                {name: value for name, value in zip(names, self.word_features(
                    token if isinstance(token, str) else _first_column(token, i, t)))
                 if value is not None}
                for t, token in enumerate(sequence)
            ])
        return features

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_feature_values", None)  # a cache, rebuilt on use
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "labels_" in state:
            self._feature_values = {}


def _first_column(token, i, t):
    if isinstance(token, (tuple, list)) and token and isinstance(token[0], str):
        return token[0]
    raise TypeError(
        f"sequence {i}, token {t}: a token must be a word (str) or a non-empty tuple or "
        f"list whose first element is the word, got {token!r}"
    )


def _positive_ints(value, name, allow_empty=False):
    try:
        values = tuple(value)
    except TypeError:
        values = (value,)
    if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k > 0
               for k in values) or (not values and not allow_empty):
        raise ValueError(f"{name} must be a tuple of positive ints, got {value!r}")
    return tuple(int(k) for k in values)


def _positive_pmi(counts):
    """Positive PMI of a (word x context) count matrix, with smoothed context counts."""
    counts = counts.tocsr()
    counts.sum_duplicates()
    row_totals = np.asarray(counts.sum(axis=1)).ravel()
    smoothed = np.asarray(counts.sum(axis=0)).ravel() ** _CONTEXT_SMOOTHING
    context_probability = smoothed / smoothed.sum()
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    pmi = np.log(counts.data / (row_totals[rows] * context_probability[counts.indices]))
    ppmi = sp.csr_matrix((np.maximum(pmi, 0.0), counts.indices, counts.indptr),
                         shape=counts.shape)
    ppmi.eliminate_zeros()
    return ppmi


def _tree_paths(centroids):
    """Bit-string path of each centroid in the Ward tree over them ('' for a single one)."""
    n = len(centroids)
    if n == 1:
        return np.array([""], dtype=object)
    merges = linkage(centroids, method="ward")
    paths = np.empty(n, dtype=object)
    # Node n + m is merge m; walk down from the root (the last merge).
    stack = [(2 * n - 2, "")]
    while stack:
        node, path = stack.pop()
        if node < n:
            paths[node] = path
            continue
        left, right = merges[node - n, :2].astype(int)
        stack.append((left, path + "0"))
        stack.append((right, path + "1"))
    return paths


class _Timer:
    """Prints each step of a fit with the time since the start, when verbose."""

    def __init__(self, verbose):
        self._started = time.perf_counter()
        self._verbose = verbose

    def report(self, what):
        if self._verbose:
            elapsed = time.perf_counter() - self._started
            print(f"WordClusters: {what} ({elapsed:.1f} s)", flush=True)

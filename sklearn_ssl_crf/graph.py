"""Similarity graphs over tokens for graph-based semi-supervised learning.

A `SimilarityGraph` is a sparse symmetric non-negative weight matrix over vertices and the
vertex of every token of the sequences it was built for. Vertices can be token types
(trigram types of text, He et al. 2013 §4.2: many tokens share a vertex) or single tokens
(one vertex per letter image, §4.3).

`trigram_graph` and `knn_graph` build the two kinds of graph as mutual k-nearest-neighbour
graphs (§4.1); `resolve_graph` turns an estimator's ``graph`` parameter into a graph aligned
with its training tokens. Both builders share one similarity search: rows of unit vectors are
compared a block of rows at a time and only the k best of each row are kept, so memory stays
about ``n_vertices * k`` plus one block, never ``n_vertices ** 2``.
"""

import numbers
import re
from collections.abc import Mapping
from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize
from sklearn.utils.extmath import safe_sparse_dot

from ._validation import is_matrix_input, matrices_to_sequence_matrix
from .sequences import SequenceMatrix

__all__ = ["SimilarityGraph", "knn_graph", "resolve_graph", "trigram_graph"]

class SimilarityGraph:
    """A weighted similarity graph and the vertex of every token of some sequences.

    Parameters
    ----------
    weights : sparse matrix or array-like of shape (n_vertices, n_vertices)
        Edge weights: symmetric, non-negative and finite, with a zero diagonal. Copied.
    token_vertices : array-like of int of shape (n_tokens,)
        The vertex of every token of the sequences the graph describes, sequences laid end
        to end in the order they are given to ``fit``; -1 for a token without a vertex.
    vertex_names : sequence of length n_vertices, default=None
        What each vertex stands for (a trigram, a token position, ...), for inspection.

    Attributes
    ----------
    weights : scipy.sparse.csr_matrix of float64
    token_vertices : ndarray of int64
    vertex_names : list or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.graph import SimilarityGraph
    >>> weights = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 1.0], [0.0, 1.0, 0.0]])
    >>> graph = SimilarityGraph(weights, token_vertices=[0, 1, -1, 2, 1])
    >>> graph.n_vertices, graph.n_tokens
    (3, 5)
    >>> graph.neighbors(1)
    ([2, 0], [1.0, 0.5])
    """

    def __init__(self, weights, token_vertices, vertex_names=None):
        self.weights = _check_weights(weights)
        self.token_vertices = _check_token_vertices(token_vertices, self.weights.shape[0])
        if vertex_names is not None:
            vertex_names = list(vertex_names)
            if len(vertex_names) != self.weights.shape[0]:
                raise ValueError(f"{len(vertex_names)} vertex names for "
                                 f"{self.weights.shape[0]} vertices")
        self.vertex_names = vertex_names

    @property
    def n_vertices(self):
        return self.weights.shape[0]

    @property
    def n_tokens(self):
        return self.token_vertices.size

    def neighbors(self, vertex):
        """The neighbours of a vertex and their edge weights, heaviest first.

        Returns
        -------
        vertices : list of int
        weights : list of float
        """
        if not 0 <= vertex < self.n_vertices:
            raise ValueError(f"vertex {vertex} is not in 0..{self.n_vertices - 1}")
        row = self.weights[vertex]
        order = np.argsort(-row.data, kind="stable")
        return row.indices[order].tolist(), row.data[order].tolist()

    def check_n_tokens(self, n_tokens, name="X"):
        """Raise a ValueError unless the graph describes ``n_tokens`` tokens."""
        if self.n_tokens != n_tokens:
            raise ValueError(
                f"the graph maps {self.n_tokens} tokens to vertices, but {name} has "
                f"{n_tokens} tokens: build it for the same sequences, in the same order"
            )

    def __repr__(self):
        return (f"<SimilarityGraph of {self.n_vertices} vertices, {self.weights.nnz // 2} "
                f"edges, {self.n_tokens} tokens>")


def _check_weights(weights):
    if sp.issparse(weights):
        weights = sp.csr_matrix(weights, dtype=np.float64, copy=True)
    else:
        try:
            dense = np.array(weights, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError("weights must be a scipy.sparse matrix or a 2-d array of numbers, "
                            f"got {type(weights).__name__}") from error
        if dense.ndim != 2:
            raise ValueError(f"weights must be 2-d (vertices x vertices), got {dense.ndim}-d")
        weights = sp.csr_matrix(dense)
    n_rows, n_columns = weights.shape
    if n_rows != n_columns:
        raise ValueError(f"weights must be square (vertices x vertices), got {weights.shape}")
    if not np.isfinite(weights.data).all():
        raise ValueError("weights contain NaN or infinite values")
    if (weights.data < 0).any():
        raise ValueError("weights must be non-negative (similarities, not distances)")
    if weights.diagonal().any():
        raise ValueError("weights must have a zero diagonal (no self-loops)")
    weights.eliminate_zeros()
    weights.sum_duplicates()
    asymmetry = abs(weights - weights.T)
    if asymmetry.nnz and asymmetry.max() > 1e-12 * max(weights.max(), 1e-300):
        raise ValueError("weights must be symmetric (w[a, b] == w[b, a])")
    return weights


def _check_token_vertices(token_vertices, n_vertices):
    vertices = np.asarray(token_vertices)
    if vertices.ndim != 1:
        raise ValueError(f"token_vertices must be 1-d (one vertex per token), got "
                         f"{vertices.ndim}-d")
    if vertices.size and not np.issubdtype(vertices.dtype, np.integer):
        raise TypeError(f"token_vertices must be integers, got dtype {vertices.dtype}")
    vertices = vertices.astype(np.int64)
    if vertices.size and (vertices.min() < -1 or vertices.max() >= n_vertices):
        raise ValueError(f"token_vertices must be in -1..{n_vertices - 1} (-1: no vertex)")
    return vertices


# --- graph builders ---------------------------------------------------------------------

# A number: digits with an optional sign and separators ("-2", "1,000.5", "3/4", "10:30",
# "1-800"). Words mixing digits and letters ("1990s", "3rd", "f16") keep their form: their
# letters carry part-of-speech evidence (a plural, an ordinal, a name).
_NUMBER = re.compile(r"[+-]?[\d.,/:-]*\d[\d.,/:-]*")
_NUMBER_WORD = "<num>"
# Words without a letter or digit are punctuation: their tokens get no vertex.
_ALPHANUMERIC = re.compile(r"[^\W_]")
_START, _END = "<s>", "</s>"

# Features of an occurrence of a trigram type (He et al. 2013 §4.2), as positions in its
# 5-gram window (w0, w1, w2, w3, w4) around the centre word w2.
_TRIGRAM_TEMPLATES = {"w12": (1, 2), "w13": (1, 3), "w23": (2, 3), "w2": (2,)}
_CONTEXT_TEMPLATES = {
    "w0134": (0, 1, 3, 4), "w012": (0, 1, 2), "w023": (0, 2, 3), "w024": (0, 2, 4),
    "w124": (1, 2, 4), "w234": (2, 3, 4), "w01": (0, 1), "w02": (0, 2), "w24": (2, 4),
    "w34": (3, 4),
}
# suffix(w3)w2 and suffix(w1)w2: the window position whose suffix joins the centre word.
_SUFFIX_TEMPLATES = {"suffix(w3)w2": 3, "suffix(w1)w2": 1}

# Above this fraction of nonzeros, dense arithmetic beats sparse: feature rows are compared
# with BLAS, and a block of similarities is searched with a partition per row rather than
# by sorting its nonzeros.
_DENSE_ENOUGH = 1 / 16

# Buckets of the histogram that narrows a sparse row's candidates before the exact sort.
_N_BUCKETS = 1024

_NEEDS_WORDS = ("trigram_graph needs words: pass feature dicts or tokens (str, or tuples whose "
                "first item is the word), not feature matrices")


def trigram_graph(X, n_neighbors=60, word_key="word.lower", suffixes=None,
                  max_block_entries=2**22):
    """Mutual k-nearest-neighbour graph over the trigram types of text (He et al. 2013 §4.2).

    Every token whose word is not punctuation stands for its trigram type
    ``(w[t-1], w[t], w[t+1])``, and all tokens of a type share its vertex. Types are compared
    by the cosine of their PMI-weighted feature vectors; two types are joined when each is
    among the other's ``n_neighbors`` most similar types.

    Parameters
    ----------
    X : list of sequences
        Each sequence a list of tokens, all of one kind: feature dicts (the word is
        ``token[word_key]``, used as is), or raw tokens: a str, or a tuple or list whose first
        item is the word (lower-cased here).
    n_neighbors : int, default=60
        The k of the mutual k-NN criterion (the paper's value for part-of-speech tagging).
    word_key : str, default="word.lower"
        The key of the word in feature dicts (``WindowFeatures`` writes ``"word.lower"``).
    suffixes : iterable of str, default=None
        Suffixes for the features suffix(w3)w2 and suffix(w1)w2, where suffix(w) is the
        longest listed suffix ``w`` ends with (no feature when it ends with none). None: no
        suffix features.
    max_block_entries : int, default=2**22
        About how many similarities are held at once: a block of rows is compared with all
        vertices, and the block is as large as a bound on its nonzero similarities allows
        (the feature rows are sparse; at least one row).

    Returns
    -------
    graph : SimilarityGraph
        Vertices numbered in order of first appearance; ``vertex_names`` are the trigrams as
        tuples of three words; punctuation-centred tokens have vertex -1.

    Notes
    -----
    Words are normalised first: a word of digits with an optional sign and the separators
    ``. , / : -`` (``"-2"``, ``"1,000.5"``, ``"3/4"``) becomes ``"<num>"``; words mixing
    digits and letters (``"1990s"``, ``"3rd"``) are kept. A word without a letter or digit is
    punctuation. Sentence ends are padded with ``"<s>"`` and ``"</s>"``.

    An occurrence with 5-gram window ``(w0, w1, w2, w3, w4)`` has the trigram features
    w12, w13, w23, w2 (and suffix(w3)w2, suffix(w1)w2 with ``suffixes``) and the context
    features w0134, w012, w023, w024, w124, w234, w01, w02, w24, w34; features of different
    templates never match (w12 = (a, b) is not w23 = (a, b)). Feature f of type t has the
    value ``PMI(f, t) = log(#(f, t) * N / (#(f) * #(t)))``, counting the N occurrences that
    have a vertex. The paper writes the fraction without N; with N it is the standard PMI
    (a corpus repeated twice gives the same values). Rows are scaled to unit length, so
    similarities are dot products.

    Only positive similarities make edges; among equally similar candidates the lower vertex
    number is preferred. The weight of an edge is its cosine similarity.

    Examples
    --------
    >>> from sklearn_ssl_crf.graph import trigram_graph
    >>> X = [["The", "cat", "sat", "."], ["The", "dog", "sat", "."], ["A", "cat", "ran"]]
    >>> graph = trigram_graph(X, n_neighbors=1)
    >>> graph.token_vertices
    array([ 0,  1,  2, -1,  3,  4,  5, -1,  6,  7,  8])
    >>> graph.vertex_names[1], graph.vertex_names[4]
    (('the', 'cat', 'sat'), ('the', 'dog', 'sat'))
    >>> graph.neighbors(1)[0]
    [4]
    """
    n_neighbors = _check_positive_int(n_neighbors, "n_neighbors")
    max_block_entries = _check_positive_int(max_block_entries, "max_block_entries")
    if not isinstance(word_key, str):
        raise TypeError(f"word_key must be a str, got {type(word_key).__name__}")
    suffixes = _check_suffixes(suffixes)
    window, vertex_of_occurrence, token_vertices, words, names = _trigram_occurrences(
        X, word_key)
    if not names:  # all punctuation: no vertices
        return SimilarityGraph(sp.csr_matrix((0, 0)), token_vertices, names)
    features = _pmi_features(window, vertex_of_occurrence, len(names), words, suffixes)
    weights = _mutual_knn(features, n_neighbors, max_block_entries)
    return SimilarityGraph(weights, token_vertices, names)


def knn_graph(X, n_neighbors=20, min_similarity=None, self_weight=None,
              max_block_entries=2**22):
    """Mutual k-nearest-neighbour graph with one vertex per token (He et al. 2013 §4.3).

    Tokens are compared by the cosine ``s(u, v)`` of their feature rows (the paper's
    handwriting graph compares letter pixels, and then an Earth Mover's distance, left out
    here). Two tokens are joined when each is among the other's ``n_neighbors`` most similar
    tokens.

    Parameters
    ----------
    X : SequenceMatrix or list of (n_tokens, n_features) arrays or sparse matrices
        One feature row per token, the sequences one after the other.
    n_neighbors : int, default=20
        The k of the mutual k-NN criterion (the paper's value for handwriting).
    min_similarity : float in [-1, 1), default=None
        Only pairs with ``s(u, v) > min_similarity`` are candidates (the paper uses 0.3).
    self_weight : float in (0, 1], default=None
        alpha: rank candidates by ``alpha s(u, v) + (1 - alpha) (s(u_l, v_l) + s(u_r, v_r))``,
        where ``u_l`` and ``u_r`` are the tokens before and after ``u`` in its sequence (a
        missing neighbour contributes 0); the paper uses 0.8. None: by ``s(u, v)``.
    max_block_entries : int, default=2**22
        About how many similarities are held at once: a block of rows is compared with all
        tokens, ``block rows x n_tokens <= max_block_entries`` (at least one row; blocks of
        sparse rows are sized by a bound on their nonzero similarities instead).

    Returns
    -------
    graph : SimilarityGraph
        Vertex ``i`` is token ``i`` (``token_vertices = arange(n_tokens)``); the weight of an
        edge is the (mixed) similarity that ranked it.

    Notes
    -----
    The mixed similarity is ``alpha s(u, v)`` plus the dot product of the neighbour rows
    ``[sqrt(1 - alpha) F_left, sqrt(1 - alpha) F_right]``, where ``F_left`` / ``F_right`` hold
    the unit-length rows of each token's neighbours (zero where there is none). It costs as
    much as one product of the augmented rows ``[sqrt(alpha) F, sqrt(1 - alpha) F_left,
    sqrt(1 - alpha) F_right]``, and yields ``s(u, v)`` for ``min_similarity`` on the way. A
    token whose own row is all zeros has no
    edges. Only positive similarities make edges; among equally similar candidates the lower
    token number is preferred.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.graph import knn_graph
    >>> words = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.9, 0.1], [0.1, 0.9]])]
    >>> graph = knn_graph(words, n_neighbors=1)
    >>> graph.token_vertices
    array([0, 1, 2, 3])
    >>> vertices, weights = graph.neighbors(0)
    >>> vertices, [round(weight, 3) for weight in weights]
    ([2], [0.994])
    """
    n_neighbors = _check_positive_int(n_neighbors, "n_neighbors")
    max_block_entries = _check_positive_int(max_block_entries, "max_block_entries")
    if min_similarity is not None:
        min_similarity = _check_real(min_similarity, "min_similarity", "[-1, 1)",
                                     lambda value: -1 <= value < 1)
    if self_weight is not None:
        self_weight = _check_real(self_weight, "self_weight", "(0, 1]",
                                  lambda value: 0 < value <= 1)
    sequences = _feature_sequences(X)
    own = normalize(sequences.matrix)
    if self_weight is None or self_weight == 1:
        floor = 0.0 if min_similarity is None else max(min_similarity, 0.0)
        weights = _mutual_knn(own, n_neighbors, max_block_entries, min_similarity=floor)
    else:
        left, right = _neighbour_rows(own, sequences.offsets)
        context = np.sqrt(1 - self_weight) * sp.hstack([left, right], format="csr")
        # Without a row of its own a token has no similarity s, only its neighbours'.
        excluded = np.asarray(abs(own).sum(axis=1)).ravel() == 0
        weights = _mutual_knn(context, n_neighbors, max_block_entries, own_rows=own,
                              own_weight=self_weight, min_own_similarity=min_similarity,
                              excluded=excluded if excluded.any() else None)
    return SimilarityGraph(weights, np.arange(sequences.n_tokens))


def resolve_graph(graph, X, sequences, n_neighbors=None, word_key="word.lower"):
    """The similarity graph an estimator's ``graph`` parameter asks for, aligned with X.

    Parameters
    ----------
    graph : {"trigram", "knn"} or SimilarityGraph
        ``"trigram"``: `trigram_graph` of the words of X; ``"knn"``: `knn_graph` of the
        token rows of ``sequences``; a `SimilarityGraph`: used as given, after checking it
        maps as many tokens as X has.
    X : list of sequences
        The training input as the user gave it (labelled and unlabelled sequences together).
    sequences : SequenceMatrix
        The featurised X.
    n_neighbors : int, default=None
        The k of the mutual k-NN graph; None: 60 for ``"trigram"``, 20 for ``"knn"``.
    word_key : str, default="word.lower"
        The key of the word in feature dicts, for ``"trigram"``.

    Returns
    -------
    graph : SimilarityGraph

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.graph import resolve_graph
    >>> from sklearn_ssl_crf.sequences import SequenceMatrix
    >>> X = [["The", "cat", "sat"], ["The", "dog", "sat"]]
    >>> sequences = SequenceMatrix(sp.identity(6, format="csr"), [0, 3, 6])
    >>> resolve_graph("trigram", X, sequences)
    <SimilarityGraph of 6 vertices, 3 edges, 6 tokens>
    >>> resolve_graph("knn", X, sequences)
    <SimilarityGraph of 6 vertices, 0 edges, 6 tokens>
    """
    if isinstance(graph, SimilarityGraph):
        built = graph
    elif isinstance(graph, str) and graph == "trigram":
        if isinstance(X, SequenceMatrix) or is_matrix_input(X):
            raise TypeError("graph='trigram' needs words: pass feature dicts or tokens, or "
                            "pass a SimilarityGraph")
        built = trigram_graph(X, 60 if n_neighbors is None else n_neighbors,
                              word_key=word_key)
    elif isinstance(graph, str) and graph == "knn":
        built = knn_graph(sequences, 20 if n_neighbors is None else n_neighbors)
    else:
        error = ValueError if isinstance(graph, str) else TypeError
        raise error(f"graph must be 'trigram', 'knn' or a SimilarityGraph, got {graph!r}")
    built.check_n_tokens(sequences.n_tokens)
    return built


# --- input checks -----------------------------------------------------------------------

def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return int(value)


def _check_real(value, name, interval, inside):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {interval}, got {type(value).__name__}")
    if not inside(value):  # NaN fails every comparison, so lands here too
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return float(value)


def _check_suffixes(suffixes):
    if suffixes is None:
        return None
    if isinstance(suffixes, (str, bytes)) or not hasattr(suffixes, "__iter__"):
        raise TypeError(f"suffixes must be an iterable of str (not one str), got "
                        f"{type(suffixes).__name__}")
    suffixes = list(suffixes)
    bad = [suffix for suffix in suffixes if not isinstance(suffix, str) or not suffix]
    if bad:
        raise ValueError(f"suffixes must be non-empty str, got {bad[0]!r}")
    return sorted(set(suffixes))


def _feature_sequences(X):
    """X as a finite-valued `SequenceMatrix` with at least one token."""
    if not isinstance(X, SequenceMatrix):
        if isinstance(X, (str, bytes, Mapping)) or sp.issparse(X) or not hasattr(X, "__iter__"):
            raise TypeError("X must be a SequenceMatrix or a list of per-sequence feature "
                            f"matrices, got {type(X).__name__}")
        X = list(X)
        if not X:
            raise ValueError("X is empty: knn_graph needs at least one sequence")
        if not is_matrix_input(X):
            raise TypeError("knn_graph needs feature matrices (a SequenceMatrix, or a 2-d array "
                            f"or sparse matrix per sequence); sequence 0 of X is of type "
                            f"{type(X[0]).__name__}: featurise words first, e.g. with "
                            "SequenceVectorizer")
    sequences = matrices_to_sequence_matrix(X)
    if sequences.n_tokens == 0:
        raise ValueError("X has no tokens")
    return sequences


def _sequence_list(X):
    """X as a list of token sequences, or a TypeError/ValueError saying what is wrong."""
    if isinstance(X, SequenceMatrix) or sp.issparse(X):
        raise TypeError(_NEEDS_WORDS)
    if isinstance(X, (str, bytes, Mapping)) or not hasattr(X, "__iter__"):
        raise TypeError(f"X must be a list of sequences of tokens, got {type(X).__name__}")
    X = list(X)
    if not X:
        raise ValueError("X is empty: trigram_graph needs at least one sequence")
    for i, sequence in enumerate(X):
        if sp.issparse(sequence) or isinstance(sequence, np.ndarray):
            raise TypeError(_NEEDS_WORDS)
        if isinstance(sequence, (str, bytes, Mapping)) or not hasattr(sequence, "__len__"):
            raise TypeError(f"sequence {i} of X must be a list of tokens, got "
                            f"{type(sequence).__name__}")
    return X


# --- words and trigram types ------------------------------------------------------------

def _trigram_occurrences(X, word_key):
    """The trigram type of every token of X.

    Returns
    -------
    window : ndarray of shape (5, n_occurrences)
        Word codes of the 5-gram window of each token that has a vertex (an occurrence).
    vertex_of_occurrence : ndarray of shape (n_occurrences,)
    token_vertices : ndarray of shape (n_tokens,)
        -1 for punctuation-centred tokens.
    words : list of str
        The word of each code, the padding words last.
    names : list of tuple
        The trigram of each vertex.
    """
    codes, words, offsets = _read_words(X, word_key)
    words = words + [_START, _END]
    has_vertex = _has_alphanumeric(words)[codes]
    window = _windows(codes, offsets, 2, len(words) - 2, len(words) - 1)[:, has_vertex]
    keys = _tuple_keys(window[1:4], [len(words)] * 3)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    # Number the types in order of first appearance (np.unique numbers them by key).
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    vertex_of_occurrence = rank[inverse.ravel()]
    token_vertices = np.full(codes.size, -1, dtype=np.int64)
    token_vertices[has_vertex] = vertex_of_occurrence
    word_array = np.array(words, dtype=object)
    first_window = window[1:4, first[order]]
    names = list(zip(*(word_array[codes_at].tolist() for codes_at in first_window)))
    return window, vertex_of_occurrence, token_vertices, words, names


def _read_words(X, word_key):
    """Codes of the normalised words of all tokens of X, the words, and sequence offsets.

    This is the one pass over tokens in Python; word forms are normalised once per distinct
    word, and everything after works on integer codes.
    """
    X = _sequence_list(X)
    lengths = np.fromiter(map(len, X), dtype=np.int64, count=len(X))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    if offsets[-1] == 0:
        raise ValueError("X has no tokens")
    raw = _token_words(list(chain.from_iterable(X)), word_key, offsets)
    index = {}
    codes = np.array([index.setdefault(word, len(index)) for word in raw], dtype=np.int64)
    forms = [_NUMBER_WORD if _NUMBER.fullmatch(word) else word for word in index]
    form_index = {}
    renumber = np.array([form_index.setdefault(form, len(form_index)) for form in forms],
                        dtype=np.int64)
    return renumber[codes], list(form_index), offsets


def _token_words(tokens, word_key, offsets):
    """The word of every token (flat list), checked to be a str."""
    kinds = {_token_kind(kind) for kind in set(map(type, tokens))}
    if None in kinds or len(kinds) > 1:
        first_kind = _token_kind(type(tokens[0]))
        j = next(j for j, token in enumerate(tokens)
                 if _token_kind(type(token)) is None or
                 _token_kind(type(token)) != first_kind)
        if _token_kind(type(tokens[j])) is None:
            raise TypeError(f"{_where(j, offsets)} is of type {type(tokens[j]).__name__}: tokens "
                            "must be feature dicts, str, or tuples whose first item is the word")
        raise TypeError(f"X mixes kinds of tokens: {_where(0, offsets)} is a "
                        f"{type(tokens[0]).__name__}, {_where(j, offsets)} a "
                        f"{type(tokens[j]).__name__}")
    kind = kinds.pop()
    if kind == "str":
        return [token.lower() for token in tokens]
    try:
        words = [token[word_key] if kind == "dict" else token[0] for token in tokens]
    except (KeyError, IndexError):
        j = next(j for j, token in enumerate(tokens)
                 if (word_key not in token if kind == "dict" else len(token) == 0))
        missing = f"no {word_key!r} key" if kind == "dict" else "no items"
        raise ValueError(f"{_where(j, offsets)} has {missing}") from None
    if not all(issubclass(word_type, str) for word_type in set(map(type, words))):
        j = next(j for j, word in enumerate(words) if not isinstance(word, str))
        what = f"{word_key!r}" if kind == "dict" else "first item (the word)"
        raise ValueError(f"{_where(j, offsets)}: its {what} is of type {type(words[j]).__name__}, "
                         "not a str")
    return words if kind == "dict" else [word.lower() for word in words]


def _token_kind(token_type):
    if issubclass(token_type, Mapping):
        return "dict"
    if issubclass(token_type, str):
        return "str"
    if issubclass(token_type, (tuple, list)):
        return "tuple"
    return None


def _where(j, offsets):
    """'token p of sequence i' for the j-th token of all sequences laid end to end."""
    i = int(np.searchsorted(offsets, j, side="right")) - 1
    return f"token {j - offsets[i]} of sequence {i}"


def _has_alphanumeric(words):
    return np.array([_ALPHANUMERIC.search(word) is not None for word in words], dtype=bool)


def _token_positions(offsets):
    """Position of every token in its sequence, and its sequence's length."""
    lengths = np.diff(offsets)
    sequence = np.repeat(np.arange(lengths.size), lengths)
    return np.arange(offsets[-1]) - offsets[sequence], lengths[sequence]


def _windows(codes, offsets, radius, start_code, end_code):
    """Codes of the words at offsets -radius..radius of every token (rows), padded with
    ``start_code`` before and ``end_code`` after its sequence."""
    position, length = _token_positions(offsets)
    tokens = np.arange(codes.size)
    window = np.empty((2 * radius + 1, codes.size), dtype=np.int64)
    for row, shift in enumerate(range(-radius, radius + 1)):
        inside = (position + shift >= 0) & (position + shift < length)
        padding = start_code if shift < 0 else end_code
        window[row] = np.where(inside, codes[np.clip(tokens + shift, 0, codes.size - 1)],
                               padding)
    return window


def _tuple_keys(columns, sizes):
    """One int64 per tuple ``(columns[0][i], columns[1][i], ...)``, equal iff the tuples are
    (the values of column j lie in ``range(sizes[j])``)."""
    keys, n_keys = np.asarray(columns[0], dtype=np.int64), int(sizes[0])
    for column, size in zip(columns[1:], sizes[1:]):
        if n_keys * size >= 2**62:  # renumber the keys so far densely to stay in int64
            uniques, keys = np.unique(keys, return_inverse=True)
            keys, n_keys = keys.ravel(), uniques.size
        keys = keys * size + column
        n_keys *= int(size)
    return keys


# --- PMI features of trigram types ------------------------------------------------------

def _pmi_features(window, vertex_of_occurrence, n_vertices, words, suffixes):
    """Unit-length rows of PMI(f, t) over the features f of the occurrences of each type t."""
    n_words = len(words)
    templates = [(window[list(positions)], [n_words] * len(positions), None)
                 for positions in chain(_TRIGRAM_TEMPLATES.values(),
                                        _CONTEXT_TEMPLATES.values())]
    if suffixes:
        suffix_of_word = _suffix_codes(words[:-2], suffixes)
        suffix_of_word = np.concatenate([suffix_of_word, [-1, -1]])  # the padding words
        for position in _SUFFIX_TEMPLATES.values():
            suffix = suffix_of_word[window[position]]
            present = suffix >= 0
            columns = [suffix[present], window[2, present]]
            templates.append((columns, [len(suffixes), n_words], present))
    rows, columns, pair_counts, feature_counts = [], [], [], []
    n_features = 0
    for template_columns, sizes, present in templates:
        keys = _tuple_keys(template_columns, sizes)
        uniques, feature = np.unique(keys, return_inverse=True)
        feature = feature.ravel()
        vertex = vertex_of_occurrence if present is None else vertex_of_occurrence[present]
        pairs, counts = np.unique(vertex * uniques.size + feature, return_counts=True)
        rows.append(pairs // uniques.size)
        columns.append(pairs % uniques.size + n_features)
        pair_counts.append(counts)
        feature_counts.append(np.bincount(feature, minlength=uniques.size))
        n_features += uniques.size
    rows, columns = np.concatenate(rows), np.concatenate(columns)
    feature_counts = np.concatenate(feature_counts)
    type_counts = np.bincount(vertex_of_occurrence, minlength=n_vertices)
    pmi = (np.log(np.concatenate(pair_counts)) + np.log(vertex_of_occurrence.size)
           - np.log(feature_counts[columns]) - np.log(type_counts[rows]))
    features = sp.csr_matrix((pmi, (rows, columns)), shape=(n_vertices, n_features))
    return normalize(features)


def _suffix_codes(words, suffixes):
    """The index in ``suffixes`` of the longest suffix each word ends with, -1 for none."""
    index = {suffix: k for k, suffix in enumerate(suffixes)}
    lengths = sorted({len(suffix) for suffix in suffixes}, reverse=True)
    return np.array([next((index[word[-n:]] for n in lengths
                           if n <= len(word) and word[-n:] in index), -1)
                     for word in words], dtype=np.int64)


# --- token rows for knn_graph -----------------------------------------------------------

def _neighbour_rows(rows, offsets):
    """The rows of the tokens before and after each token in its sequence (zero rows where
    there is none)."""
    position, length = _token_positions(offsets)
    n_tokens = position.size
    shifted = []
    for shift, has_neighbour in ((-1, position > 0), (1, position < length - 1)):
        targets = np.flatnonzero(has_neighbour)
        selector = sp.csr_matrix((np.ones(targets.size), (targets, targets + shift)),
                                 shape=(n_tokens, n_tokens))
        shifted.append(sp.csr_matrix(selector @ rows))
    return shifted


# --- mutual k-NN search -----------------------------------------------------------------

def _mutual_knn(rows, n_neighbors, max_block_entries, min_similarity=0.0, own_rows=None,
                own_weight=0.0, min_own_similarity=None, excluded=None):
    """Mutual k-NN weights for the similarities ``rows @ rows.T``, a block of rows at a time.

    With ``own_rows``, the similarity is ``rows @ rows.T + own_weight * own_rows @ own_rows.T``
    and, with ``min_own_similarity``, only pairs with ``own_rows[u] @ own_rows[v] >
    min_own_similarity`` are candidates. The candidates of u are the v != u with similarity >
    ``min_similarity`` that are not ``excluded`` (so an excluded vertex has no mutual edge
    either). u keeps its ``n_neighbors`` most similar candidates, ties going to the lower
    index. (u, v) is an edge iff each keeps the other; its weight is the smaller of the two
    computed similarities (they can differ by rounding), so the result is exactly symmetric.
    Memory: the kept pairs (``n x n_neighbors``) plus about ``max_block_entries``
    similarities at a time, dense or (for sparse rows) the nonzeros of a sparse block.
    """
    rows = _dense_if_dense_enough(rows)
    n_rows = rows.shape[0]
    columns = _transposed(rows)
    if own_rows is not None:
        own_rows = _dense_if_dense_enough(own_rows)
        own_columns = _transposed(own_rows)
    dense_step = max(1, max_block_entries // n_rows)
    index_dtype = np.int32 if n_rows * n_neighbors < 2**31 else np.int64
    kept = []
    for start, stop in _row_blocks(rows, max_block_entries, by_nonzeros=own_rows is None):
        similarities = safe_sparse_dot(rows[start:stop], columns)
        if sp.issparse(similarities) and own_rows is None and (
                similarities.nnz < _DENSE_ENOUGH * (stop - start) * n_rows):
            candidates = _sparse_candidates(similarities.tocsr(), start, n_neighbors,
                                            min_similarity, excluded)
            kept.append(_kept_rows(candidates, n_neighbors, start, stop, index_dtype))
            continue
        # A dense block, or a sparse one too dense to search sparsely: dense slices of at
        # most max_block_entries.
        for first in range(start, stop, dense_step):
            last = min(first + dense_step, stop)
            block = _to_dense(similarities[first - start:last - start])
            if own_rows is not None:
                own = _to_dense(safe_sparse_dot(own_rows[first:last], own_columns))
                outside = None if min_own_similarity is None else own <= min_own_similarity
                own *= own_weight
                block += own
                if outside is not None:
                    # Shift the non-candidates below min_similarity rather than to -inf:
                    # the partition slows threefold on rows full of equal values.
                    shift = max(block.max() - min_similarity, 0.0) + 1.0
                    np.subtract(block, shift, out=block, where=outside)
            candidates = _dense_candidates(block, first, n_neighbors, min_similarity, excluded)
            kept.append(_kept_rows(candidates, n_neighbors, first, last, index_dtype))
    counts, targets, values = (np.concatenate(parts) for parts in zip(*kept))
    del kept
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
    directed = sp.csr_matrix((values, targets, indptr), shape=(n_rows, n_rows))
    directed.sort_indices()
    # Absent entries are 0 and kept values positive, so the minimum keeps mutual pairs only.
    weights = sp.csr_matrix(directed.minimum(directed.T))
    weights.eliminate_zeros()
    return weights


def _row_blocks(rows, max_block_entries, by_nonzeros):
    """(start, stop) of blocks of rows whose similarities to all rows number about
    ``max_block_entries``: ``rows x n_rows`` for dense rows; for sparse rows (with
    ``by_nonzeros``) a bound on the nonzeros, so that blocks of sparse similarities are not
    needlessly small (thousands of tiny blocks cost more in overhead than in arithmetic)."""
    n_rows = rows.shape[0]
    if by_nonzeros and sp.issparse(rows):
        # Row u's similarities have at most n_rows nonzeros, and at most as many as the
        # products that make them: the sum over u's features of how many rows have each.
        column_counts = np.bincount(rows.indices, minlength=rows.shape[1])
        row_of_entry = np.repeat(np.arange(n_rows), np.diff(rows.indptr))
        products = np.bincount(row_of_entry, weights=column_counts[rows.indices],
                               minlength=n_rows)
        ends = np.cumsum(np.minimum(products, n_rows))
        marks = np.arange(1, int(ends[-1] // max_block_entries) + 1) * max_block_entries
        stops = np.searchsorted(ends, marks, side="right")
    else:
        step = max(1, max_block_entries // n_rows)
        stops = np.arange(step, n_rows, step)
    stops = np.unique(np.concatenate([stops[(stops > 0) & (stops < n_rows)], [n_rows]]))
    return zip(np.concatenate([[0], stops[:-1]]).tolist(), stops.tolist())


def _kept_rows(candidates, n_neighbors, start, stop, index_dtype):
    """The k best candidates of rows start..stop as CSR pieces: counts, targets, values."""
    sources, targets, values = _top_k(*candidates, n_neighbors)
    # Kept pairs come sorted by source: stored as CSR rows straight away (12 bytes a pair
    # rather than 24 for coordinates), the largest memory of the search.
    return (np.bincount(sources - start, minlength=stop - start), targets.astype(index_dtype),
            values)


def _dense_if_dense_enough(rows):
    if sp.issparse(rows):
        if rows.nnz >= _DENSE_ENOUGH * rows.shape[0] * rows.shape[1]:
            return rows.toarray()
        return sp.csr_matrix(rows)
    return np.asarray(rows, dtype=np.float64)


def _transposed(rows):
    """``rows.T`` in the layout that multiplies fastest (CSR for sparse rows)."""
    return rows.T.tocsr() if sp.issparse(rows) else rows.T


def _to_dense(similarities):
    return similarities.toarray() if sp.issparse(similarities) else np.asarray(similarities)


def _sparse_candidates(similarities, start, n_neighbors, min_similarity, excluded):
    """(row, column, similarity) of a sparse block's candidates that can be among the k best
    of their row (a superset: all of the bucket that holds the row's k-th best)."""
    n_block = similarities.shape[0]
    indptr, targets, values = similarities.indptr, similarities.indices, similarities.data
    local = np.repeat(np.arange(n_block), np.diff(indptr))
    keep = (values > min_similarity) & (local != targets - start)
    if excluded is not None:
        keep &= ~excluded[targets]
    running = np.concatenate([[0], np.cumsum(keep)])
    long = running[indptr[1:]] - running[indptr[:-1]] > n_neighbors
    if long.any():
        # Sorting every candidate would cost most of the search (rows of common trigrams
        # have thousands): a histogram of each long row's values says which bucket holds its
        # k-th best, and only the buckets from there up go on to the exact sort. As many
        # buckets as a long row has candidates on average keeps the histograms no larger
        # than the block; other entries go to an extra last bin.
        n_long = np.count_nonzero(long)
        in_long = keep & long[local]
        n_buckets = int(np.clip(np.count_nonzero(in_long) // n_long, 16, _N_BUCKETS))
        bucket = (values * (n_buckets / values[in_long].max())).astype(np.int64)
        np.clip(bucket, 0, n_buckets - 1, out=bucket)
        long_row = np.cumsum(long) - 1
        bins = np.where(in_long, long_row[local] * n_buckets + bucket, n_long * n_buckets)
        histogram = np.bincount(bins, minlength=n_long * n_buckets + 1)[:-1]
        from_top = np.cumsum(histogram.reshape(n_long, n_buckets)[:, ::-1], axis=1)
        kth_bucket = np.zeros(n_block, dtype=np.int64)  # short rows keep all candidates
        kth_bucket[long] = n_buckets - 1 - np.argmax(from_top >= n_neighbors, axis=1)
        keep &= bucket >= kth_bucket[local]
    kept = np.flatnonzero(keep)
    return local[kept] + start, targets[kept].astype(np.int64), values[kept]


def _dense_candidates(similarities, start, n_neighbors, min_similarity, excluded):
    """(row, column, similarity) of a dense block's candidates that can be among the k best
    of their row: at least as similar as the row's k-th best (ties may give more than k)."""
    n_block, n_columns = similarities.shape
    local = np.arange(n_block)
    similarities[local, start + local] = -np.inf
    if excluded is not None:
        similarities[:, excluded] = -np.inf
    # One comparison per entry: "> min_similarity" is ">= the next float up".
    threshold = np.full(n_block, np.nextafter(min_similarity, np.inf))
    if n_columns > n_neighbors:
        kth = np.partition(similarities, n_columns - n_neighbors, axis=1)[:, n_columns -
                                                                          n_neighbors]
        np.maximum(threshold, kth, out=threshold)
    # flatnonzero then divmod: several times faster than a 2-d nonzero.
    kept = np.flatnonzero(similarities >= threshold[:, None])
    sources, targets = np.divmod(kept, n_columns)
    return sources + start, targets, similarities.reshape(-1)[kept]


def _top_k(sources, targets, values, k):
    """The k most similar candidates of each source, ties to the lower target."""
    order = np.lexsort((targets, -values, sources))
    sources, targets, values = sources[order], targets[order], values[order]
    new_source = np.concatenate([[True], sources[1:] != sources[:-1]])
    group_start = np.maximum.accumulate(np.where(new_source, np.arange(sources.size), 0))
    keep = np.arange(sources.size) - group_start < k
    return sources[keep], targets[keep], values[keep]

"""`trigram_graph`: the graph over the trigram types of text (He et al. 2013 §4.2), types
compared by the cosine of their PMI-weighted context features.
"""

import math
import numbers
import re
from collections import Counter
from collections.abc import Mapping
from itertools import chain

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

from ..utils import SequenceMatrix
from ._approximate import approximate_knn_weights
from ._mutual import _assembled
from ._pmi import _pmi_features, _tuple_keys
from ._search import _check_positive_int, _mutual_pairs
from ._similarity_graph import SimilarityGraph, _token_positions

# A number: digits with an optional sign and separators ("-2", "1,000.5", "3/4", "10:30",
# "1-800"). Words mixing digits and letters ("1990s", "3rd", "f16") keep their form: their
# letters carry part-of-speech evidence (a plural, an ordinal, a name).
_NUMBER = re.compile(r"[+-]?[\d.,/:-]*\d[\d.,/:-]*")


_NUMBER_WORD = "<num>"


# Words without a letter or digit are punctuation: their tokens get no vertex.
_ALPHANUMERIC = re.compile(r"[^\W_]")
_LETTER = re.compile(r"[^\W\d_]")
_START, _END = "<s>", "</s>"


# From this many trigram types algorithm='auto' compares only the types that uncommon features
# bring together ('pruned'): the exact search's time grows with the square of the types (about
# 55 s at 333,000 types, 23 minutes at 1.5 million), and below this size it is the same graph
# as ever (docs/benchmarks.md).
PRUNED_FROM = 200_000


# Tokens read into Python objects at a time (`_read_words`).
_BLOCK_TOKENS = 2**20


_NEEDS_WORDS = ("trigram_graph needs words: pass feature dicts or tokens (str, or tuples whose "
                "first item is the word), not feature matrices")


def trigram_graph(X, n_neighbors=60, word_key="word.lower", suffixes="auto",
                  max_block_entries=2**22, algorithm="auto", max_df=1000, n_jobs=None):
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
    suffixes : 'auto', iterable of str or None, default='auto'
        Suffixes for the features suffix(w3)w2 and suffix(w1)w2, where suffix(w) is the
        longest listed suffix ``w`` ends with (no feature when it ends with none), as in the
        authors' code. 'auto': the endings of 1 to 3 letters that end at least 1 % of the
        text's word types (and at least 2), in words longer than the ending: 44-50 endings
        on the UD English, German and Italian pools, where they lower graph-PR's token
        error (docs/benchmarks.md). None: no suffix features.
    max_block_entries : int, default=2**22
        About how many similarities are held at once: a block of rows is compared with all
        vertices, and the block is as large as a bound on its nonzero similarities allows
        (the feature rows are sparse; at least one row).
    algorithm : {'auto', 'exact', 'pruned', 'hnsw'}, default='auto'
        How each type's candidates are found. 'exact': compared with every type that shares
        a feature with it. 'pruned': with the types that share one of its features held by
        at most ``max_df`` types, the usual pruning of pairwise document similarity at
        scale (the few common features make most of the exact search's products); the
        candidates are ranked and weighted by the cosine of the full PMI rows, so only a
        pair that shares nothing but common features can be missed. 'auto': 'exact' below
        200,000 types (about 10,000 sentences), 'pruned' from there. With the default
        ``max_df`` it kept 0.9995 of the exact graph's edges on the data folder's 35,157
        English sentences (555,160 types) in a third of the time, and built the graph of
        10^5 generated sentences (1.5 million types) in 41 s and of 10^6 (13 million
        types, 208 million edges, 8.2 GB at its peak) in 14-15 minutes, in two threads
        (docs/benchmarks.md). 'hnsw' searches faiss's approximate index over the PMI rows
        reduced to 256 dimensions by truncated SVD, then scores the candidates exactly; no
        'auto' switches to it: the SVD keeps too little of the PMI rows' ranking (42-77 %
        of the exact graph's edges on the UD pools of 18,000-38,000 types, 2 % on 1.5
        million types of synthetic text).
    max_df : int or float in (0, 1], default=1000
        For 'pruned' (and 'auto' from 200,000 types): a type is not a candidate of another
        for sharing only features held by more than this number of types (int) or this
        share of the types (float), as in scikit-learn's ``CountVectorizer``. Ignored
        otherwise. A number bounds each type's candidates however large the text, where a
        share lets them grow with it: 1,000 types kept 0.998-0.9998 of the exact graph's
        edges from 20,000 real to 10^5 generated sentences, in 0.17 of the time of 1 % of
        the types at 10^5 (which gave the exact graph). Lower is faster and misses more
        (300 types: 0.98).
    n_jobs : int, default=None
        Threads that search blocks of types at once (None: 1; -1: as many as joblib finds
        cores), with the same graph for any number. Two threads took 0.62 of one's time on
        the pruned search of 20,000 sentences (2 cores); each holds its own block. Inside
        joblib's dask backend (``parallel_config(backend="dask")``) the blocks are searched
        on the cluster's workers instead, with the same graph: each worker holds the
        types' features and their transpose, this process the features only.

    Returns
    -------
    graph : SimilarityGraph
        Vertices numbered in order of first appearance; ``vertex_names`` are the trigrams as
        tuples of three words; punctuation-centred tokens have vertex -1.

    See Also
    --------
    knn_graph : The graph with one vertex per token.
    SimilarityGraph : The graph returned.

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
    auto_suffixes = isinstance(suffixes, str) and suffixes == "auto"
    if not auto_suffixes:
        suffixes = _check_suffixes(suffixes)
    if algorithm not in ("auto", "exact", "pruned", "hnsw"):
        raise ValueError("algorithm must be 'auto', 'exact', 'pruned' or 'hnsw', got "
                         f"{algorithm!r}")
    max_df = _check_max_df(max_df)
    n_threads = _n_threads(n_jobs)
    window, vertex_of_occurrence, token_vertices, words, name_codes = _trigram_occurrences(
        X, word_key)
    n_vertices = name_codes.shape[1]
    if not n_vertices:  # all punctuation: no vertices
        return SimilarityGraph(sp.csr_matrix((0, 0)), token_vertices, [])
    if auto_suffixes:
        suffixes = _frequent_endings(words[:-2])
    if algorithm == "auto":
        algorithm = "pruned" if n_vertices >= PRUNED_FROM else "exact"
    vertices, most = None, None
    if algorithm == "pruned":
        # The rows searched in order of their trigrams' words: the types that share a
        # feature lie in a few runs of rows, which a block's sparse products sum into
        # (over 4.3 million types at 3x10^5 sentences, the products took half the time
        # they took in order of first appearance). The graph is the same (`_mutual_pairs`).
        vertices = _by_words(window, vertex_of_occurrence, n_vertices)
        row_of_vertex = np.empty_like(vertices)
        row_of_vertex[vertices] = np.arange(vertices.size)
        vertex_of_occurrence = row_of_vertex[vertex_of_occurrence]
        most = max_df if isinstance(max_df, int) else math.ceil(max_df * n_vertices)
    features, common = _pmi_features(window, vertex_of_occurrence, n_vertices, words,
                                     suffixes, most)
    del window, vertex_of_occurrence
    if algorithm == "hnsw":
        weights = approximate_knn_weights(features, n_neighbors)
    else:
        pairs = _mutual_pairs(features, n_neighbors, max_block_entries, common_rows=common,
                              n_threads=n_threads, vertices=vertices)
        del features, common  # not held while the pairs become the graph
        weights = _assembled(pairs)
    return SimilarityGraph._built(weights, token_vertices, _vertex_names(name_codes, words))


def _by_words(window, vertex_of_occurrence, n_vertices):
    """The vertices in order of their trigrams' middle, first and last words (codes)."""
    words = np.empty((3, n_vertices), dtype=window.dtype)
    words[:, vertex_of_occurrence] = window[1:4]  # each occurrence of a type has its words
    return np.lexsort((words[2], words[0], words[1]))


def _frequent_endings(words, lengths=(1, 2, 3), share=0.01):
    """The endings of ``lengths`` letters that end at least ``share`` of the word types
    ``words`` that have a letter (and at least 2 of them), each counted in words longer
    than it; sorted."""
    types = [word for word in words if word != _NUMBER_WORD and _LETTER.search(word)]
    counts = Counter(word[-n:] for word in types for n in lengths
                     if len(word) > n and word[-n:].isalpha())
    least = max(2, math.ceil(share * len(types)))
    return sorted(ending for ending, count in counts.items() if count >= least)


def _check_max_df(max_df):
    if isinstance(max_df, bool) or not isinstance(max_df, numbers.Real):
        raise TypeError(f"max_df must be a float in (0, 1] or an int >= 1, got "
                        f"{type(max_df).__name__}")
    if isinstance(max_df, numbers.Integral):
        if max_df < 1:
            raise ValueError(f"max_df must be a float in (0, 1] or an int >= 1, got {max_df}")
        return int(max_df)
    if not 0 < max_df <= 1:  # NaN fails too
        raise ValueError(f"max_df must be a float in (0, 1] or an int >= 1, got {max_df}")
    return float(max_df)


def _n_threads(n_jobs):
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral)
                               or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a nonzero int, got {n_jobs!r}")
    return effective_n_jobs(n_jobs)


def _check_suffixes(suffixes):
    if suffixes is None:
        return None
    if isinstance(suffixes, (str, bytes)) or not hasattr(suffixes, "__iter__"):
        raise TypeError(f"suffixes must be 'auto', None or an iterable of str (not one "
                        f"other str), got {suffixes!r}")
    suffixes = list(suffixes)
    bad = [suffix for suffix in suffixes if not isinstance(suffix, str) or not suffix]
    if bad:
        raise ValueError(f"suffixes must be non-empty str, got {bad[0]!r}")
    return sorted(set(suffixes))


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
    name_codes : ndarray of shape (3, n_vertices)
        The word codes of the trigram of each vertex (`_vertex_names`).
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
    return window, vertex_of_occurrence, token_vertices, words, window[1:4, first[order]]


def _vertex_names(name_codes, words):
    """The trigram of each vertex, as a tuple of words: made once the graph is, since as
    Python objects they are 1 GB at 10^6 sentences (as codes, 0.15 GB)."""
    word_array = np.array(words, dtype=object)
    return list(zip(*(word_array[codes].tolist() for codes in name_codes)))


def _read_words(X, word_key):
    """Codes of the normalised words of all tokens of X, the words, and sequence offsets.

    This is the one pass over tokens in Python, a block of sequences at a time: only one
    block's words are held as Python objects, and the codes of all as one integer array.
    Word forms are normalised once per distinct word; everything after works on codes.
    """
    X = _sequence_list(X)
    lengths = np.fromiter(map(len, X), dtype=np.int64, count=len(X))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    if offsets[-1] == 0:
        raise ValueError("X has no tokens")
    code_dtype = np.int32 if offsets[-1] < 2**31 else np.int64
    codes = np.empty(offsets[-1], dtype=code_dtype)
    index, first_kind = {}, None
    for first, last in _sequence_blocks(offsets, _BLOCK_TOKENS):
        tokens = list(chain.from_iterable(X[first:last]))
        if len(tokens) != offsets[last] - offsets[first]:
            i = next(i for i in range(first, last) if len(list(X[i])) != lengths[i])
            raise ValueError(f"sequence {i} of X gives {len(list(X[i]))} tokens when read "
                             f"but its len() is {lengths[i]}")
        first_kind = _token_kind_of(tokens, first_kind, offsets, offsets[first])
        words = _token_words(tokens, first_kind[0], word_key, offsets, offsets[first])
        codes[offsets[first]:offsets[last]] = np.fromiter(
            (index.setdefault(word, len(index)) for word in words), dtype=code_dtype,
            count=len(words))
    forms = [_NUMBER_WORD if _NUMBER.fullmatch(word) else word for word in index]
    form_index = {}
    renumber = np.array([form_index.setdefault(form, len(form_index)) for form in forms],
                        dtype=code_dtype)
    return renumber[codes], list(form_index), offsets


def _sequence_blocks(offsets, n_tokens):
    """(first, last) of consecutive blocks of sequences of about ``n_tokens`` tokens each
    (a longer sequence is a block of its own)."""
    marks = np.arange(n_tokens, offsets[-1], n_tokens)
    stops = np.unique(np.concatenate([np.searchsorted(offsets, marks), [offsets.size - 1]]))
    stops = stops[stops > 0]
    return zip(np.concatenate([[0], stops[:-1]]).tolist(), stops.tolist())


def _token_kind_of(tokens, first, offsets, base):
    """The kind of all ``tokens`` (the flat tokens from ``base`` on), which must be that of
    the first token of X, ``first``: its (kind, type name), None for the first block.
    Returns ``first``."""
    if first is None:
        first = _token_kind(type(tokens[0])), type(tokens[0]).__name__
    kinds = {_token_kind(token_type) for token_type in set(map(type, tokens))}
    if kinds == {first[0]} and first[0] is not None:
        return first
    j = next(j for j, token in enumerate(tokens)
             if _token_kind(type(token)) is None or _token_kind(type(token)) != first[0])
    if _token_kind(type(tokens[j])) is None:
        raise TypeError(f"{_where(base + j, offsets)} is of type {type(tokens[j]).__name__}: "
                        "tokens must be feature dicts, str, or tuples whose first item is the "
                        "word")
    raise TypeError(f"X mixes kinds of tokens: {_where(0, offsets)} is a {first[1]}, "
                    f"{_where(base + j, offsets)} a {type(tokens[j]).__name__}")


def _token_words(tokens, kind, word_key, offsets, base):
    """The word of every token (flat list, of one ``kind``, from flat token ``base`` on),
    checked to be a str."""
    if kind == "str":
        return [token.lower() for token in tokens]
    try:
        words = [token[word_key] if kind == "dict" else token[0] for token in tokens]
    except (KeyError, IndexError):
        j = next(j for j, token in enumerate(tokens)
                 if (word_key not in token if kind == "dict" else len(token) == 0))
        missing = f"no {word_key!r} key" if kind == "dict" else "no items"
        raise ValueError(f"{_where(base + j, offsets)} has {missing}") from None
    if not all(issubclass(word_type, str) for word_type in set(map(type, words))):
        j = next(j for j, word in enumerate(words) if not isinstance(word, str))
        what = f"{word_key!r}" if kind == "dict" else "first item (the word)"
        raise ValueError(f"{_where(base + j, offsets)}: its {what} is of type "
                         f"{type(words[j]).__name__}, not a str")
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


def _windows(codes, offsets, radius, start_code, end_code):
    """Codes of the words at offsets -radius..radius of every token (rows), padded with
    ``start_code`` before and ``end_code`` after its sequence."""
    position, length = _token_positions(offsets)
    tokens = np.arange(codes.size)
    window = np.empty((2 * radius + 1, codes.size), dtype=codes.dtype)
    for row, shift in enumerate(range(-radius, radius + 1)):
        inside = (position + shift >= 0) & (position + shift < length)
        padding = start_code if shift < 0 else end_code
        window[row] = np.where(inside, codes[np.clip(tokens + shift, 0, codes.size - 1)],
                               padding)
    return window

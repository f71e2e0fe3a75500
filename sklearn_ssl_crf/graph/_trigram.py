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


# Tokens read into Python objects at a time (`TrigramWords.read_each`).
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
    X : iterable of sequences, or TrigramWords
        Each sequence a list of tokens, all of one kind: feature dicts (the word is
        ``token[word_key]``, used as is), or raw tokens: a str, or a tuple or list whose first
        item is the word (lower-cased here). Read once, a block at a time (a generator
        is read without holding it whole). Or the words of text already read
        (`TrigramWords`, whose own ``word_key`` applies).
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


class TrigramWords:
    """The words of text as integer codes, read a block of sequences at a time.

    What `trigram_graph` builds its graph from. Give it this instead of the text when the
    text is read once for several purposes (a stream featurised as it is read, as
    `GraphPRCRF` does): only one block's words are held as Python objects, the codes of
    all as one integer array (4 bytes a token), and the graph is the one of all the
    sequences read, in the order read.

    Parameters
    ----------
    word_key : str, default="word.lower"
        The key of the word in feature dicts, as in `trigram_graph`.

    See Also
    --------
    trigram_graph : The graph of the words read.

    Examples
    --------
    >>> from sklearn_ssl_crf.graph import TrigramWords, trigram_graph
    >>> words = TrigramWords()
    >>> for sentence in words.read_each(iter([["The", "cat", "sat"], ["The", "dog", "sat"]])):
    ...     pass                                       # each sentence used for more here
    >>> trigram_graph(words).token_vertices
    array([0, 1, 2, 3, 4, 5])
    """

    def __init__(self, word_key="word.lower"):
        if not isinstance(word_key, str):
            raise TypeError(f"word_key must be a str, got {type(word_key).__name__}")
        self.word_key = word_key
        self._index = {}  # word -> code, in order of first appearance
        self._first_kind = None  # the first token's kind, type name and place
        self._codes, self._lengths = [], []

    def read_each(self, sequences, name="X", block_sequences=None):
        """Read the words of sequences, passing each sequence on once its block is read.

        Parameters
        ----------
        sequences : iterable of sequences of tokens
            Read once (it may be a generator), a block at a time: a block ends at about
            2**20 tokens, or at ``block_sequences`` sequences.
        name : str, default="X"
            What errors call ``sequences`` (a bad token is named by its place there).
        block_sequences : int, default=None
            Sequences a block holds at most (None: no bound), so that a caller that
            featurises the sequences passed on holds about one block of them.

        Yields
        ------
        sequence : sequence of tokens
            Each sequence of ``sequences``, in order, once its words are read.
        """
        if isinstance(sequences, SequenceMatrix) or sp.issparse(sequences):
            raise TypeError(_NEEDS_WORDS)
        if isinstance(sequences, (str, bytes, Mapping)) or not hasattr(sequences, "__iter__"):
            raise TypeError(f"{name} must be a list of sequences of tokens, got "
                            f"{type(sequences).__name__}")
        block, n_tokens, first = [], 0, 0
        for sequence in sequences:
            if sp.issparse(sequence) or isinstance(sequence, np.ndarray):
                raise TypeError(_NEEDS_WORDS)
            if isinstance(sequence, (str, bytes, Mapping)) or not hasattr(sequence, "__len__"):
                raise TypeError(f"sequence {first + len(block)} of {name} must be a list of "
                                f"tokens, got {type(sequence).__name__}")
            block.append(sequence)
            n_tokens += len(sequence)
            if n_tokens >= _BLOCK_TOKENS or len(block) == block_sequences:
                self._read(block, name, first)
                first += len(block)
                yield from block
                block, n_tokens = [], 0
        if block:
            self._read(block, name, first)
            yield from block

    def _read(self, block, name, first):
        """Read the list of sequences ``block``, whose first is sequence ``first`` of
        ``name``."""
        lengths = np.fromiter(map(len, block), dtype=np.int64, count=len(block))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        tokens = list(chain.from_iterable(block))
        if len(tokens) != offsets[-1]:
            i = next(i for i in range(len(block)) if len(list(block[i])) != lengths[i])
            raise ValueError(f"sequence {first + i} of {name} gives {len(list(block[i]))} "
                             f"tokens when read but its len() is {lengths[i]}")
        self._lengths.append(lengths)
        if not tokens:
            return
        where = _Places(offsets, first, name)
        if self._first_kind is None:
            self._first_kind = (_token_kind(type(tokens[0])), type(tokens[0]).__name__,
                                where(0), name)
        _check_token_kinds(tokens, self._first_kind, where)
        words = _token_words(tokens, self._first_kind[0], self.word_key, where)
        index = self._index
        codes = np.fromiter((index.setdefault(word, len(index)) for word in words),
                            dtype=np.int64, count=len(words))
        self._codes.append(codes.astype(np.int32) if len(index) < 2**31 else codes)

    def _read_all(self):
        """Codes of the normalised words of all tokens read, the words, and the sequences'
        offsets. Word forms are normalised once per distinct word."""
        if not self._lengths:
            raise ValueError("X is empty: trigram_graph needs at least one sequence")
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(self._lengths))])
        if offsets[-1] == 0:
            raise ValueError("X has no tokens")
        code_dtype = np.int32 if len(self._index) < 2**31 else np.int64
        codes = np.concatenate(self._codes).astype(code_dtype, copy=False)
        forms = [_NUMBER_WORD if _NUMBER.fullmatch(word) else word for word in self._index]
        form_index = {}
        renumber = np.array([form_index.setdefault(form, len(form_index)) for form in forms],
                            dtype=code_dtype)
        return renumber[codes], list(form_index), offsets


def _trigram_occurrences(X, word_key):
    """The trigram type of every token of X (a list of sequences, or `TrigramWords`).

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
    if not isinstance(X, TrigramWords):
        text, X = X, TrigramWords(word_key)
        for _ in X.read_each(text):
            pass
    codes, words, offsets = X._read_all()
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


class _Places:
    """'token p of sequence i of X' for the j-th token of a block of sequences laid end
    to end (offsets), whose first sequence is sequence ``first`` of ``name``."""

    def __init__(self, offsets, first, name):
        self.offsets, self.first, self.name = offsets, first, name

    def __call__(self, j):
        i = int(np.searchsorted(self.offsets, j, side="right")) - 1
        where = f"token {j - self.offsets[i]} of sequence {self.first + i}"
        return where if self.name == "X" else f"{where} of {self.name}"


def _check_token_kinds(tokens, first_kind, where):
    """Check that all ``tokens`` (a block's, flat; ``where(j)`` names the j-th) are of the
    kind of the first token read, ``first_kind``: its (kind, type name, place, text's
    name)."""
    kinds = {_token_kind(token_type) for token_type in set(map(type, tokens))}
    if kinds == {first_kind[0]} and first_kind[0] is not None:
        return
    j = next(j for j, token in enumerate(tokens)
             if _token_kind(type(token)) is None or _token_kind(type(token)) != first_kind[0])
    if _token_kind(type(tokens[j])) is None:
        raise TypeError(f"{where(j)} is of type {type(tokens[j]).__name__}: tokens must be "
                        "feature dicts, str, or tuples whose first item is the word")
    texts = (f"{first_kind[3]} mixes" if first_kind[3] == where.name
             else f"{first_kind[3]} and {where.name} mix")
    raise TypeError(f"{texts} kinds of tokens: {first_kind[2]} is a {first_kind[1]}, "
                    f"{where(j)} a {type(tokens[j]).__name__}")


def _token_words(tokens, kind, word_key, where):
    """The word of every token (a block's, flat, of one ``kind``; ``where(j)`` names the
    j-th), checked to be a str."""
    if kind == "str":
        return [token.lower() for token in tokens]
    try:
        words = [token[word_key] if kind == "dict" else token[0] for token in tokens]
    except (KeyError, IndexError):
        j = next(j for j, token in enumerate(tokens)
                 if (word_key not in token if kind == "dict" else len(token) == 0))
        missing = f"no {word_key!r} key" if kind == "dict" else "no items"
        raise ValueError(f"{where(j)} has {missing}") from None
    if not all(issubclass(word_type, str) for word_type in set(map(type, words))):
        j = next(j for j, word in enumerate(words) if not isinstance(word, str))
        what = f"{word_key!r}" if kind == "dict" else "first item (the word)"
        raise ValueError(f"{where(j)}: its {what} is of type {type(words[j]).__name__}, not "
                         "a str")
    return words if kind == "dict" else [word.lower() for word in words]


def _token_kind(token_type):
    if issubclass(token_type, Mapping):
        return "dict"
    if issubclass(token_type, str):
        return "str"
    if issubclass(token_type, (tuple, list)):
        return "tuple"
    return None


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

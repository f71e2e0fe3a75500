"""The PMI-weighted feature rows of trigram types (He et al. 2013 §4.2), counted from the
5-gram windows of their occurrences as compact integer arrays."""

from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

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


def _pmi_features(window, vertex_of_occurrence, n_vertices, words, suffixes):
    """Unit-length rows of PMI(f, t) over the features f of the occurrences of each type t.

    The pairs (type, feature) are counted one template at a time, twice: first for the
    length of every row, then to write each template's values into the one matrix at
    their places. Memory is the matrix and one template's counting, never every template's
    pairs beside the matrix (they are most of the memory before the search).
    """
    # A template has at most one feature per occurrence: the index dtype is known up front,
    # and int32 almost always.
    n_templates = len(_TRIGRAM_TEMPLATES) + len(_CONTEXT_TEMPLATES) + len(_SUFFIX_TEMPLATES)
    most = max(n_vertices, n_templates * vertex_of_occurrence.size)
    index_dtype = np.int32 if most < 2**31 else np.int64
    type_counts = np.bincount(vertex_of_occurrence, minlength=n_vertices)
    row_lengths = np.zeros(n_vertices, dtype=np.int64)
    n_features = 0
    for row, _, _, feature_counts in _template_pairs(window, vertex_of_occurrence, words,
                                                     suffixes):
        row_lengths += np.bincount(row, minlength=n_vertices)
        n_features += feature_counts.size
    indptr = np.concatenate([[0], np.cumsum(row_lengths)]).astype(index_dtype)
    indices = np.empty(indptr[-1], dtype=index_dtype)
    data = np.empty(indptr[-1], dtype=np.float64)
    # Each row's entries in template order, and by feature within a template: the columns
    # of a row ascend, as a sorted CSR matrix's do.
    filled = indptr[:-1].astype(np.int64)
    log_total = np.log(vertex_of_occurrence.size)
    first_column = 0
    for row, column, counts, feature_counts in _template_pairs(window, vertex_of_occurrence,
                                                               words, suffixes):
        lengths = np.bincount(row, minlength=n_vertices)
        run_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        place = filled[row] + np.arange(row.size) - run_start[row]
        indices[place] = column + first_column
        data[place] = (np.log(counts) + log_total - np.log(feature_counts[column])
                       - np.log(type_counts[row]))
        filled += lengths
        first_column += feature_counts.size
    features = sp.csr_matrix((data, indices, indptr), shape=(n_vertices, n_features))
    return normalize(features, copy=False)


def _template_pairs(window, vertex_of_occurrence, words, suffixes):
    """``(row, column, count, feature_counts)`` of each template in turn: its distinct
    pairs (type, feature) sorted by type then feature, how often each occurs, and the
    occurrences of each of the template's features (as many as it has)."""
    for template_columns, sizes, present in _templates(window, words, suffixes):
        uniques, feature = np.unique(_tuple_keys(template_columns, sizes), return_inverse=True)
        feature = feature.ravel()
        vertex = vertex_of_occurrence if present is None else vertex_of_occurrence[present]
        pairs, counts = np.unique(vertex * uniques.size + feature, return_counts=True)
        yield (pairs // uniques.size, pairs % uniques.size, counts,
               np.bincount(feature, minlength=uniques.size))


def _templates(window, words, suffixes):
    """``(columns, sizes, present)`` of each feature template in turn (made one at a time:
    each is as long as the text): the word codes that make its features at each occurrence
    (of ``sizes`` values each), and which occurrences have one (None: all)."""
    n_words = len(words)
    for positions in chain(_TRIGRAM_TEMPLATES.values(), _CONTEXT_TEMPLATES.values()):
        yield window[list(positions)], [n_words] * len(positions), None
    if suffixes:
        suffix_of_word = _suffix_codes(words[:-2], suffixes)
        suffix_of_word = np.concatenate([suffix_of_word, [-1, -1]])  # the padding words
        for position in _SUFFIX_TEMPLATES.values():
            suffix = suffix_of_word[window[position]]
            present = suffix >= 0
            yield [suffix[present], window[2, present]], [len(suffixes), n_words], present


def _suffix_codes(words, suffixes):
    """The index in ``suffixes`` of the longest suffix each word ends with, -1 for none."""
    index = {suffix: k for k, suffix in enumerate(suffixes)}
    lengths = sorted({len(suffix) for suffix in suffixes}, reverse=True)
    return np.array([next((index[word[-n:]] for n in lengths
                           if n <= len(word) and word[-n:] in index), -1)
                     for word in words], dtype=np.int64)


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

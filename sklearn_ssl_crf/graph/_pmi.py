"""The PMI-weighted feature rows of trigram types (He et al. 2013 §4.2), counted from the
5-gram windows of their occurrences as compact integer arrays."""

from itertools import chain

import numpy as np
import scipy.sparse as sp

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


def _pmi_features(window, vertex_of_occurrence, n_vertices, words, suffixes, max_count=None):
    """Unit-length rows of PMI(f, t) over the features f of the occurrences of each type t,
    and with ``max_count`` their columns in two parts: ``(rows, common)``.

    Without ``max_count``, ``rows`` has every column and ``common`` is None. With it, the
    columns more than ``max_count`` types have are ``common`` (None if there are none), the
    columns 2 to ``max_count`` types have are ``rows``, each part's columns in order, and
    the columns only one type has are left out: they add only to a type's product with
    itself, which no search uses, so every product of two types is the same sum, in the same
    order, as over all the columns (at 3x10^5 sentences, 46 % of the entries). The
    rows are scaled by their lengths over all the columns.

    The pairs (type, feature) are counted one template at a time, twice: first for the
    length of every row of each part, then to write each template's values into the parts
    at their places. Memory is the parts and one template's counting, never every
    template's pairs beside them (they are most of the memory before the search).
    """
    # A template has at most one feature per occurrence: the index dtype is known up front,
    # and int32 almost always.
    n_templates = len(_TRIGRAM_TEMPLATES) + len(_CONTEXT_TEMPLATES) + len(_SUFFIX_TEMPLATES)
    most = max(n_vertices, n_templates * vertex_of_occurrence.size)
    index_dtype = np.int32 if most < 2**31 else np.int64
    type_counts = np.bincount(vertex_of_occurrence, minlength=n_vertices)
    parts = [_Part(n_vertices) for _ in range(1 if max_count is None else 2)]
    for row, column, _, feature_counts in _template_pairs(window, vertex_of_occurrence, words,
                                                          suffixes):
        part_of_column = _column_parts(column, feature_counts.size, max_count)
        part_of_entry = part_of_column[column]
        for number, part in enumerate(parts):
            part.count(row[part_of_entry == number], part_of_column == number)
        del row, column, _, part_of_entry  # not held while the next template is counted
    for part in parts:
        part.allocate(index_dtype)
    log_total = np.log(vertex_of_occurrence.size)
    # Each row's squared length, summed entry by entry in the order of its columns (as
    # sklearn's `normalize` sums a CSR row), so the lengths are those of the whole rows.
    squared_lengths = np.zeros(n_vertices)
    for row, column, counts, feature_counts in _template_pairs(window, vertex_of_occurrence,
                                                               words, suffixes):
        value = np.log(counts)
        value += log_total
        value -= np.log(feature_counts[column])
        value -= np.log(type_counts[row])
        np.add.at(squared_lengths, row, value * value)
        part_of_column = _column_parts(column, feature_counts.size, max_count)
        part_of_entry = part_of_column[column]
        for number, part in enumerate(parts):
            in_part = part_of_entry == number
            part.write(row[in_part], column[in_part], value[in_part],
                       part_of_column == number)
        del row, column, counts, value, part_of_entry
    lengths = np.sqrt(squared_lengths)
    lengths[squared_lengths == 0] = 1.0  # an all-zero row stays as it is
    rows, *common = (part.scaled_matrix(lengths) for part in parts)
    return rows, (common[0] if common and common[0].shape[1] else None)


def _column_parts(column, n_features, max_count):
    """The part of each of a template's features: 0 (rows), 1 (common), or -1 (left out:
    only one type has it), by how many types have it (``column``: a type's pairs each)."""
    if max_count is None:
        return np.zeros(n_features, dtype=np.int8)
    n_types = np.bincount(column, minlength=n_features)
    part = (n_types > max_count).astype(np.int8)
    part[n_types < 2] = -1
    return part


class _Part:
    """One part of the PMI rows' columns, counted, then written a template at a time."""

    def __init__(self, n_vertices):
        self.row_lengths = np.zeros(n_vertices, dtype=np.int64)
        self.n_columns = 0

    def count(self, row, is_column):
        self.row_lengths += np.bincount(row, minlength=self.row_lengths.size)
        self.n_columns += int(np.count_nonzero(is_column))

    def allocate(self, index_dtype):
        self.indptr = np.zeros(self.row_lengths.size + 1, dtype=index_dtype)
        np.cumsum(self.row_lengths, out=self.indptr[1:])
        self.indices = np.empty(self.indptr[-1], dtype=index_dtype)
        self.data = np.empty(self.indptr[-1])
        # Each row's entries in template order, and by feature within a template: the
        # columns of a row ascend, as a sorted CSR matrix's do.
        self.filled = self.indptr[:-1].astype(np.int64)
        self.next_column = 0
        del self.row_lengths

    def write(self, row, column, value, is_column):
        """A template's entries of this part (``row`` sorted), its columns ``is_column``."""
        lengths = np.bincount(row, minlength=self.filled.size)
        run_start = np.cumsum(lengths)
        run_start -= lengths
        place = self.filled[row]
        place -= run_start[row]
        del run_start
        place += np.arange(row.size)
        new_column = np.cumsum(is_column, dtype=np.int64)
        new_column += self.next_column - 1
        self.indices[place] = new_column[column]
        self.data[place] = value
        self.filled += lengths
        self.next_column += int(np.count_nonzero(is_column))

    def scaled_matrix(self, lengths):
        """The part's matrix, each row divided by its ``lengths`` (a block of rows at a
        time: no copy of the entries' rows)."""
        rows_at_once = 2**16
        for first in range(0, lengths.size, rows_at_once):
            last = min(first + rows_at_once, lengths.size)
            entries = slice(self.indptr[first], self.indptr[last])
            self.data[entries] /= np.repeat(lengths[first:last],
                                            np.diff(self.indptr[first:last + 1]))
        return sp.csr_matrix((self.data, self.indices, self.indptr),
                             shape=(lengths.size, self.n_columns))


def _template_pairs(window, vertex_of_occurrence, words, suffixes):
    """``(row, column, count, feature_counts)`` of each template in turn: its distinct
    pairs (type, feature) sorted by type then feature, how often each occurs, and the
    occurrences of each of the template's features (as many as it has)."""
    # Each array as long as the text is let go as soon as it is used (at 10^6 sentences each
    # is 220 MB): the generator's names would hold them while its caller works.
    for template_columns, sizes, present in _templates(window, words, suffixes):
        n_features, feature = _feature_codes(template_columns, sizes)
        del template_columns
        vertex = vertex_of_occurrence if present is None else vertex_of_occurrence[present]
        del present
        feature_counts = np.bincount(feature, minlength=n_features)
        pairs = vertex * n_features
        del vertex
        pairs += feature
        del feature
        pairs, counts = np.unique(pairs, return_counts=True)
        row = pairs // n_features
        pairs -= row * n_features
        yield row, pairs, counts, feature_counts
        del row, pairs, counts, feature_counts


def _feature_codes(columns, sizes):
    """The number of distinct tuples of ``columns`` (`_tuple_keys`) and each one's code."""
    uniques, feature = np.unique(_tuple_keys(columns, sizes), return_inverse=True)
    return uniques.size, feature.ravel()


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

"""The mutual pairs among the k best of each row that the search keeps (`_search`), and the
symmetric weights they make, written a piece of pairs at a time."""

import math

import numpy as np
import scipy.sparse as sp

# Blocks of rows in which the mutual pairs are found (`_mutual_weights`): a sixteenth of
# the kept pairs held twice at a time, against the sparse transpose's two copies of them all.
_MUTUAL_BLOCKS = 16


# Pairs handled at once: the common features' term (`_common_terms`: two sparse matrices
# of this many rows at a time), the graph's assembly (`_symmetric_weights`), and the feature
# entries counted at once when blocks are sized (`_row_sums`).
_PAIRS_AT_ONCE = 2**20


# The mutual pairs are held in pieces of at least this many (`_matched_as_they_come`):
# arrays this large (64 and 128 MB) are mapped apart from the heap, so each is given back
# to the system once the graph is written from it; a block's pairs (about 1 MB at 3x10^5
# sentences) stay in the heap after they are let go (the graph of 3x10^5 sentences in the
# rows' own order peaked at 3.9 GB with them, 3.4 GB with these).
_PAIRS_HELD_TOGETHER = 2**24


# The symmetric graph is written in ranges of rows, one after the other, from the pairs
# bucketed by the ranges of their ends (`_write_ranges`): at most this many ranges (each
# pair's bucket is an int8), and about as many that each bucket holds at least
# ``_PAIRS_IN_A_BUCKET`` pairs, 32 MB: arrays as large are mapped apart from the heap, so
# given back once written (8 at 10^6 sentences, 3 at 10^5, and one below about 8
# million pairs, 3x10^4 sentences).
_MOST_WRITE_RANGES = 8
_PAIRS_IN_A_BUCKET = 2**21


def _assembled(pairs):
    """The symmetric weights of `_mutual_pairs`' pairs (their list is emptied)."""
    symmetric, found, n_rows, index_dtype, vertices = pairs
    if symmetric:
        return _symmetric_weights(found, n_rows, index_dtype, vertices)
    weights = _mutual_weights(found, n_rows, index_dtype)
    if vertices is None:
        return weights
    row_of_vertex = np.empty_like(vertices)
    row_of_vertex[vertices] = np.arange(n_rows)
    weights = weights[row_of_vertex][:, row_of_vertex]
    weights.sort_indices()
    return weights


def _matched_as_they_come(pieces, n_rows, n_neighbors, min_similarity, excluded,
                          index_dtype, vertices=None):
    """The mutual pairs among the kept ones, matched as the pieces (`_kept_rows`, of
    consecutive blocks of rows) come, for a symmetric search (each pair's similarity the
    same from both ends, and so its candidates): only the mutual pairs are held, never every
    row's k kept pairs. A list of (how many pairs each later row has, earlier row,
    similarity) arrays, the pairs in order of their later row, the pieces' rows all rows in
    order (`_symmetric_weights`): counts, not a later row a pair (0.8 GB at 10^6
    sentences), those of consecutive blocks joined into pieces of about
    ``_PAIRS_HELD_TOGETHER`` pairs.

    Row u keeps v iff their similarity is above u's k-th best, or equal to it with v no
    later than the last of u's kept ties (ties go to the lower index); below k kept, u kept
    every candidate. So a pair kept by the later row v is mutual iff the earlier row u's
    threshold keeps it: each mutual pair is found once, in the later row's block. With
    ``vertices``, ties go to the lower vertex, and a tie is kept up to the last kept one's.
    """
    threshold = np.full(n_rows, min_similarity)  # keeps every candidate
    last_tie = np.full(n_rows, -1, dtype=np.int64)
    found, waiting, n_waiting, start = [], [], 0, 0
    for counts, targets, values in pieces:
        stop = start + counts.size
        sources = np.repeat(np.arange(start, stop), counts)
        nonempty = np.flatnonzero(counts)
        if nonempty.size:
            firsts = (np.cumsum(counts) - counts)[nonempty]
            full = counts[nonempty] >= n_neighbors
            rows = start + nonempty[full]
            threshold[rows] = np.minimum.reduceat(values, firsts)[full]
            tied = np.flatnonzero(values == threshold[sources])
            ties = np.full(values.size, -1, dtype=np.int64)
            ties[tied] = _vertex(targets[tied], vertices)
            last_tie[rows] = np.maximum.reduceat(ties, firsts)[full]
        # An excluded row keeps candidates but is no one's: its pairs are not mutual.
        earlier = targets < sources
        if excluded is not None:
            earlier &= ~excluded[sources]
        u, v, value = targets[earlier], sources[earlier], values[earlier]
        mutual = (value > threshold[u]) | ((value == threshold[u])
                                           & (_vertex(v, vertices) <= last_tie[u]))
        waiting.append((np.bincount(v[mutual] - start, minlength=counts.size).astype(
            index_dtype), u[mutual], value[mutual]))
        n_waiting += np.count_nonzero(mutual)
        if n_waiting >= _PAIRS_HELD_TOGETHER:
            found.append(_joined(waiting))
            n_waiting = 0
        start = stop
    if waiting:
        found.append(_joined(waiting))
    return found


def _symmetric_weights(found, n_rows, index_dtype, vertices=None):
    """The CSR matrix with both (v, u) and (u, v) of each pair of ``found``
    (`_matched_as_they_come`; the list is emptied), of the rows' ``vertices``, written in
    place (`_entries_in_turn`): the result and the pairs not yet written are the only large
    arrays."""
    vertices = (np.arange(n_rows) if vertices is None else vertices).astype(index_dtype)
    counts = np.zeros(n_rows, dtype=np.int64)
    counts[vertices] = np.concatenate([later_counts for later_counts, _, _ in found])
    for _, earlier, _ in found:
        counts += np.bincount(vertices[earlier], minlength=n_rows)
    indptr = np.zeros(n_rows + 1, dtype=index_dtype)
    np.cumsum(counts, out=indptr[1:])
    del counts
    indices = np.empty(indptr[-1], dtype=index_dtype)
    data = np.empty(indptr[-1])
    free = indptr[:-1].astype(np.int64)  # each vertex's next free place
    for rows, columns, values in _entries_in_turn(found, vertices, indptr, index_dtype):
        _scattered(free, indices, data, rows, columns, values)
    weights = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_rows), copy=False)
    weights.sort_indices()  # a row's entries come in the order they were written
    return weights


def _entries_in_turn(found, vertices, indptr, index_dtype):
    """The entries (rows, columns, values) of both directions of the pairs of ``found``
    (emptied, each piece let go once read), about ``_PAIRS_AT_ONCE`` at a time, for the
    CSR matrix of ``indptr``: those of one range of its rows after another (ranges of about
    as many entries, `_write_ranges` of them), and each bucket of pairs let go once both its
    ranges are written (`_by_ranges`). At ``vertices`` in another order than the rows' each
    piece of pairs writes all over the result, so, written a piece at a time, the result
    was whole beside all the pairs (2.5 GB of them beside 5 GB at 10^6 sentences)."""
    n_rows = indptr.size - 1
    n_ranges = _write_ranges(int(indptr[-1]) // 2)
    if n_ranges == 1:  # one bucket: the pieces themselves
        for later, other, values in _pair_slices(found, vertices, let_go=True):
            yield later, other, values
            yield other, later, values
        return
    bounds = np.searchsorted(indptr, np.linspace(0, indptr[-1], n_ranges + 1)[1:-1])
    range_of = np.repeat(np.arange(n_ranges, dtype=np.int8),
                         np.diff(np.concatenate([[0], bounds, [n_rows]])))
    buckets = _by_ranges(found, vertices, range_of, n_ranges, index_dtype)
    for turn in range(n_ranges):
        for (low_range, high_range), pairs in sorted(buckets.items()):
            for first in range(0, pairs.size, _PAIRS_AT_ONCE):
                some = pairs[first:first + _PAIRS_AT_ONCE]
                if low_range == turn:
                    yield some["low"], some["high"], some["value"]
                if high_range == turn:
                    yield some["high"], some["low"], some["value"]
            if high_range == turn:
                del buckets[low_range, high_range]


def _write_ranges(n_pairs):
    """How many ranges of rows the graph of ``n_pairs`` pairs is written in."""
    return max(1, min(_MOST_WRITE_RANGES, math.isqrt(n_pairs // _PAIRS_IN_A_BUCKET)))


def _by_ranges(found, vertices, range_of, n_ranges, index_dtype):
    """The pairs of ``found`` (emptied, each piece let go once read) by the ranges of their
    vertices (``range_of``): a dict from (low range, high range) to an array of the pairs
    ("low": the vertex in the low range, "high", "value"), each bucket one allocation."""
    pair_dtype = np.dtype([("low", index_dtype), ("high", index_dtype), ("value", np.float64)])
    sizes = np.zeros(n_ranges**2, dtype=np.int64)
    for later, other, _ in _pair_slices(found, vertices):
        sizes += np.bincount(_range_key(later, other, range_of, n_ranges),
                             minlength=sizes.size)
    buckets = {divmod(key, n_ranges): np.empty(size, dtype=pair_dtype)
               for key, size in enumerate(sizes.tolist()) if size}
    filled = dict.fromkeys(buckets, 0)
    for later, other, values in _pair_slices(found, vertices, let_go=True):
        key = _range_key(later, other, range_of, n_ranges)
        is_low = range_of[later] <= range_of[other]
        low, high = np.where(is_low, later, other), np.where(is_low, other, later)
        order = np.argsort(key, kind="stable")
        run_starts, run_lengths = _runs(key[order])
        for run_start, length in zip(run_starts.tolist(), run_lengths.tolist()):
            taken = order[run_start:run_start + length]
            bucket = divmod(int(key[taken[0]]), n_ranges)
            place = slice(filled[bucket], filled[bucket] + length)
            buckets[bucket]["low"][place] = low[taken]
            buckets[bucket]["high"][place] = high[taken]
            buckets[bucket]["value"][place] = values[taken]
            filled[bucket] += length
    return buckets


def _pair_slices(found, vertices, let_go=False):
    """The later row's vertex, the earlier row's and the value of each pair of the pieces
    of ``found`` (consecutive rows from 0), about ``_PAIRS_AT_ONCE`` pairs at a time; with
    ``let_go``, each piece is let go once read and the list is emptied."""
    start = 0
    for number in range(len(found)):
        later_counts, earlier, values = found[number]
        if let_go:
            found[number] = None
        pair_of_row = np.concatenate([[0], np.cumsum(later_counts)])
        for first, last in _row_slices(pair_of_row):
            pairs = slice(pair_of_row[first], pair_of_row[last])
            later = vertices[start + np.repeat(np.arange(first, last),
                                               later_counts[first:last])]
            yield later, vertices[earlier[pairs]], values[pairs]
        start += later_counts.size
    if let_go:
        found.clear()


def _range_key(later, other, range_of, n_ranges):
    """Each pair's bucket, low range * n_ranges + high range (an int8)."""
    first, second = range_of[later], range_of[other]
    return np.minimum(first, second) * np.int8(n_ranges) + np.maximum(first, second)


def _scattered(free, indices, data, rows, columns, values):
    """Write the entries (``rows``, ``columns``, ``values``) at their rows' ``free`` places
    in CSR ``indices`` and ``data``, and move those places on."""
    order = np.argsort(rows, kind="stable")
    ranked = rows[order]
    starts, counts = _runs(ranked)
    place = free[ranked] + (np.arange(ranked.size) - np.repeat(starts, counts))
    indices[place], data[place] = columns[order], values[order]
    # Only these rows move on (a bincount over all rows would cost n_rows a slice).
    free[ranked[starts]] += counts


def _joined(pieces):
    """The three arrays of a list of pieces ``(a, b, c)``, each joined; the list is emptied
    and each array's pieces go once it is joined (one array at a time)."""
    parts = [list(column) for column in zip(*pieces)]
    pieces.clear()
    return [np.concatenate(parts.pop(0)) for _ in range(3)]


def _mutual_weights(kept, n_rows, index_dtype):
    """The symmetric weights of the mutual pairs among the kept ones (``_kept_rows`` pieces
    of consecutive blocks of rows; the list is emptied): each weight the smaller of the
    pair's two values."""
    counts, targets, values = _joined(kept)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
    directed = sp.csr_matrix((values, targets, indptr), shape=(n_rows, n_rows))
    directed.sort_indices()
    del counts, targets, values, indptr
    # Absent entries are 0 and kept values positive, so the minimum keeps mutual pairs only.
    # Row blocks against the same columns' transpose: a block's worth of temporary pairs,
    # not a transposed copy of them all and a result sized for both.
    inner = np.searchsorted(directed.indptr, np.linspace(0, directed.nnz, _MUTUAL_BLOCKS + 1))
    bounds = np.unique(np.concatenate([[0], np.clip(inner, 0, n_rows), [n_rows]]))
    weights = sp.vstack([directed[start:stop].minimum(directed[:, start:stop].T)
                         for start, stop in zip(bounds[:-1], bounds[1:])], format="csr")
    weights.eliminate_zeros()
    return weights


def _row_slices(indptr):
    """(first, last) of consecutive slices of the rows at ``indptr`` with about
    ``_PAIRS_AT_ONCE`` entries each (or one row with more)."""
    n_rows = indptr.size - 1
    bounds = np.unique(np.concatenate([
        [0], np.searchsorted(indptr, np.arange(0, indptr[-1], _PAIRS_AT_ONCE), side="right"),
        [n_rows]]))
    return zip(bounds[:-1].tolist(), bounds[1:].tolist())


def _vertex(rows, vertices):
    """The vertices of ``rows`` (themselves when ``vertices`` is None)."""
    return rows if vertices is None else vertices[rows]


def _runs(ranked):
    """Where each run of equal values of the sorted ``ranked`` starts, and its length."""
    new_run = np.ones(ranked.size, dtype=bool)
    new_run[1:] = ranked[1:] != ranked[:-1]
    starts = np.flatnonzero(new_run)
    return starts, np.diff(np.append(starts, ranked.size))

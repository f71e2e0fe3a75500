"""The mutual k-nearest-neighbour search both graph builders share (He et al. 2013 §4.1):
rows of unit vectors are compared a block of rows at a time and only the k best of each row
are kept (or, for sparse rows, only the mutual pairs among them), so memory stays at most
about ``n_vertices * k`` plus one block, never ``n_vertices ** 2``. The blocks are searched
in threads, or, inside joblib's dask backend, as tasks on the cluster's workers; either way
the same graph as one thread.
"""

import numbers
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from ..utils import dask_client
from ._mutual import _PAIRS_AT_ONCE, _assembled, _matched_as_they_come, _row_slices, _runs, _vertex

# Above this fraction of nonzeros, dense arithmetic beats sparse: feature rows are compared
# with BLAS, and a block of similarities is searched with a partition per row rather than
# by sorting its nonzeros.
_DENSE_ENOUGH = 1 / 16

# The smallest similarity that makes an edge: below the smallest normal float a positive
# similarity is rounding noise (a vertex with such a degree would have 1 / degree = inf).
SMALLEST_SIMILARITY = np.finfo(np.float64).tiny

# Buckets of the histogram that narrows a sparse row's candidates before the exact sort.
_N_BUCKETS = 1024

# From this many rows the common features' term is bounded before it is computed
# (`_with_common_part`): at 3x10^5 and 10^6 sentences (4.3 and 13 million trigram types) the
# search took 0.81 and 0.71-0.74 of its time without the bound; at 3x10^4 (480,000 types) its
# blocks took 1.1 times as long with it, and about as long at 10^5 (docs/benchmarks.md).
_BOUNDED_TERMS_FROM = 2_000_000


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


def _mutual_knn(rows, n_neighbors, max_block_entries, min_similarity=0.0, own_rows=None,
                own_weight=0.0, min_own_similarity=None, common_rows=None, excluded=None,
                n_threads=1):
    """Mutual k-NN weights for the similarities ``rows @ rows.T``, a block of rows at a time.

    With ``own_rows``, the similarity is ``rows @ rows.T + own_weight * own_rows @ own_rows.T``
    and, with ``min_own_similarity``, only pairs with ``own_rows[u] @ own_rows[v] >
    min_own_similarity`` are candidates. With ``common_rows`` (sparse), the similarity is
    ``rows @ rows.T + common_rows @ common_rows.T`` and only pairs with ``rows[u] @ rows[v]
    > min_similarity`` are candidates: the pairs ``rows`` brings together, compared on all
    their features. The candidates of u are the v != u with similarity >
    ``min_similarity`` that are not ``excluded`` (so an excluded vertex has no mutual edge
    either). u keeps its ``n_neighbors`` most similar candidates, ties going to the lower
    index. (u, v) is an edge iff each keeps the other; its weight is the smaller of the two
    computed similarities (they can differ by rounding), so the result is exactly symmetric.
    Memory: the kept pairs (``n x n_neighbors``; for sparse rows without ``own_rows``
    only the mutual ones, `_matched_as_they_come`) plus about ``max_block_entries``
    similarities at a time, dense or (for sparse rows) the nonzeros of a sparse block, in
    each of ``n_threads`` threads, which search blocks at once.
    """
    return _assembled(_mutual_pairs(rows, n_neighbors, max_block_entries, min_similarity,
                                    own_rows, own_weight, min_own_similarity, common_rows,
                                    excluded, n_threads))


def _mutual_pairs(rows, n_neighbors, max_block_entries, min_similarity=0.0, own_rows=None,
                  own_weight=0.0, min_own_similarity=None, common_rows=None, excluded=None,
                  n_threads=1, vertices=None):
    """`_mutual_knn`'s search, up to its pairs, which `_assembled` makes the weights: a
    caller can free the rows in between (at 10^6 sentences the trigram graph's features are
    3 GB, held for nothing while the graph's 5 GB are assembled).

    ``vertices``: each row's vertex, a permutation (None: the row itself), for rows given
    in another order than their vertices' (`trigram_graph`'s, for speed): ties go to the
    lower vertex and the weights are the vertices', so the graph is the one of the rows in
    their vertices' order, bit for bit (sparse rows; ``excluded`` is by row).
    """
    search = _BlockSearch(rows, n_neighbors, max_block_entries,
                          max(min_similarity, SMALLEST_SIMILARITY), own_rows, own_weight,
                          min_own_similarity, common_rows, excluded, vertices)
    blocks = list(_row_blocks(search.rows, max_block_entries, by_nonzeros=own_rows is None))
    n_rows, index_dtype = search.n_rows, search.index_dtype
    pieces = _searched_pieces(search, blocks, n_threads)
    symmetric, min_similarity = search.symmetric, search.min_similarity
    # The pieces hold the search (its transposed rows) until the last block, and then
    # nothing does, before the pairs are matched.
    del search
    if symmetric:
        found = _matched_as_they_come(pieces, n_rows, n_neighbors, min_similarity, excluded,
                                      index_dtype, vertices)
        return symmetric, found, n_rows, index_dtype, vertices
    return symmetric, list(pieces), n_rows, index_dtype, vertices


def _searched_pieces(search, blocks, n_threads):
    """The kept pairs of ``blocks`` (`_kept_rows` pieces), in order of rows."""
    client = dask_client()
    if client is not None and len(blocks) > 1:
        yield from _cluster_blocks(client, search, blocks)
        return
    search.transpose()
    # Blocks are independent and come back in order, so any number of threads gives the
    # same graph; SciPy's sparse products and NumPy's sorts release the GIL.
    n_threads = max(1, min(n_threads, len(blocks)))
    with ThreadPoolExecutor(n_threads) as pool:
        for future in _submitted_ahead(partial(pool.submit, search), blocks, 2 * n_threads):
            yield from future.result()


def _submitted_ahead(submit, blocks, ahead):
    """The futures ``submit(start, stop)`` of ``blocks``, in order, each submitted when at
    most ``ahead`` others are waiting to be taken: a finished block's pairs are held until
    the caller takes them, so submitting every block at once would hold those of every
    block it has not reached (about 50 MB a block of the 200 at 10^6 sentences)."""
    waiting = deque()
    for block in blocks:
        waiting.append(submit(*block))
        if len(waiting) > ahead:
            yield waiting.popleft()
    while waiting:
        yield waiting.popleft()


class _BlockSearch:
    """The search of one block of rows of `_mutual_knn` (its parameters; ``search(start,
    stop)`` gives the block's kept pairs, `_kept_rows` pieces, once `transpose` has run).
    Pickled without the transposed rows, which a dask worker makes from the rows it is
    sent: a client that only sends the search out never holds them (3 GB at 10^6
    sentences)."""

    def __init__(self, rows, n_neighbors, max_block_entries, min_similarity, own_rows,
                 own_weight, min_own_similarity, common_rows, excluded, vertices=None):
        self.rows = _dense_if_dense_enough(rows)
        self.n_rows = self.rows.shape[0]
        self.own_rows = None if own_rows is None else _dense_if_dense_enough(own_rows)
        self.common_rows = self.has_common = self.common_norms = None
        if common_rows is not None:
            self.common_rows = sp.csr_matrix(common_rows)
            self.has_common = np.diff(self.common_rows.indptr) > 0
        if common_rows is not None and self.n_rows >= _BOUNDED_TERMS_FROM:
            # |common_rows[u] @ common_rows[v]| is at most the product of the two norms
            # (Cauchy-Schwarz); raised past the rounding of either side, so a bound of the
            # computed term too.
            self.common_norms = row_norms(self.common_rows) * (1 + 2**-20)
        self.n_neighbors, self.min_similarity = n_neighbors, min_similarity
        self.own_weight, self.min_own_similarity = own_weight, min_own_similarity
        self.excluded, self.vertices = excluded, vertices
        # Sparse rows with no own rows: a pair's similarity is the same sparse products
        # (and common term) added in the same order from either end, so each end's value
        # is the other's, bit for bit (`_matched_as_they_come` needs it).
        self.symmetric = sp.issparse(self.rows) and own_rows is None
        self.dense_step = max(1, max_block_entries // self.n_rows)
        self.index_dtype = np.int32 if self.n_rows * n_neighbors < 2**31 else np.int64
        self.columns = self.own_columns = None

    def transpose(self):
        """Make the transposed rows the products need, where the blocks are searched."""
        self.columns = _transposed(self.rows)
        self.own_columns = None if self.own_rows is None else _transposed(self.own_rows)

    def __getstate__(self):
        return {name: value for name, value in vars(self).items()
                if name not in ("columns", "own_columns")}

    def __setstate__(self, state):
        vars(self).update(state)
        self.transpose()

    def __call__(self, start, stop):
        similarities = safe_sparse_dot(self.rows[start:stop], self.columns)
        if sp.issparse(similarities) and self.own_rows is None and (
                similarities.nnz < _DENSE_ENOUGH * (stop - start) * self.n_rows):
            similarities = similarities.tocsr()
            # The block row of every similarity, made once for both passes over them.
            local = np.repeat(np.arange(stop - start), np.diff(similarities.indptr))
            if self.common_rows is not None:
                similarities, local = self._with_common_part(similarities, local, start)
            candidates = _sparse_candidates(similarities, local, start, self.n_neighbors,
                                            self.min_similarity, self.excluded)
            return [_kept_rows(candidates, self.n_neighbors, start, stop, self.index_dtype,
                               self.vertices)]
        # A dense block, or a sparse one too dense to search sparsely: dense slices of at
        # most max_block_entries.
        pieces = []
        for first in range(start, stop, self.dense_step):
            last = min(first + self.dense_step, stop)
            block = self._dense_block(_to_dense(similarities[first - start:last - start]),
                                      first, last)
            candidates = _dense_candidates(block, first, self.n_neighbors,
                                           self.min_similarity, self.excluded)
            pieces.append(_kept_rows(candidates, self.n_neighbors, first, last,
                                     self.index_dtype, self.vertices))
        return pieces

    def _with_common_part(self, similarities, local, start):
        """The candidates (u, v) of a sparse block of similarities of rows start..
        (``local``: each entry's row in the block) with ``common_rows[u] @ common_rows[v]``
        added, less those that cannot be among their row's k best whatever their term, which
        get none; with each entry's row in the block.

        From ``_BOUNDED_TERMS_FROM`` rows (below, every candidate gets its term), about 2k
        of a row's candidates, the most similar on ``rows`` alone, get their term first (all
        of a row's when it has at most 2k). A row with k of them still candidates has a k-th
        best at least their floor (`_floors`): its other candidates whose similarity plus
        the largest term they could get falls below it are left out (at 10^6 sentences, 61 %
        of the terms and 65 % of the candidates). Each term is computed as before, so the k
        best are the same, bit for bit.
        """
        values, targets = similarities.data, similarities.indices
        # Most types have none of the few common features: only pairs of two that have
        # some get a term.
        needs_term = (self.has_common[start:start + similarities.shape[0]][local]
                      & self.has_common[targets])
        if self.common_norms is None:
            needs_term &= values > self.min_similarity
            buckets = None
        else:
            candidate = _candidate_entries(values, local, targets, start,
                                           self.min_similarity, self.excluded)
            needs_term &= candidate
            buckets = _kth_buckets(values, local, candidate, similarities.indptr,
                                   2 * self.n_neighbors)
        if buckets is None:  # unbounded, or no row has more than 2k candidates
            self._add_terms(values, np.flatnonzero(needs_term), local, start, targets)
            return similarities, local
        top = buckets[0] >= buckets[1]
        self._add_terms(values, np.flatnonzero(needs_term & top), local, start, targets)
        floor = self._floors(values, local, np.flatnonzero(
            top & candidate & (values > self.min_similarity)), similarities.shape[0])
        rest = np.flatnonzero(candidate & ~top)
        largest = values[rest] + (self.common_norms[start + local[rest]]
                                  * self.common_norms[targets[rest]])
        out = rest[largest < floor[local[rest]]]
        candidate[out] = needs_term[out] = False
        self._add_terms(values, rest[needs_term[rest]], local, start, targets)
        kept = np.flatnonzero(candidate & (values > self.min_similarity))
        local = local[kept]
        indptr = np.zeros_like(similarities.indptr)
        np.cumsum(np.bincount(local, minlength=similarities.shape[0]), out=indptr[1:])
        return sp.csr_matrix((values[kept], targets[kept], indptr),
                             shape=similarities.shape), local

    def _floors(self, values, local, still, n_block):
        """Each block row's floor under its k-th best similarity: the smallest of at least
        k of its candidates ``still`` (with their terms), those from the bucket of their
        k-th best up; -inf for a row with fewer than k."""
        counts = np.bincount(local[still], minlength=n_block)
        buckets = _kth_buckets(values[still], local[still], np.ones(still.size, dtype=bool),
                               np.concatenate([[0], np.cumsum(counts)]), self.n_neighbors)
        if buckets is not None:
            still = still[buckets[0] >= buckets[1]]
        floor = np.full(n_block, np.inf)
        np.minimum.at(floor, local[still], values[still])
        floor[np.bincount(local[still], minlength=n_block) < self.n_neighbors] = -np.inf
        return floor

    def _add_terms(self, values, entries, local, start, targets):
        """Add the common term to the similarities ``values[entries]`` of rows start.."""
        values[entries] += _common_terms(self.common_rows, start + local[entries],
                                         targets[entries])

    def _dense_block(self, block, first, last):
        """``block``, the similarities of rows first..last over ``rows``, with the own and
        common rows' terms added; the pairs that are not candidates below
        ``min_similarity``."""
        outside = None
        if self.common_rows is not None:
            outside = block <= self.min_similarity
            # Pair by pair, as a sparse block adds it: the same term from either end.
            local, targets = np.nonzero(~outside & self.has_common[first:last, None]
                                        & self.has_common)
            block[local, targets] += _common_terms(self.common_rows, first + local, targets)
        if self.own_rows is not None:
            own = _to_dense(safe_sparse_dot(self.own_rows[first:last], self.own_columns))
            if self.min_own_similarity is not None:
                outside = own <= self.min_own_similarity
            own *= self.own_weight
            block += own
        if outside is not None:
            # Shift the non-candidates below min_similarity rather than to -inf: the
            # partition slows threefold on rows full of equal values.
            shift = max(block.max() - self.min_similarity, 0.0) + 1.0
            np.subtract(block, shift, out=block, where=outside)
        return block


def _cluster_blocks(client, search, blocks):
    """The kept pairs of ``blocks`` searched on the workers of a dask cluster: the search
    (its rows) sent to every worker once, one task per block (at most two a worker's
    thread ahead of the caller), the pieces back in order, so the same graph as in one
    process."""
    held = client.scatter(search, broadcast=True, hash=False)
    submit = partial(client.submit, _search_block, held, pure=False)
    for future in _submitted_ahead(submit, blocks, 2 * sum(client.nthreads().values())):
        yield from future.result()
        future.release()


def _search_block(search, start, stop):
    return search(start, stop)


def _common_terms(common_rows, sources, targets):
    """``common_rows[u] @ common_rows[v]`` of the pairs (u, v) of ``sources`` and
    ``targets``, a few pairs at a time."""
    terms = np.empty(sources.size)
    for first in range(0, sources.size, _PAIRS_AT_ONCE):
        pairs = slice(first, first + _PAIRS_AT_ONCE)
        terms[pairs] = np.asarray(common_rows[sources[pairs]].multiply(
            common_rows[targets[pairs]]).sum(axis=1)).ravel()
    return terms


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
        ends = np.cumsum(np.minimum(_row_sums(rows, column_counts), n_rows))
        marks = np.arange(1, int(ends[-1] // max_block_entries) + 1) * max_block_entries
        stops = np.searchsorted(ends, marks, side="right")
    else:
        step = max(1, max_block_entries // n_rows)
        stops = np.arange(step, n_rows, step)
    stops = np.unique(np.concatenate([stops[(stops > 0) & (stops < n_rows)], [n_rows]]))
    return zip(np.concatenate([[0], stops[:-1]]).tolist(), stops.tolist())


def _row_sums(rows, column_values):
    """Each row's sum of ``column_values`` over its entries' columns, a slice of rows at a
    time (their rows and values over all 261 million entries at 10^6 sentences: 4 GB)."""
    indptr = rows.indptr
    sums = np.empty(rows.shape[0])
    for first, last in _row_slices(indptr):
        row_of_entry = np.repeat(np.arange(last - first), np.diff(indptr[first:last + 1]))
        sums[first:last] = np.bincount(
            row_of_entry, weights=column_values[rows.indices[indptr[first]:indptr[last]]],
            minlength=last - first)
    return sums


def _kept_rows(candidates, n_neighbors, start, stop, index_dtype, vertices=None):
    """The k best candidates of rows start..stop (`_top_k`; ties to the lower vertex) as
    CSR pieces: counts, targets, values."""
    sources, targets, values = _top_k(n_neighbors, *candidates, vertices=vertices)
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


def _sparse_candidates(similarities, local, start, n_neighbors, min_similarity, excluded):
    """(row, column, similarity, sure) of a sparse block's candidates that can be among the k
    best of their row (a superset: all of the bucket that holds the row's k-th best); ``sure``
    marks those that are among them (`_top_k`). ``local``: each entry's row in the block."""
    targets, values = similarities.indices, similarities.data
    keep = _candidate_entries(values, local, targets, start, min_similarity, excluded)
    buckets = _kth_buckets(values, local, keep, similarities.indptr, n_neighbors)
    if buckets is not None:
        bucket, kth_at = buckets
        keep &= bucket >= kth_at
        kept = np.flatnonzero(keep)
        # Above the k-th best's bucket a row has fewer than k candidates, all among its best.
        sure = bucket[kept] > kth_at[kept]
    else:
        kept = np.flatnonzero(keep)
        sure = np.ones(kept.size, dtype=bool)
    return local[kept] + start, targets[kept].astype(np.int64), values[kept], sure


def _candidate_entries(values, local, targets, start, min_similarity, excluded):
    """Which entries of a sparse block of similarities of rows start.. are candidates:
    above ``min_similarity``, not a row's own, not ``excluded``."""
    keep = (values > min_similarity) & (local != targets - start)
    if excluded is not None:
        keep &= ~excluded[targets]
    return keep


def _kth_buckets(values, local, keep, indptr, n_neighbors):
    """Each entry's bucket in a histogram of the ``keep`` values of its row (a sparse
    block's, rows at ``indptr``), and the bucket of its row's k-th best of them: the row
    keeps fewer than k above that bucket, at least k from it up. -1 for a row with at most
    k (all among its k best); None when no row has more.

    Sorting every candidate would cost most of the search (rows of common trigrams have
    thousands): a histogram says which bucket holds a long row's k-th best, and only the
    buckets from there up need the exact sort. As many buckets as a long row has kept
    values on average keeps the histograms no larger than the block; other entries go to
    an extra last bin.
    """
    running = np.concatenate([[0], np.cumsum(keep)])
    long = running[indptr[1:]] - running[indptr[:-1]] > n_neighbors
    if not long.any():
        return None
    n_long = np.count_nonzero(long)
    in_long = keep & long[local]
    n_buckets = int(np.clip(np.count_nonzero(in_long) // n_long, 16, _N_BUCKETS))
    bucket = (values * (n_buckets / values[in_long].max())).astype(np.int64)
    np.clip(bucket, 0, n_buckets - 1, out=bucket)
    long_row = np.cumsum(long) - 1
    bins = np.where(in_long, long_row[local] * n_buckets + bucket, n_long * n_buckets)
    histogram = np.bincount(bins, minlength=n_long * n_buckets + 1)[:-1]
    from_top = np.cumsum(histogram.reshape(n_long, n_buckets)[:, ::-1], axis=1)
    kth_bucket = np.full(indptr.size - 1, -1, dtype=np.int64)
    kth_bucket[long] = n_buckets - 1 - np.argmax(from_top >= n_neighbors, axis=1)
    return bucket, kth_bucket[local]


def _dense_candidates(similarities, start, n_neighbors, min_similarity, excluded):
    """(row, column, similarity, sure) of a dense block's candidates that can be among the k
    best of their row: at least as similar as the row's k-th best (ties may give more than
    k); ``sure`` marks those more similar (`_top_k`)."""
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
    values = similarities.reshape(-1)[kept]
    # Above the k-th best value a row has fewer than k candidates: only ties are sorted.
    return sources + start, targets, values, values > threshold[sources]


def _top_k(k, sources, targets, values, sure=None, vertices=None):
    """The k most similar candidates of each source, ties to the lower target (its vertex,
    with ``vertices``). Candidates come grouped by source, and stay so; ``sure`` marks
    candidates known to be among the k best of their source (fewer than k a source), so
    only the others are sorted."""
    keep = np.zeros(sources.size, dtype=bool) if sure is None else sure.copy()
    rest = np.flatnonzero(~keep)
    order = rest[np.lexsort((_vertex(targets[rest], vertices), -values[rest], sources[rest]))]
    ranked = sources[order]
    starts, counts = _runs(ranked)
    # The places each source has left after its sure candidates (sources run first..last).
    first, last = (sources[0], sources[-1]) if sources.size else (0, -1)
    places = k - np.bincount(sources[keep] - first, minlength=last - first + 1)
    rank = np.arange(ranked.size) - np.repeat(starts, counts)
    keep[order[rank < places[ranked - first]]] = True
    return sources[keep], targets[keep], values[keep]

"""Approximate mutual k-NN search through faiss (the optional extra ``ann``), for graphs
over more tokens than the exact blocked search of `_search` serves in reasonable time (its
time grows with the square of the tokens).

Each row's candidates come from a hierarchical navigable small-world index (faiss's
``IndexHNSWFlat``, inner product) over the rows as dense float32 vectors; the candidates'
similarities are then computed again exactly, in float64 from the rows themselves, so that
the filters, the ranking and the weights are those of the exact search, applied to the
candidates the index found.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD

from ._mutual import _mutual_weights
from ._search import SMALLEST_SIMILARITY, _kept_rows
from ._similarity_graph import _token_positions

# The index's settings: links per vertex (M), and the candidate lists while adding
# (efConstruction) and searching (efSearch). On 10^5 letter-like rows (OCR letters with 5 %
# of their pixels flipped; k = 20, the handwriting settings) the mutual graph kept 97.7 % of
# a sample's exact edges in 39 s; efConstruction = 100 and efSearch = 128 kept 99.2 % in
# 59 s, M = 32 hardly more at twice the time of building.
_CONNECTIVITY = 16
_EXPANSION_ADD = 64
_EXPANSION_SEARCH = 64
# Candidates searched per row: this many per neighbour wanted, plus one (the row itself).
_CANDIDATES_PER_NEIGHBOUR = 2
# Sparse rows wider than this are reduced by truncated SVD for the index only.
_INDEX_DIMENSIONS = 256
# Rows searched, and their candidates scored, at a time: bounds the gathered rows' memory.
_BLOCK_ROWS = 1024


def faiss_module():
    """faiss, or an ImportError saying how to install it."""
    try:
        import faiss
    except ImportError as error:
        raise ImportError("the approximate k-NN search needs faiss: pip install faiss-cpu "
                          "(or sklearn_ssl_crf[ann])") from error
    return faiss


# From this many vertices 'auto' searches approximately (the exact search of 10^5 letters
# takes about 6 minutes on 2 cores, and grows with the square).
APPROXIMATE_FROM = 200_000


def search_algorithm(algorithm, n_vertices):
    """'exact' or 'hnsw' for a builder's ``algorithm`` parameter and its number of vertices
    ('auto': 'hnsw' from `APPROXIMATE_FROM` vertices when faiss is installed); an
    ImportError with the install hint for 'hnsw' without faiss."""
    if algorithm not in ("auto", "exact", "hnsw"):
        raise ValueError(f"algorithm must be 'auto', 'exact' or 'hnsw', got {algorithm!r}")
    if algorithm == "auto":
        if n_vertices < APPROXIMATE_FROM:
            return "exact"
        try:
            faiss_module()
        except ImportError:
            return "exact"
        return "hnsw"
    if algorithm == "hnsw":
        faiss_module()
    return algorithm


def approximate_knn_weights(own, n_neighbors, min_similarity=None, self_weight=None,
                            offsets=None):
    """`knn_graph`'s weights, each token's candidates found by an HNSW index instead of
    compared with every token.

    ``own`` holds the tokens' unit rows (CSR), ``offsets`` the sequences' bounds (needed
    with ``self_weight`` only; `trigram_graph` passes its types' rows without). The index
    holds ``[sqrt(a) own, sqrt(1 - a) left, sqrt(1 - a) right]`` (a = ``self_weight``; the
    rows of each token's neighbours, zero where there is none; ``own`` alone without
    ``self_weight``), whose inner products are the similarities `knn_graph` ranks by. It is
    searched for ``2 * n_neighbors + 1`` candidates per token, whose similarities are
    computed again exactly from ``own`` before `knn_graph`'s filters and the top
    ``n_neighbors``. The vectors are built a block of rows at a time, in float32, without
    the neighbours' rows as matrices of their own. The index is built with one thread (with
    more, its links depend on the threads' timing); the search, which is deterministic,
    uses all of faiss's threads.
    """
    faiss = faiss_module()
    own = sp.csr_matrix(own)
    n_rows = own.shape[0]
    alpha = 1.0 if self_weight is None else self_weight
    shifts = {}
    if alpha < 1:
        position, length = _token_positions(offsets)
        shifts = {-1: position > 0, 1: position < length - 1}
    indexed = own
    if own.shape[1] > _INDEX_DIMENSIONS and n_rows > _INDEX_DIMENSIONS:
        indexed = TruncatedSVD(_INDEX_DIMENSIONS, random_state=0).fit_transform(own)
        indexed = indexed.astype(np.float32)
    dimensions = indexed.shape[1] * (1 + len(shifts))
    index = faiss.IndexHNSWFlat(dimensions, _CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _EXPANSION_ADD
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        # Added a block at a time (in order, as one add would), so that the index's copy is
        # the only one of all the vectors.
        for _, _, vectors in _vector_blocks(indexed, alpha, shifts):
            index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    n_candidates = min(n_rows, _CANDIDATES_PER_NEIGHBOUR * n_neighbors + 1)
    index.hnsw.efSearch = max(_EXPANSION_SEARCH, n_candidates)
    # Without a row of its own a token has no similarity s, only its neighbours'.
    excluded = np.asarray(abs(own).sum(axis=1)).ravel() == 0 if shifts else None
    index_dtype = np.int32 if n_rows * n_neighbors < 2**31 else np.int64
    kept = []
    for start, stop, vectors in _vector_blocks(indexed, alpha, shifts):
        found = index.search(vectors, n_candidates)[1].astype(np.int64).ravel()
        sources = np.repeat(np.arange(start, stop), n_candidates)
        keep = (found >= 0) & (found != sources)
        if excluded is not None:
            keep[keep] = ~excluded[found[keep]]
        sources, targets = sources[keep], found[keep]
        own_similarity = _pair_similarities(own, sources, targets)
        if shifts:
            values = alpha * own_similarity
            for shift, has_neighbour in shifts.items():
                both = np.flatnonzero(has_neighbour[sources] & has_neighbour[targets])
                values[both] += (1 - alpha) * _pair_similarities(
                    own, sources[both] + shift, targets[both] + shift)
            keep = values > SMALLEST_SIMILARITY
            if min_similarity is not None:
                keep &= own_similarity > min_similarity
        else:
            values = own_similarity
            keep = values > max(min_similarity or 0.0, SMALLEST_SIMILARITY)
        kept.append(_kept_rows((sources[keep], targets[keep], values[keep]), n_neighbors,
                               start, stop, index_dtype))
    return _mutual_weights(kept, n_rows, index_dtype)


def _vector_blocks(rows, alpha, shifts):
    """(start, stop, float32 vectors) of consecutive blocks of the index's vectors:
    ``sqrt(alpha)`` times the rows and, for each shift, ``sqrt(1 - alpha)`` times the row
    that many tokens on where it is in the same sequence (zeros elsewhere)."""
    n_rows, width = rows.shape
    for start in range(0, n_rows, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n_rows)
        # The block and one row either side, for the neighbours' rows.
        first, last = max(start - 1, 0), min(stop + 1, n_rows)
        block = rows[first:last]
        block = block.toarray() if sp.issparse(block) else block
        local = np.arange(start, stop)
        vectors = np.zeros((stop - start, width * (1 + len(shifts))), dtype=np.float32)
        vectors[:, :width] = np.sqrt(alpha) * block[local - first]
        for column, (shift, has_neighbour) in enumerate(shifts.items(), start=1):
            inside = np.flatnonzero(has_neighbour[start:stop])
            vectors[inside, column * width:(column + 1) * width] = (
                np.sqrt(1 - alpha) * block[inside + start + shift - first])
        yield start, stop, vectors


def _pair_similarities(rows, sources, targets):
    """``rows[sources[i]] @ rows[targets[i]]`` for every i, of CSR rows (wide ones without
    a dense copy of the gathered rows)."""
    if rows.shape[1] > _INDEX_DIMENSIONS:
        return np.asarray(rows[sources].multiply(rows[targets]).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", rows[sources].toarray(), rows[targets].toarray())

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

from ._search import _dense_if_dense_enough, _kept_rows, _mutual_weights

# The index's settings: links per vertex (M), and the candidate lists while adding
# (efConstruction) and searching (efSearch). On 10^5 letter-like rows (OCR letters with 5 %
# of their pixels flipped) they found 98 % of each row's 20 nearest neighbours; M = 32 and
# efConstruction = 200 found hardly more at twice the time of building.
_CONNECTIVITY = 16
_EXPANSION_ADD = 100
_EXPANSION_SEARCH = 128
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


def approximate_mutual_knn(rows, n_neighbors, min_similarity=0.0, own_rows=None,
                           own_weight=0.0, min_own_similarity=None, excluded=None):
    """`_search._mutual_knn`'s weights, each row's candidates found by an HNSW index
    instead of compared with every row.

    The index holds ``[sqrt(own_weight) own_rows, rows]``, whose inner products are the
    similarities ``_mutual_knn`` ranks by; it is searched for ``2 * n_neighbors + 1``
    candidates per row, whose similarities are recomputed exactly before the filters and
    the top ``n_neighbors``. The index is built with one thread (with more, its links
    depend on the threads' timing); the search, which is deterministic, uses all of
    faiss's threads.
    """
    faiss = faiss_module()
    n_rows = rows.shape[0]
    vectors = _index_vectors(rows, own_rows, own_weight)
    index = faiss.IndexHNSWFlat(vectors.shape[1], _CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _EXPANSION_ADD
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    n_candidates = min(n_rows, 2 * n_neighbors + 1)
    index.hnsw.efSearch = max(_EXPANSION_SEARCH, n_candidates)
    index_dtype = np.int32 if n_rows * n_neighbors < 2**31 else np.int64
    rows = _dense_if_dense_enough(rows)
    own_rows = None if own_rows is None else _dense_if_dense_enough(own_rows)
    kept = []
    for start in range(0, n_rows, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n_rows)
        found = index.search(vectors[start:stop], n_candidates)[1].astype(np.int64).ravel()
        sources = np.repeat(np.arange(start, stop), n_candidates)
        keep = (found >= 0) & (found != sources)
        if excluded is not None:
            keep[keep] = ~excluded[found[keep]]
        sources, targets = sources[keep], found[keep]
        values = _pair_similarities(rows, sources, targets)
        keep = np.ones(sources.size, dtype=bool)
        if own_rows is not None:
            own = _pair_similarities(own_rows, sources, targets)
            if min_own_similarity is not None:
                keep = own > min_own_similarity
            values += own_weight * own
        keep &= values > min_similarity
        kept.append(_kept_rows((sources[keep], targets[keep], values[keep]), n_neighbors,
                               start, stop, index_dtype))
    return _mutual_weights(kept, n_rows, index_dtype)


def _index_vectors(rows, own_rows, own_weight):
    """The rows the index holds: dense float32, sparse parts wider than
    `_INDEX_DIMENSIONS` reduced by truncated SVD (inner products kept approximately)."""
    parts = [rows] if own_rows is None else [np.sqrt(own_weight) * own_rows, rows]
    dense = []
    for part in parts:
        if sp.issparse(part) and part.shape[1] > _INDEX_DIMENSIONS:
            part = TruncatedSVD(_INDEX_DIMENSIONS, random_state=0).fit_transform(part)
        dense.append(part.toarray() if sp.issparse(part) else np.asarray(part))
    return np.ascontiguousarray(np.hstack(dense), dtype=np.float32)


def _pair_similarities(rows, sources, targets):
    """``rows[sources[i]] @ rows[targets[i]]`` for every i."""
    if sp.issparse(rows):
        return np.asarray(rows[sources].multiply(rows[targets]).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", rows[sources], rows[targets])

"""Tests of the approximate k-NN search of `knn_graph` (``algorithm='hnsw'``, faiss): it
finds nearly every edge of the exact graph, with the exact search's weights, filters and
self-weighting, the same graph on every run, and ``'auto'`` choosing between the two."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.graph import _approximate, _trigram, knn_graph, trigram_graph

pytest.importorskip("faiss", reason="the approximate search needs faiss-cpu (extra 'ann')")


def clustered_rows(n_rows, n_features=64, n_clusters=40, noise=0.05, seed=0):
    """Rows near one of a few random 0/1 prototypes (a few bits flipped), cut into
    sequences of 7: data with neighbours to find, as letters are."""
    rng = np.random.default_rng(seed)
    prototypes = rng.random((n_clusters, n_features)) < 0.3
    rows = prototypes[rng.integers(0, n_clusters, n_rows)]
    rows = np.where(rng.random(rows.shape) < noise, ~rows, rows).astype(float)
    return np.split(rows, np.arange(7, n_rows, 7))


def edge_recall(exact, approximate):
    """Share of the exact graph's edges that the approximate graph has, and the largest
    difference between the two weights of an edge both have."""
    common = (exact.weights > 0).multiply(approximate.weights > 0)
    difference = abs(exact.weights.multiply(common) - approximate.weights.multiply(common))
    return common.nnz / exact.weights.nnz, difference.max() if common.nnz else 0.0


@pytest.mark.parametrize("settings", [{}, {"min_similarity": 0.3, "self_weight": 0.8},
                                      {"min_similarity": 0.5}])
def test_hnsw_finds_the_exact_graph_with_its_weights(settings):
    X = clustered_rows(3000)
    exact = knn_graph(X, n_neighbors=10, algorithm="exact", **settings)
    approximate = knn_graph(X, n_neighbors=10, algorithm="hnsw", **settings)
    recall, difference = edge_recall(exact, approximate)
    assert recall > 0.99 and difference < 1e-12, (recall, difference)
    assert approximate.weights.nnz < 1.01 * exact.weights.nnz
    assert abs(approximate.weights - approximate.weights.T).max() == 0
    # Each vertex keeps at most k neighbours, as in the exact graph.
    assert np.diff(approximate.weights.indptr).max() <= 10


def test_wide_sparse_rows_are_searched_through_their_svd():
    # 1,000 columns, beyond the 256 the index takes, but of rank 40: the SVD the index
    # holds keeps their inner products, and the exact similarities make the weights.
    rng = np.random.default_rng(1)
    prototypes = sp.random(40, 1000, density=0.02, random_state=rng, format="csr")
    mixtures = sp.random(2000, 40, density=0.1, random_state=rng, format="csr")
    rows = sp.csr_matrix(mixtures @ prototypes)
    assert rows.shape[1] > 256 and rows.nnz < 0.1 * rows.shape[0] * rows.shape[1]
    X = [rows[i:i + 5] for i in range(0, 2000, 5)]
    exact = knn_graph(X, n_neighbors=5, algorithm="exact")
    approximate = knn_graph(X, n_neighbors=5, algorithm="hnsw")
    recall, difference = edge_recall(exact, approximate)
    assert recall > 0.99 and difference < 1e-12, (recall, difference)
    # Fewer rows than the SVD's components: the rows themselves are indexed.
    exact = knn_graph(X[:40], n_neighbors=5, algorithm="exact")
    approximate = knn_graph(X[:40], n_neighbors=5, algorithm="hnsw")
    assert edge_recall(exact, approximate)[0] > 0.99


def test_hnsw_gives_the_same_graph_every_time():
    X = clustered_rows(2000, seed=3)
    first = knn_graph(X, n_neighbors=8, algorithm="hnsw", self_weight=0.8)
    second = knn_graph(X, n_neighbors=8, algorithm="hnsw", self_weight=0.8)
    assert (first.weights != second.weights).nnz == 0


def test_tokens_without_features_have_no_edges():
    X = clustered_rows(700, seed=4)
    X[3][2] = 0.0
    graph = knn_graph(X, n_neighbors=5, algorithm="hnsw", self_weight=0.8)
    assert graph.weights[3 * 7 + 2].nnz == 0


def test_auto_is_exact_below_its_threshold_and_hnsw_above(monkeypatch):
    X = clustered_rows(1400, seed=5)
    exact = knn_graph(X, n_neighbors=6, algorithm="exact")
    assert (knn_graph(X, n_neighbors=6).weights != exact.weights).nnz == 0
    monkeypatch.setattr(_approximate, "APPROXIMATE_FROM", 1000)
    approximate = knn_graph(X, n_neighbors=6, algorithm="hnsw")
    assert (knn_graph(X, n_neighbors=6).weights != approximate.weights).nnz == 0
    # Without faiss, 'auto' stays exact and 'hnsw' says how to install it.
    monkeypatch.setitem(sys.modules, "faiss", None)
    assert (knn_graph(X, n_neighbors=6).weights != exact.weights).nnz == 0
    with pytest.raises(ImportError, match="pip install faiss-cpu"):
        knn_graph(X, n_neighbors=6, algorithm="hnsw")


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm must be 'auto', 'exact' or 'hnsw'"):
        knn_graph(clustered_rows(20), algorithm="annoy")


def test_trigram_graph_through_the_index():
    X, _ = make_sequences(300, features="dict", random_state=0)
    exact = trigram_graph(X, 10, word_key="word", algorithm="exact")
    approximate = trigram_graph(X, 10, word_key="word", algorithm="hnsw")
    np.testing.assert_array_equal(approximate.token_vertices, exact.token_vertices)
    recall, difference = edge_recall(exact, approximate)
    # The PMI rows' 256 SVD dimensions keep only part of the ranking (0.75 here, 0.42-0.77
    # on UD text): the reason the trigram graph's default search never takes it (exact
    # here, below 'auto''s size for pruning).
    assert 0.6 < recall and difference < 1e-12, (recall, difference)
    assert (trigram_graph(X, 10, word_key="word").weights != exact.weights).nnz == 0


def test_trigram_graph_auto_search_never_takes_the_index(monkeypatch):
    X, _ = make_sequences(300, features="dict", random_state=0)
    monkeypatch.setattr(_trigram, "PRUNED_FROM", 1)
    auto = trigram_graph(X, 10, word_key="word", algorithm="auto")
    pruned = trigram_graph(X, 10, word_key="word", algorithm="pruned")
    assert (auto.weights != pruned.weights).nnz == 0

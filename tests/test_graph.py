"""Tests of the graph builders of `sklearn_ssl_crf.graph`: trigram_graph, knn_graph,
resolve_graph, and the mutual k-NN search they share.

Oracles are brute force: dense similarity matrices and per-vertex sorting for the mutual
k-NN criterion, and a per-token Python re-implementation of the paper's trigram features and
PMI values.
"""

import copy
import gzip
import math
import time
from collections import Counter, defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ssl_crf.datasets import load_ud_english_ewt
from sklearn_ssl_crf.graph import (
    SimilarityGraph,
    _mutual,
    _search,
    _trigram,
    knn_graph,
    resolve_graph,
    trigram_graph,
)
from sklearn_ssl_crf.utils._sequences import SequenceMatrix

# --- oracles ----------------------------------------------------------------------------


def brute_force_mutual_knn(similarities, k, candidates=None):
    """Dense mutual k-NN weights: each vertex ranks all others by (-similarity, index)."""
    n = similarities.shape[0]
    allowed = ~np.eye(n, dtype=bool) & (similarities > 0)
    if candidates is not None:
        allowed &= candidates
    chosen = np.zeros((n, n), dtype=bool)
    for u in range(n):
        ranked = sorted((v for v in range(n) if allowed[u, v]),
                        key=lambda v: (-similarities[u, v], v))
        chosen[u, ranked[:k]] = True
    return np.where(chosen & chosen.T, similarities, 0.0)


def few_pairs_at_once(monkeypatch, n_pairs):
    # The common features' terms and the graph's assembly a few pairs at a time.
    monkeypatch.setattr(_search, "_PAIRS_AT_ONCE", n_pairs)
    monkeypatch.setattr(_mutual, "_PAIRS_AT_ONCE", n_pairs)


def cosines(rows):
    norms = np.linalg.norm(rows, axis=1)
    unit = rows / np.where(norms == 0, 1.0, norms)[:, None]
    return unit @ unit.T


def assert_valid(graph, k):
    weights = graph.weights.toarray()
    assert np.array_equal(weights, weights.T)
    assert not weights.diagonal().any()
    assert (weights >= 0).all()
    assert ((weights > 0).sum(axis=1) <= k).all()


def assert_same_graph(graph, expected_weights, rtol=1e-10):
    weights = graph.weights.toarray()
    assert np.array_equal(weights > 0, expected_weights > 0)
    np.testing.assert_allclose(weights, expected_weights, rtol=rtol, atol=1e-12)


# The paper's features of an occurrence with window (w0, w1, w2, w3, w4), §4.2.
TRIGRAM_FEATURES = {"w12": (1, 2), "w13": (1, 3), "w23": (2, 3), "w2": (2,)}
CONTEXT_FEATURES = {"w0134": (0, 1, 3, 4), "w012": (0, 1, 2), "w023": (0, 2, 3),
                    "w024": (0, 2, 4), "w124": (1, 2, 4), "w234": (2, 3, 4), "w01": (0, 1),
                    "w02": (0, 2), "w24": (2, 4), "w34": (3, 4)}


def reference_pmi_vectors(sentences, suffixes=None):
    """{trigram: {feature: PMI}} by counting occurrence by occurrence (words already
    normalised)."""
    occurrences = []
    for sentence in sentences:
        padded = ["<s>", "<s>", *sentence, "</s>", "</s>"]
        for t in range(len(sentence)):
            window = padded[t:t + 5]
            if not any(character.isalnum() for character in window[2]):
                continue
            features = [(name, tuple(window[p] for p in positions)) for name, positions in
                        {**TRIGRAM_FEATURES, **CONTEXT_FEATURES}.items()]
            for name, position in (("suffix(w3)w2", 3), ("suffix(w1)w2", 1)):
                matching = [s for s in suffixes or () if window[position].endswith(s)
                            and window[position] not in ("<s>", "</s>")]
                if matching:
                    features.append((name, (max(matching, key=len), window[2])))
            occurrences.append((tuple(window[1:4]), features))
    n = len(occurrences)
    type_counts = Counter(trigram for trigram, _ in occurrences)
    feature_counts = Counter(f for _, features in occurrences for f in features)
    pair_counts = Counter((trigram, f) for trigram, features in occurrences for f in features)
    vectors = defaultdict(dict)
    for (trigram, f), count in pair_counts.items():
        vectors[trigram][f] = math.log(count * n / (feature_counts[f] * type_counts[trigram]))
    return vectors


def reference_cosines(vectors, names):
    def cosine(a, b):
        dot = sum(value * b.get(f, 0.0) for f, value in a.items())
        norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
        return dot / norm if norm else 0.0
    return np.array([[cosine(vectors[a], vectors[b]) for b in names] for a in names])


def random_sentences(rng, n_sentences, vocabulary):
    return [list(rng.choice(vocabulary, size=rng.integers(1, 9))) for _ in range(n_sentences)]


# --- mutual k-NN search -----------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 7])
def test_knn_graph_matches_brute_force_dense(k):
    rng = np.random.default_rng(k)
    rows = rng.normal(size=(60, 5))  # mixed signs: some similarities are negative
    graph = knn_graph([rows[:25], rows[25:]], n_neighbors=k)
    assert_valid(graph, k)
    assert_same_graph(graph, brute_force_mutual_knn(cosines(rows), k))
    assert graph.weights.nnz > 0
    np.testing.assert_array_equal(graph.token_vertices, np.arange(60))


def test_knn_graph_sparse_search_matches_brute_force(monkeypatch):
    rng = np.random.default_rng(0)
    rows = sp.random(300, 400, density=0.008, random_state=1, format="csr")
    rows.data = rng.normal(size=rows.nnz)
    calls = []
    original = _search._sparse_candidates
    monkeypatch.setattr(_search, "_sparse_candidates",
                        lambda *args: calls.append(1) or original(*args))
    graph = knn_graph([rows], n_neighbors=3)
    assert calls, "the similarities of sparse rows should be searched sparsely"
    assert_valid(graph, 3)
    assert graph.weights.nnz > 50
    assert_same_graph(graph, brute_force_mutual_knn(cosines(rows.toarray()), 3))


@pytest.mark.parametrize("sparse", [False, True])
def test_equal_similarities_at_the_kth_place_go_to_the_lower_vertex(sparse):
    # Rows that are copies of fewer rows: every row has runs of equal similarities, so the
    # k-th place is tied and only the sort among the tied candidates decides who is kept.
    # The sparse rows have sparse similarities (searched by `_sparse_candidates`). Each
    # distinct row has 1, 4 or 16 ones: unit rows of 1, 1/2 or 1/4, whose products are
    # exact in any order of summation, so copies tie exactly whatever the BLAS (OpenBLAS
    # 0.3.31 rounds a product by the place of its row in a block).
    rng = np.random.default_rng(5)
    n_distinct, n_rows = (100, 500) if sparse else (12, 90)
    n_columns = 2000 if sparse else 300
    n_ones = rng.choice([1, 4, 16], size=n_distinct)
    columns = [rng.choice(n_columns, size=n, replace=False) for n in n_ones]
    distinct = sp.csr_matrix((np.ones(n_ones.sum()), np.concatenate(columns),
                              np.concatenate([[0], np.cumsum(n_ones)])),
                             shape=(n_distinct, n_columns))
    rows = distinct[rng.integers(0, n_distinct, size=n_rows)]
    rows = sp.csr_matrix(rows) if sparse else rows.toarray()
    for k in (2, 5, 9):
        graph = knn_graph([rows], n_neighbors=k)
        assert_valid(graph, k)
        expected = brute_force_mutual_knn(cosines(sp.csr_matrix(rows).toarray()), k)
        assert_same_graph(graph, expected)
        assert graph.weights.nnz > 0


@pytest.mark.parametrize("kind", ["dense", "sparse", "sparse rows, dense similarities"])
def test_block_size_does_not_change_the_graph(kind):
    rng = np.random.default_rng(2)
    if kind == "dense":
        rows = rng.normal(size=(80, 6))
    elif kind == "sparse":
        rows = sp.random(200, 500, density=0.01, random_state=3, format="csr")
    else:  # blocks sized for sparse similarities, then searched densely in slices
        rows = sp.random(200, 40, density=0.05, random_state=4, format="csr")
    expected = brute_force_mutual_knn(cosines(sp.csr_matrix(rows).toarray()), 4)
    tiny = knn_graph([rows], n_neighbors=4, max_block_entries=1)  # one row per block
    for max_block_entries in (1000, 10**9):
        other = knn_graph([rows], n_neighbors=4, max_block_entries=max_block_entries)
        assert np.array_equal(tiny.weights.indices, other.weights.indices)
        assert np.array_equal(tiny.weights.indptr, other.weights.indptr)
        np.testing.assert_allclose(tiny.weights.data, other.weights.data, rtol=1e-12)
        assert_same_graph(other, expected)


@pytest.mark.parametrize("pairs_at_once", [7, 2**20])
def test_row_blocks_bound_the_similarities_of_sparse_rows(monkeypatch, pairs_at_once):
    # Each row's products counted a slice of rows at a time (of about pairs_at_once entries)
    # or all at once: the brute-force count.
    monkeypatch.setattr(_mutual, "_PAIRS_AT_ONCE", pairs_at_once)
    rows = sp.random(300, 50, density=0.04, random_state=5, format="csr")
    products = (rows != 0).astype(int) @ (rows != 0).T.astype(int)
    counts = np.bincount(rows.indices, minlength=50)
    np.testing.assert_array_equal(_search._row_sums(rows, counts),
                                  np.asarray(products.sum(axis=1)).ravel())
    blocks = list(_search._row_blocks(rows, 500, by_nonzeros=True))
    assert blocks[0][0] == 0 and blocks[-1][1] == 300
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(products[start:stop].nnz <= 500 + 300 for start, stop in blocks)
    assert 3 < len(blocks) < 300  # neither one row a block nor all rows in one
    dense_blocks = list(_search._row_blocks(rows, 500, by_nonzeros=False))
    assert dense_blocks == [(start, min(start + 1, 300)) for start in range(300)]


def test_threads_search_at_most_two_blocks_each_ahead_of_the_matching():
    # A finished block's pairs are held until the matching takes them: the threads must not
    # run through every block while it is busy.
    searched = []

    class Search:
        def transpose(self):
            pass

        def __call__(self, start, stop):
            searched.append(start)
            return [(start, stop)]

    blocks = [(start, start + 1) for start in range(40)]
    for taken, piece in enumerate(_search._searched_pieces(Search(), blocks, 2)):
        time.sleep(0.002)  # a slow matching: time for the threads to run ahead
        assert piece == blocks[taken] and len(searched) <= taken + 1 + 2 * 2
    assert sorted(searched) == list(range(40))


def test_pmi_columns_in_parts_leave_the_rest_of_each_row_but_its_own_columns():
    # Columns one type has add only to a type's product with itself: left out, the products
    # of two types are those of every column, bit for bit; the columns more than max_count
    # types have come apart, and every entry keeps its value over the whole row's length.
    rng = np.random.default_rng(70)
    sentences = random_sentences(rng, 80, ["the", "cats", "dogs", "sat", "walked", "a", "on",
                                           "ran", "sings", "."])
    window, vertex_of, _, words, name_codes = _trigram._trigram_occurrences(sentences,
                                                                            "word.lower")
    names = _trigram._vertex_names(name_codes, words)
    suffixes = ["s", "ed"]
    full, no_common = _trigram._pmi_features(window, vertex_of, len(names), words, suffixes)
    assert no_common is None
    np.testing.assert_allclose(sp.linalg.norm(full, axis=1), 1.0, rtol=1e-12)
    n_types = np.bincount(full.indices, minlength=full.shape[1])
    is_common, is_own = n_types > 20, n_types == 1
    assert 0 < is_common.sum() < (n_types > 1).sum() and is_own.sum() > 10
    rows, common = _trigram._pmi_features(window, vertex_of, len(names), words, suffixes, 20)
    for part, columns in ((rows, ~is_common & ~is_own), (common, is_common)):
        expected = full[:, np.flatnonzero(columns)]
        expected.sort_indices()
        assert part.shape == expected.shape and part.has_sorted_indices
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(part, name), getattr(expected, name))
    uncommon = full[:, np.flatnonzero(~is_common)]
    off_diagonal = ~np.eye(len(names), dtype=bool)
    assert np.array_equal((rows @ rows.T).toarray()[off_diagonal],
                          (uncommon @ uncommon.T).toarray()[off_diagonal])
    rows, common = _trigram._pmi_features(window, vertex_of, len(names), words, suffixes,
                                          len(names))
    assert common is None and rows.shape == (len(names), (~is_own).sum())


@pytest.mark.parametrize("dense", [True, False])
def test_ties_go_to_the_lower_vertex(dense):
    # Vertices 3..7 are the same vector; 0..2 and 8.. are orthogonal to it and to each other.
    n_other = 3 if dense else 100
    rows = np.zeros((5 + n_other, 5 + n_other))
    rows[:, :] = np.eye(5 + n_other)
    rows[3:8] = 0.0
    rows[3:8, 3] = 1.0
    matrix = rows if dense else sp.csr_matrix(rows)
    graph = knn_graph([matrix], n_neighbors=2)
    # Each of 3..7 keeps the two lowest other members: 3->{4,5}, 4->{3,5}, 5->{3,4}, ...
    edges = set(zip(*graph.weights.nonzero()))
    assert edges == {(3, 4), (4, 3), (3, 5), (5, 3), (4, 5), (5, 4)}


def test_graph_is_deterministic():
    rng = np.random.default_rng(4)
    rows = [rng.normal(size=(n, 4)) for n in (10, 20, 15)]
    first = knn_graph(rows, n_neighbors=5, self_weight=0.7, min_similarity=0.1)
    second = knn_graph(rows, n_neighbors=5, self_weight=0.7, min_similarity=0.1)
    assert (first.weights != second.weights).nnz == 0
    sentences = random_sentences(rng, 50, ["a", "b", "c", "d", "e", "."])
    assert (trigram_graph(sentences).weights != trigram_graph(sentences).weights).nnz == 0


# --- knn_graph: min_similarity and self_weight ------------------------------------------


def mixed_similarities(sequences, alpha):
    """alpha s(u, v) + (1 - alpha)(s(u_l, v_l) + s(u_r, v_r)), pair by pair."""
    rows = np.vstack(sequences)
    s = cosines(rows)
    tokens = [(i, t) for i, seq in enumerate(sequences) for t in range(len(seq))]
    index = {token: u for u, token in enumerate(tokens)}
    n = len(tokens)
    mixed = np.zeros((n, n))
    for u, (i, t) in enumerate(tokens):
        for v, (j, r) in enumerate(tokens):
            total = alpha * s[u, v]
            for shift in (-1, 1):
                a, b = index.get((i, t + shift)), index.get((j, r + shift))
                if a is not None and b is not None:
                    total += (1 - alpha) * s[a, b]
            mixed[u, v] = total
    return s, mixed


@pytest.mark.parametrize("min_similarity", [None, -0.3, 0.0, 0.4])
def test_min_similarity_filters_candidates(min_similarity):
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(50, 4))
    graph = knn_graph([rows], n_neighbors=6, min_similarity=min_similarity)
    s = cosines(rows)
    candidates = None if min_similarity is None else s > min_similarity
    assert_same_graph(graph, brute_force_mutual_knn(s, 6, candidates))
    if min_similarity is not None and min_similarity > 0:
        assert graph.weights.data.min() > min_similarity


@pytest.mark.parametrize("alpha, min_similarity", [(0.8, None), (0.5, 0.2), (0.8, -0.5),
                                                   (1.0, 0.3)])
def test_self_weight_mixes_neighbour_similarities(alpha, min_similarity):
    rng = np.random.default_rng(6)
    sequences = [rng.normal(size=(n, 3)) for n in (1, 4, 6, 3, 8, 5)]
    sequences[2][1] = 0.0  # a token without features has no edges
    s, mixed = mixed_similarities(sequences, alpha)
    candidates = np.ones_like(s, dtype=bool)
    if min_similarity is not None:
        candidates &= s > min_similarity
    candidates[:, 6] = candidates[6, :] = False  # the zero row: token 1 of sequence 2
    graph = knn_graph(sequences, n_neighbors=4, self_weight=alpha,
                      min_similarity=min_similarity)
    assert_valid(graph, 4)
    assert_same_graph(graph, brute_force_mutual_knn(mixed, 4, candidates))
    assert graph.neighbors(6) == ([], [])


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("n_unrelated", [0, 100])  # dense, then sparse similarity search
def test_token_without_features_has_no_edges(n_unrelated, k):
    # Token 1 has no features; token 4 has its neighbours, so their mixed similarity would be
    # 2 (1 - alpha) = 0.8, above 4's similarity 0.6 to token 7, which shares its own row:
    # token 1 must not take 4's place for 7.
    x, y, z, q, r, *others = np.eye(5 + n_unrelated)
    sequences = [np.array([x, 0 * x, y]), np.array([x, z, y]), np.array([q, z, r])]
    sequences += [row[None, :] for row in others]
    graph = knn_graph(sequences, n_neighbors=k, self_weight=0.6)
    _, mixed = mixed_similarities(sequences, 0.6)
    candidates = np.ones_like(mixed, dtype=bool)
    candidates[:, 1] = candidates[1, :] = False
    assert_same_graph(graph, brute_force_mutual_knn(mixed, k, candidates))
    assert graph.neighbors(1) == ([], [])
    assert graph.neighbors(4)[0] == [7]


def test_self_weight_changes_the_graph():
    rng = np.random.default_rng(7)
    sequences = [rng.normal(size=(n, 3)) for n in (5, 7, 6)]
    plain = knn_graph(sequences, n_neighbors=3)
    mixed = knn_graph(sequences, n_neighbors=3, self_weight=0.5)
    assert (plain.weights != mixed.weights).nnz > 0
    assert (plain.weights != knn_graph(sequences, n_neighbors=3, self_weight=1).weights).nnz == 0


def test_knn_graph_accepts_sequence_matrix_and_sparse_rows():
    rng = np.random.default_rng(8)
    sequences = [rng.random(size=(n, 4)) for n in (3, 5, 2)]
    matrix = SequenceMatrix(sp.csr_matrix(np.vstack(sequences)), [0, 3, 8, 10])
    expected = knn_graph(sequences, n_neighbors=3, self_weight=0.6)
    for X in (matrix, [sp.csr_matrix(seq) for seq in sequences]):
        got = knn_graph(X, n_neighbors=3, self_weight=0.6)
        assert_same_graph(got, expected.weights.toarray(), rtol=1e-12)


# --- trigram_graph ----------------------------------------------------------------------

SENTENCES = [["The", "cat", "sat", "."],
             ["the", "cat", "sat", "on", "1,000", "mats", "!"],
             ["A", "cat", "sat"]]


def test_trigram_vertices_on_a_hand_made_example():
    graph = trigram_graph(SENTENCES, n_neighbors=5)
    np.testing.assert_array_equal(graph.token_vertices,
                                  [0, 1, 2, -1, 0, 1, 3, 4, 5, 6, -1, 7, 8, 9])
    assert graph.vertex_names == [
        ("<s>", "the", "cat"), ("the", "cat", "sat"), ("cat", "sat", "."),
        ("cat", "sat", "on"), ("sat", "on", "<num>"), ("on", "<num>", "mats"),
        ("<num>", "mats", "!"), ("<s>", "a", "cat"), ("a", "cat", "sat"),
        ("cat", "sat", "</s>"),
    ]
    assert_valid(graph, 5)


def test_token_kinds_give_the_same_graph():
    as_tuples = [[(word, "POS") for word in sentence] for sentence in SENTENCES]
    as_dicts = [[{"word.lower": word.lower(), "bias": 1.0} for word in sentence]
                for sentence in SENTENCES]
    expected = trigram_graph(SENTENCES, n_neighbors=3)
    for X in (as_tuples, as_dicts, [tuple(sentence) for sentence in SENTENCES]):
        graph = trigram_graph(X, n_neighbors=3)
        assert graph.vertex_names == expected.vertex_names
        np.testing.assert_array_equal(graph.token_vertices, expected.token_vertices)
        assert (graph.weights != expected.weights).nnz == 0
    renamed = [[{"w": token["word.lower"]} for token in sentence] for sentence in as_dicts]
    assert trigram_graph(renamed, word_key="w").vertex_names == expected.vertex_names


@pytest.mark.parametrize("word, form", [
    ("1,000.5", "<num>"), ("3/4", "<num>"), ("-2", "<num>"), ("+44", "<num>"),
    ("10:30", "<num>"), ("1-800", "<num>"), ("2024", "<num>"),
    ("1990s", "1990s"), ("3rd", "3rd"), ("F16", "f16"), ("-", None), ("...", None),
    ("'s", "'s"), ("_", None),
])
def test_number_normalisation_and_punctuation(word, form):
    graph = trigram_graph([["x", word, "y"]])
    vertex = graph.token_vertices[1]
    if form is None:
        assert vertex == -1
    else:
        assert graph.vertex_names[vertex] == ("x", form, "y")


def test_pmi_of_a_hand_computed_case():
    # Occurrences: (<s>,a,b), (a,b,</s>), (<s>,a,c), (a,c,</s>): N = 4, each type once.
    reference = reference_pmi_vectors([["a", "b"], ["a", "c"]])
    vector = reference[("<s>", "a", "b")]
    assert vector[("w2", ("a",))] == pytest.approx(math.log(4 * 1 / (2 * 1)))
    assert vector[("w13", ("<s>", "b"))] == pytest.approx(math.log(4))
    # The module's row of that type is the same vector scaled to unit length.
    window, vertex_of, _, words, name_codes = _trigram._trigram_occurrences(
        [["a", "b"], ["a", "c"]], "word.lower")
    names = _trigram._vertex_names(name_codes, words)
    features, _ = _trigram._pmi_features(window, vertex_of, len(names), words, None)
    row = features[names.index(("<s>", "a", "b"))].data
    expected = np.array(list(vector.values()))
    np.testing.assert_allclose(np.sort(row), np.sort(expected / np.linalg.norm(expected)))


@pytest.mark.parametrize("suffixes", [None, ["s", "ed", "ing", "ng"]])
def test_trigram_similarities_match_a_per_token_reference(suffixes):
    rng = np.random.default_rng(9)
    vocabulary = ["the", "cats", "dogs", "sat", "walked", "talked", "running", "sing", ",",
                  "a", "on", "<num>"]
    sentences = random_sentences(rng, 40, vocabulary)
    graph = trigram_graph(sentences, n_neighbors=1000, suffixes=suffixes)
    expected = reference_cosines(reference_pmi_vectors(sentences, suffixes),
                                 graph.vertex_names)
    np.fill_diagonal(expected, 0.0)
    # With k beyond the number of vertices every positive similarity is an edge.
    assert_same_graph(graph, np.where(expected > 1e-12, expected, 0.0), rtol=1e-9)
    assert graph.weights.nnz > 100


def test_suffix_features_change_similarities_only_when_given():
    rng = np.random.default_rng(10)
    sentences = random_sentences(rng, 40, ["a", "cats", "dogs", "walked", "talked", "sat"])
    plain = trigram_graph(sentences, n_neighbors=1000, suffixes=None)
    assert (plain.weights != trigram_graph(sentences, n_neighbors=1000,
                                           suffixes=[]).weights).nnz == 0
    unused = trigram_graph(sentences, n_neighbors=1000, suffixes=["xyz"])
    assert (plain.weights != unused.weights).nnz == 0
    with_suffixes = trigram_graph(sentences, n_neighbors=1000, suffixes=("s", "ed"))
    assert with_suffixes.vertex_names == plain.vertex_names
    assert abs(with_suffixes.weights - plain.weights).max() > 1e-3


def test_auto_suffixes_are_the_endings_of_at_least_one_percent_of_word_types():
    # 6 word types (numbers and punctuation are not word types), so 2 of them at least: 's'
    # ends cats and dogs; 'd', 'ed' and 'ked' end walked and talked; 'a' ends no longer word
    # and 't' one only ('sat'; 'cats' ends in 's').
    sentences = [["a", "cats", "sat", ",", "3"], ["dogs", "walked", "talked", "a"]]
    auto = trigram_graph(sentences, n_neighbors=1000)
    listed = trigram_graph(sentences, n_neighbors=1000, suffixes=["d", "ed", "ked", "s"])
    assert (auto.weights != listed.weights).nnz == 0
    assert _trigram._frequent_endings(["a", "cats", "sat", "dogs", "walked", "talked",
                                       "<num>", ","]) == ["d", "ed", "ked", "s"]
    # With 300 types the floor is 3 types: an ending of 2 is out, one of 4 in (the other
    # types' 2-letter endings are all different).
    types = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(294)]
    types += ["oxq", "pxq", "alz", "blz", "clz", "dlz"]
    endings = _trigram._frequent_endings(types)
    assert "lz" in endings and "xq" not in endings


def test_trigram_graph_keeps_k_mutual_neighbours():
    rng = np.random.default_rng(11)
    sentences = random_sentences(rng, 80, ["a", "b", "c", "d", "e", "f", "g", "."])
    full = trigram_graph(sentences, n_neighbors=10**6).weights.toarray()
    graph = trigram_graph(sentences, n_neighbors=4, max_block_entries=50)
    assert_valid(graph, 4)
    assert_same_graph(graph, brute_force_mutual_knn(full, 4))


def pmi_similarities(vectors, names, max_count=math.inf):
    """Dot products of the unit PMI vectors over the features at most ``max_count`` types
    have (all of them: the cosines)."""
    held = Counter(f for vector in vectors.values() for f in vector)
    unit = {}
    for trigram, vector in vectors.items():
        norm = math.sqrt(sum(v * v for v in vector.values()))
        unit[trigram] = {f: v / norm for f, v in vector.items() if held[f] <= max_count}
    return np.array([[sum(v * unit[b].get(f, 0.0) for f, v in unit[a].items()) for b in names]
                     for a in names])


@pytest.mark.parametrize("max_df", [3, 0.05])
@pytest.mark.parametrize("dense_enough", [0.0, 2.0])
def test_pruned_search_compares_the_pairs_the_uncommon_features_bring_together(
        monkeypatch, max_df, dense_enough):
    # The candidates of a type are those its features held by at most max_df of the types
    # make similar; they are ranked, and weighted, by the cosine of all features. Both
    # searches of a block (dense: every similarity; sparse: the nonzero ones), and the
    # common features' term a few pairs at a time.
    monkeypatch.setattr(_search, "_DENSE_ENOUGH", dense_enough)
    few_pairs_at_once(monkeypatch, 7)
    monkeypatch.setattr(_mutual, "_PAIRS_HELD_TOGETHER", 11)  # the mutual pairs in pieces
    rng = np.random.default_rng(12)
    sentences = random_sentences(rng, 60, ["the", "cats", "dogs", "sat", "walked", "a", "on",
                                           "ran", "."])
    graph = trigram_graph(sentences, n_neighbors=4, suffixes=None, algorithm="pruned",
                          max_df=max_df)
    vectors = reference_pmi_vectors(sentences)
    names = graph.vertex_names
    max_count = max_df if isinstance(max_df, int) else math.ceil(max_df * len(vectors))
    cosine = pmi_similarities(vectors, names)
    brought_together = pmi_similarities(vectors, names, max_count) > 1e-12
    assert_valid(graph, 4)
    assert_same_graph(graph, brute_force_mutual_knn(cosine, 4, brought_together), rtol=1e-9)
    exact = trigram_graph(sentences, n_neighbors=4, suffixes=None, algorithm="exact")
    assert graph.weights.nnz > 50 and (graph.weights != exact.weights).nnz > 0


@pytest.mark.parametrize("dense_enough", [0.0, 2.0])
def test_common_rows_rank_the_candidates_the_other_rows_give(monkeypatch, dense_enough):
    # Rows with negative entries too: a pair whose other-rows product is at most 0 is not a
    # candidate however similar its common rows make it.
    monkeypatch.setattr(_search, "_DENSE_ENOUGH", dense_enough)
    few_pairs_at_once(monkeypatch, 5)
    rng = np.random.default_rng(16)
    rows = sp.random(120, 300, density=0.02, random_state=17, format="csr")
    rows.data = rng.normal(size=rows.nnz)
    common = sp.random(120, 3, density=0.5, random_state=18, format="csr")
    common.data = rng.normal(size=common.nnz)
    weights = _search._mutual_knn(rows, 4, 2000, common_rows=common)
    other = (rows @ rows.T).toarray()
    full = other + (common @ common.T).toarray()
    expected = brute_force_mutual_knn(full, 4, candidates=other > 0)
    assert np.array_equal(weights.toarray() > 0, expected > 0)
    np.testing.assert_allclose(weights.toarray(), expected, rtol=1e-10, atol=0)
    assert ((other <= 0) & (full > 0) & (expected == 0)).any()  # such pairs were left out
    assert (expected != brute_force_mutual_knn(other, 4)).any()


@pytest.mark.parametrize("dense_enough", [0.0, 2.0])
@pytest.mark.parametrize("bounded_from", [0, 10**9])
def test_rows_searched_in_another_order_give_the_same_graph(monkeypatch, dense_enough,
                                                            bounded_from):
    # Rows searched in another order than their vertices' (trigram_graph's, for speed):
    # ties still go to the lower vertex and the weights are the vertices', so the graph is
    # the one of the rows in order, bit for bit. Repeated rows make many ties; values in
    # quarters keep every sum exact whatever its order (the dense blocks' BLAS).
    monkeypatch.setattr(_search, "_DENSE_ENOUGH", dense_enough)
    monkeypatch.setattr(_search, "_BOUNDED_TERMS_FROM", bounded_from)
    few_pairs_at_once(monkeypatch, 9)
    monkeypatch.setattr(_mutual, "_PAIRS_HELD_TOGETHER", 13)
    rng = np.random.default_rng(50)
    base = sp.random(40, 80, density=0.08, random_state=51, format="csr")
    base.data = rng.integers(1, 5, base.nnz) / 4
    rows = base[rng.integers(0, 40, 150)]
    common = sp.random(150, 4, density=0.3, random_state=52, format="csr")
    common.data = rng.integers(1, 5, common.nnz) / 4
    in_order = _search._mutual_knn(rows, 5, 700, common_rows=common)
    vertices = rng.permutation(150)
    reordered = _mutual._assembled(_search._mutual_pairs(
        rows[vertices], 5, 700, common_rows=common[vertices], vertices=vertices))
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(reordered, name), getattr(in_order, name))
    full = (rows @ rows.T + common @ common.T).toarray()
    expected = brute_force_mutual_knn(full, 5, candidates=(rows @ rows.T).toarray() > 0)
    np.testing.assert_array_equal(in_order.toarray(), expected)
    # Ties decided the graph: searched in the new order with ties to the lower row, it
    # differs.
    by_row = _search._mutual_knn(rows[vertices], 5, 700, common_rows=common[vertices])
    row_of_vertex = np.argsort(vertices)
    assert (by_row[row_of_vertex][:, row_of_vertex] != in_order).nnz > 0


@pytest.mark.parametrize("pairs_in_a_bucket, write_ranges", [(10**9, 1), (30, 2), (1, 8)])
def test_symmetric_weights_written_a_range_of_rows_at_a_time(monkeypatch, pairs_in_a_bucket,
                                                             write_ranges):
    # Mutual pairs in pieces of consecutive rows, written at their vertices (rows in another
    # order) one range of rows after another (or straight from the pieces) and a few at a
    # time: the matrix with both entries of every pair, bit for bit, and the pieces all let
    # go.
    monkeypatch.setattr(_mutual, "_PAIRS_IN_A_BUCKET", pairs_in_a_bucket)
    few_pairs_at_once(monkeypatch, 7)
    rng = np.random.default_rng(60)
    n_rows = 50
    upper = np.triu(rng.random((n_rows, n_rows)) < 0.2, 1) * rng.random((n_rows, n_rows))
    later, earlier = np.nonzero(upper.T)  # by later row
    values = upper.T[later, earlier]
    counts = np.bincount(later, minlength=n_rows).astype(np.int32)
    found = [(counts[first:last], earlier[(later >= first) & (later < last)].astype(np.int32),
              values[(later >= first) & (later < last)])
             for first, last in [(0, 20), (20, 35), (35, 50)]]
    vertices = rng.permutation(n_rows)
    assert _mutual._write_ranges(values.size) == write_ranges
    weights = _mutual._symmetric_weights(found, n_rows, np.int32, vertices)
    rows = np.concatenate([vertices[later], vertices[earlier]])
    columns = np.concatenate([vertices[earlier], vertices[later]])
    expected = sp.csr_matrix((np.concatenate([values, values]), (rows, columns)),
                             shape=(n_rows, n_rows))
    expected.sort_indices()
    assert found == [] and weights.has_sorted_indices and weights.nnz == 2 * values.size
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(weights, name), getattr(expected, name))


@pytest.mark.parametrize("with_excluded", [False, True])
def test_common_terms_left_out_by_their_bound_change_no_pair(monkeypatch, with_excluded):
    # Rows with many candidates each and common rows that decide the ranking: most terms
    # cannot lift their pair into its row's k best, and are not computed. Mixed signs, so
    # a term can also lower a pair. The graph is the brute-force one, and bit for bit the
    # one computed with every term (norms of inf: no bound ever leaves a term out).
    few_pairs_at_once(monkeypatch, 64)
    monkeypatch.setattr(_mutual, "_PAIRS_HELD_TOGETHER", 50)
    monkeypatch.setattr(_search, "_DENSE_ENOUGH", 2.0)  # sparse rows and blocks
    monkeypatch.setattr(_search, "_BOUNDED_TERMS_FROM", 300)
    rng = np.random.default_rng(40)
    rows = sp.random(300, 60, density=0.08, random_state=41, format="csr")
    rows.data = rng.normal(0.5, 0.5, size=rows.nnz)
    common = sp.random(300, 6, density=0.4, random_state=42, format="csr")
    common.data = rng.normal(0.3, 0.5, size=common.nnz)
    excluded = rng.random(300) < 0.1 if with_excluded else None
    computed = []
    terms = _search._common_terms
    monkeypatch.setattr(_search, "_common_terms",
                        lambda *args: computed.append(args[1].size) or terms(*args))
    weights = _search._mutual_knn(rows, 5, 3000, common_rows=common, excluded=excluded)
    pruned_terms = sum(computed)
    other = (rows @ rows.T).toarray()
    full = other + (common @ common.T).toarray()
    candidates = other > 0
    if excluded is not None:
        candidates &= ~excluded[None, :] & ~excluded[:, None]
    expected = brute_force_mutual_knn(full, 5, candidates)
    assert np.array_equal(weights.toarray() > 0, expected > 0)
    np.testing.assert_allclose(weights.toarray(), expected, rtol=1e-10, atol=0)
    assert np.count_nonzero(expected) > 200
    computed.clear()
    monkeypatch.setattr(_search, "row_norms", lambda rows: np.full(rows.shape[0], np.inf))
    every_term = _search._mutual_knn(rows, 5, 3000, common_rows=common, excluded=excluded)
    assert (weights != every_term).nnz == 0
    # Every candidate with common features at both ends: an excluded vertex has candidates
    # (and no edge), but is no one's candidate.
    has = np.diff(common.indptr) > 0
    both = (other > 0) & ~np.eye(300, dtype=bool) & has[:, None] & has[None, :]
    if excluded is not None:
        both &= ~excluded[None, :]
    assert sum(computed) == np.count_nonzero(both)
    assert pruned_terms < 0.6 * sum(computed)


@pytest.mark.parametrize("blocks", ["sparse", "dense"])
@pytest.mark.parametrize("with_excluded", [False, True])
def test_pairs_matched_as_blocks_come_are_the_mutual_pairs_of_all_kept_pairs(
        monkeypatch, blocks, with_excluded):
    # Sparse rows are matched block by block, holding only the mutual pairs; dense rows
    # hold every row's kept pairs, then match them. Small integer entries make every
    # product exact, so both see the same similarities, with many ties at the k-th place.
    rng = np.random.default_rng(31)
    entries = rng.integers(1, 3, size=(150, 12)) * (rng.random((150, 12)) < 0.3)
    excluded = rng.random(150) < 0.1 if with_excluded else None
    held = _search._mutual_knn(entries.astype(float), 5, 300, excluded=excluded)
    monkeypatch.setattr(_search, "_dense_if_dense_enough", sp.csr_matrix)
    monkeypatch.setattr(_search, "_DENSE_ENOUGH", 0.0 if blocks == "dense" else 2.0)
    matched = _search._mutual_knn(sp.csr_matrix(entries.astype(float)), 5, 300,
                                  excluded=excluded)
    similarities = (entries @ entries.T).astype(float)
    candidates = None if excluded is None else np.broadcast_to(~excluded, (150, 150))
    expected = brute_force_mutual_knn(similarities, 5, candidates)
    np.testing.assert_array_equal(matched.toarray(), expected)
    np.testing.assert_array_equal(held.toarray(), expected)
    assert matched.has_sorted_indices and (matched.data > 0).all()
    assert np.count_nonzero(expected) > 100
    if excluded is not None:
        assert not expected[excluded].any() and excluded.any()


def test_pruned_search_without_a_common_feature_is_the_exact_search():
    rng = np.random.default_rng(13)
    sentences = random_sentences(rng, 60, ["the", "cats", "dogs", "sat", "walked", "a", "."])
    exact = trigram_graph(sentences, n_neighbors=5, algorithm="exact")
    for max_df in (1.0, 10**6):
        pruned = trigram_graph(sentences, n_neighbors=5, algorithm="pruned", max_df=max_df)
        assert (pruned.weights != exact.weights).nnz == 0


def test_auto_search_prunes_from_a_number_of_types(monkeypatch):
    rng = np.random.default_rng(14)
    sentences = random_sentences(rng, 60, ["the", "cats", "dogs", "sat", "walked", "a", "."])
    n_types = trigram_graph(sentences, n_neighbors=5, algorithm="exact").n_vertices
    for threshold, search in ((n_types + 1, "exact"), (n_types, "pruned")):
        monkeypatch.setattr(_trigram, "PRUNED_FROM", threshold)
        auto = trigram_graph(sentences, n_neighbors=5, max_df=2, algorithm="auto")
        chosen = trigram_graph(sentences, n_neighbors=5, max_df=2, algorithm=search)
        assert (auto.weights != chosen.weights).nnz == 0
    exact = trigram_graph(sentences, n_neighbors=5, algorithm="exact")
    assert (auto.weights != exact.weights).nnz > 0  # the pruning took effect
    default = trigram_graph(sentences, n_neighbors=5, max_df=2)
    assert (default.weights != auto.weights).nnz == 0  # the default search is 'auto'


@pytest.mark.parametrize("algorithm", ["exact", "pruned"])
def test_threads_give_the_same_trigram_graph(algorithm):
    rng = np.random.default_rng(15)
    sentences = random_sentences(rng, 200, ["the", "cats", "dogs", "sat", "walked", "a", "on",
                                            "ran", "."])
    # Small blocks: the threads share many of them.
    one = trigram_graph(sentences, n_neighbors=6, max_block_entries=500, algorithm=algorithm,
                        max_df=0.2)
    for n_jobs in (2, 3, -1):
        threaded = trigram_graph(sentences, n_neighbors=6, max_block_entries=500,
                                 algorithm=algorithm, max_df=0.2, n_jobs=n_jobs)
        assert (threaded.weights != one.weights).nnz == 0
        np.testing.assert_array_equal(threaded.weights.indices, one.weights.indices)
    assert one.weights.nnz > 100


@pytest.mark.parametrize("block_tokens", [1, 3, 7])
def test_the_text_read_in_blocks_gives_the_graph_of_one_block(monkeypatch, block_tokens):
    rng = np.random.default_rng(21)
    sentences = random_sentences(rng, 60, ["the", "Cats", "dogs", "1,000", "walked", "a", "on",
                                           "ran", "."]) + [[], ["A", "b"]]
    whole = trigram_graph(sentences, n_neighbors=4)
    monkeypatch.setattr(_trigram, "_BLOCK_TOKENS", block_tokens)
    read_blocks = []
    block_reader = _trigram.TrigramWords._read

    def recorded(self, block, name, first):
        read_blocks.append((first, first + len(block)))
        return block_reader(self, block, name, first)

    monkeypatch.setattr(_trigram.TrigramWords, "_read", recorded)
    # A list, a generator (read once), and words read by a caller as it uses each sentence.
    words = _trigram.TrigramWords()
    passed = list(words.read_each(iter(sentences), block_sequences=5))
    assert passed == sentences
    for X in (sentences, (sentence for sentence in sentences), words):
        read_blocks.clear()
        read = trigram_graph(X, n_neighbors=4)
        assert read.vertex_names == whole.vertex_names
        np.testing.assert_array_equal(read.token_vertices, whole.token_vertices)
        assert (read.weights != whole.weights).nnz == 0 and whole.weights.nnz > 50
        if X is not words:
            assert len(read_blocks) > 20 and read_blocks[-1][1] == len(sentences)
            assert [a for a, _ in read_blocks[1:]] == [b for _, b in read_blocks[:-1]]
            # A block ends as soon as it holds block_tokens tokens.
            lengths = np.array([len(s) for s in sentences])
            assert all(lengths[a:b - 1].sum() < block_tokens for a, b in read_blocks)


def test_a_stream_is_passed_on_a_block_at_a_time():
    # Sentences are handed on as soon as their block is read, before the next is drawn:
    # a caller featurising them holds one block, not the text.
    drawn = []

    def stream():
        for i in range(23):
            drawn.append(i)
            yield ["a", "cat", str(i)]

    words = _trigram.TrigramWords()
    for used, sentence in enumerate(words.read_each(stream(), block_sequences=5)):
        assert sentence[2] == str(used)
        assert used < len(drawn) <= (used // 5 + 1) * 5
    assert trigram_graph(words).token_vertices.size == 23 * 3


class _MisreportedLength(list):
    def __len__(self):
        return 1


def test_a_sequence_whose_length_misreports_its_tokens_is_named():
    X = [["a", "b"], _MisreportedLength(["c", "d", "e"])]
    with pytest.raises(ValueError, match="sequence 1 of X gives 3 tokens when read but its "
                                         "len.. is 1"):
        trigram_graph(X)


@pytest.mark.parametrize("X, error, match", [
    ([["a", "b"], ["c"], [{"word.lower": "d"}]], TypeError,
     "mixes kinds of tokens: token 0 of sequence 0 is a str, token 0 of sequence 2 a dict"),
    ([["a", "b"], ["c", 4]], TypeError, "token 1 of sequence 1 is of type int"),
    ([[("a",)], [("b",), ()]], ValueError, "token 1 of sequence 1 has no items"),
    ([[{"word.lower": "a"}, {"word.lower": "b"}], [{"word.lower": None}]], ValueError,
     "token 0 of sequence 1: its 'word.lower' is of type NoneType"),
])
def test_bad_tokens_in_a_later_block_are_named_by_their_place_in_X(monkeypatch, X, error,
                                                                   match):
    monkeypatch.setattr(_trigram, "_BLOCK_TOKENS", 1)  # a block per sequence
    with pytest.raises(error, match=match):
        trigram_graph(X)


@pytest.mark.parametrize("build", [
    lambda X, rows: trigram_graph(X, n_neighbors=5, algorithm="exact"),
    lambda X, rows: trigram_graph(X, n_neighbors=5, algorithm="pruned", max_df=3),
    lambda X, rows: knn_graph(rows, n_neighbors=5),
])
def test_built_graphs_are_what_the_checked_constructor_makes_of_them(build):
    # The builders' graphs skip SimilarityGraph's copy and checks: they must pass them
    # unchanged (canonical CSR of float64, symmetric, positive, int64 token vertices).
    rng = np.random.default_rng(23)
    X = random_sentences(rng, 50, ["the", "cats", "dogs", "sat", "walked", "a", "on", "."])
    rows = [rng.normal(size=(len(sentence), 4)) for sentence in X]
    graph = build(X, rows)
    checked = SimilarityGraph(graph.weights, graph.token_vertices, graph.vertex_names)
    assert graph.weights.format == "csr" and graph.weights.dtype == np.float64
    assert graph.weights.has_canonical_format and graph.weights.nnz > 50
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(checked.weights, name),
                                      getattr(graph.weights, name))
    assert (graph.weights != graph.weights.T).nnz == 0 and (graph.weights.data > 0).all()
    assert graph.token_vertices.dtype == checked.token_vertices.dtype == np.int64
    np.testing.assert_array_equal(checked.token_vertices, graph.token_vertices)


def test_edge_cases_of_trigram_graph():
    graph = trigram_graph([[".", ","], []])
    assert graph.n_vertices == 0 and graph.token_vertices.tolist() == [-1, -1]
    graph = trigram_graph([[], ["A", "b"], []])
    assert graph.vertex_names == [("<s>", "a", "b"), ("a", "b", "</s>")]


def test_inputs_are_not_modified():
    X = [[{"word.lower": "the", "x": 1.0}, {"word.lower": "cat"}], [("Dog", "NN")]]
    before = copy.deepcopy(X)
    trigram_graph(X[:1], n_neighbors=2)
    trigram_graph(X[1:], n_neighbors=2)
    assert X == before
    rows = [np.arange(6.0).reshape(3, 2), sp.csr_matrix(np.ones((2, 2)))]
    matrix = SequenceMatrix(sp.csr_matrix(np.vstack([rows[0], rows[1].toarray()])), [0, 3, 5])
    copies = [rows[0].copy(), rows[1].copy(), matrix.matrix.copy()]
    knn_graph(rows, n_neighbors=2, self_weight=0.5, min_similarity=0.1)
    knn_graph(matrix, n_neighbors=2, self_weight=0.5)
    np.testing.assert_array_equal(rows[0], copies[0])
    assert (rows[1] != copies[1]).nnz == 0 and (matrix.matrix != copies[2]).nnz == 0


# --- resolve_graph ----------------------------------------------------------------------


def featurised(X):
    n_tokens = sum(map(len, X))
    lengths = np.cumsum([0, *map(len, X)])
    rng = np.random.default_rng(12)
    return SequenceMatrix(sp.csr_matrix(rng.random((n_tokens, 5))), lengths)


def test_resolve_graph_branches():
    X = [[{"word.lower": w.lower()} for w in sentence] for sentence in SENTENCES]
    sequences = featurised(X)
    trigram = resolve_graph("trigram", X, sequences)
    assert (trigram.weights != trigram_graph(X, 60).weights).nnz == 0
    assert trigram.vertex_names == trigram_graph(X).vertex_names
    small = resolve_graph("trigram", X, sequences, n_neighbors=1)
    assert (small.weights != trigram_graph(X, 1).weights).nnz == 0
    knn = resolve_graph("knn", X, sequences)
    assert (knn.weights != knn_graph(sequences, 20).weights).nnz == 0
    assert (resolve_graph("knn", X, sequences, n_neighbors=2).weights
            != knn_graph(sequences, 2).weights).nnz == 0
    given = SimilarityGraph(sp.csr_matrix((3, 3)), np.zeros(sequences.n_tokens, dtype=int))
    assert resolve_graph(given, X, sequences) is given


def test_resolve_graph_errors():
    X = [list(sentence) for sentence in SENTENCES]
    sequences = featurised(X)
    wrong_size = SimilarityGraph(sp.csr_matrix((2, 2)), [0, 1])
    with pytest.raises(ValueError, match="maps 2 tokens"):
        resolve_graph(wrong_size, X, sequences)
    matrices = [sequences[i] for i in range(len(sequences))]
    for matrix_input in (sequences, matrices):
        with pytest.raises(TypeError, match="graph='trigram' needs words"):
            resolve_graph("trigram", matrix_input, sequences)
    with pytest.raises(ValueError, match="'trigram', 'knn' or a SimilarityGraph"):
        resolve_graph("bigram", X, sequences)
    with pytest.raises(TypeError, match="'trigram', 'knn' or a SimilarityGraph"):
        resolve_graph(np.eye(3), X, sequences)
    with pytest.raises(ValueError, match="maps 14 tokens"):
        resolve_graph("trigram", X, featurised(X[:2]))


# --- bad input --------------------------------------------------------------------------

WORDS = [["a", "b"]]
ROWS = [np.ones((2, 2))]


@pytest.mark.parametrize("call, error, match", [
    (lambda: trigram_graph(WORDS, n_neighbors=0), ValueError, "n_neighbors must be a positive"),
    (lambda: trigram_graph(WORDS, n_neighbors=2.0), TypeError, "n_neighbors must be a positive"),
    (lambda: trigram_graph(WORDS, n_neighbors=True), TypeError, "n_neighbors"),
    (lambda: trigram_graph(WORDS, max_block_entries=0), ValueError, "max_block_entries"),
    (lambda: trigram_graph(WORDS, word_key=1), TypeError, "word_key must be a str"),
    (lambda: trigram_graph(WORDS, suffixes="ing"), TypeError, "not one other str"),
    (lambda: trigram_graph(WORDS, algorithm="lsh"), ValueError,
     "algorithm must be 'auto', 'exact', 'pruned' or 'hnsw', got 'lsh'"),
    (lambda: trigram_graph(WORDS, max_df=0), ValueError, r"max_df must be a float in \(0, 1\]"),
    (lambda: trigram_graph(WORDS, max_df=1.5), ValueError, "max_df .* got 1.5"),
    (lambda: trigram_graph(WORDS, max_df=float("nan")), ValueError, "max_df"),
    (lambda: trigram_graph(WORDS, max_df=True), TypeError, "max_df .* got bool"),
    (lambda: trigram_graph(WORDS, max_df="0.1"), TypeError, "max_df .* got str"),
    (lambda: trigram_graph(WORDS, n_jobs=0), ValueError, "n_jobs must be None or a nonzero int"),
    (lambda: trigram_graph(WORDS, n_jobs=1.5), ValueError, "n_jobs .* got 1.5"),
    (lambda: trigram_graph(WORDS, n_jobs=True), ValueError, "n_jobs .* got True"),
    (lambda: trigram_graph(WORDS, suffixes=["ing", ""]), ValueError, "non-empty str"),
    (lambda: trigram_graph([]), ValueError, "X is empty"),
    (lambda: trigram_graph([[], []]), ValueError, "X has no tokens"),
    (lambda: trigram_graph("a b"), TypeError, "list of sequences"),
    (lambda: trigram_graph(["ab"]), TypeError, "sequence 0 of X must be a list of tokens"),
    (lambda: trigram_graph(ROWS), TypeError, "needs words"),
    (lambda: trigram_graph([[1, 2]]), TypeError, "token 0 of sequence 0 is of type int"),
    (lambda: trigram_graph([["a"], [{"word.lower": "b"}]]), TypeError, "mixes kinds"),
    (lambda: trigram_graph([[{"word.lower": "a"}], [{"word.lower": "b"}, {"w": "c"}]]),
     ValueError, "token 1 of sequence 1 has no 'word.lower' key"),
    (lambda: trigram_graph([[{"word.lower": 3}]]), ValueError,
     "token 0 of sequence 0: its 'word.lower' is of type int"),
    (lambda: trigram_graph([[("a",), ()]]), ValueError, "token 1 of sequence 0 has no items"),
    (lambda: trigram_graph([[("a",)], [(None,)]]), ValueError,
     "token 0 of sequence 1: its first item"),
    (lambda: knn_graph(ROWS, n_neighbors=-1), ValueError, "n_neighbors"),
    (lambda: knn_graph(ROWS, self_weight=0), ValueError, r"self_weight must be in \(0, 1\]"),
    (lambda: knn_graph(ROWS, self_weight=1.5), ValueError, "self_weight"),
    (lambda: knn_graph(ROWS, self_weight=float("nan")), ValueError, "self_weight"),
    (lambda: knn_graph(ROWS, self_weight="0.5"), TypeError, "self_weight must be a number"),
    (lambda: knn_graph(ROWS, min_similarity=1), ValueError, r"min_similarity must be in"),
    (lambda: knn_graph(ROWS, min_similarity=-1.5), ValueError, "min_similarity"),
    (lambda: knn_graph([]), ValueError, "X is empty"),
    (lambda: knn_graph([np.ones((0, 3))]), ValueError, "X has no tokens"),
    (lambda: knn_graph(WORDS), TypeError, "knn_graph needs feature matrices.*list"),
    (lambda: knn_graph(np.ones((3, 2))), ValueError, "not a 2-d"),
    (lambda: knn_graph([1.0, 2.0]), TypeError, "sequence 0 of X is of type float"),
    (lambda: knn_graph([np.full((2, 2), np.nan)]), ValueError, "NaN"),
    (lambda: knn_graph({"a": 1}), TypeError, "SequenceMatrix or a list"),
])
def test_bad_input_raises_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()



# --- real data --------------------------------------------------------------------------


def test_ud_english_neighbours_share_part_of_speech(shared_data):
    sentences, tags = load_ud_english_ewt(shared_data / "ud_english_ewt")["dev"]
    graph = trigram_graph(sentences, n_neighbors=10)
    # The majority tag of each centre word, then of each vertex through its centre word.
    counts = defaultdict(Counter)
    for sentence, sentence_tags in zip(sentences, tags):
        for word, tag in zip(sentence, sentence_tags):
            counts[word.lower()][tag] += 1
    majority = {word: tag_counts.most_common(1)[0][0] for word, tag_counts in counts.items()}
    vertex_tag = [majority.get(centre, "NUM") for _, centre, _ in graph.vertex_names]
    sources, targets = graph.weights.nonzero()
    agreement = np.mean([vertex_tag[u] == vertex_tag[v] for u, v in zip(sources, targets)])
    shares = np.array(list(Counter(vertex_tag).values())) / len(vertex_tag)
    chance = float((shares ** 2).sum())
    assert graph.n_vertices > 15000 and graph.weights.nnz > 10000
    assert agreement > chance + 0.3, (agreement, chance)


def test_ocr_letter_neighbours_share_their_letter(shared_data):
    letters, pixels, words = [], [], []
    with gzip.open(shared_data / "ocr" / "letters-folds0-4.data.gz", "rt") as lines:
        for line, _ in zip(lines, range(3000)):
            fields = line.split("\t")
            letters.append(fields[1])
            words.append(int(fields[3]))
            pixels.append(np.array(fields[6:134], dtype=float))
    # Consecutive lines of one word are its letters in order.
    starts = np.flatnonzero(np.diff(words, prepend=-1))
    sequences = np.split(np.array(pixels), starts[1:])
    graph = knn_graph(sequences, n_neighbors=20, min_similarity=0.3, self_weight=0.8)
    sources, targets = graph.weights.nonzero()
    letters = np.array(letters)
    agreement = np.mean(letters[sources] == letters[targets])
    shares = np.array(list(Counter(letters).values())) / len(letters)
    assert graph.weights.nnz > 3000
    assert agreement > (shares ** 2).sum() + 0.3, agreement

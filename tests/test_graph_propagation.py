"""Tests of `GraphPropagation`, the graph-propagation baseline of He et al. (2013)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError
from tracked_sentences import TrackedSentence, tracked_stream

from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.estimators._graph_propagation import GraphPropagation
from sklearn_ssl_crf.graph import SimilarityGraph, knn_graph, trigram_graph
from sklearn_ssl_crf.utils._sequences import SequenceMatrix


def sequences_of(lengths):
    """Feature matrices of the given lengths (their content does not matter with a given
    graph)."""
    return [np.ones((n, 1)) for n in lengths]


def symmetric(n_vertices, edges):
    """Weight matrix with ``w[a, b] = w[b, a] = weight`` for each ``(a, b, weight)``."""
    weights = np.zeros((n_vertices, n_vertices))
    for a, b, weight in edges:
        weights[a, b] = weights[b, a] = weight
    return weights


# --- the propagated distributions -------------------------------------------------------

def random_problem(seed, n_connected=30, n_labels=3):
    """A random graph: ``n_connected`` vertices joined by a path plus random edges, a
    component of 5 vertices without labels, and an isolated vertex; one token per vertex,
    plus extra labelled tokens on the first vertices (so that some clamped distributions
    are mixtures). Returns X, y, the graph, the clamped distributions and the labels."""
    rng = np.random.default_rng(seed)
    n_vertices = n_connected + 6
    edges = [(v, v + 1, rng.uniform(0.1, 2)) for v in range(n_connected - 1)]
    for _ in range(2 * n_connected):
        a, b = rng.choice(n_connected, size=2, replace=False)
        edges.append((a, b, rng.uniform(0.1, 2)))
    edges += [(v, v + 1, rng.uniform(0.1, 2)) for v in range(n_connected, n_connected + 4)]
    weights = sp.csr_matrix(symmetric(n_vertices, edges))
    labels = [f"L{k}" for k in range(n_labels)]
    # Labelled: 8 vertices, each with 3 tokens in one sequence; unlabelled: one token per
    # vertex, all in one sequence.
    clamped = rng.choice(n_connected, size=8, replace=False)
    gold = rng.integers(0, n_labels, size=(8, 3))
    gold[:, 0] = np.arange(8) % n_labels  # every label appears
    vertices = np.concatenate([np.repeat(clamped, 3), np.arange(n_vertices)])
    X = sequences_of([24, n_vertices])
    y = [[labels[k] for k in gold.ravel()], None]
    distributions = np.stack([np.bincount(row, minlength=n_labels) / 3 for row in gold])
    return X, y, SimilarityGraph(weights, vertices), clamped, distributions, labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_distributions_are_the_harmonic_solution(seed):
    X, y, graph, clamped, clamped_distributions, labels = random_problem(seed)
    gp = GraphPropagation(graph=graph, tol=1e-13, max_iterations=100_000).fit(X, y)
    assert gp.termination_condition_ == "converged"
    # classes_ in order of first appearance; reorder the oracle's columns to match.
    columns = [labels.index(label) for label in gp.classes_]
    q_l = clamped_distributions[:, columns]

    # The harmonic solution on the connected part: L_uu q_u = W_ul q_l.
    weights = graph.weights.tocsc()
    free = np.setdiff1d(np.arange(30), clamped)
    laplacian = sp.diags(np.asarray(weights.sum(axis=1)).ravel()) - weights
    q_u = spsolve(laplacian[free][:, free].tocsc(), weights[free][:, clamped] @ q_l)
    q = gp.label_distributions_
    np.testing.assert_allclose(q[free], q_u, atol=1e-9)
    np.testing.assert_array_equal(q[clamped], q_l)  # clamped vertices do not move
    # No label reaches the other component or the isolated vertex: uniform.
    np.testing.assert_allclose(q[30:], 1 / 3, rtol=1e-12)
    np.testing.assert_allclose(q.sum(axis=1), 1, rtol=1e-12)


def paper_steps(weights, clamped, distributions, n_steps):
    """The paper's steps (eq. 22, step size 1 / d_v): every free vertex becomes the weighted
    average of its neighbours, all at once. An independent route to the same fixed point."""
    weights = sp.csr_matrix(weights)
    degrees = np.asarray(weights.sum(axis=1)).ravel()
    free = np.flatnonzero(~clamped & (degrees > 0))
    q = distributions.copy()
    for _ in range(n_steps):
        q[free] = (weights[free] @ q) / degrees[free, None]
    return q


def test_the_paper_steps_reach_the_same_fixed_point():
    # A trigram graph over 200 synthetic sentences, 20 of them labelled.
    X, y = make_sequences(200, features="dict", random_state=0)
    graph = trigram_graph(X, 10, word_key="word")
    y_partial = y[:20] + [None] * 180
    gp = GraphPropagation(graph=graph, tol=1e-10).fit(X, y_partial)
    assert gp.termination_condition_ == "converged"
    counts = np.zeros((graph.n_vertices, len(gp.classes_)))
    labelled = np.concatenate([np.asarray(labels) for labels in y[:20]])
    tokens = graph.token_vertices[:labelled.size]
    assert (tokens >= 0).all()
    np.add.at(counts, (tokens, [gp.classes_.index(label) for label in labelled]), 1.0)
    clamped = counts.any(axis=1)
    start = np.full_like(counts, 1 / counts.shape[1])
    start[clamped] = counts[clamped] / counts[clamped].sum(axis=1, keepdims=True)
    reference = paper_steps(graph.weights, clamped, start, 20_000)
    np.testing.assert_allclose(gp.label_distributions_, reference, atol=1e-7)
    # In as many passes over the graph, the paper's steps are still far from it.
    assert gp.n_iter_ < 200
    assert np.abs(paper_steps(graph.weights, clamped, start, gp.n_iter_)
                  - reference).max() > 1e-3


def test_conjugate_gradients_end_within_the_free_vertices_and_warn_at_the_cap():
    # A path a - 2 - 3 - 4 - b: three free vertices between two clamped ones.
    weights = symmetric(5, [(0, 2, 3.0), (2, 3, 2.0), (3, 4, 1.0), (4, 1, 1.0)])
    graph = SimilarityGraph(weights, [0, 1, 2, 3, 4])
    X, y = sequences_of([2, 3]), [["a", "b"], None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        gp = GraphPropagation(graph=graph, tol=1e-12).fit(X, y)
    # Harmonic: q_a = (15, 12, 6) / 17 along the path.
    expected = np.array([[15, 2], [12, 5], [6, 11]]) / 17
    np.testing.assert_allclose(gp.label_distributions_[2:], expected, atol=1e-12)
    # Preconditioned by two Jacobi steps, the operator has eigenvalues 1 - mu^2 with mu those
    # of D^-1 W on the path's free part, -m, 0 and m: two distinct values, so conjugate
    # gradients are exact after two iterations (preconditioned by D alone: three).
    assert gp.termination_condition_ == "converged" and gp.n_iter_ == 2
    with pytest.warns(ConvergenceWarning, match="max_iterations=1 iterations"):
        gp.set_params(max_iterations=1).fit(X, y)
    assert gp.n_iter_ == 1 and gp.termination_condition_ == "max_iter"
    # Stopped early, the distributions are still distributions.
    assert (gp.label_distributions_ >= 0).all()
    np.testing.assert_allclose(gp.label_distributions_.sum(axis=1), 1, rtol=1e-12)
    assert np.abs(gp.label_distributions_[2:] - expected).max() > 1e-3


def test_nothing_to_propagate():
    graph = SimilarityGraph(symmetric(2, [(0, 1, 1.0)]), [0, 1])
    gp = GraphPropagation(graph=graph).fit(sequences_of([2]), [["a", "b"]])
    assert (gp.n_iter_, gp.termination_condition_) == (0, "converged")
    np.testing.assert_array_equal(gp.label_distributions_, np.eye(2))


# --- token labels -----------------------------------------------------------------------

def test_token_labels_and_fallbacks():
    X = sequences_of([5, 5, 2, 1])
    y = [
        ["B", "A", "A", "C", "C"],  # vertices 1, 0, 5, none, none
        None,                       # vertices 2, 3, none, 4, 6
        ["C", "A"],                 # both vertex 7
        None,                       # vertex 7
    ]
    vertices = [1, 0, 5, -1, -1, 2, 3, -1, 4, 6, 7, 7, 7]
    weights = symmetric(8, [(2, 0, 3.0), (2, 1, 1.0), (3, 1, 2.0), (6, 0, 1.0), (6, 1, 1.0)])
    gp = GraphPropagation(graph=SimilarityGraph(weights, vertices), tol=1e-12).fit(X, y)
    assert gp.classes_ == ["B", "A", "C"]
    np.testing.assert_allclose(gp.label_distributions_[[2, 6, 7]],
                               [[0.25, 0.75, 0], [0.5, 0.5, 0], [0, 0.5, 0.5]])
    assert gp.transduction_ == [
        ["B", "A", "A", "C", "C"],   # gold labels kept
        # 2: A (0.75); 3: B (its only neighbour); no vertex: C, the majority of the
        # labelled tokens without a vertex; 4 (isolated, reached by no label): A, the
        # majority of the labelled tokens with a vertex (not B, the first class); 6: a tie
        # between B and A, so B, the first in classes_.
        ["A", "B", "C", "A", "B"],
        ["C", "A"],                  # gold, although vertex 7 says A for both
        ["A"],                       # vertex 7: a tie between A and C, so A
    ]


def test_no_vertex_fallback_when_every_labelled_token_has_a_vertex():
    X = sequences_of([3, 2])
    y = [["x", "y", "y"], None]
    graph = SimilarityGraph(symmetric(3, [(0, 2, 1.0)]), [0, 1, 1, 2, -1])
    gp = GraphPropagation(graph=graph).fit(X, y)
    assert gp.transduction_ == [["x", "y", "y"], ["x", "y"]]


# --- input handling ---------------------------------------------------------------------

@pytest.mark.parametrize("graph", ["trigram", "knn", "given"])
def test_a_stream_of_unlabelled_sentences_is_read_a_block_at_a_time(graph, monkeypatch):
    # The same propagation as the list, and the stream never held whole: its lengths and
    # its words (as codes) are kept, for 'knn' its feature rows; the tokens go.
    import sklearn_ssl_crf.estimators._base as base
    from sklearn_ssl_crf.graph import _trigram

    monkeypatch.setattr(base, "_STREAM_BLOCK", 10)
    monkeypatch.setattr(_trigram, "_BLOCK_TOKENS", 50)
    X, y = make_sequences(120, features="dict", random_state=1)
    X[50] = []
    if graph == "given":
        graph = trigram_graph(X, 5, word_key="word")
    held = []


    params = {"graph": graph, "word_key": "word", "n_neighbors": 5}
    listed = GraphPropagation(**params).fit(X[:20], y[:20], X_unlabeled=X[20:])
    streamed = GraphPropagation(**params).fit(X[:20], y[:20],
                                              X_unlabeled=tracked_stream(X[20:], held))
    assert max(held) <= 20 and TrackedSentence.freed == 100
    assert (listed.graph_.weights != streamed.graph_.weights).nnz == 0
    np.testing.assert_array_equal(listed.label_distributions_, streamed.label_distributions_)
    assert streamed.transduction_ == listed.transduction_ and streamed.transduction_[50] == []
    assert [len(labels) for labels in streamed.transduction_] == [len(x) for x in X]


def test_a_bad_sentence_in_the_stream_is_named():
    X, y = make_sequences(30, features="dict", random_state=1)
    graph = trigram_graph(X, 5, word_key="word")
    with pytest.raises(TypeError, match="X holds lists of tokens, so X_unlabeled must hold "
                                        "them too, not ndarray"):
        GraphPropagation(graph=graph).fit(X[:20], y[:20],
                                          X_unlabeled=iter(X[20:29] + [np.ones((3, 2))]))
    with pytest.raises(TypeError, match="token 0 of sequence 2 of X_unlabeled is of type "
                                        "int"):
        GraphPropagation(word_key="word").fit(X[:20], y[:20],
                                              X_unlabeled=iter(X[20:22] + [[7, 8]]))
    with pytest.raises(TypeError, match="X and X_unlabeled mix kinds of tokens: token 0 of "
                                        "sequence 0 is a dict, token 0 of sequence 1 of "
                                        "X_unlabeled a str"):
        GraphPropagation(word_key="word").fit(X[:20], y[:20],
                                              X_unlabeled=iter(X[20:21] + [["a", "b"]]))


def test_both_unlabeled_conventions_agree():
    X, y, graph, *_ = random_problem(3)
    X_extra = sequences_of([2, 1])
    labelled, unlabeled = X[:1], X[1:] + X_extra
    n_tokens = graph.n_tokens + 3
    rng = np.random.default_rng(0)
    vertices = np.concatenate([graph.token_vertices, rng.integers(-1, 36, size=3)])
    graph = SimilarityGraph(graph.weights, vertices)
    in_y = GraphPropagation(graph=graph).fit(labelled + unlabeled, y[:1] + [None] * 3)
    separate = GraphPropagation(graph=graph).fit(labelled, y[:1], X_unlabeled=unlabeled)
    stacked = SequenceMatrix(sp.csr_matrix(np.ones((n_tokens - 24, 1))),
                             np.cumsum([0] + [len(x) for x in unlabeled]))
    as_matrix = GraphPropagation(graph=graph).fit(labelled, y[:1], X_unlabeled=stacked)
    assert len(in_y.transduction_) == 4
    assert [len(labels) for labels in in_y.transduction_] == [24, 36, 2, 1]
    for other in (separate, as_matrix):
        assert other.transduction_ == in_y.transduction_
        np.testing.assert_array_equal(other.label_distributions_, in_y.label_distributions_)


def test_feature_dicts_and_empty_sequences():
    X = [[{"w": "a"}, {"w": "b"}], [], [{"w": "c"}]]
    graph = SimilarityGraph(symmetric(2, [(0, 1, 1.0)]), [0, -1, 1])
    gp = GraphPropagation(graph=graph).fit(X, [["P", "Q"], [], None])
    assert gp.transduction_ == [["P", "Q"], [], ["P"]]


def test_clone_and_pickle():
    X, y, graph, *_ = random_problem(4)
    gp = GraphPropagation(graph=graph, tol=1e-8, verbose=False)
    cloned = clone(gp)
    assert cloned.get_params()["tol"] == 1e-8
    assert not hasattr(cloned, "transduction_")
    gp.fit(X, y)
    loaded = pickle.loads(pickle.dumps(gp))
    assert loaded.transduction_ == gp.transduction_
    assert loaded.classes_ == gp.classes_ and loaded.n_iter_ == gp.n_iter_
    np.testing.assert_array_equal(loaded.label_distributions_, gp.label_distributions_)
    assert clone(gp).fit(X, y).transduction_ == gp.transduction_


def test_verbose_prints_progress(capsys):
    weights = symmetric(5, [(0, 2, 3.0), (2, 3, 2.0), (3, 4, 1.0), (4, 1, 1.0)])
    graph = SimilarityGraph(weights, [0, 1, 2, 3, 4])
    GraphPropagation(graph=graph, verbose=True).fit(sequences_of([2, 3]), [["a", "b"], None])
    lines = capsys.readouterr().out.splitlines()
    # Every free vertex starts at the labels' shares of the clamped neighbours' weight,
    # (0.75, 0.25); vertex 4, between vertex 3 and b, is 0.375 from their average.
    assert lines[:2] == [
        "GraphPropagation: iteration 0, largest distance from the neighbours' average 0.375",
        "GraphPropagation: iteration 1, largest distance from the neighbours' average 0.0108",
    ]
    prefix = "GraphPropagation: iteration 2, largest distance from the neighbours' average "
    assert len(lines) == 3 and lines[2].startswith(prefix)
    assert float(lines[2].removeprefix(prefix)) <= 1e-6


@pytest.mark.parametrize("kwargs, y, error, match", [
    ({"graph": SimilarityGraph(np.zeros((2, 2)), [0, 1])}, [["a", "b"], None], ValueError,
     "the graph maps 2 tokens to vertices, but X has 3 tokens"),
    ({}, [["a", "b"]], ValueError, "X has 2 sequences but y has 1 label sequences"),
    ({}, [["a"], None], ValueError, "sequence 0 has 2 tokens but 1 labels"),
    ({}, [None, None], ValueError, "y has no labelled sequence"),
    ({}, "ab", TypeError, "y must be a list of label sequences"),
    ({"graph": "bogus"}, [["a", "b"], None], InvalidParameterError, "'graph' parameter"),
    ({"tol": -1.0}, [["a", "b"], None], InvalidParameterError, "'tol' parameter"),
    ({"max_iterations": 1.5}, [["a", "b"], None], InvalidParameterError, "max_iterations"),
    ({"n_neighbors": 0}, [["a", "b"], None], InvalidParameterError, "n_neighbors"),
])
def test_bad_inputs(kwargs, y, error, match):
    params = {"graph": SimilarityGraph(np.zeros((3, 3)), [0, 1, 2]), **kwargs}
    with pytest.raises(error, match=match):
        GraphPropagation(**params).fit(sequences_of([2, 1]), y)


def test_empty_inputs():
    graph = SimilarityGraph(np.zeros((1, 1)), [0])
    with pytest.raises(ValueError, match="X is empty"):
        GraphPropagation(graph=graph).fit([], [])
    with pytest.raises(ValueError, match="labelled sequences of y have no tokens"):
        GraphPropagation(graph=graph).fit(sequences_of([0, 1]), [[], None])


# --- graphs built by fit ----------------------------------------------------------------

def test_graph_built_from_the_inputs():
    X, y = make_sequences(40, features="dict", random_state=1)
    y_partial = y[:10] + [None] * 30
    gp = GraphPropagation(word_key="word", n_neighbors=5).fit(X, y_partial)
    expected = trigram_graph(X, 5, word_key="word")
    assert (gp.graph_.weights != expected.weights).nnz == 0
    np.testing.assert_array_equal(gp.graph_.token_vertices, expected.token_vertices)
    assert gp.transduction_[:10] == y[:10]
    assert [len(labels) for labels in gp.transduction_] == [len(x) for x in X]

    rng = np.random.default_rng(0)
    matrices = [rng.random((len(labels), 4)) for labels in y]
    gp = GraphPropagation(graph="knn", n_neighbors=3).fit(matrices[:10], y[:10],
                                                          X_unlabeled=matrices[10:])
    assert (gp.graph_.weights != knn_graph(matrices, 3).weights).nnz == 0
    with pytest.raises(TypeError, match="graph='trigram' needs words"):
        GraphPropagation().fit(matrices, y_partial)


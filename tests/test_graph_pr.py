"""GraphPRCRF: the E-step and M-step against enumeration and finite differences, EM's
monotonicity, the special cases, conventions and parallelism."""

import gc
import itertools
import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from fixed_settings import fixed
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from tracked_sentences import TrackedSentence, tracked_stream

from sklearn_ssl_crf import CRF, GraphPRCRF, SequenceMatrix, WindowFeatures, WindowRows
from sklearn_ssl_crf.datasets import load_ud_english_ewt, make_sequences, read_ocr_letters
from sklearn_ssl_crf.graph import SimilarityGraph, knn_graph, trigram_graph
from sklearn_ssl_crf.objective import GraphLaplacianPenalty, PosteriorRegularizationTerms
from sklearn_ssl_crf.objective._posterior_regularization import Auxiliary
from sklearn_ssl_crf.optim import CurvatureHistory, minimize_lbfgs
from sklearn_ssl_crf.parallel import ChunkedSequences, _chunked
from sklearn_ssl_crf.potentials._weight_layout import WeightLayout
from sklearn_ssl_crf.training._graph_pr_em import ExpectationMaximisation
from sklearn_ssl_crf.training._records import Fold


def word_graph(X, key="word", n_neighbors=4, seed=0):
    """A graph over the word types of X: each type joined to a few random others, weights
    in (0, 1]; deterministic."""
    words = [token[key] for sequence in X for token in sequence]
    vertex = {word: k for k, word in enumerate(dict.fromkeys(words))}
    n_vertices = len(vertex)
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n_vertices), n_neighbors)
    columns = rng.integers(0, n_vertices, size=rows.size)
    keep = rows != columns
    upper = sp.csr_matrix((rng.uniform(0.1, 1.0, keep.sum()), (rows[keep], columns[keep])),
                          shape=(n_vertices, n_vertices))
    weights = upper.maximum(upper.T)
    return SimilarityGraph(weights, np.array([vertex[word] for word in words]))


@pytest.fixture(scope="module")
def synthetic():
    X, y = make_sequences(240, features="dict", random_state=0)
    y_partial = y[:30] + [None] * 210
    return X, y, y_partial, word_graph(X)


def em_entries(model):
    return [entry for entry in model.training_log_ if entry["phase"] == "EM"]


# -- the E-step and M-step quantities -----------------------------------------------------

@pytest.fixture
def tiny_problem():
    """Three unlabelled chains of 3, 2 and 4 tokens, 3 labels, dense random features; a
    Laplacian penalty over 4 vertices with labelled seeds."""
    rng = np.random.default_rng(3)
    n_labels, n_features = 3, 4
    lengths = np.array([3, 2, 4])
    matrix = sp.csr_matrix(rng.normal(size=(lengths.sum(), n_features)))
    sequences = SequenceMatrix(matrix, np.concatenate([[0], np.cumsum(lengths)]))
    token_vertices = np.array([0, 1, -1, 2, 0, 3, 1, 2, -1])
    weights = sp.csr_matrix(np.array([[0, 1.0, 0.5, 0], [1.0, 0, 0, 0.2],
                                      [0.5, 0, 0, 0.7], [0, 0.2, 0.7, 0]]))
    seed_sums = np.zeros((4, n_labels))
    seed_sums[0, 2] = seed_sums[3, 1] = 1.0
    penalty = GraphLaplacianPenalty(weights, token_vertices, seed_sums)
    data = ChunkedSequences(sequences, groups=token_vertices, n_groups=4, chunk_tokens=4)
    layout = WeightLayout(n_features, n_labels)
    model = fixed(GraphPRCRF(lam=0.7, unlabeled_weight=1.3, c2=0.1))
    model.classes_ = list(range(n_labels))
    labelled = SequenceMatrix(sp.csr_matrix(rng.normal(size=(5, n_features))), [0, 2, 5])
    labelled_data = ChunkedSequences(labelled, rng.integers(0, n_labels, size=5), n_labels)
    fold = Fold(labelled_data, layout, c1=0.0, c2=0.1)
    terms = PosteriorRegularizationTerms(model._supervised_objective(fold), data, layout,
                                         penalty, lam=0.7, weight=1.3)
    theta = rng.normal(size=layout.size)
    # q holds its offsets in single precision: these are exactly what it holds.
    offsets = rng.normal(size=(4, n_labels)).astype(np.float32)
    return terms, sequences, penalty, layout, theta, offsets


def enumerate_chain(unary, transition):
    """Every label sequence of a chain with its probability."""
    n, n_labels = unary.shape
    paths = np.array(list(itertools.product(range(n_labels), repeat=n)))
    scores = unary[np.arange(n), paths].sum(axis=1)
    scores += transition[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    probabilities = np.exp(scores - scores.max())
    return paths, probabilities / probabilities.sum()


def test_kl_expected_features_and_penalty_match_enumeration(tiny_problem):
    terms, sequences, penalty, layout, theta, offsets = tiny_problem
    state, transition = layout.unpack(theta)
    unary = np.asarray(sequences.matrix @ state)
    vertices = penalty.token_groups
    shift = np.where(vertices[:, None] >= 0, offsets[np.maximum(vertices, 0)], 0.0)
    kl = expected_log_q = 0.0
    node = np.zeros_like(unary)
    edges = np.zeros_like(transition)
    for start, stop in zip(sequences.offsets[:-1], sequences.offsets[1:]):
        paths, p = enumerate_chain(unary[start:stop], transition)
        _, q = enumerate_chain(unary[start:stop] + shift[start:stop], transition)
        kl += np.sum(q * np.log(q / p))
        expected_log_q += np.sum(q * np.log(q))
        for t in range(stop - start):
            np.add.at(node[start + t], paths[:, t], q)
            if t:
                np.add.at(edges, (paths[:, t - 1], paths[:, t]), q)
    log_z = terms.likelihood_terms(theta).log_z
    auxiliary = terms.auxiliary(theta, log_z, offsets)
    assert auxiliary.kl == pytest.approx(kl, rel=1e-10, abs=1e-12)
    assert auxiliary.penalty == pytest.approx(penalty(node)[0], rel=1e-10)
    assert auxiliary.objective == pytest.approx(kl + 0.7 * penalty(node)[0], rel=1e-10)
    terms.expected_features(auxiliary)
    expected = layout.pack(np.asarray(sequences.matrix.T @ node), edges)
    np.testing.assert_allclose(auxiliary.features, expected, rtol=1e-10, atol=1e-12)
    assert auxiliary.expected_log_q == pytest.approx(expected_log_q, rel=1e-10)


def test_q_is_the_distribution_of_its_single_precision_offsets(tiny_problem):
    """q holds its offsets and the E-step's gradient in single precision (gigabytes each on
    a large graph): offsets given in double are rounded, and q is exactly the q of the
    rounded ones (its KL and h its own), not a mix of both."""
    terms, _, _, _, theta, offsets = tiny_problem
    log_z = terms.likelihood_terms(theta).log_z
    finer = offsets + np.float64(2.0 ** -30)  # lost in rounding to single precision
    q, rounded = terms.auxiliary(theta, log_z, finer), terms.auxiliary(theta, log_z, offsets)
    assert q.offsets.dtype == q.penalty_gradient.dtype == np.float32
    np.testing.assert_array_equal(q.offsets, offsets)
    assert (q.kl, q.penalty) == (rounded.kl, rounded.penalty)


def test_the_estep_steps_in_single_precision(synthetic, monkeypatch):
    """Every q the EM evaluates, the start, an E-step's start and each trial, gets its
    offsets as single-precision tables, also when lam and estep_eta are NumPy scalars
    (which would make a step's arithmetic double: a transient double table)."""
    X, _, y_partial, graph = synthetic
    dtypes = set()
    evaluate = PosteriorRegularizationTerms.auxiliary

    def recorded(terms, theta, log_z, offsets):
        dtypes.add(offsets.dtype)
        return evaluate(terms, theta, log_z, offsets)

    monkeypatch.setattr(PosteriorRegularizationTerms, "auxiliary", recorded)
    fixed(GraphPRCRF(graph=graph, lam=np.float64(2.0), estep_eta=np.float64(1.0),
                     em_iterations=3, em_tol=0.0)).fit(X, y_partial)
    assert dtypes == {np.dtype(np.float32)}


def test_an_evaluation_of_q_leaves_no_table_of_the_tokens_behind():
    """An E-step's evaluation of q keeps no (tokens x labels) table with the chunks (theta's
    unary potentials, q's marginals: gigabytes each on millions of sentences): what stays
    allocated after it is q's own (vertices x labels) tables. q's expected features take
    a new pass, the same floats whatever was evaluated between."""
    rng = np.random.default_rng(0)
    n_tokens, n_vertices, n_labels, n_features = 40_000, 50, 4, 20
    matrix = sp.random(n_tokens, n_features, density=0.2, format="csr", random_state=0)
    sequences = SequenceMatrix(matrix, np.arange(0, n_tokens + 1, 10))
    token_vertices = rng.integers(n_vertices, size=n_tokens)
    weights = sp.random(n_vertices, n_vertices, density=0.2, format="csr", random_state=1)
    penalty = GraphLaplacianPenalty(weights + weights.T, token_vertices,
                                    np.zeros((n_vertices, n_labels)))
    data = ChunkedSequences(sequences, groups=token_vertices, n_groups=n_vertices,
                            chunk_tokens=4_000)
    layout = WeightLayout(n_features, n_labels)
    terms = PosteriorRegularizationTerms(lambda theta: (0.0, np.zeros_like(theta)), data,
                                         layout, penalty, lam=1.0, weight=1.0)
    theta = rng.normal(size=layout.size)
    log_z = terms.likelihood_terms(theta).log_z
    offsets = rng.normal(size=(n_vertices, n_labels)).astype(np.float32)
    # The first calls' one-off allocations (the workspace), then an E-step's end.
    terms.expected_features(terms.auxiliary(theta, log_z, offsets))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        q = terms.auxiliary(theta, log_z, offsets)
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # One (tokens x labels) table of doubles is 1.3 MB; q's own tables 1.6 kB.
    assert left < n_tokens * n_labels * 8 / 4, left
    terms.expected_features(q)
    again = terms.auxiliary(theta, log_z, offsets)
    terms.auxiliary(theta, log_z, 2 * offsets)
    terms.expected_features(again)
    np.testing.assert_array_equal(q.features, again.features)
    assert q.expected_log_q == again.expected_log_q


def test_objectives_that_differ_by_a_linear_term_share_lbfgs_pairs():
    """M-steps share one CurvatureHistory: on a quadratic whose linear term changes (as q's
    expected features change the M-step's), the second run starts from the first run's
    pairs and reaches the new optimum in fewer iterations."""
    rng = np.random.default_rng(0)
    basis = rng.normal(size=(30, 30))
    hessian = basis @ basis.T + 30 * np.eye(30)

    def quadratic(linear, history=None):
        def objective(x):
            return 0.5 * x @ hessian @ x - linear @ x, hessian @ x - linear
        if history is not None:
            objective.lbfgs_history = history
        return objective

    history = CurvatureHistory(6, 30)
    first = minimize_lbfgs(quadratic(rng.normal(size=30), history), np.zeros(30),
                           epsilon=1e-10, period=0)
    assert history.size == 6
    linear = rng.normal(size=30)
    warm = minimize_lbfgs(quadratic(linear, history), first.x, epsilon=1e-10, period=0)
    cold = minimize_lbfgs(quadratic(linear), first.x, epsilon=1e-10, period=0)
    optimum = np.linalg.solve(hessian, linear)
    for result in (warm, cold):
        np.testing.assert_allclose(result.x, optimum, rtol=1e-7, atol=1e-9)
    assert warm.n_iter < cold.n_iter
    with pytest.raises(ValueError, match="pairs of size"):
        minimize_lbfgs(quadratic(linear[:20], CurvatureHistory(6, 30)), np.zeros(20))


def test_m_step_gradient_matches_finite_differences(tiny_problem):
    terms, _, _, layout, theta, offsets = tiny_problem
    q = terms.auxiliary(theta, terms.likelihood_terms(theta).log_z, offsets)
    terms.expected_features(q)
    objective = terms.m_step_objective(q)
    _, gradient = objective(theta)
    step = 1e-6
    numeric = np.empty_like(theta)
    for index in range(layout.size):
        up, down = theta.copy(), theta.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (objective(up)[0] - objective(down)[0]) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-7)


# -- EM -----------------------------------------------------------------------------------

def test_estep_objective_never_rises_over_its_iterations(synthetic):
    X, _, y_partial, graph = synthetic
    objectives = []
    for steps in range(1, 7):
        model = fixed(GraphPRCRF(graph=graph, lam=2.0, em_iterations=1, estep_iterations=steps,
                           estep_tol=0.0)).fit(X, y_partial)
        start, first = em_entries(model)[:2]
        objectives.append(first["estep_objective"])
        assert first["estep_iterations"] == steps
    objectives = [start["estep_objective"]] + objectives
    assert np.all(np.diff(objectives) <= 1e-12 * abs(objectives[0]))
    assert objectives[-1] < 0.9 * objectives[0]


def test_an_estep_holds_three_vertex_tables_besides_the_one_it_makes(synthetic, monkeypatch):
    """Each q holds (vertices x labels) tables, gigabytes on a graph of millions of
    vertices: at every evaluation of a new q, the q's alive hold at most three (the
    EM's kept q its offsets, the E-step's current q its offsets and penalty gradient);
    the start of an E-step and a rejected trial are let go. Before: up to ten."""
    X, _, y_partial, graph = synthetic
    held = []
    evaluate = PosteriorRegularizationTerms.auxiliary

    def counted(terms, theta, log_z, offsets):
        alive = [q for q in gc.get_objects() if isinstance(q, Auxiliary)]
        held.append(sum(1 + (q.penalty_gradient is not None) for q in alive))
        return evaluate(terms, theta, log_z, offsets)

    monkeypatch.setattr(PosteriorRegularizationTerms, "auxiliary", counted)
    # Large first steps (estep_eta) are rejected and halved: the trials' case too.
    model = fixed(GraphPRCRF(graph=graph, lam=2.0, em_iterations=4, em_tol=0.0,
                             estep_eta=1.0)).fit(X, y_partial)
    steps = sum(entry["estep_iterations"] for entry in em_entries(model))
    # One evaluation at the start, one an E-step's start after the first, one a step:
    # the others are rejected trials.
    assert len(held) > 1 + 3 + steps
    assert max(held) == 3


@pytest.mark.parametrize("selection", [{}, {"lam": [0.5, 2.0], "cv": 2}],
                         ids=["fixed", "selected"])
def test_the_corpus_rows_are_let_go_before_the_fit_on_all_of_it(synthetic, monkeypatch,
                                                                selection):
    """The fit on all of the text (the one run, or the refit after selection) packs
    the rows into its chunks: the featurised corpus is let go first, not held beside
    them (gigabytes at 10^6 sentences). Before, every EM ran beside it. Partly labelled
    sequences still get their transduction (from the labelled sequences' own rows)."""
    X, y, y_partial, graph = synthetic
    n_tokens = sum(map(len, X))
    whole = []
    run = ExpectationMaximisation.run

    def counted(em, theta, max_iterations, iterates):
        whole.append(sum(isinstance(obj, SequenceMatrix) and obj.offsets[-1] == n_tokens
                         for obj in gc.get_objects()))
        return run(em, theta, max_iterations, iterates)

    monkeypatch.setattr(ExpectationMaximisation, "run", counted)
    y_some = list(y_partial)
    y_some[3] = [None if t % 2 else label for t, label in enumerate(y[3])]
    params = dict(graph=graph, em_iterations=2, em_tol=0.0, **selection)
    model = (fixed(GraphPRCRF(**params)) if not selection
             else GraphPRCRF(**params, c1=0.0, c2=1.0, early_stopping=False)).fit(X, y_some)
    assert whole[-1] == 0
    if selection:
        assert len(whole) == 5 and whole[:-1] == [1] * 4  # 2 folds x 2 strengths
    expected = model.predict([X[3]], known_labels=[y_some[3]])[0]
    assert model.transduction_[3] == expected and None not in expected
    assert [model.transduction_[k][t] for k, t in [(3, 0), (3, 2)]] == [y[3][0], y[3][2]]


@pytest.mark.parametrize("params", [
    {"lam": 1.0}, {"lam": 5.0, "unlabeled_weight": 0.3}, {"lam": 1.0, "estep_iterations": 1},
    {"lam": 0.5, "c1": 0.05, "c2": 0.1}, {"lam": 1.0, "c2": 0.01, "mstep_iterations": 2}])
def test_em_objective_never_decreases(synthetic, params):
    X, _, y_partial, graph = synthetic
    model = fixed(GraphPRCRF(graph=graph, em_iterations=8, em_tol=0.0, **params)).fit(X, y_partial)
    objective = np.array([entry["objective"] for entry in em_entries(model)])
    assert objective.size == 9
    assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[:-1]))
    assert objective[-1] > objective[0]
    # J's parts add up, iteration by iteration.
    for entry in em_entries(model):
        penalised = entry["kl"] + model.lam * entry["penalty"]
        assert entry["objective"] == pytest.approx(
            entry["likelihood"] - model.unlabeled_weight * penalised, rel=1e-12)


@pytest.mark.parametrize("c2", [0.1, 100.0])
def test_em_stops_when_j_rises_by_a_small_share_of_its_total_rise(synthetic, c2):
    # A strong prior makes |J| large; the rule must not depend on it (em_tol relative to
    # |J| stopped EM after 4 iterations on handwriting with c2 = 10).
    X, _, y_partial, graph = synthetic
    em_tol = 0.05
    full = em_entries(fixed(GraphPRCRF(graph=graph, c2=c2, em_iterations=12, em_tol=0.0))
                      .fit(X, y_partial))
    objective = np.array([entry["objective"] for entry in full])
    stops = np.diff(objective) <= em_tol * (objective[1:] - objective[0])
    assert stops.any() and not stops[0]
    expected = int(np.argmax(stops)) + 1
    model = fixed(GraphPRCRF(graph=graph, c2=c2, em_iterations=12, em_tol=em_tol)).fit(X, y_partial)
    assert model.n_iter_ == expected
    assert model.termination_condition_.startswith("converged")
    assert [entry["objective"] for entry in em_entries(model)] == list(objective[:expected + 1])


def test_mstep_iterations_bounds_each_m_step_and_not_the_supervised_start(synthetic):
    X, y, y_partial, graph = synthetic
    params = {"graph": graph, "c2": 0.01, "em_iterations": 3, "em_tol": 0.0}
    full = fixed(GraphPRCRF(**params)).fit(X, y_partial)
    m_steps = [entry["mstep_iterations"] for entry in em_entries(full)[1:]]
    assert max(m_steps) > 3
    bounded = fixed(GraphPRCRF(mstep_iterations=3, **params)).fit(X, y_partial)
    assert [entry["mstep_iterations"] for entry in em_entries(bounded)[1:]] == [3, 3, 3]
    assert em_entries(bounded)[0]["objective"] == em_entries(full)[0]["objective"]
    assert em_entries(bounded)[-1]["objective"] < em_entries(full)[-1]["objective"]
    # A bound no M-step reaches changes nothing.
    loose = fixed(GraphPRCRF(mstep_iterations=max(m_steps), **params)).fit(X, y_partial)
    np.testing.assert_array_equal(loose.state_weights_, full.state_weights_)
    assert em_entries(loose) == em_entries(full)


def test_lam_zero_gives_q_equal_to_p_theta(synthetic):
    X, _, y_partial, graph = synthetic
    model = fixed(GraphPRCRF(graph=graph, lam=0.0, em_iterations=1)).fit(X, y_partial)
    entries = em_entries(model)
    # The E-step's q is p_theta exactly: no offset, so KL is 0 to the last bit.
    assert [entry["estep_objective"] for entry in entries] == [0.0, 0.0]
    # q of iteration 1 is p_theta of the supervised start: its labels are the CRF's.
    crf = CRF().fit(X, y_partial)
    assert model.transduction_[30:] == crf.predict(X[30:])
    assert model.transduction_[:30] == y_partial[:30]


def test_no_penalty_and_no_unlabeled_weight_is_exactly_the_crf(synthetic):
    X, _, y_partial, graph = synthetic
    crf = CRF(c2=0.5).fit(X, y_partial)
    model = fixed(GraphPRCRF(graph=graph, lam=0.0, unlabeled_weight=0.0, c2=0.5)).fit(X, y_partial)
    # The same iterates; the fit runs L-BFGS on the weights of the attributes that labelled
    # tokens have (the others stay 0), which only changes BLAS summation order.
    np.testing.assert_allclose(model.state_weights_, crf.state_weights_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.transition_weights_, crf.transition_weights_, rtol=0,
                               atol=1e-9)
    assert model.predict(X) == crf.predict(X)
    assert model.attributes_ == crf.attributes_


def test_unlabeled_weight_zero_keeps_theta_but_q_uses_the_graph(synthetic):
    X, _, y_partial, graph = synthetic
    crf = CRF().fit(X, y_partial)
    model = fixed(GraphPRCRF(graph=graph, lam=5.0, unlabeled_weight=0.0)).fit(X, y_partial)
    start = fixed(GraphPRCRF(graph=graph, lam=5.0, unlabeled_weight=0.0, em_iterations=0))
    np.testing.assert_array_equal(model.state_weights_, start.fit(X, y_partial).state_weights_)
    np.testing.assert_allclose(model.state_weights_, crf.state_weights_, rtol=0, atol=1e-9)
    assert model.n_iter_ == 1 and em_entries(model)[1]["penalty"] < \
        em_entries(model)[0]["penalty"]
    assert model.transduction_[30:] != crf.predict(X[30:])


def test_graph_penalty_pulls_q_towards_the_graph_labels(synthetic):
    """A graph joining tokens of the same gold label makes q agree with the gold labels."""
    X, y, y_partial, _ = synthetic
    labels = np.array([label for sequence in y for label in sequence])
    # One vertex per (word, gold label): the graph knows the answer, the CRF does not.
    words = [token["word"] + "/" + label for sequence, tags in zip(X, y)
             for token, label in zip(sequence, tags)]
    vertex = {word: k for k, word in enumerate(dict.fromkeys(words))}
    token_vertices = np.array([vertex[word] for word in words])
    vertex_label = {k: word.split("/")[1] for word, k in vertex.items()}
    same = np.array([[vertex_label[a] == vertex_label[b] and a != b for b in range(len(vertex))]
                     for a in range(len(vertex))], dtype=float)
    graph = SimilarityGraph(same, token_vertices)
    crf = CRF().fit(X, y_partial)
    model = fixed(GraphPRCRF(graph=graph, lam=1.0, em_iterations=5)).fit(X, y_partial)

    def accuracy(predicted):
        flat = np.concatenate([np.array(p, dtype=object) for p in predicted[30:]])
        return np.mean(flat == labels[-flat.size:])

    assert accuracy(model.transduction_) > accuracy(crf.predict(X)) + 0.1
    assert accuracy(model.predict(X)) > accuracy(crf.predict(X))


def test_n_jobs_gives_the_same_model(synthetic, monkeypatch):
    X, _, y_partial, graph = synthetic
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 700)  # several chunks
    params = {"graph": graph, "lam": 1.0, "em_iterations": 3}
    one = fixed(GraphPRCRF(n_jobs=1, **params)).fit(X, y_partial)
    two = fixed(GraphPRCRF(n_jobs=2, **params)).fit(X, y_partial)
    np.testing.assert_array_equal(one.state_weights_, two.state_weights_)
    np.testing.assert_array_equal(one.transition_weights_, two.transition_weights_)
    assert one.transduction_ == two.transduction_
    assert em_entries(one) == [{key: value for key, value in entry.items() if key != "time"}
                               for entry in em_entries(two)]


def test_n_jobs_threads_the_trigram_graph(synthetic, monkeypatch):
    X, _, y_partial, _ = synthetic
    asked = []

    def recording(*args, **kwargs):
        asked.append(kwargs.get("n_jobs"))
        return trigram_graph(*args, **kwargs)

    monkeypatch.setattr("sklearn_ssl_crf.graph._resolve.trigram_graph", recording)
    params = {"graph": "trigram", "word_key": "word", "lam": 1.0, "em_iterations": 1}
    one = fixed(GraphPRCRF(n_jobs=1, **params)).fit(X, y_partial)
    two = fixed(GraphPRCRF(n_jobs=2, **params)).fit(X, y_partial)
    assert asked == [1, 2]
    assert (one.graph_.weights != two.graph_.weights).nnz == 0
    np.testing.assert_array_equal(one.state_weights_, two.state_weights_)


@pytest.mark.parametrize("graph", ["trigram", "knn"])
def test_a_stream_of_unlabelled_sentences_gives_the_model_of_the_list(synthetic, graph):
    # Featurised (and its words read) a block at a time: the same model, graph and
    # transduction as the list given whole, empty sentences in the stream included.
    X, y, _, _ = synthetic
    pool = X[30:] + [[]] + X[30:40]
    params = {"graph": graph, "word_key": "word", "lam": 1.0, "em_iterations": 2}
    listed = fixed(GraphPRCRF(**params)).fit(X[:30], y[:30], X_unlabeled=pool)
    streamed = fixed(GraphPRCRF(**params)).fit(X[:30], y[:30],
                                                X_unlabeled=(s for s in pool))
    assert (listed.graph_.weights != streamed.graph_.weights).nnz == 0
    np.testing.assert_array_equal(listed.graph_.token_vertices, streamed.graph_.token_vertices)
    np.testing.assert_array_equal(listed.state_weights_, streamed.state_weights_)
    np.testing.assert_array_equal(listed.transition_weights_, streamed.transition_weights_)
    assert streamed.transduction_ == listed.transduction_
    assert len(streamed.transduction_) == 30 + len(pool) and streamed.transduction_[240] == []
    # ... and the model of the pool given in X with None labels.
    inline = fixed(GraphPRCRF(**params)).fit(X[:30] + pool, y[:30] + [None] * len(pool))
    np.testing.assert_array_equal(inline.state_weights_, streamed.state_weights_)
    assert inline.transduction_ == streamed.transduction_


def test_the_unlabelled_stream_is_never_held_whole_as_dicts(synthetic, monkeypatch):
    import sklearn_ssl_crf.estimators._base as base

    monkeypatch.setattr(base, "_STREAM_BLOCK", 10)
    X, y, _, _ = synthetic
    held = []


    params = {"graph": "trigram", "word_key": "word", "lam": 1.0, "em_iterations": 1}
    streamed = fixed(GraphPRCRF(**params)).fit(X[:30], y[:30],
                                                X_unlabeled=tracked_stream(X[30:], held))
    # At most the block being featurised and the one being read (10 sentences each).
    assert max(held) <= 20 and TrackedSentence.freed == 210
    listed = fixed(GraphPRCRF(**params)).fit(X[:30], y[:30], X_unlabeled=X[30:])
    np.testing.assert_array_equal(listed.state_weights_, streamed.state_weights_)


def test_a_bad_token_in_the_stream_is_named_by_its_place_there(synthetic):
    X, y, _, _ = synthetic
    pool = X[30:40] + [[{"word": "a"}, {"other": "b"}]]
    with pytest.raises(ValueError, match="token 1 of sequence 10 of X_unlabeled has no 'word' "
                                         "key"):
        GraphPRCRF(graph="trigram", word_key="word").fit(X[:30], y[:30],
                                                         X_unlabeled=iter(pool))


# -- the estimator's conventions ----------------------------------------------------------

def test_both_unlabeled_conventions_give_the_same_model(synthetic):
    X, _, y_partial, graph = synthetic
    inside = fixed(GraphPRCRF(graph=graph, em_iterations=2)).fit(X, y_partial)
    apart = fixed(GraphPRCRF(graph=graph, em_iterations=2)).fit(X[:30], y_partial[:30],
                                                         X_unlabeled=X[30:])
    np.testing.assert_array_equal(inside.state_weights_, apart.state_weights_)
    assert inside.transduction_ == apart.transduction_


def test_transduction_follows_the_input_order(synthetic):
    X, _, y_partial, graph = synthetic
    order = np.random.default_rng(5).permutation(len(X))
    shuffled_graph = SimilarityGraph(
        graph.weights, np.concatenate(
            [graph.token_vertices[sum(len(X[j]) for j in range(i)):][:len(X[i])]
             for i in order]))
    model = fixed(GraphPRCRF(graph=graph, em_iterations=2)).fit(X, y_partial)
    shuffled = fixed(GraphPRCRF(graph=shuffled_graph, em_iterations=2)).fit(
        [X[i] for i in order], [y_partial[i] for i in order])
    assert [len(labels) for labels in model.transduction_] == [len(x) for x in X]
    assert [model.transduction_[i] for i in order] == shuffled.transduction_


def test_posterior_decoding_is_the_argmax_of_the_marginals(synthetic):
    X, _, y_partial, graph = synthetic
    model = fixed(GraphPRCRF(graph=graph, em_iterations=1, decoding="posterior")).fit(X, y_partial)
    marginals = model.predict_marginals(X[:20])
    expected = [[max(token, key=token.get) for token in sequence] for sequence in marginals]
    assert model.predict(X[:20]) == expected


def test_dev_set_keeps_the_best_iteration(synthetic):
    X, y, y_partial, graph = synthetic
    model = GraphPRCRF(graph=graph, lam=2.0, c1=0.0, c2=1.0, em_iterations=4, em_tol=0.0,
                       n_iter_no_change=None, scoring="flat_accuracy").fit(
        X, y_partial, X_dev=X[30:80], y_dev=y[30:80])
    scores = [entry["validation_score"] for entry in em_entries(model)]
    assert scores == model.validation_scores_ and len(scores) == 5
    assert model.best_iteration_ == int(np.argmax(scores))
    assert model.score(X[30:80], y[30:80]) == pytest.approx(max(scores))


def test_lam_auto_chooses_among_1_and_3_on_a_given_graph_and_takes_1_on_the_trigram_graph(
        synthetic):
    X, _, y_partial, graph = synthetic
    settings = dict(c1=0.0, c2=1.0, cv=2, em_iterations=2, mstep_iterations=10,
                    word_key="word", random_state=0)
    for graph_, candidates in ((graph, [1.0, 3.0]), ("trigram", [1.0])):
        auto = GraphPRCRF(graph=graph_, **settings).fit(X, y_partial)
        given = GraphPRCRF(graph=graph_, lam=candidates, **settings).fit(X, y_partial)
        assert sorted({params["lam"] for params in auto.cv_results_["params"]
                       if "lam" in params}) == candidates
        assert auto.cv_results_["params"] == given.cv_results_["params"]
        assert auto.best_params_ == given.best_params_
        np.testing.assert_array_equal(auto.state_weights_, given.state_weights_)


def test_clone_pickle_and_grid_search_with_none_labels(synthetic):
    X, y, y_partial, graph = synthetic
    model = fixed(GraphPRCRF(graph="knn", n_neighbors=5, em_iterations=2))
    fitted = clone(model).fit(X[:120], y_partial[:120])
    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.predict(X[200:]) == fitted.predict(X[200:])
    search = GridSearchCV(model, {"lam": [0.1, 1.0], "unlabeled_weight": [0.5, 1.0]}, cv=2)
    search.fit(X[:120], y_partial[:60] + y[60:120])
    assert set(search.best_params_) == {"lam", "unlabeled_weight"}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_bad_inputs_raise_clear_errors(synthetic):
    X, _, y_partial, graph = synthetic
    with pytest.raises(ValueError, match="maps .* tokens to vertices"):
        fixed(GraphPRCRF(graph=graph)).fit(X[:100], y_partial[:100])
    with pytest.raises(ValueError, match="lam"):
        fixed(GraphPRCRF(graph=graph, lam=-1.0)).fit(X, y_partial)
    with pytest.raises(ValueError, match="graph"):
        fixed(GraphPRCRF(graph="complete")).fit(X, y_partial)
    with pytest.raises(ValueError, match="word"):
        # these dicts hold 'word', not 'word.lower'
        fixed(GraphPRCRF(graph="trigram")).fit(X, y_partial)
    with pytest.raises(ValueError, match="X has 240 sequences"):
        fixed(GraphPRCRF(graph=graph)).fit(X, y_partial[:-1])


# -- real data ----------------------------------------------------------------------------

def token_error(predicted, gold):
    predicted = np.concatenate([np.asarray(p, dtype=object) for p in predicted])
    return float(np.mean(predicted != np.concatenate([np.asarray(g, dtype=object)
                                                       for g in gold])))


@pytest.mark.realdata
def test_part_of_speech_with_a_trigram_graph(shared_data):
    """UD English-EWT: 60 labelled and 300 unlabelled sentences; PR gained 2.5 points over
    the CRF with 3 EM iterations (the floors leave room for noise)."""
    sentences, tags = load_ud_english_ewt(shared_data / "ud_english_ewt")["dev"]
    X = WindowFeatures(suffixes=(1, 2, 3)).fit_transform(sentences[:360])
    y_partial = tags[:60] + [None] * 300
    crf = CRF(c2=0.1).fit(X, y_partial)
    model = fixed(GraphPRCRF(graph=trigram_graph(X), lam=1.0, c2=0.1, em_iterations=3,
                       em_tol=0.0)).fit(X, y_partial)
    objective = [entry["objective"] for entry in em_entries(model)]
    assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[:-1]))
    crf_error = token_error(crf.predict(X[60:]), tags[60:360])
    assert crf_error > 0.2
    assert token_error(model.transduction_[60:], tags[60:360]) < crf_error - 0.015
    assert token_error(model.predict(X[60:]), tags[60:360]) < crf_error - 0.01


@pytest.mark.realdata
def test_handwriting_with_a_letter_graph(shared_data):
    """OCR letters: one labelled word of each of the first 20 word types, 300 unlabelled
    words of those types; a graph over the letters' pixels."""
    images, labels, _ = read_ocr_letters(shared_data / "ocr" / "letters-folds0-4.data.gz")
    words = ["".join(letters) for letters in labels]
    types = sorted(set(words))[:20]
    members = [i for i, word in enumerate(words) if word in types]
    labelled = [members[[words[i] for i in members].index(word)] for word in types]
    unlabeled = [i for i in members if i not in labelled][:300]
    pool = [images[i].astype(float) for i in labelled + unlabeled]
    X = WindowRows().fit_transform(pool)
    y_partial = [labels[i] for i in labelled] + [None] * len(unlabeled)
    gold = [labels[i] for i in unlabeled]
    graph = knn_graph(pool, n_neighbors=20, min_similarity=0.3, self_weight=0.8)
    crf = CRF().fit(X, y_partial)
    model = fixed(GraphPRCRF(graph=graph, lam=1.0, em_iterations=3, em_tol=0.0)).fit(X, y_partial)
    objective = [entry["objective"] for entry in em_entries(model)]
    assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[:-1]))
    crf_error = token_error(crf.predict(X[20:]), gold)
    assert token_error(model.transduction_[20:], gold) < 0.8 * crf_error


@pytest.mark.parametrize("weights, vertices, error, message", [
    ([[0.0, np.nan], [np.nan, 0.0]], [0, 1], ValueError, "NaN"),
    ([[0.0, -1.0], [-1.0, 0.0]], [0, 1], ValueError, "non-negative"),
    ([[0.0, 1.0], [0.5, 0.0]], [0, 1], ValueError, "symmetric"),
    ([[1.0, 1.0], [1.0, 0.0]], [0, 1], ValueError, "zero diagonal"),
    ([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], [0, 1], ValueError, "square"),
    ([[0.0, 1.0], [1.0, 0.0]], [0, 2], ValueError, "-1..1"),
    ([[0.0, 1.0], [1.0, 0.0]], [0.0, 1.0], TypeError, "integers"),
    ("weights", [0, 1], TypeError, "weights must be"),
])
def test_similarity_graph_rejects_bad_weights_and_maps(weights, vertices, error, message):
    with pytest.raises(error, match=message):
        SimilarityGraph(weights, vertices)


def test_similarity_graph_does_not_change_the_callers_matrix():
    weights = sp.csr_matrix(np.array([[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    before = weights.toarray().copy()
    graph = SimilarityGraph(weights, [0, 1, 2])
    graph.weights.data[:] = 7.0
    np.testing.assert_array_equal(weights.toarray(), before)

"""The supervised `CRF`: gradients, optimum, sklearn-crfsuite compatibility, API, bad input."""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from sklearn_ssl_crf import CRF, CRFCV, SequenceVectorizer
from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood
from sklearn_ssl_crf.optim import minimize_lbfgs, pseudo_gradient
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.potentials._weight_layout import WeightLayout
from sklearn_ssl_crf.utils._validation import encode_labels


def random_tagging_data(n_sequences=40, seed=0, labels=("A", "B", "C")):
    """Feature-dict sequences whose words depend on the label, plus a real-valued feature."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        tags = rng.choice(list(labels), size=int(rng.integers(1, 8))).tolist()
        X.append([
            {"w": f"{tag}{rng.integers(0, 3)}", "x": float(abs(rng.normal())),
             "n": f"n{rng.integers(5)}"}
            for tag in tags
        ])
        y.append(tags)
    return X, y


def toy_data():
    """sklearn-crfsuite's README-style example: float features, an empty token, bytes."""
    X = [
        [{"foo": 1, "bar": 0}, {"foo": 1.5, "baz": 2}, {}],
        [{"foo": 0.5, "word": b"caf\xc3\xa9"}, {"word": "dog"}],
        [{"bar": 1, "word": "cat"}, {}],
    ]
    y = [["false", "true", "false"], ["true", "false"], ["true", "false"]]
    return X, y


# -- the objective -----------------------------------------------------------------------


def packed_problem(all_possible_states=True, all_possible_transitions=True):
    X, y = random_tagging_data(15, seed=1)
    sequences = SequenceVectorizer().fit_transform(X)
    classes, codes = encode_labels(y)
    # Small chunks, so that sums over several chunks are part of what is checked.
    data = ChunkedSequences(sequences, codes, len(classes), chunk_tokens=20)
    assert len(data.chunks) > 1
    crf = CRF(all_possible_states=all_possible_states,
              all_possible_transitions=all_possible_transitions)
    crf.classes_, crf.num_attributes_ = classes, sequences.n_features
    return data, crf._weight_layout(data)


def finite_difference_check(fun, x, rng, n_directions=6, step=1e-5):
    _, grad = fun(x)
    for _ in range(n_directions):
        direction = rng.normal(size=x.size)
        numeric = (fun(x + step * direction)[0] - fun(x - step * direction)[0]) / (2 * step)
        assert numeric == pytest.approx(grad @ direction, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("masks", [(True, True), (False, False)])
def test_penalised_gradient_matches_finite_differences(masks):
    packed, layout = packed_problem(*masks)
    rng = np.random.default_rng(0)
    objective = penalised_negative_log_likelihood(packed, layout, c2=0.7)
    finite_difference_check(objective, rng.normal(size=layout.size), rng)


def test_l1_penalised_gradient_matches_finite_differences():
    """Away from zero, c1 * ||w||_1 is smooth and the pseudo-gradient is its gradient."""
    packed, layout = packed_problem()
    rng = np.random.default_rng(1)
    smooth = penalised_negative_log_likelihood(packed, layout, c2=0.3)

    def penalised(theta):
        value, gradient = smooth(theta)
        return value + 0.4 * np.abs(theta).sum(), pseudo_gradient(theta, gradient, 0.4)

    theta = rng.normal(size=layout.size)
    theta[np.abs(theta) < 0.05] = 0.5  # keep every coordinate clear of the kink
    finite_difference_check(penalised, theta, rng, step=1e-6)


def test_pseudo_gradient_at_zero():
    gradient = np.array([-3.0, 3.0, 0.5, -0.5, 2.0])
    x = np.array([0.0, 0.0, 0.0, 0.0, -1.0])
    # Downhill one-sided derivatives where |g| > c1, zero inside the subdifferential.
    np.testing.assert_allclose(pseudo_gradient(x, gradient, 1.0), [-2.0, 2.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("c1", [0.0, 0.5])
def test_lbfgs_reaches_the_optimum_of_a_known_problem(c1):
    """A separable quadratic plus L1 has the soft-threshold solution in closed form."""
    rng = np.random.default_rng(0)
    curvature, target = rng.uniform(0.5, 3.0, size=50), rng.normal(size=50)
    result = minimize_lbfgs(
        lambda x: (0.5 * curvature @ (x - target) ** 2, curvature * (x - target)),
        np.zeros(50), c1=c1, epsilon=1e-10, delta=0.0,
    )
    expected = np.sign(target) * np.maximum(np.abs(target) - c1 / curvature, 0.0)
    np.testing.assert_allclose(result.x, expected, atol=1e-7)
    assert result.termination_condition.startswith("converged")


def test_log_likelihood_equals_enumeration():
    """Objective value from the definition: sum over sequences of score(y) - log Z."""
    data, layout = packed_problem()
    rng = np.random.default_rng(2)
    theta = rng.normal(size=layout.size)
    value = penalised_negative_log_likelihood(data, layout, c2=0.0)(theta)[0]
    state, transition = layout.unpack(theta)
    expected = 0.0
    for chunk in data.chunks:
        expected += _enumerated_log_likelihood(chunk, state, transition)
    assert -value == pytest.approx(expected, rel=1e-10)


def _enumerated_log_likelihood(chunk, state, transition):
    import itertools

    from scipy.special import logsumexp

    unary = chunk.unpack(chunk.unary(state))
    labels = chunk.unpack(chunk.labels)
    offsets = np.concatenate([[0], np.cumsum(chunk.lengths)])
    expected = 0.0
    for start, stop in zip(offsets[:-1], offsets[1:]):
        u, gold = unary[start:stop], labels[start:stop]

        def score(seq):
            return u[np.arange(len(seq)), seq].sum() + transition[seq[:-1], seq[1:]].sum()

        all_scores = [score(np.array(s)) for s in itertools.product(range(3), repeat=stop - start)]
        expected += score(gold) - logsumexp(all_scores)
    return expected


# -- training ----------------------------------------------------------------------------


def test_optimum_matches_sklearn_crfsuite():
    """With CRFsuite's feature set and penalty the two optimisers find the same weights."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    X, y = random_tagging_data(60)
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0, c2=1.0, max_iterations=1000,
                               epsilon=1e-9, delta=1e-12).fit(X, y)
    ours = CRF(c2=1.0, all_possible_states=False, all_possible_transitions=False,
               epsilon=1e-9, delta=1e-12).fit(X, y)
    assert set(ours.state_features_) == set(ref.state_features_)
    for key, weight in ref.state_features_.items():
        assert ours.state_features_[key] == pytest.approx(weight, abs=1e-5)
    for key, weight in ref.transition_features_.items():
        assert ours.transition_features_[key] == pytest.approx(weight, abs=1e-5)
    # sklearn-crfsuite 0.5.0's own predict fails on ragged output; use predict_single.
    assert ours.predict(X) == [list(ref.predict_single(x)) for x in X]
    # Code written for ``crf.tagger_.info()`` reads the same model.
    assert CRF().tagger_ is None
    theirs, info = ref.tagger_.info(), ours.tagger_.info()
    assert set(info.labels) == set(theirs.labels) == set(ours.tagger_.labels())
    assert set(info.attributes) == set(theirs.attributes)
    assert info.header["num_labels"] == int(theirs.header["num_labels"])
    assert info.header["num_attrs"] == int(theirs.header["num_attrs"])
    assert info.header["num_features"] == len(info.state_features) + len(info.transitions)
    assert info.state_features == ours.state_features_
    assert set(info.transitions) == set(theirs.transitions)
    for key, weight in theirs.transitions.items():
        assert info.transitions[key] == pytest.approx(weight, abs=1e-5)
    assert ours.tagger_.tag(X[0]) == list(ref.tagger_.tag(X[0]))


def test_toy_example_fits_training_data_perfectly():
    X, y = toy_data()
    crf = CRF(c2=0.01).fit(X, y)
    assert crf.predict(X) == y
    assert crf.score(X, y) == 1.0
    assert crf.classes_ == ["false", "true"]
    assert "word:café" in crf.attributes_
    assert crf.predict_single(X[0]) == y[0]


def test_l1_solution_satisfies_optimality_conditions():
    """At the L1 optimum: |dL/dw| <= c1 where w = 0, and dL/dw = -c1 * sign(w) elsewhere."""
    X, y = random_tagging_data(60)
    crf = CRF(c1=1.0, c2=0.1, epsilon=1e-7, delta=0.0).fit(X, y)
    assert crf.termination_condition_.startswith("converged")
    sequences = crf.vectorizer_.transform(X)
    _, codes = encode_labels(y, crf.classes_)
    data = ChunkedSequences(sequences, codes, len(crf.classes_))
    layout = WeightLayout(crf.num_attributes_, len(crf.classes_))
    theta = layout.pack(crf.state_weights_, crf.transition_weights_)
    _, gradient = penalised_negative_log_likelihood(data, layout, 0.1)(theta)
    zero = theta == 0
    assert zero.mean() > 0.3  # L1 made the model sparse
    assert np.abs(gradient[zero]).max() <= 1.0 + 1e-3
    np.testing.assert_allclose(gradient[~zero], -np.sign(theta[~zero]), atol=1e-3)
    assert len(crf.state_features_) == np.count_nonzero(crf.state_weights_)


def test_l1_optimum_matches_sklearn_crfsuite():
    """CRFsuite also trains L1 with OWL-QN: the same sparse optimum."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    X, y = random_tagging_data(60)
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.5, c2=0.1, max_iterations=2000,
                               epsilon=1e-10, delta=1e-14).fit(X, y)
    ours = CRF(c1=0.5, c2=0.1, all_possible_states=False, all_possible_transitions=False,
               epsilon=1e-10, delta=0.0).fit(X, y)
    assert set(ours.state_features_) == set(ref.state_features_)
    for key, weight in ref.state_features_.items():
        assert ours.state_features_[key] == pytest.approx(weight, abs=1e-4)


@pytest.mark.realdata
def test_conll2000_tutorial_features_give_sklearn_crfsuites_model(shared_data,
                                                                   tutorial_features):
    """The tutorial's features hold False values: python-crfsuite reads them as the
    attribute with value 0, and CRFsuite pairs it with the token's label like any other.
    With CRFsuite's feature set (the pairs seen), the same state features, weights and tags
    on 200 sentences."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    from sklearn_ssl_crf.datasets import load_conll2000

    splits = load_conll2000(shared_data / "conll2000")
    (train, y_train), (test, _) = splits["train"], splits["test"]
    X = [tutorial_features(sentence) for sentence in train[:200]]
    X_test = [tutorial_features(sentence) for sentence in test[:300]]
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0, c2=0.1, max_iterations=3000,
                               epsilon=1e-9, delta=1e-12).fit(X, y_train[:200])
    ours = CRF(c2=0.1, all_possible_states=False, all_possible_transitions=False,
               epsilon=1e-9, delta=1e-12, max_iterations=3000).fit(X, y_train[:200])
    # Pairs made only by False values: weights that the tokens where it is True train.
    paired_by_false = {(a, label) for sentence, tags in zip(X, y_train[:200])
                       for token, label in zip(sentence, tags)
                       for a, value in token.items() if value is False}
    expected, state_features = ref.state_features_, ours.state_features_
    assert len(paired_by_false & set(expected)) > 100
    assert set(state_features) == set(expected)
    for key, weight in expected.items():
        assert state_features[key] == pytest.approx(weight, abs=1e-5)
    assert ours.predict(X_test) == [list(ref.predict_single(x)) for x in X_test]


def test_marginals_are_distributions_consistent_with_predict():
    X, y = random_tagging_data(30)
    crf = CRF(c2=0.1).fit(X, y)
    marginals = crf.predict_marginals(X)
    assert [len(m) for m in marginals] == [len(s) for s in X]
    for seq in marginals:
        for position in seq:
            assert set(position) == set(crf.classes_)
            assert sum(position.values()) == pytest.approx(1.0, abs=1e-12)
    # With a confident model, the max-marginal label is the Viterbi label almost everywhere.
    argmax = [[max(p, key=p.get) for p in seq] for seq in marginals]
    flat_agree = np.mean([a == b for s, t in zip(argmax, crf.predict(X)) for a, b in zip(s, t)])
    assert flat_agree > 0.95


def test_marginals_as_arrays_are_the_dicts():
    X, y = random_tagging_data(20)
    crf = CRF(c2=0.1).fit(X, y)
    X_test = X[:5] + [[]] + X[5:8]  # an empty sequence among them
    dicts = crf.predict_marginals(X_test)
    arrays = crf.predict_marginals(X_test, as_arrays=True)
    assert [a.shape for a in arrays] == [(len(x), len(crf.classes_)) for x in X_test]
    for sequence, array in zip(dicts, arrays):
        expected = np.array([[p[label] for label in crf.classes_] for p in sequence])
        np.testing.assert_array_equal(array, expected.reshape(array.shape))
    assert crf.predict_marginals([[]], as_arrays=True)[0].shape == (0, len(crf.classes_))


def test_unlabeled_sequences_are_skipped():
    X, y = random_tagging_data(30)
    with_unlabeled = CRF(c2=0.1).fit(X + X[:5], y + [None] * 5)
    without = CRF(c2=0.1).fit(X, y)
    np.testing.assert_allclose(with_unlabeled.transition_weights_, without.transition_weights_)
    assert with_unlabeled.score(X + X[:5], y + [None] * 5) == without.score(X, y)


def test_single_label_class_is_allowed():
    X = [[{"a": "x"}, {"a": "y"}], [{"a": "z"}]]
    crf = CRF().fit(X, [["O", "O"], ["O"]])
    assert crf.classes_ == ["O"] and crf.predict(X) == [["O", "O"], ["O"]]
    assert crf.predict_marginals(X)[1] == [{"O": 1.0}]


def test_dev_set_is_scored_every_iteration(capsys):
    X, y = random_tagging_data(40)
    with pytest.warns(ConvergenceWarning, match="CRF stopped at its cap of 5 iterations "
                      "before converging; raise max_iterations"):
        crf = CRF(c2=0.1, max_iterations=5, verbose=True).fit(X[:30], y[:30], X[30:],
                                                              y[30:])
    assert len(crf.training_log_) == crf.n_iter_ == 5
    assert crf.termination_condition_ == "max_iter"
    assert crf.training_log_[-1]["stop"] == "stopped at its cap of 5 iterations"
    final = crf.training_log_[-1]["dev_accuracy"]
    assert final == pytest.approx(crf.score(X[30:], y[30:]))
    assert capsys.readouterr().out.count("dev_accuracy=") == 5
    # Without a cap the time left is unknown, and not printed (it was "at most inf s").
    CRF(c2=0.1, verbose=True).fit(X[:30], y[:30])
    progress = capsys.readouterr().out
    assert "iter    1" in progress and "left" not in progress


def test_matrix_input_gives_the_same_model_as_dicts():
    X, y = random_tagging_data(30)
    vectorizer = SequenceVectorizer().fit(X)
    matrices = list(vectorizer.transform(X))
    from_dicts = CRF(c2=0.1).fit(X, y)
    from_matrices = CRF(c2=0.1).fit(matrices, y)
    from_dense = CRF(c2=0.1).fit([m.toarray() for m in matrices], y)
    np.testing.assert_allclose(from_matrices.state_weights_, from_dicts.state_weights_)
    np.testing.assert_allclose(from_dense.state_weights_, from_dicts.state_weights_)
    assert from_matrices.predict(vectorizer.transform(X)) == from_dicts.predict(X)
    assert from_matrices.attributes_ == list(range(vectorizer.transform(X).n_features))


# -- scikit-learn API --------------------------------------------------------------------


def test_not_fitted():
    crf = CRF()
    for method in (crf.predict, crf.predict_marginals):
        with pytest.raises(NotFittedError):
            method([[{"a": 1}]])
    # None before fit, as in sklearn-crfsuite (tests/test_conformance.py checks them all).
    assert crf.state_features_ is None and crf.classes_ is None


def test_pickle_round_trip_gives_identical_marginals():
    X, y = random_tagging_data(30)
    crf = CRF(c2=0.1).fit(X, y)
    restored = pickle.loads(pickle.dumps(crf))
    assert restored.predict_marginals(X) == crf.predict_marginals(X)
    assert restored.get_params() == crf.get_params()


def test_clone_and_params():
    crf = CRF(c1=0.2, c2=0.5, all_possible_states=False)
    copy_ = clone(crf)
    assert copy_.get_params() == crf.get_params()
    assert copy_.set_params(c2=3.0).c2 == 3.0


def test_pipeline_grid_search_and_cross_validation():
    X, y = random_tagging_data(60)
    pipeline = Pipeline([("vec", SequenceVectorizer()), ("crf", CRF(max_iterations=30))])
    pipeline.fit(X, y)
    assert pipeline.score(X, y) > 0.8
    search = GridSearchCV(CRF(max_iterations=30), {"c2": [0.01, 10.0]}, cv=3, n_jobs=2)
    search.fit(X, y)
    assert search.best_params_ == {"c2": 0.01}  # heavy L2 cannot fit these labels
    scores = cross_val_score(pipeline, X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.6


@pytest.mark.parametrize("bad", [{"c2": -1.0}, {"algorithm": "l2sgd"}, {"max_iterations": -2}])
def test_invalid_parameters(bad):
    X, y = toy_data()
    with pytest.raises(ValueError, match=next(iter(bad))):
        CRF(**bad).fit(X, y)


@pytest.mark.parametrize("linesearch", ["MoreThuente", "StrongBacktracking"])
def test_crfsuite_line_searches_other_than_backtracking_are_refused_with_why(linesearch):
    X, y = toy_data()
    for estimator in (CRF(linesearch=linesearch), CRFCV(linesearch=linesearch)):
        with pytest.raises(ValueError, match=rf"linesearch='{linesearch}' is not available: "
                           r"the line search here is backtracking under the Armijo "
                           r"condition, CRFsuite's 'Backtracking'.*the optimum is the same"):
            estimator.fit(X, y)


def test_backtracking_and_max_linesearch_as_in_sklearn_crfsuite():
    X, y = random_tagging_data(60)
    default = CRF(c2=0.1).fit(X, y)
    named = CRF(c2=0.1, linesearch="Backtracking").fit(X, y)
    np.testing.assert_array_equal(named.state_weights_, default.state_weights_)
    assert default.termination_condition_ == "converged"
    # Each line search may try one step only: the first iteration that needs a shorter
    # step than its first trial ends the fit.
    evaluations = np.diff([0] + [entry["n_evaluations"] for entry in default.training_log_])
    needs_two = int(np.flatnonzero(evaluations[1:] > 1)[0]) + 1
    short = CRF(c2=0.1, max_linesearch=1).fit(X, y)
    assert short.termination_condition_ == "line_search_failed"
    assert short.n_iter_ == needs_two
    assert clone(CRFCV(max_linesearch=3)).get_params()["max_linesearch"] == 3


@pytest.mark.parametrize("algorithm, advice", [
    ("l2sgd", r"NaturalGradientCRF\(update='sgd'\)"), ("ap", "averaged perceptron"),
    ("pa", "passive-aggressive"), ("arow", "AROW")])
def test_crfsuite_algorithms_are_refused_with_what_to_use(algorithm, advice):
    # sklearn-crfsuite's users pass CRFsuite's algorithm names: the refusal says what stands
    # for each here, for CRF and every estimator built on it.
    X, y = toy_data()
    for estimator in (CRF(algorithm=algorithm), CRFCV(algorithm=algorithm)):
        with pytest.raises(ValueError, match=rf"algorithm='{algorithm}' is not available: "
                           rf".*{advice}.*{type(estimator).__name__} trains by L-BFGS only"):
            estimator.fit(X, y)


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, y, error, message",
    [
        ([[{"a": 1}], [{"a": 2}]], [["A"]], ValueError, "2 sequences but y has 1"),
        ([[{"a": 1}, {"a": 1}]], [["A"]], ValueError, "sequence 0 has 2 tokens but 1 labels"),
        ([], [], ValueError, "X is empty"),
        ([[{"a": 1}], []], [["A"], []], ValueError, "sequence 1 is empty"),
        ([[{"a": float("nan")}]], [["A"]], ValueError, "(?i)nan|finite"),
        ([[{"a": 1}]], [[["A"]]], TypeError, "hashable"),
        ([[{"a": 1}]], ["A"], TypeError, "list of labels"),
        ("word", [["A"]], TypeError, "list of sequences"),
        ([[{"a": 1}]], [None], ValueError, "no labelled sequence"),
        ([sp.csr_matrix([[np.inf]])], [["A"]], ValueError, "NaN or infinite"),
        ([np.ones((1, 2)), np.ones((1, 3))], [["A"], ["B"]], ValueError, "numbers of columns"),
    ],
)
def test_bad_training_input(X, y, error, message):
    with pytest.raises(error, match=message):
        CRF().fit(X, y)


def test_bad_prediction_input():
    X, y = toy_data()
    crf = CRF().fit(X, y)
    with pytest.raises(ValueError, match="fitted with"):
        crf.predict([sp.csr_matrix(np.ones((2, 3)))])
    with pytest.raises(ValueError, match="(?i)nan|finite"):
        crf.predict([[{"foo": float("inf")}]])
    with pytest.raises(ValueError, match="only one|both"):
        CRF().fit(X, y, X_dev=X)
    with pytest.raises(ValueError, match="min_freq"):
        CRF(min_freq=1).fit([sp.csr_matrix(np.ones((1, 2)))], [["A"]])
    on_matrices = CRF().fit([sp.csr_matrix(np.ones((1, 2)))], [["A"]])
    with pytest.raises(TypeError, match="feature matrices"):
        on_matrices.predict([[{"a": 1}]])


def test_empty_sequences_at_prediction():
    X, y = toy_data()
    crf = CRF().fit(X, y)
    assert crf.predict([[], X[0]]) == [[], y[0]]
    assert crf.predict([]) == []
    assert crf.predict_marginals([[]]) == [[]]


def test_input_is_not_modified():
    X, y = toy_data()
    X_copy, y_copy = copy.deepcopy(X), copy.deepcopy(y)
    CRF().fit(X, y, X, y).predict(X)
    assert X == X_copy and y == y_copy


@pytest.mark.realdata
def test_conll2000_subset_accuracy_floor(shared_data):
    """500 CoNLL-2000 training sentences with WindowFeatures: span F1 measured 0.903
    (token accuracy 0.939) on the first 1,000 test sentences; the floors sit just below."""
    from sklearn_ssl_crf.datasets import load_conll2000
    from sklearn_ssl_crf.features import WindowFeatures
    from sklearn_ssl_crf.metrics import flat_accuracy_score, span_f1_score

    splits = load_conll2000(shared_data / "conll2000")
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    features = WindowFeatures()
    crf = CRF(max_iterations=100).fit(features.transform(X_train[:500]), y_train[:500])
    predicted = crf.predict(features.transform(X_test[:1000]))
    assert span_f1_score(y_test[:1000], predicted) > 0.89
    assert flat_accuracy_score(y_test[:1000], predicted) > 0.93


def test_lbfgs_history_after_rejected_pairs_matches_explicit_two_loop():
    """Pairs without positive curvature are skipped; the ring buffer then still holds exactly
    the newest accepted pairs."""
    from sklearn_ssl_crf.optim import CurvatureHistory

    rng = np.random.default_rng(0)
    history, accepted = CurvatureHistory(3, 5), []
    for k in range(6):
        s, y = rng.normal(size=5), rng.normal(size=5)
        if k % 3 == 2:
            y = -s  # negative curvature: rejected
        else:
            y = s * rng.uniform(0.5, 2.0, size=5)
            accepted.append((s, y))
        history.push(s, np.zeros(5), y, np.zeros(5))
    # The rejection at k=5 came with a full buffer: its slot held the oldest pair, now gone.
    assert history.size == 2
    kept = accepted[-2:]
    gradient = rng.normal(size=5)
    q, alphas = gradient.copy(), []
    for s, y in reversed(kept):
        alpha = (s @ q) / (s @ y)
        q -= alpha * y
        alphas.append(alpha)
    s, y = kept[-1]
    q *= (s @ y) / (y @ y)
    for (s, y), alpha in zip(kept, reversed(alphas)):
        q += (alpha - (y @ q) / (s @ y)) * s
    np.testing.assert_allclose(history.apply_inverse_hessian(gradient), q, rtol=1e-12)


def test_grid_search_with_span_scorer_and_unlabeled_sequences():
    """Scorers drop unlabelled sequences; CRF.fit skips them: CV works with y[i] = None."""
    from sklearn_ssl_crf.datasets import make_sequences
    from sklearn_ssl_crf.metrics import span_f1_scorer

    X, y = make_sequences(120, features="dict", random_state=0)
    y = [labels if i % 4 else None for i, labels in enumerate(y)]
    search = GridSearchCV(CRF(max_iterations=50), {"c2": [0.1, 1000.0]}, cv=3,
                          scoring=span_f1_scorer).fit(X, y)
    assert search.best_params_ == {"c2": 0.1}
    assert 0.3 < search.best_score_ <= 1.0


def test_n_jobs_and_chunking_give_the_same_model():
    X, y = random_tagging_data(80)
    reference = CRF(c2=0.1).fit(X, y)
    from sklearn_ssl_crf.parallel import _chunked

    original = _chunked.CHUNK_TOKENS
    try:
        _chunked.CHUNK_TOKENS = 30  # many chunks
        threaded = CRF(c2=0.1, n_jobs=2).fit(X, y)
        sequential = CRF(c2=0.1, n_jobs=1).fit(X, y)
    finally:
        _chunked.CHUNK_TOKENS = original
    np.testing.assert_array_equal(threaded.state_weights_, sequential.state_weights_)
    np.testing.assert_allclose(threaded.state_weights_, reference.state_weights_, atol=1e-6)


def test_all_possible_states_false_keeps_pairs_seen_together():
    """A pair is a parameter iff the attribute occurs (non-zero) on a token of that label,
    even when its values sum to zero."""
    X = [[{"a": 1.0, "b": "x"}, {"a": -1.0}], [{"b": "y"}, {"c": 0.0}]]
    y = [["P", "P"], ["Q", "P"]]
    crf = CRF(c2=0.1, all_possible_states=False).fit(X, y)
    assert set(crf.state_features_) == {("a", "P"), ("b:x", "P"), ("b:y", "Q")}


def test_predictions_stay_finite_with_huge_weights_and_long_sequences():
    """Weights scaled by 1000 (potentials thousands of nats apart) and a 10,000-token
    sequence: marginals stay finite and normalised, Viterbi keeps its answer."""
    X, y = random_tagging_data(30)
    crf = CRF(c2=0.1).fit(X, y)
    viterbi_before = crf.predict(X)
    crf.state_weights_ = crf.state_weights_ * 1000
    crf.transition_weights_ = crf.transition_weights_ * 1000
    long_sequence = [token for sequence in X for token in sequence] * 80
    assert len(long_sequence) > 10_000
    for marginals in crf.predict_marginals(X + [long_sequence]):
        values = np.array([list(position.values()) for position in marginals])
        assert np.isfinite(values).all()
        np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-9)
    assert crf.predict(X) == viterbi_before  # scaling all scores keeps the argmax


def test_marginals_exact_where_the_scaled_recursion_underflows():
    """Potentials 900 nats apart make the scaled forward pass lose mass; the estimator's
    marginals still equal brute-force enumeration (through the log-space recursion)."""
    import itertools

    from scipy.special import logsumexp

    X = [sp.identity(3, format="csr")]  # attribute t fires at position t only
    crf = CRF().fit(X, [["a", "b", "a"]])
    unary = np.array([[0.0, 900.0], [900.0, 0.0], [0.0, 0.0]])
    transition = np.array([[0.0, 900.0], [-900.0, 0.0]])
    crf.state_weights_, crf.transition_weights_ = unary, transition
    paths = np.array(list(itertools.product(range(2), repeat=3)))
    scores = unary[np.arange(3), paths].sum(axis=1) + transition[paths[:, :-1],
                                                                 paths[:, 1:]].sum(axis=1)
    p = np.exp(scores - logsumexp(scores))
    expected = np.array([[p[paths[:, t] == k].sum() for k in range(2)] for t in range(3)])
    got = np.array([[m["a"], m["b"]] for m in crf.predict_marginals(X)[0]])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    best = paths[scores.argmax()]
    assert crf.predict(X)[0] == [crf.classes_[k] for k in best]

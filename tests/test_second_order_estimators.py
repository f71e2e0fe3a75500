"""Second-order models (`order=2`) in every estimator: gradients, special cases, a task only
second order can learn, and the scikit-learn API."""

import copy
import itertools
import pickle

import numpy as np
import pytest
from fixed_settings import fixed
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from test_crf import finite_difference_check, random_tagging_data

from sklearn_ssl_crf import (
    CRF,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
    SequenceVectorizer,
)
from sklearn_ssl_crf.graph import knn_graph
from sklearn_ssl_crf.inference.restricted import PairStructure
from sklearn_ssl_crf.objective import label_count_gradient, unlabelled_terms
from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.potentials import PackedSequences, transition_counts
from sklearn_ssl_crf.utils._validation import encode_labels


def second_order_task(n_sequences=60, seed=0):
    """Sequences ``a ? b`` of three tokens whose last label repeats the first: the middle
    token says nothing, so only a model that sees y_{t-2} gets the last label right."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        first = str(rng.choice(["P", "Q"]))
        X.append([{"w": first.lower(), "n": f"n{rng.integers(4)}"}, {"w": "mid"}, {"w": "end"}])
        y.append([first, "M", first])
    return X, y


def last_label_accuracy(model, X, y):
    return float(np.mean([p[2] == g[2] for p, g in zip(model.predict(X), y)]))


def order_two_problem(all_possible=True):
    X, y = random_tagging_data(15, seed=1)
    sequences = SequenceVectorizer().fit_transform(X)
    classes, codes = encode_labels(y)
    data = ChunkedSequences(sequences, codes, len(classes), chunk_tokens=20, order=2)
    assert len(data.chunks) > 1
    crf = CRF(order=2, all_possible_states=all_possible,
              all_possible_transitions=all_possible)
    crf.classes_, crf.num_attributes_ = classes, sequences.n_features
    return sequences, data, crf._weight_layout(data)


@pytest.mark.parametrize("all_possible", [True, False])
def test_likelihood_gradient_matches_finite_differences(all_possible):
    _, data, layout = order_two_problem(all_possible)
    rng = np.random.default_rng(0)
    # A weaker prior on transitions: a per-parameter strength.
    strengths = layout.l2_strengths(0.7, 0.05)
    assert np.ndim(strengths) == 1
    objective = penalised_negative_log_likelihood(data, layout, strengths)
    finite_difference_check(objective, rng.normal(size=layout.size), rng)


def test_unlabeled_terms_gradients_match_finite_differences():
    sequences, _, layout = order_two_problem()
    packed = PackedSequences(sequences.matrix, sequences.lengths)
    rng = np.random.default_rng(2)
    label_weights = rng.normal(size=layout.blocks(np.zeros(layout.size))[1].shape[0])

    def negative_entropy(theta):
        state, transition = layout.unpack(theta)
        value, d_unary, d_transition, _ = unlabelled_terms(
            packed, packed.unary(state), transition, entropy_gradient="lattice")
        return value, layout.pack(packed.weight_gradient(d_unary), d_transition)

    def expected_label_counts(theta):
        state, transition = layout.unpack(theta)
        lattice_marginals = unlabelled_terms(packed, packed.unary(state), transition)[3]
        d_unary, d_transition = label_count_gradient(packed, packed.unary(state), transition,
                                                     label_weights)
        return (float(lattice_marginals @ label_weights),
                layout.pack(packed.weight_gradient(d_unary), d_transition))

    theta = rng.normal(size=layout.size)
    finite_difference_check(negative_entropy, theta, rng)
    finite_difference_check(expected_label_counts, theta, rng)


def test_transition_counts_of_second_order():
    labels = np.array([0, 1, 1, 2, 1, 0])
    counts = transition_counts(labels, np.array([4, 1, 1]), 3, order=2)
    expected = np.zeros((4, 3, 3))
    expected[3, 0, 1] = 1  # the first two labels of the first sequence
    expected[0, 1, 1] = expected[1, 1, 2] = 1
    np.testing.assert_array_equal(counts, expected)


def test_zero_second_order_weights_give_the_first_order_model():
    X, y = random_tagging_data(30, seed=3)
    first = CRF(c2=0.1).fit(X, y)
    second = copy.deepcopy(first)
    n_labels = len(first.classes_)
    second.trigram_weights_ = np.zeros((n_labels + 1, n_labels, n_labels))
    second.skip_weights_ = np.zeros((n_labels, n_labels))
    assert second.predict(X) == first.predict(X)
    for one, other in zip(second.predict_marginals(X), first.predict_marginals(X)):
        for p, q in zip(one, other):
            assert p == pytest.approx(q, abs=1e-12)
    np.testing.assert_allclose(second.predict_entropy(X), first.predict_entropy(X),
                               atol=1e-12)
    np.testing.assert_allclose(second.most_uncertain_spans(X, 3),
                               first.most_uncertain_spans(X, 3), atol=1e-12)


def test_second_order_learns_what_first_order_cannot():
    X, y = second_order_task()
    assert last_label_accuracy(CRF(c2=0.01).fit(X, y), X, y) <= 0.75
    model = CRF(order=2, c2=0.01).fit(X, y)
    assert last_label_accuracy(model, X, y) == 1.0
    features = model.transition_features_
    # The triple (P, M, P) is rewarded over (P, M, Q).
    assert features[("P", "M", "P")] > features.get(("P", "M", "Q"), 0.0)
    assert any(key[0] is None for key in features if len(key) == 3)
    assert any(len(key) == 3 and key[1] is None for key in features)


@pytest.mark.parametrize("make", [
    lambda: fixed(EntropyRegularizedCRF(order=2, c2=0.01, gamma=0.1, proportion_weight=1.0)),
    lambda: fixed(SelfTrainingCRF(order=2, c2=0.01)),
    lambda: NaturalGradientCRF(order=2, c2=0.01, max_iterations=30, random_state=0),
    lambda: fixed(GraphPRCRF(order=2, c2=0.01, graph="knn", em_iterations=2)),
], ids=["entropy", "self-training", "natural-gradient", "graph-pr"])
def test_every_estimator_learns_the_second_order_task(make):
    X, y = second_order_task()
    X_test, y_test = second_order_task(40, seed=1)
    model = make()
    if isinstance(model, GraphPRCRF):
        rows = SequenceVectorizer().fit_transform(X + X_test)
        model.set_params(graph=knn_graph(
            [rows.matrix[start:stop].toarray() for start, stop in
             zip(rows.offsets[:-1], rows.offsets[1:])], n_neighbors=5))
        model.fit(X + X_test, y + [None] * len(X_test))
    else:
        model.fit(X + X_test, y + [None] * len(X_test))
    assert model.trigram_weights_.shape == (4, 3, 3)
    assert last_label_accuracy(model, X_test, y_test) == 1.0


def test_entropy_weight_zero_is_the_supervised_second_order_model():
    X, y = random_tagging_data(25, seed=4)
    y_partial = y[:15] + [None] * 10
    supervised = CRF(order=2, c2=0.1, c2_transitions=0.01).fit(X[:15], y[:15])
    regularised = fixed(EntropyRegularizedCRF(order=2, c2=0.1, c2_transitions=0.01,
                                        gamma=0.0)).fit(X, y_partial)
    np.testing.assert_array_equal(regularised.trigram_weights_, supervised.trigram_weights_)
    np.testing.assert_array_equal(regularised.state_weights_, supervised.state_weights_)


def test_covariance_gradient_is_first_order_only():
    X, y = random_tagging_data(10)
    with pytest.raises(ValueError, match="first-order only"):
        fixed(SemiSupervisedCRF(order=2)).fit(X, y[:5] + [None] * 5)


def test_api_pickle_grid_search_and_n_jobs():
    X, y = second_order_task(400, seed=2)  # 1,200 tokens: two chunks at order 2
    model = CRF(order=2, c2=0.1, max_iterations=20)
    serial = clone(model).fit(X, y)
    parallel = clone(model).set_params(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(serial.trigram_weights_, parallel.trigram_weights_)
    restored = pickle.loads(pickle.dumps(serial))
    assert restored.predict(X[:5]) == serial.predict(X[:5])
    search = GridSearchCV(CRF(max_iterations=20), {"order": [1, 2],
                                                   "c2_transitions": [None, 0.01]}, cv=2)
    search.fit(X[:60], y[:60])
    assert search.best_params_["order"] == 2


@pytest.mark.parametrize("params, message", [
    ({"order": 3}, "order"), ({"order": 0}, "order"), ({"c2_transitions": -1.0},
                                                       "c2_transitions"),
])
def test_bad_parameters(params, message):
    X, y = random_tagging_data(5)
    with pytest.raises(ValueError, match=message):
        CRF(**params).fit(X, y)


@pytest.mark.parametrize("order", [1, 2])
def test_entropies_of_inputs_without_tokens(order):
    X, y = random_tagging_data(10)
    model = CRF(order=order, max_iterations=5).fit(X, y)
    np.testing.assert_array_equal(model.predict_entropy([[], []]), [0.0, 0.0])
    assert model.most_uncertain_spans([[]], 2) == [None]


def sparse_tagging_data(n_sequences=40, seed=0):
    """Sequences over five labels, each followed by one of two others: few of the label
    triples occur, so `all_possible_transitions=False` restricts the chain."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        tags = [int(rng.integers(5))]
        for _ in range(int(rng.integers(0, 7))):
            tags.append((tags[-1] + int(rng.integers(1, 3))) % 5)
        y.append(["ABCDE"[t] for t in tags])
        X.append([{"w": f"{'ABCDE'[t]}{rng.integers(0, 3)}", "n": f"n{rng.integers(4)}"}
                  for t in tags])
    return X, y


def test_restricted_gradients_match_finite_differences():
    X, y = sparse_tagging_data(20, seed=1)
    sequences = SequenceVectorizer().fit_transform(X)
    classes, codes = encode_labels(y)
    data = ChunkedSequences(sequences, codes, len(classes), chunk_tokens=30, order=2)
    crf = CRF(order=2, all_possible_transitions=False)
    crf.classes_, crf.num_attributes_ = classes, sequences.n_features
    layout = crf._weight_layout(data)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=layout.size)
    assert PairStructure.of(layout.unpack(theta)[1]) is not None   # the restricted kernels
    objective = penalised_negative_log_likelihood(data, layout, layout.l2_strengths(0.7, 0.05))
    finite_difference_check(objective, theta, rng)
    packed = PackedSequences(sequences.matrix, sequences.lengths)

    def negative_entropy(theta):
        state, transition = layout.unpack(theta)
        value, d_unary, d_transition, _ = unlabelled_terms(
            packed, packed.unary(state), transition, entropy_gradient="lattice")
        return value, layout.pack(packed.weight_gradient(d_unary), d_transition)

    finite_difference_check(negative_entropy, theta, rng)


def test_restricted_with_every_triple_seen_is_the_dense_model():
    # Every label sequence of length 4 over two labels: every triple and first pair occurs.
    y = [list(labels) for labels in itertools.product("AB", repeat=4)]
    rng = np.random.default_rng(0)
    X = [[{"w": f"{tag}{rng.integers(2)}"} for tag in tags] for tags in y]
    restricted = CRF(order=2, all_possible_transitions=False, max_iterations=30).fit(X, y)
    dense = CRF(order=2, max_iterations=30).fit(X, y)
    assert restricted.allowed_transitions_.all() and dense.allowed_transitions_ is None
    np.testing.assert_array_equal(restricted.trigram_weights_, dense.trigram_weights_)
    np.testing.assert_array_equal(restricted.state_weights_, dense.state_weights_)


@pytest.mark.parametrize("make", [
    lambda: CRF(order=2, c2=0.01),
    lambda: fixed(EntropyRegularizedCRF(order=2, c2=0.01, gamma=0.1, proportion_weight=1.0)),
    lambda: NaturalGradientCRF(order=2, c2=0.01, max_iterations=30, random_state=0),
], ids=["crf", "entropy", "natural-gradient"])
def test_restricted_chain_predicts_only_pairs_seen(make):
    # Labels A B C in that order: the pairs seen are (A, B) and (B, C), the one triple
    # holding only those is (A, B, C), and either pair may start a sequence.
    rng = np.random.default_rng(0)
    X = [[{"w": f"{tag}{rng.integers(3)}"} for tag in "ABC"] for _ in range(30)]
    y = [list("ABC")] * 30
    # Test tokens that say nothing: the chain alone decides.
    X_test = [[{"w": "unknown"}] * 3] * 5 + [[{"w": "unknown"}] * 2] * 5
    model = make().set_params(all_possible_transitions=False)
    model.fit(X + X_test, y + [None] * len(X_test))
    allowed = model.allowed_transitions_
    assert allowed[:3].sum() == 1 and allowed[3].sum() == 2
    assert model.predict(X_test[:5]) == [list("ABC")] * 5
    assert {"".join(labels) for labels in model.predict(X_test[5:])} <= {"AB", "BC"}
    for marginals in model.predict_marginals(X_test[:5]):
        assert marginals[0]["B"] == marginals[0]["C"] == marginals[1]["A"] == 0.0
        assert marginals[2]["C"] == pytest.approx(1.0, abs=1e-12)
    for marginals in model.predict_marginals(X_test[5:]):
        assert marginals[0]["C"] == marginals[1]["A"] == 0.0
    assert np.isfinite(model.predict_entropy(X_test)).all()


def test_restricted_entropy_weight_zero_is_the_supervised_restricted_model():
    # Unlabelled sequences with words of their own: the supervised fit runs on the
    # labelled sequences' attributes only, over the same restricted chain.
    X, y = sparse_tagging_data(15, seed=4)
    X_unlabeled = [[{"w": f"u{i}{j}"} for j in range(4)] for i in range(20)]
    params = dict(order=2, c2=0.1, c2_transitions=0.01, all_possible_transitions=False)
    supervised = CRF(**params).fit(X, y)
    regularised = fixed(EntropyRegularizedCRF(gamma=0.0, **params)).fit(
        X + X_unlabeled, y + [None] * len(X_unlabeled))
    np.testing.assert_array_equal(regularised.allowed_transitions_,
                                  supervised.allowed_transitions_)
    np.testing.assert_allclose(regularised.trigram_weights_, supervised.trigram_weights_,
                               atol=1e-9)
    np.testing.assert_allclose(regularised.state_weights_[:supervised.num_attributes_],
                               supervised.state_weights_, atol=1e-9)

"""Entropy-regularised estimators: objective, conventions, parallelism, active learning."""

import numpy as np
import pytest
from fixed_settings import fixed
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, SemiSupervisedCRF
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.inference import sequence_entropy, subsequence_entropy
from sklearn_ssl_crf.metrics import span_f1_score, span_f1_scorer


@pytest.fixture(scope="module")
def synthetic():
    X, y = make_sequences(400, features="dict", random_state=0)
    return X[:60], y[:60], X[60:200], X[200:], y[200:]


def test_no_unlabeled_terms_is_exactly_the_supervised_crf(synthetic):
    X, y, X_unlabeled, _, _ = synthetic
    crf = CRF(c2=0.5).fit(X, y)
    ssl = fixed(EntropyRegularizedCRF(gamma=0.0, proportion_weight=0.0, c2=0.5)).fit(
        X, y, X_unlabeled=X_unlabeled)
    # The vocabulary also holds attributes seen only in unlabelled text (after the labelled
    # ones): with no unlabelled term nothing moves their weights from 0.
    shared = crf.num_attributes_
    assert ssl.attributes_[:shared] == crf.attributes_ and ssl.num_attributes_ > shared
    # Same optimisation problem; a longer parameter vector only changes BLAS summation order.
    np.testing.assert_allclose(ssl.state_weights_[:shared], crf.state_weights_, atol=1e-9)
    assert not ssl.state_weights_[shared:].any()
    np.testing.assert_allclose(ssl.transition_weights_, crf.transition_weights_, atol=1e-9)
    assert ssl.predict(X_unlabeled) == crf.predict(X_unlabeled)


@pytest.mark.parametrize("order, method", [(1, "lattice"), (1, "covariance"), (2, "lattice")])
@pytest.mark.parametrize("gamma, weight", [(0.5, 0.0), (0.1, 1.0), (0.0, 1.0)])
def test_full_objective_and_its_gradient(order, method, gamma, weight):
    """The whole objective (likelihood, L2, entropy, label proportions): its value against
    the fitted-model API's entropies and marginals, its gradient against finite
    differences."""
    X, y = make_sequences(30, features="dict", random_state=3)
    X, y, X_unlabeled = X[:6], y[:6], X[6:14]
    # Unconstrained: training's entropy is that of every label sequence, and so is the
    # API's only without the BIO constraints of these labels.
    model = EntropyRegularizedCRF(order=order, entropy_gradient=method, constraints=None)
    problem = model._prepare(X, y, X_unlabeled)
    fold = model._fold(problem, np.arange(problem.n_labelled))
    model._set_priors(fold, {"c1": 0.0, "c2": 0.3})
    target = model._target(fold)
    objective, parts = model._semi_supervised_objective(fold, fold.unlabeled, target, gamma,
                                                        weight)
    theta = np.random.default_rng(0).normal(scale=0.5, size=fold.layout.size)
    value, gradient = objective(theta)

    # The value: the supervised part, plus the unlabelled terms from the model's own
    # predict_entropy and predict_marginals at theta.
    model._set_weight_blocks(fold.layout.blocks(theta))
    entropy = float(np.sum(model.predict_entropy(X_unlabeled)))
    marginals = [[m[label] for label in model.classes_] for sequence in
                 model.predict_marginals(X_unlabeled) for m in sequence]
    predicted = np.mean(marginals, axis=0)
    kl = float(np.sum(target[target > 0] * np.log(target[target > 0] / predicted[target > 0])))
    supervised = model._supervised_objective(fold)(theta)[0]
    expected = supervised + gamma * entropy + weight * len(marginals) * kl
    assert value == pytest.approx(expected, rel=1e-9)
    assert parts["unlabelled_entropy"] == pytest.approx(entropy, rel=1e-9)

    step = 1e-6
    for i in np.random.default_rng(1).choice(theta.size, size=25, replace=False):
        shifted = theta.copy()
        shifted[i] += step
        up = objective(shifted)[0]
        shifted[i] -= 2 * step
        numeric = (up - objective(shifted)[0]) / (2 * step)
        assert numeric == pytest.approx(gradient[i], rel=1e-5, abs=1e-6)


def test_label_proportion_term_moves_predictions_towards_the_target(synthetic):
    X, y, X_unlabeled, _, _ = synthetic
    target = {"O": 0.2, "B-A": 0.2, "I-A": 0.2, "B-B": 0.2, "I-B": 0.2}
    weak = fixed(EntropyRegularizedCRF(gamma=0.0, proportion_weight=0.01, label_proportions=target))
    strong = clone(weak).set_params(proportion_weight=10.0)
    kl = [model.fit(X, y, X_unlabeled=X_unlabeled).training_log_[-1]["proportion_kl"]
          for model in (weak, strong)]
    assert kl[1] < 0.5 * kl[0]


def test_both_unlabeled_conventions_give_the_same_model(synthetic):
    X, y, X_unlabeled, _, _ = synthetic
    params = {"gamma": 0.1, "proportion_weight": 1.0}
    separate = fixed(EntropyRegularizedCRF(**params)).fit(X, y, X_unlabeled=X_unlabeled)
    inline = fixed(EntropyRegularizedCRF(**params)).fit(X + X_unlabeled,
                                                        y + [None] * len(X_unlabeled))
    np.testing.assert_array_equal(separate.state_weights_, inline.state_weights_)


def test_n_jobs_gives_the_same_model(synthetic, monkeypatch):
    from sklearn_ssl_crf.parallel import _chunked

    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 200)  # several chunks
    X, y, X_unlabeled, _, _ = synthetic
    params = {"gamma": 0.1, "proportion_weight": 1.0}
    one = fixed(EntropyRegularizedCRF(n_jobs=1, **params)).fit(X, y, X_unlabeled=X_unlabeled)
    two = fixed(EntropyRegularizedCRF(n_jobs=2, **params)).fit(X, y, X_unlabeled=X_unlabeled)
    np.testing.assert_array_equal(one.state_weights_, two.state_weights_)


def test_covariance_and_lattice_gradients_train_the_same_model(synthetic):
    X, y, X_unlabeled, _, _ = synthetic
    lattice = fixed(EntropyRegularizedCRF(gamma=0.3, max_iterations=30)).fit(
        X, y, X_unlabeled=X_unlabeled[:40])
    covariance = fixed(SemiSupervisedCRF(gamma=0.3, max_iterations=30)).fit(
        X, y, X_unlabeled=X_unlabeled[:40])
    assert covariance.entropy_gradient == "covariance"
    np.testing.assert_allclose(covariance.state_weights_, lattice.state_weights_, atol=1e-6)


def test_dev_set_keeps_the_best_iterate(synthetic):
    X, y, X_unlabeled, X_test, y_test = synthetic
    model = EntropyRegularizedCRF(gamma=2.0, proportion_weight=0.0, c1=0.0, c2=1.0,
                                  n_iter_no_change=None, max_iterations=40).fit(
        X, y, X_unlabeled=X_unlabeled, X_dev=X_test[:100], y_dev=y_test[:100])
    entries = [entry for entry in model.training_log_ if entry["phase"] == "semi-supervised"]
    scores = [entry["validation_score"] for entry in entries]
    assert [entry["num"] for entry in entries] == list(range(len(scores)))
    assert scores == model.validation_scores_
    start, best = scores[0], max(scores)
    kept = span_f1_score(y_test[:100], model.predict(X_test[:100]))
    assert kept == pytest.approx(best) and kept >= start
    assert model.best_iteration_ == scores.index(best)
    assert model.n_iter_ == len(scores) - 1 >= model.best_iteration_


def test_grid_search_over_gamma_with_unlabeled_sequences_in_y(synthetic):
    X, y, X_unlabeled, _, _ = synthetic
    search = GridSearchCV(fixed(EntropyRegularizedCRF(max_iterations=20)),
                          {"gamma": [0.0, 0.1]}, cv=2, scoring=span_f1_scorer)
    search.fit(X + X_unlabeled[:40], y + [None] * 40)
    assert set(search.cv_results_["param_gamma"]) == {0.0, 0.1}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


@pytest.mark.parametrize("proportions, message", [
    ({"NOPE": 1.0}, "not in the training data"),
    ({"O": -1.0, "B-A": 2.0}, "non-negative"),
])
def test_bad_label_proportions(synthetic, proportions, message):
    X, y, X_unlabeled, _, _ = synthetic
    with pytest.raises(ValueError, match=message):
        fixed(EntropyRegularizedCRF(label_proportions=proportions)).fit(
            X, y, X_unlabeled=X_unlabeled)


def test_active_learning_entropies_match_the_kernels(synthetic):
    X, y, _, X_test, _ = synthetic
    # Unconstrained, as the single-chain kernels (constrained: tests/test_constraints.py).
    model = CRF(constraints=None).fit(X, y)
    sequences = model._transform(X_test[:5])
    entropies = model.predict_entropy(X_test[:5])
    spans = model.most_uncertain_spans(X_test[:5], 3)
    for i, matrix in enumerate(sequences):
        unary = matrix @ model.state_weights_
        transition = model.transition_weights_
        assert entropies[i] == pytest.approx(sequence_entropy(unary, transition), abs=1e-10)
        windows = [subsequence_entropy(unary, transition, s, s + 3)
                   for s in range(len(unary) - 2)]
        start, stop, entropy = spans[i]
        assert (start, stop) == (int(np.argmax(windows)), int(np.argmax(windows)) + 3)
        assert entropy == pytest.approx(max(windows), abs=1e-10)
        assert model.predict_subsequence_entropy(X_test[i:i + 1], [[(1, 4)]])[0][0] == (
            pytest.approx(subsequence_entropy(unary, transition, 1, 4), abs=1e-10))
    with pytest.raises(ValueError, match="not within"):
        model.predict_subsequence_entropy(X_test[:1], [[(0, 999)]])


def test_self_training_without_rounds_is_the_supervised_crf(synthetic):
    from sklearn_ssl_crf import SelfTrainingCRF

    X, y, X_unlabeled, _, _ = synthetic
    crf = CRF(c2=0.5).fit(X, y)
    zero = fixed(SelfTrainingCRF(max_rounds=0, c2=0.5)).fit(X, y, X_unlabeled=X_unlabeled)
    shared = crf.num_attributes_
    np.testing.assert_allclose(zero.state_weights_[:shared], crf.state_weights_, atol=1e-9)
    # No round ran: the model is the supervised start, and so is why it stopped.
    assert zero.n_iter_ == 0 and zero.termination_condition_ == "converged"


def test_self_training_stops_when_pseudo_labels_are_a_fixed_point(synthetic):
    from sklearn_ssl_crf import SelfTrainingCRF

    X, y, X_unlabeled, _, _ = synthetic
    model = fixed(SelfTrainingCRF(max_rounds=20, c2=0.5)).fit(X, y, X_unlabeled=X_unlabeled)
    assert model.termination_condition_ == "converged"
    assert model.training_log_[-1]["stop"] == "pseudo-labels unchanged"
    assert model.rounds_[-1]["changed_tokens"] == 0
    assert model.rounds_[0]["changed_tokens"] is None and model.n_iter_ >= 1
    # At the fixed point the model trained on its own Viterbi labels reproduces them.
    retrained = CRF(c2=0.5).fit(X + X_unlabeled, y + model.predict(X_unlabeled))
    assert retrained.predict(X_unlabeled) == model.predict(X_unlabeled)


@pytest.mark.realdata
def test_unlabeled_terms_fall_on_bc2gm(shared_data):
    """Real subset: 100 labelled and 300 unlabelled BC2GM sentences, both unlabelled terms.
    From the supervised start the phase lowers the unlabelled entropy (1,103 to 806 nats
    when written) and the label proportions' KL (0.0078 to 0.0006)."""
    from sklearn_ssl_crf.datasets import load_bc2gm
    from sklearn_ssl_crf.features import WindowFeatures

    X, y = load_bc2gm(shared_data / "bc2gm")["train"]
    features = WindowFeatures()
    model = fixed(EntropyRegularizedCRF(gamma=0.1, proportion_weight=1.0, max_iterations=40)).fit(
        features.transform(X[:100]), y[:100], X_unlabeled=features.transform(X[100:400]))
    phase = [entry for entry in model.training_log_ if entry["phase"] == "semi-supervised"]
    start, end = phase[0], phase[-1]
    assert start["num"] == 0 and end["num"] == 40
    assert end["unlabelled_entropy"] < 0.85 * start["unlabelled_entropy"]
    assert end["proportion_kl"] < 0.5 * start["proportion_kl"]

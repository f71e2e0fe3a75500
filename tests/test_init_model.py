"""``init``: a fitted model (one read from a CRFsuite file included) as the supervised start
of the semi-supervised estimators."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, GraphPRCRF, SelfTrainingCRF, load
from sklearn_ssl_crf.datasets import make_sequences


def corpus():
    X, y = make_sequences(80, features="dict", random_state=5)
    return X[:25], y[:25], X[25:60], X[60:], y[60:]


MAKERS = {
    "EntropyRegularizedCRF": lambda init: EntropyRegularizedCRF(
        init=init, gamma=0.5, proportion_weight=0.0, c1=0.0, c2=0.1, early_stopping=False,
        semi_supervised_iterations=0),
    "SelfTrainingCRF": lambda init: SelfTrainingCRF(init=init, c1=0.0, c2=0.1, max_rounds=0,
                                                    early_stopping=False),
    "GraphPRCRF": lambda init: GraphPRCRF(init=init, graph="knn", n_neighbors=3, lam=1.0,
                                          c1=0.0, c2=0.1, em_iterations=0,
                                          early_stopping=False),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_without_iterations_the_model_is_the_init(name):
    X, y, X_more, X_test, _ = corpus()
    start = CRF(c2=3.0, max_iterations=40).fit(X, y)  # priors unlike the estimator's
    model = MAKERS[name](start).fit(X + X_more, y + [None] * len(X_more))
    # Every attribute of the start is in this fit's vocabulary (which also has X_more's).
    row = {attribute: k for k, attribute in enumerate(model.attributes_)}
    rows = [row[attribute] for attribute in start.attributes_]
    column = [model.classes_.index(label) for label in start.classes_]
    np.testing.assert_array_equal(model.state_weights_[np.ix_(rows, column)],
                                  start.state_weights_)
    others = np.setdiff1d(np.arange(len(model.attributes_)), rows)
    assert others.size and not model.state_weights_[others].any()
    np.testing.assert_array_equal(model.transition_weights_[np.ix_(column, column)],
                                  start.transition_weights_)
    assert model.predict(X_test) == start.predict(X_test)
    assert model.termination_condition_ == "init"


def test_init_starts_the_semi_supervised_phase():
    X, y, X_more, X_test, y_test = corpus()
    start = CRF(c2=0.1, max_iterations=40).fit(X, y)
    model = EntropyRegularizedCRF(init=start, gamma=0.5, proportion_weight=0.0,
                                  early_stopping=False, semi_supervised_iterations=5)
    model.fit(X + X_more, y + [None] * len(X_more))
    # 'auto' priors take the start's.
    assert model.best_params_["c1"] == start.c1 and model.best_params_["c2"] == start.c2
    assert not np.allclose(model.transition_weights_, start.transition_weights_)
    assert [entry.get("phase") for entry in model.training_log_][:1] != ["supervised"]


def test_second_order_init():
    X, y, X_more, X_test, _ = corpus()
    start = CRF(order=2, c2=0.1, max_iterations=30).fit(X, y)
    model = EntropyRegularizedCRF(init=start, order=2, gamma=0.5, c1=0.0, c2=0.1,
                                  early_stopping=False, semi_supervised_iterations=0)
    model.fit(X + X_more, y + [None] * len(X_more))
    column = [model.classes_.index(label) for label in start.classes_]
    first = column + [len(column)]
    np.testing.assert_array_equal(model.trigram_weights_[np.ix_(first, column, column)],
                                  start.trigram_weights_)
    assert model.predict(X_test) == start.predict(X_test)


def test_bad_init():
    X, y, X_more, _, _ = corpus()
    fit = dict(X=X + X_more, y=y + [None] * len(X_more))
    make = MAKERS["EntropyRegularizedCRF"]
    with pytest.raises(NotFittedError):
        make(CRF()).fit(**fit)
    with pytest.raises(TypeError, match="init must be a fitted CRF"):
        make("model.crfsuite").fit(**fit)
    other = CRF(max_iterations=5).fit(X, [["Z"] * len(s) for s in y])
    with pytest.raises(ValueError, match="are not those of y"):
        make(other).fit(**fit)
    second = CRF(order=2, max_iterations=5).fit(X, y)
    with pytest.raises(ValueError, match="order 2"):
        make(second).fit(**fit)


def test_a_crfsuite_model_starts_a_semi_supervised_fit(tmp_path):
    sklearn_crfsuite = pytest.importorskip(
        "sklearn_crfsuite", reason="the model file is written by sklearn-crfsuite")
    X, y, X_more, X_test, y_test = corpus()
    path = tmp_path / "tagger.crfsuite"
    tagger = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=0.1, max_iterations=50,
                                  model_filename=str(path))
    tagger.fit(X, y)
    start = load(path)
    # The file holds no c1 and c2: 'auto' has nothing to take, and says so.
    for priors in ({}, {"c1": 0.0}, {"c2": 0.1}):
        with pytest.raises(ValueError, match="init has no record of the c1 and c2 it was "
                           "trained with .* give c1 and c2"):
            EntropyRegularizedCRF(init=start, gamma=0.5, **priors).fit(
                X + X_more, y + [None] * len(X_more))
    kept = EntropyRegularizedCRF(init=start, gamma=0.5, c1=0.0, c2=0.1,
                                 early_stopping=False, semi_supervised_iterations=0)
    kept.fit(X + X_more, y + [None] * len(X_more))
    # Its tags are CRFsuite's, label constraints aside (CRFsuite has none).
    kept.constraints_ = None
    assert kept.predict(X_test) == [list(tags) for tags in tagger.predict(X_test)]
    improved = EntropyRegularizedCRF(init=start, gamma=0.5, c1=0.0, c2=0.1,
                                     early_stopping=False, semi_supervised_iterations=10)
    improved.fit(X + X_more, y + [None] * len(X_more))
    assert improved.n_iter_ > 0 and np.isfinite(improved.score(X_test, y_test))


def test_natural_gradient_init():
    from sklearn_ssl_crf import NaturalGradientCRF

    X, y, X_more, X_test, _ = corpus()
    start = CRF(c2=0.1, max_iterations=40).fit(X, y)
    kept = NaturalGradientCRF(init=start, max_iterations=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(kept.transition_weights_, start.transition_weights_)
    assert kept.predict(X_test) == start.predict(X_test)
    assert kept.termination_condition_ == "init"
    improved = NaturalGradientCRF(init=start, gamma=0.1, max_iterations=3, random_state=0)
    improved.fit(X + X_more, y + [None] * len(X_more))
    assert not np.allclose(improved.transition_weights_, start.transition_weights_)

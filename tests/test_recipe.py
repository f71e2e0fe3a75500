"""The recipe for a new estimator (``docs/developers.rst``) gives an estimator that works:
the supervised model at strength 0, the entropy it promises to lower lowered, its settings
chosen by the path; ``tests/test_conformance.py`` runs it through every common check."""

import numpy as np
import pytest
from developers_recipe import load_recipe, recipe_source
from sklearn.base import clone

from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.datasets import make_sequences


@pytest.fixture(scope="module")
def data():
    X, y = make_sequences(120, features="dict", random_state=4)
    return X[:20], y[:20], X[20:100], X[100:], y[100:]


def recipe(**params):
    return load_recipe().MinimumEntropyCRF(**params)


def test_the_recipe_is_the_code_block_of_the_developers_page():
    source = recipe_source("intro\n\n    .. code-block:: python\n\n        # recipe: a new "
                           "estimator\n        x = 1\n\n        y = 2\n    after\n")
    assert source == "# recipe: a new estimator\nx = 1\n\ny = 2"
    estimator = load_recipe().MinimumEntropyCRF
    assert estimator.__module__ == "developers_recipe_estimator"
    assert "_semi_supervised_phase" in vars(estimator)


def test_strength_zero_gives_the_supervised_crf(data):
    X, y, X_unlabeled, _, _ = data
    model = recipe(gamma=0.0, c1=0.0, c2=0.1, early_stopping=False).fit(
        X, y, X_unlabeled=X_unlabeled)
    crf = CRF(c1=0.0, c2=0.1).fit(X, y)
    assert model.classes_ == crf.classes_
    # The unlabeled sequences bring attributes of their own, whose weights stay 0; the
    # others are the CRF's up to the order of the sums over the longer vocabulary.
    rows = [model.attributes_.index(attribute) for attribute in crf.attributes_]
    np.testing.assert_allclose(model.state_weights_[rows], crf.state_weights_, rtol=1e-9,
                               atol=1e-12)
    assert not np.delete(model.state_weights_, rows, axis=0).any()
    np.testing.assert_allclose(model.transition_weights_, crf.transition_weights_, rtol=1e-9,
                               atol=1e-12)


def test_the_phase_lowers_the_unlabeled_entropy(data):
    X, y, X_unlabeled, _, _ = data
    # Without constraints the model's entropy is the objective's, over every labelling.
    fixed = dict(c1=0.0, c2=0.1, early_stopping=False, semi_supervised_iterations=30,
                 constraints=None)
    supervised = recipe(gamma=0.0, **fixed).fit(X, y, X_unlabeled=X_unlabeled)
    regularised = recipe(gamma=1.0, **fixed).fit(X, y, X_unlabeled=X_unlabeled)
    before = np.sum(supervised.predict_entropy(X_unlabeled))
    after = np.sum(regularised.predict_entropy(X_unlabeled))
    assert after < 0.8 * before
    assert regularised.n_iter_ > 0
    assert regularised.training_log_[-1]["unlabelled_entropy"] == pytest.approx(after,
                                                                                 rel=1e-6)


def test_the_path_chooses_its_settings(data):
    X, y, X_unlabeled, X_test, y_test = data
    model = recipe(cv=3, random_state=0, semi_supervised_iterations=10).fit(
        X, y, X_unlabeled=X_unlabeled)
    assert set(model.best_params_) == {"c1", "c2", "gamma"}
    assert model.best_params_["gamma"] in (0.1, 1.0)
    assert model.cv_results_ is not None
    assert model.score(X_test, y_test) > 0.6
    # clone keeps the parameters, and a refit from them gives the same model.
    again = clone(model).fit(X, y, X_unlabeled=X_unlabeled)
    np.testing.assert_array_equal(again.state_weights_, model.state_weights_)

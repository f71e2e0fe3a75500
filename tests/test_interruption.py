"""A fit interrupted (Ctrl-C: KeyboardInterrupt) or failing part-way leaves its estimator
unfitted, never half-written, and a later fit is the same as a fit of a fresh estimator."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    NaturalGradientCRF,
    SelfTrainingCRF,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.training._stochastic import StochasticSamples

MAKERS = {
    "CRF": lambda: CRF(c2=0.1, max_iterations=15),
    "CRFCV": lambda: CRFCV(c1=[0.0], c2=[0.1, 1.0], cv=2, max_iterations=15,
                           random_state=0),
    "EntropyRegularizedCRF": lambda: EntropyRegularizedCRF(
        gamma=0.1, c1=0.0, c2=0.1, early_stopping=False, semi_supervised_iterations=3,
        max_iterations=15),
    "SelfTrainingCRF": lambda: SelfTrainingCRF(max_rounds=1, c1=0.0, c2=0.1,
                                               early_stopping=False, max_iterations=15),
    "NaturalGradientCRF": lambda: NaturalGradientCRF(max_iterations=3, batch_size=4,
                                                     gamma=0.1, random_state=0),
    "GraphPRCRF": lambda: GraphPRCRF(graph="knn", n_neighbors=3, lam=1.0, c1=0.0, c2=0.1,
                                     em_iterations=1, early_stopping=False,
                                     max_iterations=15),
}


def corpus(seed):
    X, y = make_sequences(50, features="dict", random_state=seed)
    return X[:40], y[:30] + [None] * 10


def interrupt_after(monkeypatch, n_calls):
    """Make the ``n_calls``-th objective evaluation (a sum over chunks, or a stochastic
    step's gradient) raise KeyboardInterrupt."""
    calls = {"n": 0}
    for owner, name in [(ChunkedSequences, "sum"), (StochasticSamples, "gradient")]:
        original = getattr(owner, name)

        def counted(self, *args, original=original, **kwargs):
            calls["n"] += 1
            if calls["n"] == n_calls:
                raise KeyboardInterrupt
            return original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    return calls


def fitted_names(estimator):
    return sorted(name for name in vars(estimator) if name.endswith("_"))


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("when", [1, 6])
def test_an_interrupted_fit_leaves_the_estimator_unfitted(name, when, monkeypatch):
    X, y = corpus(0)
    model = MAKERS[name]().fit(*corpus(1))  # an earlier fit, on other data
    assert fitted_names(model)
    calls = interrupt_after(monkeypatch, when)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    assert calls["n"] == when  # it was interrupted during the fit, not after
    # Nothing of either fit is left: no new vocabulary beside old weights.
    assert fitted_names(model) == []
    assert [name for name in vars(model) if name.startswith("_")] == []
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    # The estimator is usable again, and gives what a fresh one gives.
    monkeypatch.undo()
    again = model.fit(X, y)
    fresh = MAKERS[name]().fit(X, y)
    np.testing.assert_array_equal(again.state_weights_, fresh.state_weights_)
    np.testing.assert_array_equal(again.transition_weights_, fresh.transition_weights_)


def test_a_failing_fit_leaves_graph_propagation_unfitted(monkeypatch):
    import sklearn_ssl_crf.estimators._graph_propagation as module

    X, y = corpus(0)
    model = GraphPropagation(graph="knn", n_neighbors=3).fit(X, y)
    assert fitted_names(model)

    def failing(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "_propagate", failing)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    assert fitted_names(model) == []


@pytest.mark.parametrize("when", [1, 5])
@pytest.mark.parametrize("call", [0, 2])
def test_an_interrupted_partial_fit_leaves_the_last_complete_call(call, when, monkeypatch):
    """Interrupted mid-epoch, a call to partial_fit leaves the model of the calls before
    it (unfitted before the first), its vocabulary included; the call made again gives the
    model of calls never interrupted."""
    X, y = make_sequences(90, features="dict", random_state=0)
    classes = sorted({label for labels in y for label in labels})
    # The third batch brings attributes the first two lack.
    batches = [(X[k:k + 30], y[k:k + 30]) for k in range(0, 90, 30)]
    batches[2][0][0][0]["unseen attribute"] = 1.0

    def make():
        return NaturalGradientCRF(batch_size=4, gamma=0.1, eta0=0.1, random_state=0)

    reference = make()
    for batch in batches:
        reference.partial_fit(*batch, classes=classes)
    model = make()
    for batch in batches[:call]:
        model.partial_fit(*batch, classes=classes)
    before = {name: value.copy() if isinstance(value, np.ndarray) else value
              for name, value in vars(model).items() if not name.startswith("_")}
    calls = interrupt_after(monkeypatch, when)
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(*batches[call], classes=classes)
    assert calls["n"] == when
    after = {name: value for name, value in vars(model).items() if not name.startswith("_")}
    assert sorted(after) == sorted(before)
    for name, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[name], value)
        elif name != "vectorizer_":
            assert after[name] == value, name
    if call:
        assert len(model.vectorizer_.vocabulary_) == model.num_attributes_
    monkeypatch.undo()
    for batch in batches[call:]:
        model.partial_fit(*batch, classes=classes)
    np.testing.assert_array_equal(model.state_weights_, reference.state_weights_)
    np.testing.assert_array_equal(model.transition_weights_, reference.transition_weights_)
    assert model.training_log_ == reference.training_log_

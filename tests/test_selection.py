"""The shared training path: selection on a dev set or by cross-validation, its special
cases and its errors, for every estimator that chooses its settings."""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SequenceVectorizer,
    SimilarityGraph,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.estimators._semi_supervised_path import CV_DELTA, SemiSupervisedPath
from sklearn_ssl_crf.metrics import SCORERS, flat_accuracy_score, span_f1_score
from sklearn_ssl_crf.training import sample_positions, unlabeled_sample
from sklearn_ssl_crf.training._selection import spread_folds
from sklearn_ssl_crf.utils import fit_random_state


def without_spans(y):
    """The labels renamed so that they carry no span prefix (as part-of-speech tags)."""
    return [None if labels is None else [label.replace("-", "") for label in labels]
            for labels in y]


@pytest.fixture(scope="module")
def synthetic():
    X, y = make_sequences(300, features="dict", random_state=0)
    return X, y


def answer_graph(X, y):
    """One vertex per (word, gold label): the graph knows the answer, the CRF does not."""
    keys = [(token["word"], label) for sequence, labels in zip(X, y)
            for token, label in zip(sequence, labels)]
    vertex_of = {key: k for k, key in enumerate(dict.fromkeys(keys))}
    vertices = np.array([vertex_of[key] for key in keys])
    n = len(vertex_of)
    by_label = {}
    for (word, label), k in vertex_of.items():
        by_label.setdefault(label, []).append(k)
    rows, cols = [], []
    for members in by_label.values():
        for a, b in zip(members[:-1], members[1:]):
            rows += [a, b]
            cols += [b, a]
    import scipy.sparse as sp

    weights = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    return SimilarityGraph(weights, vertices)


def test_labels_without_spans_keep_a_better_semi_supervised_iterate(synthetic):
    # The defect this path fixes: selecting by span F1 on labels without spans scores 0
    # everywhere and always kept the supervised start.
    X, y = synthetic
    X, y = X[:150], without_spans(y[:150])
    graph = answer_graph(X, y)
    y_partial = y[:10] + [None] * 140
    model = GraphPRCRF(graph=graph, lam=5.0, c1=0.0, c2=1.0, em_iterations=4,
                       n_iter_no_change=None).fit(X, y_partial, X_dev=X[100:],
                                                  y_dev=y[100:])
    scores = model.validation_scores_
    assert len(scores) == 5 and model.best_iteration_ > 0
    assert max(scores) > scores[0] + 0.02
    # Token accuracy, the score for labels without spans.
    assert model.score(X[100:], y[100:]) == pytest.approx(max(scores))


@pytest.mark.parametrize("estimator", [
    EntropyRegularizedCRF(gamma=[0.0, 1.0], proportion_weight=[0.0, 5.0], max_iterations=25),
    SelfTrainingCRF(max_rounds=3),
    GraphPRCRF(graph="knn", n_neighbors=5, lam=[0.3, 3.0], em_iterations=3,
               mstep_iterations=10),
], ids=["entropy", "self-training", "graph-pr"])
@pytest.mark.parametrize("spans", [True, False])
def test_dev_selection_is_never_worse_than_the_supervised_start(synthetic, estimator, spans):
    X, y = synthetic
    if not spans:
        y = without_spans(y)
    model = clone(estimator).fit(X[:20], y[:20], X_unlabeled=X[100:220], X_dev=X[20:100],
                                 y_dev=y[20:100])
    predicted = model.predict(X[20:100])
    score = (span_f1_score if spans else flat_accuracy_score)(y[20:100], predicted)
    scores = model.validation_scores_
    assert score == pytest.approx(scores[model.best_iteration_]) and score >= scores[0]
    # The best iterate, unless it beats the start by less than tol.
    best = int(np.argmax(scores))
    assert model.best_iteration_ == (best if scores[best] - scores[0] >= model.tol else 0)
    # Iteration 0 is the supervised fit that ranked the chosen priors: one score.
    row = [params for params in model.cv_results_["params"] if params["n_iter"] == 0
           and "c2_transitions" not in params and len(params) == 3].index(
        {"c1": model.best_params_["c1"], "c2": model.best_params_["c2"], "n_iter": 0})
    assert model.validation_scores_[0] == model.cv_results_["mean_test_score"][row]


@pytest.mark.parametrize("spans", [True, False])
def test_natural_gradient_keeps_its_best_semi_supervised_epoch_on_dev(synthetic, spans):
    X, y = synthetic
    if not spans:
        y = without_spans(y)
    model = NaturalGradientCRF(gamma=1.0, proportion_weight=2.0, max_iterations=6,
                               eta0=0.1, batch_size=8, random_state=0)
    model.fit(X[:20], y[:20], X_unlabeled=X[100:220], X_dev=X[20:100], y_dev=y[20:100])
    scores = model.validation_scores_
    semi = [entry for entry in model.training_log_ if entry["phase"] == "semi-supervised"]
    assert len(scores) == len(semi) + 1 and model.best_iteration_ == int(np.argmax(scores))
    score = (span_f1_score if spans else flat_accuracy_score)(y[20:100],
                                                              model.predict(X[20:100]))
    assert score == pytest.approx(max(scores)) and score >= scores[0]


def test_no_unlabeled_term_selects_as_crfcv(synthetic):
    """With both strengths 0 the path is CRFCV's: the same folds, the same priors, the same
    weights (iteration 0 is the only iterate)."""
    X, y = synthetic
    params = {"cv": 3, "random_state": 1, "c2": [1.0, 0.1, 0.01], "c1": [0.0, 0.1]}
    crf = CRFCV(**params).fit(X[:40], y[:40])
    model = EntropyRegularizedCRF(gamma=0.0, proportion_weight=0.0, **params).fit(
        X[:40], y[:40], X_unlabeled=X[40:120])
    assert model.best_params_ == dict(crf.best_params_, gamma=0.0, proportion_weight=0.0)
    assert model.best_iteration_ == model.n_iter_ == 0
    shared = crf.num_attributes_
    np.testing.assert_allclose(model.state_weights_[:shared], crf.state_weights_, atol=1e-9)
    np.testing.assert_array_equal(crf.cv_results_["mean_test_score"],
                                  model.cv_results_["mean_test_score"][:-1])


def test_crfcv_scores_match_a_grid_search_over_crf(synthetic):
    X, y = synthetic
    folds = list(KFold(3, shuffle=True, random_state=0).split(np.zeros((45, 1))))
    model = CRFCV(c1=0.0, c2=[1.0, 0.01], cv=folds).fit(X[:45], y[:45])
    from sklearn_ssl_crf import CRF
    from sklearn_ssl_crf.metrics import span_f1_scorer

    search = GridSearchCV(CRF(c1=0.0), {"c2": [1.0, 0.01]}, cv=folds,
                          scoring=span_f1_scorer).fit(X[:45], y[:45])
    # Warm starts along the c2 path end at the same optima, up to L-BFGS's tolerance.
    np.testing.assert_allclose(model.cv_results_["mean_test_score"],
                               search.cv_results_["mean_test_score"], atol=0.02)
    assert model.best_params_["c2"] == search.best_params_["c2"]


@pytest.mark.parametrize("order", [1, 2])
def test_transition_prior_is_chosen_at_order_2_and_refitted(synthetic, order):
    from sklearn_ssl_crf import CRF
    from sklearn_ssl_crf.estimators._semi_supervised_path import C2_TRANSITIONS_CANDIDATES

    X, y = synthetic
    model = CRFCV(c1=0.0, c2=[1.0, 0.1], order=order, cv=3, random_state=0)
    model.fit(X[:45], y[:45])
    tried = {params.get("c2_transitions", "follows c2")
             for params in model.cv_results_["params"]}
    if order == 1:
        # CRFsuite's one prior: nothing more to choose, nothing more in best_params_.
        assert tried == {"follows c2"} and set(model.best_params_) == {"c1", "c2"}
    else:
        assert tried == set(C2_TRANSITIONS_CANDIDATES)
        assert len(model.cv_results_["params"]) == 2 * len(C2_TRANSITIONS_CANDIDATES)
    # The refit is the CRF at the chosen priors, to the bit.
    crf = CRF(order=order, **model.best_params_).fit(X[:45], y[:45])
    np.testing.assert_array_equal(model.transition_weights_, crf.transition_weights_)
    np.testing.assert_array_equal(model.state_weights_, crf.state_weights_)


def test_a_fixed_transition_prior_is_used(synthetic):
    from sklearn_ssl_crf import CRF

    X, y = synthetic
    model = CRFCV(c1=0.0, c2=[1.0, 0.1], c2_transitions=0.001, cv=3, random_state=0)
    model.fit(X[:45], y[:45])
    assert "c2_transitions" not in model.best_params_
    crf = CRF(c2_transitions=0.001, **model.best_params_).fit(X[:45], y[:45])
    np.testing.assert_array_equal(model.transition_weights_, crf.transition_weights_)


@pytest.mark.parametrize("estimator", [
    EntropyRegularizedCRF(gamma=[0.0, 0.5], max_iterations=15, cv=3),
    GraphPRCRF(graph="knn", n_neighbors=5, em_iterations=2, mstep_iterations=10, cv=3),
], ids=["entropy", "graph-pr"])
def test_same_model_for_any_n_jobs_and_the_same_random_state(synthetic, estimator,
                                                             monkeypatch):
    from sklearn_ssl_crf.parallel import _chunked

    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 300)  # several chunks
    X, y = synthetic
    y_partial = y[:24] + [None] * 96
    fits = [clone(estimator).set_params(n_jobs=n_jobs, random_state=seed).fit(
        X[:120], y_partial) for n_jobs, seed in ((1, 3), (2, 3), (1, 3), (1, 4))]
    for other in fits[1:3]:
        np.testing.assert_array_equal(fits[0].state_weights_, other.state_weights_)
        assert fits[0].best_params_ == other.best_params_
        assert fits[0].validation_scores_ == other.validation_scores_
    # Another seed draws other folds.
    assert fits[3].cv_results_["split0_test_score"].tolist() != \
        fits[0].cv_results_["split0_test_score"].tolist()


class ProcessRecordingScorer:
    """Token accuracy, leaving a file named by the id of the process that scored and
    whether the estimator it scored had its vectoriser."""

    def __init__(self, folder):
        self.folder = folder

    def __call__(self, estimator, X, y):
        (self.folder / f"{os.getpid()}-{hasattr(estimator, 'vectorizer_')}").touch()
        return flat_accuracy_score(y, estimator.predict(X))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_folds_run_in_worker_processes_under_n_jobs(synthetic, tmp_path, n_jobs):
    X, y = synthetic
    folder = tmp_path / str(n_jobs)
    folder.mkdir()
    model = EntropyRegularizedCRF(gamma=[0.0, 0.5], max_iterations=10, cv=3, n_jobs=n_jobs,
                                  scoring=ProcessRecordingScorer(folder), random_state=0)
    model.fit(X[:30], y[:30], X_unlabeled=X[30:70])
    scored = {tuple(path.name.split("-")) for path in folder.iterdir()}
    scored_in = {int(pid) for pid, _ in scored}
    if n_jobs == 1:
        assert scored_in == {os.getpid()}
    else:
        # Every fold's fits were scored in worker processes, none here, by a copy of the
        # estimator sent without its vectoriser (the folds' sequences are featurised).
        assert scored_in and os.getpid() not in scored_in
        assert {had for _, had in scored} == {"False"}
    reference = EntropyRegularizedCRF(gamma=[0.0, 0.5], max_iterations=10, cv=3,
                                      scoring="flat_accuracy", random_state=0)
    reference.fit(X[:30], y[:30], X_unlabeled=X[30:70])
    np.testing.assert_array_equal(model.state_weights_, reference.state_weights_)
    np.testing.assert_array_equal(model.cv_results_["mean_test_score"],
                                  reference.cv_results_["mean_test_score"])


def test_grid_search_over_fixed_settings_keeps_them(synthetic):
    X, y = synthetic
    search = GridSearchCV(
        EntropyRegularizedCRF(c1=0.0, c2=0.1, proportion_weight=0.0, early_stopping=False,
                              max_iterations=10),
        {"gamma": [0.0, 0.3]}, cv=KFold(2, shuffle=True, random_state=0))
    search.fit(X[:30] + X[30:90], y[:30] + [None] * 60)
    assert set(search.cv_results_["param_gamma"]) == {0.0, 0.3}
    best = search.best_estimator_
    assert best.best_params_ == {"c1": 0.0, "c2": 0.1, "gamma": best.gamma,
                                 "proportion_weight": 0.0}
    assert best.cv_results_ is None and best.validation_scores_ is None


def test_cv_results_and_refit(synthetic):
    X, y = synthetic
    model = EntropyRegularizedCRF(gamma=[0.0, 0.3], proportion_weight=0.0, c1=0.0,
                                  c2=[1.0, 0.1], cv=3, random_state=0,
                                  max_iterations=20).fit(X[:30], y[:30],
                                                         X_unlabeled=X[30:120])
    results = model.cv_results_
    assert [row.get("gamma") for row in results["params"]] == [None, None, 0.0, 0.3]
    assert results["rank_test_score"].min() == 1 and len(results["split2_test_score"]) == 4
    chosen = results["params"][int(np.argmin(results["rank_test_score"][2:])) + 2]
    assert model.best_params_["gamma"] == chosen["gamma"]
    # The refit runs the chosen number of iterations (fewer only if it converged).
    assert model.n_iter_ <= chosen["n_iter"] and model.best_iteration_ == model.n_iter_
    assert len(model.validation_scores_) >= chosen["n_iter"] + 1


def test_termination_condition_and_convergence_warning(synthetic, monkeypatch):
    X, y = synthetic
    args, kwargs = (X[:30], y[:30]), {"X_unlabeled": X[30:120]}
    settings = dict(c1=0.0, c2=0.1, gamma=0.1, proportion_weight=1.0, cv=3, random_state=0)
    # Fixed settings: a run stopped at its cap is warned about, with the parameter to raise.
    fixed = EntropyRegularizedCRF(**settings, early_stopping=False,
                                  semi_supervised_iterations=2)
    with pytest.warns(ConvergenceWarning, match="stopped at its cap of 2 iterations before "
                      "converging; raise semi_supervised_iterations"):
        fixed.fit(*args, **kwargs)
    assert fixed.termination_condition_ == "max_iter" and fixed.n_iter_ == 2
    assert fixed.training_log_[-1]["stop"] == "stopped at its cap of 2 iterations"
    # A length chosen on held-out data is not: shorter than the cap it is 'no_improvement';
    # the cap itself, by the 'end' rule (which refits for the cap by design), 'max_iter'.
    choose = SemiSupervisedPath._choose_strength
    for rule, length, expected in [("best", 2, "no_improvement"), ("end", 4, "max_iter")]:
        monkeypatch.setattr(EntropyRegularizedCRF, "_iterations_rule", rule)
        monkeypatch.setattr(SemiSupervisedPath, "_choose_strength",
                            lambda self, *a, length=length, **k: (
                                0, length, choose(self, *a, **k)[2]))
        model = EntropyRegularizedCRF(**settings, semi_supervised_iterations=4)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            model.fit(*args, **kwargs)
        assert (model.termination_condition_, model.n_iter_) == (expected, length)


@pytest.mark.parametrize("setup, message", [
    (lambda X, y: (EntropyRegularizedCRF(max_iterations=3),
                   dict(X_dev=X[30:40], y_dev=[None] * 10)),
     "y_dev has no labelled sequence"),
    (lambda X, y: (EntropyRegularizedCRF(cv=50), {}), "cv=50 folds need at least 50"),
    (lambda X, y: (CRFCV(cv=31), {}), "cv=31 folds need at least 31 labelled"),
    (lambda X, y: (SelfTrainingCRF(scoring="span_f1", max_rounds=1),
                   {"y": without_spans(y[:30])}), "needs span labels"),
    (lambda X, y: (GraphPRCRF(graph="knn", scoring="f1"), {}), "scoring must be None"),
    (lambda X, y: (EntropyRegularizedCRF(c2=[]), {}), "non-empty list"),
    (lambda X, y: (EntropyRegularizedCRF(gamma=[0.1, -1.0]), {}), "non-negative"),
    (lambda X, y: (EntropyRegularizedCRF(), {"X_dev": X[30:40]}), "give both X_dev"),
])
def test_clear_errors(synthetic, setup, message):
    X, y = synthetic
    estimator, arguments = setup(X, y)
    labels = arguments.pop("y", y[:30])
    with pytest.raises(ValueError, match=message):
        estimator.fit(X[:30], labels, **arguments)


@pytest.mark.parametrize("estimator", [
    CRF(c2=0.1, max_iterations=30),
    CRFCV(c2=[1.0, 0.1], cv=3),
    EntropyRegularizedCRF(c2=[1.0, 0.1], gamma=1.0, max_iterations=30,
                          semi_supervised_iterations=3),
    SelfTrainingCRF(c2=[1.0, 0.1], max_rounds=2),
    NaturalGradientCRF(gamma=1.0, max_iterations=3, eta0=0.1, batch_size=8, random_state=0),
], ids=["crf", "crfcv", "entropy", "self-training", "natural-gradient"])
def test_dev_labels_unseen_in_training_are_scored_as_errors_with_a_warning(synthetic,
                                                                          estimator):
    # A dev set of 80 sentences whose every third sentence has a label the 20 training
    # sentences lack (as INTJ missing from 150 EWT sentences): every estimator takes it,
    # says so, and scores those tokens as errors, as CRFsuite does.
    X, y = synthetic
    y = without_spans(y)
    y_dev = [["NEW" if k % 3 == 0 and t < 2 else label for t, label in enumerate(labels)]
             for k, labels in enumerate(y[20:100])]
    unseen = sum(label == "NEW" for labels in y_dev for label in labels)
    fit = {} if type(estimator) in (CRF, CRFCV) else {"X_unlabeled": X[100:160]}
    with pytest.warns(UserWarning, match=rf"y_dev has 1 label\(s\) not in the training data "
                      rf"\(NEW\) on {unseen} of its \d+ tokens.*scored as errors"):
        model = clone(estimator).fit(X[:20], y[:20], X_dev=X[20:100], y_dev=y_dev, **fit)
    assert "NEW" not in model.classes_
    predicted = model.predict(X[20:100])
    score = flat_accuracy_score(y_dev, predicted)
    assert score < flat_accuracy_score(y[20:100], predicted)
    if type(model) is CRF:
        assert model.training_log_[-1]["dev_accuracy"] == pytest.approx(score)
    elif type(model) is CRFCV:  # the model is the fit of the best row
        assert max(model.cv_results_["mean_test_score"]) == pytest.approx(score)
    else:
        assert model.validation_scores_[model.best_iteration_] == pytest.approx(score)


def test_cross_validation_of_labelled_then_unlabelled_sequences_says_to_shuffle(synthetic):
    # The user guide's form, X_l + X_u with y_l + [None] * n: scikit-learn's unshuffled
    # KFold trains the first fold on unlabelled sequences only; the error says what to do.
    X, y = synthetic
    X_all, y_all = X[:20] + X[100:180], y[:20] + [None] * 80
    estimator = EntropyRegularizedCRF(c1=0.0, c2=0.1, gamma=0.1, max_iterations=10,
                                      semi_supervised_iterations=2, early_stopping=False)
    with pytest.raises(ValueError, match=r"no labelled sequence to train on .*shuffled "
                       r"folds, for example cv=KFold\(5, shuffle=True"):
        cross_val_score(estimator, X_all, y_all, cv=KFold(5), error_score="raise")
    with pytest.raises(ValueError, match="no labelled sequence to score .*shuffled folds"):
        SCORERS["span_f1"](CRF(max_iterations=5).fit(X[:20], y[:20]), X[100:110], [None] * 10)
    scores = cross_val_score(estimator, X_all, y_all, scoring=SCORERS["span_f1"],
                             cv=KFold(5, shuffle=True, random_state=0), error_score="raise")
    assert np.isfinite(scores).all() and (scores > 0).all()


def test_fold_fits_stop_at_the_ranking_delta_and_the_refit_at_the_estimators(synthetic,
                                                                             monkeypatch):
    # On the folds every L-BFGS run only ranks settings: the supervised start (priors
    # given) and each self-training round stop at CV_DELTA; the refit is the model.
    X, y = synthetic
    deltas = []
    minimize = SelfTrainingCRF._minimize

    def recording(self, objective, theta, callback=None, max_iterations=None, c1=None,
                  delta=None):
        deltas.append(delta)
        return minimize(self, objective, theta, callback, max_iterations, c1, delta)

    monkeypatch.setattr(SelfTrainingCRF, "_minimize", recording)
    model = SelfTrainingCRF(c1=0.0, c2=0.1, max_rounds=2, cv=3, random_state=0, tol=0.0,
                            n_iter_no_change=None).fit(X[:30], y[:30], X_unlabeled=X[30:90])
    refit = 1 + model.n_iter_
    folds = len(deltas) - refit
    assert folds >= 3 * 2  # each fold: its start and at least one round
    assert deltas[:folds] == [CV_DELTA] * folds and deltas[folds:] == [model.delta] * refit


def test_unlabeled_data_and_dev_set_are_keyword_only(synthetic):
    X, y = synthetic
    with pytest.raises(TypeError, match="positional"):
        EntropyRegularizedCRF().fit(X[:10], y[:10], X[10:20])


def test_folds_spread_the_copies_of_a_repeated_label_sequence():
    # Handwriting: 2 labelled copies of each word; a fold holding both would train
    # without the word. Singletons are dealt like a shuffled k-fold split.
    ids = np.repeat(np.arange(40), 2)
    ids = np.concatenate([ids, np.arange(40, 73)])
    rng_splits = [spread_folds(ids, 5, seed) for seed in (0, 1)]
    for splits in rng_splits:
        held = np.concatenate([h for _, h in splits])
        assert sorted(held.tolist()) == list(range(len(ids)))
        assert {len(h) for _, h in splits} <= {len(ids) // 5, len(ids) // 5 + 1}
        for train, h in splits:
            assert set(ids[h]) & set(range(40)) <= set(ids[train])
    assert [h.tolist() for _, h in rng_splits[0]] != [h.tolist() for _, h in rng_splits[1]]


@pytest.mark.parametrize("make", [
    lambda: CRFCV(c1=0.0, c2=[0.01, 1.0], cv=3),
    lambda: EntropyRegularizedCRF(c1=0.0, c2=[0.01, 1.0], gamma=[0.0, 0.5],
                                  proportion_weight=0.0, max_iterations=10, cv=3),
    lambda: SelfTrainingCRF(c1=0.0, c2=[0.01, 1.0], max_rounds=2, max_iterations=10, cv=3),
    lambda: GraphPRCRF(graph="knn", n_neighbors=5, c1=0.0, c2=[0.01, 1.0], em_iterations=2,
                       mstep_iterations=5, max_iterations=10, cv=3),
    lambda: NaturalGradientCRF(c2=0.1, gamma=0.1, max_iterations=3),
    lambda: EntropyRegularizedCRF(c1=0.0, c2=[0.01, 1.0], gamma=0.5, proportion_weight=0.0,
                                  max_iterations=10, cv=3, selection_unlabeled=25),
    lambda: SelfTrainingCRF(c1=0.0, c2=[0.01, 1.0], max_rounds=2, max_iterations=10, cv=3,
                            selection_unlabeled=25),
], ids=["CRFCV", "EntropyRegularizedCRF", "SelfTrainingCRF", "GraphPRCRF",
        "NaturalGradientCRF", "EntropyRegularizedCRF-sample", "SelfTrainingCRF-sample"])
def test_default_fits_are_the_same_model_for_any_n_jobs_and_either_convention(synthetic,
                                                                              make):
    """random_state=None (the default): the unlabeled sequences inside X (label None) or in
    X_unlabeled, n_jobs 1 or 2, and NumPy's global generator in any state give one model
    (issue #42: the folds were drawn from the global generator)."""
    X, y = synthetic
    X_labelled, y_labelled, X_unlabeled = X[:30], y[:30], X[30:90]
    fits = []
    for n_jobs, inside in ((1, False), (2, True), (1, True), (2, False)):
        np.random.seed(len(fits))  # a fit must not depend on the global generator
        model = make()
        if "n_jobs" in model.get_params():  # NGD has none: its steps are sequential
            model.set_params(n_jobs=n_jobs)
        if isinstance(model, CRFCV):  # supervised: no unlabeled sequences to place
            model.fit(X_labelled, y_labelled)
        elif inside:
            model.fit(X_labelled + X_unlabeled, y_labelled + [None] * len(X_unlabeled))
        else:
            model.fit(X_labelled, y_labelled, X_unlabeled=X_unlabeled)
        fits.append(model)
    first = fits[0]
    for other in fits[1:]:
        assert other.attributes_ == first.attributes_
        np.testing.assert_array_equal(other.state_weights_, first.state_weights_)
        np.testing.assert_array_equal(other.transition_weights_, first.transition_weights_)
        if getattr(first, "cv_results_", None) is not None:
            assert other.best_params_ == first.best_params_
            for key, values in first.cv_results_.items():
                if key.startswith(("split", "mean_test")):
                    np.testing.assert_array_equal(other.cv_results_[key], values)


def gold_probability(estimator, X, y):
    """The mean marginal probability of the gold labels: a score that any change of the
    weights moves (token accuracy may not)."""
    return float(np.mean([marginals[label] for sequence, labels in
                          zip(estimator.predict_marginals(X), y)
                          for marginals, label in zip(sequence, labels)]))


@pytest.mark.parametrize("dev", [False, True])
def test_the_supervised_start_has_one_score(synthetic, dev):
    """The fit that ranks the chosen priors is the semi-supervised runs' iteration 0: the
    supervised start has one score as a candidate and as the start of the curves (issue
    #42: they were a loosened ranking fit and a full fit)."""
    X, y = synthetic
    model = EntropyRegularizedCRF(
        c1=[0.0, 0.1], c2=[0.1, 1.0], gamma=0.5, proportion_weight=0.0, cv=3,
        random_state=0, early_stopping=False, semi_supervised_iterations=3,
        scoring=gold_probability)
    held = dict(X_dev=X[200:240], y_dev=y[200:240]) if dev else {}
    model.fit(X[:30], y[:30], X_unlabeled=X[30:90], **held)
    results = model.cv_results_
    rows = [i for i, params in enumerate(results["params"])
            if "gamma" not in params and params["c1"] == model.best_params_["c1"]
            and params["c2"] == model.best_params_["c2"]]
    assert len(rows) == 1
    assert model.validation_scores_[0] == pytest.approx(results["mean_test_score"][rows[0]],
                                                        rel=1e-14)


# -- selection on a sample of the unlabeled pool (issues #42 and #43) ----------------------

def test_an_unlabeled_sample_is_drawn_over_the_parts_in_order():
    X, _ = make_sequences(60, features="dict", random_state=1)
    pool = SequenceVectorizer().fit_transform(X)
    whole, scale = unlabeled_sample([pool], 25, random_state=3)
    split, split_scale = unlabeled_sample([pool[:7], pool[7:40], pool[40:]], 25,
                                          random_state=3)
    chosen = np.sort(fit_random_state(3).choice(60, 25, replace=False))
    expected = pool[chosen]
    for sample in (whole, split):
        rows = sp.vstack([part.matrix for part in sample])
        assert (rows != expected.matrix).nnz == 0
        np.testing.assert_array_equal(np.concatenate([part.lengths for part in sample]),
                                      expected.lengths)
    assert scale == split_scale == pool.n_tokens / expected.n_tokens
    assert unlabeled_sample([pool], 60, random_state=3) is None
    assert unlabeled_sample([pool], None, random_state=3) is None


@pytest.mark.parametrize("estimator", [EntropyRegularizedCRF, SelfTrainingCRF, GraphPRCRF])
@pytest.mark.parametrize("size, error", [(True, TypeError), (0, ValueError),
                                         (2.5, ValueError), ("all", ValueError)])
def test_a_bad_sample_size_is_refused_by_name(synthetic, estimator, size, error):
    X, y = synthetic
    with pytest.raises(error, match="selection_unlabeled"):
        estimator(selection_unlabeled=size).fit(X[:10], y[:10], X_unlabeled=X[10:20])


def test_a_sample_as_large_as_the_pool_changes_nothing(synthetic):
    X, y = synthetic
    settings = dict(c1=0.0, c2=[0.01, 1.0], max_iterations=10, cv=3, random_state=0)
    for make in (lambda size: EntropyRegularizedCRF(selection_unlabeled=size,
                                                    semi_supervised_iterations=5, **settings),
                 lambda size: SelfTrainingCRF(selection_unlabeled=size, max_rounds=2,
                                              **settings)):
        models = [make(size).fit(X[:30], y[:30], X_unlabeled=X[30:90]) for size in (None, 60)]
        np.testing.assert_array_equal(models[0].state_weights_, models[1].state_weights_)
        for key, values in models[0].cv_results_.items():
            if key.startswith("split"):
                np.testing.assert_array_equal(models[1].cv_results_[key], values)


def test_the_folds_train_on_a_weighted_sample_and_the_refit_on_the_pool(synthetic):
    """The folds' entropy runs on a sample are those on the sample alone with the strengths
    scaled by the pool's tokens over the sample's; the refit is the fixed-setting fit on
    the whole pool."""
    X, y = synthetic
    matrix = SequenceVectorizer().fit_transform(X)
    labelled, pool = matrix[:30], matrix[30:230]
    settings = dict(c1=0.0, c2=1.0, max_iterations=15, semi_supervised_iterations=8,
                    n_iter_no_change=None, tol=0.0, cv=3, random_state=4,
                    scoring=gold_probability)
    sampled = EntropyRegularizedCRF(selection_unlabeled=50, gamma=0.5,
                                    proportion_weight=0.2, **settings)
    sampled.fit(labelled, y[:30], X_unlabeled=pool)
    (part,), scale = unlabeled_sample([pool], 50, random_state=4)
    on_sample = EntropyRegularizedCRF(selection_unlabeled=None, gamma=0.5 * scale,
                                      proportion_weight=0.2 * scale, **settings)
    on_sample.fit(labelled, y[:30], X_unlabeled=part)
    for key, values in on_sample.cv_results_.items():
        if key.startswith("split"):
            np.testing.assert_array_equal(sampled.cv_results_[key], values)
    refit = EntropyRegularizedCRF(**dict(settings, **sampled.best_params_,
                                         early_stopping=False)).fit(
        labelled, y[:30], X_unlabeled=pool)
    assert sampled.best_iteration_ > 0
    np.testing.assert_array_equal(sampled.state_weights_, refit.state_weights_)


def test_graph_pr_folds_run_on_a_weighted_sample_and_the_pools_graph(synthetic):
    """Graph-PR's folds on a sample are those of a fit given only the sample as
    unlabelled, the pool's graph over those tokens, each kept edge scaled by its ends'
    lost degree (``sqrt(d_a d_b / (d'_a d'_b))``), and the unlabelled weight scaled by the
    pool's tokens over the sample's; the refit is the fixed-setting fit on the pool."""
    X, y = synthetic
    graph = answer_graph(X, y)
    matrix = SequenceVectorizer().fit_transform(X)
    labelled, pool = matrix[:30], matrix[30:]
    settings = dict(c1=0.0, c2=1.0, lam=1.0, em_iterations=4, em_tol=0.0,
                    mstep_iterations=10, n_iter_no_change=None, cv=3, random_state=4,
                    scoring="flat_accuracy")
    sampled = GraphPRCRF(graph=graph, selection_unlabeled=60, **settings).fit(
        labelled, y[:30], X_unlabeled=pool)
    chosen = sample_positions(len(pool), 60, random_state=4)
    lengths, offsets = matrix.lengths, matrix.offsets
    scale = lengths[30:].sum() / lengths[30 + chosen].sum()
    tokens = np.concatenate([np.arange(offsets[i], offsets[i + 1])
                             for i in [*range(30), *(30 + chosen)]])
    vertices = graph.token_vertices[tokens]
    present = np.zeros(graph.n_vertices)
    present[vertices] = 1.0
    kept = sp.diags(present) @ graph.weights @ sp.diags(present)
    degrees, kept_degrees = (np.asarray(w.sum(axis=1)).ravel() for w in (graph.weights, kept))
    ratio = np.divide(degrees, kept_degrees, out=np.zeros_like(degrees),
                      where=kept_degrees > 0)
    assert ratio.max() > 1.0  # the sample's vertices lost neighbours
    root = sp.diags(np.sqrt(ratio))
    results = {}
    for name, weights in (("scaled", root @ kept @ root), ("restricted", kept)):
        results[name] = GraphPRCRF(
            graph=SimilarityGraph(weights, vertices),
            selection_unlabeled=None, **dict(settings, unlabeled_weight=scale)).fit(
            labelled, y[:30], X_unlabeled=pool[chosen]).cv_results_
    for key, values in results["scaled"].items():
        if key.startswith("split"):
            np.testing.assert_array_equal(sampled.cv_results_[key], values)
    assert not np.array_equal(results["restricted"]["mean_test_score"],
                              results["scaled"]["mean_test_score"])
    assert 0 < sampled.best_iteration_ == sampled.n_iter_
    refit = GraphPRCRF(graph=graph, **dict(settings, em_iterations=sampled.n_iter_,
                                           early_stopping=False)).fit(
        labelled, y[:30], X_unlabeled=pool)
    np.testing.assert_array_equal(sampled.state_weights_, refit.state_weights_)
    assert sampled.transduction_ == refit.transduction_


def test_graph_pr_fold_on_a_sample_holds_its_vertices_and_labels_its_held_out_by_them(
        synthetic):
    """A fold on a sample: the penalty's groups are the vertices of the fold's tokens only
    (fewer than the graph's), and q labels each held-out sequence as it labels the same
    sequence among the fold's unlabeled ones (the two are packed apart). The vertices are
    numbered at random, so that a group's number is not its vertex's."""
    X, y = synthetic
    answer = answer_graph(X, y)
    number = np.random.default_rng(0).permutation(answer.n_vertices)
    old = np.argsort(number)
    graph = SimilarityGraph(answer.weights[old][:, old], number[answer.token_vertices])
    model = GraphPRCRF(graph=graph, selection_unlabeled=40, c1=0.0, c2=1.0, lam=1.0,
                       random_state=4, cv=3)
    problem = model._prepare(X, y[:30] + [None] * 270, None)
    train, held = next(iter(model._splits(problem.labels)))
    fold = model._fold(problem, train, sampled=True)
    tokens = np.concatenate([np.arange(offset, offset + len(X[i])) for i in
                             [*problem.labelled_index[train], *fold.unlabeled_index]
                             for offset in [sum(map(len, X[:i]))]])
    np.testing.assert_array_equal(fold.penalty.vertices,
                                  np.setdiff1d(graph.token_vertices[tokens], [-1]))
    assert fold.penalty.n_groups < graph.n_vertices
    model._set_priors(fold, {"c1": 0.0, "c2": 1.0})
    q = model._run(fold, {"lam": 1.0}, 2, None).result.state
    assert np.abs(q.offsets).max() > 0.1
    labels = model._q_labels(fold.unlabeled, fold.layout, q)
    held_index = problem.labelled_index[held]
    positions = np.searchsorted(fold.unlabeled_index, held_index)
    assert model._q_labels(fold.held_data, fold.layout, q) == [labels[k] for k in positions]
    assert [labels[k] for k in positions] != [y[i] for i in held_index]  # q is not gold


def test_self_training_folds_weigh_the_sample_as_the_pool():
    """A pool of one sentence repeated: the folds' rounds on a sample of its copies, each
    weighted by the pool's size over the sample's, score as on the whole pool."""
    X, y = make_sequences(40, features="dict", random_state=2)
    pool = [X[35]] * 120
    settings = dict(c1=0.0, c2=[0.1, 1.0], max_rounds=2, cv=3, random_state=0,
                    scoring=gold_probability)
    whole = SelfTrainingCRF(selection_unlabeled=None, **settings).fit(X[:30], y[:30],
                                                                      X_unlabeled=pool)
    sampled = SelfTrainingCRF(selection_unlabeled=20, **settings).fit(X[:30], y[:30],
                                                                      X_unlabeled=pool)
    unweighted = SelfTrainingCRF(selection_unlabeled=None, **settings).fit(
        X[:30], y[:30], X_unlabeled=pool[:20])
    assert sampled.best_params_ == whole.best_params_
    curves = [model.cv_results_["mean_test_score"] for model in (whole, sampled, unweighted)]
    np.testing.assert_allclose(curves[1], curves[0], rtol=1e-9)
    assert not np.allclose(curves[2], curves[0], rtol=1e-9)  # the weights matter here

"""Weights of the labelled likelihood: ``sample_weight`` (per sequence) and ``class_weight``
(per label, softmax-margin costs). Weighted edge sums of every lattice against per-chain
sums, the weighted and cost-augmented likelihood against enumeration and finite
differences, integer weights against duplicated sequences, zero weights against dropped
ones, scikit-learn's routing of ``sample_weight``."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from scipy.special import logsumexp
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
    WindowFeatures,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.inference import ChainLayout, Workspace, chain_lattice
from sklearn_ssl_crf.inference.chain import LogSpaceLattice, ScaledLattice
from sklearn_ssl_crf.inference.restricted import PairStructure, RestrictedPairLattice
from sklearn_ssl_crf.inference.second_order import LogSpacePairLattice, PairLattice
from sklearn_ssl_crf.objective import log_likelihood
from sklearn_ssl_crf.potentials import PackedSequences

LENGTHS = [4, 1, 3, 3, 2]


def lattices(order, restricted=False):
    rng = np.random.default_rng(order)
    n_labels = 3
    layout = ChainLayout(LENGTHS)
    unary = rng.normal(size=(layout.n_rows, n_labels))
    shape = (n_labels, n_labels) if order == 1 else (n_labels + 1, n_labels, n_labels)
    transition = rng.normal(size=shape)
    if restricted:
        transition[:, 0, 1] = transition[:, 1, 2] = transition[:, 2, 2] = -np.inf
        transition[1, 0, 0] = -np.inf
    if order == 1:
        made = [ScaledLattice(unary, transition, layout, Workspace()),
                LogSpaceLattice(unary, transition, layout)]
    elif restricted:
        structure = PairStructure(transition > -np.inf)
        made = [RestrictedPairLattice(unary, transition, layout, structure, Workspace()),
                PairLattice(unary, transition, layout, Workspace())]
    else:
        made = [PairLattice(unary, transition, layout, Workspace()),
                LogSpacePairLattice(unary, transition, layout)]
    return layout, unary, transition, made


@pytest.mark.parametrize("order, restricted", [(1, False), (2, False), (2, True)])
def test_weighted_edge_sums_are_weighted_sums_of_each_chains(order, restricted):
    layout, unary, transition, made = lattices(order, restricted)
    weights = np.array([0.5, 2.0, 0.0, 1.5, 3.0])
    row_weights = weights[layout.sequence_order][layout.row_slots]
    # Each chain alone: its rows in token order, a layout of one.
    token_unary = np.empty_like(unary)
    token_unary[layout.order] = unary
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    expected = sum(w * chain_lattice(token_unary[a:b], transition, ChainLayout([b - a]))
                   .edge_marginal_sum() for w, a, b in zip(weights, offsets[:-1], offsets[1:]))
    for lattice in made:
        np.testing.assert_allclose(lattice.edge_marginal_sum(row_weights), expected,
                                   atol=1e-12)


def test_restricted_edge_sums_never_read_the_first_positions_unwritten_columns():
    """The restricted lattice's work buffer held infinities before (a reused workspace): the
    weighted edge sums are those of a fresh one, with no warning."""
    layout, unary, transition, (fresh, _) = lattices(2, restricted=True)
    row_weights = np.array([0.5, 2.0, 0.0, 1.5, 3.0])[layout.sequence_order][layout.row_slots]
    workspace = Workspace()
    structure = PairStructure(transition > -np.inf)
    workspace.array("restricted_weighted", (structure.n_pairs, layout.n_rows))[:] = np.inf
    reused = RestrictedPairLattice(unary, transition, layout, structure, workspace)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(reused.edge_marginal_sum(row_weights),
                                      fresh.edge_marginal_sum(row_weights))


def enumerated(unary, transition, lengths, labels, weights, costs):
    """sum_i w_i [log sum_{y ~ known labels} e^{s(y)} - log sum_y e^{s(y) + cost(y)}], with
    cost(y) the summed costs of the known tokens whose label y gets wrong."""
    total, offset, n_labels = 0.0, 0, unary.shape[1]
    for w, n in zip(weights, lengths):
        rows, gold = unary[offset:offset + n], labels[offset:offset + n]
        numerator, denominator = [], []
        for path in itertools.product(range(n_labels), repeat=n):
            score = rows[np.arange(n), path].sum()
            score += sum(transition[a, b] for a, b in zip(path, path[1:]))
            wrong = [g >= 0 and g != p for g, p in zip(gold, path)]
            denominator.append(score + sum(costs[g] for g, bad in zip(gold, wrong) if bad))
            if not any(wrong):
                numerator.append(score)
        total += w * (logsumexp(numerator) - logsumexp(denominator))
        offset += n
    return total


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("with_costs", [False, True])
def test_weighted_cost_augmented_likelihood_matches_enumeration(partial, with_costs):
    rng = np.random.default_rng(int(partial) + 2 * int(with_costs))
    n_labels, n_tokens = 3, sum(LENGTHS)
    labels = rng.integers(0, n_labels, n_tokens)
    if partial:
        labels[[1, 5, 6]] = -1
    weights = np.array([0.5, 2.0, 0.0, 1.5, 3.0])
    costs = np.log([3.0, 0.5, 1.0]) if with_costs else None
    packed = PackedSequences(sp.identity(n_tokens, format="csr"), LENGTHS, labels, n_labels,
                             weights=weights, label_costs=costs)
    unary = rng.normal(size=(n_tokens, n_labels))
    transition = rng.normal(size=(n_labels, n_labels))
    value, d_unary, d_transition = log_likelihood(packed, unary[packed.layout.order],
                                                  transition)
    zero = np.zeros(n_labels)

    def oracle(u, t):
        return enumerated(u, t, LENGTHS, labels, weights, zero if costs is None else costs)

    assert value == pytest.approx(oracle(unary, transition), abs=1e-10)
    gradient = np.empty_like(unary)
    gradient[packed.layout.order] = d_unary
    step = 1e-6
    for index in itertools.product(range(n_tokens), range(n_labels)):
        if index[0] % 3:
            continue
        shifted = unary.copy()
        shifted[index] += step
        up = oracle(shifted, transition)
        shifted[index] -= 2 * step
        assert gradient[index] == pytest.approx((up - oracle(shifted, transition)) / (2 * step),
                                                abs=1e-6)
    for index in np.ndindex(transition.shape):
        shifted = transition.copy()
        shifted[index] += step
        up = oracle(unary, shifted)
        shifted[index] -= 2 * step
        assert d_transition[index] == pytest.approx(
            (up - oracle(unary, shifted)) / (2 * step), abs=1e-6)


def corpus():
    X, y = make_sequences(70, features="dict", random_state=2)
    return X[:30], y[:30], X[30:], y[30:]


def test_integer_weights_equal_duplicated_sequences_and_zero_drops_one():
    X, y, _, _ = corpus()
    weights = np.ones(len(X))
    weights[[0, 3]] = [2.0, 3.0]
    weights[5] = 0.0
    given = weights.copy()
    weighted = CRF(c2=0.1, max_iterations=200).fit(X, y, sample_weight=weights.tolist())
    weighted_array = CRF(c2=0.1, max_iterations=200).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(weights, given)  # the caller's weights are unchanged
    np.testing.assert_array_equal(weighted_array.state_weights_, weighted.state_weights_)
    # Copies next to their sequence: the labels and attributes appear in the same order.
    copies = [i for i in range(len(X)) for _ in range(int(weights[i]))]
    duplicated = CRF(c2=0.1, max_iterations=200).fit([X[i] for i in copies],
                                                     [y[i] for i in copies])
    assert weighted.classes_ == duplicated.classes_
    # Sequence 5's own attributes get no gradient but their L2 term's: they stay 0.
    row = {name: k for k, name in enumerate(weighted.attributes_)}
    shared = [row[name] for name in duplicated.attributes_]
    np.testing.assert_allclose(weighted.state_weights_[shared], duplicated.state_weights_,
                               atol=1e-5)
    alone = np.setdiff1d(np.arange(len(weighted.attributes_)), shared)
    assert alone.size and not weighted.state_weights_[alone].any()
    np.testing.assert_allclose(weighted.transition_weights_,
                               duplicated.transition_weights_, atol=1e-5)
    ones = CRF(c2=0.1, max_iterations=30).fit(X, y, sample_weight=np.ones(len(X)))
    plain = CRF(c2=0.1, max_iterations=30).fit(X, y)
    np.testing.assert_array_equal(ones.state_weights_, plain.state_weights_)


def test_class_weight_of_one_is_the_plain_likelihood_and_more_weight_more_predictions():
    X, y, X_test, _ = corpus()
    plain = CRF(c2=0.1, max_iterations=50).fit(X, y)
    ones = CRF(c2=0.1, max_iterations=50, class_weight={"B-A": 1.0}).fit(X, y)
    assert ones.class_weight_ is None
    np.testing.assert_array_equal(ones.state_weights_, plain.state_weights_)
    counts = []
    for weight in (1.0, 5.0, 50.0):
        model = CRF(c2=0.1, max_iterations=50, class_weight={"I-A": weight}).fit(X, y)
        counts.append(sum(label == "I-A" for labels in model.predict(X_test)
                          for label in labels))
    assert counts[0] < counts[1] < counts[2]
    balanced = CRF(class_weight="balanced", max_iterations=5).fit(X, y)
    tokens = [label for labels in y for label in labels]
    n = {label: tokens.count(label) for label in balanced.classes_}
    np.testing.assert_allclose(balanced.class_weight_,
                               [len(tokens) / (len(n) * n[c]) for c in balanced.classes_])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"sample_weight": [1.0, 2.0]}, ValueError, "one weight per sequence"),
    ({"sample_weight": [-1.0] + [1.0] * 29}, ValueError, r"sample_weight\[0\] is -1.0"),
    ({"sample_weight": [np.nan] * 30}, ValueError, "finite and non-negative"),
    ({"sample_weight": "heavy"}, TypeError, "array of numbers"),
    ({"sample_weight": [0.0] * 30}, ValueError, "0 for every labelled sequence"),
])
def test_bad_sample_weight(kwargs, error, message):
    X, y, _, _ = corpus()
    with pytest.raises(error, match=message):
        CRF(max_iterations=2).fit(X, y, **kwargs)


def test_unlabeled_sequences_must_weigh_one():
    X, y, X_more, _ = corpus()
    weights = np.ones(40)
    weights[35] = 2.0
    with pytest.raises(ValueError, match="sequence 35 is unlabelled"):
        EntropyRegularizedCRF(gamma=0.1, c1=0.0, c2=0.1, early_stopping=False,
                              semi_supervised_iterations=2).fit(
            X + X_more[:10], y + [None] * 10, sample_weight=weights)


@pytest.mark.parametrize("class_weight, error, message", [
    ({"Z": 2.0}, ValueError, "names label 'Z'"),
    ({"O": 0.0}, ValueError, "positive"),
    ("rare", ValueError, "class_weight"),
])
def test_bad_class_weight(class_weight, error, message):
    X, y, _, _ = corpus()
    with pytest.raises(error, match=message):
        CRF(max_iterations=2, class_weight=class_weight).fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: CRFCV(c1=[0.0], c2=[0.1], cv=3, random_state=0),
    lambda: EntropyRegularizedCRF(gamma=0.1, proportion_weight=0.0, c1=0.0, c2=0.1,
                                  early_stopping=False, semi_supervised_iterations=3),
    lambda: SelfTrainingCRF(max_rounds=1, c1=0.0, c2=0.1, early_stopping=False),
    lambda: NaturalGradientCRF(c2=0.1, max_iterations=3, random_state=0),
    lambda: NaturalGradientCRF(c2=0.1, max_iterations=3, batch_size=4, random_state=0),
    lambda: GraphPRCRF(graph="knn", n_neighbors=3, lam=1.0, c1=0.0, c2=0.1,
                       em_iterations=1, early_stopping=False, random_state=0),
], ids=["CRFCV", "EntropyRegularizedCRF", "SelfTrainingCRF", "NGD", "NGD-batch", "GraphPRCRF"])
def test_every_estimator_weighs_its_labelled_sequences(make):
    X, y, X_more, _ = corpus()
    X_all, y_all = X + X_more[:10], y + [None] * 10
    plain = make().fit(X_all, y_all).state_weights_
    ones = make().fit(X_all, y_all, sample_weight=np.ones(40)).state_weights_
    np.testing.assert_array_equal(ones, plain)
    weights = np.ones(40)
    weights[:30] = np.linspace(0.2, 3.0, 30)
    weighted = make().fit(X_all, y_all, sample_weight=weights).state_weights_
    assert not np.allclose(weighted, plain)
    balanced = make().set_params(class_weight="balanced").fit(X_all, y_all)
    assert balanced.class_weight_ is not None
    assert not np.allclose(balanced.state_weights_, plain)


def test_ngd_single_and_batch_gradients_agree_with_weights_and_costs():
    X, y, _, _ = corpus()
    y = [list(labels) for labels in y]
    y[2][1] = None  # one partial sequence too
    weights = np.linspace(0.5, 2.0, len(X))
    model = NaturalGradientCRF(c2=0.1, max_iterations=1, random_state=0,
                               class_weight={"B-A": 4.0, "O": 0.5})
    model.fit(X, y, sample_weight=weights)
    from sklearn_ssl_crf.utils._validation import encode_labels

    sequences = model.vectorizer_.transform(X)
    _, codes = encode_labels(y, model.classes_)
    model._weights = weights
    rng = np.random.default_rng(4)
    for i in (0, 2, 7):
        single_samples = model._samples(sequences, np.arange(len(X)), codes, False)
        trainer = model._new_trainer(single_samples, np.random.default_rng(0))
        state, transition = trainer.weights()
        trainer.set_weights(rng.normal(size=state.shape), rng.normal(size=transition.shape))
        single = single_samples.gradient(trainer, np.array([i]))
        batch_samples = model._samples(sequences, np.arange(len(X)), codes, False)
        batch = batch_samples._batch_gradient(trainer,
                                              batch_samples._prepare_batch(np.array([i])))
        assert single[0] == pytest.approx(batch[0], rel=1e-10)
        np.testing.assert_allclose(single[2], batch[2], atol=1e-10)
        np.testing.assert_allclose(single[3], batch[3], atol=1e-10)


def test_grid_search_and_pipeline_routing_pass_the_weights():
    X, y, _, _ = corpus()
    weights = np.linspace(0.5, 2.0, len(X))
    search = GridSearchCV(CRF(max_iterations=20), {"c2": [0.1, 1.0]}, cv=3)
    with warnings.catch_warnings():
        # Scored with the weights too: scikit-learn warns when score cannot take them.
        warnings.filterwarnings("error", message=".*does not support sample_weight")
        search.fit(X, y, sample_weight=weights)
    direct = CRF(max_iterations=20, c2=search.best_params_["c2"]).fit(
        X, y, sample_weight=weights)
    np.testing.assert_array_equal(search.best_estimator_.state_weights_,
                                  direct.state_weights_)
    words = [[token["word"] for token in sequence] for sequence in X]
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = Pipeline([("features", WindowFeatures()),
                             ("crf", CRF(max_iterations=20).set_fit_request(
                                 sample_weight=True))])
        pipeline.fit(words, y, sample_weight=weights)
    features = WindowFeatures().fit(words)
    alone = CRF(max_iterations=20).fit(features.transform(words), y, sample_weight=weights)
    np.testing.assert_array_equal(pipeline[-1].state_weights_, alone.state_weights_)


def test_weighted_score_counts_each_token_its_sequences_weight():
    X, y, X_test, y_test = corpus()
    model = CRF(c2=0.1, max_iterations=30).fit(X, y)
    weights = np.linspace(0.0, 2.0, len(X_test))
    hits = [(p == g) for ps, gs in zip(model.predict(X_test), y_test) for p, g in zip(ps, gs)]
    token_weights = np.repeat(weights, [len(s) for s in y_test])
    assert model.score(X_test, y_test, sample_weight=weights) == pytest.approx(
        np.average(hits, weights=token_weights))
    assert model.score(X_test, y_test) == pytest.approx(np.mean(hits))

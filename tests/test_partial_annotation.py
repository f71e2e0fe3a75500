"""Training from partial annotation (Tsuboi et al. 2008): a labelled sequence may leave
tokens unknown (None), and its likelihood sums over every labelling of them. The likelihood
and its gradient against enumeration and finite differences, equal to the full likelihood
when every label is known; the estimators' handling of such sequences."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.inference import chain_lattice
from sklearn_ssl_crf.objective import log_likelihood, sequence_log_likelihood
from sklearn_ssl_crf.objective._potentials import _partial_log_likelihood
from sklearn_ssl_crf.potentials import PackedSequences


def chain_score(unary, transition, path):
    n_labels = unary.shape[1]
    score = unary[np.arange(len(path)), path].sum()
    for t in range(1, len(path)):
        if transition.ndim == 2:
            score += transition[path[t - 1], path[t]]
        else:
            score += transition[n_labels if t == 1 else path[t - 2], path[t - 1], path[t]]
    return score


def enumerated_log_likelihood(unary, transition, lengths, labels):
    """sum_i log sum_{y consistent with the known labels of i} p(y | x_i), by
    enumeration (token order)."""
    total, offset, n_labels = 0.0, 0, unary.shape[1]
    for n in lengths:
        rows, known = unary[offset:offset + n], labels[offset:offset + n]
        scores = [chain_score(rows, transition, path)
                  for path in itertools.product(range(n_labels), repeat=n)]
        consistent = [s for s, path in zip(
            scores, itertools.product(range(n_labels), repeat=n))
            if all(k < 0 or k == p for k, p in zip(known, path))]
        total += logsumexp(consistent) - logsumexp(scores)
        offset += n
    return total


def packed_case(order, seed, known_share=0.5):
    rng = np.random.default_rng(seed)
    n_labels, lengths = 3, [3, 1, 4, 2]
    n_tokens = sum(lengths)
    labels = rng.integers(0, n_labels, n_tokens)
    labels[rng.random(n_tokens) > known_share] = -1
    labels[0] = 1  # at least one known label
    packed = PackedSequences(sp.identity(n_tokens, format="csr"), lengths, labels, n_labels,
                             order=order)
    unary = rng.normal(size=(n_tokens, n_labels))
    shape = (n_labels, n_labels) if order == 1 else (n_labels + 1, n_labels, n_labels)
    transition = rng.normal(size=shape)
    return packed, unary, transition, lengths, labels


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_partial_likelihood_and_gradient_match_enumeration(order, seed):
    packed, unary, transition, lengths, labels = packed_case(order, seed)
    assert packed.partial
    value, d_unary, d_transition = log_likelihood(packed, unary[packed.layout.order],
                                                  transition)
    assert value == pytest.approx(enumerated_log_likelihood(unary, transition, lengths,
                                                            labels), abs=1e-10)
    # Finite differences of the enumerated likelihood, unary (token order) and transition.
    gradient = np.empty_like(unary)
    gradient[packed.layout.order] = d_unary

    def likelihood(unary_values, transition_values):
        return enumerated_log_likelihood(unary_values, transition_values, lengths, labels)

    for index in [(0, 0), (2, 1), (5, 2), (9, 0)]:
        numeric = central_difference(lambda u: likelihood(u, transition), unary, index)
        assert gradient[index] == pytest.approx(numeric, abs=1e-6)
    for index in itertools.islice(np.ndindex(transition.shape), 0, None, 5):
        numeric = central_difference(lambda t: likelihood(unary, t), transition, index)
        assert d_transition[index] == pytest.approx(numeric, abs=1e-6)


def central_difference(function, values, index, step=1e-6):
    """d function / d values[index], by central differences."""
    shifted = values.copy()
    shifted[index] += step
    up = function(shifted)
    shifted[index] -= 2 * step
    return (up - function(shifted)) / (2 * step)


@pytest.mark.parametrize("order", [1, 2])
def test_every_label_known_gives_the_full_likelihood(order):
    packed, unary, transition, _, _ = packed_case(order, 0, known_share=1.0)
    assert not packed.partial
    unary = unary[packed.layout.order]
    full = log_likelihood(packed, unary, transition)
    clamped = _partial_log_likelihood(packed, unary, unary, transition, chain_lattice, None)
    assert clamped[0] == pytest.approx(full[0], abs=1e-10)
    np.testing.assert_allclose(clamped[1], full[1], atol=1e-12)
    np.testing.assert_allclose(clamped[2], full[2], atol=1e-12)


def partial_corpus(known_share=0.5, seed=0):
    X, y = make_sequences(80, features="dict", random_state=seed)
    rng = np.random.default_rng(seed)
    partial = [[label if rng.random() < known_share else None for label in labels]
               for labels in y]
    return X, y, partial


def test_classes_never_hold_none_and_score_skips_unknown_labels():
    X, y, partial = partial_corpus()
    crf = CRF(c2=0.1, max_iterations=30).fit(X[:40], partial[:40])
    assert None not in crf.classes_
    known = [(p, g) for ps, gs in zip(crf.predict(X[:40]), partial[:40])
             for p, g in zip(ps, gs) if g is not None]
    assert crf.score(X[:40], partial[:40]) == pytest.approx(
        np.mean([p == g for p, g in known]))
    with pytest.raises(ValueError, match=r"y_dev\[0\]\[\d+\] is None"):
        CRF(max_iterations=2).fit(X[:40], y[:40], X_dev=X[40:], y_dev=partial[40:])


def test_a_sequence_without_known_labels_is_unlabeled():
    X, y, _ = partial_corpus()
    X, y = X[:40], y[:40]
    unknown = [None] * len(X[5])
    with_none = EntropyRegularizedCRF(gamma=0.5, proportion_weight=0.0, c1=0.0, c2=0.1,
                                      early_stopping=False, semi_supervised_iterations=3)
    as_unknown = with_none.fit(X, y[:5] + [None] + y[6:]).state_weights_
    all_unknown = with_none.fit(X, y[:5] + [unknown] + y[6:]).state_weights_
    np.testing.assert_array_equal(as_unknown, all_unknown)


def test_partial_annotation_beats_dropping_the_partial_sequences():
    """Half the labels of 40 sequences teach more than the 20 fully labelled ones alone
    (same number of known labels, spread over more sequences)."""
    X, y = make_sequences(300, features="dict", random_state=1)
    X_test, y_test = X[100:], y[100:]
    rng = np.random.default_rng(0)
    halves = [[label if rng.random() < 0.5 else None for label in labels]
              for labels in y[:40]]
    partial = CRF(c2=0.1).fit(X[:40], halves).score(X_test, y_test)
    full_half = CRF(c2=0.1).fit(X[:20], y[:20]).score(X_test, y_test)
    assert partial > full_half


def test_the_objective_with_partial_sequences_against_finite_differences():
    from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood

    X, _, partial = partial_corpus()
    model = CRF(c2=0.3)
    data = model._packed_training_data(X[:12], partial[:12])
    assert any(chunk.partial for chunk in data.chunks)
    layout = model._weight_layout(data)
    objective = penalised_negative_log_likelihood(data, layout, 0.3)
    theta = np.random.default_rng(0).normal(scale=0.3, size=layout.size)
    _, gradient = objective(theta)
    rng = np.random.default_rng(1)
    for k in rng.choice(layout.size, 12, replace=False):
        step = np.zeros(layout.size)
        step[k] = 1e-6
        numeric = (objective(theta + step)[0] - objective(theta - step)[0]) / 2e-6
        assert gradient[k] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_ngd_single_sequence_and_batch_gradients_agree_on_partial_sequences():
    """Two independent kernels under the one likelihood: chain_statistics (one sequence)
    and the batched lattice."""
    X, _, partial = partial_corpus()
    model = NaturalGradientCRF(c2=0.1, max_iterations=1, random_state=0).fit(X[:20],
                                                                             partial[:20])
    sequences = model.vectorizer_.transform(X[:20])
    from sklearn_ssl_crf.utils._validation import encode_labels

    _, codes = encode_labels(partial[:20], model.classes_)
    samples = model._samples(sequences, np.arange(20), codes, unlabelled_terms=False)
    trainer = model._new_trainer(samples, np.random.default_rng(0))
    trainer.set_weights(np.random.default_rng(2).normal(size=trainer.weights()[0].shape),
                        np.random.default_rng(3).normal(size=trainer.weights()[1].shape))
    i = next(i for i in range(20) if None in partial[i])
    single = samples.gradient(trainer, np.array([i]))
    samples_batch = model._samples(sequences, np.arange(20), codes, unlabelled_terms=False)
    batch = samples_batch._batch_gradient(trainer, samples_batch._prepare_batch(np.array([i])))
    # (loss, the sequence's attributes, their state gradient, the transition gradient)
    assert single[0] == pytest.approx(batch[0], rel=1e-10)
    np.testing.assert_array_equal(single[1], batch[1])
    np.testing.assert_allclose(single[2], batch[2], atol=1e-10)
    np.testing.assert_allclose(single[3], batch[3], atol=1e-10)
    assert np.abs(single[2]).max() > 1e-3  # not a trivial agreement


@pytest.mark.parametrize("make", [
    lambda: CRFCV(c1=[0.0], c2=[0.01, 0.1], cv=3, random_state=0),
    lambda: EntropyRegularizedCRF(gamma=0.5, proportion_weight=1.0, c1=0.0, c2=0.1,
                                  early_stopping=False, semi_supervised_iterations=5),
    lambda: SelfTrainingCRF(max_rounds=2, c1=0.0, c2=0.1, early_stopping=False),
    lambda: NaturalGradientCRF(c2=0.1, max_iterations=3, batch_size=4, random_state=0),
    lambda: GraphPRCRF(graph="knn", n_neighbors=3, lam=1.0, c1=0.0, c2=0.1,
                       em_iterations=2, early_stopping=False, random_state=0),
], ids=["CRFCV", "EntropyRegularizedCRF", "SelfTrainingCRF", "NaturalGradientCRF",
        "GraphPRCRF"])
def test_every_estimator_trains_on_partial_sequences(make):
    X, y, partial = partial_corpus()
    y_train = partial[:30] + y[30:50] + [None] * 20
    model = make().fit(X[:70], y_train)
    assert None not in model.classes_
    assert model.score(X[70:], y[70:]) > 0.5
    if isinstance(model, GraphPRCRF):
        # Known labels are kept; the unknown ones are filled in.
        for labels, given in zip(model.transduction_[:30], partial[:30]):
            assert None not in labels
            assert all(g is None or g == label for label, g in zip(labels, given))


def test_cross_validation_holds_out_only_fully_labelled_sequences():
    X, y, partial = partial_corpus()
    model = CRFCV(c1=[0.0], c2=[0.1, 1.0], cv=3, random_state=0)
    labels = partial[:10] + y[10:40]
    splits = model._splits(labels)
    for train, held in splits:
        assert all(None not in labels[i] for i in held)
        assert set(range(10)) <= set(train.tolist()) or not any(
            None in labels[i] for i in range(10))
    with pytest.raises(ValueError, match="fully labelled sequences"):
        CRFCV(cv=5).fit(X[:6], partial[:3] + y[3:6])


def test_restricted_order_two_with_unreachable_known_labels_says_so():
    # Known labels two apart whose pairs were never seen with any middle label.
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}], [{"w": "a"}, {"w": "x"},
                                                              {"w": "d"}]]
    y = [["A", "B"], ["C", "D"], ["A", None, "D"]]
    with pytest.raises(ValueError, match="all_possible_transitions=True"):
        CRF(order=2, all_possible_transitions=False, max_iterations=3).fit(X, y)
    CRF(order=2, max_iterations=3).fit(X, y)  # every pair allowed: fine


def test_graph_propagation_treats_unknown_labels_as_unlabeled_tokens():
    """Propagation over a token graph does not see the sequences: a token of unknown label
    in a labelled sequence is the same as the token alone in an unlabelled sequence."""
    from sklearn_ssl_crf import GraphPropagation

    X, _, partial = partial_corpus()
    model = GraphPropagation(graph="knn", n_neighbors=5).fit(X[:20], partial[:20])
    tokens = [[token] for sequence in X[:20] for token in sequence]
    labels = [None if label is None else [label] for given in partial[:20] for label in given]
    alone = GraphPropagation(graph="knn", n_neighbors=5).fit(tokens, labels)
    assert [label for labels in model.transduction_ for label in labels] == [
        labels[0] for labels in alone.transduction_]
    assert None not in model.classes_
    for labels, given in zip(model.transduction_, partial[:20]):
        assert all(g is None or g == label for label, g in zip(labels, given))


@pytest.mark.parametrize("constraints", ["auto", None])
def test_token_entropies_are_those_of_the_marginals(constraints):
    X, y, _ = partial_corpus()
    crf = CRF(c2=0.1, max_iterations=30, constraints=constraints).fit(X[:40], y[:40])
    entropies = crf.predict_token_entropy(X[40:50])
    for h, marginals in zip(entropies, crf.predict_marginals(X[40:50], as_arrays=True)):
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = -np.where(marginals > 0, marginals * np.log(marginals), 0.0).sum(1)
        np.testing.assert_allclose(h, expected, atol=1e-10)
    assert crf.predict_token_entropy([]) == []
    assert crf.predict_marginals([], as_arrays=True) == []


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("known_share", [1.0, 0.6])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_likelihood_with_either_kernel(order, known_share, weighted):
    """The single-sequence likelihood of stochastic training (chain_statistics) is the
    batched one (chain_lattice), known labels, sample weight and label costs included."""
    rng = np.random.default_rng(7)
    n, n_labels, n_attributes = 9, 3, 5
    labels = rng.integers(0, n_labels, size=n)
    labels[rng.random(n) > known_share] = -1
    matrix = sp.csr_matrix(rng.normal(size=(n, n_attributes)))
    packed = PackedSequences(matrix, [n], labels, n_labels, order=order,
                             weights=np.array([2.5]) if weighted else None,
                             label_costs=np.array([0.0, 0.7, 1.3]))
    assert packed.partial == (known_share < 1)
    unary = packed.unary(rng.normal(size=(n_attributes, n_labels)))
    shape = (n_labels + 1, n_labels, n_labels) if order == 2 else (n_labels, n_labels)
    transition = rng.normal(size=shape)
    single = sequence_log_likelihood(packed, unary, transition)
    batched = [np.copy(part) for part in log_likelihood(packed, unary, transition)]
    assert single[0] == pytest.approx(float(batched[0]), rel=1e-12)
    np.testing.assert_allclose(single[1], batched[1], atol=1e-12)
    np.testing.assert_allclose(single[2], batched[2], atol=1e-12)
    assert abs(float(batched[0])) > 1 and np.abs(batched[2]).max() > 1e-2

"""`predict_contributions`: the contributions add up to the model's own potentials and to
the score of the labelling explained, which for the predicted labels is Viterbi's best
score under the label constraints (order 1 and 2); they are the fitted weights
(`state_features_`, `transition_features_`) times the token's attribute values."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from sklearn_ssl_crf import CRF, NaturalGradientCRF
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.inference import viterbi


def _corpus(n_sequences, random_state=0):
    """Synthetic BIO sentences as feature dicts, with a real-valued attribute ``x`` beside
    the indicators, so that contributions are values times weights, not weights alone."""
    X, y = make_sequences(n_sequences, features="dict", random_state=random_state)
    rng = np.random.default_rng(random_state)
    X = [[{**token, "x": float(rng.normal())} for token in sequence] for sequence in X]
    return X, y


X_TRAIN, Y_TRAIN = _corpus(120)
X_TEST, Y_TEST = _corpus(25, random_state=1)


@pytest.fixture(scope="module", params=[1, 2], ids=["order1", "order2"])
def crf(request):
    return CRF(c2=0.1, max_iterations=40, order=request.param).fit(X_TRAIN, Y_TRAIN)


def _unary(model, X):
    """The model's unary potentials ``X @ W`` of each sequence (its featurisation)."""
    sequences = model._transform(X)
    unary = sequences.matrix @ model.state_weights_
    return np.split(np.asarray(unary), sequences.offsets[1:-1])


def _transition_tensor(model):
    """The transition potentials of the score convention, written out from the weights:
    order 1 ``T[a, b]``; order 2 ``bigram[b, c] + trigram[a, b, c] + skip[a, c]`` (no skip
    term for ``a = S``, the start)."""
    if model.trigram_weights_ is None:
        return model.transition_weights_.copy()
    n = len(model.classes_)
    tensor = model.trigram_weights_ + model.transition_weights_[None]
    tensor[:n] += model.skip_weights_[:, None, :]
    return tensor


# A penalty no allowed labelling comes near; the single-chain `viterbi` takes finite
# potentials only.
FORBIDDEN = -1e6


def _constrained(model, unary, transition):
    """Potentials with what ``constraints_`` forbids at `FORBIDDEN`."""
    constraints = model.constraints_
    unary, transition = unary.copy(), transition.copy()
    if constraints is not None:
        transition[..., ~constraints.transitions] = FORBIDDEN
        unary[0] += FORBIDDEN * ~constraints.starts
        unary[-1] += FORBIDDEN * ~constraints.ends
    return unary, transition


def _path_score(unary, transition, path):
    score = unary[np.arange(len(path)), path].sum()
    if transition.ndim == 2:
        return score + transition[path[:-1], path[1:]].sum()
    n = transition.shape[1]
    if len(path) > 1:
        score += transition[n, path[0], path[1]]
    return score + transition[path[:-2], path[1:-1], path[2:]].sum()


def _codes(model, labels):
    index = {label: k for k, label in enumerate(model.classes_)}
    return np.array([index[label] for label in labels])


def _attribute_values(token, attributes):
    """sklearn-crfsuite's attributes of a feature dict: ``key:value`` for str values,
    ``key`` for True and numbers (value 1 or the number); those the model knows."""
    values = {}
    for key, value in token.items():
        if isinstance(value, str):
            values[f"{key}:{value}"] = 1.0
        elif value is True:
            values[key] = 1.0
        else:
            values[key] = float(value)
    return {name: value for name, value in values.items() if name in attributes}


# -- the oracles ------------------------------------------------------------------------


def test_contributions_sum_to_the_unary_potentials(crf):
    explained = crf.predict_contributions(X_TEST, as_arrays=True)
    for arrays, unary in zip(explained, _unary(crf, X_TEST)):
        totals = np.zeros_like(unary)
        np.add.at(totals, arrays.tokens, arrays.state)
        np.testing.assert_allclose(totals, unary, rtol=1e-12, atol=1e-12)
    tokens = crf.predict_contributions(X_TEST)
    for sequence, unary in zip(tokens, _unary(crf, X_TEST)):
        path = _codes(crf, [token["label"] for token in sequence])
        np.testing.assert_allclose([token["state"] for token in sequence],
                                   unary[np.arange(len(path)), path], rtol=1e-12, atol=1e-12)
        # zeros are left out of the lists, nothing else
        np.testing.assert_allclose([sum(c for _, c in token["attributes"])
                                    for token in sequence],
                                   [token["state"] for token in sequence], atol=1e-12)


@pytest.mark.parametrize("constraints", ["auto", None, {"starts": ["O"], "ends": ["O"]}],
                         ids=["bio", "none", "starts-ends-O"])
def test_predicted_path_score_is_the_viterbi_best(crf, constraints):
    model = crf if constraints == "auto" else CRF(**{
        **crf.get_params(), "constraints": constraints}).fit(X_TRAIN, Y_TRAIN)
    assert (model.constraints_ is None) == (constraints is None)
    transition = _transition_tensor(model)
    explained = model.predict_contributions(X_TEST)
    assert [[token["label"] for token in s] for s in explained] == model.predict(X_TEST)
    for sequence, unary in zip(explained, _unary(model, X_TEST)):
        path, best = viterbi(*_constrained(model, unary, transition))
        assert [token["label"] for token in sequence] == [model.classes_[k] for k in path]
        total = sum(token["state"] + token["transition"] for token in sequence)
        assert total == pytest.approx(best, rel=1e-12, abs=1e-10)
        assert total == pytest.approx(_path_score(unary, transition, path), abs=1e-10)


def test_constrained_paths_are_explained_with_their_own_scores(crf):
    # Every label sequence must start and end with O: the explained paths are those, and
    # where the free model would start otherwise, the constrained best is lower.
    free = CRF(**{**crf.get_params(), "constraints": None}).fit(X_TRAIN, Y_TRAIN)
    bound = CRF(**{**crf.get_params(), "constraints": {"starts": ["O"], "ends": ["O"]}})
    bound.fit(X_TRAIN, Y_TRAIN)
    free_paths, bound_paths = (
        [sum(t["state"] + t["transition"] for t in s) for s in m.predict_contributions(X_TEST)]
        for m in (free, bound))
    starts = [s[0] for s in free.predict(X_TEST)]
    assert any(label != "O" for label in starts)
    for label, free_score, bound_score in zip(starts, free_paths, bound_paths):
        if label != "O":
            assert bound_score < free_score
        assert bound_score <= free_score + 1e-10
    assert all(s[0] == s[-1] == "O" for s in bound.predict(X_TEST))


def test_known_labels_fix_the_path_explained(crf):
    rng = np.random.default_rng(0)
    known = [[label if rng.random() < 0.3 else None for label in labels] for labels in Y_TEST]
    explained = crf.predict_contributions(X_TEST, known_labels=known)
    labels = [[token["label"] for token in s] for s in explained]
    assert labels == crf.predict(X_TEST, known_labels=known)
    transition = _transition_tensor(crf)
    for sequence, unary, fixed in zip(explained, _unary(crf, X_TEST), known):
        unary, bound = _constrained(crf, unary, transition)
        for t, label in enumerate(fixed):
            if label is not None:
                unary[t] += FORBIDDEN * (np.arange(len(crf.classes_)) != crf.classes_.index(label))
        _, best = viterbi(unary, bound)
        total = sum(token["state"] + token["transition"] for token in sequence)
        assert total == pytest.approx(best, rel=1e-12, abs=1e-10)


def test_contributions_are_values_times_the_fitted_weights(crf):
    """Against the dicts and `state_features_` / `transition_features_`, not the
    matrices: the gold labels' contributions."""
    explained = crf.predict_contributions(X_TEST, Y_TEST)
    state_weights, transition_weights = crf.state_features_, crf.transition_features_
    attributes = set(crf.attributes_)
    for sequence, tokens, labels in zip(explained, X_TEST, Y_TEST):
        for t, (token, features, label) in enumerate(zip(sequence, tokens, labels)):
            assert token["label"] == label
            expected = {name: value * state_weights.get((name, label), 0.0)
                        for name, value in _attribute_values(features, attributes).items()}
            expected = {name: c for name, c in expected.items() if c != 0}
            assert dict(token["attributes"]) == pytest.approx(expected, rel=1e-12)
            assert len(token["attributes"]) == len(expected)
            keys = [key for key, _ in token["transition_features"]]
            if crf.order == 1:
                assert keys == ([] if t == 0 else [(labels[t - 1], label)])
            elif t == 0:
                assert keys == []
            elif t == 1:
                assert keys == [(labels[0], label), (None, labels[0], label)]
            else:
                assert keys == [(labels[t - 1], label), (labels[t - 2], labels[t - 1], label),
                                (labels[t - 2], None, label)]
            for key, weight in token["transition_features"]:
                assert weight == transition_weights.get(key, 0.0)
            assert token["transition"] == pytest.approx(
                sum(w for _, w in token["transition_features"]), abs=1e-12)


def test_gold_labels_sum_to_their_score(crf):
    transition = _transition_tensor(crf)
    explained = crf.predict_contributions(X_TEST, Y_TEST)
    for sequence, unary, labels in zip(explained, _unary(crf, X_TEST), Y_TEST):
        total = sum(token["state"] + token["transition"] for token in sequence)
        assert total == pytest.approx(
            _path_score(unary, transition, _codes(crf, labels)), rel=1e-12, abs=1e-10)


def test_arrays_hold_every_label_and_agree_with_the_lists(crf):
    lists = crf.predict_contributions(X_TEST)
    arrays = crf.predict_contributions(X_TEST, as_arrays=True)
    transition = _transition_tensor(crf)
    n = len(crf.classes_)
    names = np.asarray(crf.attributes_, dtype=object)
    for sequence, array, unary in zip(lists, arrays, _unary(crf, X_TEST)):
        assert array.state.shape == (len(array.tokens), n)
        assert array.transition.shape == (len(sequence), n)
        assert [crf.classes_[k] for k in array.labels] == [t["label"] for t in sequence]
        path = array.labels
        # every label's transition weights, given the path's previous labels
        for t in range(1, len(path)):
            before = n if t == 1 else path[t - 2]
            expected = transition[path[t - 1]] if transition.ndim == 2 else \
                transition[before, path[t - 1]]
            np.testing.assert_allclose(array.transition[t], expected, atol=1e-12)
        np.testing.assert_array_equal(array.transition[0], 0.0)
        np.testing.assert_allclose(array.transition[np.arange(len(path)), path],
                                   [t["transition"] for t in sequence], atol=1e-12)
        own = array.state[np.arange(len(array.tokens)), path[array.tokens]]
        for t, token in enumerate(sequence):
            mine = own[array.tokens == t]
            listed = dict(zip(names[array.attributes[array.tokens == t]], mine))
            assert {k: v for k, v in listed.items() if v != 0} == dict(token["attributes"])
        # the dense form (tokens x attributes present x labels) of the user guide
        present, column = np.unique(array.attributes, return_inverse=True)
        dense = np.zeros((len(path), present.size, n))
        dense[array.tokens, column] = array.state
        np.testing.assert_allclose(dense.sum(axis=1), unary, atol=1e-12)


def test_top_lists_the_largest_contributions_first(crf):
    full = crf.predict_contributions(X_TEST)
    short = crf.predict_contributions(X_TEST, top=2)
    for whole, cut in zip(full, short):
        for token, first in zip(whole, cut):
            sizes = np.abs([c for _, c in token["attributes"]])
            assert np.all(np.diff(sizes) <= 0)
            assert first["attributes"] == token["attributes"][:2]
            assert first["state"] == token["state"]  # still every attribute's sum
    assert max(len(token["attributes"]) for s in full for token in s) > 2


def test_matrix_input_names_attributes_by_column():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 8, size=40)
    X = [sp.csr_matrix(rng.normal(size=(n, 6)) * (rng.random((n, 6)) < 0.6))
         for n in lengths]
    y = [["A" if row[0] > 0 else "B" for row in x.toarray()] for x in X]
    model = CRF(c2=0.1, max_iterations=30).fit(X, y)
    assert model.attributes_ == list(range(6))
    explained = model.predict_contributions(X[:10], top=3)
    transition = _transition_tensor(model)
    for sequence, x in zip(explained, X[:10]):
        dense = x.toarray()
        path = _codes(model, [token["label"] for token in sequence])
        for t, token in enumerate(sequence):
            assert len(token["attributes"]) <= 3
            for column, contribution in token["attributes"]:
                assert isinstance(column, int)
                assert contribution == pytest.approx(
                    dense[t, column] * model.state_weights_[column, path[t]], rel=1e-12)
        unary = dense @ model.state_weights_
        _, best = viterbi(*_constrained(model, unary, transition))
        assert sum(t["state"] + t["transition"] for t in sequence) == pytest.approx(best)
    # dense per-sequence arrays are matrices too
    arrays = model.predict_contributions([X[0].toarray()], as_arrays=True)[0]
    np.testing.assert_array_equal(arrays.attributes, X[0].indices)


def test_empty_input_and_empty_sequences(crf):
    assert crf.predict_contributions([]) == []
    assert crf.predict_contributions([], as_arrays=True) == []
    explained = crf.predict_contributions([[], X_TEST[0], []])
    assert explained[0] == explained[2] == []
    assert explained[1] == crf.predict_contributions([X_TEST[0]])[0]
    arrays = crf.predict_contributions([[], X_TEST[0]], as_arrays=True)
    assert arrays[0].state.shape == (0, len(crf.classes_))
    assert arrays[0].transition.shape == (0, len(crf.classes_))


def test_every_sequence_estimator_explains():
    model = NaturalGradientCRF(max_iterations=2, random_state=0).fit(X_TRAIN[:30],
                                                                       Y_TRAIN[:30])
    explained = model.predict_contributions(X_TEST[:3])
    assert [[t["label"] for t in s] for s in explained] == model.predict(X_TEST[:3])


def test_the_callers_data_is_not_changed(crf):
    X = [[dict(token) for token in s] for s in X_TEST[:5]]
    y = [list(labels) for labels in Y_TEST[:5]]
    crf.predict_contributions(X, y, top=1)
    assert X == X_TEST[:5] and y == Y_TEST[:5]


# -- errors -----------------------------------------------------------------------------


def test_errors(crf):
    X, y = X_TEST[:2], Y_TEST[:2]
    with pytest.raises(ValueError, match=r"y\[1\]\[0\] is 'B-ZZZ', not one of the model's "):
        crf.predict_contributions(X, [y[0], ["B-ZZZ"] + y[1][1:]])
    with pytest.raises(ValueError, match=f"sequence 0 has {len(y[0])} tokens but y\\[0\\] "
                                         f"has {len(y[0]) - 1} labels"):
        crf.predict_contributions(X, [y[0][1:], y[1]])
    with pytest.raises(ValueError, match="X has 2 sequences but y has 1"):
        crf.predict_contributions(X, y[:1])
    with pytest.raises(TypeError, match="y must be a list of label sequences"):
        crf.predict_contributions(X, "O")
    with pytest.raises(TypeError, match=r"y\[0\] must be a list of labels"):
        crf.predict_contributions(X, [None, y[1]])
    with pytest.raises(TypeError, match=r"y\[1\] must be a list of labels, got str"):
        crf.predict_contributions(X, [y[0], "O"])
    with pytest.raises(ValueError, match=r"y\[0\]\[0\] is \['O'\]"):
        crf.predict_contributions(X, [[["O"]] * len(y[0]), y[1]])
    with pytest.raises(ValueError, match="with y given"):
        crf.predict_contributions(X, y, known_labels=[None, None])
    with pytest.raises(ValueError, match="top must be a positive int"):
        crf.predict_contributions(X, top=0)
    with pytest.raises(TypeError, match="top must be a positive int or None, got float"):
        crf.predict_contributions(X, top=2.0)
    with pytest.raises(TypeError, match="got bool"):
        crf.predict_contributions(X, top=True)
    with pytest.raises(ValueError, match="as_arrays=True returns every attribute"):
        crf.predict_contributions(X, top=3, as_arrays=True)
    with pytest.raises(ValueError, match=r"known_labels\[0\]\[0\] is 'B-ZZZ'"):
        crf.predict_contributions(X, known_labels=[["B-ZZZ"] * len(y[0]), None])
    with pytest.raises(NotFittedError):
        CRF().predict_contributions(X)


def test_order_two_with_the_label_pairs_seen_only():
    # allowed_transitions_ rules triples out (-inf potentials): the path explained is the
    # best among the allowed ones, and its contributions are finite weights.
    model = CRF(c2=0.1, max_iterations=40, order=2, all_possible_transitions=False)
    model.fit(X_TRAIN, Y_TRAIN)
    assert model.allowed_transitions_ is not None and not model.allowed_transitions_.all()
    transition = _transition_tensor(model)
    transition[~model.allowed_transitions_] = FORBIDDEN
    for sequence, unary in zip(model.predict_contributions(X_TEST), _unary(model, X_TEST)):
        _, best = viterbi(*_constrained(model, unary, transition))
        total = sum(token["state"] + token["transition"] for token in sequence)
        assert total == pytest.approx(best, rel=1e-12, abs=1e-10)

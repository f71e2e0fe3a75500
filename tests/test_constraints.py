"""Label constraints and known labels: the scheme rules against an independent reading of
the schemes, constrained Viterbi, marginals and entropies against enumeration of the allowed
label sequences (order 1 and 2, several chains packed together), and the estimators'
wiring."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from enumeration_oracles import span_entropy
from scipy.special import logsumexp

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
)
from sklearn_ssl_crf.estimators._label_constraints import known_label_mask, resolve_constraints
from sklearn_ssl_crf.inference import ChainLayout, chain_lattice, viterbi_batch
from sklearn_ssl_crf.inference.entropy import position_entropies

BIO = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
IOBES = ["O", "B-X", "I-X", "E-X", "S-X", "S-Y"]
BILOU = ["O", "B-X", "I-X", "L-X", "U-X", "U-Y"]


def follows_scheme(labels, scheme):
    """Whether a label sequence is valid, read label by label (not from tables)."""
    previous = None  # (prefix, type) of the previous label
    for label in labels:
        prefix, _, kind = label.partition("-")
        prefix = {"L": "E", "U": "S"}.get(prefix, prefix)
        is_open = previous is not None and previous[0] in ("B", "I")
        if scheme == "bio":
            if prefix == "I" and not (is_open and previous[1] == kind):
                return False
        elif prefix in ("I", "E"):
            if not (is_open and previous[1] == kind):
                return False
        elif is_open:
            return False
        previous = (prefix, kind)
    return scheme == "bio" or previous is None or previous[0] not in ("B", "I")


def codes_of(sequences, classes):
    index = {label: i for i, label in enumerate(classes)}
    codes = np.array([index[label] for labels in sequences for label in labels], dtype=int)
    return codes, np.array([len(labels) for labels in sequences])


@pytest.mark.parametrize("scheme, classes", [("bio", BIO), ("iobes", IOBES),
                                             ("bilou", BILOU)])
def test_scheme_rules_match_the_schemes(scheme, classes):
    constraints = resolve_constraints(scheme, classes, *codes_of([], classes))
    assert constraints.scheme == scheme
    for n in (1, 2, 3):
        for labels in itertools.product(classes, repeat=n):
            codes, lengths = codes_of([labels], classes)
            allowed = constraints.first_violation(codes, lengths) is None
            assert allowed == follows_scheme(labels, scheme), labels


def test_auto_detects_the_scheme_only_when_the_training_labels_follow_it():
    valid = [["B-NP", "I-NP", "O"], ["O", "B-VP"]]
    classes = ["B-NP", "I-NP", "O", "B-VP"]
    assert resolve_constraints("auto", classes, *codes_of(valid, classes)).scheme == "bio"
    # IOB1 puts I- after O: no constraints under 'auto', an error when BIO is asked for.
    iob1 = [["I-NP", "I-NP", "O"], ["O", "I-VP"]]
    classes = ["I-NP", "O", "I-VP"]
    assert resolve_constraints("auto", classes, *codes_of(iob1, classes)) is None
    with pytest.raises(ValueError, match="sequence 0 breaks the BIO scheme at position 0"):
        resolve_constraints("bio", classes, *codes_of(iob1, classes))
    pos = [["NOUN", "VERB"]]
    assert resolve_constraints("auto", ["NOUN", "VERB"], *codes_of(pos, ["NOUN", "VERB"])) is None
    mixed = ["B-X", "I-X", "E-X", "L-X"]  # IOBES and BILOU prefixes together: no scheme
    assert resolve_constraints("auto", mixed, np.zeros(0, int), np.zeros(0, int)) is None
    assert resolve_constraints(None, classes, *codes_of(iob1, classes)) is None


def test_auto_warns_when_a_few_sequences_break_the_scheme_the_labels_carry():
    # One I-NP at a sentence start among 30 BIO sentences: a labelling error, not IOB1.
    classes = ["B-NP", "I-NP", "O"]
    sentences = [["B-NP", "I-NP", "O"]] * 29
    sentences.insert(17, ["I-NP", "O", "O"])
    with pytest.warns(UserWarning, match=r"labels are BIO tags, but 1 of the 30 labelled "
                      r"sequences break the scheme \(the first: labelled sequence 17, "
                      r"position 0\), so no constraints are applied"):
        assert resolve_constraints("auto", classes, *codes_of(sentences, classes)) is None
    # Four of 30 (more than a tenth) is another scheme, as IOB1: nothing to say.
    iob1 = [["I-NP", "O", "O"]] * 4 + [["B-NP", "I-NP", "O"]] * 26
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_constraints("auto", classes, *codes_of(iob1, classes)) is None


@pytest.mark.parametrize("classes", [["b-NP", "i-NP", "o"], ["B_NP", "I_NP", "O"],
                                     ["b_NP", "i_NP", "O"]])
def test_auto_reads_other_spellings_of_the_schemes(classes):
    begin, inside, outside = classes
    sentences = [[begin, inside, outside], [outside, begin]]
    constraints = resolve_constraints("auto", classes, *codes_of(sentences, classes))
    assert constraints.scheme == "bio"
    # Inside may follow begin and itself only; it never starts a sequence.
    assert constraints.transitions[:, 1].tolist() == [True, True, False]
    assert constraints.starts.tolist() == [True, False, True]
    X = [[{"w": "a"}, {"w": "b"}, {"w": "c"}], [{"w": "c"}, {"w": "a"}]]
    assert CRF(c2=0.1).fit(X, sentences).constraints_.scheme == "bio"


def test_given_constraints_and_their_errors():
    classes = ["A", "B", "C"]
    empty = (np.zeros(0, int), np.zeros(0, int))
    given = resolve_constraints({"transitions": [("A", "B"), ("B", "C")], "starts": ["A"]},
                                classes, *empty)
    assert given.transitions.tolist() == [[False, True, False], [False, False, True],
                                          [False, False, False]]
    assert given.starts.tolist() == [True, False, False] and given.ends.all()
    with pytest.raises(ValueError, match="unknown keys"):
        resolve_constraints({"start": ["A"]}, classes, *empty)
    with pytest.raises(ValueError, match="names label 'D'"):
        resolve_constraints({"ends": ["D"]}, classes, *empty)
    with pytest.raises(ValueError, match="'starts'.* is empty"):
        resolve_constraints({"starts": []}, classes, *empty)
    with pytest.raises(TypeError, match="pairs"):
        resolve_constraints({"transitions": ["AB"]}, classes, *empty)
    with pytest.raises(ValueError, match="constraints must be"):
        resolve_constraints("iob9", classes, *empty)
    with pytest.raises(ValueError, match="label 'A' is not a BIO label"):
        resolve_constraints("bio", classes, *empty)


def enumerate_chain(unary, transition, allowed):
    """Best allowed sequence, node marginals and entropy of one chain by enumeration;
    ``allowed(path)`` says whether a path may occur."""
    n, n_labels = unary.shape
    paths, scores = [], []
    for path in itertools.product(range(n_labels), repeat=n):
        if not allowed(path):
            continue
        score = unary[np.arange(n), path].sum()
        for t in range(1, n):
            if transition.ndim == 2:
                score += transition[path[t - 1], path[t]]
            else:
                score += transition[n_labels if t == 1 else path[t - 2], path[t - 1], path[t]]
        paths.append(path)
        scores.append(score)
    scores = np.array(scores)
    p = np.exp(scores - logsumexp(scores))
    node = np.zeros((n, n_labels))
    for path, probability in zip(paths, p):
        node[np.arange(n), path] += probability
    return paths[int(np.argmax(scores))], node, -(p * np.log(p)).sum()


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("scheme, classes", [("bio", BIO[:3] + ["B-VP"]),
                                             ("iobes", IOBES[:5])])
@pytest.mark.parametrize("seed", range(4))
def test_constrained_kernels_match_enumeration(order, scheme, classes, seed):
    rng = np.random.default_rng(seed)
    n_labels = len(classes)
    constraints = resolve_constraints(scheme, classes, np.zeros(0, int), np.zeros(0, int))
    lengths = [4, 1, 3, 2]
    layout = ChainLayout(lengths)
    unary = rng.normal(scale=2.0, size=(sum(lengths), n_labels))
    shape = (n_labels, n_labels) if order == 1 else (n_labels + 1, n_labels, n_labels)
    transition = rng.normal(scale=2.0, size=shape)
    # Known labels: the second token of the first chain; they must leave some labelling.
    known = np.ones(unary.shape, dtype=bool)
    known[1] = False
    known[1, 0] = True  # "O"
    packed = unary[layout.order].copy()
    packed[~known[layout.order]] = -np.inf
    packed, constrained = constraints.apply(packed, transition, layout)
    assert np.isfinite(transition).all()  # the caller's transition is not changed
    paths, best = viterbi_batch(packed, constrained, layout)
    lattice = chain_lattice(packed, constrained, layout)
    node = np.empty_like(unary)
    node[layout.order] = lattice.node_marginals()
    labels = np.empty(len(unary), dtype=int)
    labels[layout.order] = paths
    entropy = layout.per_sequence_sum(position_entropies(lattice)[2])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for i, (start, stop) in enumerate(zip(offsets[:-1], offsets[1:])):
        def allowed(path, start=start, stop=stop):
            return (follows_scheme([classes[c] for c in path], scheme)
                    and all(known[start + t, c] for t, c in enumerate(path)))
        best_path, marginals, expected_entropy = enumerate_chain(
            unary[start:stop], transition, allowed)
        assert labels[start:stop].tolist() == list(best_path)
        np.testing.assert_allclose(node[start:stop], marginals, atol=1e-10)
        np.testing.assert_allclose(entropy[i], expected_entropy, atol=1e-9)


def toy_bio():
    X = [[{"w": "new"}, {"w": "york"}], [{"w": "in"}, {"w": "paris"}],
         [{"w": "york"}, {"w": "is"}], [{"w": "to"}, {"w": "new"}, {"w": "york"}]]
    y = [["B-LOC", "I-LOC"], ["O", "B-LOC"], ["B-LOC", "O"], ["O", "B-LOC", "I-LOC"]]
    X_test = [[{"w": "in"}, {"w": "york"}], [{"w": "york"}], [{"w": "to"}, {"w": "york"},
                                                              {"w": "york"}]]
    return X, y, X_test


def model_enumeration(crf, xseq, known=None):
    """Best allowed labels and marginals of one sequence from a fitted order-1 CRF's
    weights, by enumeration."""
    matrix = crf.vectorizer_.transform([xseq]).matrix
    unary = np.asarray(matrix @ crf.state_weights_)
    classes = list(crf.classes_)
    scheme = crf.constraints_.scheme if crf.constraints_ is not None else None

    def allowed(path):
        labels = [classes[c] for c in path]
        return ((scheme is None or follows_scheme(labels, scheme))
                and (known is None or all(k is None or k == label
                                          for k, label in zip(known, labels))))
    best, node, _ = enumerate_chain(unary, crf.transition_weights_, allowed)
    return [classes[c] for c in best], node


def test_crf_predicts_the_best_valid_sequence():
    X, y, X_test = toy_bio()
    free = CRF(c2=0.01, constraints=None).fit(X, y)
    assert free.constraints_ is None
    unconstrained = free.predict(X_test)
    # The point of the feature: the free model puts I-LOC after O.
    assert not all(follows_scheme(labels, "bio") for labels in unconstrained)
    crf = CRF(c2=0.01).fit(X, y)
    assert crf.constraints_.scheme == "bio"
    np.testing.assert_array_equal(crf.state_weights_, free.state_weights_)
    predicted = crf.predict(X_test)
    marginals = crf.predict_marginals(X_test, as_arrays=True)
    for xseq, labels, node in zip(X_test, predicted, marginals):
        best, expected = model_enumeration(crf, xseq)
        assert labels == best
        np.testing.assert_allclose(node, expected, atol=1e-10)
    assert crf.predict_single(X_test[0]) == predicted[0]
    # The unconstrained model's predictions are the free Viterbi path.
    free_best = model_enumeration(free, X_test[0])[0]
    assert unconstrained[0] == free_best


def test_span_entropies_within_the_scheme_match_enumeration():
    X, y, X_test = toy_bio()
    crf = CRF(c2=0.01).fit(X, y)
    xseq = X_test[2]
    unary = np.asarray(crf.vectorizer_.transform([xseq]).matrix @ crf.state_weights_)
    classes = list(crf.classes_)
    paths, scores = [], []
    for path in itertools.product(range(len(classes)), repeat=len(xseq)):
        if follows_scheme([classes[c] for c in path], "bio"):
            paths.append(path)
            scores.append(unary[np.arange(len(path)), path].sum() + sum(
                crf.transition_weights_[a, b] for a, b in zip(path, path[1:])))
    p = np.exp(np.array(scores) - logsumexp(scores))
    paths = np.array(paths)
    spans = [(0, 2), (1, 3), (0, 3), (2, 3)]
    got = crf.predict_subsequence_entropy([xseq], [spans])[0]
    np.testing.assert_allclose(got, [span_entropy(paths, p, a, b) for a, b in spans],
                               atol=1e-10)
    assert crf.predict_entropy([xseq])[0] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-10)


def test_known_labels_against_enumeration():
    X, y, X_test = toy_bio()
    crf = CRF(c2=0.01).fit(X, y)
    known = [[None, "B-LOC"], None, ["O", None, "I-LOC"]]
    predicted = crf.predict(X_test, known_labels=known)
    marginals = crf.predict_marginals(X_test, known_labels=known, as_arrays=True)
    for xseq, fixed, labels, node in zip(X_test, known, predicted, marginals):
        best, expected = model_enumeration(crf, xseq, fixed)
        assert labels == best
        np.testing.assert_allclose(node, expected, atol=1e-10)
        for t, label in enumerate(fixed or []):
            if label is not None:
                assert labels[t] == label
    dicts = crf.predict_marginals_single(X_test[0], known_labels=known[0])
    assert dicts[1]["B-LOC"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="known_labels\\[0\\] must hold 2 labels"):
        crf.predict(X_test, known_labels=[["O"], None, None])
    with pytest.raises(ValueError, match="known_labels\\[1\\]\\[0\\] is 'PER'"):
        crf.predict(X_test, known_labels=[None, ["PER"], None])
    with pytest.raises(ValueError, match="3 entries for 2 sequences"):
        crf.predict(X_test[:2], known_labels=known)
    with pytest.raises(TypeError, match="one entry per sequence"):
        crf.predict(X_test, known_labels="O")
    # I-LOC after a known O: no labelling is allowed.
    with pytest.raises(ValueError, match="sequence 0 has no labelling"):
        crf.predict(X_test, known_labels=[["O", "I-LOC"], None, None])
    with pytest.raises(ValueError, match="sequence 1 has no labelling"):
        crf.predict_marginals(X_test, known_labels=[None, ["I-LOC"], None])


def test_given_constraints_in_an_estimator():
    X, y, X_test = toy_bio()
    crf = CRF(c2=0.01, constraints={"starts": ["O"]}).fit(X, y)
    assert crf.constraints_.scheme is None
    assert all(labels[0] == "O" for labels in crf.predict(X_test))
    with pytest.raises(ValueError, match="names label 'B-PER'"):
        CRF(constraints={"ends": ["B-PER"]}).fit(X, y)


def test_second_order_constrained_prediction_matches_enumeration():
    X, y, X_test = toy_bio()
    for all_possible in (True, False):
        crf = CRF(order=2, c2=0.01, all_possible_transitions=all_possible).fit(X, y)
        transition = crf._transition_potentials()
        for xseq, labels in zip(X_test, crf.predict(X_test)):
            unary = np.asarray(crf.vectorizer_.transform([xseq]).matrix @ crf.state_weights_)
            classes = list(crf.classes_)

            def allowed(path):
                return follows_scheme([classes[c] for c in path], "bio") and all(
                    np.isfinite(transition[len(classes) if t == 1 else path[t - 2],
                                           path[t - 1], path[t]])
                    for t in range(1, len(path)))
            best, _, _ = enumerate_chain(unary, transition, allowed)
            assert labels == [classes[c] for c in best]


def invalid_count(predictions):
    return sum(not follows_scheme(labels, "bio") for labels in predictions)


@pytest.mark.parametrize("make", [
    lambda: CRFCV(c1=[0.0], c2=[0.01]),
    lambda: EntropyRegularizedCRF(gamma=0.5, proportion_weight=0.0, c1=0.0, c2=0.01,
                                  early_stopping=False, semi_supervised_iterations=5),
    lambda: SelfTrainingCRF(max_rounds=2, c1=0.0, c2=0.01, early_stopping=False),
    lambda: NaturalGradientCRF(c2=0.01, max_iterations=5, random_state=0),
    lambda: GraphPRCRF(graph="knn", n_neighbors=2, lam=1.0, c1=0.0, c2=0.01,
                       em_iterations=2, early_stopping=False, random_state=0),
], ids=["CRFCV", "EntropyRegularizedCRF", "SelfTrainingCRF", "NaturalGradientCRF",
        "GraphPRCRF"])
def test_every_estimator_keeps_to_the_scheme(make):
    X, y, X_test = toy_bio()
    X_all, y_all = X + X_test, y + [None] * len(X_test)
    free = make().set_params(constraints=None).fit(X_all, y_all)
    model = make().fit(X_all, y_all)
    assert free.constraints_ is None and model.constraints_.scheme == "bio"
    assert invalid_count(model.predict(X_test)) == 0
    for labels, node in zip(model.predict(X_test),
                            model.predict_marginals(X_test, as_arrays=True)):
        # The marginals give no mass to an I- label that cannot continue a span.
        for t, label in enumerate(labels):
            assert node[t, list(model.classes_).index(label)] > 0
    assert np.isfinite(model.predict_entropy(X_test)).all()


def test_constraints_survive_pickling_and_clone():
    from sklearn.base import clone

    X, y, X_test = toy_bio()
    crf = CRF(c2=0.01, constraints="bio").fit(X, y)
    restored = pickle.loads(pickle.dumps(crf))
    assert restored.predict(X_test) == crf.predict(X_test)
    assert clone(crf).get_params()["constraints"] == "bio"
    assert "scheme='bio'" in repr(crf.constraints_)


def test_known_label_mask():
    mask = known_label_mask([None, ["B", None]], [1, 2], ["A", "B"])
    assert mask.tolist() == [[True, True], [False, True], [True, True]]
    assert known_label_mask([None, [None, None]], [1, 2], ["A", "B"]) is None

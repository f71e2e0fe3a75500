"""Tests for sklearn_ssl_crf.metrics.

Span scores are checked against a reference written here as a line-by-line port of the
counting loop of conlleval (version 2004-01-26): one token at a time, with the perl script's
endOfChunk/startOfChunk as explicit if-chains. It shares no code with the vectorised module.
"""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as sk_metrics
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold, cross_validate

from sklearn_ssl_crf.metrics import (
    SCORERS,
    flat_accuracy_score,
    flat_accuracy_scorer,
    flat_classification_report,
    flat_f1_score,
    flat_f1_scorer,
    flat_fbeta_score,
    flat_precision_score,
    flat_recall_score,
    make_sequence_scorer,
    sequence_accuracy_score,
    sequence_accuracy_scorer,
    span_classification_report,
    span_f1_score,
    span_f1_scorer,
    span_precision_recall_f1,
)
from sklearn_ssl_crf.utils._sequences import SequenceMatrix

# ---------------------------------------------------------------------------------------------
# Reference: conlleval, token by token


def end_of_chunk(prev_tag, tag, prev_type, type_, iobes):
    end = False
    if prev_tag == "B" and tag == "B":
        end = True
    if prev_tag == "B" and tag == "O":
        end = True
    if prev_tag == "I" and tag == "B":
        end = True
    if prev_tag == "I" and tag == "O":
        end = True
    if prev_tag == "E" and tag == "E":
        end = True
    if prev_tag == "E" and tag == "I":
        end = True
    if prev_tag == "E" and tag == "O":
        end = True
    if iobes:
        if prev_tag == "B" and tag == "S":
            end = True
        if prev_tag == "I" and tag == "S":
            end = True
        if prev_tag == "E" and tag in ("S", "B"):
            end = True
        if prev_tag == "S" and tag in ("B", "I", "E", "S", "O"):
            end = True
    if prev_tag != "O" and prev_tag != "." and prev_type != type_:
        end = True
    if prev_tag == "]" or prev_tag == "[":
        end = True
    return end


def start_of_chunk(prev_tag, tag, prev_type, type_, iobes):
    start = False
    if prev_tag == "B" and tag == "B":
        start = True
    if prev_tag == "I" and tag == "B":
        start = True
    if prev_tag == "O" and tag == "B":
        start = True
    if prev_tag == "O" and tag == "I":
        start = True
    if prev_tag == "E" and tag == "E":
        start = True
    if prev_tag == "E" and tag == "I":
        start = True
    if prev_tag == "O" and tag == "E":
        start = True
    if iobes:
        if prev_tag in ("B", "I", "O", "E", "S") and tag == "S":
            start = True
        if prev_tag in ("E", "S") and tag == "B":
            start = True
        if prev_tag == "S" and tag in ("I", "E"):
            start = True
    if tag != "O" and tag != "." and prev_type != type_:
        start = True
    if tag == "[" or tag == "]":
        start = True
    return start


def split_tag(label):
    """conlleval's regex ^([^-]*)-(.*)$, then Perl's truth test of the type ("0" is false)."""
    if "-" in label:
        i = label.index("-")
        tag, type_ = label[:i], label[i + 1:]
    else:
        tag, type_ = label, ""
    return tag, ("" if type_ == "0" else type_)


def conlleval_counts(y_true, y_pred, iobes=False):
    """{type: [n_true, n_pred, n_correct]}, reading the input as a conlleval file would be:
    tokens, then an empty line (tag "O") after each sentence."""
    lines = []
    for true_seq, pred_seq in zip(y_true, y_pred):
        lines.extend(zip(true_seq, pred_seq))
        lines.append(("O", "O"))
    counts = {}
    in_correct = False
    last_correct, last_correct_type = "O", ""
    last_guessed, last_guessed_type = "O", ""
    for true_label, pred_label in lines:
        correct, correct_type = split_tag(true_label)
        guessed, guessed_type = split_tag(pred_label)
        end_c = end_of_chunk(last_correct, correct, last_correct_type, correct_type, iobes)
        end_g = end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type, iobes)
        start_c = start_of_chunk(last_correct, correct, last_correct_type, correct_type, iobes)
        start_g = start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type, iobes)
        if in_correct:
            if end_c and end_g and last_guessed_type == last_correct_type:
                in_correct = False
                counts.setdefault(last_correct_type, [0, 0, 0])[2] += 1
            elif end_c != end_g or guessed_type != correct_type:
                in_correct = False
        if start_c and start_g and guessed_type == correct_type:
            in_correct = True
        if start_c:
            counts.setdefault(correct_type, [0, 0, 0])[0] += 1
        if start_g:
            counts.setdefault(guessed_type, [0, 0, 0])[1] += 1
        last_correct, last_correct_type = correct, correct_type
        last_guessed, last_guessed_type = guessed, guessed_type
    if in_correct:
        counts.setdefault(last_correct_type, [0, 0, 0])[2] += 1
    return counts


def chunk_set(tags, iobes):
    """(type, first, last) of every chunk of one sequence, by the same start/end rules."""
    chunks, first = set(), None
    prev_tag, prev_type = "O", ""
    for i, label in enumerate(list(tags) + ["O"]):
        tag, type_ = split_tag(label)
        if first is not None and end_of_chunk(prev_tag, tag, prev_type, type_, iobes):
            chunks.add((prev_type, first, i - 1))
            first = None
        if start_of_chunk(prev_tag, tag, prev_type, type_, iobes):
            first = i
        prev_tag, prev_type = tag, type_
    return chunks


def prf(n_correct, n_true, n_pred):
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def assert_report_matches_reference(y_true, y_pred, iobes):
    expected = conlleval_counts(y_true, y_pred, iobes)
    report = span_classification_report(y_true, y_pred, output_dict=True, iobes=iobes)
    overall = report.pop("overall")
    assert sorted(report) == sorted(expected)
    for type_, (n_true, n_pred, n_correct) in expected.items():
        expected_scores = prf(n_correct, n_true, n_pred)
        scores = tuple(report[type_][key] for key in ("precision", "recall", "f1-score"))
        assert scores == pytest.approx(expected_scores, rel=1e-12, abs=0)
        assert report[type_]["support"] == n_true
    total = np.sum(list(expected.values()), axis=0, dtype=int) if expected else [0, 0, 0]
    expected_overall = prf(total[2], total[0], total[1])
    assert span_precision_recall_f1(y_true, y_pred, iobes=iobes) == pytest.approx(
        expected_overall, rel=1e-12, abs=0
    )
    assert overall["support"] == total[0]


# ---------------------------------------------------------------------------------------------
# Span scores on random tags

BIO = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
IOBES = BIO + ["E-NP", "S-NP", "E-VP", "S-VP"]
# Everything conlleval reads specially, plus bare labels, hyphens inside types and type "0".
CONLLEVAL_TAGS = IOBES + ["[", "]", ".", "[-NP", "]-VP", ".-NP", ".-VP", "NP", "B", "I", "E",
                          "S", "B-0", "I-A-B", "B-A-B", "-NP", "O-NP", "X-NP"]  # fmt: skip


def paired_sequences(alphabet):
    """(y_true, y_pred): lists of label sequences with matching lengths."""
    pairs = st.tuples(st.sampled_from(alphabet), st.sampled_from(alphabet))
    return st.lists(st.lists(pairs, max_size=8), max_size=6).map(
        lambda seqs: ([[t for t, _ in s] for s in seqs], [[p for _, p in s] for s in seqs])
    )


@pytest.mark.parametrize(
    "alphabet",
    [
        BIO,  # the case that matters most, with many valid chunks
        CONLLEVAL_TAGS,
        # Bare chunk tags only, so that their rarer combinations come up often.
        ["O", "B", "I", "E", "S", "[", "]", ".", "NP", "B-NP", "I-NP"],
    ],
    ids=["bio", "conlleval", "bare"],
)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), iobes=st.booleans())
def test_span_scores_match_conlleval_reference(alphabet, data, iobes):
    assert_report_matches_reference(*data.draw(paired_sequences(alphabet)), iobes)


@settings(max_examples=150, deadline=None)
@given(data=paired_sequences(IOBES), iobes=st.booleans())
def test_correct_spans_are_those_with_same_type_start_and_end(data, iobes):
    # For typed B/I/E/S/O tags, conlleval's one-flag matching equals intersecting the sets of
    # (type, first, last) chunks; boundaries never merge chunks of different sequences.
    y_true, y_pred = data
    true_chunks = [chunk_set(tags, iobes) for tags in y_true]
    pred_chunks = [chunk_set(tags, iobes) for tags in y_pred]
    n_true = sum(map(len, true_chunks))
    n_pred = sum(map(len, pred_chunks))
    n_correct = sum(len(t & p) for t, p in zip(true_chunks, pred_chunks))
    assert span_precision_recall_f1(y_true, y_pred, iobes=iobes) == pytest.approx(
        prf(n_correct, n_true, n_pred), rel=1e-12, abs=0
    )


def test_iobes_changes_nothing_without_s_tags_or_b_after_e():
    rng = np.random.default_rng(0)
    tags = np.array(["O", "B-NP", "I-NP", "E-NP", "B-VP", "I-VP", "E-VP"])
    y_true = [list(rng.choice(tags, size=n)) for n in rng.integers(0, 12, size=200)]
    y_pred = [list(rng.choice(tags, size=len(s))) for s in y_true]
    # Rewrite "B" after "E" so that only the rules common to both sets apply.
    for seq in y_true + y_pred:
        for i in range(1, len(seq)):
            if seq[i - 1].startswith("E") and seq[i].startswith("B"):
                seq[i] = "O"
    plain = span_classification_report(y_true, y_pred, output_dict=True)
    assert plain == span_classification_report(y_true, y_pred, output_dict=True, iobes=True)
    assert plain["overall"]["support"] > 100


# ---------------------------------------------------------------------------------------------
# Span scores on hand-worked examples


def test_docstring_example_counts():
    # True chunks NP[0,1], VP[3], PP[0], NP[1]; predicted NP[0,1], VP[3], PP[0,1]: 2 correct.
    y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    y_pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-PP", "I-PP"]]
    assert span_precision_recall_f1(y_true, y_pred) == pytest.approx((2 / 3, 1 / 2, 4 / 7))
    report = span_classification_report(y_true, y_pred, output_dict=True)
    assert list(report) == ["NP", "PP", "VP", "overall"]
    assert report["NP"] == pytest.approx(
        {"precision": 1.0, "recall": 0.5, "f1-score": 2 / 3, "support": 2}
    )
    assert report["PP"] == {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 1}


@pytest.mark.parametrize(
    "y_true, y_pred, expected",
    [
        # "I-NP" after "O" starts a chunk, so it equals "B-NP".
        ([["O", "I-NP", "I-NP"]], [["O", "B-NP", "I-NP"]], (1.0, 1.0, 1.0)),
        # A type change inside a chunk ends it and starts another: NP[0], VP[1] are two chunks.
        ([["B-NP", "I-VP"]], [["B-NP", "B-VP"]], (1.0, 1.0, 1.0)),
        ([["B-NP", "I-VP"]], [["B-NP", "I-NP"]], (0.0, 0.0, 0.0)),
        # "I-NP" after "B-VP": VP[0], NP[1,2] against VP[0], NP[1], NP[2].
        ([["B-VP", "I-NP", "I-NP"]], [["B-VP", "B-NP", "B-NP"]], (1 / 3, 1 / 2, 0.4)),
        # A sentence boundary ends a chunk: "I-NP" opening a sentence starts a new one.
        ([["B-NP"], ["I-NP"]], [["B-NP"], ["B-NP"]], (1.0, 1.0, 1.0)),
        # A chunk one token too long is wrong.
        ([["B-NP", "O"]], [["B-NP", "I-NP"]], (0.0, 0.0, 0.0)),
        # Without "S" rules (original conlleval), "S-NP S-NP" is one chunk NP[0,1].
        ([["S-NP", "S-NP"]], [["B-NP", "I-NP"]], (1.0, 1.0, 1.0)),
        # No chunks anywhere: every score is 0, as conlleval prints 0.00.
        ([["O", "O"], []], [["O", "O"], []], (0.0, 0.0, 0.0)),
        ([], [], (0.0, 0.0, 0.0)),
        # Only true chunks, or only predicted ones.
        ([["B-NP"]], [["O"]], (0.0, 0.0, 0.0)),
        ([["O"]], [["B-NP"]], (0.0, 0.0, 0.0)),
        # "." continues a chunk whatever its type, but conlleval still rejects a match whose
        # types differ inside the chunk.
        ([["B-NP", ".-NP", ".-NP"]], [["B-NP", ".-NP", ".-VP"]], (0.0, 0.0, 0.0)),
        ([["B-NP", ".-NP", ".-VP"]], [["B-NP", ".-NP", ".-VP"]], (1.0, 1.0, 1.0)),
        # Bare labels have type "" and never start a chunk after "O".
        ([["NP", "NP"]], [["NP", "VP"]], (0.0, 0.0, 0.0)),
    ],
)
def test_span_hand_examples(y_true, y_pred, expected):
    assert span_precision_recall_f1(y_true, y_pred) == pytest.approx(expected)
    assert span_f1_score(y_true, y_pred) == pytest.approx(expected[2])


def test_iobes_rules_split_single_token_chunks():
    y_true = [["S-NP", "S-NP", "B-NP", "E-NP"]]
    y_pred = [["B-NP", "E-NP", "B-NP", "E-NP"]]
    # Original rules: neither "S" nor "B" after "E" starts a chunk; both are one chunk NP[0,3].
    assert span_precision_recall_f1(y_true, y_pred) == (1.0, 1.0, 1.0)
    # IOBES rules: NP[0], NP[1], NP[2,3] against NP[0,1], NP[2,3].
    assert span_precision_recall_f1(y_true, y_pred, iobes=True) == pytest.approx(
        (1 / 2, 1 / 3, 0.4)
    )


def test_span_types_may_contain_hyphens_and_bare_labels_get_empty_type():
    y_true = [["B-I-X", "I-I-X", "B-NP", "NP"]]
    report = span_classification_report(y_true, y_true, output_dict=True)
    # "NP" after "B-NP" changes the type from "NP" to "", so it starts a chunk of type "".
    assert {name: row["support"] for name, row in report.items()} == {
        "": 1, "I-X": 1, "NP": 1, "overall": 3,
    }  # fmt: skip
    # That chunk does not end at the sentence boundary ("O" has type "" too); conlleval counts
    # it as correct at the end of the input.
    assert report[""]["precision"] == report["overall"]["recall"] == 1.0


def test_span_labels_are_read_as_strings():
    assert span_f1_score([[1, "B-1"]], [["1", "B-1"]]) == 1.0


def test_span_classification_report_text():
    y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    y_pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-PP", "I-PP"]]
    text = span_classification_report(y_true, y_pred, digits=3)
    lines = text.splitlines()
    assert lines[0].split() == ["precision", "recall", "f1-score", "support"]
    assert lines[2].split() == ["NP", "1.000", "0.500", "0.667", "2"]
    assert lines[-1].split() == ["overall", "0.667", "0.500", "0.571", "4"]
    assert lines[-2] == ""


# ---------------------------------------------------------------------------------------------
# Token and sequence level


@pytest.fixture(scope="module")
def ragged_labels():
    rng = np.random.default_rng(42)
    labels = np.array(["O", "B-NP", "I-NP", "B-VP"])
    lengths = rng.integers(1, 10, size=60)
    y_true = [list(rng.choice(labels, size=n)) for n in lengths]
    # About 70% of tokens right, so every score is strictly between 0 and 1.
    y_pred = [[t if rng.random() < 0.7 else rng.choice(labels) for t in seq] for seq in y_true]
    # A few fully correct sequences, so sequence accuracy is not 0.
    y_pred[:5] = [list(seq) for seq in y_true[:5]]
    return y_true, y_pred


FLAT_CASES = [
    (flat_accuracy_score, sk_metrics.accuracy_score, {}),
    (flat_precision_score, sk_metrics.precision_score, {"average": "macro"}),
    (flat_recall_score, sk_metrics.recall_score, {"average": "weighted"}),
    (flat_f1_score, sk_metrics.f1_score, {"average": "micro"}),
    (flat_f1_score, sk_metrics.f1_score, {"average": None, "labels": ["B-NP", "O"]}),
    (flat_fbeta_score, sk_metrics.fbeta_score, {"beta": 0.5, "average": "macro"}),
    (flat_classification_report, sk_metrics.classification_report,
     {"labels": ["B-NP", "I-NP"], "output_dict": True}),
]  # fmt: skip


@pytest.mark.parametrize("ours, sklearn_func, kwargs", FLAT_CASES)
def test_flat_metrics_equal_sklearn_on_flattened_labels(ragged_labels, ours, sklearn_func, kwargs):
    y_true, y_pred = ragged_labels
    flat_true = [label for seq in y_true for label in seq]
    flat_pred = [label for seq in y_pred for label in seq]
    expected = sklearn_func(flat_true, flat_pred, **kwargs)
    np.testing.assert_equal(ours(y_true, y_pred, **kwargs), expected)
    if not isinstance(expected, dict):
        assert 0 < np.min(expected) < 1  # not a degenerate comparison


@pytest.mark.parametrize("ours, sklearn_func, kwargs", FLAT_CASES)
def test_flat_metrics_equal_sklearn_crfsuite(ragged_labels, ours, sklearn_func, kwargs):
    crfsuite_metrics = pytest.importorskip("sklearn_crfsuite.metrics")
    y_true, y_pred = ragged_labels
    expected = getattr(crfsuite_metrics, ours.__name__)(y_true, y_pred, **kwargs)
    np.testing.assert_equal(ours(y_true, y_pred, **kwargs), expected)


def test_flat_metrics_accept_array_sequences(ragged_labels):
    y_true, y_pred = ragged_labels
    as_arrays = [np.array(seq) for seq in y_pred]
    assert flat_accuracy_score(y_true, as_arrays) == flat_accuracy_score(y_true, y_pred)
    assert sequence_accuracy_score(y_true, as_arrays) == sequence_accuracy_score(y_true, y_pred)


def test_sequence_accuracy_hand_example():
    y_true = [["B", "I"], ["O", "O"], ["B", "O"]]
    y_pred = [["B", "I"], ["O", "B"], ["O", "O"]]
    # Equal lengths on purpose: sklearn-crfsuite 0.5.0 counts tokens in that case.
    assert sequence_accuracy_score(y_true, y_pred) == pytest.approx(1 / 3)
    ragged_true, ragged_pred = [["A"], [], ["B", "C"]], [["A"], [], ["B", "D"]]
    assert sequence_accuracy_score(ragged_true, ragged_pred) == pytest.approx(2 / 3)
    assert sequence_accuracy_score([], []) == 0.0


def test_sequence_accuracy_equals_sklearn_crfsuite_on_ragged_sequences(ragged_labels):
    crfsuite_metrics = pytest.importorskip("sklearn_crfsuite.metrics")
    y_true, y_pred = ragged_labels
    expected = crfsuite_metrics.sequence_accuracy_score(y_true, y_pred)
    assert 0 < expected < 1
    assert sequence_accuracy_score(y_true, y_pred) == pytest.approx(expected)


ALL_METRICS = [
    flat_accuracy_score,
    flat_f1_score,
    flat_classification_report,
    sequence_accuracy_score,
    span_precision_recall_f1,
    span_f1_score,
    span_classification_report,
]


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_different_numbers_of_sequences_raise(metric):
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        metric([["O"], ["O"]], [["O"]])


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_sequences_of_different_lengths_raise(metric):
    with pytest.raises(ValueError, match="sequence 1 has 3 labels in y_true but 2 in y_pred"):
        metric([["O"], ["O", "O", "O"], ["O"]], [["O"], ["O", "O"], ["O", "O"]])


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_unlabeled_sequences_raise(metric):
    with pytest.raises(ValueError, match=r"y_true\[1\] is None"):
        metric([["O"], None], [["O"], ["O"]])


# ---------------------------------------------------------------------------------------------
# Scorers


class RecordingTagger(BaseEstimator):
    """Predicts "B-NP" for every token whose feature is "np" and "O" otherwise; keeps what
    predict received."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        self.seen_ = X
        if isinstance(X, SequenceMatrix):
            return [["B-NP" if row[0] else "O" for row in seq.toarray()] for seq in X]
        return [["B-NP" if token == "np" else "O" for token in seq] for seq in X]


X_TOKENS = [["np", "x"], ["np"], ["x", "np", "np"], ["x"]]
Y_LABELS = [["B-NP", "O"], None, ["O", "B-NP", "I-NP"], None]


@pytest.mark.parametrize(
    "scorer, expected",
    [
        # Labelled sequences 0 and 2: tokens O/B/B vs true O/B/I, 5 tokens, 4 right.
        (flat_accuracy_scorer, 4 / 5),
        (sequence_accuracy_scorer, 1 / 2),
        # True NP[0], NP[1,2]; predicted NP[0], NP[1], NP[2].
        (span_f1_scorer, prf(1, 2, 3)[2]),
        (flat_f1_scorer, sk_metrics.f1_score(["B-NP", "O", "O", "B-NP", "I-NP"],
                                            ["B-NP", "O", "O", "B-NP", "B-NP"],
                                            average="weighted", zero_division=0)),
    ],
)  # fmt: skip
def test_scorers_drop_unlabeled_sequences_from_list(scorer, expected):
    tagger = RecordingTagger()
    assert scorer(tagger, X_TOKENS, Y_LABELS) == pytest.approx(expected)
    assert tagger.seen_ == [X_TOKENS[0], X_TOKENS[2]]


def test_scorers_select_from_sequence_matrix():
    # One attribute: 1 where the token is "np".
    rows = [[float(token == "np")] for seq in X_TOKENS for token in seq]
    offsets = np.cumsum([0] + [len(seq) for seq in X_TOKENS])
    X = SequenceMatrix(sp.csr_matrix(rows), offsets)
    tagger = RecordingTagger()
    assert span_f1_scorer(tagger, X, Y_LABELS) == pytest.approx(prf(1, 2, 3)[2])
    assert isinstance(tagger.seen_, SequenceMatrix)
    np.testing.assert_array_equal(tagger.seen_.lengths, [2, 3])
    np.testing.assert_array_equal(tagger.seen_.matrix.toarray().ravel(), [1, 0, 0, 1, 1])


def test_scorers_pass_fully_labelled_data_unchanged():
    tagger = RecordingTagger()
    labelled = [Y_LABELS[0], Y_LABELS[0]]
    assert flat_accuracy_scorer(tagger, X_TOKENS[:1] * 2, labelled) == 1.0
    assert tagger.seen_ == X_TOKENS[:1] * 2


def test_scorer_without_labelled_sequences_raises():
    with pytest.raises(ValueError, match="no labelled sequence to score .every entry of y is None"):
        span_f1_scorer(RecordingTagger(), X_TOKENS[:2], [None, None])


def test_scorer_length_mismatch_raises():
    with pytest.raises(ValueError, match="X has 4 sequences but y has 2"):
        span_f1_scorer(RecordingTagger(), X_TOKENS, Y_LABELS[:2])


def test_make_sequence_scorer_passes_keyword_arguments():
    tagger = RecordingTagger()
    scorer = make_sequence_scorer(span_f1_score, iobes=True)
    # "S-NP S-NP" is two chunks only under the IOBES rules; the tagger finds NP[0], NP[1].
    assert scorer(tagger, [["np", "np"]], [["S-NP", "S-NP"]]) == 1.0
    assert make_sequence_scorer(span_f1_score)(tagger, [["np", "np"]], [["S-NP", "S-NP"]]) == 0.0
    assert repr(scorer) == "make_sequence_scorer(span_f1_score, iobes=True)"


def test_scorers_work_in_cross_validation():
    X = X_TOKENS * 3
    y = Y_LABELS * 3
    result = cross_validate(RecordingTagger(), X, y, cv=KFold(3), scoring=SCORERS)
    # Every fold holds the same four sequences, two of them labelled.
    np.testing.assert_allclose(result["test_flat_accuracy"], 4 / 5)
    np.testing.assert_allclose(result["test_span_f1"], prf(1, 2, 3)[2])
    np.testing.assert_allclose(result["test_sequence_accuracy"], 1 / 2)



# ---------------------------------------------------------------------------------------------
# CoNLL-2000


def read_conll_chunks(path):
    """Chunk tags (third column) of a CoNLL-2000 file, one list per sentence."""
    sentences, current = [], []
    for line in path.read_text().splitlines():
        if line.strip():
            current.append(line.split()[2])
        elif current:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences


def corrupt(sentences):
    """A deterministic, systematically wrong copy: every 7th token's tag changes kind (B <-> I,
    O -> B-NP) and every 11th token's chunk type changes to PP."""
    corrupted = []
    position = 0
    for sentence in sentences:
        tags = []
        for tag in sentence:
            if position % 7 == 0:
                tag = {"B": "I" + tag[1:], "I": "B" + tag[1:]}.get(tag[0], "B-NP")
            if position % 11 == 0 and tag != "O":
                tag = tag[:2] + "PP"
            tags.append(tag)
            position += 1
        corrupted.append(tags)
    return corrupted


@pytest.fixture(scope="module")
def conll2000_test(shared_data):
    path = shared_data / "conll2000" / "test.txt"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return read_conll_chunks(path)


@pytest.mark.realdata
def test_conll2000_gold_against_itself(conll2000_test):
    gold = conll2000_test
    assert sum(map(len, gold)) == 47377
    assert span_precision_recall_f1(gold, gold) == (1.0, 1.0, 1.0)
    report = span_classification_report(gold, gold, output_dict=True)
    # conlleval on the test set: "processed 47377 tokens with 23852 phrases".
    assert report["overall"]["support"] == 23852
    assert report["NP"]["support"] == 12422
    assert report["VP"]["support"] == 4658


@pytest.mark.realdata
def test_conll2000_corrupted_copy_matches_reference(conll2000_test):
    gold = conll2000_test
    predicted = corrupt(gold)
    f1 = span_f1_score(gold, predicted)
    assert 0.5 < f1 < 0.95
    assert_report_matches_reference(gold, predicted, iobes=False)


@pytest.mark.realdata
def test_conll2000_is_scored_quickly(conll2000_test):
    predicted = corrupt(conll2000_test)
    start = time.perf_counter()
    span_classification_report(conll2000_test, predicted)
    assert time.perf_counter() - start < 1.0

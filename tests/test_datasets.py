"""Tests of the corpus readers and of the synthetic sequence generator."""

import gzip
import io

import numpy as np
import pytest

from sklearn_ssl_crf.datasets import (
    iter_text,
    load_bc2gm,
    load_conll2000,
    load_ocr,
    load_ud_english_ewt,
    make_sequences,
    read_columns,
    read_conllu,
    read_ocr_letters,
    read_text,
)

CONLL_TEXT = """\
Confidence NN B-NP
in IN B-PP
the DT B-NP

 \t
Chancellor NNP O   \t
said VBD B-VP
"""

CONLL_EXPECTED = (
    [[("Confidence", "NN"), ("in", "IN"), ("the", "DT")], [("Chancellor", "NNP"), ("said", "VBD")]],
    [["B-NP", "B-PP", "B-NP"], ["O", "B-VP"]],
)


def write(tmp_path, text, name="data.txt", newline="\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


# --- read_columns -------------------------------------------------------------------------


def test_read_columns_exact_output(tmp_path):
    # Two blank lines (one of pure whitespace), trailing whitespace, no final blank line.
    assert read_columns(write(tmp_path, CONLL_TEXT)) == CONLL_EXPECTED


def test_read_columns_accepts_str_path_and_file_object(tmp_path):
    path = write(tmp_path, CONLL_TEXT)
    assert read_columns(str(path)) == CONLL_EXPECTED
    assert read_columns(io.StringIO(CONLL_TEXT)) == CONLL_EXPECTED


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_read_columns_other_line_ends(tmp_path, newline):
    assert read_columns(write(tmp_path, CONLL_TEXT, newline=newline)) == CONLL_EXPECTED


def test_read_columns_crlf_from_untranslated_file_object(tmp_path):
    # newline="" keeps the "\r" of each line end in what the reader gets.
    with open(write(tmp_path, CONLL_TEXT, newline="\r\n"), newline="") as f:
        assert read_columns(f) == CONLL_EXPECTED


def test_read_columns_column_selection(tmp_path):
    path = write(tmp_path, CONLL_TEXT)
    sequences, labels = read_columns(path, columns=0)
    assert sequences == [["Confidence", "in", "the"], ["Chancellor", "said"]]
    assert labels == CONLL_EXPECTED[1]
    # Order follows ``columns``; a one-element list also gives bare str tokens.
    assert read_columns(path, columns=[1, 0])[0][1] == [("NNP", "Chancellor"), ("VBD", "said")]
    assert read_columns(path, columns=[-2])[0][1] == ["NNP", "VBD"]
    # The POS tags as labels, the words as tokens.
    assert read_columns(path, columns=0, label_column=1)[1][1] == ["NNP", "VBD"]


def test_read_columns_tab_separated_tokens_with_spaces(tmp_path):
    path = write(tmp_path, "IL 2\tB-GENE\ngene\tI-GENE\n\n.\tO\n")
    expected = [["IL 2", "gene"], ["."]], [["B-GENE", "I-GENE"], ["O"]]
    assert read_columns(path, sep="\t") == expected


def test_read_columns_skips_docstart(tmp_path):
    text = "-DOCSTART- -X- O\n\nEU NNP B-ORG\n-DOCSTART- -X- O\nPeter NNP B-PER\n\n-DOCSTART-\n"
    sequences, labels = read_columns(write(tmp_path, text), columns=0)
    # The marker also ends a sentence that has no blank line after it.
    assert sequences == [["EU"], ["Peter"]]
    assert labels == [["B-ORG"], ["B-PER"]]


def test_read_columns_empty_file(tmp_path):
    assert read_columns(write(tmp_path, "\n\n")) == ([], [])


def test_read_columns_inconsistent_columns_names_file_and_line(tmp_path):
    path = write(tmp_path, "a DT B-NP\nb NN I-NP\n\nc B-NP\n", name="bad.txt")
    with pytest.raises(ValueError, match=r"bad\.txt, line 4: expected 3 columns.*found 2"):
        read_columns(path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"columns": [0, 2]}, "include the label column"),
        ({"columns": [3]}, "column 3 does not exist"),
        ({"label_column": -4}, "label_column -4 does not exist"),
        ({"columns": []}, "at least one column"),
    ],
)
def test_read_columns_bad_column_arguments(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        read_columns(write(tmp_path, CONLL_TEXT), **kwargs)


# --- read_conllu --------------------------------------------------------------------------

CONLLU_TEXT = """\
# sent_id = 1
# text = Don't go.
1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_
2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_
3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_


# sent_id = 2
1\tNew York\tNew York\tPROPN\tNNP\t_\t0\troot\t_\t_
"""


def test_read_conllu_exact_output(tmp_path):
    path = write(tmp_path, CONLLU_TEXT, name="x.conllu", newline="\r\n")
    # Comments, the range 1-2 and the empty node 3.1 are skipped; a space inside FORM stays.
    assert read_conllu(path) == (
        [["Do", "n't", "go", "."], ["New York"]],
        [["AUX", "PART", "VERB", "PUNCT"], ["PROPN"]],
    )
    assert read_conllu(io.StringIO(CONLLU_TEXT), column="xpos")[1] == [
        ["VBP", "RB", "VB", "."],
        ["NNP"],
    ]


def test_read_conllu_malformed_line_names_file_and_line(tmp_path):
    text = CONLLU_TEXT.replace("2\tn't\tnot\tPART\tRB\t_\t3", "2 n't not PART RB _ 3")
    with pytest.raises(ValueError, match=r"x\.conllu, line 5: expected 10 tab-separated"):
        read_conllu(write(tmp_path, text, name="x.conllu"))


def test_read_conllu_unknown_column():
    with pytest.raises(ValueError, match="column must be one of"):
        read_conllu(io.StringIO(CONLLU_TEXT), column="deprel")


# --- read_ocr_letters ---------------------------------------------------------------------


def ocr_pixels(letter_id):
    """A distinct 0/1 image for each letter id."""
    return [int((letter_id + k) % 3 == 0) for k in range(128)]


def ocr_line(letter_id, letter, next_id, word_id, position, fold):
    fields = [letter_id, letter, next_id, word_id, position, fold, *ocr_pixels(letter_id)]
    # The real file ends every line with a tab.
    return "\t".join(map(str, fields)) + "\t\n"


# Words "cat" (ids 10, 12, 11; fold 2), "ox" (20, 21; fold 0) and "i" (30; fold 1), their
# lines shuffled: the first letters come in the order 20, 10, 30.
OCR_LINES = [
    ocr_line(12, "a", 11, 1, 2, 2),
    ocr_line(20, "o", 21, 2, 1, 0),
    ocr_line(10, "c", 12, 1, 1, 2),
    ocr_line(11, "t", -1, 1, 3, 2),
    ocr_line(30, "i", -1, 3, 1, 1),
    ocr_line(21, "x", -1, 2, 2, 0),
]
OCR_TEXT = "".join(OCR_LINES[:3]) + "\n" + "".join(OCR_LINES[3:])  # a blank line too


def check_ocr_example(result):
    images, labels, folds = result
    assert labels == [["o", "x"], ["c", "a", "t"], ["i"]]
    assert folds.tolist() == [0, 2, 1] and folds.dtype == np.int64
    for image, ids in zip(images, [[20, 21], [10, 12, 11], [30]]):
        assert image.dtype == np.uint8
        np.testing.assert_array_equal(image, [ocr_pixels(i) for i in ids])


def test_read_ocr_letters_exact_output(tmp_path):
    check_ocr_example(read_ocr_letters(write(tmp_path, OCR_TEXT, name="x.data")))
    check_ocr_example(read_ocr_letters(write(tmp_path, OCR_TEXT, newline="\r\n")))
    check_ocr_example(read_ocr_letters(io.StringIO(OCR_TEXT)))
    compressed = tmp_path / "x.data.gz"
    compressed.write_bytes(gzip.compress(OCR_TEXT.encode("ascii")))
    check_ocr_example(read_ocr_letters(compressed))
    check_ocr_example(read_ocr_letters(str(compressed)))


def test_read_ocr_letters_empty_file():
    images, labels, folds = read_ocr_letters(io.StringIO("\n"))
    assert images == [] and labels == [] and folds.shape == (0,)


def replace_line(index, *fields):
    lines = list(OCR_LINES)
    lines[index] = ocr_line(*fields) if len(fields) > 1 else fields[0]
    return "".join(lines)


OCR_MALFORMED = {
    # line format
    "pixel missing": (replace_line(3, OCR_LINES[3].replace("\t0\t", "\t", 1)),
                      r"line 4: expected 134 tab-separated fields \(6 then 128 pixels\), "
                      r"found 133"),
    "no pixels": (replace_line(1, "20\to\t21\n"), r"line 2: expected 134 .* found 3"),
    "capital": (replace_line(4, 30, "I", -1, 3, 1, 1),
                r"line 5: the letter must be one of a-z, got 'I'"),
    "two letters": (replace_line(4, 30, "ii", -1, 3, 1, 1), r"line 5: the letter must be one"),
    "bad id": (replace_line(4, OCR_LINES[4].replace("30", "3x", 1)),
               r"line 5: id, next_id, word_id, position and fold must be integers"),
    "pixel 2": (replace_line(5, OCR_LINES[5].replace("\t1\t", "\t2\t", 2)),
                r"line 6: pixels must be 0 or 1"),
    # links
    "repeated id": (replace_line(4, 12, "i", -1, 3, 1, 1), r"line 5: id 12 is used by an earlier"),
    "dangling": (replace_line(3, 11, "t", 99, 1, 3, 2), r"line 4: next_id 99 is not the id of any"),
    "shared next": (replace_line(4, 30, "i", 11, 3, 1, 1), r"line 5: next_id 11 is also the "),
    "merge": (replace_line(3, 11, "t", 12, 1, 3, 2), r"line 4: next_id 12 is also the next_id"),
    "cycle": ("".join(OCR_LINES) + ocr_line(40, "q", 41, 4, 1, 0) + ocr_line(41, "u", 40, 4, 2, 0),
              r"line 7: this letter is on a cycle of next_id links"),
    "position": (replace_line(3, 11, "t", -1, 1, 4, 2),
                 r"line 4: position 4, but the next_id links make it letter 3 of its word"),
    "first position": (replace_line(2, 10, "c", 12, 1, 2, 2),
                       r"line 3: position 2, but .* letter 1 of its word"),
    "word_id": (replace_line(0, 12, "a", 11, 9, 2, 2),
                r"line 1: word_id 9 differs from the word_id of its word's first letter"),
    "fold": (replace_line(3, 11, "t", -1, 1, 3, 4), r"line 4: fold 4 differs from the fold of"),
}


@pytest.mark.parametrize("case", OCR_MALFORMED)
def test_read_ocr_letters_malformed(tmp_path, case):
    text, message = OCR_MALFORMED[case]
    with pytest.raises(ValueError, match=r"bad\.data, " + message):
        read_ocr_letters(write(tmp_path, text, name="bad.data"))


def test_load_ocr_by_fold(tmp_path):
    (tmp_path / "letters-folds0-4.data.gz").write_bytes(gzip.compress(OCR_TEXT.encode()))
    splits = load_ocr(tmp_path)
    assert list(splits) == [0, 1, 2]
    assert [splits[fold][1] for fold in splits] == [[["o", "x"]], [["i"]], [["c", "a", "t"]]]
    np.testing.assert_array_equal(splits[1][0][0], [ocr_pixels(30)])
    with pytest.raises(FileNotFoundError, match="letters-folds0-4.data.gz"):
        load_ocr(tmp_path / "elsewhere")


# --- the real corpora (README of ../shared/data gives the sizes) --------------------------


def sizes(split):
    sequences, labels = split
    assert [len(s) for s in sequences] == [len(t) for t in labels]
    return len(sequences), sum(len(s) for s in sequences)


@pytest.mark.realdata
def test_conll2000(shared_data):
    splits = load_conll2000(shared_data / "conll2000")
    assert sizes(splits["train"]) == (8936, 211727)
    assert sizes(splits["test"]) == (2012, 47377)
    train_labels = {tag for tags in splits["train"][1] for tag in tags}
    assert len(train_labels) == 22
    assert {"O", "B-NP", "I-NP"} <= train_labels
    assert splits["train"][0][0][:2] == [("Confidence", "NN"), ("in", "IN")]


@pytest.mark.realdata
def test_bc2gm(shared_data):
    splits = load_bc2gm(shared_data / "bc2gm")
    assert sizes(splits["train"]) == (12574, 355405)
    assert sizes(splits["devel"]) == (2519, 71042)
    assert sizes(splits["test"]) == (5038, 143465)
    assert {tag for tags in splits["train"][1] for tag in tags} == {"B-GENE", "I-GENE", "O"}
    assert isinstance(splits["train"][0][0][0], str)


@pytest.mark.realdata
def test_ud_english_ewt(shared_data):
    splits = load_ud_english_ewt(shared_data / "ud_english_ewt")
    assert "train" not in splits  # not distributed with the shared data
    assert sizes(splits["dev"]) == (2001, 25147)
    assert sizes(splits["test"]) == (2077, 25094)
    assert splits["dev"][0][0] == ["From", "the", "AP", "comes", "this", "story", ":"]
    assert splits["dev"][1][0] == ["ADP", "DET", "PROPN", "VERB", "DET", "NOUN", "PUNCT"]


@pytest.mark.realdata
def test_ocr_letters(shared_data):
    path = shared_data / "ocr" / "letters-folds0-4.data.gz"
    images, labels, folds = read_ocr_letters(path)
    assert len(images) == len(labels) == folds.size == 3405
    assert [image.shape for image in images] == [(len(word), 128) for word in labels]
    assert sum(len(word) for word in labels) == 25725
    assert len({"".join(word) for word in labels}) == 55
    assert "".join(labels[0]) == "ommanding"  # "commanding" without its first letter
    assert set(np.unique(np.concatenate(images))) == {0, 1}
    splits = load_ocr(path.parent)
    assert list(splits) == [0, 1, 2, 3, 4]
    assert sum(len(split[0]) for split in splits.values()) == 3405
    assert [len(splits[k][0]) for k in splits] == np.bincount(folds).tolist()


def test_loader_without_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.txt"):
        load_conll2000(tmp_path)


# --- make_sequences -----------------------------------------------------------------------


def test_make_sequences_reproducible():
    X, y = make_sequences(50, random_state=3)
    assert make_sequences(50, random_state=3) == (X, y)
    assert make_sequences(50, random_state=np.random.RandomState(3)) == (X, y)
    assert make_sequences(50, random_state=4) != (X, y)
    assert make_sequences(50, features="dict", random_state=3)[1] == y


def test_make_sequences_shapes_and_lengths():
    X, y = make_sequences(300, min_length=3, max_length=7, random_state=0)
    assert len(X) == len(y) == 300
    lengths = [len(words) for words in X]
    assert lengths == [len(labels) for labels in y]
    assert min(lengths) == 3 and max(lengths) == 7
    assert all(isinstance(word, str) for words in X for word in words)


def test_make_sequences_follow_bio():
    X, y = make_sequences(500, n_types=3, random_state=0)
    assert {tag for tags in y for tag in tags} == {"O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C"}
    for tags in y:
        for previous, tag in zip(["O"] + tags, tags):
            if tag.startswith("I-"):
                assert previous in ("B-" + tag[2:], tag)


def test_make_sequences_params_match_samples():
    X, y, params = make_sequences(2000, random_state=0, return_params=True)
    labels, vocabulary = params["labels"], params["vocabulary"]
    start, transitions = params["start_proba"], params["transition_proba"]
    emissions = params["emission_proba"]
    assert labels == ["O", "B-A", "I-A", "B-B", "I-B"]
    assert emissions.shape == (5, len(vocabulary)) == (5, 300)
    for p in (start, transitions, emissions):
        np.testing.assert_allclose(p.sum(axis=-1), 1.0)
    # Forbidden BIO moves have probability zero: I-A from O or from B-B, I-B at the start.
    assert transitions[0, 2] == transitions[3, 2] == start[4] == 0

    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros_like(transitions)
    for tags in y:
        for previous, tag in zip(tags, tags[1:]):
            counts[index[previous], index[tag]] += 1
    np.testing.assert_allclose(counts / counts.sum(axis=1, keepdims=True), transitions, atol=0.03)
    # Every emitted word is possible for its label.
    word_index = {word: i for i, word in enumerate(vocabulary)}
    pairs = np.array([(index[t], word_index[w]) for ws, ts in zip(X, y) for w, t in zip(ws, ts)])
    assert np.all(emissions[pairs[:, 0], pairs[:, 1]] > 0)


@pytest.mark.parametrize("n_types, vocabulary_size", [(1, 3), (3, 5), (26, 28)])
def test_make_sequences_smallest_vocabulary(n_types, vocabulary_size):
    X, y, params = make_sequences(
        200, n_types=n_types, vocabulary_size=vocabulary_size, return_params=True, random_state=0
    )
    np.testing.assert_allclose(params["emission_proba"].sum(axis=1), 1.0)
    assert {word for words in X for word in words} <= set(params["vocabulary"])


def test_make_sequences_dict_features():
    (words,), _ = make_sequences(1, min_length=3, max_length=3, random_state=0)
    (features,), _ = make_sequences(1, min_length=3, max_length=3, features="dict", random_state=0)
    assert features == [
        {"bias": 1.0, "word": words[0], "BOS": True, "+1:word": words[1]},
        {"bias": 1.0, "word": words[1], "-1:word": words[0], "+1:word": words[2]},
        {"bias": 1.0, "word": words[2], "-1:word": words[1], "EOS": True},
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_sequences": -1},
        {"n_sequences": 2.0},
        {"n_sequences": True},
        {"n_types": 0},
        {"n_types": 27},
        {"vocabulary_size": 3},
        {"min_length": 0},
        {"min_length": 5, "max_length": 4},
        {"noise": 1.5},
        {"stickiness": -0.1},
        {"features": "onehot"},
    ],
)
def test_make_sequences_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        make_sequences(**kwargs)


def viterbi(log_start, log_transitions, log_emissions):
    """Most probable label path of one sequence; ``log_emissions`` is (length, n_labels)."""
    score = log_start + log_emissions[0]
    backpointers = []
    for emission in log_emissions[1:]:
        candidates = score[:, None] + log_transitions
        backpointers.append(candidates.argmax(axis=0))
        score = candidates.max(axis=0) + emission
    path = [score.argmax()]
    for pointers in reversed(backpointers):
        path.append(pointers[path[-1]])
    return path[::-1]


def label_prior(start, transitions, lengths):
    """p(label) of a token drawn uniformly from sequences of the given lengths."""
    marginal, prior = start, np.zeros_like(start)
    for position in range(max(lengths)):
        prior += np.sum(np.asarray(lengths) > position) * marginal
        marginal = marginal @ transitions
    return prior / prior.sum()


@pytest.mark.parametrize("random_state", [0, 1, 2])
def test_make_sequences_context_beats_per_token_oracle(random_state):
    X, y, params = make_sequences(500, random_state=random_state, return_params=True)
    label_index = {label: i for i, label in enumerate(params["labels"])}
    word_index = {word: i for i, word in enumerate(params["vocabulary"])}
    start, transitions = params["start_proba"], params["transition_proba"]
    emissions = params["emission_proba"]
    with np.errstate(divide="ignore"):  # log(0) = -inf for forbidden moves is intended
        log_start, log_transitions, log_emissions = map(np.log, (start, transitions, emissions))
    # Bayes-optimal label of a word seen alone: argmax_y p(y) p(word | y).
    prior = label_prior(start, transitions, [len(words) for words in X])
    per_token = np.argmax(prior[:, None] * emissions, axis=0)

    viterbi_correct = per_token_correct = n_tokens = 0
    for words, tags in zip(X, y):
        word_ids = [word_index[w] for w in words]
        truth = np.array([label_index[t] for t in tags])
        decoded = np.array(viterbi(log_start, log_transitions, log_emissions[:, word_ids].T))
        viterbi_correct += np.sum(decoded == truth)
        per_token_correct += np.sum(per_token[word_ids] == truth)
        n_tokens += truth.size
    viterbi_accuracy = viterbi_correct / n_tokens
    per_token_accuracy = per_token_correct / n_tokens
    # Hard but learnable: the true HMM is far from perfect yet clearly ahead of any
    # per-token classifier.
    assert 0.8 < viterbi_accuracy < 0.97
    assert viterbi_accuracy - per_token_accuracy > 0.05



@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
@pytest.mark.parametrize("byte_order_mark", [True, False])
def test_utf16_and_utf32_read_as_bytes_decode_reads_them(tmp_path, encoding,
                                                         byte_order_mark):
    # Without a byte-order mark, bytes.decode takes the machine's byte order; the
    # incremental decoders the readers use refuse such a text unless told the order.
    text = "the cat\nsat down\n"
    data = text.encode(encoding)
    if not byte_order_mark:
        data = data[2 if encoding == "utf-16" else 4:]
    path = tmp_path / "text.txt"
    path.write_bytes(data)
    assert data.decode(encoding) == text
    assert read_text(path, encoding=encoding) == [["the", "cat"], ["sat", "down"]]
    assert list(iter_text(path, encoding=encoding)) == [["the", "cat"], ["sat", "down"]]

"""CoNLL-2000 with the sklearn-crfsuite tutorial's features, shared by the benchmarks."""

from pathlib import Path

from sklearn_ssl_crf.datasets import load_conll2000

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def word2features(sentence, i):
    """The tutorial's features of token ``i`` of a sentence of (word, POS) tuples."""
    word, postag = sentence[i][0], sentence[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    for offset, prefix, at_edge, edge in ((-1, "-1:", i == 0, "BOS"),
                                         (1, "+1:", i == len(sentence) - 1, "EOS")):
        if at_edge:
            features[edge] = True
            continue
        word, postag = sentence[i + offset][0], sentence[i + offset][1]
        features.update({
            prefix + "word.lower()": word.lower(),
            prefix + "word.istitle()": word.istitle(),
            prefix + "word.isupper()": word.isupper(),
            prefix + "postag": postag,
            prefix + "postag[:2]": postag[:2],
        })
    return features


def sentence_features(sentence):
    return [word2features(sentence, i) for i in range(len(sentence))]


def load_tutorial_conll2000(data_dir=DEFAULT_DATA):
    """``(X_train, y_train, X_test, y_test, raw_train)``: feature dicts, chunk labels and the
    raw (word, POS) training sentences."""
    splits = load_conll2000(Path(data_dir) / "conll2000")
    (raw_train, y_train), (raw_test, y_test) = splits["train"], splits["test"]
    return ([sentence_features(s) for s in raw_train], y_train,
            [sentence_features(s) for s in raw_test], y_test, raw_train)

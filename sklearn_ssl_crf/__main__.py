"""Command line: train and evaluate a tagger.

``python -m sklearn_ssl_crf`` runs the quickstart on the embedded synthetic data set;
``python -m sklearn_ssl_crf --train train.txt --test test.txt`` does the same on column files
(CoNLL-2000 style: one token per line, label last, blank line between sentences).
"""

import argparse
import sys
import time

from sklearn.linear_model import LogisticRegression

from .crf import CRF
from .datasets import make_sequences, read_columns
from .featurize import SequenceVectorizer, WindowFeatures
from .metrics import flat_accuracy_score, span_classification_report, span_precision_recall_f1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_ssl_crf", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", help="column file to train on (default: synthetic data)")
    parser.add_argument("--test", help="column file to evaluate on (needs --train)")
    parser.add_argument("--c2", type=float, default=1.0, help="L2 strength (default 1.0)")
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--random-state", type=int, default=0, help="seed of synthetic data")
    parser.add_argument("--verbose", action="store_true", help="print every L-BFGS iteration")
    args = parser.parse_args(argv)
    if (args.train is None) != (args.test is None):
        parser.error("give both --train and --test, or neither")

    if args.train is None:
        print("Synthetic BIO tagging data (sklearn_ssl_crf.datasets.make_sequences): "
              "300 training and 1,000 test sentences.")
        X, y = make_sequences(1300, random_state=args.random_state)
        X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
        # Synthetic words depend only on their own label and carry no spelling cues: the
        # word itself is the feature, and the context comes from the CRF's transitions.
        window = WindowFeatures(window=0, suffixes=(), word_shape=False)
    else:
        X_train, y_train = read_columns(args.train)
        X_test, y_test = read_columns(args.test)
        window = WindowFeatures()
    print(f"train: {len(X_train)} sentences, {sum(map(len, X_train))} tokens; "
          f"test: {len(X_test)} sentences, {sum(map(len, X_test))} tokens")

    features_train, features_test = window.transform(X_train), window.transform(X_test)
    crf = CRF(c2=args.c2, max_iterations=args.max_iterations, verbose=args.verbose)
    started = time.perf_counter()
    crf.fit(features_train, y_train)
    fit_seconds = time.perf_counter() - started
    predicted = crf.predict(features_test)
    _report("CRF", y_test, predicted, f"{crf.n_iter_} L-BFGS iterations in {fit_seconds:.1f} s")

    # The same features, one token at a time: what modelling the label sequence adds.
    vectorizer = SequenceVectorizer()
    per_token = LogisticRegression(max_iter=1000).fit(
        vectorizer.fit_transform(features_train).matrix, [t for s in y_train for t in s])
    flat = per_token.predict(vectorizer.transform(features_test).matrix).tolist()
    lengths = [len(s) for s in y_test]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    _report("per-token logistic regression", y_test,
            [flat[a:a + n] for a, n in zip(starts, lengths)], "same features")
    print(span_classification_report(y_test, predicted, digits=3))
    return 0


def _report(name, y_true, y_pred, detail):
    precision, recall, f1 = span_precision_recall_f1(y_true, y_pred)
    print(f"{name:>30}: token accuracy {flat_accuracy_score(y_true, y_pred):.3f}, span "
          f"P/R/F1 {precision:.3f}/{recall:.3f}/{f1:.3f} ({detail})")


if __name__ == "__main__":
    sys.exit(main())

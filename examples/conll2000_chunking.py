"""
===============================================
Chunking CoNLL-2000 with CRF and WindowFeatures
===============================================

Chunking CoNLL-2000 with `CRF` and `WindowFeatures`, the way sklearn-crfsuite users do.

Usage::

    python examples/conll2000_chunking.py [--data-dir ../shared/data/conll2000] [--n-train 1000]

Trains on the first ``--n-train`` training sentences (all of them with ``--n-train 0``),
chooses ``c2`` by 3-fold cross-validation on span F1, and prints the test report and the
strongest transition weights.
"""

import argparse
from pathlib import Path

from sklearn.model_selection import GridSearchCV

from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.datasets import load_conll2000
from sklearn_ssl_crf.features import WindowFeatures
from sklearn_ssl_crf.metrics import span_classification_report, span_f1_scorer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--n-train", type=int, default=1000)
    args = parser.parse_args()

    splits = load_conll2000(args.data_dir)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    if args.n_train:
        X_train, y_train = X_train[:args.n_train], y_train[:args.n_train]
    features = WindowFeatures()  # tokens are (word, POS) tuples
    F_train, F_test = features.transform(X_train), features.transform(X_test)

    search = GridSearchCV(CRF(max_iterations=100), {"c2": [0.1, 1.0, 10.0]}, cv=3,
                          scoring=span_f1_scorer, n_jobs=2)
    search.fit(F_train, y_train)
    crf = search.best_estimator_
    print(f"{len(X_train)} training sentences; c2 chosen by CV: {search.best_params_['c2']} "
          f"(CV span F1 {search.best_score_:.4f})\n")
    print(span_classification_report(y_test, crf.predict(F_test), digits=4))

    strongest = sorted(crf.transition_features_.items(), key=lambda item: -abs(item[1]))[:8]
    print("strongest transitions:")
    for (before, after), weight in strongest:
        print(f"  {before:>8} -> {after:<8} {weight:+.3f}")


if __name__ == "__main__":
    main()

"""Parity with sklearn-crfsuite on the tutorial's features (issue #44 part 4).

200 CoNLL-2000 training sentences with the sklearn-crfsuite tutorial's features (which
hold False values), both libraries at the tutorial's settings (c1 = c2 = 0.1, 100
iterations) with CRFsuite's feature set (``all_possible_states=False``,
``all_possible_transitions=False``): the state features each keeps, the largest weight
difference, and the test tokens tagged differently. Run it with ``PYTHONPATH`` set to the
tree to measure (the first line says which package was imported)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_crfsuite_parity.py
"""

import argparse
import warnings

import sklearn_crfsuite
from conll_features import DEFAULT_DATA, sentence_features

import sklearn_ssl_crf
from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.datasets import load_conll2000


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=str, default=str(DEFAULT_DATA))
    parser.add_argument("--sentences", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"sklearn_ssl_crf from {sklearn_ssl_crf.__file__}")
    splits = load_conll2000(f"{args.data}/conll2000")
    (train, y_train), (test, _) = splits["train"], splits["test"]
    X = [sentence_features(sentence) for sentence in train[:args.sentences]]
    y = y_train[:args.sentences]
    X_test = [sentence_features(sentence) for sentence in test]
    settings = {"c1": 0.1, "c2": 0.1, "max_iterations": 100,
                "all_possible_transitions": False}
    reference = sklearn_crfsuite.CRF(algorithm="lbfgs", **settings).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 100-iteration cap, as the tutorial's
        ours = CRF(all_possible_states=False, **settings).fit(X, y)
    theirs, mine = reference.state_features_, ours.state_features_
    largest = max(abs(mine.get(key, 0.0) - weight) for key, weight in theirs.items())
    expected = [list(reference.predict_single(x)) for x in X_test]
    predicted = ours.predict(X_test)
    tokens = sum(len(tags) for tags in expected)
    differ = sum(a != b for tags, ours_tags in zip(expected, predicted)
                 for a, b in zip(tags, ours_tags))
    print(f"state features: sklearn-crfsuite {len(theirs):,}, ours {len(mine):,}, "
          f"missing here {len(set(theirs) - set(mine))}, extra here "
          f"{len(set(mine) - set(theirs))}")
    print(f"largest state-weight difference {largest:.2e}; test tokens tagged differently "
          f"{differ} of {tokens:,}")


if __name__ == "__main__":
    main()

"""Benchmark `SequenceVectorizer` against scikit-learn's `DictVectorizer` on CoNLL-2000.

Features are those of the sklearn-crfsuite tutorial (``word2features``). Times are the best of
``--repeat`` runs. Usage::

    python benchmarks/bench_featurize.py [--data-dir ../shared/data] [--repeat 3]
"""

import argparse
import time
from pathlib import Path

from conll_features import DEFAULT_DATA, load_tutorial_conll2000, sentence_features
from sklearn.feature_extraction import DictVectorizer

from sklearn_ssl_crf.features import SequenceVectorizer, WindowFeatures


def best_time(func, repeat):
    """Best wall-clock time of ``repeat`` calls, and the last result."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA,
        help="directory holding conll2000/train.txt and test.txt (default: ../shared/data)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (default: 3)")
    args = parser.parse_args(argv)

    X_train, _, X_test, _, raw_train = load_tutorial_conll2000(args.data_dir)
    flat_train = [token for sequence in X_train for token in sequence]
    n_train, n_test = len(flat_train), sum(map(len, X_test))

    t_ours, Xs = best_time(lambda: SequenceVectorizer().fit_transform(X_train), args.repeat)
    t_dict, Xd = best_time(lambda: DictVectorizer().fit_transform(flat_train), args.repeat)
    vectorizer = SequenceVectorizer().fit(X_train)
    t_transform, _ = best_time(lambda: vectorizer.transform(X_test), args.repeat)
    t_window, _ = best_time(lambda: WindowFeatures().fit_transform(raw_train), args.repeat)
    t_tutorial, _ = best_time(lambda: [sentence_features(s) for s in raw_train], args.repeat)

    print(f"CoNLL-2000: {len(X_train)} train sentences ({n_train} tokens), "
          f"{len(X_test)} test sentences ({n_test} tokens); best of {args.repeat}\n")
    print("| step | seconds | tokens/s | attributes |")
    print("|---|---:|---:|---:|")
    rows = [
        ("SequenceVectorizer.fit_transform (train)", t_ours, n_train, Xs.n_features),
        ("DictVectorizer.fit_transform (train, flat)", t_dict, n_train, Xd.shape[1]),
        ("SequenceVectorizer.transform (test)", t_transform, n_test, Xs.n_features),
        ("WindowFeatures.transform (train, word+POS)", t_window, n_train, None),
        ("tutorial sentence_features (train)", t_tutorial, n_train, None),
    ]
    for name, seconds, tokens, attributes in rows:
        attributes = "" if attributes is None else f"{attributes:,}"
        print(f"| {name} | {seconds:.3f} | {tokens / seconds:,.0f} | {attributes} |")
    print(f"\nfit_transform speed-up over DictVectorizer: {t_dict / t_ours:.1f}x")


if __name__ == "__main__":
    main()

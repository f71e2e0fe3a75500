"""``demo``: what the unlabelled sentences give, on the embedded synthetic data (the default
command)."""

import time

from ..datasets import make_sequences
from ..estimators import CRFCV, EntropyRegularizedCRF, SelfTrainingCRF
from ..features import WindowFeatures, WordClusters
from ..metrics import flat_accuracy_score, span_f1_score

N_LABELLED, N_UNLABELLED, N_TEST = 50, 1000, 1000


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "demo", help="supervised against semi-supervised training on synthetic data "
        "(the default)",
        description=f"On synthetic BIO-tagged sentences ({N_LABELLED} labelled, "
        f"{N_UNLABELLED:,} unlabelled, {N_TEST:,} test), train the supervised CRF and the "
        "semi-supervised estimators, each with its defaults (they choose their settings "
        "by cross-validation over the labelled sentences), and print their test scores "
        "side by side.")
    parser.add_argument("--random-state", type=int, default=0, help="seed of the data")
    parser.set_defaults(run=run)
    return parser


def run(args):
    X, y = make_sequences(N_LABELLED + N_UNLABELLED + N_TEST,
                          random_state=args.random_state)
    X_labelled, y_labelled = X[:N_LABELLED], y[:N_LABELLED]
    X_unlabelled = X[N_LABELLED:N_LABELLED + N_UNLABELLED]
    X_test, y_test = X[-N_TEST:], y[-N_TEST:]
    print(f"Synthetic BIO tagging data (sklearn_ssl_crf.datasets.make_sequences): "
          f"{N_LABELLED} labelled, {N_UNLABELLED:,} unlabelled and {N_TEST:,} test "
          f"sentences. The words carry no spelling cues, and many are shared by every "
          f"label: the unlabelled sentences show which words occur in which contexts. Every "
          f"model has its defaults and no dev set: each chooses its priors (and the "
          f"semi-supervised ones their unlabelled term and iterations) by 5-fold "
          f"cross-validation over the labelled sentences.\n")

    # Synthetic words are arbitrary strings: the word and its neighbours are the features.
    plain = WindowFeatures(window=1, suffixes=(), word_shape=False).fit(X_labelled)
    clustered = WindowFeatures(
        window=1, suffixes=(), word_shape=False,
        clusters=WordClusters(n_clusters=(16, 64), random_state=0),
    ).fit(X_labelled + X_unlabelled)
    seed = {"random_state": 0}
    rows = [
        ("CRF (labelled sentences only)", CRFCV(**seed), plain, False),
        ("SelfTrainingCRF", SelfTrainingCRF(**seed), plain, True),
        ("EntropyRegularizedCRF (entropy + label proportions)",
         EntropyRegularizedCRF(**seed), plain, True),
        ("CRF + WordClusters from the unlabelled sentences", CRFCV(**seed), clustered, False),
        ("EntropyRegularizedCRF + WordClusters", EntropyRegularizedCRF(**seed), clustered,
         True),
    ]
    print(f"{'model':<52}{'token acc':>10}{'span F1':>9}{'gain':>7}{'seconds':>9}")
    baseline = None
    for name, estimator, features, semi_supervised in rows:
        started = time.perf_counter()
        extra = {"X_unlabeled": features.transform(X_unlabelled)} if semi_supervised else {}
        estimator.fit(features.transform(X_labelled), y_labelled, **extra)
        predicted = estimator.predict(features.transform(X_test))
        seconds = time.perf_counter() - started
        f1 = span_f1_score(y_test, predicted)
        baseline = f1 if baseline is None else baseline
        print(f"{name:<52}{flat_accuracy_score(y_test, predicted):>10.3f}{f1:>9.3f}"
              f"{100 * (f1 - baseline):>+7.1f}{seconds:>9.1f}", flush=True)
    print("\ngain: span F1 points over the supervised CRF. On real corpora see "
          "'sklearn-ssl-crf train --help' and the benchmarks in docs/benchmarks.md.")
    return 0


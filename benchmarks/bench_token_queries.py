"""Token-level against sequence-level active learning on BC2GM (issue #31, item 3).

Every strategy starts from the same ``--start`` random training sentences, fully labelled,
and buys ``--budget`` token labels a round for ``--rounds`` rounds from the rest of the
training split (the pool), with the gold labels as the annotator's answers. After every
round a supervised `CRF` (``c2=0.1``, at most 100 L-BFGS iterations) is trained on what is
known and the test split's span F1 (conlleval) recorded against the tokens annotated.

- ``tokens``: the ``budget`` pool tokens of highest marginal entropy ``H(Y_t | x)``
  (`predict_token_entropy`) across the pool, each labelled alone; their sentences train as
  partially labelled sequences (None where unknown).
- ``sentences``: whole sentences by highest entropy per token (``predict_entropy`` over the
  length), taken in that order until the round's budget is spent.
- ``random``: whole random sentences, the same budget.

Features: `WindowFeatures()` fitted on the start sentences and the pool. Results are means
over ``--seeds`` seeds (the start sentences differ by seed).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_token_queries.py --seeds 2
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import CRF, SequenceVectorizer, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.metrics import span_f1_score

STRATEGIES = ("tokens", "sentences", "random")


def fit_and_score(matrix, known, X_test, y_test):
    """CRF on the sentences with a known label; test span F1 (%)."""
    trained = [i for i, labels in enumerate(known) if labels is not None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = CRF(c2=0.1, max_iterations=100).fit(matrix[trained],
                                                     [known[i] for i in trained])
    return model, 100 * span_f1_score(y_test, model.predict(X_test))


def query(strategy, model, matrix, known, y, budget, rng):
    """Label ``budget`` more tokens of the pool in place (``known``)."""
    if strategy == "tokens":
        candidates = [i for i, labels in enumerate(known)
                      if labels is None or None in labels]
        entropies = model.predict_token_entropy(matrix[candidates])
        flat = np.concatenate(entropies)
        owner = np.repeat(candidates, [len(h) for h in entropies])
        position = np.concatenate([np.arange(len(h)) for h in entropies])
        already = np.array([known[i] is not None and known[i][t] is not None
                            for i, t in zip(owner, position)], dtype=bool)
        flat[already] = -np.inf
        for k in np.argsort(-flat, kind="stable")[:budget]:
            i, t = owner[k], position[k]
            if known[i] is None:
                known[i] = [None] * len(y[i])
            known[i][t] = y[i][t]
        return
    pool = np.array([i for i, labels in enumerate(known) if labels is None])
    if strategy == "random":
        order = rng.permutation(pool)
    else:
        lengths = np.array([len(y[i]) for i in pool])
        order = pool[np.argsort(-model.predict_entropy(matrix[pool]) / lengths,
                                kind="stable")]
    spent = 0
    for i in order:
        if spent >= budget:
            break
        known[i] = list(y[i])
        spent += len(y[i])


def curve(strategy, seed, matrix, y, X_test, y_test, args):
    rng = np.random.default_rng(seed)
    start = rng.choice(len(y), args.start, replace=False)
    known = [None] * len(y)
    for i in start:
        known[i] = list(y[i])
    points = []
    for round_ in range(args.rounds + 1):
        model, f1 = fit_and_score(matrix, known, X_test, y_test)
        tokens = sum(sum(label is not None for label in labels) for labels in known
                     if labels is not None)
        points.append((tokens, f1))
        print(f"  {strategy} seed {seed} round {round_}: {tokens:,} tokens, F1 {f1:.2f}",
              flush=True)
        if round_ < args.rounds:
            query(strategy, model, matrix, known, y, args.budget, rng)
    return points


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--start", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=STRATEGIES)
    args = parser.parse_args(argv)
    splits = load_bc2gm(args.data_dir / "bc2gm")
    (words, y), (test_words, y_test) = splits["train"], splits["test"]
    features = WindowFeatures().fit(words)
    # Featurised and vectorised once: every fit then takes rows of one matrix.
    vectorizer = SequenceVectorizer().fit(features.transform(words))
    matrix = vectorizer.transform(features.transform(words))
    X_test = vectorizer.transform(features.transform(test_words))
    started = time.perf_counter()
    results = {strategy: [curve(strategy, seed, matrix, y, X_test, y_test, args)
                          for seed in range(args.seeds)] for strategy in args.strategies}
    print(f"\n{args.seeds} seeds, {args.start} start sentences, {args.rounds} rounds of "
          f"{args.budget} tokens; {time.perf_counter() - started:.0f} s\n")
    print("| round | " + " | ".join(f"{s}: tokens | {s}: span F1" for s in args.strategies)
          + " |")
    print("|---:|" + "---:|---:|" * len(args.strategies))
    for round_ in range(args.rounds + 1):
        cells = []
        for strategy in args.strategies:
            tokens = np.mean([points[round_][0] for points in results[strategy]])
            f1 = [points[round_][1] for points in results[strategy]]
            cells += [f"{tokens:,.0f}", f"{np.mean(f1):.2f} ± {np.std(f1):.2f}"]
        print(f"| {round_} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

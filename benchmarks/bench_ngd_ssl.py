"""Semi-supervised `NaturalGradientCRF` on BC2GM (issue #4): does sampling the entropy and
label-proportion terms match the gain of the L-BFGS `EntropyRegularizedCRF`?

Protocol of ``bench_ssl_accuracy.py`` (its draws, features and test set): 200 labelled
sentences drawn from train, the next 1,000 as unlabelled, span F1 on the whole test set.
Fixed settings, no model selection: ``gamma=0.1, proportion_weight=10`` (the README's
starting point) for both semi-supervised estimators; the NGD models use 'arctan',
``--epochs`` epochs, and ``--batch-sizes`` sequences per step.

Usage::

    python benchmarks/bench_ngd_ssl.py [--draws 2] [--epochs 20] [--batch-sizes 1 16]

About 6 minutes per draw on 2 cores.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ssl_accuracy import load_corpus, scores  # noqa: E402
from conll_features import DEFAULT_DATA  # noqa: E402

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, NaturalGradientCRF  # noqa: E402

TERMS = {"gamma": 0.1, "proportion_weight": 10.0}


def models(epochs, batch_sizes, seed):
    yield "CRF (L-BFGS), supervised", CRF(), False
    yield "EntropyRegularizedCRF (L-BFGS)", EntropyRegularizedCRF(**TERMS), True
    for batch_size in batch_sizes:
        common = dict(update="arctan", max_iterations=epochs, period=0, batch_size=batch_size,
                      random_state=seed)
        yield f"NGD arctan, batch {batch_size}, supervised", NaturalGradientCRF(**common), False
        yield (f"NGD arctan, batch {batch_size}, + terms", NaturalGradientCRF(**common, **TERMS),
               True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--draws", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--n-labelled", type=int, default=200)
    parser.add_argument("--n-unlabelled", type=int, default=1000)
    args = parser.parse_args()
    corpus = load_corpus("bc2gm", args.data_dir, dev_size=1)
    rows = {}
    for draw in range(args.draws):
        order = np.random.default_rng(draw).permutation(corpus.pool)
        labelled = order[:args.n_labelled]
        unlabelled = order[args.n_labelled:args.n_labelled + args.n_unlabelled]
        X = corpus.train[labelled]
        y = [corpus.y_train[i] for i in labelled]
        for name, model, semi_supervised in models(args.epochs, args.batch_sizes, draw):
            started = time.perf_counter()
            if semi_supervised:
                model.fit(X, y, X_unlabeled=corpus.train[unlabelled])
            else:
                model.fit(X, y)
            record = scores(corpus.y_test, model.predict(corpus.X_test))
            record["seconds"] = time.perf_counter() - started
            rows.setdefault(name, []).append(record)
            print(f"draw {draw} {name:<40} F1 {record['f1']:.4f} mentions "
                  f"{record['mentions']} {record['seconds']:.0f} s", flush=True)
    print(f"\n| model | span F1 (%) over {args.draws} draws | predicted mentions | seconds |")
    print("|---|---:|---:|---:|")
    for name, records in rows.items():
        f1 = [100 * r["f1"] for r in records]
        print(f"| {name} | {np.mean(f1):.2f} ± {np.std(f1):.2f} | "
              f"{np.mean([r['mentions'] for r in records]):.0f} | "
              f"{np.mean([r['seconds'] for r in records]):.0f} |")


if __name__ == "__main__":
    main()

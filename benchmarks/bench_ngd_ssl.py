"""Semi-supervised `NaturalGradientCRF` on BC2GM (issue #4): does sampling the entropy and
label-proportion terms match the gain of the L-BFGS `EntropyRegularizedCRF`?

Protocol of ``bench_ssl_accuracy.py`` (its draws, features, dev and test sets): 200
labelled sentences drawn from train, the next 1,000 as unlabelled, span F1 on the whole test
set. The supervised baseline is `CRF` tuned on the dev set over that script's (c1, c2) grid;
every other model uses the c2 so chosen (and its c1 for the L-BFGS models). Fixed
``gamma=0.1, proportion_weight=10`` for the semi-supervised estimators; the NGD models use
'arctan', ``--epochs`` epochs, and ``--batch-sizes`` sequences per step. Every model runs
with the plain features and with the `WordClusters` features (``+ clusters``, the clusters
learned from the labelled and unlabelled sentences).

Usage::

    python benchmarks/bench_ngd_ssl.py [--draws 2] [--epochs 20] [--batch-sizes 1 16]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ssl_accuracy import DEFAULT_DATA, GRID, Cell, load_corpus, scores  # noqa: E402

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, NaturalGradientCRF  # noqa: E402
from sklearn_ssl_crf.metrics import span_f1_score  # noqa: E402

TERMS = {"gamma": 0.1, "proportion_weight": 10.0}


def tuned_crf(X, y, X_dev, y_dev):
    """(c1, c2) of the grid with the best dev span F1 of `CRF` (first of equals)."""
    dev_f1 = [span_f1_score(y_dev, CRF(c1=c1, c2=c2).fit(X, y).predict(X_dev))
              for c1, c2 in GRID]
    return GRID[int(np.argmax(dev_f1))]


def models(epochs, batch_sizes, seed, c1, c2):
    yield "CRF (L-BFGS), supervised", CRF(c1=c1, c2=c2), False
    yield ("EntropyRegularizedCRF (L-BFGS)", EntropyRegularizedCRF(c1=c1, c2=c2, **TERMS),
           True)
    for batch_size in batch_sizes:
        common = dict(update="arctan", max_iterations=epochs, period=0, batch_size=batch_size,
                      c2=c2, random_state=seed)
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
    corpus = load_corpus("bc2gm", args.data_dir, dev_size=1000)
    rows = {}
    for draw in range(args.draws):
        order = np.random.default_rng(draw).permutation(corpus.pool)
        cell = Cell(order[:args.n_labelled],
                    order[args.n_labelled:args.n_labelled + args.n_unlabelled])
        y = [corpus.y_train[i] for i in cell.labelled]
        X, _, X_dev, _ = cell.matrices(corpus, "plain")
        c1, c2 = tuned_crf(X, y, X_dev, corpus.y_dev)
        print(f"draw {draw}: CRF tuned on dev at c1={c1:g}, c2={c2:g}", flush=True)
        for features in ("plain", "clusters"):
            X, X_unlabelled, _, X_test = cell.matrices(corpus, features)
            for name, model, semi_supervised in models(args.epochs, args.batch_sizes, draw,
                                                       c1, c2):
                name += "" if features == "plain" else " + clusters"
                started = time.perf_counter()
                if semi_supervised:
                    model.fit(X, y, X_unlabeled=X_unlabelled)
                else:
                    model.fit(X, y)
                record = scores(corpus.y_test, model.predict(X_test))
                record["seconds"] = time.perf_counter() - started
                rows.setdefault(name, []).append(record)
                print(f"draw {draw} {name:<52} F1 {record['f1']:.4f} mentions "
                      f"{record['mentions']} {record['seconds']:.0f} s", flush=True)
    baseline = np.array([r["f1"] for r in rows["CRF (L-BFGS), supervised"]])
    print(f"\n| model | span F1 (%) over {args.draws} draws | gain over the tuned CRF | "
          "predicted mentions | seconds |")
    print("|---|---:|---:|---:|---:|")
    for name, records in rows.items():
        f1 = np.array([r["f1"] for r in records])
        print(f"| {name} | {100 * f1.mean():.2f} ± {100 * f1.std():.2f} | "
              f"{100 * (f1 - baseline).mean():+.2f} | "
              f"{np.mean([r['mentions'] for r in records]):.0f} | "
              f"{np.mean([r['seconds'] for r in records]):.0f} |")


if __name__ == "__main__":
    main()

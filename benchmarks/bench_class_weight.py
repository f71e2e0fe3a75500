"""Class weights on BC2GM (issue #31, item 4): gene-mention precision, recall and F1 of
`CRFCV` without and with ``class_weight``.

For each draw, ``n`` labelled training sentences at random (seed = draw), `WindowFeatures()`
fitted on them; `CRFCV` (c1, c2 chosen by 5-fold cross-validation under each weighting)
with ``class_weight`` None, 'balanced', and ``{'B-GENE': w, 'I-GENE': w}`` for each
``--weights`` w; span precision, recall and F1 (conlleval) on the test split.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_class_weight.py --n-labelled 200 1000
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import CRFCV, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.metrics import span_precision_recall_f1


def settings(weights):
    yield "none", None
    yield "balanced", "balanced"
    for weight in weights:
        yield f"genes x{weight:g}", {"B-GENE": weight, "I-GENE": weight}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n-labelled", type=int, nargs="+", default=[200])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--weights", type=float, nargs="+", default=[2.0, 4.0])
    args = parser.parse_args(argv)
    splits = load_bc2gm(args.data_dir / "bc2gm")
    (words, y_train), (test_words, y_test) = splits["train"], splits["test"]
    print("| labelled | class_weight | draws | precision | recall | F1 | chosen c1, c2 |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for n in args.n_labelled:
        rows = {}
        for draw in range(args.draws):
            chosen = np.random.default_rng(draw).choice(len(words), n, replace=False)
            features = WindowFeatures().fit([words[i] for i in chosen])
            X = features.transform([words[i] for i in chosen])
            X_test = features.transform(test_words)
            y = [y_train[i] for i in chosen]
            for name, class_weight in settings(args.weights):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = CRFCV(class_weight=class_weight, random_state=draw).fit(X, y)
                scores = span_precision_recall_f1(y_test, model.predict(X_test))
                priors = f"{model.best_params_['c1']:g}, {model.best_params_['c2']:g}"
                rows.setdefault(name, []).append((*scores, priors))
                print(f"  n={n} draw {draw} {name}: P/R/F1 "
                      + " / ".join(f"{100 * s:.2f}" for s in scores) + f" ({priors})",
                      flush=True)
        for name, results in rows.items():
            values = np.array([r[:3] for r in results]) * 100
            mean, std = values.mean(axis=0), values.std(axis=0)
            print(f"| {n} | {name} | {len(results)} | "
                  + " | ".join(f"{m:.2f} ± {s:.2f}" for m, s in zip(mean, std))
                  + " | " + "; ".join(r[3] for r in results) + " |", flush=True)


if __name__ == "__main__":
    main()

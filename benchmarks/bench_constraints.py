"""Decoding within the label scheme (issue #31): invalid sequences and span F1 with and
without constraints, with few labelled sentences.

For each corpus and draw, ``n`` labelled training sentences drawn at random (seed = draw);
a model with its defaults tags the test set (``--models``): `CRFCV` (c1, c2 chosen by 5-fold
cross-validation) or `CRF` (c2 = 1, CRFsuite's default); both with ``constraints='auto'``,
which finds the BIO scheme. Training does not depend on the constraints
(the weights are those of ``constraints=None``), so the unconstrained predictions come from
the same fitted model with ``constraints_`` set to None. Reported per corpus: the test
sequences whose unconstrained labels break the scheme (an ``I-X`` after ``O`` or after
``B-Y``/``I-Y``, or first), the invalid ``I-`` tokens, and the span F1 (conlleval) of both.

- CoNLL-2000 (chunking): the sklearn-crfsuite tutorial's features.
- BC2GM (gene mentions): `WindowFeatures()`.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_constraints.py --n-labelled 200 --draws 3
"""

import argparse
import copy
import itertools
import time
import warnings
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA, load_tutorial_conll2000
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import CRF, CRFCV, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.metrics import span_f1_score


def invalid_tokens(labels):
    """Positions of the ``I-X`` labels that continue no ``B-X``/``I-X``."""
    bad, previous = [], "O"
    for t, label in enumerate(labels):
        if label.startswith("I-") and not (previous[:2] in ("B-", "I-")
                                           and previous[2:] == label[2:]):
            bad.append(t)
        previous = label
    return bad


def corpora(data_dir, which):
    if "conll" in which:
        X_train, y_train, X_test, y_test, _ = load_tutorial_conll2000(data_dir)
        yield "CoNLL-2000", X_train, y_train, X_test, y_test, None
    if "bc2gm" in which:
        splits = load_bc2gm(data_dir / "bc2gm")
        (words, y_train), (test_words, y_test) = splits["train"], splits["test"]
        yield "BC2GM", words, y_train, test_words, y_test, WindowFeatures


MODELS = {"CRFCV": lambda draw: CRFCV(random_state=draw), "CRF": lambda draw: CRF()}


def run_draw(model_name, X_train, y_train, X_test, y_test, featurizer, n, draw):
    rng = np.random.default_rng(draw)
    chosen = rng.choice(len(X_train), n, replace=False)
    X = [X_train[i] for i in chosen]
    y = [y_train[i] for i in chosen]
    test = X_test
    if featurizer is not None:
        features = featurizer().fit(X)
        X, test = features.transform(X), features.transform(X_test)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MODELS[model_name](draw).fit(X, y)
    seconds = time.perf_counter() - started
    free = copy.copy(model)
    free.constraints_ = None
    unconstrained = free.predict(test)
    constrained = model.predict(test)
    bad = [invalid_tokens(labels) for labels in unconstrained]
    assert not any(invalid_tokens(labels) for labels in constrained)
    return {
        "scheme": model.constraints_.scheme if model.constraints_ is not None else None,
        "invalid_sequences": sum(1 for b in bad if b),
        "invalid_tokens": sum(map(len, bad)),
        "f1_free": 100 * span_f1_score(y_test, unconstrained),
        "f1_constrained": 100 * span_f1_score(y_test, constrained),
        "changed_sequences": sum(a != b for a, b in zip(unconstrained, constrained)),
        "seconds": seconds,
        "settings": ", ".join(f"{k}={v:g}" for k, v in sorted(
            getattr(model, "best_params_", {"c1": model.c1, "c2": model.c2}).items())),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--corpora", nargs="+", default=["conll", "bc2gm"])
    parser.add_argument("--n-labelled", type=int, nargs="+", default=[200])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["CRFCV"])
    args = parser.parse_args(argv)
    print("| corpus | model | labelled | draw | settings | test sequences | invalid sequences "
          "(unconstrained) | invalid I- tokens | sequences changed | span F1 unconstrained "
          "| span F1 constrained | difference |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, X_train, y_train, X_test, y_test, featurizer in corpora(args.data_dir,
                                                                      args.corpora):
        for model_name, n in itertools.product(args.models, args.n_labelled):
            rows = []
            for draw in range(args.draws):
                row = run_draw(model_name, X_train, y_train, X_test, y_test, featurizer, n,
                               draw)
                rows.append(row)
                print(f"| {name} | {model_name} | {n} | {draw} | {row['settings']} | "
                      f"{len(X_test):,} | "
                      f"{row['invalid_sequences']:,} | {row['invalid_tokens']:,} | "
                      f"{row['changed_sequences']:,} | {row['f1_free']:.2f} | "
                      f"{row['f1_constrained']:.2f} | "
                      f"{row['f1_constrained'] - row['f1_free']:+.2f} |", flush=True)
            gains = [r["f1_constrained"] - r["f1_free"] for r in rows]
            print(f"| {name} | {model_name} | {n} | mean | | | "
                  f"{np.mean([r['invalid_sequences'] for r in rows]):.1f} | "
                  f"{np.mean([r['invalid_tokens'] for r in rows]):.1f} | "
                  f"{np.mean([r['changed_sequences'] for r in rows]):.1f} | "
                  f"{np.mean([r['f1_free'] for r in rows]):.2f} | "
                  f"{np.mean([r['f1_constrained'] for r in rows]):.2f} | "
                  f"{np.mean(gains):+.2f} (min {min(gains):+.2f}, max {max(gains):+.2f}) |",
                  flush=True)


if __name__ == "__main__":
    main()

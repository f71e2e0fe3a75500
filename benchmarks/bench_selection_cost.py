"""What built-in selection costs, and what ``n_jobs=2`` gives back (issue #28).

For each case, the estimator with its defaults (5-fold selection of the priors, the strength
and the iterations, then the refit) against one fit at the settings it chose with
``early_stopping=False`` (the fit a user who fixes the settings runs, to the estimator's own
cap of iterations), each with ``n_jobs=1`` and ``n_jobs=2``, alternated fit by fit (1, 2,
1, 2, ...) for ``--repeat`` rounds. With ``n_jobs=2`` the folds' fits run in two worker
processes; the script checks that both give the same model.

Cases:

``pos``
    `GraphPRCRF(graph='trigram')` on UD Italian-ISDT (dev + test), draw 0 of
    ``bench_defaults.py``: 100 labelled sentences, 946 unlabelled.
``ocr1``, ``ocr2``
    `GraphPRCRF(graph=graph)` at order 1 and 2 on handwriting, draw 0 of
    ``bench_defaults.py``: 2 labelled words per word type, every other word unlabelled, the
    k-NN graph of the blurred letters built once, untimed, and given.
``ner``
    `EntropyRegularizedCRF()` on BC2GM, draw 0 of ``bench_defaults.py``: 200 labelled and
    2,000 unlabelled training sentences, plain `WindowFeatures()`.

Prints the median seconds of each fit, the default fit's cost in fixed-setting fits at
each ``n_jobs``, the median of the paired speed-ups of ``n_jobs=2``, and for graph-PR the
default fit's token error on the unlabelled sequences. Run it on an idle machine.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_selection_cost.py --cases pos,ner --repeat 2

``--n-jobs 1`` fits at ``n_jobs=1`` only (no alternation, no check); ``--fixed-only
'{"c1": 0.1, "c2": 0.01, "lam": 1.0}'`` times only the fixed-setting fit at those settings
(a commit's fit at the settings another commit's default fit chose).
"""

import argparse
import json
from pathlib import Path

import numpy as np
from bench_defaults import (
    NER_LABELLED,
    NER_UNLABELLED,
    POS_LABELLED,
    language_pool,
    ocr_pool,
    timed_fit,
)
from bench_graph_pr import ocr_graph_vectors, token_errors
from conll_features import DEFAULT_DATA
from sklearn.base import clone

from sklearn_ssl_crf import EntropyRegularizedCRF, GraphPRCRF, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm, read_ocr_letters


def pos_case(data_dir):
    sentences, tags = language_pool(data_dir, "Italian")
    order = np.random.default_rng(0).permutation(len(sentences))
    X = WindowFeatures(window=1, suffixes=(1, 2, 3)).fit_transform(
        [sentences[i] for i in order])
    y = [tags[i] for i in order[:POS_LABELLED]] + [None] * (len(order) - POS_LABELLED)
    gold = [tags[i] for i in order[POS_LABELLED:]]
    return (GraphPRCRF(graph="trigram", random_state=0), (X, y), {},
            graph_pr_errors(X, gold, POS_LABELLED))


def ner_case(data_dir):
    X_train, y_train = load_bc2gm(data_dir / "bc2gm")["train"]
    order = np.random.default_rng(0).permutation(len(X_train))
    labelled = order[:NER_LABELLED]
    unlabelled = order[NER_LABELLED:NER_LABELLED + NER_UNLABELLED]
    features = WindowFeatures().fit([X_train[i] for i in labelled])
    X = features.transform([X_train[i] for i in labelled])
    U = features.transform([X_train[i] for i in unlabelled])
    return (EntropyRegularizedCRF(random_state=0), (X, [y_train[i] for i in labelled]),
            {"X_unlabeled": U}, None)


def ocr_case(data_dir, order):
    images, labels, _ = read_ocr_letters(data_dir / "ocr" / "letters-folds0-4.data.gz")
    X, graph, y_partial, gold, n = ocr_pool(0, images, labels,
                                            ocr_graph_vectors(images, 0.7), order)
    return (GraphPRCRF(graph=graph, order=order, random_state=0), (X, y_partial), {},
            graph_pr_errors(X, gold, n))


def graph_pr_errors(X, gold, n_labelled):
    """``model -> text``: the token error (%) of a `GraphPRCRF` on the unlabelled
    sequences, q's labels (PR) and theta's (PR-theta)."""
    def errors(model):
        return (f"error PR {token_errors(model.transduction_[n_labelled:], gold):.2f} %, "
                f"PR-theta {token_errors(model.predict(X[n_labelled:]), gold):.2f} %")
    return errors


CASES = {"pos": pos_case, "ocr1": lambda data_dir: ocr_case(data_dir, 1),
         "ocr2": lambda data_dir: ocr_case(data_dir, 2), "ner": ner_case}


def alternated(estimator, args, kwargs, repeat, all_n_jobs):
    """Seconds of ``repeat`` fits at each of ``all_n_jobs``, alternated; the last model of
    the first."""
    seconds, models = {n_jobs: [] for n_jobs in all_n_jobs}, {}
    for _ in range(repeat):
        for n_jobs in all_n_jobs:
            model, elapsed = timed_fit(clone(estimator).set_params(n_jobs=n_jobs), *args,
                                       **kwargs)
            seconds[n_jobs].append(elapsed)
            models[n_jobs] = model
    for n_jobs in all_n_jobs[1:]:
        np.testing.assert_array_equal(models[all_n_jobs[0]].state_weights_,
                                      models[n_jobs].state_weights_)
    return seconds, models[all_n_jobs[0]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--fixed-only", type=json.loads, metavar="SETTINGS",
                        help="time only the fixed-setting fit, at these settings (JSON)")
    args = parser.parse_args(argv)
    print("| case | n_jobs | default fit (s) | fixed-setting fit to the cap (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name in args.cases.split(","):
        estimator, fit_args, fit_kwargs, errors = CASES[name](args.data_dir)
        if args.fixed_only is not None:
            fixed, _ = alternated(clone(estimator).set_params(early_stopping=False,
                                                              **args.fixed_only),
                                  fit_args, fit_kwargs, args.repeat, args.n_jobs)
            for n_jobs in args.n_jobs:
                print(f"| {name} | {n_jobs} | | {np.median(fixed[n_jobs]):.1f} | |", flush=True)
            continue
        default, model = alternated(estimator, fit_args, fit_kwargs, args.repeat, args.n_jobs)
        fixed_estimator = clone(estimator).set_params(early_stopping=False,
                                                      **model.best_params_)
        fixed, _ = alternated(fixed_estimator, fit_args, fit_kwargs, args.repeat, args.n_jobs)
        for n_jobs in args.n_jobs:
            d, f = np.median(default[n_jobs]), np.median(fixed[n_jobs])
            print(f"| {name} | {n_jobs} | {d:.1f} | {f:.1f} | {d / f:.1f} |")
        speedups = "".join(
            f"; n_jobs={n_jobs} speed-up "
            f"{np.median(np.array(default[1]) / np.array(default[n_jobs])):.2f}x (default), "
            f"{np.median(np.array(fixed[1]) / np.array(fixed[n_jobs])):.2f}x (fixed)"
            for n_jobs in args.n_jobs if n_jobs != 1 and 1 in args.n_jobs)
        print(f"| {name}: chose {model.best_params_}, iteration {model.best_iteration_}"
              f"{speedups}{'' if errors is None else '; default fit ' + errors(model)} "
              "| | | | |", flush=True)


if __name__ == "__main__":
    main()

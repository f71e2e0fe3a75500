"""Selection on a sample of the unlabelled pool against selection on all of it (issue #43
part 2, issue #42 part 1).

BC2GM: per draw, 200 labelled training sentences and ``--unlabelled`` others (10,000 by
default) as the pool, plain `WindowFeatures()`. Each estimator runs with its defaults
twice, ``selection_unlabeled=None`` (every fold's semi-supervised run on the whole pool)
and ``selection_unlabeled=--sample`` (the folds on a random sample, the refit on the whole
pool), in alternating order from draw to draw, then once at the settings the sampled fit
chose with ``early_stopping=False`` (a fixed-setting fit, to price the default in). Rows:
the settings and iterations chosen, span F1 on BC2GM's 5,038 test sentences, and seconds.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_selection_sample.py --draws 2 \\
        --estimators entropy,self-training --json /tmp/selection_sample.json

Finished draws are kept in the JSON file and skipped when the command runs again;
``--report`` prints the table of a file.
"""

import argparse
import json
from pathlib import Path

import numpy as np
from bench_defaults import timed_fit
from conll_features import DEFAULT_DATA
from sklearn.base import clone

from sklearn_ssl_crf import EntropyRegularizedCRF, SelfTrainingCRF, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.metrics import span_f1_score

ESTIMATORS = {"entropy": EntropyRegularizedCRF, "self-training": SelfTrainingCRF}
N_LABELLED = 200


def draw_rows(draw, X_train, y_train, X_test, y_test, args):
    order = np.random.default_rng(draw).permutation(len(X_train))
    labelled = order[:N_LABELLED]
    pool = order[N_LABELLED:N_LABELLED + args.unlabelled]
    features = WindowFeatures().fit([X_train[i] for i in labelled])
    X = features.transform([X_train[i] for i in labelled])
    U = features.transform([X_train[i] for i in pool])
    T = features.transform(X_test)
    y = [y_train[i] for i in labelled]
    rows = {}
    variants = [None, args.sample] if draw % 2 == 0 else [args.sample, None]
    for name in args.estimators.split(","):
        for size in variants:
            model, seconds = timed_fit(ESTIMATORS[name](random_state=draw, n_jobs=args.n_jobs,
                                                        selection_unlabeled=size),
                                       X, y, X_unlabeled=U)
            rows[f"{name} {'all' if size is None else size}"] = {
                "f1": 100 * span_f1_score(y_test, model.predict(T)), "seconds": seconds,
                "best_params": model.best_params_, "best_iteration": model.best_iteration_}
        fixed = clone(model).set_params(early_stopping=False, **model.best_params_)
        if name == "self-training" or model.best_iteration_ == 0:
            # The rounds chosen; ER refits for its cap unless it kept no iteration.
            fixed.set_params(**{"semi_supervised_iterations" if name == "entropy"
                                else "max_rounds": model.best_iteration_})
        rows[f"{name} fixed"] = {"seconds": timed_fit(fixed, X, y, X_unlabeled=U)[1]}
    return rows


def report(records):
    for draw, rows in sorted(records.items()):
        for name, row in rows.items():
            chosen = ("" if "best_params" not in row else
                      f"  {row['best_params']}, iteration {row['best_iteration']}")
            f1 = f"{row['f1']:6.2f}" if "f1" in row else "      "
            print(f"draw {draw}  {name:22s} {f1}  {row['seconds']:7.1f} s{chosen}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--draws", type=int, default=2)
    parser.add_argument("--first-draw", type=int, default=0)
    parser.add_argument("--unlabelled", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--estimators", default="entropy,self-training")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--json", type=Path, default=Path("/tmp/selection_sample.json"))
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    records = json.loads(args.json.read_text()) if args.json.is_file() else {}
    if not args.report:
        splits = load_bc2gm(args.data_dir / "bc2gm")
        (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
        for draw in range(args.first_draw, args.first_draw + args.draws):
            if str(draw) in records:
                continue
            records[str(draw)] = draw_rows(draw, X_train, y_train, X_test, y_test, args)
            args.json.write_text(json.dumps(records, indent=1, default=float))
            report({str(draw): records[str(draw)]})
    report(records)


if __name__ == "__main__":
    main()

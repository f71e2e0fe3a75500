"""Second-order chains (issue #12): accuracy on handwriting and the cost of one evaluation.

Parts:

- ``ocr``: handwritten letters (``../shared/data/ocr``), draws of 2 labelled words per word
  type (110 words), every other word scored; per draw, `CRF` at order 1, at order 2 and at
  order 2 restricted to the label pairs seen (``all_possible_transitions=False``), with
  (c2, c2_transitions) chosen by cross-validation on the labelled words, and
  sklearn-crfsuite at the tutorial's c1 = c2 = 0.1. Letter error (%). The two folds hold one
  word of each type each, so that, as in the test, every held-out word's type was seen in
  training (random folds hold out word types never seen, and then prefer a strong prior on
  transitions, which costs 10-15 points on the test).
- ``speed``: one evaluation of the penalised log-likelihood and its gradient (the sparse
  products included) at order 1, order 2 and order 2 restricted, alternating, on CoNLL-2000 train
  (22 labels) and BC2GM train (3 labels); medians and their ratios. Also the share of label
  pairs and triples seen in training.
- ``conll``: CoNLL-2000 full training set, tutorial features: `CRF` (c2 = 1, 100 L-BFGS
  iterations, as ``bench_supervised.py``) for each model, span F1 on the test set and fit
  time.

Run from the repository (the script imports ``conll_features`` next to it)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_second_order.py --parts ocr,speed
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA, load_tutorial_conll2000
from sklearn.model_selection import GridSearchCV

from sklearn_ssl_crf import CRF, WindowFeatures, WindowRows
from sklearn_ssl_crf.datasets import load_bc2gm, read_ocr_letters
from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood
from sklearn_ssl_crf.utils._threads import single_threaded_blas

PARTS = ("ocr", "speed", "conll")
DRAWS = 10
PER_WORD = 2
C2_GRID = (0.1, 1.0, 10.0)
C2_TRANSITIONS_GRID = (None, 0.1, 0.01)
# The models compared: order 1, order 2 over every label triple, and order 2 restricted to
# the label pairs seen in training (``all_possible_transitions=False``).
MODELS = {"order 1": {"order": 1}, "order 2": {"order": 2},
          "order 2 restricted": {"order": 2, "all_possible_transitions": False}}


def letter_error(predicted, gold):
    wrong = [p != g for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs)]
    return 100.0 * float(np.mean(wrong))


def ocr_draw(draw, images, labels):
    """Errors of one draw: order 1 and order 2 with CV-chosen priors, and sklearn-crfsuite."""
    import sklearn_crfsuite

    rng = np.random.default_rng(draw)
    by_word = {}
    for i, letters in enumerate(labels):
        by_word.setdefault("".join(letters), []).append(i)
    labelled = np.array([i for word in sorted(by_word)
                         for i in rng.choice(by_word[word], PER_WORD, replace=False)])
    unlabelled = np.setdiff1d(np.arange(len(images)), labelled)
    # Emissions on the letter's own pixels (y_t only); the paper's CRF also fires the
    # neighbouring letters' pixels (x_{t-1}, x_{t+1}; He et al. 2013, section 4.3).
    rows = WindowRows(window=0).fit_transform(
        [images[i].astype(float) for i in np.concatenate([labelled, unlabelled])])
    X_labelled, X_scored = rows[:labelled.size], rows[labelled.size:]
    y_labelled = [labels[i] for i in labelled]
    gold = [labels[i] for i in unlabelled]
    record = {"draw": draw, "n_labelled": int(labelled.size),
              "n_scored_letters": int(sum(map(len, gold)))}
    for name, params in MODELS.items():
        started = time.perf_counter()
        # labelled holds the words of each type consecutively: fold k = each type's k-th.
        folds = [(np.flatnonzero(np.arange(labelled.size) % PER_WORD != k),
                  np.flatnonzero(np.arange(labelled.size) % PER_WORD == k))
                 for k in range(PER_WORD)]
        search = GridSearchCV(CRF(**params),
                              {"c2": list(C2_GRID), "c2_transitions": list(C2_TRANSITIONS_GRID)},
                              cv=folds)
        search.fit(X_labelled, y_labelled)
        cv_seconds = time.perf_counter() - started
        started = time.perf_counter()
        model = CRF(**params, **search.best_params_).fit(X_labelled, y_labelled)
        record[name] = {
            "error": letter_error(model.predict(X_scored), gold),
            "params": search.best_params_, "fit_seconds": time.perf_counter() - started,
            "cv_seconds": cv_seconds, "n_iter": model.n_iter_}
    as_dicts = [[{str(j): v for j, v in zip(row.indices.tolist(), row.data.tolist())}
                 for row in sequence] for sequence in rows]
    crfsuite = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                                    all_possible_transitions=True)
    crfsuite.fit(as_dicts[:labelled.size], y_labelled)
    record["sklearn-crfsuite"] = {
        "error": letter_error(crfsuite.predict(as_dicts[labelled.size:]), gold)}
    return record


def part_ocr(args):
    images, labels, _ = read_ocr_letters(args.data_dir / "ocr" / "letters-folds0-4.data.gz")
    records = []
    for draw in range(args.first_draw, args.first_draw + args.draws):
        record = ocr_draw(draw, images, labels)
        records.append(record)
        print(f"draw {draw}: " + ", ".join(
            f"{name} {record[name]['error']:.2f} ({record[name]['params']}, fit "
            f"{record[name]['fit_seconds']:.1f} s)" for name in MODELS)
            + f", sklearn-crfsuite {record['sklearn-crfsuite']['error']:.2f}", flush=True)
    print(f"\n### Handwriting: {PER_WORD} labelled words per word type, {len(records)} draws"
          "\n\n| model | letter error (%), mean ± std | min | max |\n|---|---|---|---|")
    for name in ("sklearn-crfsuite", *MODELS):
        errors = [record[name]["error"] for record in records]
        label = f"CRF, {name}" if name in MODELS else name + " 0.1/0.1"
        print(f"| {label} | {np.mean(errors):.2f} ± {np.std(errors):.2f} | "
              f"{min(errors):.2f} | {max(errors):.2f} |")
    for name in ("order 2", "order 2 restricted"):
        fits = [record[name]["fit_seconds"] / record["order 1"]["fit_seconds"]
                for record in records]
        print(f"\n{name}: fit over order 1's, median {np.median(fits):.1f}x")
    return records


def evaluation_times(X, y, repeat):
    """Median seconds of one objective evaluation of each of `MODELS`, alternating, at the
    weights of a short order-1 fit (realistic posteriors; the second-order weights 0)."""
    fitted = CRF(max_iterations=30).fit(X, y)
    times, objectives = {name: [] for name in MODELS}, {}
    for name, params in MODELS.items():
        model = CRF(**params)
        data = model._packed_training_data(X, y)
        layout = model._weight_layout(data)
        blocks = [fitted.state_weights_, fitted.transition_weights_]
        if params["order"] == 2:
            n_labels = len(fitted.classes_)
            blocks += [np.zeros((n_labels + 1, n_labels, n_labels)),
                       np.zeros((n_labels, n_labels))]
        objectives[name] = (penalised_negative_log_likelihood(data, layout, 1.0),
                            layout.vector(blocks))
    with single_threaded_blas():
        for _ in range(repeat):
            for name, (objective, theta) in objectives.items():
                started = time.perf_counter()
                objective(theta)
                times[name].append(time.perf_counter() - started)
    return {name: float(np.median(values)) for name, values in times.items()}


def seen_structure(y):
    """Label pairs and triples seen in training, against all possible."""
    labels = sorted({label for sequence in y for label in sequence})
    pairs = {(a, b) for s in y for a, b in zip(s, s[1:])}
    triples = {(a, b, c) for s in y for a, b, c in zip(s, s[1:], s[2:])}
    n = len(labels)
    return {"n_labels": n, "pairs": len(pairs), "triples": len(triples),
            "pair_share": len(pairs) / n ** 2, "triple_share": len(triples) / n ** 3}


def part_speed(args):
    results = {}
    X, y, *_ = load_tutorial_conll2000(args.data_dir)
    results["CoNLL-2000"] = dict(evaluation_times(X, y, args.repeat), **seen_structure(y))
    X, y = load_bc2gm(args.data_dir / "bc2gm")["train"]
    results["BC2GM"] = dict(evaluation_times(WindowFeatures().transform(X), y, args.repeat),
                            **seen_structure(y))
    print(f"\n### One evaluation (likelihood + gradient), median of {args.repeat}, "
          "alternating\n\n| corpus | labels | order 1 (s) | order 2 (s) | restricted (s) |"
          " order 2 / order 1 | restricted / order 1 | pairs seen | triples seen |"
          "\n|---|---|---|---|---|---|---|---|---|")
    for corpus, result in results.items():
        first = result["order 1"]
        print(f"| {corpus} | {result['n_labels']} | {first:.3f} | {result['order 2']:.3f} | "
              f"{result['order 2 restricted']:.3f} | {result['order 2'] / first:.1f}x | "
              f"{result['order 2 restricted'] / first:.1f}x | "
              f"{result['pairs']} ({100 * result['pair_share']:.0f}%)"
              f" | {result['triples']} ({100 * result['triple_share']:.0f}%) |")
    return results


def part_conll(args):
    from sklearn_ssl_crf.metrics import span_f1_score

    X, y, X_test, y_test, _ = load_tutorial_conll2000(args.data_dir)
    results = {}
    for name in args.models.split(","):
        started = time.perf_counter()
        model = CRF(max_iterations=100, **MODELS[name]).fit(X, y)
        seconds = time.perf_counter() - started
        results[name] = {"span_f1": span_f1_score(y_test, model.predict(X_test)),
                         "fit_seconds": seconds}
        print(name, results[name], flush=True)
    print("\n### CoNLL-2000, full training set, 100 L-BFGS iterations\n\n"
          "| model | span F1 (test) | fit (s) |\n|---|---|---|")
    for name, result in results.items():
        print(f"| {name} | {100 * result['span_f1']:.2f} | {result['fit_seconds']:.0f} |")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--first-draw", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="the models of the conll part (default: all)")
    args = parser.parse_args(argv)
    results = {}
    for part in args.parts.split(","):
        results[part] = {"ocr": part_ocr, "speed": part_speed, "conll": part_conll}[part](args)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()

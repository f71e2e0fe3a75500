"""The estimators as a user calls them: defaults, no dev set, no selection loop here (issue #28).

Every semi-supervised row is the estimator constructed with its defaults (only the data's
own choices given: the graph, the order) and fitted once; it chooses its priors, strengths
and iterations itself, by cross-validation over the labelled sentences. The baselines are
`CRFCV` (our CRF with c1/c2 chosen by the same cross-validation: the strongest supervised
baseline), sklearn-crfsuite at the tutorial's c1 = c2 = 0.1 and, where there is a graph,
`GraphPropagation` run to convergence. This script compares; it chooses nothing.

Parts, chosen with ``--parts`` (default: all):

``pos``
    Part-of-speech tagging (UPOS) on each UD language in ../shared/data (English-EWT,
    German-GSD, Italian-ISDT), dev and test pooled. Per draw (seeded): 100 labelled
    sentences, all others unlabelled and scored (transductive), as in He et al. (2013).
    Features `WindowFeatures(window=1, suffixes=(1, 2, 3))`; ``GraphPRCRF(graph='trigram')``
    builds the trigram graph of all the sentences. Rows: token error (%) of CRFCV,
    sklearn-crfsuite 0.1/0.1, GP, PR (q's labels, ``transduction_``) and PR-theta
    (``predict``), and `EntropyRegularizedCRF()`.
``ocr``
    Handwriting (OCR letters, folds 0-4): the paper's draw of 2 labelled words per word
    type, all other words unlabelled and scored. The graph: mutual 20-NN of the letters'
    pixels blurred by a Gaussian of 0.7 pixel (candidates above cosine 0.3, self weight 0.8),
    as in the gallery; CRF features: the letter's pixels and its neighbours' (order 1) or its
    own (``--order 2``). Rows: letter error (%) of CRFCV, GP and `GraphPRCRF` (q and theta).
``ner``
    BC2GM gene mentions: per draw 200 labelled and 2,000 unlabelled training sentences, the
    test split scored (span F1). Rows: CRFCV and sklearn-crfsuite 0.1/0.1 on plain
    `WindowFeatures()`, CRFCV on `WindowFeatures(clusters=WordClusters())` (clusters learned
    from the labelled and unlabelled sentences), `EntropyRegularizedCRF()` on both.

Each semi-supervised fit also records its time and the time of fits at the settings it
chose (``early_stopping=False``): for the chosen number of iterations, and for the
estimator's cap (what a fit at fixed settings runs): the default fit's cost in such fits
(the target: at most k + 1 = 6).

Finished draws are written to a JSON file per part (default /tmp/bench_defaults_PART.json)
and skipped on the next run; ``--report`` prints the tables from the files.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults.py --parts pos --draws 2
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults.py --parts ocr --draws 3
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults.py --parts ocr --order 2
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults.py --parts ner --draws 3
    python benchmarks/bench_defaults.py --parts pos,ocr,ner --report
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from bench_graph_pr import KNN_NEIGHBORS, KNN_SETTINGS, ocr_graph_vectors, token_errors
from conll_features import DEFAULT_DATA
from sklearn.base import clone

from sklearn_ssl_crf import (
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    WindowFeatures,
    WindowRows,
    WordClusters,
)
from sklearn_ssl_crf.datasets import load_bc2gm, read_conllu, read_ocr_letters
from sklearn_ssl_crf.graph import knn_graph
from sklearn_ssl_crf.metrics import span_f1_score

LANGUAGES = {"English": ("ud_english_ewt", "en_ewt"), "German": ("ud_german_gsd", "de_gsd"),
             "Italian": ("ud_italian_isdt", "it_isdt")}
POS_LABELLED = 100
OCR_PER_WORD = 2
NER_LABELLED, NER_UNLABELLED = 200, 2000
# The parameter capping each estimator's semi-supervised iterations.
ITERATION_CAPS = {"EntropyRegularizedCRF": "semi_supervised_iterations",
                  "GraphPRCRF": "em_iterations"}


def crfsuite_predict(X_train, y_train, X_test):
    """sklearn-crfsuite at the tutorial's c1 = c2 = 0.1 (dicts with str keys)."""
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                               all_possible_transitions=True)
    crf.fit(X_train, y_train)
    return crf.predict(X_test)


def timed_fit(estimator, *args, **kwargs):
    started = time.perf_counter()
    estimator.fit(*args, **kwargs)
    return estimator, time.perf_counter() - started


def fixed_setting_seconds(model, *args, **kwargs):
    """Seconds of fits at the settings ``model`` chose, with no selection: (a) for the
    chosen number of iterations (the refit's length), (b) for the estimator's own cap, as a
    user who fixes the settings runs it (``early_stopping=False``). The same fit when the
    chosen number is the cap (or no semi-supervised iteration was kept)."""
    fixed = clone(model).set_params(early_stopping=False, **model.best_params_)
    at_cap = timed_fit(fixed, *args, **kwargs)[1]
    name = ITERATION_CAPS.get(type(model).__name__)
    cap = fixed.get_params()[name]
    if model.best_iteration_ == 0 or (cap is not None and model.best_iteration_ >= cap):
        return at_cap, at_cap
    fixed.set_params(**{name: model.best_iteration_})
    return timed_fit(fixed, *args, **kwargs)[1], at_cap


def semi_supervised_row(model, seconds, fixed_seconds, error):
    chosen, at_cap = fixed_seconds
    # The per-fold scores of every candidate, so that a selection rule can be judged on
    # a run without refitting it.
    cv_results = {name: values if name == "params" else np.asarray(values).tolist()
                  for name, values in (model.cv_results_ or {}).items()}
    return {"error": error, "seconds": seconds, "fixed_seconds": chosen,
            "cap_seconds": at_cap, "best_params": model.best_params_,
            "best_iteration": model.best_iteration_, "cv_results": cv_results}


# -- part-of-speech ---------------------------------------------------------------------

def pos_pool(draw, sentences, tags, quick=False):
    """Draw ``draw`` of the POS protocol: the pool's features (labelled sentences first),
    its partial labels, the gold labels of the unlabelled sentences and the number
    labelled."""
    rng = np.random.default_rng(draw)
    order = rng.permutation(len(sentences))
    labelled, unlabelled = order[:POS_LABELLED], order[POS_LABELLED:]
    if quick:
        unlabelled = unlabelled[:300]
    pool = np.concatenate([labelled, unlabelled])
    features = WindowFeatures(window=1, suffixes=(1, 2, 3))
    X = features.fit_transform([sentences[i] for i in pool])
    y_labelled = [tags[i] for i in labelled]
    gold = [tags[i] for i in unlabelled]
    return X, y_labelled + [None] * len(unlabelled), gold, len(labelled)


def pos_draw(draw, sentences, tags, args):
    X, y_partial, gold, n = pos_pool(draw, sentences, tags, args.quick)
    y_labelled = y_partial[:n]
    rows, fits = {}, {"random_state": draw, "n_jobs": args.n_jobs}
    crf, seconds = timed_fit(CRFCV(**fits), X[:n], y_labelled)
    rows["CRFCV"] = {"error": token_errors(crf.predict(X[n:]), gold), "seconds": seconds,
                     "best_params": crf.best_params_}
    rows["sklearn-crfsuite 0.1/0.1"] = {
        "error": token_errors(crfsuite_predict(X[:n], y_labelled, X[n:]), gold)}
    gp, seconds = timed_fit(GraphPropagation(graph="trigram"),
                            X, y_partial)
    rows["GP"] = {"error": token_errors(gp.transduction_[n:], gold), "seconds": seconds}
    pr, seconds = timed_fit(GraphPRCRF(graph="trigram", **fits), X, y_partial)
    fixed = fixed_setting_seconds(pr, X, y_partial)
    rows["PR"] = semi_supervised_row(pr, seconds, fixed,
                                     token_errors(pr.transduction_[n:], gold))
    rows["PR-theta"] = {"error": token_errors(pr.predict(X[n:]), gold)}
    if not args.no_entropy:
        er, seconds = timed_fit(EntropyRegularizedCRF(**fits), X[:n], y_labelled,
                                X_unlabeled=X[n:])
        fixed = fixed_setting_seconds(er, X[:n], y_labelled, X_unlabeled=X[n:])
        rows["ER"] = semi_supervised_row(er, seconds, fixed, token_errors(er.predict(X[n:]),
                                                                          gold))
    return {"rows": rows, "n_unlabelled": len(gold)}


def language_pool(data_dir, language):
    """A language's UD dev + test sentences and their tags: the POS pool."""
    folder, prefix = LANGUAGES[language]
    sentences, tags = [], []
    for split in ("dev", "test"):
        X, y = read_conllu(data_dir / folder / f"{prefix}-ud-{split}.conllu")
        sentences += X
        tags += y
    return sentences, tags


def part_pos(args):
    records = {}
    for language in LANGUAGES:
        sentences, tags = language_pool(args.data_dir, language)
        records[language] = run_draws(
            f"pos-{language}", args, lambda draw: pos_draw(draw, sentences, tags, args))
    return records


# -- handwriting ------------------------------------------------------------------------

def ocr_pool(draw, images, labels, vectors, order=1, quick=False):
    """Draw ``draw`` of the handwriting protocol: the pool's pixel features (labelled words
    first; a window of one letter at order 1, the letter alone at order 2), its k-NN graph,
    its partial labels, the gold labels of the unlabelled words and the number labelled."""
    rng = np.random.default_rng(draw)
    words = ["".join(letters) for letters in labels]
    by_word = {}
    for i, word in enumerate(words):
        by_word.setdefault(word, []).append(i)
    labelled = np.array([i for word in sorted(by_word)
                         for i in rng.choice(by_word[word], OCR_PER_WORD, replace=False)])
    unlabelled = rng.permutation(np.setdiff1d(np.arange(len(images)), labelled))
    if quick:
        unlabelled = unlabelled[:300]
    pool = np.concatenate([labelled, unlabelled])
    window = 1 if order == 1 else 0
    X = WindowRows(window=window).fit_transform([images[i].astype(float) for i in pool])
    graph = knn_graph([vectors[i] for i in pool], n_neighbors=KNN_NEIGHBORS, **KNN_SETTINGS)
    y_labelled = [labels[i] for i in labelled]
    gold = [labels[i] for i in unlabelled]
    return X, graph, y_labelled + [None] * len(unlabelled), gold, len(labelled)


def ocr_draw(draw, images, labels, vectors, args):
    X, graph, y_partial, gold, n = ocr_pool(draw, images, labels, vectors, args.order,
                                            args.quick)
    y_labelled = y_partial[:n]
    rows = {}
    fits = {"order": args.order, "random_state": draw, "n_jobs": args.n_jobs}
    crf, seconds = timed_fit(CRFCV(**fits), X[:n], y_labelled)
    rows["CRFCV"] = {"error": token_errors(crf.predict(X[n:]), gold), "seconds": seconds,
                     "best_params": crf.best_params_}
    gp, seconds = timed_fit(GraphPropagation(graph=graph),
                            X, y_partial)
    rows["GP"] = {"error": token_errors(gp.transduction_[n:], gold), "seconds": seconds}
    pr, seconds = timed_fit(GraphPRCRF(graph=graph, **fits),
                            X, y_partial)
    fixed = fixed_setting_seconds(pr, X, y_partial)
    rows["PR"] = semi_supervised_row(pr, seconds, fixed,
                                     token_errors(pr.transduction_[n:], gold))
    rows["PR-theta"] = {"error": token_errors(pr.predict(X[n:]), gold)}
    return {"rows": rows, "n_unlabelled": len(gold)}


def part_ocr(args):
    images, labels, _ = read_ocr_letters(args.data_dir / "ocr" / "letters-folds0-4.data.gz")
    vectors = ocr_graph_vectors(images, 0.7)
    return {f"order {args.order}": run_draws(
        f"ocr{args.order}", args, lambda draw: ocr_draw(draw, images, labels, vectors, args))}


# -- gene mentions ----------------------------------------------------------------------

def ner_draw(draw, X_train, y_train, X_test, y_test, args):
    rng = np.random.default_rng(draw)
    order = rng.permutation(len(X_train))
    n_unlabelled = 300 if args.quick else NER_UNLABELLED
    labelled, unlabelled = order[:NER_LABELLED], order[NER_LABELLED:NER_LABELLED + n_unlabelled]
    sentences = [X_train[i] for i in labelled]
    y_labelled = [y_train[i] for i in labelled]
    rows = {}
    plain = WindowFeatures().fit(sentences)
    clusters = WindowFeatures(clusters=WordClusters(random_state=draw)).fit(
        sentences + [X_train[i] for i in unlabelled])
    for name, features in (("plain", plain), ("clusters", clusters)):
        X, U, T = (features.transform(part) for part in
                   (sentences, [X_train[i] for i in unlabelled], X_test))
        fits = {"random_state": draw, "n_jobs": args.n_jobs}
        crf, seconds = timed_fit(CRFCV(**fits), X, y_labelled)
        rows[f"CRFCV {name}"] = {"f1": 100 * span_f1_score(y_test, crf.predict(T)),
                                 "seconds": seconds, "best_params": crf.best_params_}
        if name == "plain":
            rows["sklearn-crfsuite 0.1/0.1 plain"] = {
                "f1": 100 * span_f1_score(y_test, crfsuite_predict(X, y_labelled, T))}
        er, seconds = timed_fit(EntropyRegularizedCRF(**fits), X, y_labelled,
                                X_unlabeled=U)
        fixed = fixed_setting_seconds(er, X, y_labelled, X_unlabeled=U)
        row = semi_supervised_row(er, seconds, fixed, None)
        del row["error"]
        row["f1"] = 100 * span_f1_score(y_test, er.predict(T))
        rows[f"ER {name}"] = row
    return {"rows": rows}


def part_ner(args):
    splits = load_bc2gm(args.data_dir / "bc2gm")
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    if args.quick:
        X_test, y_test = X_test[:500], y_test[:500]
    return {"BC2GM": run_draws("ner", args, lambda draw: ner_draw(
        draw, X_train, y_train, X_test, y_test, args))}


# -- records and tables -----------------------------------------------------------------

def run_draws(name, args, run_one):
    path = Path(str(args.json).replace("PART", name))
    records = json.loads(path.read_text()) if path.is_file() else {}
    if not args.report:
        for draw in range(args.first_draw, args.first_draw + args.draws):
            if str(draw) in records:
                continue
            started = time.perf_counter()
            records[str(draw)] = run_one(draw)
            path.write_text(json.dumps(records, indent=1, default=float))
            print(f"{name} draw {draw} in {time.perf_counter() - started:.0f} s: " + ", ".join(
                f"{row} {values.get('error', values.get('f1')):.2f}"
                for row, values in records[str(draw)]["rows"].items()), flush=True)
    return records


def table(title, records, score):
    """Per draw and mean, one column per row name."""
    draws = sorted(records, key=int)
    if not draws:
        return
    names = list(records[draws[0]]["rows"])
    print(f"\n### {title}\n")
    print("| draw | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for draw in draws:
        rows = records[draw]["rows"]
        print(f"| {draw} | " + " | ".join(f"{rows[n][score]:.2f}" for n in names) + " |")
    means = {n: np.mean([records[d]["rows"][n][score] for d in draws]) for n in names}
    print("| mean | " + " | ".join(f"{means[n]:.2f}" for n in names) + " |")
    for draw in draws:
        for name, row in records[draw]["rows"].items():
            if "fixed_seconds" in row:
                at_cap = row.get("cap_seconds", row["fixed_seconds"])
                print(f"- draw {draw}, {name}: chose {row['best_params']}, iteration "
                      f"{row['best_iteration']}; fit {row['seconds']:.0f} s, "
                      f"{row['seconds'] / row['fixed_seconds']:.1f}x the fixed-setting fit "
                      f"of the chosen length ({row['fixed_seconds']:.0f} s), "
                      f"{row['seconds'] / at_cap:.1f}x the one to the cap ({at_cap:.0f} s)")
            elif "seconds" in row and name.startswith("CRFCV"):
                print(f"- draw {draw}, {name}: chose {row['best_params']}, "
                      f"{row['seconds']:.1f} s")
    return means


PARTS = {"pos": part_pos, "ocr": part_ocr, "ner": part_ner}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--first-draw", type=int, default=0)
    parser.add_argument("--order", type=int, choices=(1, 2), default=1,
                        help="the chain's order in part ocr")
    parser.add_argument("--no-entropy", action="store_true",
                        help="part pos without EntropyRegularizedCRF")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="n_jobs of every estimator (the folds' fits run in parallel)")
    parser.add_argument("--json", default="/tmp/bench_defaults_PART.json")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--quick", action="store_true", help="smoke run on small data")
    args = parser.parse_args(argv)
    for name in args.parts.split(","):
        results = PARTS[name](args)
        for corpus, records in results.items():
            score = "f1" if name == "ner" else "error"
            table(f"{name}: {corpus} ({'span F1' if score == 'f1' else 'error %'})", records,
                  score)


if __name__ == "__main__":
    main()

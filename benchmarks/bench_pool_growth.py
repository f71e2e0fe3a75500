"""Gains as the unlabelled text grows (issue #43, part 3).

``--part ner``: ``bench_defaults.py``'s BC2GM protocol (draw d: 200 labelled training
sentences, span F1 on the 5,038 test sentences) with the unlabelled pool growing: the
first ``n`` of the other training sentences in the draw's shuffled order, for each ``n``
of ``--sizes`` ("all": every training sentence outside the labelled 200). At each size,
`EntropyRegularizedCRF()` with its defaults on ``WindowFeatures(clusters=WordClusters())``
features, the clusters fitted on the labelled and unlabelled sentences of that size (so a
larger pool also gives better clusters); its seconds, and its gain over `CRFCV()` on plain
features (the same at every size: it sees only the labelled sentences).

``--part pos``: ``bench_defaults.py``'s POS protocol on UD English-EWT (draw d: 100
labelled sentences of its dev + test, the other 3,878 unlabelled and scored), the pool
grown by the first ``n`` of the data folder's other English sentences (CoNLL-2000 train +
test, BC2GM train + devel + test: 31,179, shuffled with seed 0), for each ``n`` of
``--sizes``. At each size `GraphPRCRF(graph='trigram')` and `GraphPropagation(graph=
'trigram')` with their defaults on the whole pool (features and graph of the pool), scored
on the same EWT tokens (token error), against `CRFCV()` on the 100 labelled sentences.
``--selection-unlabelled N|all`` sets graph-PR's ``selection_unlabeled`` (default: its
own), and ``--fixed`` also times the fixed-setting fit that the default fit's refit
replays (its settings, its number of EM iterations, no selection).

Usage (from ``benchmarks/``)::

    OPENBLAS_NUM_THREADS=1 python bench_pool_growth.py --part ner --draws 1 --sizes 2000 5000 all
    OPENBLAS_NUM_THREADS=1 python bench_pool_growth.py --part pos --draws 1 --sizes 0 6000 all
    OPENBLAS_NUM_THREADS=1 python bench_pool_growth.py --part pos --sizes all --fixed
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from bench_defaults import language_pool, pos_pool, timed_fit
from bench_graph_pr import token_errors
from conll_features import DEFAULT_DATA
from sklearn.base import clone

from sklearn_ssl_crf import (
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    WindowFeatures,
    WordClusters,
)
from sklearn_ssl_crf.datasets import load_bc2gm, load_conll2000
from sklearn_ssl_crf.metrics import span_f1_score

N_LABELLED = 200


def pool_draw(draw, sizes, options, X_train, y_train, X_test, y_test, record):
    """Fill ``record`` (a dict, saved by the caller after each step) for one draw."""
    order = np.random.default_rng(draw).permutation(len(X_train))
    labelled, rest = order[:N_LABELLED], order[N_LABELLED:]
    sentences = [X_train[i] for i in labelled]
    y_labelled = [y_train[i] for i in labelled]
    if "CRFCV plain" not in record:
        plain = WindowFeatures().fit(sentences)
        crf, seconds = timed_fit(CRFCV(random_state=draw), plain.transform(sentences),
                                 y_labelled)
        record["CRFCV plain"] = {"f1": 100 * span_f1_score(
            y_test, crf.predict(plain.transform(X_test))), "seconds": seconds,
            "best_params": crf.best_params_}
        yield
    for size in sizes:
        n = len(rest) if size == "all" else int(size)
        key = f"ER clusters {n}"
        if key in record:
            continue
        unlabelled = [X_train[i] for i in rest[:n]]
        features = WindowFeatures(clusters=WordClusters(random_state=draw))
        started = time.perf_counter()
        features.fit(sentences + unlabelled)
        X, U, T = (features.transform(part) for part in (sentences, unlabelled, X_test))
        featurised = time.perf_counter() - started
        er, seconds = timed_fit(EntropyRegularizedCRF(random_state=draw), X, y_labelled,
                                X_unlabeled=U)
        record[key] = {"unlabelled": n, "f1": 100 * span_f1_score(y_test, er.predict(T)),
                       "seconds": seconds, "featurise_seconds": featurised,
                       "best_params": er.best_params_, "best_iteration": er.best_iteration_}
        yield


def other_english(data_dir):
    """The data folder's English sentences outside UD English-EWT, as words, shuffled."""
    conll = load_conll2000(data_dir / "conll2000")
    bc2gm = load_bc2gm(data_dir / "bc2gm")
    text = [[word for word, _ in sentence] for split in ("train", "test")
            for sentence in conll[split][0]]
    text += [list(sentence) for split in ("train", "devel", "test")
             for sentence in bc2gm[split][0]]
    return [text[i] for i in np.random.default_rng(0).permutation(len(text))]


def pos_growth_draw(draw, sizes, options, sentences, tags, extra, record):
    """Fill ``record`` for one POS draw (the EWT pool grown by ``extra``'s sentences)."""
    sample = options.selection_unlabelled
    settings = {} if sample is None else {
        "selection_unlabeled": None if sample == "all" else int(sample)}
    X, y_partial, gold, n = pos_pool(draw, sentences, tags)
    n_scored = len(gold)
    if "CRFCV" not in record:
        crf, seconds = timed_fit(CRFCV(random_state=draw), X[:n], y_partial[:n])
        record["CRFCV"] = {"error": token_errors(crf.predict(X[n:]), gold),
                           "seconds": seconds, "best_params": crf.best_params_}
        yield
    ewt = np.random.default_rng(draw).permutation(len(sentences))
    words = [sentences[i] for i in ewt]  # labelled first, as pos_pool orders them
    for size in sizes:
        m = len(extra) if size == "all" else int(size)
        key = f"PR {m}" + ("" if sample is None else f" sample {sample}")
        if key in record:
            continue
        pool = WindowFeatures(window=1, suffixes=(1, 2, 3)).fit_transform(words + extra[:m])
        partial = y_partial + [None] * m
        gp, gp_seconds = timed_fit(GraphPropagation(graph="trigram"), pool, partial)
        pr, seconds = timed_fit(GraphPRCRF(graph="trigram", random_state=draw, **settings),
                                pool, partial)
        fixed = None
        if options.fixed:
            replay = clone(pr).set_params(early_stopping=False, **pr.best_params_,
                                          em_iterations=pr.best_iteration_)
            fixed = timed_fit(replay, pool, partial)[1]
        record[key] = {
            "extra": m, "error": token_errors(pr.transduction_[n:n + n_scored], gold),
            "seconds": seconds, "best_params": pr.best_params_,
            "best_iteration": pr.best_iteration_,
            "GP error": token_errors(gp.transduction_[n:n + n_scored], gold),
            "GP seconds": gp_seconds, "selection_unlabeled": pr.selection_unlabeled,
            "fixed_seconds": fixed,
            # The folds' mean score at every EM iteration of each candidate (the choice).
            "mean_test_score": np.asarray(pr.cv_results_["mean_test_score"]).tolist(),
            "params": pr.cv_results_["params"]}
        yield


def report(part, records):
    if part == "ner":
        print("| draw | unlabelled | ER clusters F1 | gain over CRFCV plain | ER seconds | "
              "featurise seconds | chosen |")
        print("|---:|---:|---:|---:|---:|---:|---|")
    else:
        print("| draw | other sentences | sample | CRFCV | GP | PR | gain over the better | "
              "PR seconds | fixed fit s | chosen |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for draw, record in sorted(records.items()):
        for key, row in record.items():
            if key.startswith("ER clusters"):
                baseline = record["CRFCV plain"]["f1"]
                print(f"| {draw} | {row['unlabelled']:,} | {row['f1']:.2f} | "
                      f"{row['f1'] - baseline:+.2f} | {row['seconds']:.0f} | "
                      f"{row['featurise_seconds']:.0f} | {row['best_params']}, "
                      f"{row['best_iteration']} its |")
            elif key.startswith("PR "):
                better = min(record["CRFCV"]["error"], row["GP error"])
                fixed = row.get("fixed_seconds")
                print(f"| {draw} | {row['extra']:,} | {row.get('selection_unlabeled', 'all')} "
                      f"| {record['CRFCV']['error']:.2f} | "
                      f"{row['GP error']:.2f} | {row['error']:.2f} | "
                      f"{better - row['error']:+.2f} | {row['seconds']:.0f} | "
                      f"{'-' if fixed is None else f'{fixed:.0f}'} | "
                      f"{row['best_params']}, {row['best_iteration']} its |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--part", choices=("ner", "pos"), default="ner")
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--first-draw", type=int, default=0)
    parser.add_argument("--sizes", nargs="+", default=["2000", "5000", "all"])
    parser.add_argument("--selection-unlabelled", help="graph-PR's selection_unlabeled: "
                        "N or all (default: its own)")
    parser.add_argument("--fixed", action="store_true",
                        help="also time graph-PR's fixed-setting fit")
    parser.add_argument("--json", type=Path, default=Path("/tmp/bench_pool_growth.json"))
    args = parser.parse_args(argv)
    records = json.loads(args.json.read_text()) if args.json.is_file() else {}
    if args.part == "ner":
        splits = load_bc2gm(args.data_dir / "bc2gm")
        data = (*splits["train"], *splits["test"])
        steps = pool_draw
    else:
        data = (*language_pool(args.data_dir, "English"), other_english(args.data_dir))
        steps = pos_growth_draw
    for draw in range(args.first_draw, args.first_draw + args.draws):
        record = records.setdefault(str(draw), {})
        for _ in steps(draw, args.sizes, args, *data, record):
            args.json.write_text(json.dumps(records, indent=1, default=float))
    report(args.part, records)


if __name__ == "__main__":
    main()

"""Benchmarks of graph posterior regularisation (He, Gillenwater & Taskar 2013), issue #11.

Parts, chosen by name with ``--parts`` (default: all of them):

``pos``
    (a) Part-of-speech tagging on UD English-EWT, dev and test pooled (4,078 sentences, UPOS
    tags). Per draw (seeded): 500 sentences held out, 100 labelled, all the others
    unlabelled and scored (transductive). Rows: ``CRF`` (``c1`` and ``c2`` by 3-fold
    cross-validation on the labelled sentences, over {0, 0.1} x {0.001, ..., 10}),
    ``sklearn-crfsuite`` at the tutorial's c1 = c2 = 0.1 and ``sklearn-crfsuite tuned`` (the
    same cross-validation and grid), ``GP`` (`GraphPropagation`), ``GP->CRF`` (`CRF` on GP's
    labels), ``PR1`` and ``PR`` (`GraphPRCRF` after 1 and after T EM iterations, the CRF's
    ``c1`` and ``c2``, M-steps of at most 50 L-BFGS iterations). ``lam`` from {0.1, 0.5, 1,
    2}, as the paper does, and T from 1..10 are chosen together by 3-fold cross-validation
    on the labelled sentences: each fold is made unlabelled in turn and is the dev set of a
    10-iteration fit, whose theta is scored on it after every EM iteration. Errors (%): all
    unlabelled tokens, the unlabelled tokens whose word is not in the labelled sentences,
    and theta's on the held-out sentences. Graph: `trigram_graph` (k = 60) of the labelled
    and unlabelled sentences. Features: `WindowFeatures(suffixes=(1, 2, 3))`.
``ocr``
    (b) Handwriting, OCR letters (25,725 letters in 3,405 words of 55 word types). Per
    draw: 2 labelled words of each word type, all the others unlabelled and scored. The
    same rows and protocol, letter error (%). CRF features: `WindowRows` of the pixels (the
    letter and its neighbours). Graph: `knn_graph` (k = 20, ``min_similarity=0.3``,
    ``self_weight=0.8``) of the pixels blurred by a Gaussian of 0.7 pixel, our stand-in for
    the paper's earth mover's distance.
``estep``
    (c) One E-step iteration (q's forward-backward over the unlabelled sequences, their
    vertex sums, the penalty and its gradient) against one supervised log-likelihood
    evaluation of the same sequences with their gold labels, alternated, median ratio.
``graph``
    Construction time and peak memory of the similarity graphs of `sklearn_ssl_crf.graph`.
    `trigram_graph` (k = 60) runs on growing prefixes of real text, CoNLL-2000 train + test
    and then BC2GM train + devel + test, each prefix the first sentences that hold the wanted
    number of trigram types. `knn_graph` (k = 20, ``min_similarity=0.3``, ``self_weight=0.8``:
    the paper's handwriting settings) runs on the first letters of the OCR words (25,725 in
    all) and, for larger sizes, on random 0/1 "images" of 128 pixels with the letters' share
    of ink, in words of 8 letters. Every graph is built under tracemalloc for the peak of
    memory allocated during construction (NumPy and SciPy arrays; BLAS work buffers are not
    traced), then again without tracemalloc for the seconds; a build over 150 seconds is not
    repeated and shows the traced seconds (tracemalloc slows the kNN build by about 7 %).
    "graph MB" is the size of the final weights and token map; "B / (vertex k)" is the peak
    in bytes per vertex and neighbour; the slopes are the log-log growth of time and peak
    against the previous size. Reading the input is not measured.

``--clusters`` (issue #13) adds to the POS features the `WordClusters` of each draw's
labelled and unlabelled sentences (``min_count=2``); the CRF's priors, lambda and T are
cross-validated with them.

``--order 2`` runs parts ``pos`` and ``ocr`` with second-order CRFs (issue #12): every CRF
row (CRF, GP->CRF, PR1, PR) at order 2, its ``c2`` and ``c2_transitions`` chosen together
by the cross-validation (``c2_transitions`` from {c2, 0.1, 0.01}); sklearn-crfsuite stays
first-order. On handwriting the features are then the letter's own pixels (``WindowRows``
with window 0, the paper's emissions), the cross-validation folds hold one word of each type
each (as the test: every scored word's type is seen in training), and lambda and T are
chosen with 5-iteration fits. On POS, each draw takes lambda and T from its order-1 run
(read from ``--json``), since their CV at order 2 would take about 40 minutes a draw.

Parts ``pos`` and ``ocr`` write every finished draw to a JSON file (default
/tmp/bench_graph_pr_PART.json) and resume from it; ``--report`` prints their tables from
the files without running anything. On the 2-core machine, with the two parts in two
processes, a POS draw took 8-13 minutes and an OCR draw 6-14 (most of it the
cross-validation's 12 fits); ``--quick`` is a smoke run of a minute.

Part ``graph``'s defaults: trigram sizes 1,000 / 10,000 / 100,000 / 300,000 types; kNN sizes
1,000 / 10,000 / 25,725 (OCR) / 100,000 (random). On the 2-core machine, shared with other
jobs (load average 2-3), the part took 12 minutes, 8 of them the kNN graph of 100,000
letters (the similarity of every pair is computed: 10^10 pairs, two dense products of 384
columns in all); ``--knn-sizes 1000 10000 25725`` leaves about 4.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr.py --parts pos
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr.py --parts ocr
    python benchmarks/bench_graph_pr.py --parts pos,ocr --report
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr.py --parts ocr --order 2
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr.py --parts pos --order 2 \
        --json /tmp/bench_graph_pr_pos2.json /tmp/bench_graph_pr_pos.json
    python benchmarks/bench_graph_pr.py --parts estep,graph
    python benchmarks/bench_graph_pr.py --parts pos,ocr --quick --pos-draws 1 --ocr-draws 1
"""

import argparse
import gzip
import json
import math
import os
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA
from scipy.ndimage import gaussian_filter
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_ssl_crf import (
    CRF,
    GraphPRCRF,
    GraphPropagation,
    WindowFeatures,
    WindowRows,
    WordClusters,
    graph,
)
from sklearn_ssl_crf._threads import single_threaded_blas
from sklearn_ssl_crf._validation import encode_labels
from sklearn_ssl_crf.crf import _penalised_negative_log_likelihood
from sklearn_ssl_crf.datasets import (
    load_bc2gm,
    load_conll2000,
    load_ud_english_ewt,
    read_ocr_letters,
)
from sklearn_ssl_crf.graph import knn_graph, trigram_graph
from sklearn_ssl_crf.graph_pr import _ExpectationMaximisation
from sklearn_ssl_crf.packing import ChunkedSequences
from sklearn_ssl_crf.parameters import WeightLayout
from sklearn_ssl_crf.penalties import GraphLaplacianPenalty

TRIGRAM_NEIGHBORS = 60
KNN_NEIGHBORS = 20
KNN_SETTINGS = {"min_similarity": 0.3, "self_weight": 0.8}
RANDOM_WORD_LENGTH = 8
# Builds longer than this (seconds) run once, under tracemalloc: the numeric work dominates
# them, which tracemalloc slows by a few per cent only.
LONG_BUILD = 150


# --- part "graph" -----------------------------------------------------------------------

def text_prefixes(data_dir, sizes):
    """For each size, the shortest prefix of the sentences with at least that many trigram
    types (sizes beyond the corpus are left out)."""
    conll = load_conll2000(data_dir / "conll2000")
    bc2gm = load_bc2gm(data_dir / "bc2gm")
    text = [[word for word, _ in sentence]
            for split in ("train", "test") for sentence in conll[split][0]]
    text += [sentence for split in ("train", "devel", "test") for sentence in bc2gm[split][0]]
    token_vertices = graph._trigram_occurrences(text, "word.lower")[2]
    # Vertices are numbered in order of first appearance, so type m first appears in the
    # sentence of the first token of vertex m - 1.
    with_vertex = np.flatnonzero(token_vertices >= 0)
    _, first = np.unique(token_vertices[with_vertex], return_index=True)
    sentence_of_token = np.repeat(np.arange(len(text)), [len(sentence) for sentence in text])
    first_sentence = sentence_of_token[with_vertex[first]]
    return [(size, text[:first_sentence[size - 1] + 1]) for size in sizes
            if size <= first_sentence.size]


def letter_images(data_dir, sizes, seed=0):
    """For each size, that many letter images as words (lists of rows): the OCR letters, then
    random 0/1 images with the same share of ink."""
    path = data_dir / "ocr" / "letters-folds0-4.data.gz"
    with gzip.open(path, "rt") as lines:
        fields = [line.rstrip("\n").split("\t") for line in lines if line.strip()]
    word_ids = np.array([int(row[3]) for row in fields])
    pixels = np.array([row[6:134] for row in fields], dtype=np.float64)
    rng = np.random.default_rng(seed)
    prefixes = []
    for size in sizes:
        if size <= len(fields):
            # Consecutive lines of a word are its letters in order; cut between words.
            ends = np.flatnonzero(np.diff(word_ids[:size], append=-1))
            words = np.split(pixels[:size], ends[:-1] + 1)
            prefixes.append((size, "OCR letters", words))
        else:
            images = (rng.random((size, pixels.shape[1])) < pixels.mean()).astype(np.float64)
            words = np.split(images, np.arange(RANDOM_WORD_LENGTH, size, RANDOM_WORD_LENGTH))
            prefixes.append((size, "random 0/1 pixels", words))
    return prefixes


def measure(build):
    """Traced peak of the memory allocated by ``build()`` (bytes), the seconds of an untraced
    call, and the result. A build that takes over `LONG_BUILD` seconds under tracemalloc is
    not run again: its seconds are those of the traced run (marked ``traced``)."""
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    result = build()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] - baseline
    tracemalloc.stop()
    if seconds > LONG_BUILD:
        return f"{seconds:.1f} traced", seconds, peak, result
    start = time.perf_counter()
    build()
    seconds = time.perf_counter() - start
    return f"{seconds:.2f}", seconds, peak, result


def graph_nbytes(similarity_graph):
    weights = similarity_graph.weights
    return (weights.data.nbytes + weights.indices.nbytes + weights.indptr.nbytes
            + similarity_graph.token_vertices.nbytes)


class Table:
    """A Markdown table of graph builds, printed a row at a time (large sizes take minutes)."""

    def __init__(self, title, n_neighbors):
        self.n_neighbors, self.previous = n_neighbors, None
        print(f"\n### {title}\n")
        print("| input | vertices | tokens | edges | seconds | peak MB | graph MB "
              "| B / (vertex k) | time slope | memory slope |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)

    def add(self, source, built, shown, seconds, peak):
        slopes = ["", ""]
        if self.previous is not None:
            growth = math.log(built.n_vertices / self.previous[0])
            slopes = [f"{math.log(seconds / self.previous[1]) / growth:.2f}",
                      f"{math.log(peak / self.previous[2]) / growth:.2f}"]
        print(f"| {source} | {built.n_vertices:,} | {built.n_tokens:,} | "
              f"{built.weights.nnz // 2:,} | {shown} | {peak / 1e6:.1f} | "
              f"{graph_nbytes(built) / 1e6:.1f} | "
              f"{peak / (built.n_vertices * self.n_neighbors):.0f} | {slopes[0]} | "
              f"{slopes[1]} |", flush=True)
        self.previous = built.n_vertices, seconds, peak


def part_graph(args):
    print(f"## graph construction (2 runs per size: traced, then timed; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start)")
    table = Table(f"trigram_graph, k = {TRIGRAM_NEIGHBORS}", TRIGRAM_NEIGHBORS)
    for size, text in text_prefixes(args.data_dir, args.trigram_sizes):
        shown, seconds, peak, built = measure(
            lambda text=text: graph.trigram_graph(text, n_neighbors=TRIGRAM_NEIGHBORS))
        table.add(f"text, {len(text):,} sentences", built, shown, seconds, peak)
    settings = ", ".join(f"{name}={value}" for name, value in KNN_SETTINGS.items())
    table = Table(f"knn_graph, k = {KNN_NEIGHBORS}, {settings}", KNN_NEIGHBORS)
    for size, source, words in letter_images(args.data_dir, args.knn_sizes):
        shown, seconds, peak, built = measure(
            lambda words=words: graph.knn_graph(words, n_neighbors=KNN_NEIGHBORS,
                                                **KNN_SETTINGS))
        table.add(source, built, shown, seconds, peak)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


LAMBDAS = (0.1, 0.5, 1.0, 2.0)
# "schedule": lambda and the number of EM iterations chosen together by cross-validation
# (θ's accuracy on the held-out fold after every EM iteration); the final fit runs that many.
# "c1_grid" (issue #13): the supervised CRFs' c1 is cross-validated with c2, so that the
# baselines are the strongest (issue #11's runs had c1 = 0).
POS_SETTINGS = {"held_out": 500, "labelled": 100, "unlabelled": 0, "cv_em_iterations": 10,
                "mstep_iterations": 50, "protocol": "schedule", "order": 1,
                "c1_grid": [0.0, 0.1]}
# At order 2 a POS draw's CV of lambda and T would take about 40 minutes: the order-2 rows
# take each draw's lambda and T from its order-1 run ("order-1 schedule"), so that the order
# (and the CRF's priors, chosen by CV at each order) is all that differs.
POS_ORDER2 = {"order": 2, "protocol": "order-1 schedule"}
# With --clusters (issue #13) the POS features add `WordClusters` learned from the draw's
# labelled and unlabelled sentences.
POS_CLUSTERS = {"clusters": {"n_clusters": [64, 256, 1024], "min_count": 2, "random_state": 0}}
POS_QUICK = {"held_out": 200, "labelled": 60, "unlabelled": 300, "cv_em_iterations": 2}
# Order 1 keeps the features and folds of issue #11's run. Order 2 has the paper's emissions
# (the letter's own pixels, window 0) and folds holding one word of each type each, as the
# test does (random folds hold out word types never seen, and then prefer a strong prior on
# transitions); 5 EM iterations in the CV, since order 2's q settles within a few.
OCR_SETTINGS = {"per_word": 2, "unlabelled": 0, "cv_em_iterations": 10,
                "mstep_iterations": 50, "sigma": 0.7, "protocol": "schedule", "order": 1,
                "window": 1, "folds": "random", "c1_grid": [0.0, 0.1]}
OCR_ORDER2 = {"order": 2, "window": 0, "folds": "per-type", "cv_em_iterations": 5}
OCR_QUICK = {"unlabelled": 300, "cv_em_iterations": 2}
C2_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
# At order 2 the transitions' own L2 strength (None: c2) is chosen with c2.
C2_TRANSITIONS_GRID = (None, 0.1, 0.01)
# Jacobi steps of GraphPropagation: its graphs here need up to 4,464 (POS draw 0) to converge.
GP_MAX_ITERATIONS = 10_000
CV_FOLDS = 3


# -- shared protocol ------------------------------------------------------------------------

def token_errors(predicted, gold, mask=None):
    """Token error rate (%) of label sequences, optionally over a mask of the tokens."""
    predicted = np.concatenate([np.asarray(p, dtype=object) for p in predicted])
    gold = np.concatenate([np.asarray(g, dtype=object) for g in gold])
    wrong = predicted != gold
    if mask is not None:
        wrong = wrong[mask]
    return 100.0 * float(wrong.mean())


def choose_crf_params(X_labelled, y_labelled, settings, folds):
    """The CRF's order and priors: c1 and c2 (and at order 2 c2_transitions), by
    cross-validated token accuracy on the labelled sequences over ``folds`` ((train, held)
    index pairs)."""
    order = settings["order"]
    grid = {"c1": settings["c1_grid"], "c2": list(C2_GRID)}
    if order == 2:
        grid["c2_transitions"] = list(C2_TRANSITIONS_GRID)
    search = GridSearchCV(CRF(order=order), grid, cv=folds)
    search.fit(X_labelled, y_labelled)
    return dict(search.best_params_, order=order)


def choose_schedule(X_pool, y_pool, folds, graph, params, em_iterations):
    """lambda and the number of EM iterations, chosen together by cross-validation on the
    labelled sequences: each fold is made unlabelled in turn (the graph, built on all of
    them, stays valid) and is the dev set of a fit of ``em_iterations`` EM iterations, which
    logs theta's accuracy on it after every iteration. Returns the best lambda, the best
    number of iterations (at least 1) and the mean accuracies (%) per lambda and
    iteration."""
    accuracies = {}
    for lam in LAMBDAS:
        per_fold = []
        for _, held in folds:
            y_cv = list(y_pool)
            for i in held:
                y_cv[i] = None
            model = GraphPRCRF(graph=graph, lam=lam, em_iterations=em_iterations, em_tol=0.0,
                               **params)
            model.fit(X_pool, y_cv, X_dev=[X_pool[i] for i in held],
                      y_dev=[y_pool[i] for i in held])
            per_fold.append([100.0 * entry["dev_accuracy"] for entry in model.training_log_
                             if entry["phase"] == "EM"])
        accuracies[lam] = np.mean(per_fold, axis=0).tolist()
    lam, iterations = max(((lam, t) for lam in LAMBDAS for t in range(1, em_iterations + 1)),
                          key=lambda pair: accuracies[pair[0]][pair[1]])
    return lam, iterations, accuracies


@dataclass
class Draw:
    """One draw's data: the labelled sequences first in ``X_pool``, then the unlabelled ones
    (``gold`` their labels); ``score(transductive, inductive=None)`` gives a row's errors;
    ``crfsuite_X`` is ``X_pool`` as sklearn-crfsuite reads it; ``folds`` the cross-validation
    folds of the labelled sequences, (train, held) index pairs; ``X_held`` the sequences kept
    out of training (None: no inductive column)."""

    X_pool: list
    y_labelled: list
    gold: list
    graph: object
    score: object
    crfsuite_X: list
    folds: list
    X_held: list = None


def random_folds(n_labelled):
    return list(KFold(CV_FOLDS).split(np.arange(n_labelled)))


def run_draw(data, settings, pr_params, schedule=None):
    """The rows of one draw (CRF, sklearn-crfsuite, GP, GP->CRF, PR1, PR) and timings.
    ``schedule``: lambda and the number of EM iterations to use (None: chosen by CV)."""
    n_labelled = len(data.y_labelled)
    X_pool, y_pool = data.X_pool, data.y_labelled + [None] * len(data.gold)
    unlabelled, held = X_pool[n_labelled:], data.X_held

    def inductive(model):
        return None if held is None else model.predict(held)

    rows, timings = {}, {}
    crf_params = choose_crf_params(X_pool[:n_labelled], data.y_labelled, settings, data.folds)
    started = time.perf_counter()
    crf = CRF(**crf_params).fit(X_pool[:n_labelled], data.y_labelled)
    timings["crf"] = time.perf_counter() - started
    rows["CRF"] = data.score(crf.predict(unlabelled), inductive(crf))
    rows["sklearn-crfsuite"] = data.score(*crfsuite_predictions(data.crfsuite_X,
                                                                data.y_labelled, held))
    crfsuite_params = choose_crfsuite_params(data.crfsuite_X[:n_labelled], data.y_labelled,
                                             settings, data.folds)
    rows["sklearn-crfsuite tuned"] = data.score(*crfsuite_predictions(
        data.crfsuite_X, data.y_labelled, held, crfsuite_params))
    gp = GraphPropagation(graph=data.graph, max_iterations=GP_MAX_ITERATIONS).fit(X_pool, y_pool)
    rows["GP"] = data.score(gp.transduction_[n_labelled:])
    gp_crf = CRF(**crf_params).fit(X_pool, gp.transduction_)
    rows["GP->CRF"] = data.score(gp_crf.predict(unlabelled), inductive(gp_crf))
    params = dict(pr_params, **crf_params, mstep_iterations=settings["mstep_iterations"])
    if schedule is None:
        started = time.perf_counter()
        lam, em_iterations, cv_scores = choose_schedule(X_pool, y_pool, data.folds, data.graph,
                                                        params, settings["cv_em_iterations"])
        timings["cv"] = time.perf_counter() - started
    else:
        (lam, em_iterations), cv_scores = schedule, None
    for name, iterations in (("PR1", 1), ("PR", em_iterations)):
        started = time.perf_counter()
        model = GraphPRCRF(graph=data.graph, lam=lam, em_iterations=iterations, em_tol=0.0,
                           **params).fit(X_pool, y_pool)
        timings[name] = time.perf_counter() - started
        rows[name] = data.score(model.transduction_[n_labelled:], inductive(model))
        rows[name]["theta_transductive"] = data.score(model.predict(unlabelled))["transductive"]
        rows[name]["em_iterations"] = model.n_em_iter_
    return {"rows": rows, "lam": lam, "em_iterations": em_iterations,
            "cv_accuracy": cv_scores, "c1": crf_params["c1"], "c2": crf_params["c2"],
            "crfsuite_params": crfsuite_params,
            "c2_transitions": crf_params.get("c2_transitions"), "timings": timings,
            "n_unlabelled_tokens": int(sum(map(len, data.gold)))}


def crfsuite(**params):
    import sklearn_crfsuite

    return sklearn_crfsuite.CRF(algorithm="lbfgs", max_iterations=100,
                                all_possible_transitions=True, **params)


def choose_crfsuite_params(X_labelled, y_labelled, settings, folds):
    """sklearn-crfsuite's c1 and c2 by the CRF's cross-validation (same grid and folds)."""
    grid = {"c1": settings["c1_grid"], "c2": list(C2_GRID)}
    search = GridSearchCV(crfsuite(), grid, cv=folds)
    search.fit(X_labelled, y_labelled)
    return search.best_params_


def crfsuite_predictions(X_pool, y_labelled, X_held=None, params=None):
    """sklearn-crfsuite at ``params`` (default: the tutorial's c1 = c2 = 0.1, the baseline
    its users know): its labels of the unlabelled sequences of ``X_pool`` (after the
    labelled ones), and of ``X_held`` unless None."""
    n_labelled = len(y_labelled)
    crf = crfsuite(**(params or {"c1": 0.1, "c2": 0.1}))
    crf.fit(X_pool[:n_labelled], y_labelled)
    return crf.predict(X_pool[n_labelled:]), None if X_held is None else crf.predict(X_held)


# -- (a) part-of-speech tagging, UD English-EWT ------------------------------------------

POS_FEATURES = WindowFeatures(window=1, suffixes=(1, 2, 3), word_shape=True)


def pos_draw(draw, sentences, tags, settings, schedule=None):
    """One draw of part (a): 500 sentences held out, 100 labelled, the others unlabelled;
    errors on all unlabelled tokens, on those whose word is not in the labelled sentences,
    and theta's on the held-out sentences. ``schedule``: as `run_draw`'s."""
    rng = np.random.default_rng(draw)
    order = rng.permutation(len(sentences))
    n_held, n_labelled = settings["held_out"], settings["labelled"]
    held = order[:n_held]
    pool = order[n_held:]
    if settings["unlabelled"]:
        pool = pool[:n_labelled + settings["unlabelled"]]
    features = POS_FEATURES
    if settings.get("clusters"):
        features = clone(POS_FEATURES).set_params(clusters=WordClusters(**settings["clusters"]))
    X_pool = features.fit_transform([sentences[i] for i in pool])
    gold = [tags[i] for i in pool[n_labelled:]]
    gold_held = [tags[i] for i in held]
    seen = {token["word.lower"] for sequence in X_pool[:n_labelled] for token in sequence}
    unseen = np.array([token["word.lower"] not in seen
                       for sequence in X_pool[n_labelled:] for token in sequence])

    def score(transductive, inductive=None):
        row = {"transductive": token_errors(transductive, gold),
               "unseen": token_errors(transductive, gold, unseen)}
        if inductive is not None:
            row["inductive"] = token_errors(inductive, gold_held)
        return row

    started = time.perf_counter()
    graph = trigram_graph(X_pool, n_neighbors=TRIGRAM_NEIGHBORS)
    graph_seconds = time.perf_counter() - started
    data = Draw(X_pool, [tags[i] for i in pool[:n_labelled]], gold, graph, score, X_pool,
                random_folds(n_labelled), features.transform([sentences[i] for i in held]))
    record = run_draw(data, settings, {"decoding": "posterior"}, schedule)
    record["timings"]["graph"] = graph_seconds
    record.update(n_unseen=int(unseen.sum()), n_vertices=graph.n_vertices)
    return record


# -- (b) handwriting, OCR letters ------------------------------------------------------------

def ocr_graph_vectors(images, sigma):
    """The vectors the letter graph compares: pixels blurred by a Gaussian of ``sigma``
    pixels (a cheap stand-in for the paper's earth mover's distance: a stroke shifted by a
    pixel still overlaps)."""
    return [gaussian_filter(word.reshape(-1, 16, 8).astype(float), sigma=(0, sigma, sigma))
            .reshape(-1, 128) for word in images]


def ocr_draw(draw, images, labels, graph_vectors, settings):
    """One draw of part (b): 2 labelled words of each word type, every other word unlabelled
    and scored."""
    rng = np.random.default_rng(draw)
    words = ["".join(letters) for letters in labels]
    by_word = {}
    for i, word in enumerate(words):
        by_word.setdefault(word, []).append(i)
    labelled = np.array([i for word in sorted(by_word)
                         for i in rng.choice(by_word[word], settings["per_word"],
                                             replace=False)])
    unlabelled = np.setdiff1d(np.arange(len(images)), labelled)
    if settings["unlabelled"]:
        unlabelled = rng.permutation(unlabelled)[:settings["unlabelled"]]
    pool = np.concatenate([labelled, unlabelled])
    X_pool = WindowRows(window=settings["window"]).fit_transform(
        [images[i].astype(float) for i in pool])
    gold = [labels[i] for i in unlabelled]
    if settings["folds"] == "per-type":
        # labelled holds each type's words consecutively: fold k holds each type's k-th.
        position = np.arange(labelled.size) % settings["per_word"]
        folds = [(np.flatnonzero(position != k), np.flatnonzero(position == k))
                 for k in range(settings["per_word"])]
    else:
        folds = random_folds(labelled.size)

    def score(transductive, inductive=None):
        return {"transductive": token_errors(transductive, gold)}

    started = time.perf_counter()
    graph = knn_graph([graph_vectors[i] for i in pool], n_neighbors=KNN_NEIGHBORS,
                      **KNN_SETTINGS)
    graph_seconds = time.perf_counter() - started
    data = Draw(X_pool, [labels[i] for i in labelled], gold, graph, score, pixel_dicts(X_pool),
                folds)
    record = run_draw(data, settings, {})
    record["timings"]["graph"] = graph_seconds
    return record


def pixel_dicts(X):
    """The CRF's feature rows as sklearn-crfsuite feature dicts (column index -> value)."""
    return [[{str(j): v for j, v in zip(row.indices.tolist(), row.data.tolist())}
             for row in sequence] for sequence in X]


# -- (c) cost of an E-step iteration ---------------------------------------------------------

def estep_cost(X_pool, y_gold, n_labelled, graph, repeat, n_jobs=None):
    """Median ratio, over ``repeat`` alternating pairs, of one E-step iteration (q's
    forward-backward over the unlabelled sequences, their vertex sums, the penalty and its
    gradient) to one supervised log-likelihood evaluation (value and gradient) on the same
    sequences with their gold labels, at the CRF's weights."""
    crf = CRF().fit(X_pool, list(y_gold[:n_labelled]) + [None] * (len(y_gold) - n_labelled))
    sequences = crf._features(X_pool)
    unlabelled = sequences[np.arange(n_labelled, len(sequences))]
    _, codes = encode_labels(y_gold[n_labelled:], crf.classes_)
    n_labels = len(crf.classes_)
    vertices = graph.token_vertices[sequences.offsets[n_labelled]:]
    _, labelled_codes = encode_labels(y_gold[:n_labelled], crf.classes_)
    labelled_vertices = graph.token_vertices[:sequences.offsets[n_labelled]]
    seeds = np.zeros((graph.n_vertices, n_labels))
    has_vertex = labelled_vertices >= 0
    np.add.at(seeds, (labelled_vertices[has_vertex], labelled_codes[has_vertex]), 1.0)
    penalty = GraphLaplacianPenalty(graph.weights, vertices, seeds)
    data = ChunkedSequences(unlabelled, groups=vertices, n_groups=graph.n_vertices,
                            n_jobs=n_jobs)
    labelled_data = ChunkedSequences(unlabelled, codes, n_labels, n_jobs=n_jobs)
    layout = WeightLayout(crf.num_attributes_, n_labels)
    theta = layout.pack(crf.state_weights_, crf.transition_weights_)
    model = GraphPRCRF(lam=1.0)
    model.classes_ = crf.classes_
    em = _ExpectationMaximisation(model, None, data, penalty, layout)
    supervised = _penalised_negative_log_likelihood(labelled_data, layout, 1.0)
    log_z = em._log_partition(theta)
    offsets = np.zeros((graph.n_vertices, n_labels))
    times = {"estep": [], "likelihood": []}
    with single_threaded_blas():
        for _ in range(repeat):
            for name, run in (("estep", lambda: em._evaluate(theta, log_z, offsets)),
                              ("likelihood", lambda: supervised(theta))):
                started = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - started)
    estep, likelihood = (np.array(times[name]) for name in ("estep", "likelihood"))
    return {"estep_median_s": float(np.median(estep)),
            "likelihood_median_s": float(np.median(likelihood)),
            "ratio_median": float(np.median(estep / likelihood)),
            "ratio_min": float(np.min(estep / likelihood)),
            "ratio_max": float(np.max(estep / likelihood)),
            "n_tokens": int(unlabelled.n_tokens)}


# -- running and reporting -------------------------------------------------------------------

ROWS = ("CRF", "sklearn-crfsuite", "sklearn-crfsuite tuned", "GP", "GP->CRF", "PR1", "PR")
BASELINES = ("CRF", "sklearn-crfsuite", "sklearn-crfsuite tuned", "GP", "GP->CRF")
INDUCTIVE_BASELINES = ("CRF", "sklearn-crfsuite", "sklearn-crfsuite tuned", "GP->CRF")


def run_draws(name, draws, run_one, settings, json_path):
    """Results of the given draws, resumed from ``json_path`` (the results of every finished
    draw are written there, under the part's name and settings)."""
    stored = json.loads(json_path.read_text()) if json_path.is_file() else {}
    key = json.dumps({"part": name, **settings}, sort_keys=True)
    results = stored.setdefault(key, {})
    for draw in draws:
        if str(draw) in results:
            continue
        started = time.perf_counter()
        results[str(draw)] = run_one(draw)
        results[str(draw)]["seconds"] = time.perf_counter() - started
        json_path.write_text(json.dumps(stored))
        print(f"{name}: draw {draw} done in {results[str(draw)]['seconds']:.0f} s", flush=True)
    return [results[str(draw)] for draw in draws]


def mean_std(values):
    values = np.asarray([v for v in values if v is not None], dtype=float)
    if values.size == 0:
        return "-"
    return f"{values.mean():.2f} ± {values.std():.2f}"


def error_table(records, columns):
    """Markdown table, one row per method, mean ± std over draws of each error column."""
    lines = ["| method | " + " | ".join(title for _, title in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for row in ROWS:
        # "sklearn-crfsuite tuned" is not in the records of runs before issue #13
        cells = [mean_std([record["rows"].get(row, {}).get(column) for record in records])
                 for column, _ in columns]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gains(records, column, baselines):
    """Per draw, the best baseline's error minus PR's (points): min, mean, max."""
    values = [min(record["rows"][row][column] for row in baselines
                  if column in record["rows"].get(row, {})) - record["rows"]["PR"][column]
              for record in records]
    return f"min {min(values):.2f}, mean {np.mean(values):.2f}, max {max(values):.2f}"


def run_or_read(name, args, run_one, settings):
    """The records of the part's draws: read from the JSON files with ``--report``, else run
    (resuming from the first JSON file)."""
    draws = range(args.first_draw, args.first_draw + args.draws[name])
    if not args.report:
        return run_draws(name, draws, run_one, settings, json_paths(name, args)[0])
    found = stored_draws(name, args, settings)
    return [found[str(draw)] for draw in sorted(map(int, found))]


def json_paths(name, args):
    return args.json or [Path(f"/tmp/bench_graph_pr_{name}.json")]


def stored_draws(name, args, settings):
    """The part's finished draws under ``settings`` in the JSON files, by draw number."""
    key = json.dumps({"part": name, **settings}, sort_keys=True)
    found = {}
    for path in json_paths(name, args):
        if path.is_file():
            found.update(json.loads(path.read_text()).get(key, {}))
    return found


def timing_line(records):
    """PR's EM wall time against the CRF's fit (medians over draws), and the choices."""
    crf, pr, graph = (np.median([record["timings"][name] for record in records])
                      for name in ("crf", "PR", "graph"))
    cv = [record["timings"]["cv"] for record in records if "cv" in record["timings"]]
    cv = f", cross-validation of lambda and EM iterations {np.median(cv):.0f}" if cv else ""
    return (f"Median seconds: graph {graph:.1f}, CRF fit {crf:.2f}, PR fit {pr:.0f} "
            f"({pr / crf:.0f}x the CRF){cv}. Chosen per draw: lambda "
            f"{[record['lam'] for record in records]}, EM iterations "
            f"{[record['em_iterations'] for record in records]}, c1 "
            f"{[record.get('c1', 0.0) for record in records]}, c2 "
            f"{[record['c2'] for record in records]}, c2_transitions "
            f"{[record.get('c2_transitions') for record in records]}, sklearn-crfsuite tuned "
            f"{[record.get('crfsuite_params') for record in records]}.")


def part_pos(args):
    """(a) UD English-EWT part-of-speech tagging."""
    splits = load_ud_english_ewt(args.data_dir / "ud_english_ewt")
    sentences = splits["dev"][0] + splits["test"][0]
    tags = splits["dev"][1] + splits["test"][1]
    first_order = dict(POS_SETTINGS, **(POS_QUICK if args.quick else {}))
    settings = {**first_order, **(POS_ORDER2 if args.order == 2 else {}),
                **(POS_CLUSTERS if args.clusters else {})}
    schedules = {}
    if settings["protocol"] == "order-1 schedule":
        schedules = {int(draw): (record["lam"], record["em_iterations"])
                     for draw, record in stored_draws("pos", args, first_order).items()}
        wanted = range(args.first_draw, args.first_draw + args.draws["pos"])
        missing = [draw for draw in wanted if draw not in schedules]
        if missing and not args.report:
            raise SystemExit(f"order 2 takes lambda and T from the order-1 run: "
                             f"draws {missing} "
                             f"are not in {', '.join(map(str, json_paths('pos', args)))}")
    records = run_or_read("pos", args, lambda draw: pos_draw(draw, sentences, tags, settings,
                                                            schedules.get(draw)), settings)
    print(f"\n### (a) POS, UD English-EWT dev + test: {settings['labelled']} labelled "
          f"sentences, order {settings['order']}"
          f"{', word clusters' if settings.get('clusters') else ''}, {len(records)} draws\n")
    print(error_table(records, [("transductive", "unlabelled, all tokens"),
                                ("unseen", "unlabelled, unseen words"),
                                ("inductive", "held-out (theta)")]))
    print(f"\nPR's gain over the best baseline (error points), per draw: all tokens "
          f"{gains(records, 'transductive', BASELINES)}; unseen words "
          f"{gains(records, 'unseen', BASELINES)}; held-out "
          f"{gains(records, 'inductive', INDUCTIVE_BASELINES)}.")
    print(timing_line(records))


def part_ocr(args):
    """(b) OCR handwriting."""
    images, labels, _ = read_ocr_letters(args.data_dir / "ocr" / "letters-folds0-4.data.gz")
    settings = {**OCR_SETTINGS, **(OCR_ORDER2 if args.order == 2 else {}),
                **(OCR_QUICK if args.quick else {})}
    vectors = ocr_graph_vectors(images, settings["sigma"])
    records = run_or_read("ocr", args, lambda draw: ocr_draw(draw, images, labels, vectors,
                                                            settings), settings)
    print(f"\n### (b) Handwriting, OCR letters: {settings['per_word']} labelled words per "
          f"word type, order {settings['order']}, {len(records)} draws\n")
    print(error_table(records, [("transductive", "letter error, unlabelled words"),
                                ("theta_transductive", "theta's letter error")]))
    cuts = [100 * (1 - record["rows"]["PR"]["transductive"]
                   / record["rows"]["CRF"]["transductive"]) for record in records]
    print(f"\nPR's cut of the CRF's error: {np.mean(cuts):.1f}% (min {min(cuts):.1f}%, "
          f"max {max(cuts):.1f}%); its gain over the best baseline (error points), per "
          f"draw: {gains(records, 'transductive', BASELINES)}.")
    print(timing_line(records))


def part_estep(args):
    """(c) One E-step iteration against one supervised evaluation, on draw 0's data."""
    print("\n### (c) E-step iteration / supervised log-likelihood evaluation, same "
          f"sequences ({args.repeat} alternating pairs)\n")
    print("| data | tokens | E-step (s) | likelihood (s) | ratio, median (min-max) |")
    print("|---|---:|---:|---:|---:|")
    splits = load_ud_english_ewt(args.data_dir / "ud_english_ewt")
    sentences = splits["dev"][0] + splits["test"][0]
    tags = splits["dev"][1] + splits["test"][1]
    order = np.random.default_rng(0).permutation(len(sentences))[POS_SETTINGS["held_out"]:]
    X = POS_FEATURES.fit_transform([sentences[i] for i in order])
    cases = [("POS pool of draw 0, trigram graph k=60", X, [tags[i] for i in order],
              POS_SETTINGS["labelled"], trigram_graph(X, n_neighbors=60))]
    images, labels, _ = read_ocr_letters(args.data_dir / "ocr" / "letters-folds0-4.data.gz")
    vectors = ocr_graph_vectors(images, OCR_SETTINGS["sigma"])
    order = np.random.default_rng(0).permutation(len(images))
    X = WindowRows(window=1).fit_transform([images[i].astype(float) for i in order])
    cases.append(("OCR letters, knn graph k=20", X, [labels[i] for i in order], 110,
                  knn_graph([vectors[i] for i in order], n_neighbors=20, min_similarity=0.3,
                            self_weight=0.8)))
    for name, X, y, n_labelled, similarity_graph in cases:
        cost = estep_cost(X, y, n_labelled, similarity_graph, args.repeat)
        print(f"| {name} | {cost['n_tokens']:,} | {cost['estep_median_s']:.3f} | "
              f"{cost['likelihood_median_s']:.3f} | {cost['ratio_median']:.2f} "
              f"({cost['ratio_min']:.2f}-{cost['ratio_max']:.2f}) |", flush=True)

PARTS = {"graph": part_graph, "pos": part_pos, "ocr": part_ocr, "estep": part_estep}
DRAWS = {"pos": 5, "ocr": 10}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to run, of: {', '.join(PARTS)}")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                        help="directory holding conll2000/, bc2gm/, ud_english_ewt/ and ocr/ "
                        "(default: ../shared/data)")
    parser.add_argument("--trigram-sizes", type=int, nargs="+",
                        default=[1000, 10_000, 100_000, 300_000])
    parser.add_argument("--knn-sizes", type=int, nargs="+",
                        default=[1000, 10_000, 25_725, 100_000])
    parser.add_argument("--pos-draws", type=int, default=DRAWS["pos"])
    parser.add_argument("--ocr-draws", type=int, default=DRAWS["ocr"])
    parser.add_argument("--first-draw", type=int, default=0,
                        help="run draws first-draw, first-draw + 1, ... (to split the draws "
                        "over processes, each with its own --json)")
    parser.add_argument("--json", type=Path, nargs="+", default=None,
                        help="results of finished draws: written to the first file, read "
                        "from all with --report (default: /tmp/bench_graph_pr_PART.json)")
    parser.add_argument("--report", action="store_true",
                        help="print the tables of parts pos and ocr from --json, run nothing")
    parser.add_argument("--order", type=int, choices=(1, 2), default=1,
                        help="the CRFs' order in parts pos and ocr (order 2 on pos needs the "
                        "order-1 draws in --json: it takes their lambda and T)")
    parser.add_argument("--clusters", action="store_true",
                        help="part pos: add WordClusters features learned from each draw's "
                        "sentences")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: few sentences, draws and EM iterations")
    parser.add_argument("--repeat", type=int, default=25,
                        help="alternating pairs of evaluations in part estep")
    args = parser.parse_args(argv)
    args.draws = {"pos": args.pos_draws, "ocr": args.ocr_draws}
    parts = [name.strip() for name in args.parts.split(",") if name.strip()]
    unknown = [name for name in parts if name not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    for name in parts:
        PARTS[name](args)


if __name__ == "__main__":
    main()

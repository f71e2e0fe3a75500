"""Benchmarks of graph posterior regularisation's machinery (He, Gillenwater & Taskar 2013).

Parts, chosen by name with ``--parts`` (default: both):

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
``estep``
    One E-step iteration (q's forward-backward over the unlabelled sequences, their vertex
    sums, the penalty and its gradient) against one supervised log-likelihood evaluation of
    the same sequences with their gold labels, alternated, median ratio.

Accuracy (POS and handwriting, against CRFCV, sklearn-crfsuite and graph propagation) is
``bench_defaults.py``: the estimators with their defaults, which choose lambda and the EM
iterations themselves. Until issue #28 this script chose them by its own cross-validation
(the tables of docs/benchmarks.md up to that issue say which commit ran them).

Part ``graph``'s defaults: trigram sizes 1,000 / 10,000 / 100,000 / 300,000 types; kNN sizes
1,000 / 10,000 / 25,725 (OCR) / 100,000 (random). On the 2-core machine, shared with other
jobs (load average 2-3), the part took 12 minutes, 8 of them the kNN graph of 100,000
letters; ``--knn-sizes 1000 10000 25725`` leaves about 4.

Usage::

    python benchmarks/bench_graph_pr.py --parts estep,graph
"""

import argparse
import gzip
import math
import os
import time
import tracemalloc
from pathlib import Path

import numpy as np
from conll_features import DEFAULT_DATA
from scipy.ndimage import gaussian_filter

from sklearn_ssl_crf import CRF, WindowFeatures, WindowRows
from sklearn_ssl_crf.datasets import (
    load_bc2gm,
    load_conll2000,
    load_ud_english_ewt,
    read_ocr_letters,
)
from sklearn_ssl_crf.graph import knn_graph, trigram_graph
from sklearn_ssl_crf.graph._trigram import _trigram_occurrences
from sklearn_ssl_crf.objective import GraphLaplacianPenalty, PosteriorRegularizationTerms
from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.potentials._weight_layout import WeightLayout
from sklearn_ssl_crf.utils._threads import single_threaded_blas
from sklearn_ssl_crf.utils._validation import encode_labels

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
    token_vertices = _trigram_occurrences(text, "word.lower")[2]
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
            lambda text=text: trigram_graph(text, n_neighbors=TRIGRAM_NEIGHBORS))
        table.add(f"text, {len(text):,} sentences", built, shown, seconds, peak)
    settings = ", ".join(f"{name}={value}" for name, value in KNN_SETTINGS.items())
    table = Table(f"knn_graph, k = {KNN_NEIGHBORS}, {settings}", KNN_NEIGHBORS)
    for size, source, words in letter_images(args.data_dir, args.knn_sizes):
        shown, seconds, peak, built = measure(
            lambda words=words: knn_graph(words, n_neighbors=KNN_NEIGHBORS, **KNN_SETTINGS))
        table.add(source, built, shown, seconds, peak)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


OCR_SIGMA = 0.7
POS_FEATURES = WindowFeatures(window=1, suffixes=(1, 2, 3), word_shape=True)
POS_LABELLED, OCR_LABELLED_WORDS = 100, 110


def token_errors(predicted, gold, mask=None):
    """Token error rate (%) of label sequences, optionally over a mask of the tokens."""
    predicted = np.concatenate([np.asarray(p, dtype=object) for p in predicted])
    gold = np.concatenate([np.asarray(g, dtype=object) for g in gold])
    wrong = predicted != gold
    if mask is not None:
        wrong = wrong[mask]
    return 100.0 * float(wrong.mean())


def ocr_graph_vectors(images, sigma):
    """The vectors the letter graph compares: pixels blurred by a Gaussian of ``sigma``
    pixels (a cheap stand-in for the paper's earth mover's distance: a stroke shifted by a
    pixel still overlaps)."""
    return [gaussian_filter(word.reshape(-1, 16, 8).astype(float), sigma=(0, sigma, sigma))
            .reshape(-1, 128) for word in images]


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
    supervised = penalised_negative_log_likelihood(labelled_data, layout, 1.0)
    terms = PosteriorRegularizationTerms(supervised, data, layout, penalty, lam=1.0,
                                         weight=1.0)
    log_z = terms.likelihood_terms(theta).log_z
    offsets = np.zeros((graph.n_vertices, n_labels))
    times = {"estep": [], "likelihood": []}
    with single_threaded_blas():
        for _ in range(repeat):
            for name, run in (("estep", lambda: terms.auxiliary(theta, log_z, offsets)),
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


def part_estep(args):
    """(c) One E-step iteration against one supervised evaluation, on draw 0's data."""
    print("\n### (c) E-step iteration / supervised log-likelihood evaluation, same "
          f"sequences ({args.repeat} alternating pairs)\n")
    print("| data | tokens | E-step (s) | likelihood (s) | ratio, median (min-max) |")
    print("|---|---:|---:|---:|---:|")
    splits = load_ud_english_ewt(args.data_dir / "ud_english_ewt")
    sentences = splits["dev"][0] + splits["test"][0]
    tags = splits["dev"][1] + splits["test"][1]
    order = np.random.default_rng(0).permutation(len(sentences))[500:]
    X = POS_FEATURES.fit_transform([sentences[i] for i in order])
    cases = [("POS pool of draw 0, trigram graph k=60", X, [tags[i] for i in order],
              POS_LABELLED, trigram_graph(X, n_neighbors=60))]
    images, labels, _ = read_ocr_letters(args.data_dir / "ocr" / "letters-folds0-4.data.gz")
    vectors = ocr_graph_vectors(images, OCR_SIGMA)
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

PARTS = {"graph": part_graph, "estep": part_estep}


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
    parser.add_argument("--repeat", type=int, default=25,
                        help="alternating pairs of evaluations in part estep")
    args = parser.parse_args(argv)
    parts = [name.strip() for name in args.parts.split(",") if name.strip()]
    unknown = [name for name in parts if name not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    for name in parts:
        PARTS[name](args)


if __name__ == "__main__":
    main()

"""Time of `GraphPropagation` on the graphs of the accuracy protocol (issue #30).

Draw 0 of ``bench_defaults.py``: the POS pools of UD English-EWT, German-GSD and
Italian-ISDT (dev + test, 100 labelled sentences, the trigram graph with k = 60) and the
handwriting pool (2 labelled words per word type, the k-NN graph of the blurred letters).
Each graph is built once, untimed; then ``GraphPropagation(graph=graph,
max_iterations=10_000).fit`` (a cap the paper's steps, solved before commit 48fac2b, also
stay within) runs ``--repeat`` times. Prints, per pool, the iterations, the median seconds,
the token error of the propagated labels on the unlabelled tokens and a checksum of all
propagated labels (the same checksum: the same labels).

To compare two commits, run the script of the newer one with ``PYTHONPATH`` set to each
checkout in turn, alternating (A B A B)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_propagation.py
"""

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np
from bench_defaults import LANGUAGES, language_pool, ocr_pool, pos_pool
from bench_graph_pr import ocr_graph_vectors, token_errors
from conll_features import DEFAULT_DATA

from sklearn_ssl_crf import GraphPropagation
from sklearn_ssl_crf.datasets import read_ocr_letters
from sklearn_ssl_crf.graph import trigram_graph
from sklearn_ssl_crf.utils._threads import single_threaded_blas

MAX_ITERATIONS = 10_000


def pools(data_dir, handwriting=True):
    """(name, X, graph, partial labels, gold labels of the unlabelled, number labelled) of
    the POS pools and, with ``handwriting``, of the handwriting pool."""
    for language in LANGUAGES:
        X, y_partial, gold, n = pos_pool(0, *language_pool(data_dir, language))
        yield f"POS {language}", X, trigram_graph(X, n_neighbors=60), y_partial, gold, n
    if not handwriting:
        return
    images, labels, _ = read_ocr_letters(data_dir / "ocr" / "letters-folds0-4.data.gz")
    X, graph, y_partial, gold, n = ocr_pool(0, images, labels, ocr_graph_vectors(images, 0.7))
    yield "handwriting", X, graph, y_partial, gold, n


def checksum(label_sequences):
    text = "\n".join(" ".join(labels) for labels in label_sequences)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def parse_arguments(argv, description):
    """``--data-dir`` and ``--repeat``, the options of the propagation benchmarks."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(argv, __doc__)
    print("| pool | vertices | edges | iterations | seconds (median) | error (%) | labels |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, X, graph, y_partial, gold, n in pools(args.data_dir):
        seconds = []
        with single_threaded_blas():
            for _ in range(args.repeat):
                started = time.perf_counter()
                gp = GraphPropagation(graph=graph, max_iterations=MAX_ITERATIONS).fit(
                    X, y_partial)
                seconds.append(time.perf_counter() - started)
        print(f"| {name} | {graph.n_vertices:,} | {graph.weights.nnz // 2:,} | {gp.n_iter_} | "
              f"{np.median(seconds):.3f} | {token_errors(gp.transduction_[n:], gold):.2f} | "
              f"{checksum(gp.transduction_)} |", flush=True)


if __name__ == "__main__":
    main()

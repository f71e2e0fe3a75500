"""The k-NN graph of letter images at scale: the approximate search (issue #30).

Rows are letter-like: OCR letters (``../shared/data/ocr``) drawn at random, 5 % of their 128
pixels flipped, in words of 8. For each size, `knn_graph` with the handwriting settings
(k = 20, ``min_similarity=0.3``, ``self_weight=0.8``) runs in a fresh process (``--algorithm``,
default 'hnsw'), which reports its seconds and its peak resident memory. The recall is
measured on a sample of vertices against the exact graph, which brute force gives for them:
each sampled vertex's ranked candidates, and those of each of its candidates (for the
mutual criterion), compared with every row; the recall is the share of the sampled
vertices' exact edges that the graph has.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ann_graph.py --sizes 100000 1000000
"""

import argparse
import gzip
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from conll_features import DEFAULT_DATA

from sklearn_ssl_crf.graph import knn_graph

K, MIN_SIMILARITY, SELF_WEIGHT, WORD_LENGTH, FLIPPED = 20, 0.3, 0.8, 8, 0.05


def letter_rows(data_dir, n_rows, seed=0):
    """Letters drawn at random, ``FLIPPED`` of their pixels flipped: float32, made a block
    at a time so that the input costs no more than itself (0.5 GB for 10^6 rows)."""
    with gzip.open(data_dir / "ocr" / "letters-folds0-4.data.gz", "rt") as lines:
        pixels = np.array([line.split("\t")[6:134] for line in lines if line.strip()],
                          dtype=np.float32)
    rng = np.random.default_rng(seed)
    rows = np.empty((n_rows, pixels.shape[1]), dtype=np.float32)
    for start in range(0, n_rows, 65536):
        block = pixels[rng.integers(0, len(pixels), min(65536, n_rows - start))]
        flipped = rng.random(block.shape) < FLIPPED
        rows[start:start + len(block)] = np.where(flipped, 1.0 - block, block)
    return rows


def mixed_vectors(rows):
    """``[sqrt(a) own, sqrt(1 - a) left, sqrt(1 - a) right]`` of unit rows (zero where a
    word has no neighbour), whose inner products are `knn_graph`'s mixed similarity, and the
    unit rows."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    position = np.arange(len(rows)) % WORD_LENGTH
    last = (position == WORD_LENGTH - 1) | (np.arange(len(rows)) == len(rows) - 1)
    left = np.zeros_like(unit)
    right = np.zeros_like(unit)
    left[1:][position[1:] > 0] = unit[:-1][position[1:] > 0]
    right[:-1][~last[:-1]] = unit[1:][~last[:-1]]
    context = np.sqrt(1 - SELF_WEIGHT)
    # float32: 10^6 rows of 384 would take 3 GB in float64.
    vectors = np.hstack([np.sqrt(SELF_WEIGHT) * unit, context * left, context * right])
    return vectors.astype(np.float32), unit.astype(np.float32)


def exact_candidates(vectors, unit, queries):
    """Each query's k best candidates by the mixed similarity (own similarity above
    MIN_SIMILARITY, itself excluded, ties to the lower row), compared with every row."""
    similarities = (vectors[queries] @ vectors.T).astype(np.float64)
    similarities[(unit[queries] @ unit.T) <= MIN_SIMILARITY] = -np.inf
    similarities[np.arange(len(queries)), queries] = -np.inf
    best = []
    for row in similarities:
        top = np.argpartition(-row, K)[:K + 1]
        top = top[np.lexsort((top, -row[top]))][:K]
        best.append(top[np.isfinite(row[top]) & (row[top] > 0)])
    return best


def sample_recall(rows, weights, n_sample, seed=1):
    vectors, unit = mixed_vectors(rows)
    sample = np.random.default_rng(seed).choice(len(rows), n_sample, replace=False)
    lists = {}
    for start in range(0, n_sample, 32):
        block = sample[start:start + 32]
        lists.update(zip(block.tolist(), exact_candidates(vectors, unit, block)))
    others = sorted({int(v) for u in sample for v in lists[int(u)]} - set(lists))
    for start in range(0, len(others), 32):
        block = np.array(others[start:start + 32])
        lists.update(zip(block.tolist(), exact_candidates(vectors, unit, block)))
    found = expected = 0
    for u in sample.tolist():
        exact = {int(v) for v in lists[u] if u in set(lists[int(v)].tolist())}
        graph = set(weights.indices[weights.indptr[u]:weights.indptr[u + 1]].tolist())
        expected += len(exact)
        found += len(exact & graph)
    return found / expected, expected


def child(args):
    rows = letter_rows(args.data_dir, args.child)
    words = np.split(rows, np.arange(WORD_LENGTH, len(rows), WORD_LENGTH))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    graph = knn_graph(words, n_neighbors=K, min_similarity=MIN_SIMILARITY,
                      self_weight=SELF_WEIGHT, algorithm=args.algorithm)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    weights = sp.csr_matrix(graph.weights)
    recall, n_edges = sample_recall(rows, weights, args.sample)
    print(json.dumps({"size": args.child, "seconds": seconds, "peak_rss_mb": peak,
                      "rss_before_mb": before, "edges": int(weights.nnz // 2),
                      "recall": recall, "sampled_edges": n_edges}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--algorithm", default="hnsw", choices=("hnsw", "exact", "auto"))
    parser.add_argument("--sample", type=int, default=200,
                        help="vertices whose exact edges give the recall")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    print(f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores; "
          f"knn_graph(k={K}, min_similarity={MIN_SIMILARITY}, self_weight={SELF_WEIGHT}, "
          f"algorithm={args.algorithm!r}), letter-like rows\n")
    print("| rows | seconds | peak RSS (MB) | edges | recall on the sample (edges) |")
    print("|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        output = subprocess.run(
            [sys.executable, __file__, "--child", str(size), "--data-dir", str(args.data_dir),
             "--algorithm", args.algorithm, "--sample", str(args.sample)],
            check=True, capture_output=True, text=True).stdout
        result = json.loads(output.strip().splitlines()[-1])
        print(f"| {size:,} | {result['seconds']:.0f} | {result['peak_rss_mb']:.0f} | "
              f"{result['edges']:,} | {result['recall']:.3f} ({result['sampled_edges']}) |",
              flush=True)


if __name__ == "__main__":
    main()

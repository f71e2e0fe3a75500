"""Cost of `WordClusters` (issue #13): time and peak memory of a fit against corpus size.

Fits the default `WordClusters` (``min_count=2``, as the benchmarks use it) on the
BC2GM training sentences, then on 10^4, 10^5 and 10^6 sentences made by repeating them (the
corpus is a list of references to the same sentences, so it costs 8 bytes a sentence). Each
size runs in a fresh process, which reports its peak resident memory before and after the
fit (``ru_maxrss``); the difference is what the fit needed. Repeating the corpus keeps the
vocabulary fixed, so the counts matrix keeps its size and only the passes over the tokens
grow: time should grow linearly and memory stay flat.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_word_clusters.py
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PARAMS = dict(n_clusters=(64, 256, 1024), min_count=2, random_state=0)


def child(data_dir, n_sentences):
    """Fit once on ``n_sentences`` (0: the training split as it is); print a JSON line."""
    from sklearn_ssl_crf import WordClusters
    from sklearn_ssl_crf.datasets import load_bc2gm

    sentences = load_bc2gm(Path(data_dir) / "bc2gm")["train"][0]
    if n_sentences:
        sentences = [sentences[i % len(sentences)] for i in range(n_sentences)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    clusters = WordClusters(**PARAMS, verbose=0).fit(sentences)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "sentences": len(sentences), "tokens": sum(map(len, sentences)),
        "vocabulary": len(clusters.vocabulary_), "contexts": clusters.n_contexts_,
        "seconds": seconds, "rss_before_mb": before, "rss_after_mb": after,
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--sizes", default="0,10000,100000,1000000",
                        help="sentences per fit; 0 is the BC2GM training split itself")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return child(args.data_dir, args.child)
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; WordClusters({PARAMS})\n")
    print("| sentences | tokens | vocabulary | fit (s) | µs per token | peak RSS before fit "
          "(MB) | peak RSS after fit (MB) | fit's increase (MB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in map(int, args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--data-dir", args.data_dir,
                              "--child", str(size)], check=True, capture_output=True,
                             text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {r['sentences']:,} | {r['tokens']:,} | {r['vocabulary']:,} | "
              f"{r['seconds']:.1f} | {1e6 * r['seconds'] / r['tokens']:.2f} | "
              f"{r['rss_before_mb']:.0f} | {r['rss_after_mb']:.0f} | "
              f"{r['rss_after_mb'] - r['rss_before_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()

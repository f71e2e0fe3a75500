"""Model files (issues #40 and #44): size, save and load time of each format, and the time
of ``sklearn-ssl-crf tag`` on a one-sentence file, on the full CoNLL-2000 model.

The model: ``sklearn-ssl-crf train`` on all 8,936 CoNLL-2000 training sentences (words and
POS tags; the command line's window features), a `CRF` at c1 = 0, c2 = 1 stopped after
``--iterations`` L-BFGS iterations (the weights' values do not change what a file costs,
their number does).

For each format (the package's ``.model``, a pickle ``.joblib``, the ``.skops`` of earlier
releases): the file's size; ``save`` and ``load`` timed in this process, formats
alternated (A B C A B C ...), medians of ``--repeats``; then ``tag`` run as a new process
on a one-sentence file, alternated the same way (the whole command: start-up, imports,
loading the model, tagging). Ratios are to the pickle.

Usage::

    python benchmarks/bench_model_files.py --repeats 5
"""

import argparse
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from conll_features import DEFAULT_DATA

from sklearn_ssl_crf import load, save

SUFFIXES = [".model", ".joblib", ".skops"]


def cli(*arguments):
    """Run ``python -m sklearn_ssl_crf ARGUMENTS`` as a new process."""
    subprocess.run([sys.executable, "-m", "sklearn_ssl_crf", *map(str, arguments)],
                   check=True, capture_output=True)


def timed(function):
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}"
          f", numpy {np.__version__}")
    folder = pathlib.Path(tempfile.mkdtemp())
    train = pathlib.Path(args.data) / "conll2000" / "train.txt"
    trained = folder / "trained.joblib"
    cli("train", train, "--token-columns", 0, 1, "--c1", 0, "--c2", 1, "--max-iterations",
        args.iterations, "--model", trained, "--quiet")
    model, info = load(trained, trusted=True, return_info=True)
    print(f"model: {model[-1].num_attributes_:,} attributes, {len(model[-1].classes_)} "
          "labels")
    paths = {suffix: folder / f"tagger{suffix}" for suffix in SUFFIXES}
    sentence = folder / "one.txt"
    sentence.write_text(train.read_text().split("\n\n")[0] + "\n\n")
    saves, loads, tags = ({suffix: [] for suffix in SUFFIXES} for _ in range(3))
    for _ in range(args.repeats):
        for suffix, path in paths.items():
            saves[suffix].append(timed(lambda: save(model, path, info=info)))
            trusted = suffix == ".joblib"
            loads[suffix].append(timed(lambda: load(path, trusted=trusted)))
    for _ in range(args.repeats):
        for suffix, path in paths.items():
            trusted = ["--trusted"] if suffix == ".joblib" else []
            tags[suffix].append(timed(lambda: cli("tag", path, sentence, "--format", "columns",
                                                *trusted)))
    reference = {"size": paths[".joblib"].stat().st_size,
                 "save": statistics.median(saves[".joblib"]),
                 "load": statistics.median(loads[".joblib"]),
                 "tag": statistics.median(tags[".joblib"])}
    print("| format | size (MB) | save (s) | load (s) | tag, one sentence (s) | "
          "ratios to the pickle: size, save, load, tag |")
    print("|---|---:|---:|---:|---:|---|")
    for suffix, path in paths.items():
        figures = {"size": path.stat().st_size, "save": statistics.median(saves[suffix]),
                   "load": statistics.median(loads[suffix]),
                   "tag": statistics.median(tags[suffix])}
        ratios = ", ".join(f"{figures[k] / reference[k]:.2f}" for k in figures)
        print(f"| `{suffix}` | {figures['size'] / 1e6:.1f} | {figures['save']:.2f} | "
              f"{figures['load']:.3f} | {figures['tag']:.2f} | {ratios} |")


if __name__ == "__main__":
    main()

"""
=========================================================
Natural-gradient benchmark figure, from bench_ngd results
=========================================================

Draws test accuracy and span F1 against epochs for the natural-gradient updates on
CoNLL-2000, like Figures 3-6 of the NGD paper, from the JSON files written by
``benchmarks/bench_ngd.py``; this is how ``docs/ngd_convergence.png`` is made. It needs
those files, so the documentation shows it without running it; the self-contained
version is ``plot_ngd_convergence.py``.

Usage::

    python examples/ngd_convergence_from_bench.py ngd0.json ngd1.json ... [--output ngd.png]

Without ``--output`` the figure is shown instead of written. Needs matplotlib (not a
dependency of the package).
"""

import argparse
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="JSON files written by bench_ngd.py")
    parser.add_argument("--output", help="write the figure here (PNG) instead of showing it")
    args = parser.parse_args()
    results = {}
    for path in args.results:
        results.update(json.loads(Path(path).read_text()))

    runs = {}
    for key, value in results.items():
        if key.startswith("ngd/"):
            _, update, batch, _ = key.split("/")
            label = update if batch == "b1" else f"{update}, batch {batch[1:]}"
            runs.setdefault(label, []).append(value)

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharex=True)
    for axis, metric, title in ((axes[0], "accuracy", "token accuracy (%)"),
                                (axes[1], "span_f1", "span F1 (%)")):
        for label, records in sorted(runs.items()):
            curve = 100 * np.mean([r[f"curve_{metric}"] for r in records], axis=0)
            style = "--" if "batch" in label else "-"
            axis.plot(np.arange(1, curve.size + 1), curve, style, label=f"{label} "
                      f"({len(records)} seeds)")
        if "crfsuite" in results:
            points = results["crfsuite"]["curve"]
            axis.plot([p["epochs"] for p in points], [100 * p[metric] for p in points], "k^",
                      label="sklearn-crfsuite l2sgd")
        if "crf" in results:
            axis.axhline(100 * results["crf"]["final"][metric], color="grey", linestyle=":",
                         label="CRF (L-BFGS, converged)")
        axis.set_xlabel("epoch")
        axis.set_ylabel(title)
        axis.grid(alpha=0.3)
        low = min(100 * np.mean([r[f"curve_{metric}"] for r in records], axis=0)[2]
                  for records in runs.values())
        axis.set_ylim(bottom=low - 0.2)
    axes[1].legend(fontsize=8, loc="lower right")
    figure.suptitle("CoNLL-2000 test set, natural-gradient updates (mean over seeds)")
    figure.tight_layout()
    if args.output:
        figure.savefig(args.output, dpi=110)
        print(f"wrote {args.output}")
    else:
        plt.show()


if __name__ == "__main__":
    main()

"""Checkpoints and interruptions on real fits (issue #32): what ``checkpoint=directory``
costs, and what a fit interrupted by a real Ctrl-C (SIGINT) and run again gives.

Cases (``--cases``), each an estimator as a user calls it:

``er``
    `EntropyRegularizedCRF()` (defaults: priors, strengths and iterations chosen by 5-fold
    cross-validation, then the refit) on CoNLL-2000 with the sklearn-crfsuite tutorial's
    features: 500 labelled and 5,000 unlabelled training sentences, drawn with seed 0.
``graph-pr``
    `GraphPRCRF(graph='trigram')` (defaults otherwise) on UD English-EWT dev + test: 100
    labelled sentences drawn with seed 0, all others unlabelled (the POS protocol of
    ``bench_defaults.py``).
``ngd``
    `NaturalGradientCRF(gamma=0.1, proportion_weight=1, batch_size=16,
    max_iterations=20)`: the same CoNLL-2000 draw, both phases (supervised, then with the
    unlabelled terms).

For each: fits without and with a checkpoint, alternated (A B A B), their median times and
ratio, and that they give the same weights; then a checkpointed fit run in a child process
(fork) that is sent SIGINT after ``--at`` of the plain fit's median time, and the same fit
run again with the same directory: whether it ends with the plain fit's weights (largest
absolute difference), its time, the records and bytes in the directory; and a third run
that reads every run (the cost of a fit whose checkpoint is complete).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_checkpoints.py --cases er,graph-pr,ngd
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from bench_defaults import language_pool, pos_pool
from conll_features import DEFAULT_DATA, load_tutorial_conll2000
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import EntropyRegularizedCRF, GraphPRCRF, NaturalGradientCRF


def conll_draw(data_dir):
    X, y, _, _, _ = load_tutorial_conll2000(data_dir)
    order = np.random.default_rng(0).permutation(len(X))
    labelled, unlabelled = order[:500], order[500:5500]
    return ([X[i] for i in labelled], [y[i] for i in labelled],
            {"X_unlabeled": [X[i] for i in unlabelled]})


def cases(data_dir, names):
    if "er" in names or "ngd" in names:
        X, y, extra = conll_draw(data_dir)
        if "er" in names:
            yield "er", lambda **kw: EntropyRegularizedCRF(random_state=0, **kw), X, y, extra
        if "ngd" in names:
            yield "ngd", lambda **kw: NaturalGradientCRF(
                gamma=0.1, proportion_weight=1.0, batch_size=16, max_iterations=20,
                random_state=0, **kw), X + extra["X_unlabeled"], y + [None] * len(
                extra["X_unlabeled"]), {}
    if "graph-pr" in names:
        sentences, tags = language_pool(data_dir, "English")
        X, y_partial, _, _ = pos_pool(0, sentences, tags)
        yield "graph-pr", lambda **kw: GraphPRCRF(graph="trigram", random_state=0, **kw), \
            X, y_partial, {}


def timed(make, X, y, extra, **kwargs):
    started = time.perf_counter()
    model = make(**kwargs).fit(X, y, **extra)
    return model, time.perf_counter() - started


def largest_difference(a, b):
    return max(float(np.max(np.abs(a.state_weights_ - b.state_weights_))),
               float(np.max(np.abs(a.transition_weights_ - b.transition_weights_))))


def interrupted_fit(make, X, y, extra, directory, after):
    """Fork a child running the checkpointed fit; SIGINT it after ``after`` seconds.
    Returns whether the child was interrupted (exit status 130) rather than finished."""
    pid = os.fork()
    if pid == 0:
        # A shell's background job ignores SIGINT; a user's Ctrl-C is not ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        status = 0
        try:
            make(checkpoint=directory).fit(X, y, **extra)
        except KeyboardInterrupt:
            status = 130
        os._exit(status)
    time.sleep(after)
    os.kill(pid, signal.SIGINT)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 130


def measure(name, make, X, y, extra, at, repeats, work):
    plain_times, checkpoint_times, same = [], [], True
    reference = None
    for repeat in range(repeats):
        model, seconds = timed(make, X, y, extra)
        plain_times.append(seconds)
        if reference is None:
            reference = model
        directory = work / f"{name}-ab-{repeat}"
        model, seconds = timed(make, X, y, extra, checkpoint=directory)
        checkpoint_times.append(seconds)
        same &= largest_difference(model, reference) == 0.0
        shutil.rmtree(directory)
        print(f"  {name}: plain {plain_times[-1]:.1f} s, checkpointed {seconds:.1f} s",
              flush=True)
    plain = statistics.median(plain_times)
    directory = work / f"{name}-interrupted"
    after = at * plain
    interrupted = interrupted_fit(make, X, y, extra, directory, after)
    records = list(directory.glob("run-*.npz"))
    resumed, resumed_seconds = timed(make, X, y, extra, checkpoint=directory)
    again, again_seconds = timed(make, X, y, extra, checkpoint=directory)
    row = {
        "plain_seconds": plain_times, "checkpoint_seconds": checkpoint_times,
        "overhead_ratio": statistics.median(checkpoint_times) / plain,
        "checkpointed_same_model": bool(same),
        "sigint_after_seconds": after, "interrupted": interrupted,
        "records_at_interruption": len(records),
        "resumed_seconds": resumed_seconds,
        "resumed_largest_difference": largest_difference(resumed, reference),
        "read_again_seconds": again_seconds,
        "read_again_largest_difference": largest_difference(again, reference),
        "records": len(list(directory.glob("run-*.npz"))),
        "megabytes": sum(p.stat().st_size for p in directory.iterdir()) / 1e6,
        "n_iter": reference.n_iter_, "best_params": getattr(reference, "best_params_", None),
    }
    shutil.rmtree(directory)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cases", default="er,graph-pr,ngd")
    parser.add_argument("--at", type=float, default=0.6,
                        help="SIGINT after this fraction of the plain fit's median time")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, default=Path("/tmp/bench_checkpoints.json"))
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = json.loads(args.output.read_text()) if args.output.exists() else {}
    work = Path(tempfile.mkdtemp(prefix="bench_checkpoints."))
    for name, make, X, y, extra in cases(args.data_dir, args.cases.split(",")):
        print(f"{name}: {len(X)} sequences", flush=True)
        results[name] = measure(name, make, X, y, extra, args.at, args.repeats, work)
        args.output.write_text(json.dumps(results, indent=1))
        print(json.dumps(results[name], indent=1), flush=True)
    shutil.rmtree(work)
    print(f"{'case':10} {'plain s':>8} {'ckpt s':>8} {'ratio':>6} {'SIGINT s':>8} "
          f"{'resumed s':>9} {'diff':>6} {'reread s':>8} {'records':>7} {'MB':>6}")
    for name, row in results.items():
        print(f"{name:10} {statistics.median(row['plain_seconds']):8.1f} "
              f"{statistics.median(row['checkpoint_seconds']):8.1f} "
              f"{row['overhead_ratio']:6.3f} {row['sigint_after_seconds']:8.1f} "
              f"{row['resumed_seconds']:9.1f} {row['resumed_largest_difference']:6.0g} "
              f"{row['read_again_seconds']:8.1f} {row['records']:7d} {row['megabytes']:6.1f}")


if __name__ == "__main__":
    main()

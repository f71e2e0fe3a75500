"""Gain from unlabelled sentences over the strongest supervised baselines (issues #3 and #13):
Jiao et al. (2006)'s protocol on BC2GM and CoNLL-2000.

For each corpus, labelled sets are drawn at random from the training split (seeded draws
0, 1, ...); the unlabelled sets are prefixes of one permutation of the rest of the training
split, so larger unlabelled sets contain the smaller ones. Every configuration is trained on
the same labelled (and unlabelled) sentences, with the features of `WindowFeatures`, and
scored on the test split (conlleval span precision, recall, F1, predicted mentions).

Configurations (rows):

- ``sklearn-crfsuite``: `sklearn_crfsuite.CRF` on the labelled sentences, at the tutorial's
  c1 = c2 = 0.1 and tuned;
- ``CRF``: our supervised `CRF`;
- ``CRF + clusters``: the same with the `WordClusters` features of each token and its
  neighbours, the clusters learned from the labelled and unlabelled sentences of the cell;
  ``+ vectors`` adds the word's dense cluster vector, scaled by 3
  (``WindowFeatures(word_vectors=3)``);
- ``entropy g + proportions w`` (and ``+ clusters``): `EntropyRegularizedCRF` with entropy
  weight g and label-proportion weight w (g = 0: proportions alone), starting from the
  supervised optimum and keeping the iterate of best dev span F1;
- ``NGD`` and ``NGD entropy g + proportions w`` (and ``+ clusters``): `NaturalGradientCRF`
  ('arctan', batches of 16, 20 epochs per phase, ``random_state=0``), supervised and with
  the same unlabelled terms; it has no L1 prior, so it is tuned over the grid's points with
  c1 = 0. Not run by default (``--methods``).

Every configuration is fitted at every point of one regularisation grid (c1, c2) and the
point of best dev span F1 is kept, per draw: "tuned" everywhere means chosen on the dev set,
never on test. "best on dev" picks, per draw and unlabelled set, the configuration and grid
point of best dev F1 among all of ours. Gains are reported against the tuned supervised `CRF`
(the strongest supervised baseline) and against sklearn-crfsuite at 0.1/0.1 and tuned.

BC2GM: 200 labelled sentences, unlabelled sets of 1x and 5x that and all the rest (12,374);
dev = a fixed random 1,000 of the 2,519 devel sentences. CoNLL-2000 has no development
split: a fixed random 1,000 training sentences are the dev set, the labelled (500) and
unlabelled sentences (all the rest) are drawn from the others.

Compute: per draw and unlabelled set, the features are built and vectorised once (one
vocabulary over train, dev and test; attributes absent from a model's training sentences
keep weight 0). The supervised optimum of each grid point, the start of the semi-supervised
fits, is computed once and shared. The semi-supervised phase is capped at ``--max-iterations``
and stops after ``--patience`` iterations without a dev improvement. Per-fit results go to a
JSON file after every fit; a rerun with the same settings resumes from it, and several
processes (say one per draw, ``--draws 3 --first-draw 2``) can share the work.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ssl_accuracy.py --corpus bc2gm \\
        --json /tmp/bc2gm.json --output /tmp/bc2gm.md

    # test F1 against the number of unlabelled sentences, for chosen configurations
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ssl_accuracy.py --corpus bc2gm \\
        --sizes 100,300,1000,3000,all --methods "CRF + clusters" --json /tmp/curve.json

    # smoke run (a minute): tiny labelled, unlabelled, dev and test sets
    python benchmarks/bench_ssl_accuracy.py --quick --output /tmp/quick.md
"""

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import sklearn_crfsuite

from sklearn_ssl_crf import (
    CRF,
    EntropyRegularizedCRF,
    NaturalGradientCRF,
    SequenceVectorizer,
    WindowFeatures,
    WordClusters,
)
from sklearn_ssl_crf.datasets import load_bc2gm, load_conll2000
from sklearn_ssl_crf.metrics import span_classification_report, span_f1_score

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_JSON = Path("/tmp/bench_ssl_accuracy.json")

GRID = ((0.0, 0.01), (0.0, 0.1), (0.0, 1.0), (0.1, 0.01), (0.1, 0.1), (0.1, 1.0))
TUTORIAL = (0.1, 0.1)
# (gamma, proportion weight) of the semi-supervised configurations: issue #3's best on
# BC2GM (g = 0.1, w = 10), over every grid point; the others of issue #3 cost as much again.
SEMI_SUPERVISED = ((0.1, 10.0),)
CLUSTERS = dict(n_clusters=(64, 256, 1024), min_count=2, random_state=0)
VECTOR_SCALE = 3.0
# NaturalGradientCRF's settings of issue #4's BC2GM runs (bench_ngd_ssl.py at bd1db82).
NGD = dict(update="arctan", batch_size=16, max_iterations=20, period=0, random_state=0)

DEFAULTS = {
    "bc2gm": {"n_labelled": 200, "sizes": "1x,5x,all", "draws": 5, "max_iterations": 100},
    "conll2000": {"n_labelled": 500, "sizes": "all", "draws": 5, "max_iterations": 40},
}
QUICK = {"n_labelled": 40, "sizes": "1x", "draws": 1, "max_iterations": 3, "dev_size": 100,
         "test_size": 300}


# -- configurations -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    family: str  # 'crfsuite', 'supervised', 'semi-supervised', 'ngd'
    clusters: bool = False
    gamma: float = 0.0
    proportion_weight: float = 0.0
    vectors: bool = False

    @property
    def uses_unlabelled(self):
        return self.clusters or self.unlabelled_terms

    @property
    def unlabelled_terms(self):
        return bool(self.gamma or self.proportion_weight)

    @property
    def default(self):
        """Run when ``--methods`` is not given."""
        return self.family != "ngd"

    def grid(self, grid):
        """The points of ``grid`` this configuration is fitted at (NGD has no c1)."""
        return [c for c in grid if self.family != "ngd" or c[0] == 0]

    @property
    def features(self):
        """The feature set: 'plain', 'clusters' or 'clusters + vectors'."""
        if not self.clusters:
            return "plain"
        return "clusters + vectors" if self.vectors else "clusters"


FEATURE_SUFFIXES = {"plain": "", "clusters": " + clusters",
                    "clusters + vectors": " + clusters + vectors"}


def methods():
    found = [Method("sklearn-crfsuite", "crfsuite"), Method("CRF", "supervised"),
             Method("CRF + clusters", "supervised", clusters=True),
             Method("CRF + clusters + vectors", "supervised", clusters=True, vectors=True)]
    for clusters, vectors in ((False, False), (True, False), (True, True)):
        for g, w in SEMI_SUPERVISED:
            name = f"entropy g={g:g} + proportions w={w:g}" if g else f"proportions w={w:g}"
            method = Method(name, "semi-supervised", clusters, g, w, vectors)
            found.append(dataclasses.replace(method, name=name
                                             + FEATURE_SUFFIXES[method.features]))
    for clusters in (False, True):
        suffix = FEATURE_SUFFIXES["clusters" if clusters else "plain"]
        found.append(Method("NGD" + suffix, "ngd", clusters))
        for g, w in SEMI_SUPERVISED:
            found.append(Method(f"NGD entropy g={g:g} + proportions w={w:g}{suffix}", "ngd",
                                clusters, g, w))
    return found


class SupervisedStart:
    """The supervised optimum of one labelled set (an `LBFGSResult`), computed on first use."""

    def __init__(self):
        self.result = None


class SharedStartEntropyCRF(EntropyRegularizedCRF):
    """`EntropyRegularizedCRF` whose supervised phase, run to convergence from zero weights,
    is shared through a `SupervisedStart`; ``max_iterations`` caps only the semi-supervised
    phase, which stops after ``patience`` iterations without a dev improvement.

    This hooks the private `CRF._minimize`, which ``fit`` calls once per phase.
    """

    start = None
    patience = 0

    def _minimize(self, objective, theta, callback=None):
        if theta.any():
            return super()._minimize(objective, theta, self._early_stopping(callback))
        if self.start.result is None:
            cap, self.max_iterations = self.max_iterations, None
            try:
                self.start.result = super()._minimize(objective, theta, callback)
            finally:
                self.max_iterations = cap
        return dataclasses.replace(self.start.result, x=self.start.result.x.copy())

    def _early_stopping(self, callback):
        if not self.patience or callback is None:
            return callback
        start_log = self.start.result.log
        best = {"score": start_log[-1].get("dev_span_f1", -np.inf) if start_log else -np.inf,
                "iteration": 0}

        def on_iteration(iteration, theta):
            entry = callback(iteration, theta) or {}
            score = entry.get("dev_span_f1")
            if score is not None and score > best["score"]:
                best.update(score=score, iteration=iteration)
            elif score is not None and iteration - best["iteration"] >= self.patience:
                raise StopIteration(f"dev span F1 not improved for {self.patience} iterations")
            return entry

        return on_iteration


# -- corpora ------------------------------------------------------------------------------

@dataclasses.dataclass
class Corpus:
    name: str
    X_train: list  # token sequences
    y_train: list
    pool: np.ndarray  # training sentences the labelled and unlabelled sets are drawn from
    X_dev: list
    y_dev: list
    X_test: list
    y_test: list
    dev_note: str


def load_corpus(name, data_dir, dev_size, test_size=None):
    dev_rng = np.random.default_rng(12345)
    if name == "bc2gm":
        splits = load_bc2gm(Path(data_dir) / "bc2gm")
        (X_train, y_train), (X_devel, y_devel), (X_test, y_test) = (
            splits[part] for part in ("train", "devel", "test"))
        dev = np.sort(dev_rng.permutation(len(X_devel))[:dev_size])
        X_dev, y_dev = [X_devel[i] for i in dev], [y_devel[i] for i in dev]
        pool = np.arange(len(y_train))
        dev_note = f"dev: a fixed random {len(dev):,} of the {len(X_devel):,} devel sentences"
    else:
        splits = load_conll2000(Path(data_dir) / "conll2000")
        (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
        order = dev_rng.permutation(len(X_train))
        dev, pool = np.sort(order[:dev_size]), np.sort(order[dev_size:])
        X_dev, y_dev = [X_train[i] for i in dev], [y_train[i] for i in dev]
        dev_note = (f"CoNLL-2000 has no devel split: dev = a fixed random {len(dev):,} training "
                    f"sentences, held out of the labelled and unlabelled sets")
    X_test, y_test = X_test[:test_size], y_test[:test_size]
    print(f"{name}: {len(y_train):,} train, {len(y_dev):,} dev, {len(y_test):,} test sentences",
          flush=True)
    return Corpus(name, X_train, y_train, pool, X_dev, y_dev, X_test, y_test, dev_note)


@dataclasses.dataclass
class Cell:
    """One draw and unlabelled set: its sentences and, per feature set, their features."""
    labelled: np.ndarray
    unlabelled: np.ndarray
    features: dict = dataclasses.field(default_factory=dict)

    def matrices(self, corpus, features):
        """(labelled, unlabelled, dev, test) `SequenceMatrix`es of one feature set (see
        `Method.features`), built on first use; the clusters are learned from the labelled
        and unlabelled sentences."""
        if features not in self.features:
            started = time.perf_counter()
            train = [corpus.X_train[i] for i in np.concatenate([self.labelled, self.unlabelled])]
            clusters = features != "plain"
            window = WindowFeatures(
                clusters=WordClusters(**CLUSTERS) if clusters else None,
                word_vectors=VECTOR_SCALE if features == "clusters + vectors" else None)
            window.fit(train)
            parts = [window.transform(x) for x in (train, corpus.X_dev, corpus.X_test)]
            lengths = np.cumsum([0] + [len(p) for p in parts])
            matrix = SequenceVectorizer().fit_transform([x for p in parts for x in p])
            train, dev, test = (matrix[np.arange(a, b)] for a, b in zip(lengths, lengths[1:]))
            n = len(self.labelled)
            self.features[features] = (train[np.arange(n)], train[np.arange(n, len(train))],
                                       dev, test)
            if not clusters:
                self.dicts = parts[0][:n], parts[2]  # labelled and test, for sklearn-crfsuite
            print(f"  features ({features}) of {len(train):,} training sentences in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
        return self.features[features]


def parse_grid(spec):
    """'0:0.01,0.1:1' -> ((0.0, 0.01), (0.1, 1.0))."""
    return tuple(tuple(float(x) for x in point.split(":")) for point in spec.split(","))


def parse_sizes(spec, n_labelled, n_rest):
    """'1x,5x,5000,all' -> [(label, n_sentences)], capped at the sentences available."""
    sizes = []
    for item in spec.split(","):
        item = item.strip()
        if item == "all":
            n = n_rest
        elif item.endswith("x"):
            n = int(round(float(item[:-1]) * n_labelled))
        else:
            n = int(item)
        sizes.append((item, min(n, n_rest)))
    return sizes


# -- fitting and scoring ------------------------------------------------------------------

def scores(y_true, y_pred):
    overall = span_classification_report(y_true, y_pred, output_dict=True)["overall"]
    mentions = span_classification_report(y_pred, y_pred, output_dict=True)["overall"]["support"]
    return {"precision": overall["precision"], "recall": overall["recall"],
            "f1": overall["f1-score"], "mentions": int(mentions)}


def fit_one(method, c, corpus, cell, starts, settings):
    c1, c2 = c
    y = [corpus.y_train[i] for i in cell.labelled]
    X, X_unlabelled, X_dev, X_test = cell.matrices(corpus, method.features)
    started = time.perf_counter()
    record = {}
    if method.family == "ngd":
        model = NaturalGradientCRF(**NGD, c2=c2, gamma=method.gamma,
                                   proportion_weight=method.proportion_weight)
        model.fit(X, y, X_unlabeled=X_unlabelled if method.unlabelled_terms else None)
        dev_pred, test_pred = model.predict(X_dev), model.predict(X_test)
    elif method.family == "crfsuite":
        model = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2)
        model.fit(cell.dicts[0], y)
        dev_pred = model.predict(_dicts_of(corpus.X_dev, cell))
        test_pred = model.predict(cell.dicts[1])
    else:
        if method.family == "supervised":
            model = CRF(c1=c1, c2=c2).fit(X, y)
        else:
            model = SharedStartEntropyCRF(
                c1=c1, c2=c2, gamma=method.gamma, proportion_weight=method.proportion_weight,
                max_iterations=settings["max_iterations"])
            model.patience = settings["patience"]
            model.start = starts.setdefault((method.features, c), SupervisedStart())
            model.fit(X, y, X_unlabeled=X_unlabelled, X_dev=X_dev, y_dev=corpus.y_dev)
            second = [e for e in model.training_log_ if e["phase"] == "semi-supervised"]
            record.update(best_iteration=model.best_iteration_,
                          ssl_iterations=len(second) - 1)
        dev_pred, test_pred = model.predict(X_dev), model.predict(X_test)
    record.update(seconds=time.perf_counter() - started,
                  dev_f1=span_f1_score(corpus.y_dev, dev_pred),
                  **scores(corpus.y_test, test_pred))
    return record


def _dicts_of(X_dev, cell):
    # The dev set's plain features, built once per cell.
    if not hasattr(cell, "dev_dicts"):
        cell.dev_dicts = WindowFeatures().transform(X_dev)
    return cell.dev_dicts


def settings_key(settings):
    """What a fit's result depends on (not the draws, sizes or methods run)."""
    return json.dumps({k: v for k, v in settings.items()
                       if k not in ("draws", "first_draw", "sizes", "methods")},
                      sort_keys=True)


def load_results(paths):
    """The records of every file of ``paths`` that exists."""
    results = []
    for path in paths:
        if path.exists():
            with open(path) as f:
                results += json.load(f)
    return results


def save_results(path, new_records):
    """Adds ``new_records`` to the file, rereading it first (other processes may write)."""
    results = load_results([path]) + new_records
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with open(temporary, "w") as f:
        json.dump(results, f)
    os.replace(temporary, path)


def run_corpus(corpus, settings, json_paths):
    key = settings_key(settings)
    json_path = json_paths[0]
    done = {(r["method"], r["draw"], r["size"], r["c1"], r["c2"]) for r in
            load_results(json_paths) if r["corpus"] == corpus.name and r["settings"] == key}
    n_labelled = settings["n_labelled"]
    sizes = parse_sizes(settings["sizes"], n_labelled, len(corpus.pool) - n_labelled)
    chosen = [m for m in methods() if m.name in settings["methods"]] if settings["methods"] \
        else [m for m in methods() if m.default]
    first = settings["first_draw"]
    for draw in range(first, first + settings["draws"]):
        order = np.random.default_rng(draw).permutation(corpus.pool)
        labelled, rest = order[:n_labelled], order[n_labelled:]
        for size_label, n_unlabelled in [("-", 0)] + sizes:
            cell = Cell(labelled, rest[:n_unlabelled])
            if size_label == "-":  # the baselines, which use no unlabelled sentence
                cell.unlabelled = rest[:0]
            starts = {}
            for method in chosen:
                if method.uses_unlabelled == (size_label == "-"):
                    continue
                for c in method.grid(settings["grid"]):
                    if (method.name, draw, size_label, c[0], c[1]) in done:
                        continue
                    record = fit_one(method, c, corpus, cell, starts, settings)
                    record.update(corpus=corpus.name, method=method.name, draw=draw,
                                  size=size_label, n_unlabelled=len(cell.unlabelled),
                                  c1=c[0], c2=c[1], settings=key)
                    save_results(json_path, [record])
                    done.add((method.name, draw, size_label, c[0], c[1]))
                    extra = (f", best iterate {record['best_iteration']}/"
                             f"{record['ssl_iterations']}" if "best_iteration" in record else "")
                    print(f"[{corpus.name}] draw {draw} unlabelled {size_label:>5} "
                          f"{method.name:<42} c1={c[0]:<4g} c2={c[1]:<5g} "
                          f"{record['seconds']:6.1f} s  dev F1 {record['dev_f1']:.4f}  "
                          f"test F1 {record['f1']:.4f}{extra}", flush=True)
    return sizes


# -- report -------------------------------------------------------------------------------

def _mean_std(values):
    values = 100.0 * np.asarray(values, dtype=float)
    return f"{values.mean():.2f} ± {values.std():.2f}"


def tuned(records, method, draw, size, grid):
    """The record of ``method`` at its grid point of best dev F1 (first of equals)."""
    rows = [r for r in records if r["method"] == method and r["draw"] == draw
            and r["size"] == size]
    order = {c: k for k, c in enumerate(grid)}
    rows.sort(key=lambda r: order[(r["c1"], r["c2"])])
    return max(rows, key=lambda r: r["dev_f1"]) if rows else None


def report(corpus, settings, records, sizes):
    grid = settings["grid"]
    draws = sorted({r["draw"] for r in records})
    found = [m for m in methods() if any(r["method"] == m.name for r in records)]
    names = [m.name for m in found]
    # the rows that use no unlabelled sentence are fitted once per draw (size "-")
    supervised_names = {m.name for m in found if not m.uses_unlabelled}
    ours = [m.name for m in found if m.family != "crfsuite"]
    lines = [f"## {corpus.name}\n"]
    lines.append(
        f"{settings['n_labelled']} labelled training sentences, {len(draws)} draws (seeds "
        f"{', '.join(map(str, draws))}); test: {len(corpus.y_test):,} sentences; "
        f"{corpus.dev_note}. Grid (c1, c2): {', '.join(f'({a:g}, {b:g})' for a, b in grid)}; "
        f"every row is tuned on dev over it (per draw). Semi-supervised phase capped at "
        f"{settings['max_iterations']} L-BFGS iterations, stopped after "
        f"{settings['patience']} without a dev improvement. Test span F1 (%), mean ± std over "
        "draws.\n")
    size_labels = [label for label, _ in sizes]
    n_of = dict(sizes)

    def cell_rows(name, size, draw_list):
        size = "-" if name in supervised_names else size
        return [tuned(records, name, d, size, grid) for d in draw_list]

    def best_on_dev(size, draw):
        candidates = [cell_rows(name, size, [draw])[0] for name in ours]
        return max((r for r in candidates if r is not None), key=lambda r: r["dev_f1"])

    header = " | ".join(f"{label} ({n_of[label]:,})" for label in size_labels)
    lines.append(f"| configuration (tuned on dev) | {header} |")
    lines.append("|---|" + "---:|" * len(size_labels))
    tutorial = [next((r for r in records if r["method"] == "sklearn-crfsuite"
                      and r["draw"] == d and (r["c1"], r["c2"]) == TUTORIAL), None)
                for d in draws]
    if all(tutorial):  # the tutorial's point is on the grid
        lines.append("| sklearn-crfsuite, c1 = c2 = 0.1 | "
                     + " | ".join(_mean_std([r["f1"] for r in tutorial]) for _ in size_labels)
                     + " |")
    for name in names:
        cells = []
        for label in size_labels:
            rows = cell_rows(name, label, draws)
            cells.append(_mean_std([r["f1"] for r in rows]) if all(rows) else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    best = {label: [best_on_dev(label, d) for d in draws] for label in size_labels}
    lines.append("| **best on dev (ours)** | " + " | ".join(
        _mean_std([r["f1"] for r in best[label]]) for label in size_labels) + " |")
    lines.append("")

    crf = np.array([r["f1"] for r in cell_rows("CRF", "-", draws)])
    suite_tuned = np.array([r["f1"] for r in cell_rows("sklearn-crfsuite", "-", draws)])
    suite_tutorial = np.array([r["f1"] if r else np.nan for r in tutorial])
    lines.append("Gains of the configuration chosen on dev (F1 points, mean; per draw in "
                 "brackets) over the tuned `CRF`, sklearn-crfsuite tuned and at 0.1/0.1:\n")
    for label in size_labels:
        chosen = np.array([r["f1"] for r in best[label]])
        per_draw = ", ".join(f"{100 * g:+.1f}" for g in chosen - crf)
        picks = "; ".join(f"{r['method']} ({r['c1']:g}, {r['c2']:g})" for r in best[label])
        lines.append(
            f"- {label} ({n_of[label]:,}): **{100 * (chosen - crf).mean():+.2f}** over `CRF` "
            f"[{per_draw}], {100 * (chosen - suite_tuned).mean():+.2f} over sklearn-crfsuite "
            f"tuned, **{100 * (chosen - suite_tutorial).mean():+.2f}** over sklearn-crfsuite "
            f"0.1/0.1; chosen: {picks}")
    lines.append("")

    lines.append("Detail (means over draws): precision, recall, predicted mentions, dev F1, "
                 "the grid point chosen per draw, fit time.\n")
    lines.append("| unlabelled | configuration | P | R | F1 | mentions | dev F1 | (c1, c2) "
                 "chosen | seconds |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for label in size_labels:
        for name in names + ["best on dev (ours)"]:
            rows = best[label] if name.startswith("best") else cell_rows(name, label, draws)
            if not all(rows):
                continue
            lines.append(
                f"| {label} | {name} | {100 * np.mean([r['precision'] for r in rows]):.2f} | "
                f"{100 * np.mean([r['recall'] for r in rows]):.2f} | "
                f"{100 * np.mean([r['f1'] for r in rows]):.2f} | "
                f"{np.mean([r['mentions'] for r in rows]):.0f} | "
                f"{100 * np.mean([r['dev_f1'] for r in rows]):.2f} | "
                + ", ".join(f"({r['c1']:g}, {r['c2']:g})" for r in rows)
                + f" | {np.mean([r['seconds'] for r in rows]):.1f} |")
    lines.append("\nSupervised rows at each grid point (test span F1 %, mean over draws; in "
                 "brackets, the draws whose dev set chose the point):\n")
    lines.append("| configuration | " + " | ".join(f"({a:g}, {b:g})" for a, b in grid) + " |")
    lines.append("|---|" + "---:|" * len(grid))
    for name in ("sklearn-crfsuite", "CRF"):
        chosen = [tuned(records, name, d, "-", grid) for d in draws]
        cells = []
        for c in grid:
            rows = [r for r in records if r["method"] == name and r["size"] == "-"
                    and (r["c1"], r["c2"]) == c]
            picked = sum((r["c1"], r["c2"]) == c for r in chosen)
            cells.append(f"{100 * np.mean([r['f1'] for r in rows]):.2f} ({picked})"
                         if rows else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(f"\nFit time of this corpus: {sum(r['seconds'] for r in records) / 60:.0f} "
                 f"min (sum over {len(records)} fits).\n")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["bc2gm", "conll2000", "both"], default="both")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--draws", type=int, help="labelled draws (default: 5)")
    parser.add_argument("--first-draw", type=int, default=0)
    parser.add_argument("--max-iterations", type=int,
                        help="cap of the semi-supervised phase (default: 100 BC2GM, 40 CoNLL)")
    parser.add_argument("--sizes", help="unlabelled sizes, e.g. '1x,5x,all' or '100,1000' "
                                        "(default: '1x,5x,all' BC2GM, 'all' CoNLL)")
    parser.add_argument("--methods", help="comma-separated configurations to run (default: "
                                          "all); the report needs CRF and sklearn-crfsuite")
    parser.add_argument("--n-labelled", type=int, help="default: 200 BC2GM, 500 CoNLL")
    parser.add_argument("--grid", type=parse_grid, default=GRID,
                        help="(c1, c2) points as 'c1:c2,c1:c2,...' (default: "
                             + ",".join(f"{a:g}:{b:g}" for a, b in GRID) + ")")
    parser.add_argument("--patience", type=int, default=20,
                        help="stop the semi-supervised phase after this many iterations "
                             "without a dev improvement")
    parser.add_argument("--dev-size", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--json", default=str(DEFAULT_JSON),
                        help="per-fit results, appended after every fit and resumed from; "
                             "more files after commas are read too (the results of other "
                             "processes), never written")
    parser.add_argument("--report-only", action="store_true",
                        help="report the results in --json without fitting")
    parser.add_argument("--output", help="write the markdown report here")
    args = parser.parse_args()

    corpora = ["bc2gm", "conll2000"] if args.corpus == "both" else [args.corpus]
    json_paths = [Path(path) for path in args.json.split(",")]
    started = time.perf_counter()
    sections = []
    for name in corpora:
        settings = dict(DEFAULTS[name], patience=args.patience, dev_size=args.dev_size,
                        test_size=None, first_draw=args.first_draw, methods=None,
                        grid=args.grid, clusters=CLUSTERS)
        if args.quick:
            settings.update(QUICK)
        for option in ("draws", "max_iterations", "sizes", "n_labelled"):
            if getattr(args, option) is not None:
                settings[option] = getattr(args, option)
        if args.methods:
            settings["methods"] = [m.strip() for m in args.methods.split(",")]
        corpus = load_corpus(name, args.data_dir, settings["dev_size"], settings["test_size"])
        n_labelled = settings["n_labelled"]
        sizes = parse_sizes(settings["sizes"], n_labelled, len(corpus.pool) - n_labelled)
        if not args.report_only:
            run_corpus(corpus, settings, json_paths)
        key = settings_key(settings)
        wanted = {"-"} | {label for label, _ in sizes}
        draws = range(settings["first_draw"], settings["first_draw"] + settings["draws"])
        records = [r for r in load_results(json_paths) if r["corpus"] == name
                   and r["settings"] == key and r["size"] in wanted and r["draw"] in draws]
        sections.append(report(corpus, settings, records, sizes))
    text = (f"# Gain from unlabelled sentences over tuned baselines\n\nMachine: "
            f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; this invocation took "
            f"{time.perf_counter() - started:.0f} s.\n\n" + "\n".join(sections))
    print("\n" + text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    sys.exit(main())

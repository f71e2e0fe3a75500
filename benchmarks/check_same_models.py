"""Check that a refactor leaves the fitted models bit for bit the same (issue #41, part 5).

A fixed list of small fits (every estimator, orders 1 and 2, with and without selection,
with a checkpoint, constraints, weights, partial annotation and ``n_jobs=2``) is run, and for
each fit a SHA-256 is taken of every fitted array attribute (public names ending in ``_``
whose values are NumPy arrays or SciPy sparse matrices: name, dtype, shape and bytes; sparse
matrices by format, shape and their data/indices/indptr arrays) together with the labels
predicted for a few held-out sequences (``transduction_`` for `GraphPropagation`). One line
a fit is printed: name, digest, seconds. Only the public API is used (``sklearn_ssl_crf``,
``sklearn_ssl_crf.datasets``), every parameter by keyword, so that the same script runs on
the code before and after a refactor that moves modules or makes parameters keyword-only.

Data: the first sentences of CoNLL-2000 and a few OCR words from the shared corpora
(``--data``, default ``../shared/data`` beside the repository), and
`sklearn_ssl_crf.datasets.make_sequences` elsewhere; every draw has a fixed seed.

Some fits must also equal another (`SAME_AS`; a line each, and exit status 1 if not): the
fits with ``checkpoint=`` a fresh temporary directory (``crf_checkpoint``,
``entropy_fixed_checkpoint``, ``graph_pr_knn_checkpoint``) the same fits without,
``crf_checkpoint_refit`` (a second fit in the directory of a finished one, which reads its
result) and ``crf_n_jobs2`` the plain ``crf_order1``.

Using it for a refactor::

    # 1. at the commit before the refactor, from a worktree of it
    git worktree add /tmp/before <commit-before>
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/before \\
        python benchmarks/check_same_models.py --out before.json
    # 2. after the refactor, in the refactored tree
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. \\
        python benchmarks/check_same_models.py --out after.json --compare before.json

Run the same copy of this script both times (the newer one, if it changed); set
``PYTHONPATH`` explicitly, since an editable install may point at another tree: the first
line printed says which package was imported. ``--compare`` prints, per fit, ``same`` or
``DIFFERENT`` (with the attributes that differ) and exits with status 1 on any difference
or a fit missing from either file (with ``--only``, only the fits run are compared).
``--only crf_order1,crfcv_grid`` runs a subset; ``--list`` prints the names. The whole list
took 95 seconds with ``OPENBLAS_NUM_THREADS=1`` on the 2-core development machine, shared
with another job; the slowest fit, ``graph_pr_trigram_order2``, about 20.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import sklearn_ssl_crf
from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
    WindowFeatures,
    WordClusters,
)
from sklearn_ssl_crf.datasets import load_conll2000, load_ocr, make_sequences

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA_DIR = DEFAULT_DATA  # set from --data in main()

# Fits whose digest must equal another fit's: (fit, reference).
SAME_AS = [("crf_checkpoint", "crf_order1"), ("crf_checkpoint_refit", "crf_order1"),
           ("crf_n_jobs2", "crf_order1"), ("entropy_fixed_checkpoint", "entropy_fixed"),
           ("graph_pr_knn_checkpoint", "graph_pr_knn")]


# --- data (loaded once, only when a chosen fit needs it) --------------------------------

@lru_cache(maxsize=None)
def conll():
    """CoNLL-2000: 600 labelled and 1,000 unlabelled training sentences, 30 test sentences,
    as the feature dicts of `WindowFeatures` (every parameter given, so that a change of a
    default does not change the data)."""
    splits = load_conll2000(DATA_DIR / "conll2000")
    (train, y_train), (test, _) = splits["train"], splits["test"]
    features = WindowFeatures(window=1, suffixes=(2, 3), prefixes=(), word_shape=True,
                              column_prefixes=(2,), bos_eos=True)
    features.fit(train[:1600])
    return {"X": features.transform(train[:600]), "y": y_train[:600],
            "X_unlabeled": features.transform(train[600:1600]),
            "X_test": features.transform(test[:30])}


@lru_cache(maxsize=None)
def synthetic():
    """`make_sequences` (BIO tags of 2 types, dict tokens with a ``"word"`` key): 500
    labelled, 600 unlabelled and 20 held-out sequences of one draw."""
    X, y = make_sequences(n_sequences=1120, n_types=2, vocabulary_size=300, min_length=5,
                          max_length=25, noise=0.3, stickiness=0.5, features="dict",
                          random_state=0)
    return {"X": X[:500], "y": y[:500], "X_unlabeled": X[500:1100], "X_test": X[1100:]}


@lru_cache(maxsize=None)
def ocr():
    """OCR letters of fold 0 (128 pixels a letter, as float64 rows), in an order drawn
    with seed 0 (the file groups the words): 150 labelled, 300 unlabelled and 20 held-out
    words."""
    images, letters = load_ocr(DATA_DIR / "ocr")[0]
    order = np.random.RandomState(0).permutation(len(images))[:470]
    images = [np.asarray(images[i], dtype=np.float64) for i in order]
    letters = [list(letters[i]) for i in order]
    return {"X": images[:150], "y": letters[:150], "X_unlabeled": images[150:450],
            "X_test": images[450:]}


def partially_labelled(y, seed=0):
    """A copy of y with 20 % of the tokens' labels and every fifth sequence's set to None."""
    rng = np.random.RandomState(seed)
    out = []
    for i, labels in enumerate(y):
        if i % 5 == 4:
            out.append([None] * len(labels))
        else:
            hide = rng.rand(len(labels)) < 0.2
            out.append([None if h else label for label, h in zip(labels, hide)])
    return out


# --- the fits ----------------------------------------------------------------------------
# Each returns (fitted estimator, predicted labels of held-out sequences); the estimator may
# be a dict {prefix: fitted object} when other fitted objects (word clusters) count too.

FITS = {}


def fit(function):
    FITS[function.__name__] = function
    return function


def fitted(model, data, **fit_params):
    model.fit(data["X"], data["y"], **fit_params)
    return model, model.predict(data["X_test"])


@fit
def crf_order1():
    return fitted(CRF(order=1, c1=0.05, c2=0.5, max_iterations=100), conll())


@fit
def crf_order2():
    return fitted(CRF(order=2, c1=0.0, c2=1.0, max_iterations=40), conll())


@fit
def crf_constraints_bio():
    return fitted(CRF(constraints="bio", c1=0.0, c2=1.0, max_iterations=100), synthetic())


@fit
def crf_order2_constraints_auto():
    return fitted(CRF(order=2, constraints="auto", c1=0.0, c2=1.0, max_iterations=40),
                  synthetic())


@fit
def crf_sparse_states_transitions():
    return fitted(CRF(all_possible_states=False, all_possible_transitions=False,
                      constraints=None, c1=0.05, c2=0.5, max_iterations=100), conll())


@fit
def crf_word_clusters():
    """Word clusters learnt on the CoNLL sentences, their features added to the CRF's."""
    splits = load_conll2000(DATA_DIR / "conll2000")
    (train, y_train), (test, _) = splits["train"], splits["test"]
    clusters = WordClusters(n_clusters=(16, 64), n_components=20, context_window=2,
                            max_contexts=2000, min_count=2, lowercase=True,
                            path_lengths=(2, 4), random_state=0)
    features = WindowFeatures(window=1, suffixes=(2, 3), prefixes=(), word_shape=True,
                              column_prefixes=(2,), bos_eos=True, clusters=clusters)
    features.fit(train[:1600])
    model = CRF(c1=0.05, c2=0.5, max_iterations=60)
    model.fit(features.transform(train[:600]), y_train[:600])
    predicted = model.predict(features.transform(test[:30]))
    return {"": model, "clusters.": features.clusters_}, predicted


def with_checkpoint(function):
    """``function(directory)`` with a fresh temporary directory, removed afterwards."""
    directory = tempfile.mkdtemp(prefix="check_same_models_")
    try:
        return function(directory)
    finally:
        shutil.rmtree(directory)


@fit
def crf_checkpoint():
    return with_checkpoint(lambda directory: fitted(
        CRF(order=1, c1=0.05, c2=0.5, max_iterations=100, checkpoint=directory,
            checkpoint_every=5), conll()))


@fit
def crf_checkpoint_refit():
    """The checkpointed fit, then the same fit again in its directory: it reads the
    finished run."""
    def twice(directory):
        def model():
            return CRF(order=1, c1=0.05, c2=0.5, max_iterations=100, checkpoint=directory,
                       checkpoint_every=5)
        model().fit(conll()["X"], conll()["y"])
        return fitted(model(), conll())
    return with_checkpoint(twice)


@fit
def crf_n_jobs2():
    return fitted(CRF(order=1, c1=0.05, c2=0.5, max_iterations=100, n_jobs=2), conll())


@fit
def crf_ocr_c2_transitions():
    return fitted(CRF(order=1, c1=0.0, c2=1.0, c2_transitions=0.1, max_iterations=100), ocr())


@fit
def crf_class_sample_weight():
    data = synthetic()
    sample_weight = np.random.RandomState(1).uniform(0.5, 2.0, size=len(data["X"]))
    return fitted(CRF(class_weight="balanced", c1=0.0, c2=1.0, max_iterations=100), data,
                  sample_weight=sample_weight)


@fit
def crf_partial_annotation():
    data = dict(synthetic())
    data["y"] = partially_labelled(data["y"])
    return fitted(CRF(c1=0.0, c2=1.0, max_iterations=100), data)


@fit
def crfcv_grid():
    return fitted(CRFCV(c1=[0.0, 0.1], c2=[0.1, 1.0], cv=3, random_state=0,
                        max_iterations=40), synthetic())


def entropy_regularized(**params):
    data = synthetic()
    params = {"gamma": 0.5, "proportion_weight": 0.0, "c1": 0.0, "c2": 1.0,
              "early_stopping": False, "semi_supervised_iterations": 30, "random_state": 0,
              "max_iterations": 40, **params}
    return fitted(EntropyRegularizedCRF(**params), data, X_unlabeled=data["X_unlabeled"])


@fit
def entropy_fixed():
    return entropy_regularized()


@fit
def entropy_fixed_checkpoint():
    return with_checkpoint(lambda directory: entropy_regularized(checkpoint=directory,
                                                                 checkpoint_every=5))


@fit
def entropy_label_proportions():
    """Given label proportions, a proportion penalty and class weights."""
    proportions = {"O": 0.6, "B-A": 0.1, "I-A": 0.1, "B-B": 0.1, "I-B": 0.1}
    return entropy_regularized(label_proportions=proportions, proportion_weight=1.0,
                               class_weight={"B-A": 2.0, "B-B": 2.0})


@fit
def entropy_order2_fixed():
    data = synthetic()
    return fitted(EntropyRegularizedCRF(order=2, gamma=0.5, proportion_weight=1.0, c1=0.0,
                                        c2=1.0, early_stopping=False,
                                        semi_supervised_iterations=10, random_state=0,
                                        max_iterations=30),
                  data, X_unlabeled=data["X_unlabeled"])


@fit
def entropy_default_selection():
    X, y = make_sequences(n_sequences=200, n_types=2, vocabulary_size=200, min_length=5,
                          max_length=20, noise=0.3, stickiness=0.5, features="dict",
                          random_state=2)
    data = {"X": X[:60], "y": y[:60], "X_test": X[180:]}
    return fitted(EntropyRegularizedCRF(cv=3, random_state=0, semi_supervised_iterations=15,
                                        max_iterations=40),
                  data, X_unlabeled=X[60:180])


@fit
def semi_supervised_fixed():
    data = synthetic()
    return fitted(SemiSupervisedCRF(gamma=0.5, proportion_weight=0.0, c1=0.0, c2=1.0,
                                    early_stopping=False, semi_supervised_iterations=15,
                                    random_state=0, max_iterations=40),
                  data, X_unlabeled=data["X_unlabeled"])


@fit
def self_training():
    data = synthetic()
    return fitted(SelfTrainingCRF(max_rounds=3, c1=0.0, c2=1.0, early_stopping=False,
                                  random_state=0, max_iterations=40),
                  data, X_unlabeled=data["X_unlabeled"])


@fit
def self_training_default_selection():
    data = synthetic()
    return fitted(SelfTrainingCRF(max_rounds=3, cv=3, random_state=0, max_iterations=40),
                  data, X_unlabeled=data["X_unlabeled"])


@fit
def natural_gradient():
    data = synthetic()
    return fitted(NaturalGradientCRF(gamma=0.1, c2=1.0, max_iterations=3, batch_size=5,
                                     calibration_samples=100, random_state=0),
                  data, X_unlabeled=data["X_unlabeled"])


@fit
def natural_gradient_partial_fit():
    data = synthetic()
    model = NaturalGradientCRF(gamma=0.1, c2=1.0, batch_size=5, calibration_samples=100,
                               random_state=0)
    classes = sorted({label for labels in data["y"] for label in labels})
    X, y, X_unlabeled = data["X"], data["y"], data["X_unlabeled"]
    model.partial_fit(X[:250], y[:250], classes=classes, X_unlabeled=X_unlabeled[:290])
    model.partial_fit(X[250:], y[250:], X_unlabeled=X_unlabeled[290:])
    return model, model.predict(data["X_test"])


@fit
def natural_gradient_order2():
    data = ocr()
    return fitted(NaturalGradientCRF(order=2, update="inverse", eps=0.1, c2=1.0,
                                     max_iterations=3, batch_size=2, calibration_samples=50,
                                     random_state=0), data)


@fit
def crfcv_order2():
    return fitted(CRFCV(order=2, c1=[0.0], c2=[0.1, 1.0], cv=3, random_state=0,
                        max_iterations=40), ocr())


def graph_pr(graph, data, **params):
    params = {"lam": 1.0, "c1": 0.0, "c2": 1.0, "early_stopping": False, **params}
    model = GraphPRCRF(graph=graph, em_iterations=3, mstep_iterations=20, random_state=0,
                       **params)
    return fitted(model, data, X_unlabeled=data["X_unlabeled"])


@fit
def graph_pr_knn():
    return graph_pr("knn", ocr(), n_neighbors=10)


@fit
def graph_pr_knn_checkpoint():
    return with_checkpoint(lambda directory: graph_pr("knn", ocr(), n_neighbors=10,
                                                      checkpoint=directory,
                                                      checkpoint_every=5))


@fit
def graph_pr_knn_posterior():
    return graph_pr("knn", ocr(), n_neighbors=10, decoding="posterior", unlabeled_weight=0.5)


@fit
def graph_pr_trigram():
    return graph_pr("trigram", conll(), word_key="word.lower", n_neighbors=20)


@fit
def graph_pr_trigram_order2():
    return graph_pr("trigram", synthetic(), word_key="word", n_neighbors=20, order=2)


@fit
def graph_pr_knn_selection():
    return graph_pr("knn", ocr(), n_neighbors=10, lam=[0.3, 3.0], cv=3,
                    early_stopping=True)


@fit
def graph_propagation_trigram():
    data = conll()
    model = GraphPropagation(graph="trigram", n_neighbors=20, word_key="word.lower")
    model.fit(data["X"], data["y"], X_unlabeled=data["X_unlabeled"])
    return model, model.transduction_


@fit
def graph_propagation_knn():
    data = ocr()
    model = GraphPropagation(graph="knn", n_neighbors=10)
    model.fit(data["X"], data["y"], X_unlabeled=data["X_unlabeled"])
    return model, model.transduction_


# --- digests -----------------------------------------------------------------------------

def array_digest(value):
    """SHA-256 of an array's dtype, shape and bytes (object arrays: of their repr)."""
    digest = hashlib.sha256()
    if sp.issparse(value):
        digest.update(f"sparse {value.format} {value.shape}".encode())
        parts = [getattr(value, name) for name in ("data", "indices", "indptr", "row",
                                                    "col", "offsets") if hasattr(value, name)]
        for part in parts:
            digest.update(array_digest(np.asarray(part)).encode())
        return digest.hexdigest()
    digest.update(f"{value.dtype.str} {value.shape}".encode())
    if value.dtype.hasobject:
        digest.update(repr(value.tolist()).encode())
    else:
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def model_digests(models, predicted):
    """``{attribute: digest}`` of the fitted arrays and of the predictions."""
    digests = {}
    for prefix, model in (models if isinstance(models, dict) else {"": models}).items():
        for name in sorted(vars(model)):
            if not name.endswith("_") or name.startswith("_"):
                continue
            value = getattr(model, name)
            if isinstance(value, np.ndarray) or sp.issparse(value):
                digests[prefix + name] = array_digest(value)
    labels = [[None if label is None else str(label) for label in sequence]
              for sequence in predicted]
    digests["<predicted>"] = hashlib.sha256(json.dumps(labels).encode()).hexdigest()
    return digests


def total_digest(digests):
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


# --- main --------------------------------------------------------------------------------

def compare(results, other_path, subset):
    """Print, per fit, whether it equals the other file's; True when all do. With
    ``subset`` (``--only``), only the fits run are compared."""
    other = json.loads(Path(other_path).read_text())["fits"]
    all_same = True
    print(f"\ncompared with {other_path}:")
    for name in results if subset else list(results) + sorted(set(other) - set(results)):
        if name not in results or name not in other:
            print(f"  {name:32s} MISSING from {'this run' if name not in results else 'other'}")
            all_same = False
            continue
        mine, theirs = results[name]["attributes"], other[name]["attributes"]
        if results[name]["digest"] == other[name]["digest"]:
            print(f"  {name:32s} same")
            continue
        all_same = False
        differ = sorted(key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key))
        print(f"  {name:32s} DIFFERENT: {', '.join(differ)}")
    return all_same


def check_same_as(results):
    """Fits that must equal another fit; True when all that ran do."""
    ok = True
    for name, reference in SAME_AS:
        if name in results and reference in results:
            same = results[name]["digest"] == results[reference]["digest"]
            print(f"{name} == {reference}: {'yes' if same else 'NO'}")
            ok &= same
    return ok


def main(argv=None):
    global DATA_DIR
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the digests as JSON to this file")
    parser.add_argument("--compare", metavar="OTHER.json",
                        help="compare with another run's JSON; exit 1 on any difference")
    parser.add_argument("--only", help="comma-separated names of the fits to run")
    parser.add_argument("--list", action="store_true", help="print the fits' names and exit")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"folder of the shared corpora (default {DEFAULT_DATA})")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(FITS))
        return 0
    DATA_DIR = args.data
    names = list(FITS) if args.only is None else args.only.split(",")
    unknown = [name for name in names if name not in FITS]
    if unknown:
        parser.error(f"unknown fits: {', '.join(unknown)} (see --list)")

    print(f"sklearn_ssl_crf from {Path(sklearn_ssl_crf.__file__).parent}")
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = {}
    start = time.perf_counter()
    for name in names:
        began = time.perf_counter()
        model, predicted = FITS[name]()
        seconds = time.perf_counter() - began
        digests = model_digests(model, predicted)
        results[name] = {"digest": total_digest(digests), "seconds": round(seconds, 2),
                         "attributes": digests}
        print(f"{name:32s} {results[name]['digest'][:16]}  {seconds:6.1f} s", flush=True)
    total = time.perf_counter() - start
    print(f"{'total':32s} {'':16s}  {total:6.1f} s")
    ok = check_same_as(results)

    if args.out:
        Path(args.out).write_text(json.dumps(
            {"package": str(Path(sklearn_ssl_crf.__file__).parent),
             "version": sklearn_ssl_crf.__version__, "python": sys.version.split()[0],
             "numpy": np.__version__, "total_seconds": round(total, 2), "fits": results},
            indent=1) + "\n")
    if args.compare:
        ok &= compare(results, args.compare, subset=args.only is not None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""
=========================================
Natural-gradient training, epoch by epoch
=========================================

`~sklearn_ssl_crf.NaturalGradientCRF` trains a CRF by stochastic gradient steps, one
sentence (or one small batch) at a time. Its ``update`` parameter chooses how each
sentence's gradient is transformed before the step: ``'sgd'`` leaves it as it is
(CRFsuite's l2sgd), ``'arctan'`` and ``'gd'`` are two of the natural-gradient updates of
"Training Conditional Random Fields with Natural Gradient Descent". This example trains
each of them for a few epochs on 2,000 CoNLL-2000 chunking sentences, records the test
token accuracy and span F1 after every epoch, and compares them with the batch-trained
`~sklearn_ssl_crf.CRF` (L-BFGS, run to convergence) on the same sentences.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/conll2000`` if the
environment variable is set, else ``../shared/data/conll2000`` beside the repository.
Where the corpus is absent, the example falls back to synthetic BIO sequences from
`~sklearn_ssl_crf.datasets.make_sequences` (and says so in its output). It runs in about a
minute on two cores. ``benchmarks/bench_ngd.py`` runs the full comparison (the whole
training set, 30 epochs, several seeds and every update).
"""

import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_ssl_crf import CRF, NaturalGradientCRF, SequenceVectorizer, WindowFeatures
from sklearn_ssl_crf.datasets import load_conll2000, make_sequences
from sklearn_ssl_crf.metrics import flat_accuracy_score, span_f1_score


def shared_data(corpus):
    """Folder of a shared corpus: under $SKLEARN_SSL_CRF_DATA, else ../shared/data beside
    the repository (sphinx-gallery runs examples in their folder, without ``__file__``)."""
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    root = os.environ.get("SKLEARN_SSL_CRF_DATA", here.parent.parent / "shared" / "data")
    return Path(root) / corpus


# %%
# The data
# --------
# A random 2,000 training sentences (seed 0) and the whole test set. Tokens are ``(word,
# part-of-speech tag)`` pairs; `~sklearn_ssl_crf.WindowFeatures` turns them into feature
# dicts and `~sklearn_ssl_crf.SequenceVectorizer` into one sparse matrix, vectorised once
# for all the models.

N_TRAIN, EPOCHS = 2000, 12

folder = shared_data("conll2000")
if folder.is_dir():
    splits = load_conll2000(folder)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    corpus = "CoNLL-2000 chunking"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=4000, n_types=3, random_state=0)
    X_train, y_train, X_test, y_test = X[:3000], y[:3000], X[3000:], y[3000:]
    corpus = "synthetic sequences"

chosen = np.random.default_rng(0).permutation(len(X_train))[:N_TRAIN]
X_train, y_train = [X_train[i] for i in chosen], [y_train[i] for i in chosen]
featurizer = make_pipeline(WindowFeatures(), SequenceVectorizer())
F_train = featurizer.fit_transform(X_train)
F_test = featurizer.transform(X_test)
print(f"{corpus}: {len(X_train):,} training sentences, {len(X_test):,} test sentences")

# %%
# The batch-trained CRF
# ---------------------
# ``c2`` follows the package's rule of thumb, labelled sentences / 10,000; every model
# below uses the same value.

c2 = N_TRAIN / 10_000
started = time.perf_counter()
crf = CRF(c2=c2).fit(F_train, y_train)
predicted = crf.predict(F_test)
lbfgs = {"accuracy": flat_accuracy_score(y_test, predicted),
         "span_f1": span_f1_score(y_test, predicted)}
print(f"CRF (L-BFGS): {crf.n_iter_} iterations in {time.perf_counter() - started:.0f} s, "
      f"test accuracy {100 * lbfgs['accuracy']:.2f}%, span F1 {100 * lbfgs['span_f1']:.2f}")

# %%
# Natural-gradient training
# -------------------------
# Given a development set (``X_dev``, ``y_dev``), `~sklearn_ssl_crf.NaturalGradientCRF.fit`
# scores the model on it after every epoch and records the scores in ``training_log_``.
# Here the test set plays that part: it is only observed, never used for training or
# model selection. ``period=0`` turns the stopping rule off so that every run lasts
# ``EPOCHS`` epochs; the initial learning rate is calibrated on a sample of the training
# sentences, as CRFsuite does. The last run takes batches of 16 sentences per step (the
# fast path).

runs = {"sgd": dict(update="sgd"), "arctan": dict(update="arctan"),
        "gd": dict(update="gd"), "arctan, batches of 16": dict(update="arctan", batch_size=16)}
curves = {}
for name, params in runs.items():
    started = time.perf_counter()
    model = NaturalGradientCRF(c2=c2, max_iterations=EPOCHS, period=0, random_state=0,
                               **params)
    model.fit(F_train, y_train, X_dev=F_test, y_dev=y_test)
    curves[name] = {metric: np.array([entry[f"dev_{metric}"] for entry in model.training_log_])
                    for metric in ("accuracy", "span_f1")}
    print(f"{name:>22}: eta0 {model.eta0_:g}, {time.perf_counter() - started:.0f} s; "
          "span F1 (%) per epoch " + " ".join(f"{100 * v:.2f}" for v in curves[name]["span_f1"]))

# %%
# The curves
# ----------
# Token accuracy and span F1 on the test set after each epoch; the dotted line is the
# L-BFGS CRF after convergence.

fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), sharex=True)
styles = {"sgd": "s-", "arctan": "o-", "gd": "^-", "arctan, batches of 16": "o--"}
epochs = np.arange(1, EPOCHS + 1)
for ax, metric, label in zip(axes, ("accuracy", "span_f1"),
                             ("test token accuracy (%)", "test span F1 (%)")):
    for name, curve in curves.items():
        ax.plot(epochs, 100 * curve[metric], styles[name], markersize=4,
                label=f"NaturalGradientCRF, {name}")
    ax.axhline(100 * lbfgs[metric], color="black", linestyle=":",
               label="CRF (L-BFGS, converged)")
    low = min(100 * curve[metric][1] for curve in curves.values())  # zoom past epoch 1
    ax.set_ylim(low - 0.5, 100 * max(lbfgs[metric], *(c[metric].max() for c in
                                                      curves.values())) + 0.3)
    ax.set_xlabel("epoch")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
axes[1].legend(fontsize=8.5, loc="lower right")
fig.suptitle(f"{corpus}: {N_TRAIN:,} training sentences, c2 = {c2:g}, seed 0", fontsize=11)
fig.tight_layout()
plt.show()

"""
==================================================
Learning curve: supervised against semi-supervised
==================================================

Span F1 against the number of labelled sentences for the supervised
`~sklearn_ssl_crf.CRF` and two semi-supervised settings of
`~sklearn_ssl_crf.EntropyRegularizedCRF`, which also see a fixed set of 500 unlabelled
sentences: the label-proportion term alone, and entropy regularisation with the
label-proportion term. The task is gene-mention tagging on BC2GM, where mentions are rare
and a tagger trained on few sentences finds too few of them.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/bc2gm`` if the
environment variable is set, else ``../shared/data/bc2gm`` beside the repository. Where
the corpus is absent, the example falls back to synthetic BIO sequences from
`~sklearn_ssl_crf.datasets.make_sequences` (and says so in its output). It runs in about a
minute on two cores.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_ssl_crf import CRFCV, EntropyRegularizedCRF, SequenceVectorizer, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm, make_sequences
from sklearn_ssl_crf.metrics import span_f1_score


def shared_data(corpus):
    """Folder of a shared corpus: under $SKLEARN_SSL_CRF_DATA, else ../shared/data beside
    the repository (sphinx-gallery runs examples in their folder, without ``__file__``)."""
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    root = os.environ.get("SKLEARN_SSL_CRF_DATA", here.parent.parent / "shared" / "data")
    return Path(root) / corpus


# %%
# The data
# --------
# One random order of the training sentences (seed 0): the labelled sets are its first
# 50, 100, ..., 800 sentences (each contains the smaller ones), and the unlabelled set is
# its last 500 sentences, labels dropped, the same for every labelled set. Every model
# is scored on the whole test set.
#
# The sentences are featurised once: `~sklearn_ssl_crf.WindowFeatures` turns each token
# into sklearn-crfsuite style feature dicts (the word, its suffixes and shape, the same for
# its neighbours), and `~sklearn_ssl_crf.SequenceVectorizer` turns those into one sparse
# matrix per corpus, its vocabulary learned from the training sentences used here (a
# larger vocabulary only adds weights that stay zero). Every estimator accepts the
# resulting `~sklearn_ssl_crf.SequenceMatrix`, which can be indexed by sentence, in place
# of the dicts; this saves vectorising the test set again for every model.

LABELLED_SIZES = [50, 100, 200, 400, 800]
N_UNLABELLED = 500

folder = shared_data("bc2gm")
if folder.is_dir():
    splits = load_bc2gm(folder)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    corpus = "BC2GM gene mentions"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=6000, random_state=0)
    X_train, y_train, X_test, y_test = X[:4000], y[:4000], X[4000:], y[4000:]
    corpus = "synthetic sequences"

order = np.random.default_rng(0).permutation(len(X_train))
labelled_pool = order[:max(LABELLED_SIZES)]
X_unlabelled = [X_train[i] for i in order[-N_UNLABELLED:]]  # their labels are not used
X_labelled_pool = [X_train[i] for i in labelled_pool]
y_labelled_pool = [y_train[i] for i in labelled_pool]

featurizer = make_pipeline(WindowFeatures(), SequenceVectorizer())
featurizer.fit(X_labelled_pool + X_unlabelled)
F_labelled_pool = featurizer.transform(X_labelled_pool)
F_unlabelled = featurizer.transform(X_unlabelled)
F_test = featurizer.transform(X_test)
print(f"{corpus}: {N_UNLABELLED:,} unlabelled training sentences, "
      f"{len(X_test):,} test sentences")

# %%
# The models
# ----------
# Both models with their defaults: `~sklearn_ssl_crf.CRFCV` chooses ``c1`` and ``c2`` by
# cross-validation over the labelled sentences; `~sklearn_ssl_crf.EntropyRegularizedCRF`
# chooses them the same way and decides there whether its unlabelled term (entropy with
# label proportions) pays. Every L-BFGS run is capped at 100 iterations to keep the example
# short.


def make_models(n_labelled):
    """Both with their defaults: each chooses its settings on the labelled sentences."""
    return {
        "CRFCV (labelled only)": CRFCV(random_state=0, max_iterations=100),
        "EntropyRegularizedCRF()": EntropyRegularizedCRF(random_state=0, max_iterations=100),
    }


scores = {name: [] for name in make_models(1)}
for n_labelled in LABELLED_SIZES:
    F_labelled, y_labelled = F_labelled_pool[:n_labelled], y_labelled_pool[:n_labelled]
    for name, model in make_models(n_labelled).items():
        if isinstance(model, EntropyRegularizedCRF):
            model.fit(F_labelled, y_labelled, X_unlabeled=F_unlabelled)
        else:
            model.fit(F_labelled, y_labelled)
        scores[name].append(span_f1_score(y_test, model.predict(F_test)))
    print(f"{n_labelled:4d} labelled: " + ", ".join(
        f"{name.split(' (')[0]} {100 * values[-1]:.2f}" for name, values in scores.items()))

# %%
# The learning curve
# ------------------
# The semi-supervised curves lie above the supervised one where labelled sentences are
# few; the printed numbers above are the test span F1 (%) of each point.

fig, ax = plt.subplots(figsize=(7.5, 4.8))
styles = ["s--", "^-", "o-"]
for (name, values), style in zip(scores.items(), styles):
    ax.plot(LABELLED_SIZES, 100 * np.array(values), style, label=name)
ax.set_xscale("log")
ax.set_xticks(LABELLED_SIZES, [str(n) for n in LABELLED_SIZES])
ax.minorticks_off()
ax.set_xlabel("labelled sentences (log scale)")
ax.set_ylabel("test span F1 (%)")
ax.set_title(f"{corpus}: {N_UNLABELLED:,} unlabelled sentences for the semi-supervised "
             "model,\nboth with their defaults", fontsize=10)
ax.grid(alpha=0.3)
ax.legend(fontsize=8.5)
fig.tight_layout()
plt.show()

"""
=====================================
Which features chose each token's tag
=====================================

A CRF's score of a labelling is a sum of weights: at each token, the value of each of the
token's attributes times its weight for the label, plus the weight of the label following
the previous one. `~sklearn_ssl_crf.CRF.predict_contributions` returns those summands for
the labels `~sklearn_ssl_crf.CRF.predict` gives, so one can read why a token got its tag:
which attributes pushed it, and how much the neighbouring tag did. This example trains a
chunker on 500 CoNLL-2000 sentences and draws, for one test sentence, the attributes with
the largest contributions to each token's predicted chunk tag, and the unary and
transition parts of every token's score.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/conll2000`` if the
environment variable is set, else ``../shared/data/conll2000`` beside the repository.
Where the corpus is absent, the example falls back to synthetic BIO sequences from
`~sklearn_ssl_crf.datasets.make_sequences` (and says so in its output). It runs in a few
seconds.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_ssl_crf import CRF, WindowFeatures
from sklearn_ssl_crf.datasets import load_conll2000, make_sequences


def shared_data(corpus):
    """Folder of a shared corpus: under $SKLEARN_SSL_CRF_DATA, else ../shared/data beside
    the repository (sphinx-gallery runs examples in their folder, without ``__file__``)."""
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    root = os.environ.get("SKLEARN_SSL_CRF_DATA", here.parent.parent / "shared" / "data")
    return Path(root) / corpus


# %%
# A chunker
# ---------
# Tokens are ``(word, part-of-speech tag)`` pairs, turned into sklearn-crfsuite style
# feature dicts by `~sklearn_ssl_crf.WindowFeatures` (the word, its suffixes and shape, the
# tag, the same for the neighbours). An L1 prior (``c1``) leaves most weights at exactly 0,
# so each token's score comes from fewer attributes.

folder = shared_data("conll2000")
if folder.is_dir():
    splits = load_conll2000(folder)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    corpus = "CoNLL-2000 chunking"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=700, random_state=0)
    X_train, y_train, X_test, y_test = X[:500], y[:500], X[500:], y[500:]
    corpus = "synthetic sequences"

features = WindowFeatures()
crf = CRF(c1=0.1, c2=0.01, max_iterations=100)
crf.fit(features.transform(X_train[:500]), y_train[:500])
print(f"{corpus}: {len(crf.attributes_):,} attributes, {len(crf.classes_)} labels, "
      f"{len(crf.state_features_):,} non-zero state weights")

# %%
# One sentence, explained
# -----------------------
# The first test sentence of 9 to 13 tokens. For each token, ``predict_contributions``
# gives the predicted label, its unary potential ``'state'`` (the sum of every attribute's
# contribution), its ``'transition'`` term and the ``'attributes'`` that made up the
# former, the largest first.

sentence = next(i for i, s in enumerate(X_test) if 9 <= len(s) <= 13)
tokens = X_test[sentence]
words = [token[0] if isinstance(token, tuple) else token for token in tokens]
F = features.transform([tokens])
explained = crf.predict_contributions(F)[0]
for word, gold, token in zip(words, y_test[sentence], explained):
    best = ", ".join(f"{name} {value:+.2f}" for name, value in token["attributes"][:2])
    print(f"{word:>12} {token['label']:>6} (gold {gold:>6})  state {token['state']:+6.2f}  "
          f"transition {token['transition']:+6.2f}  [{best}]")
score = sum(token["state"] + token["transition"] for token in explained)
print(f"score of the predicted labelling: {score:.4f}")

# %%
# Where the attributes alone would choose another label
# -----------------------------------------------------
# ``as_arrays=True`` gives every attribute's contribution to every label (rows: the
# attributes present at each token; columns: ``classes_``), and every label's transition
# term given the predicted previous labels. Summed per token, the rows give each label's
# unary potential: where its best label is not the predicted one, the transitions (and the
# label constraints, which forbid ``I-X`` after anything but ``B-X`` or ``I-X``) overruled
# the token's own attributes. The difference between the two labels' columns says which
# attributes preferred which.

arrays = crf.predict_contributions(F, as_arrays=True)[0]
unary = np.zeros((len(tokens), len(crf.classes_)))
np.add.at(unary, arrays.tokens, arrays.state)
predicted, local = arrays.labels, unary.argmax(axis=1)
disagree = np.flatnonzero(local != predicted)
if disagree.size == 0:
    print("every token's predicted label is also its best by its attributes alone")
else:
    gaps = unary[disagree, local[disagree]] - unary[disagree, predicted[disagree]]
    t = int(disagree[gaps.argmax()])
    chosen, other = predicted[t], local[t]
    print(f"'{words[t]}': unary potential {unary[t, other]:+.2f} for "
          f"{crf.classes_[other]}, {unary[t, chosen]:+.2f} for {crf.classes_[chosen]} "
          f"(predicted); transition from the previous label "
          f"{arrays.transition[t, other]:+.2f} and {arrays.transition[t, chosen]:+.2f}")
    if t + 1 < len(tokens):
        following = predicted[t + 1]
        allowed = (np.ones_like(crf.transition_weights_, dtype=bool)
                   if crf.constraints_ is None else crf.constraints_.transitions)
        for label in (other, chosen):
            print(f"    {crf.classes_[label]} -> {crf.classes_[following]} (next token): "
                  f"weight {crf.transition_weights_[label, following]:+.2f}"
                  + ("" if allowed[label, following] else ", forbidden by the constraints"))
    rows = np.flatnonzero(arrays.tokens == t)
    difference = arrays.state[rows, chosen] - arrays.state[rows, other]
    print(f"    attributes, contribution to {crf.classes_[chosen]} minus to "
          f"{crf.classes_[other]}:")
    for k in np.argsort(-np.abs(difference), kind="stable")[:5]:
        print(f"    {crf.attributes_[arrays.attributes[rows[k]]]:>24} {difference[k]:+.2f}")

# %%
# The picture
# -----------
# Top: each token's score split into its unary potential and its transition term. Bottom:
# the three attributes with the largest contributions at each token (their union over the
# sentence, one row each), coloured by their contribution to that token's predicted label;
# an empty cell is an attribute the token does not have or whose weight for its label is 0.

TOP = 3
rows = []
for token in explained:
    for name, _ in token["attributes"][:TOP]:
        if name not in rows:
            rows.append(name)
heat = np.zeros((len(rows), len(tokens)))
for column, token in enumerate(explained):
    values = dict(token["attributes"])
    for row, name in enumerate(rows):
        heat[row, column] = values.get(name, 0.0)

state = np.array([token["state"] for token in explained])
transition = np.array([token["transition"] for token in explained])
positions = np.arange(len(tokens))
ticks = [f"{word}\n{token['label']}" for word, token in zip(words, explained)]

fig, (top, bottom) = plt.subplots(
    2, 1, figsize=(1.0 + 0.75 * len(tokens), 3.0 + 0.22 * len(rows)), sharex=True,
    gridspec_kw={"height_ratios": [1.0, max(2.0, 0.12 * len(rows))]})
top.bar(positions, state, 0.7, label="unary potential (attributes)", color="tab:blue")
top.bar(positions, transition, 0.7, bottom=np.where(transition * state > 0, state, 0),
        label="transition", color="tab:orange")
top.axhline(0, color="black", linewidth=0.8)
top.set_ylabel("score")
top.margins(y=0.35)
top.legend(fontsize=8, ncol=2, loc="upper left")
top.set_title(f"{corpus}: contributions to each token's predicted label")

limit = np.abs(heat).max()
image = bottom.imshow(heat, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit)
bottom.set_yticks(np.arange(len(rows)), rows, fontsize=8)
bottom.set_xticks(positions, ticks, fontsize=8)
fig.colorbar(image, ax=[top, bottom], label="attribute value x state weight", shrink=0.6)
plt.show()

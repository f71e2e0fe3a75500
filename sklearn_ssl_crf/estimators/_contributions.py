"""Per-token contributions to the score of a labelling: which attributes and which label
transitions pushed each label (`ContributionsMixin.predict_contributions`).

A labelling's score is a sum of weights. A token's unary potential for a label, ``(X @ W)[t,
label]``, is the sum over the token's attributes of the attribute's value times its state
weight for the label; the transition term of a token is the weight of its label pair
``(y_{t-1}, y_t)`` (at order 2, plus the trigram weight of ``(y_{t-2}, y_{t-1}, y_t)`` and
the skip-bigram weight of ``(y_{t-2}, y_t)``; at a sequence's second token the trigram weight
of its first two labels). These summands are the contributions: they add up to the unary
potentials and, over the labelling, to its score (the score Viterbi maximises), up to the
order in which floating-point numbers are summed.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import Bunch

__all__ = ["ContributionsMixin", "attribute_contributions", "transition_parts"]


def attribute_contributions(matrix, state_weights, codes=None):
    """Every stored entry of a token x attribute matrix, with its value times the state
    weights.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_attributes)
    state_weights : ndarray of shape (n_attributes, n_labels)
    codes : ndarray of int of shape (n_tokens,), default=None
        One label per token: the contributions to that label's potential only.

    Returns
    -------
    rows, columns : ndarray of int of shape (n_entries,)
        Token and attribute of each entry, in the matrix's storage order.
    contributions : ndarray of shape (n_entries, n_labels), or (n_entries,) with codes
        ``value * state_weights[attribute]``; summed over a token's entries, its row of
        ``matrix @ state_weights``.
    """
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    columns = matrix.indices.astype(np.intp, copy=False)
    values = matrix.data.astype(np.float64, copy=False)
    if codes is None:
        return rows, columns, values[:, None] * state_weights[columns]
    return rows, columns, values * state_weights[columns, codes[rows]]


def transition_parts(codes, positions, bigram, trigram=None, skip=None):
    """The transition weights that end at each token, for every label of the token, given
    the previous labels of a labelling.

    Parameters
    ----------
    codes : ndarray of int of shape (n_tokens,)
        The labelling, sequences laid end to end.
    positions : ndarray of int of shape (n_tokens,)
        Each token's position in its sequence.
    bigram : ndarray of shape (S, S)
    trigram : ndarray of shape (S + 1, S, S), default=None
        Order 2 (``trigram[S]``: the first two labels); None: order 1.
    skip : ndarray of shape (S, S), default=None
        Order 2.

    Returns
    -------
    parts : dict of str to ndarray of shape (n_tokens, S)
        ``'bigram'`` (``bigram[y_{t-1}, :]``), and at order 2 ``'trigram'``
        (``trigram[y_{t-2}, y_{t-1}, :]``, ``y_{-1}`` being ``S``) and ``'skip'``
        (``skip[y_{t-2}, :]``); 0 where the labels they need do not exist. Their sum is
        the row of the kernels' transition potentials (`transition_potentials`, without
        ``allowed``) that the token's label picks.
    """
    n_labels = bigram.shape[0]
    later = np.flatnonzero(positions >= 1)
    previous = codes[later - 1]
    parts = {"bigram": np.zeros((codes.size, n_labels))}
    parts["bigram"][later] = bigram[previous]
    if trigram is None:
        return parts
    third = positions[later] >= 2
    before = np.where(third, codes[np.maximum(later - 2, 0)], n_labels)
    parts["trigram"] = np.zeros((codes.size, n_labels))
    parts["trigram"][later] = trigram[before, previous]
    parts["skip"] = np.zeros((codes.size, n_labels))
    parts["skip"][later[third]] = skip[before[third]]
    return parts


class ContributionsMixin:
    """`predict_contributions` for `BaseCRF`, which supplies the featurisation
    (``_transform``), the decoder (``_infer``, ``_decode``) and the fitted weights."""

    def predict_contributions(self, X, y=None, *, top=None, as_arrays=False,
                              known_labels=None):
        """Contribution of every attribute and transition to the labels of each token.

        The score of a labelling is a sum over its tokens: the label's unary potential
        (``X @ W``, a sum of attribute value x state weight) and the transition weights
        that end at the token. This method returns those summands for the labels `predict`
        gives (or the labels ``y``): which attributes pushed each label, and by how much.
        For each token they add up to its unary potential and transition term, and over a
        sequence to the score of its labelling, which for the predicted labels is the best
        score Viterbi found (among the labellings that ``constraints_`` and
        ``known_labels`` allow; `GraphPRCRF` with ``decoding='posterior'`` predicts by
        marginals instead, and its labels are explained all the same).

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
            The sequences to explain, as for `predict`.
        y : list of label sequences, default=None
            The labels to explain (the gold ones, say), one list of ``len(X[i])`` labels of
            ``classes_`` per sequence. None: the predicted labels.
        top : int, default=None
            List at most this many attributes per token (the largest contributions in
            absolute value); the ``'state'`` total still counts them all. None: all.
        as_arrays : bool, default=False
            Return arrays over every label instead of a dict per token (see Returns):
            no Python object per token, but a float per label for every attribute of
            every token (110 MB for CoNLL-2000's test set with 19 labels).
        known_labels : list, default=None
            With ``y=None``: labels fixed in advance, None where unknown (see `predict`).

        Returns
        -------
        contributions : list of lists of dict, or list of Bunch
            ``contributions[i][t]`` describes token ``t`` of sequence ``i`` with keys

            - ``'label'``: the label explained;
            - ``'state'``: its unary potential, the sum of every attribute's contribution;
            - ``'transition'``: the transition weights that end at the token (0 at the
              first token);
            - ``'attributes'``: ``(attribute, contribution)`` pairs, value x state weight
              of the label, largest absolute contribution first, zeros left out;
            - ``'transition_features'``: ``(key, weight)`` pairs summing to
              ``'transition'``, keys as in ``transition_features_``: ``(y_{t-1}, y_t)``,
              and at order 2 ``(y_{t-2}, y_{t-1}, y_t)`` (``y_{t-2}`` None at the second
              token) and ``(y_{t-2}, None, y_t)``.

            With ``as_arrays``, one `~sklearn.utils.Bunch` per sequence, its label axes in
            the order of ``classes_``: ``labels`` (n_tokens,), indices of the labels
            explained; ``tokens`` and ``attributes`` (n_entries,), the position and the
            column of ``attributes_`` of each attribute present in the sequence;
            ``state`` (n_entries, n_classes), each entry's value x state weight for every
            label; ``transition`` (n_tokens, n_classes), the transition weights that would
            end at each token for every label, the previous labels being those explained.

        See Also
        --------
        predict : The labels explained by default.
        state_features_ : The state weights, by (attribute, label).
        transition_features_ : The transition weights, by label pair (and triple).

        Notes
        -----
        Named as scikit-learn's other ``predict_*`` methods (`predict_marginals`,
        `predict_entropy`): it takes ``X`` and ``known_labels`` as `predict` does and
        explains its output. "Contributions" is the word of LightGBM's and XGBoost's
        ``pred_contrib(s)``, which split a prediction's score over the features in the same
        additive way; sklearn-crfsuite users know the weights themselves from eli5's
        ``explain_weights``.

        Contributions are weights; label constraints (``constraints_``), known labels and,
        at order 2, the triples ``allowed_transitions_`` rules out are hard rules on which
        labellings are possible, not weights, and add nothing. Labels ``y`` that break them
        get their contributions all the same.

        Examples
        --------
        >>> from sklearn_ssl_crf import CRF
        >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
        >>> y = [["DET", "NOUN"], ["DET", "NOUN"]]
        >>> crf = CRF(c2=0.1).fit(X, y)
        >>> tokens = crf.predict_contributions([[{"w": "the"}, {"w": "cat"}]])[0]
        >>> [token["label"] for token in tokens]
        ['DET', 'NOUN']
        >>> [(name, round(value, 2)) for name, value in tokens[1]["attributes"]]
        [('w:cat', 0.42)]
        >>> [(key, round(weight, 2)) for key, weight in tokens[1]["transition_features"]]
        [(('DET', 'NOUN'), 1.38)]
        """
        top = _check_top(top, as_arrays)
        sequences = self._transform(X)
        if y is None:
            codes = self._predicted_codes(sequences, known_labels)
        elif known_labels is not None:
            raise ValueError("known_labels fixes labels of the prediction; with y given, "
                             "the labels y are explained as they are")
        else:
            codes = _label_codes(y, sequences.lengths, self.classes_)
        positions = np.arange(sequences.n_tokens) - np.repeat(sequences.offsets[:-1],
                                                              sequences.lengths)
        parts = transition_parts(codes, positions, self.transition_weights_,
                                 self.trigram_weights_, self.skip_weights_)
        if as_arrays:
            return self._contribution_arrays(sequences, codes, positions, parts)
        return self._contribution_dicts(sequences, codes, positions, parts, top)

    def _predicted_codes(self, sequences, known_labels):
        """The label indices `predict` gives, laid end to end."""
        if sequences.n_tokens == 0:
            return np.zeros(0, dtype=np.intp)
        return self._infer(self._decode, sequences, known_labels)

    def _contribution_arrays(self, sequences, codes, positions, parts):
        if len(sequences) == 0:
            return []  # np.split would give one empty piece
        rows, columns, state = attribute_contributions(sequences.matrix, self.state_weights_)
        transition = sum(parts.values())
        entry_offsets = sequences.matrix.indptr[sequences.offsets]
        token_bounds, entry_bounds = sequences.offsets[1:-1], entry_offsets[1:-1]
        return [
            Bunch(labels=labels, tokens=tokens, attributes=attributes, state=values,
                  transition=transitions)
            for labels, tokens, attributes, values, transitions in zip(
                np.split(codes, token_bounds),
                np.split(positions[rows], entry_bounds),
                np.split(columns, entry_bounds),
                np.split(state, entry_bounds),
                np.split(transition, token_bounds),
            )
        ]

    def _contribution_dicts(self, sequences, codes, positions, parts, top):
        rows, columns, values = attribute_contributions(sequences.matrix,
                                                        self.state_weights_, codes)
        state = np.bincount(rows, weights=values, minlength=sequences.n_tokens)
        listed = _ranked(rows, columns, values, top)
        rows, columns, values = (array[listed] for array in (rows, columns, values))
        names = np.asarray(self.attributes_, dtype=object)
        pairs = list(zip(names[columns].tolist(), values.tolist()))
        bounds = np.searchsorted(rows, np.arange(sequences.n_tokens + 1)).tolist()
        tokens = np.arange(sequences.n_tokens)
        path_parts = {name: part[tokens, codes] for name, part in parts.items()}
        transition = sum(path_parts.values())
        features = _transition_features(np.asarray(self.classes_, dtype=object), codes,
                                        positions, path_parts)
        labels = np.asarray(self.classes_, dtype=object)[codes].tolist()
        explained = [
            {"label": label, "state": total, "transition": term,
             "attributes": pairs[start:stop], "transition_features": keys}
            for label, total, term, start, stop, keys in zip(
                labels, state.tolist(), transition.tolist(), bounds[:-1], bounds[1:],
                features)
        ]
        offsets = sequences.offsets.tolist()
        return [explained[start:stop] for start, stop in zip(offsets[:-1], offsets[1:])]


def _ranked(rows, columns, values, top):
    """Indices of the entries to list, by token, then by decreasing absolute value (ties:
    by attribute column); zeros left out, at most ``top`` per token."""
    nonzero = np.flatnonzero(values)
    order = nonzero[np.lexsort((columns[nonzero], -np.abs(values[nonzero]), rows[nonzero]))]
    if top is None:
        return order
    sorted_rows = rows[order]
    rank = np.arange(order.size) - np.searchsorted(sorted_rows, sorted_rows)
    return order[rank < top]


def _transition_features(classes, codes, positions, path_parts):
    """Per token, the ``(key, weight)`` pairs of the transition weights its label picks,
    keys as in ``transition_features_``."""
    labels = classes[codes].tolist()
    weights = {name: part.tolist() for name, part in path_parts.items()}
    second_order = "trigram" in weights
    features = []
    for t, position in enumerate(positions.tolist()):
        if position == 0:
            features.append([])
            continue
        label, previous = labels[t], labels[t - 1]
        pairs = [((previous, label), weights["bigram"][t])]
        if second_order:
            before = labels[t - 2] if position >= 2 else None
            pairs.append(((before, previous, label), weights["trigram"][t]))
            if position >= 2:
                pairs.append(((before, None, label), weights["skip"][t]))
        features.append(pairs)
    return features


def _check_top(top, as_arrays):
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, Integral):
        raise TypeError(f"top must be a positive int or None, got {type(top).__name__}")
    if top < 1:
        raise ValueError(f"top must be a positive int or None, got {top}")
    if as_arrays:
        raise ValueError("top limits the attributes listed per token; as_arrays=True "
                         "returns every attribute")
    return int(top)


def _label_codes(y, lengths, classes):
    """The label indices of label sequences ``y``, laid end to end, checked against the
    sequence lengths and the model's labels."""
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
        raise TypeError(f"y must be a list of label sequences, got {type(y).__name__}")
    if len(y) != len(lengths):
        raise ValueError(f"X has {len(lengths)} sequences but y has {len(y)} label "
                         "sequences")
    index = {label: k for k, label in enumerate(classes)}
    codes = []
    for i, (labels, length) in enumerate(zip(y, lengths)):
        if labels is None or isinstance(labels, (str, bytes)) or not hasattr(labels,
                                                                             "__len__"):
            raise TypeError(f"y[{i}] must be a list of labels, got {type(labels).__name__}")
        if len(labels) != length:
            raise ValueError(f"sequence {i} has {length} tokens but y[{i}] has "
                             f"{len(labels)} labels")
        for t, label in enumerate(labels):
            code = index.get(label) if _hashable(label) else None
            if code is None:
                raise ValueError(f"y[{i}][{t}] is {label!r}, not one of the model's labels "
                                 f"{list(classes)}")
            codes.append(code)
    return np.asarray(codes, dtype=np.intp)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True

"""Scorers with the signature ``scorer(estimator, X, y)`` that
`~sklearn.model_selection.GridSearchCV` and `~sklearn.model_selection.cross_val_score`
expect; they ignore unlabelled sequences (``y[i] is None``). `check_scoring` is the one
scoring rule of the estimators, the command line and the metrics.
"""

import numpy as np

from ._spans import has_spans, span_f1_score
from ._token import flat_accuracy_score, flat_f1_score, sequence_accuracy_score


def no_labelled_sequence_error(what):
    """The ValueError for labels of which every sequence is None: ``what`` is what cannot
    be done ("y has no labelled sequence to score"). Most often a cross-validation fold of
    ``X_l + X_u`` with ``y_l + [None] * n``: unshuffled folds (scikit-learn's default
    `~sklearn.model_selection.KFold`) put the labelled sequences, which come first, in the
    first folds only, and every other fold's training part or test part has none."""
    return ValueError(
        f"{what} (every entry of y is None). With the unlabelled sequences inside X after "
        "the labelled ones, cross-validation needs shuffled folds, for example "
        "cv=KFold(5, shuffle=True, random_state=0), so that every fold has labelled "
        "sequences to train on and to score")


def _labelled_sequences(X, y):
    """``X`` and ``y`` without the unlabelled sequences (those whose ``y[i]`` is None).

    ``X`` may be a list or tuple, or anything indexable by an integer array, such as a
    `~sklearn_ssl_crf.SequenceMatrix`.
    """
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} sequences but y has {len(y)}")
    labelled = [i for i, labels in enumerate(y) if labels is not None]
    if len(labelled) == len(y):
        return X, y
    if not labelled:
        raise no_labelled_sequence_error("y has no labelled sequence to score")
    if isinstance(X, (list, tuple)):
        X = [X[i] for i in labelled]
    else:
        X = X[np.asarray(labelled, dtype=np.intp)]
    return X, [y[i] for i in labelled]


class SequenceScorer:
    """``scorer(estimator, X, y)``: a metric of ``y`` and ``estimator.predict(X)`` on the
    labelled sequences only."""

    def __init__(self, score_func, kwargs):
        self._score_func = score_func
        self._kwargs = kwargs

    def __call__(self, estimator, X, y):
        X, y = _labelled_sequences(X, y)
        return self._score_func(y, estimator.predict(X), **self._kwargs)

    def __repr__(self):
        arguments = "".join(f", {key}={value!r}" for key, value in self._kwargs.items())
        return f"make_sequence_scorer({self._score_func.__name__}{arguments})"


def make_sequence_scorer(score_func, **kwargs):
    """Make a scorer ``scorer(estimator, X, y)`` from a sequence metric.

    The scorer drops the sequences whose ``y[i]`` is None (unlabelled data, as the
    semi-supervised estimators accept it) together with ``X[i]``, predicts the rest and returns
    ``score_func(y, estimator.predict(X), **kwargs)``. Greater must be better.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_pred, **kwargs)``, such as the metrics of this module.
    **kwargs
        Fixed keyword arguments for ``score_func``.

    Returns
    -------
    scorer : callable
        Usable as ``scoring`` in `~sklearn.model_selection.GridSearchCV` and
        `~sklearn.model_selection.cross_val_score`.

    See Also
    --------
    check_scoring : The scorer a ``scoring`` parameter names.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import make_sequence_scorer, span_f1_score
    >>> class Tagger:
    ...     def predict(self, X):
    ...         return [["B-NP"] * len(x) for x in X]
    >>> scorer = make_sequence_scorer(span_f1_score)
    >>> scorer(Tagger(), [["the"], ["a", "dog"]], [["B-NP"], None])
    1.0
    """
    return SequenceScorer(score_func, kwargs)


#: Scorer of token accuracy (`flat_accuracy_score`) on the labelled sequences.
flat_accuracy_scorer = make_sequence_scorer(flat_accuracy_score)


#: Scorer of token F1 (`flat_f1_score`), weighted average over labels as in sklearn-crfsuite's
#: tutorials; ``zero_division=0`` is f1_score's default value without the warning for labels
#: never predicted (common in small cross-validation folds).
flat_f1_scorer = make_sequence_scorer(flat_f1_score, average="weighted", zero_division=0)


#: Scorer of the fraction of sequences labelled entirely right (`sequence_accuracy_score`).
sequence_accuracy_scorer = make_sequence_scorer(sequence_accuracy_score)


#: Scorer of conlleval span F1 (`span_f1_score`).
span_f1_scorer = make_sequence_scorer(span_f1_score)


#: Name -> scorer; also usable whole as a multi-metric ``scoring`` for GridSearchCV.
SCORERS = {
    "flat_accuracy": flat_accuracy_scorer,
    "flat_f1": flat_f1_scorer,
    "sequence_accuracy": sequence_accuracy_scorer,
    "span_f1": span_f1_scorer,
}


def check_scoring(scoring, labels):
    """Get the scorer that ``scoring`` names, for a model of these labels.

    The one scoring rule of the estimators, the command line and the metrics: None picks
    span F1 for span tags and token accuracy otherwise.

    Parameters
    ----------
    scoring : None, str or callable
        None: span F1 (`span_f1_scorer`) when the labels carry spans (`has_spans`), token
        accuracy (`flat_accuracy_scorer`) otherwise. A str: a key of `SCORERS`. A callable:
        ``scoring(estimator, X, y) -> float``, greater is better (`make_sequence_scorer`
        makes one from a metric).
    labels : iterable
        The labels of the training data.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y) -> float``: the callable ``scoring`` itself, or a scorer of
        `SCORERS`.

    Raises
    ------
    ValueError
        For an unknown name, or ``'span_f1'`` on labels without spans (every score would
        be 0).

    See Also
    --------
    make_sequence_scorer : Makes a scorer from a sequence metric.
    has_spans : Whether labels are span tags.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import check_scoring
    >>> check_scoring(None, ["NOUN", "VERB"])
    make_sequence_scorer(flat_accuracy_score)
    """
    if scoring is None:
        return span_f1_scorer if has_spans(labels) else flat_accuracy_scorer
    if callable(scoring):
        return scoring
    if not isinstance(scoring, str) or scoring not in SCORERS:
        raise ValueError(f"scoring must be None, a callable or one of {sorted(SCORERS)}, "
                         f"got {scoring!r}")
    if scoring == "span_f1" and not has_spans(labels):
        raise ValueError(
            "scoring='span_f1' needs span labels (B-/I-/E-/S-/L-/U- prefixes), but the "
            f"training labels have none (e.g. {sorted(map(str, labels))[:3]}): every span F1 "
            "would be 0; use scoring=None or 'flat_accuracy'")
    return SCORERS[scoring]

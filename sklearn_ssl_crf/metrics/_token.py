"""Token- and sequence-level agreement between lists of label sequences: scikit-learn's
classification metrics on the concatenation of all sequences (``flat_*``), with
sklearn-crfsuite's names and behaviour, and `sequence_accuracy_score` (a sequence counts only
if every label matches).
"""

from itertools import chain

from sklearn import metrics as sk_metrics


def _check_sequences(y_true, y_pred):
    """Both arguments as lists, after checking they pair up sequence by sequence."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    # Unlabelled sequences are legal in training data, so say how to get rid of them.
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        for i, labels in enumerate(y):
            if labels is None:
                raise ValueError(
                    f"{name}[{i}] is None (an unlabelled sequence); drop unlabelled "
                    "sequences before scoring, as the scorers in this module do"
                )
    true_lengths = [len(labels) for labels in y_true]
    pred_lengths = [len(labels) for labels in y_pred]
    if true_lengths != pred_lengths:
        i = next(i for i, (a, b) in enumerate(zip(true_lengths, pred_lengths)) if a != b)
        raise ValueError(
            f"sequence {i} has {true_lengths[i]} labels in y_true but "
            f"{pred_lengths[i]} in y_pred"
        )
    return y_true, y_pred


def _flatten_pair(y_true, y_pred):
    """Concatenations of all true and all predicted sequences, as two flat lists."""
    y_true, y_pred = _check_sequences(y_true, y_pred)
    return list(chain.from_iterable(y_true)), list(chain.from_iterable(y_pred))


def flat_accuracy_score(y_true, y_pred, **kwargs):
    """Accuracy over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.accuracy_score`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    **kwargs
        Passed to `sklearn.metrics.accuracy_score`.

    Returns
    -------
    score : float
        The fraction of tokens whose predicted label is the true one.

    See Also
    --------
    flat_f1_score : F1 score over all tokens.
    sequence_accuracy_score : Fraction of sequences labelled without a mistake.
    span_f1_score : F1 score over the spans of IOB-style tags.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_accuracy_score
    >>> flat_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
    0.666...
    """
    return sk_metrics.accuracy_score(*_flatten_pair(y_true, y_pred), **kwargs)


def flat_precision_score(y_true, y_pred, **kwargs):
    """Precision over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.precision_score`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    **kwargs
        Passed to `sklearn.metrics.precision_score` (for several labels give ``average``).

    Returns
    -------
    score : float or ndarray of float
        The token-level precision (one per label with ``average=None``).

    See Also
    --------
    flat_recall_score : Recall over all tokens.
    flat_f1_score : F1 score over all tokens.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_precision_score
    >>> flat_precision_score([["B", "I"], ["O"]], [["B", "O"], ["O"]], average="micro")
    0.666...
    """
    return sk_metrics.precision_score(*_flatten_pair(y_true, y_pred), **kwargs)


def flat_recall_score(y_true, y_pred, **kwargs):
    """Recall over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.recall_score`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    **kwargs
        Passed to `sklearn.metrics.recall_score` (for several labels give ``average``).

    Returns
    -------
    score : float or ndarray of float
        The token-level recall (one per label with ``average=None``).

    See Also
    --------
    flat_precision_score : Precision over all tokens.
    flat_f1_score : F1 score over all tokens.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_recall_score
    >>> flat_recall_score([["B", "I"], ["O"]], [["B", "O"], ["O"]], average="macro")
    0.666...
    """
    return sk_metrics.recall_score(*_flatten_pair(y_true, y_pred), **kwargs)


def flat_f1_score(y_true, y_pred, **kwargs):
    """F1 score over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.f1_score`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    **kwargs
        Passed to `sklearn.metrics.f1_score` (for several labels give ``average``).

    Returns
    -------
    score : float or ndarray of float
        The token-level F1 score (one per label with ``average=None``).

    See Also
    --------
    flat_fbeta_score : F-beta score over all tokens.
    span_f1_score : F1 score over the spans of IOB-style tags.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_f1_score
    >>> flat_f1_score([["B", "I"], ["O"]], [["B", "O"], ["O"]], average="weighted")
    0.555...
    """
    return sk_metrics.f1_score(*_flatten_pair(y_true, y_pred), **kwargs)


def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """F-beta score over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.fbeta_score`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    beta : float
        Weight of recall relative to precision.
    **kwargs
        Passed to `sklearn.metrics.fbeta_score` (for several labels give ``average``).

    Returns
    -------
    score : float or ndarray of float
        The token-level F-beta score (one per label with ``average=None``).

    See Also
    --------
    flat_f1_score : The case ``beta=1``.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_fbeta_score
    >>> flat_fbeta_score([["B", "I"], ["O"]], [["B", "O"], ["O"]], beta=2, average="micro")
    0.666...
    """
    return sk_metrics.fbeta_score(*_flatten_pair(y_true, y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """Build scikit-learn's classification report over all tokens of all sequences.

    The sequences are concatenated and scored as one list of token labels by
    `sklearn.metrics.classification_report`, as sklearn-crfsuite's function of the same name does.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.
    labels : list of labels, default=None
        Labels to report (for instance all but ``"O"``); default all labels seen.
    **kwargs
        Passed to `sklearn.metrics.classification_report` (``digits``, ``output_dict``...).

    Returns
    -------
    report : str or dict
        Precision, recall, F1 score and support per label: a text table, or a dict with
        ``output_dict=True``.

    See Also
    --------
    span_classification_report : The same report over the spans of IOB-style tags.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import flat_classification_report
    >>> report = flat_classification_report([["B", "I"], ["O"]], [["B", "O"], ["I"]],
    ...                                     output_dict=True)
    >>> report["B"]["f1-score"]
    1.0
    """
    return sk_metrics.classification_report(
        *_flatten_pair(y_true, y_pred), labels=labels, **kwargs
    )


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of sequences whose predicted labels are all correct.

    A sequence counts only if every one of its labels matches; a stricter measure than
    the token accuracy of `flat_accuracy_score`.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels; sequence ``i`` of both must have the same length.

    Returns
    -------
    score : float
        0.0 when there are no sequences (as sklearn-crfsuite).

    See Also
    --------
    flat_accuracy_score : Accuracy over all tokens.

    Notes
    -----
    sklearn-crfsuite 0.5.0 returns token counts instead when all sequences have the same length
    (NumPy turns them into a 2-d array); this function always counts sequences.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import sequence_accuracy_score
    >>> sequence_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
    0.5
    """
    y_true, y_pred = _check_sequences(y_true, y_pred)
    if not y_true:
        return 0.0
    n_equal = sum(list(true) == list(pred) for true, pred in zip(y_true, y_pred))
    return n_equal / len(y_true)

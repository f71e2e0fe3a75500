"""Span-level agreement (``span_*``): chunks read from IOB-style tags and counted exactly as
the CoNLL ``conlleval`` perl script (version 2004-01-26) counts them. ``conlleval`` prints
percentages; these functions return fractions in [0, 1] (multiply by 100 to compare).
"""

from itertools import chain

import numpy as np

from ._token import _check_sequences

# conlleval splits a tag at its first hyphen into a chunk tag and a chunk type ("B-NP" -> "B",
# "NP"; a tag without hyphen such as "O" or "NP" is its own chunk tag, with type ""), and
# decides from the previous and current (tag, type) whether a chunk ends before and whether one
# starts at the current token. Chunk tags are encoded as small integers so that both decisions
# become table look-ups over the whole corpus at once.
_TAG_CODES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4, "[": 5, "]": 6, ".": 7}


_OTHER_TAG = len(_TAG_CODES)  # any other chunk tag: matches no rule by name


_N_TAGS = _OTHER_TAG + 1


# (previous tag, tag) pairs of conlleval's endOfChunk and startOfChunk.
_CONLLEVAL_END = {
    ("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O"),
}  # fmt: skip


_CONLLEVAL_START = {
    ("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E"),
}  # fmt: skip


# The IOBES extension of conlleval in wide use adds one-token chunks "S" and lets "B" follow "E".
_IOBES_END = _CONLLEVAL_END | {
    ("B", "S"), ("I", "S"), ("E", "S"), ("E", "B"),
    ("S", "B"), ("S", "I"), ("S", "E"), ("S", "S"), ("S", "O"),
}  # fmt: skip


_IOBES_START = _CONLLEVAL_START | {
    ("B", "S"), ("I", "S"), ("E", "S"), ("O", "S"), ("S", "S"),
    ("E", "B"), ("S", "B"), ("S", "I"), ("S", "E"),
}  # fmt: skip


# conlleval's type-change rule never applies across "O" or "." (on the ending side for chunk
# ends, the starting side for chunk starts).
_IGNORES_TYPE_CHANGE = np.zeros(_N_TAGS, dtype=bool)


_IGNORES_TYPE_CHANGE[[_TAG_CODES["O"], _TAG_CODES["."]]] = True


def _pair_table(pairs, bracket_side):
    """Boolean (previous tag x tag) table of the pair rules, plus conlleval's bracket rule:
    "[" and "]" are one-token chunks, so they start (side 1) and end (side 0) a chunk."""
    table = np.zeros((_N_TAGS, _N_TAGS), dtype=bool)
    for prev_tag, tag in pairs:
        table[_TAG_CODES[prev_tag], _TAG_CODES[tag]] = True
    for bracket in "[]":
        index = [slice(None), slice(None)]
        index[bracket_side] = _TAG_CODES[bracket]
        table[tuple(index)] = True
    return table


_RULES = {
    iobes: (_pair_table(start, bracket_side=1), _pair_table(end, bracket_side=0))
    for iobes, start, end in (
        (False, _CONLLEVAL_START, _CONLLEVAL_END),
        (True, _IOBES_START, _IOBES_END),
    )
}


def _split_tag(label):
    """conlleval's reading of a label: (chunk-tag code, chunk type)."""
    tag, _, chunk_type = str(label).partition("-")
    # conlleval tests the type for truth in Perl, where the string "0" is false.
    if chunk_type == "0":
        chunk_type = ""
    return _TAG_CODES.get(tag, _OTHER_TAG), chunk_type


def _encode_chunk_tags(y, type_ids):
    """Chunk-tag codes and type ids of every token, each sequence followed by an "O".

    conlleval reads a sentence boundary as a token tagged "O", so appending one after each
    sequence reproduces its treatment of boundaries (and of the end of the file). ``type_ids``
    maps chunk types to ids and is extended in place, so both y_true and y_pred share it.
    """
    label_ids = {}
    stream = chain.from_iterable(part for labels in y for part in (labels, ("O",)))
    tokens = np.fromiter(
        (label_ids.setdefault(label, len(label_ids)) for label in stream), dtype=np.intp
    )
    tag_of_label = np.empty(len(label_ids), dtype=np.intp)
    type_of_label = np.empty(len(label_ids), dtype=np.intp)
    for label, i in label_ids.items():
        tag_of_label[i], chunk_type = _split_tag(label)
        type_of_label[i] = type_ids.setdefault(chunk_type, len(type_ids))
    return tag_of_label[tokens], type_of_label[tokens]


def _previous(values, first):
    """``values`` shifted right by one, with ``first`` before the first token."""
    shifted = np.roll(values, 1)
    shifted[:1] = first
    return shifted


def _chunk_starts_ends(tags, types, iobes):
    """conlleval's startOfChunk and endOfChunk at every token (a chunk ends *before* it)."""
    start_table, end_table = _RULES[iobes]
    # conlleval starts with a previous tag "O" of type "" (id 0).
    prev_tags = _previous(tags, _TAG_CODES["O"])
    type_changes = _previous(types, 0) != types
    starts = start_table[prev_tags, tags] | (type_changes & ~_IGNORES_TYPE_CHANGE[tags])
    ends = end_table[prev_tags, tags] | (type_changes & ~_IGNORES_TYPE_CHANGE[prev_tags])
    return starts, ends


def _last_index(mask):
    """At each position, the last index at or before it where ``mask`` holds (-1 if none)."""
    return np.maximum.accumulate(np.where(mask, np.arange(mask.size), -1))


def _span_counts(y_true, y_pred, iobes):
    """Per chunk type: conlleval's correct, true and predicted chunk counts.

    Returns
    -------
    types : list of str
    n_correct, n_true, n_pred : ndarray of int, aligned with ``types``
    """
    y_true, y_pred = _check_sequences(y_true, y_pred)
    type_ids = {"": 0}
    true_tags, true_types = _encode_chunk_tags(y_true, type_ids)
    pred_tags, pred_types = _encode_chunk_tags(y_pred, type_ids)
    true_starts, true_ends = _chunk_starts_ends(true_tags, true_types, iobes)
    pred_starts, pred_ends = _chunk_starts_ends(pred_tags, pred_types, iobes)

    # conlleval's flag "inCorrect" (the chunks being read agree so far) is set where both
    # start a chunk of the same type. It is cleared where both chunks end (counting one correct
    # chunk if it was set), where only one ends, or where the types differ. (conlleval also
    # requires equal types before both ends, but the flag never survives a type difference.)
    # Without a Python loop: the flag holds after token t if its last setting up to t is not
    # older than its last clearing (the perl loop clears before it sets).
    same_type = true_types == pred_types
    prev_true_types = _previous(true_types, 0)
    both_end = true_ends & pred_ends
    sets = true_starts & pred_starts & same_type
    clears = both_end | (true_ends != pred_ends) | ~same_type
    last_set, last_clear = _last_index(sets), _last_index(clears)
    holds_after = (last_set >= 0) & (last_set >= last_clear)
    holds_before = _previous(holds_after, False)

    n_types = len(type_ids)
    n_correct = np.bincount(prev_true_types[holds_before & both_end], minlength=n_types)
    # conlleval counts a chunk still agreeing at the end of the input: chunks of a bare tag
    # such as "NP" (type "") do not end at "O", so they can run through the final boundary.
    if holds_after.size and holds_after[-1]:
        n_correct[true_types[-1]] += 1
    n_true = np.bincount(true_types[true_starts], minlength=n_types)
    n_pred = np.bincount(pred_types[pred_starts], minlength=n_types)
    return list(type_ids), n_correct, n_true, n_pred


def _precision_recall_f1(n_correct, n_true, n_pred):
    """conlleval's formulas, with 0 wherever a denominator is 0."""
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return float(precision), float(recall), float(f1)


def span_precision_recall_f1(y_true, y_pred, *, iobes=False):
    """Chunk precision, recall and F1 over all chunk types, as conlleval computes them.

    A predicted chunk is correct when a true chunk has the same type, first and last token.
    Chunks are read from the tags with conlleval's rules: ``"B-X"`` starts a chunk of type
    ``X``; ``"I-X"`` continues it but starts one after ``"O"`` or after a chunk of another
    type; ``"E-X"`` (IOE) ends one; ``"["``/``"]"`` are one-token chunks; ``"."`` continues
    anything. A label without ``"-"`` is its own chunk tag with the empty type: ``"O"`` is
    outside, and a bare label such as ``"NP"`` matches no rule by name, so (as in conlleval) it
    starts a chunk of type ``""`` only after a typed tag.
    Each sequence ends as if followed by ``"O"`` (conlleval's sentence boundary).

    Parameters
    ----------
    y_true, y_pred : list of sequences of str
        True and predicted tags; sequence ``i`` of both must have the same length. Other
        labels are read through ``str``.
    iobes : bool, default=False
        Also apply the rules of the common IOBES extension of conlleval: ``"S-X"`` is a
        one-token chunk and ``"B-X"`` after ``"E-X"`` starts a new chunk. Without it, like the
        original script, consecutive ``"S-X"`` tags merge into one chunk. Tags without "S" and
        without "B" after "E" give the same counts either way.

    Returns
    -------
    precision, recall, f1 : float
        Fractions in [0, 1]; conlleval prints 100 times these. Precision (recall) is 0 when
        there are no predicted (true) chunks, and F1 is 0 when both are 0.

    See Also
    --------
    span_f1_score : The F1 score alone.
    span_classification_report : The same counts per chunk type.
    flat_f1_score : F1 score over tokens instead of chunks.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import span_precision_recall_f1
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-PP", "I-PP"]]
    >>> span_precision_recall_f1(y_true, y_pred)  # 2 of 3 predicted, 2 of 4 true chunks
    (0.666..., 0.5, 0.571...)
    """
    _, n_correct, n_true, n_pred = _span_counts(y_true, y_pred, iobes)
    return _precision_recall_f1(n_correct.sum(), n_true.sum(), n_pred.sum())


def span_f1_score(y_true, y_pred, *, iobes=False):
    """Chunk F1 over all chunk types (conlleval's overall "FB1", divided by 100).

    See `span_precision_recall_f1` for how chunks are read and counted.

    Parameters
    ----------
    y_true, y_pred : list of sequences of str
        True and predicted tags, as in `span_precision_recall_f1`.
    iobes : bool, default=False
        Apply the IOBES extension's rules for ``"S-X"`` tags; see `span_precision_recall_f1`.

    Returns
    -------
    f1 : float
        In [0, 1]; 0 when there are no chunks at all.

    See Also
    --------
    span_precision_recall_f1 : Precision and recall as well.
    flat_f1_score : F1 score over tokens instead of chunks.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import span_f1_score
    >>> span_f1_score([["B-NP", "I-NP", "O"]], [["B-NP", "B-NP", "O"]])
    0.0
    >>> span_f1_score([["S-PER", "S-PER"]], [["S-PER", "S-PER"]], iobes=True)
    1.0
    """
    return span_precision_recall_f1(y_true, y_pred, iobes=iobes)[2]


def span_classification_report(y_true, y_pred, *, digits=2, output_dict=False, iobes=False):
    """Chunk precision, recall, F1 and support per chunk type, and overall.

    The rows are conlleval's per-type lines (types sorted as conlleval sorts them) and its
    overall line, the micro average. See `span_precision_recall_f1` for how chunks are counted.

    Parameters
    ----------
    y_true, y_pred : list of sequences of str
        True and predicted tags, as in `span_precision_recall_f1`.
    digits : int, default=2
        Digits after the decimal point in the text report.
    output_dict : bool, default=False
        Return a dict instead of text.
    iobes : bool, default=False
        Apply the IOBES extension's rules for ``"S-X"`` tags; see `span_precision_recall_f1`.

    Returns
    -------
    report : str or dict
        The dict maps each chunk type, and ``"overall"``, to a dict with keys
        ``"precision"``, ``"recall"``, ``"f1-score"`` (fractions in [0, 1]) and ``"support"``
        (the number of true chunks, as in scikit-learn; the last number of conlleval's
        per-type lines is the number of predicted chunks instead).

    See Also
    --------
    span_precision_recall_f1 : The overall line's numbers.
    flat_classification_report : The report over tokens instead of chunks.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import span_classification_report
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-PP", "I-PP"]]
    >>> print(span_classification_report(y_true, y_pred))
             precision    recall  f1-score   support
    <BLANKLINE>
         NP       1.00      0.50      0.67         2
         PP       0.00      0.00      0.00         1
         VP       1.00      1.00      1.00         1
    <BLANKLINE>
    overall       0.67      0.50      0.57         4
    <BLANKLINE>
    >>> span_classification_report(y_true, y_pred, output_dict=True)["NP"]["recall"]
    0.5
    """
    types, n_correct, n_true, n_pred = _span_counts(y_true, y_pred, iobes)
    rows = {}
    for i in sorted(range(len(types)), key=types.__getitem__):
        if n_true[i] or n_pred[i]:
            rows[types[i]] = (n_correct[i], n_true[i], n_pred[i])
    rows["overall"] = (n_correct.sum(), n_true.sum(), n_pred.sum())
    report = {
        name: dict(
            zip(("precision", "recall", "f1-score"), _precision_recall_f1(correct, true, pred)),
            support=int(true),
        )
        for name, (correct, true, pred) in rows.items()
    }
    return report if output_dict else _format_report(report, digits)


def _format_report(report, digits):
    """Text table in the layout of `sklearn.metrics.classification_report`."""
    headers = ["precision", "recall", "f1-score", "support"]
    width = max(max(map(len, report)), digits)
    lines = [f"{'':>{width}} " + "".join(f" {header:>9}" for header in headers), ""]
    for name, scores in report.items():
        if name == "overall":
            lines.append("")
        values = "".join(f" {scores[header]:>9.{digits}f}" for header in headers[:3])
        lines.append(f"{name:>{width}} {values} {scores['support']:>9}")
    return "\n".join(lines) + "\n"


#: Tag prefixes that mark spans: IOB/BIO (B, I), IOBES (E, S) and BILOU (L, U).
SPAN_PREFIXES = ("B-", "I-", "E-", "S-", "L-", "U-")


def has_spans(labels):
    """Whether labels are span tags, for which span F1 means something.

    A label is a span tag when it starts with one of the prefixes ``B-``, ``I-``, ``E-``,
    ``S-``, ``L-`` or ``U-`` (BIO/IOB/IOBES/BILOU); one such label is enough.

    Parameters
    ----------
    labels : iterable
        Labels, such as an estimator's ``classes_``.

    Returns
    -------
    bool
        True when at least one label is a span tag.

    See Also
    --------
    check_scoring : Picks span F1 for span tags and token accuracy otherwise.

    Examples
    --------
    >>> from sklearn_ssl_crf.metrics import has_spans
    >>> has_spans(["O", "B-GENE", "I-GENE"]), has_spans(["NOUN", "VERB"])
    (True, False)
    """
    return any(str(label)[:2] in SPAN_PREFIXES for label in labels)

"""Scores shared by ``train`` (its dev file) and ``evaluate``."""

from ..metrics import flat_accuracy_score, has_spans, span_f1_score


def scores(y_true, y_pred, classes):
    """Token accuracy, and span F1 where the labels mark spans (`metrics.has_spans`)."""
    result = {"token accuracy": flat_accuracy_score(y_true, y_pred)}
    if has_spans(classes):
        result["span F1"] = span_f1_score(y_true, y_pred)
    return result

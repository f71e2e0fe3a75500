"""Scores shared by ``train`` (its dev file) and ``evaluate``."""

from ..metrics import flat_accuracy_score, span_f1_score


def has_spans(classes):
    """Whether labels are span tags (B-X, I-X, ...), for which span F1 means something."""
    return any(str(label)[:2] in ("B-", "I-", "E-", "S-") for label in classes)


def scores(y_true, y_pred, classes):
    """Token accuracy, and span F1 where the labels mark spans."""
    result = {"token accuracy": flat_accuracy_score(y_true, y_pred)}
    if has_spans(classes):
        result["span F1"] = span_f1_score(y_true, y_pred)
    return result


def selection_score(result):
    """What a dev file chooses by: span F1 for span labels, else token accuracy."""
    return result.get("span F1", result["token accuracy"])

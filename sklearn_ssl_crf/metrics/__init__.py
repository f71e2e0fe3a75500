"""Evaluation metrics and scorers for sequence labelling.

Three levels of agreement between lists of label sequences:

- token level (``flat_*``): scikit-learn's classification metrics on the concatenation of all
  sequences, with sklearn-crfsuite's names and behaviour;
- sequence level (`sequence_accuracy_score`): a sequence counts only if every label matches;
- span level (``span_*``): chunks read from IOB-style tags and counted exactly as the CoNLL
  ``conlleval`` perl script (version 2004-01-26) counts them. ``conlleval`` prints percentages;
  these functions return fractions in [0, 1] (multiply by 100 to compare).

The scorers (``*_scorer``, `make_sequence_scorer`) have the signature
``scorer(estimator, X, y)`` expected by `~sklearn.model_selection.GridSearchCV` and
`~sklearn.model_selection.cross_val_score`; they ignore unlabelled sequences (``y[i] is None``).
"""

# Names imported `as` themselves serve the package's other folders: not public API.
from ._scorers import (
    SCORERS,
    check_scoring,
    flat_accuracy_scorer,
    flat_f1_scorer,
    make_sequence_scorer,
    sequence_accuracy_scorer,
    span_f1_scorer,
)
from ._scorers import SequenceScorer as SequenceScorer
from ._scorers import no_labelled_sequence_error as no_labelled_sequence_error
from ._spans import (
    has_spans,
    span_classification_report,
    span_f1_score,
    span_precision_recall_f1,
)
from ._token import (
    flat_accuracy_score,
    flat_classification_report,
    flat_f1_score,
    flat_fbeta_score,
    flat_precision_score,
    flat_recall_score,
    sequence_accuracy_score,
)

__all__ = [
    "flat_accuracy_score", "flat_precision_score", "flat_recall_score", "flat_f1_score",
    "flat_fbeta_score", "flat_classification_report", "sequence_accuracy_score",
    "span_precision_recall_f1", "span_f1_score", "span_classification_report",
    "make_sequence_scorer", "flat_accuracy_scorer", "flat_f1_scorer", "sequence_accuracy_scorer",
    "span_f1_scorer", "SCORERS", "has_spans", "check_scoring",
]

"""``evaluate``: a saved model on a labelled file, with conlleval's span report."""

import argparse

from ..metrics import (
    flat_classification_report,
    sequence_accuracy_score,
    span_classification_report,
)
from ._inputs import add_sep_argument, check_readable, read_labelled
from ._model import load_tagger
from ._scores import has_spans, scores


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "evaluate", help="score a saved model on a labelled file",
        description="Score a model written by train on a labelled file (the training "
        "file's format): per-label span precision, recall and F1 as conlleval computes them "
        "(per-label token scores for labels without spans), token and sentence accuracy.")
    parser.add_argument("model", help="model file written by train --model")
    parser.add_argument("--trusted", action="store_true",
                        help="load a pickle (*.joblib) model file, which runs any code it "
                        "holds: only for files you made or trust")
    parser.add_argument("input", help="labelled file")
    parser.add_argument("--column", help="label column (default: as in training)")
    add_sep_argument(parser, argparse.SUPPRESS, "as in training")
    parser.add_argument("--encoding", default="utf-8", help="encoding of the input file")
    parser.set_defaults(run=run)
    return parser


def run(args):
    args.stage = f"reading {args.model}"
    tagger = load_tagger(args.model, args.trusted)
    check_readable(args.input)
    info = tagger.info
    column = info["label_column"] if args.column is None else args.column
    token_columns = None if info["format"] == "conllu" else tagger.token_columns
    args.stage = f"reading {args.input}"
    X, y = read_labelled(args.input, info["format"], column, token_columns, args.encoding,
                         getattr(args, "sep", info.get("sep")))
    args.stage = f"tagging {args.input}"
    predicted = tagger.estimator.predict(tagger.features.transform(X))
    classes = tagger.estimator.classes_
    if has_spans(classes):
        print(span_classification_report(y, predicted, digits=4))
    else:
        # A label never predicted (or absent from the file) scores 0, said once below
        # rather than by scikit-learn's warnings about its zero_division parameter.
        print(flat_classification_report(y, predicted, digits=4, zero_division=0))
        _say_undefined_scores(y, predicted)
    result = scores(y, predicted, classes)
    result["sentence accuracy"] = sequence_accuracy_score(y, predicted)
    print("\n".join(f"{name:<18}{value:.4f}" for name, value in result.items()))
    return 0


def _say_undefined_scores(y_true, y_pred):
    """One line naming the labels whose precision or recall has no tokens to count (the
    report shows 0 for them)."""
    gold = {label for sentence in y_true for label in sentence}
    predicted = {label for sentence in y_pred for label in sentence}
    notes = [f"{what}: {', '.join(map(str, sorted(labels, key=str)))}" for what, labels in (
        ("never predicted (precision 0)", gold - predicted),
        ("predicted but absent from the file (recall 0)", predicted - gold)) if labels]
    if notes:
        print("labels " + "; ".join(notes))

"""``tag``: label raw text or a column file with a saved model, in column output."""

import argparse
import sys

from ..estimators import NoLabellingError
from ..utils import atomic_path
from ._inputs import FORMATS, add_sep_argument, check_readable, read_to_tag
from ._model import load_tagger


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "tag", help="label sentences with a saved model",
        description="Label the sentences of a file with a model written by train. Output: "
        "one token a line, its input fields and the predicted label, tab-separated; a blank "
        "line between sentences.")
    parser.add_argument("model", help="model file written by train --model")
    parser.add_argument("--trusted", action="store_true",
                        help="load a pickle (*.joblib) model file, which runs any code it "
                        "holds: only for files you made or trust")
    parser.add_argument("input", help="sentences to label")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="input format (default text: one sentence a line, "
                        "whitespace-tokenised; columns: the model's token columns first)")
    parser.add_argument("--marginals", action="store_true",
                        help="add each label's marginal probability as further columns")
    parser.add_argument("--entropy", action="store_true",
                        help="write '# entropy = H' (nats) before each sentence")
    parser.add_argument("--explain", type=_positive_int, nargs="?", const=5, metavar="K",
                        help="after each token's line, a line '# contributions' with, "
                        "tab-separated, state=S (the predicted label's unary potential), "
                        "transition=T and the K (default 5) attributes that contributed "
                        "most to the label, as attribute=contribution")
    parser.add_argument("--known-column", type=int, metavar="N",
                        help="column (0-based, --format columns) holding labels known in "
                        "advance, '_' where unknown: the output keeps them and labels the "
                        "rest consistently with them")
    parser.add_argument("--output", help="file to write (default: standard output)")
    add_sep_argument(parser, argparse.SUPPRESS, "as in training (--format columns)")
    parser.add_argument("--encoding", default="utf-8", help="encoding of the input file")
    parser.set_defaults(run=run)
    return parser


def run(args):
    for option, given in (("--known-column", args.known_column is not None),
                          ("--sep", hasattr(args, "sep"))):
        if given and args.format != "columns":
            raise ValueError(f"{option} needs column input (--format columns)")
    args.stage = f"reading {args.model}"
    tagger = load_tagger(args.model, args.trusted)
    check_readable(args.input)
    args.stage = f"reading {args.input}"
    sequences, rows = read_to_tag(args.input, args.format, tagger.token_columns,
                                  args.encoding, getattr(args, "sep", tagger.info.get("sep")))
    args.stage = f"tagging {args.input}"
    known = _known_labels(args, rows, tagger.estimator.classes_)
    features = tagger.features.transform(sequences)
    estimator = tagger.estimator
    try:
        predicted = estimator.predict(features, known_labels=known)
    except NoLabellingError as error:
        scheme = getattr(estimator.constraints_, "scheme", None)
        raise ValueError(
            f"{args.input}: sentence {error.index + 1}: its known labels (column "
            f"{args.known_column}) leave no labelling that the model allows" + (
                f" under its {scheme.upper()} constraints (such as no I-X after O)"
                if scheme else "") + "; correct them or write '_' where unknown") from None
    marginals = (estimator.predict_marginals(features, known_labels=known) if args.marginals
                 else None)
    entropies = estimator.predict_entropy(features) if args.entropy else None
    contributions = (None if args.explain is None else estimator.predict_contributions(
        features, top=args.explain, known_labels=known))
    if not args.output:
        _write_tags(sys.stdout, args, estimator, rows, predicted, marginals, entropies,
                    contributions)
        sys.stdout.flush()
        return 0
    # Written beside the file and renamed over it: a failed run leaves the old file.
    with atomic_path(args.output) as temporary, open(temporary, "w", encoding="utf-8") as out:
        _write_tags(out, args, estimator, rows, predicted, marginals, entropies,
                    contributions)
    return 0


def _known_labels(args, rows, classes):
    """The labels of ``--known-column`` ('_': unknown), or None."""
    if args.known_column is None:
        return None
    column = args.known_column
    if not 0 <= column < len(rows[0][0]):
        raise ValueError(f"{args.input}: --known-column {column} does not exist; its lines "
                         f"have {len(rows[0][0])} columns")
    known = [[None if fields[column] == "_" else fields[column] for fields in sentence]
             for sentence in rows]
    labels = set(classes)
    for i, sentence in enumerate(known):
        for j, label in enumerate(sentence):
            if label is not None and label not in labels:
                raise ValueError(f"{args.input}: sentence {i + 1}, token {j + 1}: known label "
                                 f"{label!r} (column {column}) is not one of the model's "
                                 f"labels {list(classes)}; write '_' where unknown")
    return known


def _write_tags(out, args, estimator, rows, predicted, marginals, entropies,
               contributions):
    """Write the labelled sentences to the text stream ``out``."""
    if args.marginals:
        out.write("# marginal columns: " + " ".join(map(str, estimator.classes_)) + "\n")
    for i, (sentence, labels) in enumerate(zip(rows, predicted)):
        if args.entropy:
            out.write(f"# entropy = {entropies[i]:.4f}\n")
        for j, (fields, label) in enumerate(zip(sentence, labels)):
            columns = [*fields, label]
            if args.marginals:
                columns += [f"{marginals[i][j][c]:.4f}" for c in estimator.classes_]
            out.write("\t".join(columns) + "\n")
            if contributions is not None:
                out.write(_contribution_line(contributions[i][j]))
        out.write("\n")


def _contribution_line(token):
    """The ``# contributions`` line of a token (`predict_contributions`): tab-separated
    ``name=value`` fields, the value after the field's last '='."""
    fields = [("state", token["state"]), ("transition", token["transition"]),
              *token["attributes"]]
    values = [f"{name}={value:+.4f}" for name, value in fields]
    return "\t".join(["# contributions", *values]) + "\n"


def _positive_int(text):
    """``--explain``'s K: an int of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"K must be a positive integer, got {text!r}")
    return value
